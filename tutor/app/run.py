"""One run of a session: asked for, cancellable from any thread, executed (and recorded) on one.

A :class:`Run` is a prediction's run: it waits for a warm-up in progress,
runs the sides, and records a ``pass``, ``fail`` or ``timeout`` through its
session (:data:`tutor.model.attempts.RECORDED`). An :class:`EditRun` is an
edit-mode run: it *uses* a Run that records nothing to run the sides, then
judges the learner's side and records the attempt with its mode, diff and
verdict — so no status of the plain run's policy (a timed-out clean side)
can be saved as a prediction the learner never made. The engine's
instruments follow a measured verdict (:meth:`EditRun.add_instruments`).

A run gets what it needs passed in (:class:`RunPorts`: the runner, the
wait for a warm-up, and the savers of the session that asks for it), never
its session itself: the session builds runs, a run knows nothing of it.

Layers: imports neither Textual nor torch.
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, replace
from typing import Any, Callable

from tutor.app.outcome import EditOutcome, Outcome
from tutor.app.tasks import Task
from tutor.model.attempts import RECORDED
from tutor.model.catalog import Exercise
from tutor.model.patch import MAX_EDIT_BYTES, EditError, check_text, syntax_problem
from tutor.model.verdict import (DEFAULT_HIDDEN_SEEDS, YOURS, Verdict, judge, judge_hidden, observe_break,
                                 read_break_prediction)
from tutor.sandbox.protocol import Progress, Side
from tutor.sandbox.runner import RunResult

#: Seconds a run waits for a warm-up in progress before it runs anyway.
WARM_UP_WAIT_S = 120.0


@dataclass(frozen=True)
class RunPorts:
    """What a run uses of the session that asks for it, passed in when the run is made.

    Attributes:
        runner: runs the sides (a :class:`tutor.app.session.RunnerLike`).
        wait_for_warm_up: returns once a warm-up in progress has finished (or
            :data:`WARM_UP_WAIT_S` passed); at once when none is.
        record: saves a result whose status is recorded as an attempt,
            ``record(exercise, result, note, confidence=…)``, and returns its :class:`Outcome`.
        record_edit: saves an edit-mode outcome's attempt and returns the outcome, ``saved_to`` set.
        instruments: the engine's instruments on a task's sides,
            ``instruments(task, text, on_progress)`` (:meth:`tutor.app.session.Session.instruments`).
    """

    runner: Any
    wait_for_warm_up: Callable[[], None]
    record: Callable[..., "Outcome"]
    record_edit: Callable[["EditOutcome"], "EditOutcome"]
    instruments: Callable[..., RunResult | None]


class Run:
    """One run asked for by a learner: cancellable from any thread, executed on one.

    Attributes:
        exercise: the exercise.
        prediction: what the learner typed, or None.
        seed: the seed it runs with.
        sides: the sides it runs.
        note: the note saved with a recorded attempt, or None.
        record: whether a pass, fail or timeout is recorded.
        timeout_scale: the run's own time-limit scale (a retry's), or None.
        confidence: the learner's stated confidence (percent), saved with a recorded attempt, or None.
        hints: the hints the learner revealed before predicting, saved with a recorded attempt.
    """

    def __init__(self, ports: RunPorts, exercise: Exercise, prediction: str | None, *, seed: int,
                 sides: tuple[Side, ...], note: str | None, record: bool,
                 timeout_scale: float | None = None, confidence: int | None = None, hints: int = 0) -> None:
        self.ports = ports
        self.exercise = exercise
        self.prediction = prediction
        self.seed = seed
        self.sides = sides
        self.note = note
        self.record = record
        self.timeout_scale = timeout_scale
        self.confidence = confidence
        self.hints = hints
        self._asked_at = time.monotonic()
        self._cancel = threading.Event()

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""
        return self._cancel.is_set()

    def cancel(self) -> None:
        """Stop this run (from any thread): before it starts it never starts; while it runs, the
        runner's worker is stopped and replaced. Killing a process may take a moment."""
        self._cancel.set()
        self.ports.runner.cancel()

    def execute(self, on_progress: Callable[[Progress], None] | None = None) -> Outcome:
        """Run, grade and (for a pass, fail or timeout) record; blocking, on the calling thread.

        Args:
            on_progress: called with each side's :class:`~tutor.sandbox.protocol.Progress`.

        Raises:
            answers.AnswerError: the prediction does not read as the exercise's kind.
            tutor.sandbox.runner.DeviceError: the requested device is not available.
            tutor.sandbox.runner.WorkerError: the check worker could not be started
                (unless the run was cancelled meanwhile: then the outcome is
                a cancelled result).
        """
        ex = self.exercise
        self.ports.wait_for_warm_up()
        if self.cancelled:
            return self._finish(RunResult.cancelled(ex, self.prediction, when="before it started", seed=self.seed))
        scale = {} if self.timeout_scale is None else {"timeout_scale": self.timeout_scale}
        try:
            result = self.ports.runner.run(ex, self.prediction, on_progress=on_progress, seed=self.seed,
                                        sides=self.sides, **scale)
        except Exception:
            if not self.cancelled:
                raise
            # Cancelling while the worker starts makes the start fail: that is the cancel, not an error.
            result = RunResult.cancelled(ex, self.prediction, when="while the check worker started", seed=self.seed)
        return self._finish(result)

    def _finish(self, result: RunResult) -> Outcome:
        if result.status == "cancelled" and not result.duration_s:
            # Stopped before the runner timed anything: time it from when it was asked for.
            result = replace(result, duration_s=time.monotonic() - self._asked_at)
        if self.record and result.status in RECORDED:
            return self.ports.record(self.exercise, result, self.note, confidence=self.confidence, hints=self.hints)
        return Outcome(result)



class EditRun:
    """One edit-mode run: the learner's file as the side ``yours``, judged and recorded.

    Cancellable from any thread like :class:`Run`, whose sides it runs
    through a Run that records nothing (:attr:`run`).

    Attributes:
        ports: what it uses of the session that asked for it.
        task: what the learner edited.
        text: the learner's file (line ends made ``\\n``).
        diff: the learner's unified diff.
        syntax: the sentence naming the first syntax error, or None.
        record: whether a measured verdict is recorded as an attempt.
        instruments: whether :meth:`execute` runs the engine's instruments after the verdict.
        hidden_seeds: fix and hunt: how many seeds, drawn at random when it
            runs, a fixed verdict is judged again at (:func:`tutor.model.verdict.judge_hidden`).
        given_seeds: seeds of those chosen beforehand (an assignment's ``hidden_seeds``), judged first;
            the rest are drawn.
        run: the plain run of the sides (clean, repeat, faulted, yours).
    """

    def __init__(self, ports: RunPorts, task: Task, text: str, prediction: str | None, *, seed: int,
                 record: bool, instruments: bool = False, hidden_seeds: int | None = None, seeds: tuple = ()) -> None:
        text = check_text(task.path, text)
        diff = task.diff(text)
        if len(diff.encode("utf-8", "replace")) > MAX_EDIT_BYTES:
            raise EditError(f"your edit of {task.path} is a diff of more than {MAX_EDIT_BYTES // 1024} KiB; "
                            "edits that large are refused — change only what the exercise needs")
        self.ports = ports
        self.task = task
        self.text = text
        self.diff = diff
        self.record = record
        self.break_prediction = prediction if task.mode == "break" else None
        self.syntax = syntax_problem(task.path, text)
        self.instruments = instruments and task.engine
        self.given_seeds = tuple(int(s) for s in seeds)
        self.hidden_seeds = max(0, int(DEFAULT_HIDDEN_SEEDS if hidden_seeds is None else hidden_seeds),
                                len(self.given_seeds))
        self.run = Run(ports, task.exercise, None, seed=seed, sides=task.sides(text), note=None, record=False)

    @property
    def seed(self) -> int:
        """The seed the sides run with."""
        return self.run.seed

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called."""
        return self.run.cancelled

    def cancel(self) -> None:
        """Stop this run (from any thread), as :meth:`Run.cancel`."""
        self.run.cancel()

    def execute(self, on_progress: Callable[[Progress], None] | None = None) -> EditOutcome:
        """Measure the verdict (:meth:`measure`), then, with :attr:`instruments`, add the instruments' run.

        Raises:
            tutor.sandbox.runner.DeviceError, tutor.sandbox.runner.WorkerError: as :meth:`Run.execute`.
        """
        outcome = self.measure(on_progress)
        if self.instruments:
            self.add_instruments(outcome, on_progress)
        return outcome

    def measure(self, on_progress: Callable[[Progress], None] | None = None) -> EditOutcome:
        """Run the sides, judge the learner's side, record the attempt (a measured verdict only).

        A file with a syntax error is not run: the verdict names the line at
        once (status ``syntax error``) and nothing is recorded. Nothing is
        recorded either when the verdict could not be measured (the clean
        side raised or timed out: ``could not run``) or the run was cancelled.

        Raises:
            tutor.sandbox.runner.DeviceError, tutor.sandbox.runner.WorkerError: as :meth:`Run.execute`.
        """
        task = self.task
        _, kept = read_break_prediction(task.exercise, self.break_prediction)
        if self.syntax is not None:
            result = RunResult(id=task.exercise.id, status="error", device="-", torch="-", fault=task.exercise.fault,
                               kind=task.exercise.kind.name, errors={YOURS: self.syntax}, seed=self.seed)
            verdict = Verdict(task.mode, "syntax error", f"not run: {self.syntax}", yours_status="error",
                              yours_error=self.syntax)
            return EditOutcome(result, task=task, text=self.text, diff=self.diff, verdict=verdict, prediction=kept)
        result = self.run.execute(on_progress).result
        if task.mode == "break":
            verdict = observe_break(task.exercise, result, self.break_prediction)
        else:
            verdict = judge(task.exercise, result, task.mode)
            if self.hidden_seeds and verdict.fixed and not self.cancelled:
                verdict = self._judge_hidden(verdict, on_progress)
        outcome = EditOutcome(result, task=task, text=self.text, diff=self.diff, verdict=verdict, prediction=kept)
        if self.record and verdict.ran and not self.cancelled:
            outcome = self.ports.record_edit(outcome)
        return outcome

    def _judge_hidden(self, verdict: Verdict, on_progress: Callable[[Progress], None] | None) -> Verdict:
        """The verdict judged again at ``hidden_seeds`` seeds drawn now (``secrets``), which nobody saw before."""
        seeds: list[int] = [s for s in dict.fromkeys(self.given_seeds) if s != self.seed]
        while len(seeds) < self.hidden_seeds:
            seed = 1 + secrets.randbelow(2**31 - 2)
            if seed != self.seed and seed not in seeds:
                seeds.append(seed)
        sides = self.task.hidden_sides(self.text)  # yours against clean only
        hidden = []
        for seed in seeds:
            if self.cancelled:
                break
            hidden.append((seed, self.ports.runner.run(self.task.exercise, None, on_progress=on_progress,
                                                         seed=seed, sides=sides)))
        return judge_hidden(self.task.exercise, verdict, self.seed, hidden, self.task.mode)

    def instruments_follow(self, outcome: EditOutcome) -> bool:
        """Whether the engine's instruments run after this verdict: an engine file, a measured
        verdict, and a run not cancelled."""
        # A side that hung has cost its limit once; the instruments would only run the same file into it again.
        return (outcome.task.engine and outcome.verdict.ran and not self.cancelled
                and outcome.verdict.yours_status != "timeout")

    def add_instruments(self, outcome: EditOutcome, on_progress: Callable[[Progress], None] | None = None) -> bool:
        """Run the engine's instruments on clean and yours into ``outcome.instruments`` (blocking) when
        they follow this verdict (:meth:`instruments_follow`); return whether they ran. Never recorded.

        Raises:
            tutor.sandbox.runner.DeviceError, tutor.sandbox.runner.WorkerError: as :meth:`Run.execute`.
        """
        if not self.instruments_follow(outcome):
            return False
        outcome.instruments = self.ports.instruments(outcome.task, outcome.text, on_progress)
        return True
