"""The worker: a process with torch imported that runs checks in forked children.

Run as ``python -m tutor.sandbox.worker``. It imports torch once (without running any
operation, so no thread pool or CUDA context exists yet), says
:class:`~tutor.sandbox.protocol.Hello`, then reads one :class:`~tutor.sandbox.protocol.Request`
per line on stdin and answers each with one :class:`~tutor.sandbox.protocol.Answer`
line on stdout (progress lines before it). Every side of a request (the
clean subject, the faulted subject, a learner's own file) is one
:class:`SideRun`, and all of a request's sides run at once:

Once, before it says hello, the worker measures the machine's speed
(:func:`measure_speed`: ``tutor.sandbox.speed``'s fixed probe in as many forked
children as a plain run has sides) and puts the figure in its hello; the
runner scales each exercise's time limit by it, and a request carries the
limit that applies (``Request.timeout_s``) and why (``Request.limit_why``).

1. ``start`` makes a private copy of the subject packages in a temporary
   folder, applies the side's fault and puts its files in place there, then
   forks a child that forgets any imported ``engine``/``exercises`` modules,
   puts the copy first on ``sys.path``, works inside the temporary folder,
   caps its memory, sends its output to a log file, seeds every generator and
   calls the check function;
2. ``feed`` takes what the child wrote on its pipe and hands back the
   progress reports among it, keeping the child's last word (a measurement,
   or the exception it raised);
3. ``finish`` kills a child that ran out of time, reaps it, turns what
   happened into a :class:`~tutor.sandbox.protocol.SideResult` (a crash, an
   exception or a timeout is an outcome) and removes the temporary folder.

Because every check runs in a fresh fork, a fault can never leak into the
next run, and torch's import is paid once per worker, not once per run.
"""

from __future__ import annotations

import importlib
import json
import os
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Callable

os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")  # ask CUDA without creating a context

from exercises.context import Context  # noqa: E402
from exercises.faults import SUBJECT_PACKAGES, FaultError, make_private_copy  # noqa: E402
from tutor.sandbox import protocol, speed  # noqa: E402
from tutor.sandbox.protocol import (Answer, Hello, Measured, Message, Progress, ProtocolError, Raised,  # noqa: E402
                                    Refusal, Request, Side, SideResult)

OUTPUT_EXCERPT_CHARS = 2000
MEMORY_CAP_MB = int(os.environ.get("TUTOR_MEMORY_CAP_MB", "8192"))
#: Set by the runner when several workers share the machine (``tutor check -j N``): the cores this one may use.
CORES_ENV = "TUTOR_WORKER_CORES"


def worker_cores() -> int:
    """The CPU cores this worker may use: ``TUTOR_WORKER_CORES`` when set to a whole number above 0, else all."""
    try:
        cores = int(os.environ.get(CORES_ENV, ""))
    except ValueError:
        cores = 0
    return cores if cores > 0 else (os.cpu_count() or 1)


def main() -> None:
    import torch  # the one import this process exists to pay for

    _preload(torch)

    out = sys.stdout
    sys.stdout = sys.stderr  # nothing but protocol lines may reach the real stdout
    scratch = tempfile.mkdtemp(prefix="tutor-worker-")  # every private copy lives in here
    cores = worker_cores()
    _send(out, Hello(torch=torch.__version__, cuda=_cuda_available(torch), pid=os.getpid(),
                     cores=cores, scratch=scratch, speed=measure_speed(cores)))
    try:
        _serve(out, scratch, torch.__version__)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _serve(out, scratch: str, torch_version: str) -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            request = protocol.decode(line)
        except ProtocolError as exc:
            _send(out, Refusal(f"the worker received a line that is not a request: {exc}"))
            continue
        if not isinstance(request, Request):
            _send(out, Refusal(f"the worker received a {request.TYPE} message, not a request"))
            continue
        _send(out, handle(request, torch_version, lambda message: _send(out, message), scratch))


def _preload(torch) -> None:
    """Import, once, the modules checks reach for lazily (the optimizer's first
    step imports torch._dynamo, about a second). Imports only: no tensor
    operation runs here, so no thread pool exists to break across fork."""
    for name in ("torch.optim", "torch._dynamo", "torch.autograd.gradcheck", "numpy"):
        try:
            importlib.import_module(name)
        except Exception:
            pass


def measure_speed(cores: int, copies: int = 2) -> dict | None:
    """Run the speed probe (``tutor.sandbox.speed.workload``) in ``copies`` forked children at once.

    The children run as the sides of a plain run do (clean and faulted, each
    with ``cores // copies`` torch threads), so the figure covers what a
    check meets: this machine's cores and whatever else runs on them now.
    The worker itself runs no tensor operation, so its forks stay safe.

    Returns:
        ``tutor.sandbox.speed.Speed.to_wire()`` of the slowest child per piece, or
        None when a child failed or the probe ran past
        ``tutor.sandbox.speed.PROBE_TIMEOUT_S`` (the limits are then as written).
    """
    threads = max(1, cores // copies)
    started = time.perf_counter()
    children: dict[int, tuple[int, list[bytes]]] = {}  # fd -> (pid, chunks)
    for _ in range(copies):
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(read_fd)
            _probe_child(threads, write_fd)
        os.close(write_fd)
        children[read_fd] = (pid, [])
    deadline = time.monotonic() + speed.PROBE_TIMEOUT_S
    reading = dict(children)
    while reading and time.monotonic() < deadline:
        ready, _, _ = select.select(list(reading), [], [], max(0.0, min(deadline - time.monotonic(), 0.5)))
        for fd in ready:
            chunk = os.read(fd, 1 << 12)
            if chunk:
                reading[fd][1].append(chunk)
            else:
                del reading[fd]
    runs = []
    for fd, (pid, chunks) in children.items():
        if fd in reading:
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)
        try:
            runs.append(json.loads(b"".join(chunks)))
        except ValueError:
            pass
    if len(runs) < copies or not all(isinstance(r, dict) and "gemm_s" in r and "step_s" in r for r in runs):
        return None
    return speed.Speed.of(runs, wall_s=round(time.perf_counter() - started, 4)).to_wire()


def _probe_child(threads: int, fd: int) -> None:
    code = 1
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)  # the worker's stdout carries protocol lines only
        os.dup2(devnull, 2)
        import torch
        torch.set_num_threads(threads)
        data = json.dumps(speed.workload(torch)).encode()
        while data:
            data = data[os.write(fd, data):]
        code = 0
    except BaseException:
        pass
    finally:
        os._exit(code)


def _cuda_available(torch) -> bool:
    try:
        return bool(torch.cuda.is_available())
    except Exception:  # a broken driver is the same as no CUDA here
        return False


def _send(out, message: Message) -> None:
    out.write(protocol.encode(message) + "\n")
    out.flush()


def handle(request: Request, torch_version: str, send: Callable[[Progress], None] | None = None,
           scratch: str | None = None) -> Answer:
    """Run every side of one request at once and return the combined answer.

    Args:
        request: the check, device, seed, time limit and sides.
        torch_version: named in the answer.
        send: called with each side's :class:`~tutor.sandbox.protocol.Progress`
            (job and side filled in) as it arrives; None drops them.
        scratch: the folder private copies are made in (default: the
            system's temporary folder).
    """
    threads = max(1, worker_cores() // max(1, len(request.sides)))
    started = time.perf_counter()
    runs = [SideRun(side, request, threads, scratch) for side in request.sides]
    for run in runs:
        run.start()
    deadline = time.monotonic() + request.timeout_s
    reading = {run.fd: run for run in runs if run.running}
    while reading:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break  # whoever is still reading ran out of time
        ready, _, _ = select.select(list(reading), [], [], min(remaining, 0.5))
        for fd in ready:
            chunk = os.read(fd, 1 << 16)
            if not chunk:  # the child closed its pipe: it is done
                del reading[fd]
                continue
            for progress in reading[fd].feed(chunk):
                if send is not None:
                    send(progress)
    sides = {run.side.name: run.finish(timed_out=run.fd in reading) for run in runs}
    return Answer(job=request.job, torch=torch_version, device=request.device,
                  duration_s=round(time.perf_counter() - started, 4), sides=sides)


class SideRun:
    """One side of a request: its private tree, its forked child, its pipe.

    ``start`` builds the tree and forks, ``feed`` reads what the child sends,
    ``finish`` reaps the child and cleans up. A side whose tree cannot be
    built never forks; ``finish`` then reports why.
    """

    def __init__(self, side: Side, request: Request, threads: int, scratch: str | None = None) -> None:
        """Args:
            side: how this side's tree is built.
            request: the check, device and seed (shared by every side).
            threads: torch threads for this side's child.
            scratch: where the private tree is made.
        """
        self.side = side
        self.request = request
        self.threads = threads
        self.scratch = scratch
        self.folder: str | None = None
        self.pid: int | None = None
        self.fd: int | None = None
        self.started = 0.0
        self._buffer = b""
        self._last: Measured | Raised | None = None  # the child's last word
        self._failed: SideResult | None = None  # set when the tree could not be built

    @property
    def running(self) -> bool:
        return self.pid is not None

    def start(self) -> None:
        """Build the side's private tree and fork the child that runs the check there."""
        self.folder = tempfile.mkdtemp(prefix=f"{self.side.name}-", dir=self.scratch)
        try:
            build_tree(Path(self.folder), self.side)
        except (TreeError, FaultError, OSError) as exc:
            shutil.rmtree(self.folder, ignore_errors=True)
            what = f"the {self.side.name} side's files could not be put in place" if isinstance(exc, TreeError) \
                else "the fault could not be applied"
            self._failed = SideResult(status="error", error=f"{what}: {exc}")
            return
        read_fd, write_fd = os.pipe()
        self.started = time.perf_counter()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(read_fd)
            _child(self.request, self.folder, self.threads, write_fd)
        os.close(write_fd)
        self.pid, self.fd = pid, read_fd

    def feed(self, chunk: bytes) -> list[Progress]:
        """Take bytes the child wrote; return the progress reports they complete.

        The child's measurement (or the exception it raised) is kept for
        ``finish``; a line that is not a message is ignored.
        """
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        reports = []
        for line in lines:
            try:
                message = protocol.decode(line)
            except ProtocolError:
                continue
            if isinstance(message, Progress):
                reports.append(Progress(fraction=message.fraction, message=message.message,
                                        job=self.request.job, side=self.side.name))
            elif isinstance(message, (Measured, Raised)):
                self._last = message
        return reports

    def finish(self, timed_out: bool) -> SideResult:
        """Stop the child if it ran out of time, reap it, say how the side ended, remove its tree."""
        if self._failed is not None:
            return self._failed
        if timed_out:
            os.kill(self.pid, signal.SIGKILL)
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        result = self._outcome(status, timed_out)
        shutil.rmtree(self.folder, ignore_errors=True)
        return result

    def _outcome(self, status: int, timed_out: bool) -> SideResult:
        output = _excerpt(os.path.join(self.folder, "output.log"))
        duration_s = round(time.perf_counter() - self.started, 4)
        if timed_out:
            why = f"; the limit is {self.request.limit_why}" if self.request.limit_why else ""
            return SideResult(status="timeout", output=output, duration_s=duration_s,
                              error=f"the check did not finish within {self.request.timeout_s:g} s "
                                    f"and was stopped{why}")
        if isinstance(self._last, Measured):
            return SideResult(status="ok", observed=self._last.observed, evidence=self._last.evidence,
                              output=output, duration_s=duration_s)
        if isinstance(self._last, Raised):
            return SideResult(status="error", error=self._last.sentence, exception=self._last.exception,
                              output=output, duration_s=duration_s)
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
            error = f"the subject crashed with signal {name}"
        else:
            error = f"the check exited with code {os.WEXITSTATUS(status)} and no result"
        return SideResult(status="error", error=error, output=output, duration_s=duration_s)


class TreeError(ValueError):
    """A side's file cannot be put in its private tree; the message says why."""


def build_tree(folder: Path, side: Side) -> Path:
    """Copy the subject packages into ``folder``, apply the side's fault, put its files in place.

    Raises:
        FaultError: the fault does not apply to the current source.
        OSError: the copy could not be made.
        TreeError: a file of the side lies outside the subject packages,
            replaces no file there, or cannot be written.
    """
    make_private_copy(folder, side.fault)
    for path, text in side.files:
        parts = Path(path).parts
        if not parts or parts[0] not in SUBJECT_PACKAGES or ".." in parts or Path(path).is_absolute():
            raise TreeError(f"{path!r} must lie inside one of {', '.join(p + '/' for p in SUBJECT_PACKAGES)}")
        target = folder / path
        if not target.is_file():
            raise TreeError(f"{path!r} names no file of the subject to replace")
        try:
            target.write_text(text, encoding="utf-8")
        except (OSError, UnicodeError) as exc:
            raise TreeError(f"{path!r} could not be written ({exc})") from None
    return folder


def _child(request: Request, folder: str, threads: int, fd: int) -> None:
    code = 1
    try:
        log = os.open(os.path.join(folder, "output.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(log, 1)
        os.dup2(log, 2)
        sys.stdin = open(os.devnull)
        os.chdir(folder)
        _cap_memory(request.device)
        for name in list(sys.modules):
            if name.split(".")[0] in ("engine", "exercises"):
                del sys.modules[name]
        sys.path.insert(0, folder)
        importlib.invalidate_caches()

        import random

        import numpy as np
        import torch

        torch.set_num_threads(threads)
        random.seed(request.seed)
        np.random.seed(request.seed)
        torch.manual_seed(request.seed)

        def progress(fraction: float, message: str) -> None:
            _write(fd, Progress(fraction=fraction, message=message))

        module_name, _, function_name = request.check.partition(".")
        module = importlib.import_module(f"exercises.{module_name}")
        if not module.__file__.startswith(folder):
            raise RuntimeError("the check did not load from the private copy")
        check = getattr(module, function_name)
        context = Context(device=request.device, seed=request.seed, on_progress=progress)
        measurement = check(context).to_dict()
        _write(fd, Measured(observed=measurement["observed"], evidence=measurement["evidence"]))
        code = 0
    except BaseException as exc:  # everything the subject does wrong is an outcome
        tb = traceback.extract_tb(exc.__traceback__)
        where = f"{os.path.basename(tb[-1].filename)}:{tb[-1].lineno}" if tb else ""
        first = (str(exc).splitlines() or [""])[0][:300]
        try:
            _write(fd, Raised(exception=type(exc).__name__, message=first, where=where))
        except BaseException:
            pass
    finally:
        os._exit(code)


def _cap_memory(device: str) -> None:
    """Cap the child's address space so a runaway allocation fails, not the machine."""
    if device != "cpu" or MEMORY_CAP_MB <= 0:
        return  # CUDA drivers reserve large virtual ranges; a cap would break them
    try:
        import resource
        cap = MEMORY_CAP_MB * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    except (ImportError, ValueError, OSError):
        pass


def _write(fd: int, message: Message) -> None:
    data = (protocol.encode(message) + "\n").encode()
    while data:
        written = os.write(fd, data)
        data = data[written:]


def _excerpt(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            head = fh.read(OUTPUT_EXCERPT_CHARS)
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
    except OSError:
        return ""
    text = head.decode("utf-8", "replace")
    if size > OUTPUT_EXCERPT_CHARS:
        text += f"\n… ({size - OUTPUT_EXCERPT_CHARS} more bytes of output not shown)"
    return text


if __name__ == "__main__":
    main()
