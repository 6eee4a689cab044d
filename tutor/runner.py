"""The runner: one exercise in, one result out — the same for the TUI and the CLI.

The runner owns a worker process (``python -m tutor.worker``) that has torch
imported and runs each side of a check (clean, faulted) in a forked child on
a private copy of the subject. This module itself never imports torch, so the
first screen and ``tutor list`` stay fast.

Result status:

* ``pass`` / ``fail`` — the check ran and the prediction matched / did not;
* ``ok`` — the check ran and there was no prediction (``tutor check``);
* ``error`` — the subject raised or crashed, or the check could not run;
* ``timeout`` — it ran past the exercise's time limit and was stopped;
* ``cancelled`` — the learner stopped it.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable

from exercises import answers
from tutor.catalog import Catalog, Exercise

DEVICES = ("auto", "cpu", "cuda")


class DeviceError(ValueError):
    """A device was asked for that this machine does not have."""


class WorkerError(RuntimeError):
    """The worker process could not be started or stopped answering."""


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
        evidence: per side ("clean", "faulted") the evidence list.
        differs: for a faulted exercise, whether clean and faulted observed
            values differ (what ``tutor check`` asserts).
        duration_s: wall time of the run, seconds.
        seed: the seed the check ran with (``Context.seed``).
        prediction_text: the prediction as it was read and graded, written
            the canonical way (``capability`` for the key ``6``).
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

    @property
    def error(self) -> str | None:
        return "; ".join(f"{side}: {msg}" for side, msg in self.errors.items()) or None

    def to_dict(self) -> dict:
        data = asdict(self)
        data["error"] = self.error
        return data


class Worker:
    """One worker process and its JSON-lines protocol."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen | None = None
        self.info: dict = {}
        self._lock = threading.RLock()
        self.stopped = False  # set when stop() ends a worker on purpose

    def start(self) -> dict:
        """Start the worker unless it is running; return its hello (torch version, CUDA, pid)."""
        with self._lock:
            return self._start()

    def _start(self) -> dict:
        if self._proc is not None and self._proc.poll() is None:
            return self.info
        self.stopped = False
        env = dict(os.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "tutor.worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, text=True, bufsize=1, env=env, start_new_session=True)
        except OSError as exc:
            raise WorkerError(f"could not start the check worker ({exc})") from None
        proc = self._proc
        line = proc.stdout.readline()
        try:
            self.info = json.loads(line)["hello"]
        except (json.JSONDecodeError, KeyError, TypeError):
            if self.stopped:
                raise WorkerError("the check worker was stopped while it was starting") from None
            self.stop()
            raise WorkerError("the check worker did not start; is torch installed? "
                              "Run: pip install torch==2.13.0") from None
        return self.info

    def request(self, message: dict, on_progress: Callable[[dict], None] | None = None) -> dict | None:
        """Send one request; return its answer, or None if the worker died or was stopped."""
        with self._lock:
            self.start()
            proc = self._proc
            try:
                proc.stdin.write(json.dumps(message) + "\n")
                proc.stdin.flush()
                while True:
                    line = proc.stdout.readline()
                    if not line:
                        return None
                    answer = json.loads(line)
                    if "progress" in answer:
                        if on_progress is not None:
                            on_progress(answer)
                        continue
                    return answer
            except (BrokenPipeError, OSError, ValueError, AttributeError):
                return None

    def stop(self) -> None:
        """Kill the worker and everything it started (its process group).

        Safe to call from another thread while a request or a start is waiting.
        """
        self.stopped = True
        proc, self._proc = self._proc, None
        if proc is None:
            return
        scratch = self.info.get("scratch")
        try:
            os.killpg(proc.pid, 9)
        except (ProcessLookupError, PermissionError, OSError):
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for stream in (proc.stdin, proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        if scratch and os.path.basename(scratch).startswith("tutor-worker-"):
            shutil.rmtree(scratch, ignore_errors=True)  # a killed worker cannot tidy up


class Runner:
    """Runs exercises of one catalog on one device choice."""

    def __init__(self, catalog: Catalog, device: str = "auto") -> None:
        if device not in DEVICES:
            raise DeviceError(f"unknown device {device!r}; use one of {', '.join(DEVICES)}")
        self.catalog = catalog
        self.requested_device = device
        self.worker = Worker()
        self._jobs = itertools.count(1)
        self._cancelled = threading.Event()

    def warm_up(self) -> dict:
        """Start the worker now (it imports torch) so the first Run is quick."""
        return self.worker.start()

    @property
    def device(self) -> str:
        """The device checks run on, resolved against this machine.

        Raises:
            DeviceError: ``cuda`` was asked for and CUDA is not available.
        """
        cuda = self.worker.start().get("cuda", False)
        if self.requested_device == "auto":
            return "cuda" if cuda else "cpu"
        if self.requested_device == "cuda" and not cuda:
            raise DeviceError("--device cuda was asked for but torch sees no CUDA device here; "
                              "use --device cpu, or --device auto to take CUDA only when present")
        return self.requested_device

    def run(self, exercise: Exercise, prediction: str | None = None,
            on_progress: Callable[[dict], None] | None = None, seed: int = 0) -> RunResult:
        """Apply the exercise's fault, run its check on both sides, grade.

        Args:
            exercise: the exercise to run.
            prediction: what the learner typed, or None for an ungraded run.
            on_progress: called with ``{"side", "progress", "message"}`` dicts.
            seed: the check's seed (``Context.seed``); 0 is the seed every
                exercise's values are pinned at.

        Raises:
            answers.AnswerError: the prediction does not read as the kind.
            DeviceError: the requested device is not available.
            WorkerError: the worker could not be started.
        """
        parsed = prediction_text = None
        if prediction is not None:
            parsed = exercise.parse_answer(prediction)
            prediction_text = answers.show(exercise.kind, parsed)
        self._cancelled.clear()
        try:
            device = self.device
        except WorkerError:
            if not self._cancelled.is_set():
                raise
            return RunResult(id=exercise.id, status="cancelled", device="?", torch="?", fault=exercise.fault,
                             kind=exercise.kind, prediction=prediction, prediction_text=prediction_text,
                             errors={"run": "the run was cancelled"}, seed=seed)
        fault = self.catalog.fault_of(exercise)
        sides = [{"name": "clean", "fault": None}]
        if fault is not None:
            sides.append({"name": "faulted", "fault": fault.to_dict()})
        request = {"job": next(self._jobs), "check": exercise.check, "device": device, "seed": seed,
                   "timeout_s": exercise.time_limit_s, "sides": sides}
        started = time.perf_counter()
        try:
            answer = self.worker.request(request, on_progress)
        except WorkerError:
            if not self._cancelled.is_set():
                raise
            answer = None
        result = RunResult(id=exercise.id, status="error", device=device, torch=self.worker.info.get("torch", "?"),
                           fault=exercise.fault, kind=exercise.kind, prediction=prediction,
                           prediction_text=prediction_text, seed=seed)
        if answer is None:
            self.worker.stop()
            result.duration_s = time.perf_counter() - started  # how long it ran before it stopped
            if self._cancelled.is_set():
                result.status = "cancelled"
                result.errors["run"] = "the run was cancelled"
            else:
                result.errors["run"] = "the check worker stopped unexpectedly and will be restarted"
            return result
        return self._grade(exercise, result, answer, parsed)

    def cancel(self) -> None:
        """Stop a run in progress (from another thread); the worker is replaced."""
        self._cancelled.set()
        self.worker.stop()

    def close(self) -> None:
        self.worker.stop()

    def _grade(self, exercise: Exercise, result: RunResult, answer: dict, parsed: Any) -> RunResult:
        result.duration_s = answer.get("duration_s", 0.0)
        worst = "ok"
        for name, side in answer.get("sides", {}).items():
            result.side_durations_s[name] = side.get("duration_s", 0.0)
            if side.get("output"):
                result.output[name] = side["output"]
            if side["status"] != "ok":
                result.errors[name] = side.get("error", "unknown error")
                worst = "timeout" if side["status"] == "timeout" else ("error" if worst == "ok" else worst)
                continue
            measurement = side["measurement"]
            setattr(result, name, measurement["observed"])
            result.evidence[name] = measurement["evidence"]
        needed = {"clean": ["clean"], "faulted": ["faulted"], "both": ["clean", "faulted"]}[exercise.observe]
        if any(name in result.errors for name in needed):
            result.status = worst
            return result
        if exercise.observe == "both":
            result.observed = [result.clean, result.faulted]
        else:
            result.observed = getattr(result, exercise.observe)
        if exercise.fault and "clean" not in result.errors and "faulted" not in result.errors:
            result.differs = result.clean != result.faulted
        if parsed is None:
            result.status = "ok"
        else:
            result.correct = answers.matches(exercise.kind, parsed, result.observed, exercise.tolerance)
            result.status = "pass" if result.correct else "fail"
        return result
