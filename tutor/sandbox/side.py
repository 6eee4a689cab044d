"""One side of a request, as the worker sees it: its private tree, its warden, its signed pipe, its outcome.

:class:`SideRun` builds the side's private copy of the subject
(:func:`build_tree`: the packages copied, the side's fault applied, its
files put in place), forks the side's warden (:mod:`tutor.sandbox.child`),
reads the lines the child sends — only those signed with the side's key
count, any other marks the side tampered — and, once the child is done or
out of time, kills what is left, reaps it and turns what happened into a
:class:`~tutor.sandbox.protocol.SideResult`: a measurement, an exception,
a crash, a timeout (with where it hung) or a refusal are all outcomes.

What confinement works here is probed once per worker (:func:`confinement`),
and what a side may read is computed once, before the first side forks
(:func:`reads_of`).
"""

from __future__ import annotations

import os
import secrets
import select
import signal
import socket
import tempfile
import time
from pathlib import Path

from exercises.faults import FaultError
from tutor.sandbox import child, confine, forkserver, namespaces, protocol, reads
from tutor.sandbox.tree import TreeError, build_tree, remove_tree
from tutor.sandbox.protocol import (Attempted, Measured, Progress, ProtocolError, Raised, Request, Side, SideResult,
                                   SideSpec, Unjoined)

#: The most of a side's output (its log) a result carries, in characters.
OUTPUT_EXCERPT_CHARS = 2000


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
        self._partial = bytearray()  # what the child wrote after its last whole line
        self.received = 0  # bytes read from the child's pipe in all
        self.over_cap = ""  # the cap the side went past, as a clause; "" while it keeps to them
        self.progress_sent = 0
        self.tampered_why = ""  # why the first line that was not the check's was refused
        self._key = b""
        self._last: Measured | Raised | None = None  # the child's last word
        self._failed: SideResult | None = None  # set when the tree could not be built
        self.refused: list[str] = []
        self.tampered = 0
        self.last_step = ""
        self._finished: SideResult | None = None
        self.cgroup: str | None = None  # the side's pids cgroup, where one can be made
        self.memory_cgroup: str | None = None  # the side's memory cgroup, where one can be made
        self.forks_refused = 0
        self.unjoined: dict[str, str] = {}  # controller -> the kernel's refusal, when the warden could not join
        self.log_fd: int | None = None  # the side's output.log, opened before the fork (O_NOFOLLOW)

    def _close_log(self) -> None:
        if self.log_fd is not None:
            os.close(self.log_fd)
            self.log_fd = None

    @property
    def running(self) -> bool:
        return self.pid is not None

    def start(self) -> None:
        """Build the side's private tree and fork the warden that runs the check there."""
        self.folder = os.path.realpath(tempfile.mkdtemp(prefix=f"{self.side.name}-", dir=self.scratch))
        try:
            build_tree(Path(self.folder), self.side)
        except (TreeError, FaultError, OSError) as exc:
            left = remove_tree(self.folder)
            what = f"the {self.side.name} side's files could not be put in place" if isinstance(exc, TreeError) \
                else "the fault could not be applied"
            self._failed = SideResult(status="error", error=f"{what}: {exc}" + (f" (it {left})" if left else ""),
                                      refused=[left] if left else [])
            return
        os.makedirs(os.path.join(self.folder, "tmp"), exist_ok=True)
        self._key = os.urandom(32)
        # named by chance, never by the tree: a side can list its siblings' cgroups, and learns nothing from them
        name = f"tutor-{os.getpid()}-{secrets.token_hex(6)}"
        if confinement().processes == "cgroup":  # the warden, its namespace's init and the child: +2
            self.cgroup = namespaces.make_pids_cgroup(name, namespaces.MAX_PROCESSES + 2)
        if confinement().memory == "cgroup":  # the side's processes together, whatever each one's address space
            self.memory_cgroup = namespaces.make_memory_cgroup(name, child.MEMORY_CAP_MB * 1024 * 1024)
        # what the side may read: computed once, in the worker, before its first side forks
        allowed = reads_of(os.path.dirname(self.folder)) if confinement().landlock else reads.Reads((), ())
        # the side's output is read back through this descriptor, opened here before any subject code runs:
        # whatever the subject later puts at output.log (a FIFO, a link to someone's file) is never read
        self.log_fd = open_log(self.folder)
        read_fd, write_fd = os.pipe()
        spec = SideSpec(check=self.request.check, device=self.request.device, seed=self.request.seed,
                        folder=self.folder, threads=self.threads, key=self._key.hex(),
                        status=confinement().to_wire(), roots=allowed.roots, listed=allowed.listed, cgroup=self.cgroup,
                        memory_cgroup=self.memory_cgroup, worker_pid=os.getpid(), record=self.request.record)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.started = time.perf_counter()
        try:
            # a blank warden, forked by a process that never read a request: it learns only this side's spec
            pid = forkserver.server().spawn(theirs.fileno(), write_fd, self.log_fd)
        except forkserver.ForkServerError as exc:
            for fd in (read_fd, write_fd):
                os.close(fd)
            ours.close()
            theirs.close()
            self._close_log()
            left = remove_tree(self.folder)
            self._failed = SideResult(status="error", error=f"the {self.side.name} side could not start: {exc}"
                                      + (f" (it {left})" if left else ""), refused=[left] if left else [])
            return
        theirs.close()
        os.close(write_fd)
        try:
            ours.sendall(spec.encode())
        except OSError:
            pass  # the warden is gone already: its exit status says so
        ours.close()
        self.pid, self.fd = pid, read_fd
        try:
            self.pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            self.pidfd = None

    def feed(self, chunk: bytes) -> list[Progress]:
        """Take bytes the child wrote; return the progress reports they complete.

        Only lines signed with this side's key, of the shape their type has,
        count: the child's measurement (or the exception it raised) is kept
        for ``finish``, what it was refused is noted; any other line marks
        the side tampered. Each byte is looked at once, whatever the length
        of a line; a line past ``MAX_MESSAGE_BYTES``, or a side past
        ``MAX_SIDE_BYTES`` in all, sets :attr:`over_cap` and nothing more of
        the side is read (the worker then stops it).
        """
        if self.over_cap:
            return []
        self.received += len(chunk)
        if self.received > protocol.MAX_SIDE_BYTES:
            self.over_cap = f"sent more than {_size(protocol.MAX_SIDE_BYTES)} on its result pipe, the cap for a side"
            return []
        reports: list[Progress] = []
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            self._partial += chunk[start:end]
            start = end + 1
            if not self._whole_line(bytes(self._partial), reports):
                return reports
            self._partial.clear()
        self._partial += chunk[start:]
        if len(self._partial) > protocol.MAX_MESSAGE_BYTES:
            self._went_past_the_line_cap()
        return reports

    def _went_past_the_line_cap(self) -> None:
        self.over_cap = (f"sent a line longer than {_size(protocol.MAX_MESSAGE_BYTES)} on its result pipe, the cap "
                         "for one message")
        self._partial.clear()

    def _whole_line(self, line: bytes, reports: list[Progress]) -> bool:
        """Take one whole line of the child's; False when it went past the cap for one message."""
        if len(line) > protocol.MAX_MESSAGE_BYTES:
            self._went_past_the_line_cap()
            return False
        if not line:
            return True
        try:
            message = protocol.verify(self._key, line)
        except ProtocolError as exc:
            self.tampered += 1
            self.tampered_why = self.tampered_why or str(exc)
            return True
        if isinstance(message, Progress):
            step = _clipped(message.message)
            self.last_step = step or self.last_step
            if self.progress_sent < protocol.MAX_PROGRESS:  # past it, the step is kept, not passed on
                self.progress_sent += 1
                reports.append(Progress(fraction=message.fraction, message=step, job=self.request.job,
                                        side=self.side.name))
        elif isinstance(message, Attempted):
            what = _clipped(message.what)
            if what not in self.refused and len(self.refused) < protocol.MAX_NOTICES:
                self.refused.append(what)
        elif isinstance(message, Unjoined):  # the warden's: this cgroup's limit does not hold
            if message.controller not in self.unjoined:
                self.unjoined[message.controller] = _clipped(message.why)
                self.refused.append(unjoined_sentence(message.controller, self.unjoined[message.controller],
                                                      self.request.device))
        elif isinstance(message, (Measured, Raised)):
            self._last = message
        return True

    def ask_where(self) -> None:
        """Ask a hung child to write its Python stack into its log (SIGUSR1: faulthandler), to name where it hung."""
        children = namespaces.children(self.pid) if self.pid else []
        if children:  # the check's child is the warden's youngest (after its namespace's init)
            try:
                os.kill(children[-1], signal.SIGUSR1)
            except OSError:
                pass

    def where_hung(self) -> str:
        """Where the child was when it was stopped: ``exercises/snippets/losses.py line 25 (squared_errors)``, or ""."""
        tail = read_tail(self.log_fd, 8192)
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
        if not timed_out:  # the warden may still be counting down; anything its child left behind goes now
            self._reap_warden_soon()
        # the warden's own children (its namespace's init, the check's child) are the worker's to reap once
        # the warden is gone: the worker adopts them (a child subreaper, tutor.sandbox.forkserver)
        orphans = namespaces.children(self.pid)
        self.kill()
        _, status = os.waitpid(self.pid, 0)
        reap(orphans)
        self._drain()
        os.close(self.fd)
        if self.pidfd is not None:
            os.close(self.pidfd)
        self.forks_refused = namespaces.refused_forks(self.cgroup)
        for group in (self.cgroup, self.memory_cgroup):
            if not namespaces.remove_cgroup(group):  # said, never kept silently
                self.refused.append(f"left a cgroup that could not be removed: {group}")
        if self.forks_refused:
            self.refused.append(f"tried to run more than {namespaces.MAX_PROCESSES} processes at once: "
                                f"{self.forks_refused} fork{'s' if self.forks_refused > 1 else ''} refused")
        left = remove_tree(self.folder)  # the log stays readable: it is read through its descriptor
        if left:  # said, never kept silently
            self.refused.append(left)
        result = self._outcome(status, timed_out)
        self._close_log()
        self._finished = result
        return result

    @property
    def limits(self) -> dict:
        """How this side's processes and memory were really capped (``SideResult.limits``): a cgroup only
        where it was made and the warden joined it, else the fallback that holds without it."""
        processes = "cgroup" if self.cgroup and "pids" not in self.unjoined else "counted"
        if self.memory_cgroup and "memory" not in self.unjoined:
            memory = "cgroup"
        else:
            memory = "rlimit" if self.request.device == "cpu" and child.MEMORY_CAP_MB > 0 else "none"
        return {"processes": processes, "memory": memory}

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
        output = excerpt(self.log_fd)
        duration_s = round(time.perf_counter() - self.started, 4)
        confined = bool(confinement().confined)
        common = dict(output=output, duration_s=duration_s, refused=list(self.refused), tampered=self.tampered,
                      confined=confined, last_step=self.last_step, limits=self.limits)
        refused = f" (it {'; '.join(self.refused)})" if self.refused else ""
        if self.over_cap:
            return SideResult(status="error", exception="SideCap",
                              error=f"the side {self.over_cap}, and was stopped{refused}", **common)
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
                                    f"taken as measured (the first: {self.tampered_why}){refused}", **common)
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
        if code == child.TOO_MANY:
            return SideResult(status="error", exception="ProcessLimit",
                              error=f"the subject started more than {namespaces.MAX_PROCESSES} processes at once and "
                                    f"was stopped{refused}", **common)
        if isinstance(self._last, Measured):
            return SideResult(status="ok", observed=self._last.observed, evidence=self._last.evidence,
                              records=self._last.records, **common)
        if isinstance(self._last, Raised):
            raised = self._last.in_files(path for path, _ in self.side.files)  # the learner's line, where theirs
            return SideResult(status="error", error=raised.sentence + refused, exception=raised.exception,
                              **common)
        sig = None
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
        elif code is not None and code > child.SIGNALLED and code != child.TOO_MANY:
            sig = code - child.SIGNALLED
        if sig is not None:
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
            error = f"the subject crashed with signal {name}"
        else:
            error = f"the check exited with code {code} and no result"
        return SideResult(status="error", error=error + refused, **common)


def _size(count: int) -> str:
    """``64 KiB``, ``8 MiB``: a cap in bytes, as a sentence says it."""
    return f"{count >> 20} MiB" if count >= 1 << 20 else f"{count >> 10} KiB"


def _clipped(text: str) -> str:
    """A side's notice or progress message, cut at ``MAX_NOTICE_CHARS``."""
    limit = protocol.MAX_NOTICE_CHARS
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more characters)"


_STATUS: confine.Status | None = None
_READS: reads.Reads | None = None


def confinement() -> confine.Status:
    """What confinement works here (probed once per worker, in a forked child)."""
    global _STATUS
    if _STATUS is None:
        _STATUS = confine.probe()
    return _STATUS


def reads_of(scratch: str) -> reads.Reads:
    """What a side may read and list (:func:`tutor.sandbox.reads.policy`), less the worker's scratch (every
    side's tree): the scratch alone, not all of /tmp, where a checkout and its venv may live. Computed once."""
    global _READS
    if _READS is None:
        _READS = reads.policy(forbidden=[scratch])
    return _READS


def reap(pids: list[int], polls: int = 20) -> None:
    """Reap ``pids`` (killed with their side, adopted by this worker), looking ``polls`` times 10 ms apart
    for those not yet ended (one that escaped its group is left to the next request's reaping)."""
    waiting = set(pids)
    for _ in range(polls):
        for pid in list(waiting):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid  # not ours, or reaped already
            if done:
                waiting.discard(pid)
        if not waiting:
            return
        time.sleep(0.01)


def open_log(folder: str) -> int:
    """Create the side's ``output.log`` in its fresh tree and return a descriptor open for reading and writing.

    Made with O_EXCL and O_NOFOLLOW before the side forks: the child writes to
    this very file (its stdout and stderr), and the worker reads it back
    through the same descriptor, never by its path again.

    Raises:
        OSError: the tree already holds something at that path.
    """
    return os.open(os.path.join(folder, "output.log"),
                   os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def read_tail(fd: int | None, size: int) -> str:
    """The last ``size`` bytes of the file open at ``fd`` as text ("" when there is none)."""
    if fd is None:
        return ""
    try:
        end = os.fstat(fd).st_size
        return os.pread(fd, size, max(0, end - size)).decode("utf-8", "replace")
    except OSError:
        return ""


def excerpt(fd: int | None) -> str:
    """The first :data:`OUTPUT_EXCERPT_CHARS` bytes of a side's output (open at ``fd``), and how much more there was."""
    if fd is None:
        return ""
    try:
        head = os.pread(fd, OUTPUT_EXCERPT_CHARS, 0)
        size = os.fstat(fd).st_size
    except OSError:
        return ""
    text = head.decode("utf-8", "replace")
    if size > OUTPUT_EXCERPT_CHARS:
        text += f"\n… ({size - OUTPUT_EXCERPT_CHARS} more bytes of output not shown)"
    return text


def unjoined_sentence(controller: str, why: str, device: str) -> str:
    """What a side's notice says when its warden could not join its ``controller`` cgroup: the refusal, and
    which cap holds instead (one sentence, after "the yours side")."""
    if controller == "pids":
        return (f"could not join its pids cgroup ({why}), so the kernel did not refuse its processes past "
                f"{namespaces.MAX_PROCESSES}: the warden counted them and stops a side past that instead")
    held = (f"only each process's address space was capped (RLIMIT_AS, {child.MEMORY_CAP_MB} MiB)"
            if device == "cpu" and child.MEMORY_CAP_MB > 0 else "its memory was not capped at all")
    return f"could not join its memory cgroup ({why}), so its processes' memory together was not capped: {held}"
