"""The verdict of an edit-mode run, measured: does the learner's side behave like the clean code?

Read off a :class:`tutor.sandbox.runner.RunResult` whose sides are ``clean``,
``repeat`` (the clean code once more), maybe ``faulted``, and ``yours`` (the
learner's file): **fix** and **hunt** are *fixed* when the learner's side
measured and its observation equals the clean side's within the exercise's
tolerance, its evidence agrees row by row and so does the recorded whole
output of the snippet it repairs (:func:`judge`; :mod:`tutor.model.evidence`
compares both); **break** shows what the learner's
side observed and the first evidence row that diverges from clean
(:func:`observe_break`). Never a comparison of texts. Pure: imports neither torch nor Textual.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from tutor.model import answers
from tutor.model.catalog import Exercise
from tutor.model.evidence import REPEAT, YOURS, first_difference, first_record_difference
from tutor.model.grading import Prediction, is_correct, read_prediction


# --- verdicts -----------------------------------------------------------------

def same_observation(exercise: Exercise, a: Any, b: Any) -> bool:
    """Whether two sides' observations agree, within the exercise's tolerance (NaN equals NaN).

    Two observations, not a prediction and an observation: the kind's
    :meth:`~tutor.model.answers.AnswerKind.same`.
    """
    return exercise.kind.same(a, b)



@dataclass(frozen=True)
class Verdict:
    """What the learner's side came to, measured.

    Attributes:
        mode: ``fix``, ``break`` or ``hunt``.
        status: fix and hunt: ``fixed`` or ``not fixed``; break:
            ``changed`` (your fault changed the observation) or ``unchanged``;
            any mode: ``could not run`` when the clean side did not measure,
            ``syntax error`` when the learner's file does not compile (not run).
        sentence: one sentence for the learner.
        difference: the first evidence row where yours and clean differ, or None.
        yours_status: how the learner's side ended (``ok``, ``error``, ``timeout``, or ``missing``).
        yours_observed: its observation (status ok), else None.
        yours_error: one sentence when it did not measure, else None.
        prediction_correct: break only: whether the learner's prediction (in
            the exercise's kind) matches their side's observation; None for
            free text or no prediction.
        seeds: the seeds the verdict was judged at: the run's own first,
            then any hidden ones (:func:`judge_hidden`).
        hidden_seeds: those of ``seeds`` drawn for this verdict alone,
            which nobody saw before.
    """

    mode: str
    status: str
    sentence: str
    difference: str | None = None
    yours_status: str = "missing"
    yours_observed: Any = None
    yours_error: str | None = None
    prediction_correct: bool | None = None
    seeds: tuple = ()
    hidden_seeds: tuple = ()

    @property
    def fixed(self) -> bool | None:
        """Fix and hunt: whether it is fixed; None for a break or a run that could not measure clean."""
        if self.mode == "break" or self.status == "could not run":
            return None
        return self.status == "fixed"

    @property
    def ran(self) -> bool:
        """Whether the verdict is a measurement (the file compiled and clean measured): an attempt to record."""
        return self.status not in ("could not run", "syntax error")

    def to_dict(self) -> dict:
        return {"mode": self.mode, "status": self.status, "sentence": self.sentence, "fixed": self.fixed,
                "difference": self.difference, "prediction_correct": self.prediction_correct,
                "seeds": list(self.seeds), "hidden_seeds": list(self.hidden_seeds)}


def _yours(result) -> tuple[str, Any, str | None]:
    """How the learner's side ended: (status, observation, error sentence)."""
    if YOURS in result.observations:
        return "ok", result.observations[YOURS], None
    error = result.errors.get(YOURS)
    if error is None:
        return "missing", None, result.errors.get("run") or "your side did not run"
    status = "timeout" if YOURS in result.timed_out else "error"
    return status, None, error


@dataclass(frozen=True)
class _Clean:
    """What the clean code measured in one run, read once per verdict.

    Attributes:
        runs: its observations: clean's, then repeat's when the repeat measured.
        repeat_evidence: the repeat's evidence list, or None without a measured repeat.
        reproduces: whether its evidence came out exactly alike on both runs
            (True without a repeat): :func:`evidence_reproduces`.
    """

    runs: list
    repeat_evidence: list | None
    reproduces: bool


def _clean(result) -> _Clean:
    """The clean code's side of ``result`` (which holds a measured ``clean``)."""
    runs = [result.observations["clean"]]
    if REPEAT not in result.observations:
        return _Clean(runs, None, True)
    runs.append(result.observations[REPEAT])
    repeat = result.evidence.get(REPEAT, [])
    return _Clean(runs, repeat, repeat == result.evidence.get("clean", []))


def _difference(exercise: Exercise, result, clean: _Clean) -> str | None:
    """The first reproducible evidence row where yours and clean differ (:func:`first_difference`)."""
    return first_difference(result.evidence.get(YOURS, []), result.evidence.get("clean", []),
                            repeat=clean.repeat_evidence, tolerance=exercise.tolerance)


def _record_difference(exercise: Exercise, result) -> str | None:
    """The first difference in the whole output of the code under test (:func:`first_record_difference`):
    the records of the snippet module's calls, yours against clean's; None for a run that recorded none."""
    records = getattr(result, "records", None) or {}
    clean = records.get("clean")
    if not clean:
        return None  # nothing recorded (a plain run, an engine file): the check's evidence is all there is
    repeat = records.get(REPEAT) if REPEAT in result.observations else None
    return first_record_difference(records.get(YOURS), clean, repeat=repeat, tolerance=exercise.tolerance)


def evidence_reproduces(result) -> bool:
    """Whether the clean code's evidence came out exactly alike on its two runs (clean and repeat).

    True without a repeat run. False for a check that measures time or
    memory (phase-ledger, seq-sweep, ...): its evidence cannot tell a
    learner's change from the machine's jitter, so only its observation
    counts towards a verdict.

    Raises:
        KeyError: the clean side did not measure (no ``clean`` observation).
    """
    return _clean(result).reproduces


def _could_not_run(mode: str, result, consequence: str = "") -> Verdict:
    """The verdict of a run whose clean side did not measure: nothing to judge the learner's side against.

    Args:
        mode: ``fix``, ``hunt`` or ``break``.
        result: the run's result (no ``clean`` observation).
        consequence: what that means, put after "the clean side did not measure".
    """
    why = result.errors.get("clean") or result.errors.get("run") or f"the run ended {result.status}"
    status, observed, error = _yours(result)
    return Verdict(mode, "could not run", f"the clean side did not measure{consequence}: {why}",
                   yours_status=status, yours_observed=observed, yours_error=error)


def _varies(exercise: Exercise, runs: list) -> str:
    """A clause naming a clean observation that differed between its two runs, else ""."""
    if len(runs) > 1 and not same_observation(exercise, runs[0], runs[1]):
        show = exercise.kind.show_observation
        return (f" (the clean code itself observed {show(runs[0])} and "
                f"{show(runs[1])} on two runs: this measurement varies from run to run)")
    return ""


def judge(exercise: Exercise, result, mode: str = "fix") -> Verdict:
    """The fix (or hunt) verdict a run's result gives: does the learner's side behave like the clean code?

    **Fixed** when the learner's side measured (nothing raised, no timeout)
    and

    * its observation equals the clean code's within ``exercise.tolerance``
      (:func:`same_observation`) — the clean side's, or the ``repeat``
      side's (a second run of the clean code: a measurement that varies from
      run to run, a timing, is matched by either of its clean outcomes); and
    * when the clean code's evidence reproduces exactly on its two runs
      (:func:`evidence_reproduces`: every check but those that time or weigh
      memory), the learner's evidence agrees with it row by row
      (:func:`first_difference`): a repair that returns a constant matching
      the observation still shows in the evidence behind it; and
    * where the run recorded the whole output of the faulted snippet module
      (its functions' return values and written arguments on their first
      calls: ``tutor.sandbox.record``), yours agrees with clean's record by
      record (:func:`first_record_difference`, the same rule, rows the clean
      code does not reproduce skipped): a repair that also changes what it
      was not asked to is not fixed, even where the check's evidence does
      not show that output.

    Otherwise **not fixed**, naming the first evidence row that differs (or
    the error that stopped the learner's side). **Could not run** when the
    clean side did not measure (the run was cancelled, or the check failed).

    Args:
        exercise: the exercise as run.
        result: a :class:`tutor.sandbox.runner.RunResult` holding the sides ``clean``,
            ``yours`` and (optionally) ``repeat``.
        mode: ``fix`` or ``hunt``.
    """
    if "clean" not in result.observations:
        return _could_not_run(mode, result, ", so nothing to compare with")
    status, observed, error = _yours(result)
    if status != "ok":
        return Verdict(mode, "not fixed", f"not fixed: your side did not finish — {error}",
                       yours_status=status, yours_error=error)
    measured = _clean(result)
    runs, show = measured.runs, exercise.kind.show_observation
    difference = _difference(exercise, result, measured)
    varies = _varies(exercise, runs)
    matched = next((run for run in runs if same_observation(exercise, observed, run)), None)
    agrees = matched is not None and (difference is None or not measured.reproduces)
    output = _record_difference(exercise, result) if agrees else None
    if output is not None:
        return Verdict(mode, "not fixed", f"not fixed: yours observes {show(observed)} as the clean code does, "
                       f"but not the same whole output — {output}", output, status, observed)
    if agrees:
        if mode == "hunt" and matched == "none":  # the audit's answer for "no link fails": the words say it
            what = "every audit link holds"
        else:
            what = f"{'the audit' if mode == 'hunt' else 'it'} observes what the clean code observes, {show(matched)}"
        jitter = "" if difference is None else (
            f" (its evidence differs at {difference}, but the clean code's own evidence varies from run to run, "
            "so only the observation counts)")
        return Verdict(mode, "fixed", f"fixed: {what}{varies}{jitter}", difference, status, observed)
    if matched is not None:
        return Verdict(mode, "not fixed", f"not fixed: yours observes {show(observed)} as the clean "
                       f"code does, but the evidence behind it differs — {difference}", difference, status, observed)
    where = f"; first difference: {difference}" if difference else ""
    return Verdict(mode, "not fixed", f"not fixed: yours observes {show(observed)}, "
                   f"clean observes {show(runs[0])}{varies}{where}", difference, status, observed)


#: Hidden seeds every fix and hunt verdict is judged at unless told otherwise. A file that patches the
#: harness in its own side's process (a forged measurement, a line signed with its own side's key) can
#: only copy what it was shown, seed 0's clean output; at a seed drawn now it has nothing to copy.
DEFAULT_HIDDEN_SEEDS = 1


def judge_hidden(exercise: Exercise, verdict: Verdict, seed: int, hidden: list[tuple[int, Any]],
                 mode: str = "fix") -> Verdict:
    """A fixed verdict judged again at hidden seeds: still fixed only if it is fixed at every one.

    A repair that computes what the clean code computes is fixed at any
    seed; a file that hard-codes the clean output of the seed it was shown
    is not, wherever the check's inputs follow the seed. The sentence says
    how many hidden seeds were used and, where the repair failed at one, how
    (it did not finish, it observes something else, the evidence behind the
    observation differs) — never which seed, nor anything measured there: a
    seed or a clean value named in feedback is one a later hand-in could copy.
    It says so when the check's clean evidence was the same at every seed
    (then the hidden seeds could not tell more). The seeds themselves are
    kept in ``seeds`` and ``hidden_seeds`` for the grader.

    Args:
        exercise: the exercise as run.
        verdict: the verdict at the run's own seed (:func:`judge`).
        seed: that seed.
        hidden: ``(seed, RunResult)`` for each hidden seed (every side of
            the run but ``faulted``).
        mode: ``fix`` or ``hunt``.
    """
    seeds = tuple([seed] + [s for s, _ in hidden])
    drawn = tuple(s for s, _ in hidden)
    if not verdict.fixed or not hidden:
        return replace(verdict, seeds=(seed,), hidden_seeds=())  # judged at its own seed only
    same_everywhere = True
    first_clean = None
    for _, result in hidden:
        again = judge(exercise, result, mode)
        clean = result.evidence.get("clean")
        first_clean = clean if first_clean is None else first_clean
        same_everywhere = same_everywhere and clean == first_clean
        if again.status == "could not run":
            return replace(verdict, status="not fixed", seeds=seeds, hidden_seeds=drawn, difference=None,
                           sentence="not judged: the clean code did not measure at a hidden seed, so there was "
                                    "nothing to compare with; grade it again")
        if not again.fixed:
            return replace(verdict, status="not fixed", seeds=seeds, hidden_seeds=drawn, difference=None,
                           sentence=f"not fixed at a hidden seed (fixed at seed {seed}, the one you could see): "
                                    f"{_how_it_failed(exercise, again, result)}")
    n = len(drawn)
    caveat = " (this check's clean evidence is the same at every seed, so they could not tell more)" \
        if same_everywhere and n > 1 else ""
    return replace(verdict, sentence=f"{verdict.sentence}; fixed at {n} hidden seed{'s' if n > 1 else ''} "
                   f"too{caveat}", seeds=seeds, hidden_seeds=drawn)


def _how_it_failed(exercise: Exercise, again: Verdict, result) -> str:
    """How a repair failed at a hidden seed, in words that hold nothing measured there."""
    if again.yours_status != "ok":
        return "your side did not finish there"
    if any(same_observation(exercise, again.yours_observed, run) for run in _clean(result).runs):
        return "it observes what the clean code observes there, but the evidence behind it differs"
    return "it observes something other than what the clean code observes there"


def read_break_prediction(exercise: Exercise, prediction: str | None) -> tuple[Prediction | None, str | None]:
    """A break prediction: (the prediction read as the exercise's kind, or None for free text; the text as kept).

    A prediction that reads as the exercise's kind is graded against the
    learner's side; anything else is kept as free text and not graded.
    """
    if prediction is None or not prediction.strip():
        return None, None
    try:
        read = read_prediction(exercise, prediction)
    except answers.AnswerError:
        return None, prediction.strip()
    return read, read.text


def observe_break(exercise: Exercise, result, prediction: str | None = None) -> Verdict:
    """What the learner's own fault did: their side's observation against clean's, and the prediction graded.

    Status ``changed`` when the learner's side raised, timed out or observed
    something other than clean (their fault shows), ``unchanged`` when it
    observed what clean does (the check cannot see their fault).
    """
    if "clean" not in result.observations:
        return _could_not_run("break", result)
    status, observed, error = _yours(result)
    parsed, _ = read_break_prediction(exercise, prediction)
    correct = None
    if parsed is not None:
        correct = status == "ok" and is_correct(exercise, parsed, observed)
    elif prediction and status == "error" and not exercise.kind.free_text:
        correct = _predicted_exception(prediction, error)
    show = exercise.kind.show_observation
    if status != "ok":
        return Verdict("break", "changed", f"your fault stops the check: {error}", yours_status=status,
                       yours_error=error, prediction_correct=correct)
    measured = _clean(result)
    runs = measured.runs
    difference = _difference(exercise, result, measured)
    if any(same_observation(exercise, observed, run) for run in runs):
        where = f"; the evidence diverges at {difference}" if difference else "; the evidence is the same too"
        return Verdict("break", "unchanged", f"your fault leaves the observation as it is "
                       f"({show(observed)}){where}", difference, status, observed,
                       prediction_correct=correct)
    where = f"; first divergence: {difference}" if difference else ""
    return Verdict("break", "changed", f"your fault changes the observation: {show(runs[0])} → "
                   f"{show(observed)}{where}", difference, status, observed,
                   prediction_correct=correct)


def _predicted_exception(prediction: str, error: str) -> bool | None:
    """A free-text break prediction that names an exception, graded against what the learner's side raised.

    None when the prediction is not an exception name.
    """
    try:
        name = answers.ErrorName().parse(prediction)
    except answers.AnswerError:
        return None
    raised = error.partition(":")[0].strip()
    return name.lower() == raised.lower()


def instruments_holding(result) -> list[dict]:
    """The instruments run's rows: per link, how it ended on each side (``holds``, ``fails``, ``skip``).

    Reads the ``Instruments`` table the :data:`INSTRUMENTS_CHECK` check returns
    on each side; a side that did not measure has no evidence, so no entry
    (its error is in ``result.errors``).
    """
    rows: dict[str, dict] = {}
    for side in ("clean", "faulted", YOURS):
        for item in result.evidence.get(side, []):
            if item.get("type") == "table" and str(item.get("title")).startswith("Instruments"):
                for row in item.get("rows", []):
                    entry = rows.setdefault(row[0], {"link": row[0]})
                    entry[side] = row[1]
                    entry[f"{side}_verdict"] = row[2] if len(row) > 2 else ""
    return list(rows.values())


def first_instrument_divergence(result) -> str | None:
    """The first instrument whose status on the learner's engine differs from the clean engine's, in one
    sentence ("CAUSALITY: holds on clean, fails on yours — ..."), or None when every one agrees."""
    for row in instruments_holding(result):
        clean, yours = row.get("clean"), row.get(YOURS)
        if clean != yours:
            why = row.get(f"{YOURS}_verdict" if yours == "fails" else "clean_verdict")
            return f"{row['link']}: {clean or 'did not run'} on clean, {yours or 'did not run'} on yours" + \
                (f" — {why}" if why else "")
    return None
