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

import faulthandler
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

from exercises.faults import SUBJECT_PACKAGES, FaultError, make_private_copy  # noqa: E402
from tutor.sandbox import confine, protocol, speed  # noqa: E402
from tutor.sandbox.protocol import (Answer, Attempted, Hello, Measured, Message, Progress, ProtocolError,  # noqa: E402
                                    Raised, Refusal, Request, Side, SideResult)

OUTPUT_EXCERPT_CHARS = 2000
#: Torch threads every side's child runs with, whatever the machine: intra-op
#: (``torch.set_num_threads``) and inter-op (``torch.set_num_interop_threads``).
#: A reduction split over more threads adds its partial sums in another order,
#: and float32 addition is not associative: a loss moved in its 6th digit and a
#: sampled token changed with the core count. One thread per side makes every
#: observation and every row of evidence the same on 1, 2, 4 or 16 cores, under
#: ``-j`` and under load (docs/determinism.md).
SIDE_THREADS = 1
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
    confinement = _confinement()
    if confinement.confined:
        _read_roots(scratch)  # computed once, before the first side forks
    _send(out, Hello(torch=torch.__version__, cuda=_cuda_available(torch), pid=os.getpid(),
                     cores=cores, scratch=scratch, speed=measure_speed(cores), confinement=confinement.to_wire()))
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
        confine.die_with_parent()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)  # the worker's stdout carries protocol lines only
        os.dup2(devnull, 2)
        # in the speed probe's child: the worker imported torch once, the child only reaches it
        import torch
        _set_threads(torch, threads)
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
            for progress in reading[fd].feed(chunk):
                if send is not None:
                    send(progress)
    hung = [run for run in runs if run.fd in reading]
    for run in hung:
        run.ask_where()
    if hung:
        time.sleep(WHERE_WAIT_S)
    sides = {run.side.name: run.finish(timed_out=run.fd in reading) for run in runs}
    return Answer(job=request.job, torch=torch_version, device=request.device,
                  duration_s=round(time.perf_counter() - started, 4), sides=sides)


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
#: The warden's exit status when its child started more than MAX_PROCESSES processes.
_TOO_MANY = 127
#: The warden exits with this plus the signal number when its child was killed by a signal.
_SIGNALLED = 64


class SideRun:
    """One side of a request: its private tree, its warden and child, its pipe.

    ``start`` builds the tree and forks the side's *warden*, which makes the
    side's namespaces and forks the child that runs the check there;
    ``feed`` reads what the child sends (signed lines only: a line without
    this side's key marks the side tampered), ``finish`` kills whatever is
    left of the side, reaps it and cleans up. A side whose tree cannot be
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
        self.pid: int | None = None  # the warden's; its process group's id too
        self.fd: int | None = None
        self.pidfd: int | None = None
        self.started = 0.0
        self._buffer = b""
        self._key = b""
        self._last: Measured | Raised | None = None  # the child's last word
        self._failed: SideResult | None = None  # set when the tree could not be built
        self.refused: list[str] = []
        self.tampered = 0
        self.last_step = ""
        self._finished: SideResult | None = None
        self.cgroup: str | None = None  # the side's pids cgroup, where one can be made
        self.forks_refused = 0

    @property
    def running(self) -> bool:
        return self.pid is not None

    def start(self) -> None:
        """Build the side's private tree and fork the warden that runs the check there."""
        self.folder = os.path.realpath(tempfile.mkdtemp(prefix=f"{self.side.name}-", dir=self.scratch))
        try:
            build_tree(Path(self.folder), self.side)
        except (TreeError, FaultError, OSError) as exc:
            shutil.rmtree(self.folder, ignore_errors=True)
            what = f"the {self.side.name} side's files could not be put in place" if isinstance(exc, TreeError) \
                else "the fault could not be applied"
            self._failed = SideResult(status="error", error=f"{what}: {exc}")
            return
        os.makedirs(os.path.join(self.folder, "tmp"), exist_ok=True)
        self._key = os.urandom(32)
        if _confinement().processes == "cgroup":  # the warden, its namespace's init and the child: +2
            self.cgroup = confine.make_pids_cgroup(f"tutor-{os.getpid()}-{os.path.basename(self.folder)}",
                                                   confine.MAX_PROCESSES + 2)
        read_fd, write_fd = os.pipe()
        self.started = time.perf_counter()
        pid = os.fork()
        if pid == 0:  # the warden: never returns
            os.close(read_fd)
            _warden(self.request, self.folder, self.threads, write_fd, self._key, _confinement(), self.cgroup)
        os.close(write_fd)
        self.pid, self.fd = pid, read_fd
        try:
            self.pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            self.pidfd = None

    def feed(self, chunk: bytes) -> list[Progress]:
        """Take bytes the child wrote; return the progress reports they complete.

        Only lines signed with this side's key count: the child's
        measurement (or the exception it raised) is kept for ``finish``,
        what it was refused is noted; any other line marks the side tampered.
        """
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        reports = []
        for line in lines:
            if not line:
                continue
            try:
                message = protocol.verify(self._key, line)
            except ProtocolError:
                self.tampered += 1
                continue
            if isinstance(message, Progress):
                self.last_step = message.message or self.last_step
                reports.append(Progress(fraction=message.fraction, message=message.message,
                                        job=self.request.job, side=self.side.name))
            elif isinstance(message, Attempted):
                if message.what not in self.refused and len(self.refused) < 20:
                    self.refused.append(message.what)
            elif isinstance(message, (Measured, Raised)):
                self._last = message
        return reports

    def ask_where(self) -> None:
        """Ask a hung child to write its Python stack into its log (SIGUSR1: faulthandler), to name where it hung."""
        children = confine.children(self.pid) if self.pid else []
        if children:  # the check's child is the warden's youngest (after its namespace's init)
            try:
                os.kill(children[-1], signal.SIGUSR1)
            except OSError:
                pass

    def where_hung(self) -> str:
        """Where the child was when it was stopped: ``exercises/snippets/losses.py line 25 (squared_errors)``, or ""."""
        try:
            with open(os.path.join(self.folder, "output.log"), "rb") as fh:
                fh.seek(max(0, os.path.getsize(fh.name) - 8192))
                tail = fh.read().decode("utf-8", "replace")
        except OSError:
            return ""
        marker = tail.rfind("most recent call first")
        if marker < 0:
            return ""
        for line in tail[marker:].splitlines()[1:]:
            line = line.strip()
            if not line.startswith("File "):
                break
            try:
                path, rest = line[6:].split('", line ', 1)
                number, _, function = rest.partition(" in ")
            except ValueError:
                continue
            if path.startswith(self.folder + os.sep):
                return f"{os.path.relpath(path, self.folder)} line {number.strip()} ({function.strip()})"
        return ""

    def kill(self) -> None:
        """Kill the side whole: its warden's process group (the child's namespace dies with the warden)."""
        if self.pid is None:
            return
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError, OSError):
            pass

    def finish(self, timed_out: bool) -> SideResult:
        """Kill what is left of the side, reap it, say how it ended, remove its tree."""
        if self._failed is not None:
            return self._failed
        if self._finished is not None:
            return self._finished
        if timed_out:
            self.kill()
        else:  # the warden may still be counting down; anything its child left behind goes now
            self._reap_warden_soon()
            self.kill()
        _, status = os.waitpid(self.pid, 0)
        self._drain()
        os.close(self.fd)
        if self.pidfd is not None:
            os.close(self.pidfd)
        self.forks_refused = confine.refused_forks(self.cgroup)
        confine.remove_cgroup(self.cgroup)
        if self.forks_refused:
            self.refused.append(f"tried to run more than {confine.MAX_PROCESSES} processes at once: "
                                f"{self.forks_refused} fork{'s' if self.forks_refused > 1 else ''} refused")
        result = self._outcome(status, timed_out)
        shutil.rmtree(self.folder, ignore_errors=True)
        self._finished = result
        return result

    def _reap_warden_soon(self, wait_s: float = 2.0) -> None:
        """Give a warden whose child is done a moment to see it and exit on its own (its status says how)."""
        if self.pidfd is None:
            return
        select.select([self.pidfd], [], [], wait_s)

    def _drain(self) -> None:
        """Read what is left in the pipe without waiting (a process that escaped may still hold it open)."""
        os.set_blocking(self.fd, False)
        try:
            while True:
                chunk = os.read(self.fd, 1 << 16)
                if not chunk:
                    break
                self.feed(chunk)
        except (BlockingIOError, OSError):
            pass

    def _outcome(self, status: int, timed_out: bool) -> SideResult:
        output = _excerpt(os.path.join(self.folder, "output.log"))
        duration_s = round(time.perf_counter() - self.started, 4)
        confined = bool(_confinement().confined)
        common = dict(output=output, duration_s=duration_s, refused=list(self.refused), tampered=self.tampered,
                      confined=confined, last_step=self.last_step)
        refused = f" (it {'; '.join(self.refused)})" if self.refused else ""
        if timed_out:
            why = f"; the limit is {self.request.limit_why}" if self.request.limit_why else ""
            where = self.where_hung()
            step = (f" while {self.last_step}" if self.last_step else "") + (
                ("," if self.last_step else "") + f" at {where}" if where else "")
            return SideResult(status="timeout", error=f"the check did not finish within {self.request.timeout_s:g} s "
                                                      f"and was stopped{step}{why}{refused}", **common)
        if self.tampered:
            return SideResult(status="error", exception="Tampered",
                              error=f"tampered: {self.tampered} line{'s' if self.tampered > 1 else ''} on the side's "
                                    "result pipe were not written by the check, so nothing it reported is "
                                    f"taken as measured{refused}", **common)
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
        if code == _TOO_MANY:
            return SideResult(status="error", exception="ProcessLimit",
                              error=f"the subject started more than {confine.MAX_PROCESSES} processes at once and "
                                    f"was stopped{refused}", **common)
        if isinstance(self._last, Measured):
            return SideResult(status="ok", observed=self._last.observed, evidence=self._last.evidence, **common)
        if isinstance(self._last, Raised):
            return SideResult(status="error", error=self._last.sentence + refused, exception=self._last.exception,
                              **common)
        sig = None
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
        elif code is not None and code > _SIGNALLED and code != _TOO_MANY:
            sig = code - _SIGNALLED
        if sig is not None:
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
            error = f"the subject crashed with signal {name}"
        else:
            error = f"the check exited with code {code} and no result"
        return SideResult(status="error", error=error + refused, **common)


class TreeError(ValueError):
    """A side's file cannot be put in its private tree; the message says why."""


def build_tree(folder: Path, side: Side) -> Path:
    """Copy the subject packages into ``folder``, apply the side's fault, put its files in place.

    A side that carries files of its own (a learner's) gets no catalog data
    (``exercises/*.toml``): the faults' ``before`` texts would rebuild the
    clean subject next to the learner's file.

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
    if side.files:
        for data in (folder / "exercises").glob("*.toml"):
            data.unlink()
    return folder


_STATUS: confine.Status | None = None
_READ_ROOTS: tuple[str, ...] | None = None


def _confinement() -> confine.Status:
    """What confinement works here (probed once per worker, in a forked child)."""
    global _STATUS
    if _STATUS is None:
        _STATUS = confine.probe()
    return _STATUS


def _read_roots(scratch: str) -> tuple[str, ...]:
    """What a side may read: the Python install and system libraries, less the worker's scratch (every
    side's tree): the scratch alone, not all of /tmp, where a checkout and its venv may live."""
    global _READ_ROOTS
    if _READ_ROOTS is None:
        _READ_ROOTS = confine.read_roots(forbidden=[scratch])
    return _READ_ROOTS


def _warden(request: Request, folder: str, threads: int, fd: int, key: bytes, status: confine.Status,
            cgroup: str | None = None) -> None:
    """The side's warden: namespaces, then the child; waits for it, counts its processes, exits as it did.

    Runs only our own code. It dies with the worker (PR_SET_PDEATHSIG) and
    leads its own process group (the worker kills the side by that group).
    Where a PID namespace can be made, the warden's first fork is that
    namespace's init (:func:`_init`, which only reaps) and its second the
    child that runs the check: when the child ends the warden kills the
    init, and the kernel kills everything else the subject started. (The
    child is not the init itself: an init ignores signals it has no handler
    for, so ``os.abort()`` or a signal to itself would behave otherwise.)
    """
    code = 1
    try:
        confine.die_with_parent()
        os.setpgid(0, 0)
        confine.join_cgroup(cgroup)  # the kernel counts the warden and everything under it
        init = None
        if status.pid_namespace:
            confine.make_namespaces()
            init = os.fork()
            if init == 0:  # never returns
                _init()
        roots = _read_roots(os.path.dirname(folder)) if status.confined else ()
        child = os.fork()
        if child == 0:  # never returns
            confine.die_with_parent()
            _child(request, folder, threads, fd, key, status, roots)
        os.close(fd)
        code = _watch(child, init)
        if init is not None:
            os.kill(init, signal.SIGKILL)  # and with it every process left in the namespace
            os.waitpid(init, 0)
    except BaseException:
        pass
    finally:
        os._exit(code)


def _init() -> None:
    """The init of a side's PID namespace: reap whatever is orphaned there, until killed."""
    code = 0
    try:
        confine.die_with_parent()
        signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes pause() when an orphan ends
        while True:
            try:
                os.wait()
            except ChildProcessError:
                signal.pause()
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _watch(child: int, init: int | None) -> int:
    """Wait for ``child``; stop the side when it has more than MAX_PROCESSES processes; its end as an exit status.

    The processes counted are the init's descendants (orphans included)
    where there is a PID namespace, else the child's and its own.
    """
    try:
        pidfd = os.pidfd_open(child)
    except (AttributeError, OSError):
        pidfd = None
    counted = init if init is not None else child
    while True:
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid:
            break
        if len(confine.descendants(counted)) + (0 if init is not None else 1) > confine.MAX_PROCESSES:
            os.kill(init if init is not None else child, signal.SIGKILL)
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
            return _TOO_MANY
        if pidfd is not None:
            select.select([pidfd], [], [], 0.05)
        else:
            time.sleep(0.05)
    if os.WIFSIGNALED(status):
        return _SIGNALLED + os.WTERMSIG(status)
    return min(os.WEXITSTATUS(status), _SIGNALLED)


def _child(request: Request, folder: str, threads: int, fd: int, key: bytes, status: confine.Status,
           roots: tuple[str, ...]) -> None:
    code = 1

    def send(message: Message) -> None:
        data = protocol.sign(key, message)
        while data:
            data = data[os.write(fd, data):]

    try:
        log = os.open(os.path.join(folder, "output.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(log, 1)
        os.dup2(log, 2)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)  # not the worker's stdin, where the next request would arrive
        sys.stdin = open(os.devnull)
        # Only the log (1, 2), /dev/null (0) and the side's own pipe stay open: no other side's
        # pipe, no descriptor of the worker's, reaches the subject.
        os.closerange(3, fd)
        os.closerange(fd + 1, 1 << 16)
        os.chdir(folder)
        os.environ["TMPDIR"] = os.path.join(folder, "tmp")
        # torch.compile's caches (Inductor, Triton) go inside the side's own tree, the one place it may write
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(folder, "tmp", "inductor")
        os.environ["TRITON_CACHE_DIR"] = os.path.join(folder, "tmp", "triton")
        tempfile.tempdir = None
        _cap_memory(request.device)
        for name in list(sys.modules):
            if name.split(".")[0] in ("engine", "exercises"):
                del sys.modules[name]
        sys.path.insert(0, folder)
        importlib.invalidate_caches()

        # in the check's child, after the private copy is first on sys.path
        import random

        import numpy as np
        import torch

        _set_threads(torch, threads)
        faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=False)  # where a hang is
        if status.confined:
            policy = confine.Policy(tree=folder, read=roots, network=not status.net_namespace)
            confine.Attempts(policy, lambda what: send(Attempted(what=what))).install()
            confine.restrict(policy, status.landlock)
        random.seed(request.seed)
        np.random.seed(request.seed)
        torch.manual_seed(request.seed)

        def progress(fraction: float, message: str) -> None:
            send(Progress(fraction=fraction, message=message))

        module_name, _, function_name = request.check.partition(".")
        module = importlib.import_module(f"exercises.{module_name}")
        if not module.__file__.startswith(folder):
            raise RuntimeError("the check did not load from the private copy")
        check = getattr(module, function_name)
        # the Context of the private copy: its source is readable there (torch.compile reads it)
        from exercises.context import Context
        context = Context(device=request.device, seed=request.seed, on_progress=progress)
        measurement = check(context).to_dict()
        send(Measured(observed=measurement["observed"], evidence=measurement["evidence"]))
        code = 0
    except BaseException as exc:  # everything the subject does wrong is an outcome
        tb = traceback.extract_tb(exc.__traceback__)
        where = f"{os.path.basename(tb[-1].filename)}:{tb[-1].lineno}" if tb else ""
        first = (str(exc).splitlines() or [""])[0][:300]
        try:
            send(Raised(exception=type(exc).__name__, message=first, where=where))
        except BaseException:
            pass
    finally:
        os._exit(code)


def _set_threads(torch, threads: int) -> None:
    """Give this child ``threads`` intra-op and inter-op threads (before its first tensor operation)."""
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(threads)
    except RuntimeError:  # the inter-op pool already started (not in a fresh fork of the worker)
        pass


def _cap_memory(device: str) -> None:
    """Cap the child's address space so a runaway allocation fails, not the machine."""
    if device != "cpu" or MEMORY_CAP_MB <= 0:
        return  # CUDA drivers reserve large virtual ranges; a cap would break them
    try:
        # Unix only
        import resource
        cap = MEMORY_CAP_MB * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    except (ImportError, ValueError, OSError):
        pass


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
