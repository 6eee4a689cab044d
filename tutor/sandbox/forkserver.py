"""Blank wardens, forked from a process that never read a request: each side holds its own side alone.

The worker reads whole requests: every side's fault with its before and
after text, a learner's file, the capstone's mystery. A side forked from
the worker would hold all of that in its memory, and a learner's file could
walk the frames or the heap to the faulted side's fault, reverse it and
pass any exercise. So the worker starts, right after it imports torch and
before it reads anything, a **fork server** (:func:`start`): a copy of
itself at that moment, which only ever forks.

For each side the worker asks the server for a *blank warden*
(:meth:`ForkServer.spawn`), handing it three descriptors over a UNIX
socket (SCM_RIGHTS): a socket the side's spec will arrive on, the write end
of the side's result pipe, and the side's log. The server forks twice (the
middle process exits at once), so the blank warden is adopted by the
worker, a child subreaper (``PR_SET_CHILD_SUBREAPER``), which reaps it and
reads its exit status as before. The worker then sends the blank warden its
own side's spec and nothing else (:class:`tutor.sandbox.protocol.SideSpec`:
the check, device, seed, its own tree's path, its key, what it may read);
everything the side's processes know comes from that one message
(:func:`blank_warden`). The server itself never sees a spec.

Forking from an already-imported torch keeps the warm worker's speed: a
blank warden costs two forks of a process that holds torch but no request.
"""

from __future__ import annotations

import os
import socket
import threading

from tutor.sandbox import child, confine, landlock
from tutor.sandbox.protocol import ProtocolError, SideSpec

#: prctl's PR_SET_CHILD_SUBREAPER: orphaned descendants are adopted by this process, not by init.
_PR_SET_CHILD_SUBREAPER = 36
#: The most bytes a side's spec may take (its read roots are the largest part).
MAX_SPEC_BYTES = 1 << 20


class ForkServerError(RuntimeError):
    """The fork server is gone or gave no warden."""


class ForkServer:
    """The worker's end of its fork server: ask for a blank warden, get its pid.

    Attributes:
        pid: the server's process id (a child of the worker).
    """

    def __init__(self, sock: socket.socket, pid: int) -> None:
        self.sock = sock
        self.pid = pid
        self._lock = threading.Lock()

    def spawn(self, spec_fd: int, result_fd: int, log_fd: int) -> int:
        """Fork a blank warden that holds these three descriptors (and nothing else of ours); its pid.

        The warden is this process's child once this returns (it can be
        ``waitpid``-ed), and it waits for its spec on ``spec_fd``.

        Raises:
            ForkServerError: the server is gone or could not fork.
        """
        with self._lock:
            try:
                socket.send_fds(self.sock, [b"w"], [spec_fd, result_fd, log_fd])
                reply = self.sock.recv(32)
            except OSError as exc:
                raise ForkServerError(f"the fork server is gone ({exc})") from None
        try:
            pid = int(reply)
        except ValueError:
            pid = 0
        if pid <= 0:
            raise ForkServerError("the fork server could not fork a warden")
        return pid

    def close(self) -> None:
        """End the server (it reads end-of-file and exits) and reap it."""
        try:
            self.sock.close()
        except OSError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


_SERVER: ForkServer | None = None


def start() -> ForkServer:
    """Make this process a child subreaper and fork its fork server (once); return the worker's end.

    Call it before any request is read: the server's memory is this process's
    memory now, and every side's processes start from it.
    """
    global _SERVER
    if _SERVER is not None:
        return _SERVER
    try:
        landlock.libc().prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:  # the server: never returns
        ours.close()
        _serve(theirs)
    theirs.close()
    _SERVER = ForkServer(ours, pid)
    return _SERVER


def server() -> ForkServer:
    """The running fork server, started now when there is none (a process that never ran ``worker.main``)."""
    return _SERVER if _SERVER is not None else start()


def _serve(sock: socket.socket) -> None:
    """The fork server's loop: for each ask, a blank warden holding the descriptors that came with it."""
    code = 0
    try:
        landlock.die_with_parent()
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1):  # never the worker's stdin or its protocol stdout (the tutor reads its end-of-file)
            os.dup2(devnull, fd)
        os.closerange(3, sock.fileno())
        os.closerange(sock.fileno() + 1, 1 << 16)
        while True:
            message, fds, _, _ = socket.recv_fds(sock, 16, 3)
            if not message:
                break  # the worker is gone
            pid = _fork_blank(sock, fds) if len(fds) == 3 else 0
            for fd in fds:
                os.close(fd)
            sock.sendall(str(pid).encode())
    except BaseException:
        code = 1
    finally:
        os._exit(code)


def _fork_blank(sock: socket.socket, fds: list[int]) -> int:
    """Fork twice: the middle process exits at once, so the warden is adopted by the worker. Its pid, or 0."""
    read_fd, write_fd = os.pipe()
    middle = os.fork()
    if middle == 0:
        code = 1
        try:
            os.close(read_fd)
            warden = os.fork()
            if warden == 0:  # never returns
                os.close(write_fd)
                sock.close()
                blank_warden(*fds)
            os.write(write_fd, str(warden).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_fd)
    data = os.read(read_fd, 32)
    os.close(read_fd)
    os.waitpid(middle, 0)  # once the middle has exited, the warden is the worker's child
    try:
        return int(data)
    except ValueError:
        return 0


def blank_warden(spec_fd: int, result_fd: int, log_fd: int) -> None:
    """A blank warden: read this side's spec on ``spec_fd``, then be its warden (never returns).

    It holds only the three descriptors it was handed; whatever it knows of
    its side comes from the one spec it reads.
    """
    code = 1
    try:
        keep = sorted((spec_fd, result_fd, log_fd))
        for low, high in zip([3] + [fd + 1 for fd in keep], keep + [1 << 16]):
            if low < high:
                os.closerange(low, high)
        spec = _read_spec(spec_fd)
        os.close(spec_fd)
        landlock.die_with_parent()  # adopted by now: the parent it dies with is the worker
        if os.getppid() != spec.worker_pid:
            raise ProtocolError("the worker that asked for this warden is gone")
        child.warden(spec.request(), spec.folder, spec.threads, result_fd, spec.key_bytes, confine.Status.from_wire(spec.status),
                     tuple(spec.roots), spec.cgroup, spec.memory_cgroup, log_fd=log_fd, listed=tuple(spec.listed))
    except BaseException:
        pass
    finally:
        os._exit(code)


def _read_spec(fd: int) -> SideSpec:
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(fd, 1 << 16)
        if not chunk or len(data) + len(chunk) > MAX_SPEC_BYTES:
            raise ProtocolError("the side's spec did not arrive whole")
        data += chunk
    return SideSpec.decode(data)
