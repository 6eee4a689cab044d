"""A run's result, and the pure function that grades the worker's answer into one.

:func:`grade` reads a :class:`~tutor.sandbox.protocol.Answer` (what each side
of a check observed, or the sentence it stopped with) and gives the
:class:`RunResult` the TUI, the CLI, the progress store and the verdicts of
edit mode read: the observation graded from the sides the exercise names,
the prediction matched against it, and the status (the list of statuses is
below). No process, no file, no torch: the runner calls it with the
worker's answer, the tests with answers they build.

Result status:

* ``pass`` / ``fail`` — the check ran and the prediction matched / did not;
* ``ok`` — the check ran and there was no prediction (``tutor check``);
* ``error`` — the subject raised or crashed, or the check could not run;
* ``timeout`` — it ran past its time limit and was stopped;
* ``cancelled`` — the learner stopped it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from tutor.model import answers
from tutor.model.catalog import Exercise
from tutor.model import grading
from tutor.sandbox.protocol import Answer

#: The sides a graded observation is read from, by ``Exercise.observe``.
GRADED_SIDES = {"clean": ("clean",), "faulted": ("faulted",), "both": ("clean", "faulted")}


@dataclass
class RunResult:
    """Everything one run observed, ready for display, JSON and progress.

    Attributes:
        id: the exercise id.
        status: pass, fail, ok, error, timeout or cancelled (module docstring).
        observed: the graded observation in canonical form, or None.
        clean: the same measurement on the clean subject, or None.
        faulted: the measurement on the faulted subject, or None.
        correct: whether the prediction matched; None without a prediction
            or when the check did not run.
        evidence: per side ("clean", "faulted", ...) the evidence list.
        errors: per side (or ``"run"`` for the run as a whole) one sentence.
        output: per side an excerpt of what it printed.
        differs: for a faulted exercise, whether clean and faulted observed
            values differ (what ``tutor check`` asserts).
        duration_s: wall time of the run, seconds.
        side_durations_s: per side, wall time from fork to reaping.
        seed: the seed the check ran with (``Context.seed``).
        prediction_text: the prediction as it was read and graded, written
            the canonical way (``capability`` for the key ``6``).
        observations: per side that measured, its observation — every side,
            including ones beyond clean and faulted (a learner's own file).
            Not part of ``to_dict``: the JSON keeps its ``clean`` and
            ``faulted`` fields, and a command that runs more sides names them.
        time_limit: the limit the run had, as ``tutor.sandbox.speed.TimeLimit.to_dict``
            (``seconds``, ``base_s``, ``scale``, ``source``, ``factor``,
            ``why``, ``retry_scale``), or None when none was set (a run
            that never reached the worker).
        confined: whether every side ran confined (``tutor.sandbox.confine``);
            None for a run that never reached the worker.
        refused: per side, what its subject tried that the confinement
            refused ("tried to write ~/x: refused"); sides with none are left out.
        tampered: the sides whose result pipe carried lines the check did
            not write (their results are not taken).
        timed_out: the sides stopped at their time limit (their sentence is in ``errors``).
        records: per side that measured, the records of the snippet module's calls (an edit-mode run's:
            ``tutor.sandbox.record``), compared by the verdict like evidence. Not part of ``to_dict``.
    """

    id: str
    status: str
    device: str
    torch: str
    fault: str | None
    kind: str
    prediction: str | None = None
    prediction_text: str | None = None
    observed: Any = None
    clean: Any = None
    faulted: Any = None
    correct: bool | None = None
    differs: bool | None = None
    evidence: dict = field(default_factory=dict)
    errors: dict = field(default_factory=dict)
    output: dict = field(default_factory=dict)
    duration_s: float = 0.0
    side_durations_s: dict = field(default_factory=dict)
    seed: int = 0
    observations: dict = field(default_factory=dict)
    time_limit: dict | None = None
    confined: bool | None = None
    refused: dict = field(default_factory=dict)
    tampered: list = field(default_factory=list)
    timed_out: list = field(default_factory=list)
    records: dict = field(default_factory=dict)

    @property
    def retry_scale(self) -> float:
        """The time-limit scale that retries this run with twice its limit (2 when its limit is unknown)."""
        return float((self.time_limit or {}).get("retry_scale") or 2.0)

    @property
    def error(self) -> str | None:
        return "; ".join(f"{side}: {msg}" for side, msg in self.errors.items()) or None

    def to_dict(self) -> dict:
        data = asdict(self)
        del data["observations"], data["records"]
        data["error"] = self.error
        return data

    @classmethod
    def cancelled(cls, exercise: Exercise, prediction: str | None = None, *, when: str = "",
                  device: str = "-", torch: str = "-", seed: int = 0, duration_s: float = 0.0) -> "RunResult":
        """The result of a run the learner stopped (the one place such a result is made).

        Args:
            exercise: the exercise that was running.
            prediction: what the learner typed, or None.
            when: how far it got, appended to the sentence
                ("before it started"); "" says only that it was cancelled.
            device, torch: what it ran on, when known.
            seed: the seed it was to run with.
            duration_s: how long it ran before it stopped (0 when unknown;
                :class:`tutor.app.session.Run` then times it).
        """
        try:
            prediction_text = read_prediction(exercise, prediction)
        except answers.AnswerError:
            prediction_text = None
        sentence = f"the run was cancelled {when}".rstrip()
        return cls(id=exercise.id, status="cancelled", device=device, torch=torch, fault=exercise.fault,
                   kind=exercise.kind.name, prediction=prediction, prediction_text=prediction_text,
                   errors={"run": sentence}, seed=seed, duration_s=duration_s)


def read_prediction(exercise: Exercise, prediction: str | None) -> str | None:
    """The prediction as it is read and graded, written the canonical way; None for no prediction.

    Raises:
        answers.AnswerError: the prediction does not read as the exercise's kind.
    """
    if prediction is None:
        return None
    return grading.read_prediction(exercise, prediction).text



def grade(exercise: Exercise, answer: Answer, prediction: str | None = None, seed: int = 0) -> RunResult:
    """The result the worker's ``answer`` gives: each side's observation, and the verdict.

    Pure: no process, no file. The graded observation is read from the sides
    ``exercise.observe`` names (:data:`GRADED_SIDES`); when one of them did
    not measure, the status is the worst of the sides' (``timeout`` over
    ``error``). Clean and faulted are compared (``differs``) whenever both
    measured. Sides beyond clean and faulted are kept in ``observations``,
    ``evidence``, ``errors`` and ``output`` under their names.

    Args:
        exercise: the exercise that ran.
        answer: the worker's answer for its request.
        prediction: what the learner typed, or None for an ungraded run.
        seed: the seed the check ran with.

    Raises:
        answers.AnswerError: the prediction does not read as the exercise's kind.
    """
    parsed = grading.read_prediction(exercise, prediction) if prediction is not None else None
    result = RunResult(id=exercise.id, status="error", device=answer.device, torch=answer.torch,
                       fault=exercise.fault, kind=exercise.kind.name, prediction=prediction,
                       prediction_text=parsed.text if parsed is not None else None, seed=seed, duration_s=answer.duration_s)
    result.confined = all(side.confined for side in answer.sides.values()) if answer.sides else None
    for name, side in answer.sides.items():
        result.side_durations_s[name] = side.duration_s
        if side.refused:
            result.refused[name] = list(side.refused)
        if side.tampered:
            result.tampered.append(name)
        if side.output:
            result.output[name] = side.output
        if not side.ok:
            result.errors[name] = side.error or "unknown error"
            if side.status == "timeout":
                result.timed_out.append(name)
            continue
        result.observations[name] = side.observed
        result.evidence[name] = side.evidence
        result.records[name] = side.records
    result.clean = result.observations.get("clean")
    result.faulted = result.observations.get("faulted")
    needed = GRADED_SIDES[exercise.observe]
    if any(name not in result.observations for name in needed):
        result.status = "timeout" if result.timed_out else ("error" if result.errors else "ok")
        return result
    observed = [result.observations[name] for name in needed]
    result.observed = observed if len(observed) > 1 else observed[0]
    if exercise.fault and "clean" in result.observations and "faulted" in result.observations:
        result.differs = result.clean != result.faulted
    if parsed is None:
        result.status = "ok"
    else:
        result.correct = grading.is_correct(exercise, parsed, result.observed)
        result.status = grading.graded_status(result.correct)
    return result
