"""The runner: one exercise in, one result out — the same for the TUI and the CLI.

The runner owns a worker process (``python -m tutor.sandbox.worker``) that has torch
imported and runs each side of a check (clean, faulted, or any other
:class:`~tutor.sandbox.protocol.Side`) in a forked child on a private copy of the
subject. This module itself never imports torch, so the first screen and
``tutor list`` stay fast. What to run and what to keep is decided one layer
up, in :mod:`tutor.app.session`; turning the worker's answer into a graded
:class:`~tutor.sandbox.result.RunResult` is the pure function
:func:`~tutor.sandbox.result.grade` (:mod:`tutor.sandbox.result`, whose
docstring lists a result's statuses). Both are imported here too, where the
runner's callers take them from.

Time limits follow the machine (:mod:`tutor.sandbox.speed`): the worker measures its
speed once when it starts, and each run's limit is the exercise's limit
scaled by that figure, or by an explicit scale (a retry's, ``--timeout-scale``,
``TUTOR_TIMEOUT_SCALE``). ``RunResult.time_limit`` says which limit applied
and why, and so does a timeout's sentence.
"""

from __future__ import annotations

import atexit
import itertools
import os
import secrets
import select
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import asdict, replace
from typing import Callable, Sequence

from tutor.model.catalog import Catalog, Exercise
from tutor.sandbox import bwrap, namespaces, protocol, speed
from tutor.sandbox.confine import Status, enabled, remove_cgroups
from tutor.sandbox.launch import launch, why_not_started
from tutor.sandbox.protocol import Answer, Hello, Progress, ProtocolError, Request, Side
from tutor.sandbox.result import RunResult, grade, read_prediction
from tutor.sandbox.record import record_path
from tutor.sandbox.speed import Speed, TimeLimit, pin_cpu_kernels

DEVICES = ("auto", "cpu", "cuda")


class DeviceError(ValueError):
    """A device was asked for that this machine does not have."""


class WorkerError(RuntimeError):
    """The worker process could not be started or stopped answering."""


class UnconfinedError(WorkerError):
    """Code under check would run unconfined, and this runner was told not to allow that (grading)."""


def unconfined_sentence(why: str) -> str:
    """The sentence a refusal to run unconfined says: why, and the two ways on."""
    return (f"code under check would run unconfined here ({why}), so it could change files and grades it "
            "should not reach; grade on Linux with Landlock, or pass --allow-unconfined to run it anyway")


def standard_sides(catalog: Catalog, exercise: Exercise) -> tuple[Side, ...]:
    """The sides a plain run of ``exercise`` needs: clean, and faulted when it has a fault."""
    fault = catalog.fault_of(exercise)
    return (Side.clean(),) if fault is None else (Side.clean(), Side.faulted(fault))


class Worker:
    """One worker process and its protocol (:mod:`tutor.sandbox.protocol`).

    Attributes:
        hello: the running worker's :class:`~tutor.sandbox.protocol.Hello`, or None
            before the first start.
        stopped: set when ``stop`` ended a worker on purpose.
    """

    def __init__(self, cores: int | None = None) -> None:
        """Args:
            cores: CPU cores the worker may use (``TUTOR_WORKER_CORES``);
                None lets it use all of them.
        """
        self._proc: subprocess.Popen | None = None
        self.hello: Hello | None = None
        self._lock = threading.RLock()
        self.stopped = False
        self.cores = cores
        self.sandboxed = False  # the running worker was started inside bubblewrap
        self.missed_deadline: float | None = None  # the deadline (s) the last request's answer missed, if it did
        self._pending = b""  # what the worker wrote after its last whole line
        self.cgroups: dict[str, str] = {}  # controller -> the cgroup made for the running worker

    def start(self) -> Hello:
        """Start the worker unless it is running; return its hello (torch version, CUDA, pid).

        Raises:
            WorkerError: the process could not start or did not say hello.
        """
        with self._lock:
            return self._start()

    def _start(self) -> Hello:
        if self._proc is not None and self._proc.poll() is None:
            return self.hello
        self.stopped = False
        # the worker sees only the variables it needs (never a grader's token), inside bubblewrap where it starts
        env = bwrap.environment(os.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")
        # OpenMP threads that wait for each other spin by default. On a busy machine a
        # spinning thread burns the time slice its preempted sibling needs: a check with
        # two threads (one side on two cores, as the capstone's audit runs) took 29-37 s
        # beside other work where a sleeping wait took 2-3 s, the same threads and the
        # same numbers. A policy set by the user wins.
        env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        pin_cpu_kernels(env)  # one set of torch CPU kernels on every AVX2 machine (speed.py says why)
        env["PYTHONPATH"] = bwrap.source_path()
        if self.cores is not None:
            env["TUTOR_WORKER_CORES"] = str(max(1, self.cores))
        python = [sys.executable, "-m", "tutor.sandbox.worker"]
        wall = bwrap.available() if enabled() else bwrap.Bwrap(why="")
        self.sandboxed = bool(wall.path)
        if self.sandboxed:
            _say_swept(*namespaces.sweep())  # what a tutor killed before its own cleanup left behind
            # cgroups made here, bound writable into the sandbox: the worker makes its sides' inside them
            self.cgroups = namespaces.delegate(f"{namespaces.WORKER_PREFIX}{os.getpid()}-{secrets.token_hex(4)}",
                                               owner=wall.user)
            if self.cgroups:  # a tutor that ends without closing its runner leaves no empty cgroup behind
                atexit.register(_end_at_exit, self, dict(self.cgroups))
            env[namespaces.CGROUPS_ENV] = namespaces.delegation_env(self.cgroups)
            argv = bwrap.command(wall, python, env, writable=list(self.cgroups.values()))
        else:
            argv = python
            env[bwrap.WHY_ENV] = wall.why
        fds: tuple[int, ...] = ()
        try:
            if self.sandboxed:
                argv, fd = bwrap.through_fd(argv)
                fds = (fd,)
            self._proc = launch(argv, env, fds, bwrap.as_user(wall.user if self.sandboxed else None))
        except OSError as exc:
            raise WorkerError(f"could not start the check worker ({exc})") from None
        finally:
            for fd in fds:
                os.close(fd)
        proc = self._proc
        line = proc.stdout.readline()
        try:
            hello = protocol.decode(line)
        except ProtocolError:
            hello = None
        if not isinstance(hello, Hello):
            if self.stopped:
                raise WorkerError("the check worker was stopped while it was starting") from None
            self.stop()
            raise WorkerError(f"the check worker did not start: {why_not_started(proc)}") from None
        if self.sandboxed:  # its pid inside the sandbox means nothing here: name it as this machine sees it
            hello = replace(hello, pid=_host_pid(proc.pid, hello.pid))
        self.hello = hello
        self._pending = b""  # the worker writes nothing after its hello until it gets a request
        return hello

    def request(self, request: Request, on_progress: Callable[[Progress], None] | None = None) -> Answer | None:
        """Send one request; return its answer, or None if the worker died or was stopped.

        Args:
            request: what to run.
            on_progress: called with each :class:`~tutor.sandbox.protocol.Progress`
                (from the reading thread).

        Raises:
            WorkerError: the worker was not running and could not be started.
        """
        with self._lock:
            self.start()
            proc = self._proc
            self.missed_deadline = None
            deadline_s = answer_deadline(request.timeout_s)
            deadline = time.monotonic() + deadline_s
            try:
                proc.stdin.write(protocol.encode(request) + "\n")
                proc.stdin.flush()
                while True:
                    line = self._read_line(proc, deadline)
                    if line is None:  # past the deadline: the worker, every side with it, is killed
                        self.missed_deadline = deadline_s
                        os.killpg(proc.pid, 9)
                        return None
                    if not line:
                        return None
                    message = protocol.decode(line)
                    if isinstance(message, Progress):
                        if on_progress is not None:
                            on_progress(message)
                        continue
                    return message if isinstance(message, Answer) else None
            except (BrokenPipeError, OSError, ValueError, AttributeError):
                return None
            except BaseException:  # Ctrl-C, or a signal handler's exit: the worker and its sides end first, now,
                self.stop()  # not at the tutor's exit, which a loaded machine can hold up for many seconds
                raise

    def _read_line(self, proc: subprocess.Popen, deadline: float) -> bytes | None:
        """The worker's next line (b"" at its end, or once a line passes :data:`MAX_WORKER_LINE_BYTES`, when the
        worker is killed), or None once ``deadline`` (``time.monotonic``) has passed.

        Waits in slices of :data:`WAIT_SLICE_S`, never in one blocking read: a signal the tutor gets (Ctrl-C)
        is handled within one slice, so the tutor ends, and its worker with it.
        """
        fd = proc.stdout.fileno()
        end = self._pending.find(b"\n")
        parts, size = [self._pending], len(self._pending)
        while end < 0:  # each chunk is searched once: a long line costs its length, never its square
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._pending = b"".join(parts)
                return None
            ready, _, _ = select.select([fd], [], [], min(remaining, WAIT_SLICE_S))
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return b""
                end = chunk.find(b"\n")
                if end >= 0:
                    end += size
                parts.append(chunk)
                size += len(chunk)
                if end < 0 and size > MAX_WORKER_LINE_BYTES:  # no answer of ours: the worker ends here
                    self._pending = b""
                    os.killpg(proc.pid, 9)
                    return b""
        pending = b"".join(parts)
        line, self._pending = pending[:end], pending[end + 1:]
        return line

    def stop(self) -> None:
        """Kill the worker and everything it started (its process group).

        Safe to call from another thread while a request or a start is waiting.
        """
        self.stopped = True
        proc, self._proc = self._proc, None
        if proc is None:
            return
        # a sandboxed worker's scratch is a tmpfs of its own, gone with it; an unsandboxed one's is a folder here
        scratch = self.hello.scratch if self.hello and not self.sandboxed else None
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
        if self.hello is not None and not self.sandboxed:
            remove_cgroups(f"tutor-{self.hello.pid}-")  # nor remove its sides' process-count cgroups
        left, self.cgroups = namespaces.remove_delegated(self.cgroups), {}
        if left:  # never kept silently
            sys.stderr.write(f"tutor: {len(left)} cgroup folder{'s' if len(left) > 1 else ''} of a stopped check "
                             f"worker could not be removed ({', '.join(left)}); remove them with rmdir\n")


#: How long past a request's limit the runner waits for the answer: a fixed part and a part of the limit.
ANSWER_GRACE_S = 10.0
ANSWER_GRACE_SHARE = 0.5
#: The longest line the tutor reads from its worker (an answer holds every side's capped result): past it the
#: request fails as a dead worker's does, and nothing more of it is kept.
MAX_WORKER_LINE_BYTES = 256 * 1024 * 1024
#: Seconds the tutor waits on its worker at a stretch: a signal (Ctrl-C) is handled within one of these.
WAIT_SLICE_S = 0.25


def answer_deadline(timeout_s: float) -> float:
    """Seconds the runner waits for the answer to a request whose limit is ``timeout_s``: the limit plus a grace."""
    return timeout_s + ANSWER_GRACE_S + ANSWER_GRACE_SHARE * timeout_s


def _end_at_exit(worker: "Worker", cgroups: dict[str, str]) -> None:
    """At the tutor's exit (a Ctrl-C included): kill the worker first, then remove its cgroups.

    Removing them waits for their processes to leave; a tutor that waited so with its worker still
    running kept that worker, and whatever check it ran, alive for as long (more than 10 s seen).
    """
    proc = worker._proc
    if proc is not None:
        try:
            os.killpg(proc.pid, 9)
        except (ProcessLookupError, PermissionError, OSError):
            pass
    namespaces.remove_delegated(cgroups)


def _say_swept(removed: list[str], left: list[str]) -> None:
    """Say on stderr which cgroup folders of a tutor killed before its cleanup this start removed, and which
    it could not (never silently)."""
    def folders(paths: list[str]) -> str:
        return f"{len(paths)} cgroup folder{'s' if len(paths) > 1 else ''} a killed tutor left behind"
    if removed:
        sys.stderr.write(f"tutor: removed {folders(removed)} ({', '.join(removed)})\n")
    if left:
        sys.stderr.write(f"tutor: {folders(left)} could not be removed ({', '.join(left)}); remove them with "
                         "rmdir once their processes have ended\n")


def _host_pid(outer: int, inner: int) -> int:
    """The pid this machine gives the process that is ``inner`` in the sandbox ``outer`` (bwrap) started."""
    for pid in namespaces.descendants(outer):
        try:
            with open(f"/proc/{pid}/status") as fh:
                line = next((l for l in fh if l.startswith("NSpid:")), "")
        except OSError:
            continue
        ids = line.split()[1:]
        if len(ids) >= 2 and ids[-1] == str(inner):
            return pid
    return outer


class Runner:
    """Runs exercises of one catalog on one device choice."""

    def __init__(self, catalog: Catalog, device: str = "auto", timeout_scale: float | None = None,
                 cores: int | None = None, allow_unconfined: bool = True) -> None:
        """Args:
            catalog: where exercises' faults are found.
            device: ``auto``, ``cpu`` or ``cuda``.
            timeout_scale: multiply every time limit by this (``--timeout-scale``)
                instead of by the worker's speed probe; None reads
                ``TUTOR_TIMEOUT_SCALE``, and without it the probe decides.
            cores: CPU cores the worker may use (several runners sharing the
                machine: ``tutor check -j N``); None uses all.
            allow_unconfined: run checks where the worker cannot confine
                them (``Hello.confinement``); False makes :meth:`run` raise
                :class:`UnconfinedError` there instead (grading someone
                else's code: ``tutor grade``, ``tutor fix --learner``).

        Raises:
            DeviceError: ``device`` is none of :data:`DEVICES`.
            ScaleError: ``timeout_scale`` or ``TUTOR_TIMEOUT_SCALE`` is not a
                positive number.
        """
        if device not in DEVICES:
            raise DeviceError(f"unknown device {device!r}; use one of {', '.join(DEVICES)}")
        self.catalog = catalog
        self.requested_device = device
        self.timeout_scale = None if timeout_scale is None else speed.parse_scale(timeout_scale)
        self.environment_scale = speed.environment_scale()
        self.worker = Worker(cores)
        self.allow_unconfined = allow_unconfined
        self._jobs = itertools.count(1)
        self._cancelled = threading.Event()

    def warm_up(self) -> dict:
        """Start the worker now (it imports torch) so the first Run is quick; return its hello as a dict."""
        return asdict(self.worker.start())

    @property
    def device(self) -> str:
        """The device checks run on, resolved against this machine.

        Raises:
            DeviceError: ``cuda`` was asked for and CUDA is not available.
            WorkerError: the worker could not be started to ask.
        """
        cuda = self.worker.start().cuda
        if self.requested_device == "auto":
            return "cuda" if cuda else "cpu"
        if self.requested_device == "cuda" and not cuda:
            raise DeviceError("--device cuda was asked for but torch sees no CUDA device here; "
                              "use --device cpu, or --device auto to take CUDA only when present")
        return self.requested_device

    @property
    def confinement(self):
        """How the worker confines each side (``tutor.sandbox.confine.Status``); starts the worker.

        Raises:
            WorkerError: the worker could not be started.
        """
        return Status.from_wire(self.worker.start().confinement)

    @property
    def known_confinement_why(self) -> str:
        """Why the last worker started could not confine code ("" when it could, or none started); starts nothing."""
        hello = self.worker.hello
        return Status.from_wire(hello.confinement).why if hello is not None else ""

    @property
    def speed(self) -> Speed | None:
        """What the running worker's speed probe measured, or None (no worker yet, or no figure)."""
        hello = self.worker.hello
        return Speed.from_wire(hello.speed) if hello is not None else None

    def time_limit(self, exercise: Exercise, timeout_scale: float | None = None) -> TimeLimit:
        """The limit a run of ``exercise`` gets now, and why (:func:`tutor.sandbox.speed.time_limit`).

        Starts the worker if it is not running (its probe is part of the answer).

        Args:
            exercise: the exercise.
            timeout_scale: a retry's scale, which wins over every other.

        Raises:
            ScaleError: ``timeout_scale`` is not a positive number.
            WorkerError: the worker could not be started.
        """
        self.worker.start()
        return self._limit(exercise, timeout_scale)

    def _limit(self, exercise: Exercise, timeout_scale: float | None) -> TimeLimit:
        retry = None if timeout_scale is None else speed.parse_scale(timeout_scale, "a retry's time-limit scale")
        return speed.time_limit(exercise.time_limit_s, retry=retry, flag=self.timeout_scale,
                                environment=self.environment_scale, speed=self.speed)

    def run(self, exercise: Exercise, prediction: str | None = None,
            on_progress: Callable[[Progress], None] | None = None, seed: int = 0,
            sides: Sequence[Side] | None = None, timeout_scale: float | None = None) -> RunResult:
        """Run the exercise's check on each side at once, then :func:`grade`.

        Args:
            exercise: the exercise to run.
            prediction: what the learner typed, or None for an ungraded run.
            on_progress: called with each side's :class:`~tutor.sandbox.protocol.Progress`.
            seed: the check's seed (``Context.seed``); 0 is the seed every
                exercise's values are pinned at.
            sides: the sides to run (default :func:`standard_sides`).
            timeout_scale: this run's time-limit scale, over every other (a
                retry: ``RunResult.retry_scale`` of the run that ran out).

        Raises:
            answers.AnswerError: the prediction does not read as the kind.
            DeviceError: the requested device is not available.
            WorkerError: the worker could not be started.
            ScaleError: ``timeout_scale`` is not a positive number.
        """
        if prediction is not None:
            exercise.parse_answer(prediction)  # an unreadable answer runs nothing
        if timeout_scale is not None:
            speed.parse_scale(timeout_scale, "a retry's time-limit scale")  # a bad scale runs nothing either
        self._cancelled.clear()
        try:
            device = self.device
        except WorkerError:
            if not self._cancelled.is_set():
                raise
            return RunResult.cancelled(exercise, prediction, device="?", torch="?", seed=seed)
        if not self.allow_unconfined:
            status = self.confinement
            if not status.confined:
                raise UnconfinedError(unconfined_sentence(status.why))
        limit = self._limit(exercise, timeout_scale)  # the worker is up: self.device started it
        sides = tuple(sides) if sides is not None else standard_sides(self.catalog, exercise)
        request = Request(job=next(self._jobs), check=exercise.check, device=device, seed=seed,
                          timeout_s=limit.seconds, limit_why=limit.why, sides=sides, record=record_path(sides))
        started = time.perf_counter()
        try:
            answer = self.worker.request(request, on_progress)
        except WorkerError:
            if not self._cancelled.is_set():
                raise
            answer = None
        if answer is not None:
            result = grade(exercise, answer, prediction, seed)
            result.time_limit = limit.to_dict()
            return result
        self.worker.stop()
        torch = self.worker.hello.torch if self.worker.hello else "?"
        ran_s = time.perf_counter() - started  # how long it ran before it stopped
        if self._cancelled.is_set():
            return RunResult.cancelled(exercise, prediction, device=device, torch=torch, seed=seed,
                                       duration_s=ran_s)
        missed = getattr(self.worker, "missed_deadline", None)
        why = (f"the check worker gave no answer within {missed:g} s (the run's limit of {limit.seconds:g} s and "
               "a grace) and was stopped; a fresh one starts for the next run") if missed else \
            "the check worker stopped unexpectedly and will be restarted"
        return RunResult(id=exercise.id, status="error", device=device, torch=torch, fault=exercise.fault,
                         kind=exercise.kind.name, prediction=prediction,
                         prediction_text=read_prediction(exercise, prediction),
                         errors={"run": why}, seed=seed, duration_s=ran_s, time_limit=limit.to_dict())

    def cancel(self) -> None:
        """Stop a run in progress (from another thread); the worker is replaced."""
        self._cancelled.set()
        self.worker.stop()

    def close(self) -> None:
        self.worker.stop()
