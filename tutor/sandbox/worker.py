"""The worker: a process with torch imported that runs checks in forked children.

Run as ``python -m tutor.sandbox.worker``. It imports torch once (without running any
operation, so no thread pool or CUDA context exists yet), says
:class:`~tutor.sandbox.protocol.Hello`, then reads one :class:`~tutor.sandbox.protocol.Request`
per line on stdin and answers each with one :class:`~tutor.sandbox.protocol.Answer`
line on stdout (progress lines before it). Every side of a request (the
clean subject, the faulted subject, a learner's own file) is one
:class:`~tutor.sandbox.side.SideRun`, and all of a request's sides run at once:

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

This module is the protocol loop (hello, then one answer per request);
:mod:`tutor.sandbox.side` is a side as the worker sees it (its tree, its
signed pipe, its outcome) and :mod:`tutor.sandbox.child` the processes a
side runs in (the warden, the namespace's init, the check's child).
"""

from __future__ import annotations

import importlib
import json
import linecache
import os
import select
import shutil
import signal
import sys
import tempfile
import time
from typing import Callable

os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")  # ask CUDA without creating a context

from tutor.sandbox import child, forkserver, protocol, side, speed  # noqa: E402
from tutor.sandbox.child import SIDE_THREADS, probe_child  # noqa: E402
from tutor.sandbox.protocol import Answer, Hello, Message, Progress, ProtocolError, Refusal, Request  # noqa: E402
from tutor.sandbox.side import SideRun, confinement, reads_of  # noqa: E402

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
    # torch formats the stack inside a side's child (torch.manual_seed queues a lazy CUDA call with it), which
    # reads the source of every frame; a confined child may not read the tutor's, so it is read here, once
    for module in (sys.modules[__name__], side, child, forkserver):
        linecache.getlines(module.__file__)
    # every side's processes are forked from this moment's copy of the worker, which never reads a request
    forkserver.start()

    out = sys.stdout
    sys.stdout = sys.stderr  # nothing but protocol lines may reach the real stdout
    scratch = tempfile.mkdtemp(prefix="tutor-worker-")  # every private copy lives in here
    cores = worker_cores()
    status = confinement()
    if status.landlock:
        reads_of(scratch)  # computed once, before the first side forks
    _send(out, Hello(torch=torch.__version__, cuda=_cuda_available(torch), pid=os.getpid(),
                     cores=cores, scratch=scratch, speed=measure_speed(cores), confinement=status.to_wire()))
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
        _send(out, handle(request, torch_version, lambda message: _send(out, message), scratch, parent_fd=0))


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
    with :data:`SIDE_THREADS` torch threads), so the figure covers what a
    check meets: this machine's cores and whatever else runs on them now.
    The worker itself runs no tensor operation, so its forks stay safe.

    Returns:
        ``tutor.sandbox.speed.Speed.to_wire()`` of the slowest child per piece, or
        None when a child failed or the probe ran past
        ``tutor.sandbox.speed.PROBE_TIMEOUT_S`` (the limits are then as written).
    """
    threads = SIDE_THREADS
    started = time.perf_counter()
    children: dict[int, tuple[int, list[bytes]]] = {}  # fd -> (pid, chunks)
    for _ in range(copies):
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(read_fd)
            probe_child(threads, write_fd)
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



def _cuda_available(torch) -> bool:
    try:
        return bool(torch.cuda.is_available())
    except Exception:  # a broken driver is the same as no CUDA here
        return False


def _send(out, message: Message) -> None:
    out.write(protocol.encode(message) + "\n")
    out.flush()


def handle(request: Request, torch_version: str, send: Callable[[Progress], None] | None = None,
           scratch: str | None = None, parent_fd: int | None = None) -> Answer:
    """Run every side of one request at once and return the combined answer.

    Args:
        request: the check, device, seed, time limit and sides.
        torch_version: named in the answer.
        send: called with each side's :class:`~tutor.sandbox.protocol.Progress`
            (job and side filled in) as it arrives; None drops them.
        scratch: the folder private copies are made in (default: the
            system's temporary folder).
        parent_fd: a descriptor that reads end-of-file when the tutor that
            started this worker is gone (the worker's stdin); every side is
            then killed and the worker exits. None watches nothing.
    """
    threads = SIDE_THREADS
    started = time.perf_counter()
    _reap_strays()  # what the last request's killed sides left
    runs = [SideRun(side, request, threads, scratch) for side in request.sides]
    for run in runs:
        run.start()
    deadline = time.monotonic() + request.timeout_s
    reading = {run.fd: run for run in runs if run.running}
    exits = {run.pidfd: run for run in runs if run.running and run.pidfd is not None}
    while reading:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break  # whoever is still reading ran out of time
        watched = list(reading) + list(exits) + ([parent_fd] if parent_fd is not None else [])
        ready, _, _ = select.select(watched, [], [], min(remaining, 0.5))
        for fd in ready:
            if fd == parent_fd:
                _orphaned(runs)
            if fd in exits:  # the side's warden ended: its child and everything it started are gone
                run = exits.pop(fd)
                reading.pop(run.fd, None)
                continue
            if fd not in reading:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:  # the child closed its pipe: it is done
                del reading[fd]
                continue
            run = reading[fd]
            for progress in run.feed(chunk):
                if send is not None:
                    send(progress)
            if run.over_cap:  # past what a side may send: stopped now, its outcome names the cap
                run.kill()
                del reading[fd]
    hung = [run for run in runs if run.fd in reading]
    for run in hung:
        run.ask_where()
    if hung:
        time.sleep(WHERE_WAIT_S)
    sides = {run.side.name: run.finish(timed_out=run.fd in reading) for run in runs}
    _reap_strays()
    return Answer(job=request.job, torch=torch_version, device=request.device,
                  duration_s=round(time.perf_counter() - started, 4), sides=sides)


def _reap_strays() -> None:
    """Reap what this worker adopted (a child subreaper: :mod:`tutor.sandbox.forkserver`) and nobody waits for,
    such as a killed warden's namespace init; every side of the request is reaped already."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _orphaned(runs: list["SideRun"]) -> None:
    """The tutor is gone (its end of our stdin closed): kill every side whole, tidy up, exit."""
    if _parent_alive():
        return
    for run in runs:
        run.kill()
    for run in runs:
        run.finish(timed_out=True)
    if runs and runs[0].scratch and os.path.basename(runs[0].scratch).startswith("tutor-worker-"):
        shutil.rmtree(runs[0].scratch, ignore_errors=True)
    os._exit(0)


def _parent_alive() -> bool:
    """Whether our stdin still has a writer (the tutor): a hang-up with nothing left to read says no."""
    poller = select.poll()
    poller.register(0, select.POLLIN | select.POLLHUP)
    for _, event in poller.poll(0):
        if event & select.POLLHUP and not event & select.POLLIN:
            return False
    return True


#: Seconds a hung child is given to write where it is (faulthandler, on SIGUSR1) before it is killed.
WHERE_WAIT_S = 0.3


if __name__ == "__main__":
    main()
