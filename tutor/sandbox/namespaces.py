"""A side's processes, held by the kernel: PID and network namespaces, the process tree, the pids cgroup.

A side's *warden* (:func:`tutor.sandbox.child.warden`) moves into fresh
namespaces (:func:`make_namespaces`): a PID namespace, so every process the
subject starts dies with the namespace's init, and a network namespace with
only a loopback device. As root no user namespace is needed; otherwise one
is made first, mapping the user to itself. Where neither works, the
warden's process group is what is killed whole.

The processes of a side are read from ``/proc`` (:func:`children`,
:func:`descendants`) and counted against :data:`MAX_PROCESSES`; where this
process may make a pids cgroup (cgroup v1's pids hierarchy, or v2 with pids
delegated), the kernel itself refuses the fork past the limit
(:func:`make_pids_cgroup`, :func:`refused_forks`).
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct
import time

from tutor.sandbox.landlock import libc

#: The most processes one side may have at once (the child included); past it the side is stopped.
MAX_PROCESSES = 64

CLONE_NEWNET, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNS = 0x40000000, 0x10000000, 0x20000000, 0x00020000
#: mount(2) flags (linux/mount.h)
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE, MS_SLAVE = 0x2, 0x4, 0x8, 0x1000, 1 << 14, 1 << 18, 1 << 19


def make_namespaces() -> tuple[bool, bool]:
    """Move this process (a side's warden, single-threaded) into fresh PID and network namespaces.

    Its next child is the new PID namespace's init: when that child ends,
    the kernel kills every process it started. The network namespace has
    only a loopback device, brought up here. As root no user namespace is
    needed; otherwise one is made first, mapping the user to itself.

    Returns:
        (pid namespace made, network namespace made).
    """
    c = libc()
    flags = CLONE_NEWPID | CLONE_NEWNET
    if c.unshare(flags) != 0:
        uid, gid = os.geteuid(), os.getegid()
        if c.unshare(flags | CLONE_NEWUSER) != 0:
            return False, False
        try:
            _write("/proc/self/setgroups", "deny")
            _write("/proc/self/uid_map", f"{uid} {uid} 1")
            _write("/proc/self/gid_map", f"{gid} {gid} 1")
        except OSError:
            return True, True  # namespaces made; ids unmapped (files still open as before)
    _loopback_up()
    return True, True


def own_proc() -> bool:
    """Give this process (a side's child, the second process of its fresh PID namespace) a ``/proc`` of
    that namespace alone: a mount namespace of its own, and a fresh procfs mounted on ``/proc`` there.

    Without it the child reads the sandbox's ``/proc``, where the worker, bwrap's init and every other
    side's warden are listed with their command lines. With it, ``/proc`` lists only the namespace's init
    and the side's own processes. Call it while the process still holds the capabilities of its user
    namespace (before :func:`tutor.sandbox.landlock.drop_capabilities`) and before seccomp, which refuses
    ``mount`` and ``unshare``. The kernel refuses the fresh procfs where the ``/proc`` it already shows has
    a part hidden by a mount (bwrap covers ``/proc/irq`` and ``/proc/bus`` when its uid outside is root):
    the side then keeps the sandbox's ``/proc``.

    Returns:
        Whether ``/proc`` is now the side's own.
    """
    c = libc()
    if c.unshare(CLONE_NEWNS) != 0:
        return False
    # nothing mounted here reaches the sandbox's mount namespace
    c.mount(None, b"/", None, MS_REC | MS_PRIVATE, None)
    return c.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None) == 0


def rename_process(name: str) -> None:
    """Make this process's ``/proc/PID/cmdline`` read ``name``: its argument area, overwritten in place.

    A side's namespace init is a fork of the worker, so its command line was the worker's; the side lists
    it in its ``/proc``. Python keeps its own copies of its arguments (``sys.argv``), so the area the
    kernel reads is free to overwrite. Nothing is changed where ``/proc/self/stat`` cannot be read.
    """
    try:
        with open("/proc/self/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        start, end = int(fields[45]), int(fields[46])  # arg_start, arg_end: stat's 48th and 49th fields
    except (OSError, IndexError, ValueError):
        return
    if end <= start:
        return
    data = name.encode()[:end - start - 1]
    ctypes.memset(start, 0, end - start)
    ctypes.memmove(start, data, len(data))


def _write(path: str, text: str) -> None:
    with open(path, "w") as fh:
        fh.write(text)


def _loopback_up() -> None:
    SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            request = struct.pack("16sH14x", b"lo", 0)
            flags = struct.unpack("16sH14x", fcntl.ioctl(s, SIOCGIFFLAGS, request))[1]
            fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH14x", b"lo", flags | IFF_UP))
    except OSError:
        pass


def children(pid: int) -> list[int]:
    """The living children of ``pid``, oldest first, read from /proc; [] where unreadable."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(c) for c in fh.read().split()]
    except (OSError, ValueError):
        return []


def descendants(pid: int) -> list[int]:
    """Every living descendant of ``pid`` (its children, theirs, ...), read from /proc; [] where unreadable."""
    found, todo = [], [pid]
    while todo and len(found) <= 4 * MAX_PROCESSES:
        parent = todo.pop()
        try:
            with open(f"/proc/{parent}/task/{parent}/children") as fh:
                children = [int(c) for c in fh.read().split()]
        except (OSError, ValueError):
            continue
        found += children
        todo += children
    return found


# --- a kernel limit on processes (the pids cgroup, where this process may make one) -------------------

#: Set by the runner for a worker in bubblewrap: ``pids=PATH:memory=PATH``, the cgroups made for that worker
#: and bound writable into its sandbox; its sides' cgroups are made inside them.
CGROUPS_ENV = "TUTOR_CGROUPS"


def _delegated(controller: str) -> str | None:
    for item in os.environ.get(CGROUPS_ENV, "").split(os.pathsep):
        key, _, path = item.partition("=")
        if key == controller and path and os.path.isdir(path):
            return path
    return None


def _own_v2_base(controller: str) -> str | None:
    try:
        with open("/proc/self/cgroup") as fh:
            line = next((l for l in fh.read().splitlines() if l.startswith("0::")), "")
        base = "/sys/fs/cgroup" + line[3:].rstrip("/")
        with open(os.path.join(base, "cgroup.subtree_control")) as fh:
            if controller in fh.read().split() and os.access(base, os.W_OK):
                return base
    except (OSError, StopIteration):
        pass
    return None


def _pids_base() -> str | None:
    """The folder a pids cgroup can be made in (the worker's delegated one, cgroup v1's pids hierarchy, or v2
    with pids delegated), or None."""
    if CGROUPS_ENV in os.environ:
        return _delegated("pids")
    v1 = "/sys/fs/cgroup/pids"
    if os.path.isfile(os.path.join(v1, "cgroup.procs")) and os.access(v1, os.W_OK):
        return v1
    return _own_v2_base("pids")


def _memory_base() -> str | None:
    """The folder a memory cgroup can be made in (delegated, this process's own in cgroup v1, or v2), or None."""
    if CGROUPS_ENV in os.environ:
        return _delegated("memory")
    try:
        with open("/proc/self/cgroup") as fh:
            own = next((l.split(":", 2)[2] for l in fh.read().splitlines() if l.split(":")[1:2] == ["memory"]), None)
    except (OSError, IndexError):
        own = None
    if own is not None:
        base = "/sys/fs/cgroup/memory" + own.rstrip("/")
        if os.path.isfile(os.path.join(base, "memory.limit_in_bytes")) and os.access(base, os.W_OK):
            return base
    return _own_v2_base("memory")


def make_memory_cgroup(name: str, limit_bytes: int) -> str | None:
    """A fresh memory cgroup ``name`` that lets its processes together use at most ``limit_bytes``; None where
    none can be made (the caller caps each process's address space instead)."""
    base = _memory_base()
    if base is None or limit_bytes <= 0:
        return None
    path = os.path.join(base, name)
    knob = "memory.limit_in_bytes" if os.path.isfile(os.path.join(base, "memory.limit_in_bytes")) else "memory.max"
    try:
        os.mkdir(path)
        _write(os.path.join(path, knob), str(limit_bytes))
        return path
    except OSError:
        remove_cgroup(path)
        return None


def cgroup_bases() -> dict[str, str]:
    """controller -> the folder a worker's cgroups are made in here (pids, memory), for those this process
    may make one in (``TUTOR_CGROUPS`` names them for a worker, and for a tutor that is told where)."""
    return {controller: base for controller, base in (("pids", _pids_base()), ("memory", _memory_base()))
            if base is not None}


def delegate(name: str, owner: int | None = None) -> dict[str, str]:
    """Make a cgroup ``name`` per controller (pids, memory) for one sandboxed worker, to bind into its sandbox,
    owned by uid and gid ``owner`` where given (the uid the sandbox runs as outside), so it can make its
    sides' cgroups inside.

    Returns:
        controller -> folder, only those that could be made; :func:`delegation_env` writes them for the worker.
    """
    made = {}
    for controller, base in cgroup_bases().items():
        path = os.path.join(base, name)
        try:
            os.mkdir(path)
            made[controller] = path
            if owner is not None:
                for entry in [path, *(os.path.join(path, n) for n in ("cgroup.procs", "tasks"))]:
                    if os.path.exists(entry):
                        os.chown(entry, owner, owner)
        except OSError:
            pass
    return made


#: The start of every worker cgroup's name: ``tutor-worker-PID-RANDOM``, PID the tutor's (its runner's process).
WORKER_PREFIX = "tutor-worker-"


def sweep() -> tuple[list[str], list[str]]:
    """Remove the cgroups a tutor that ended without its own cleanup (``kill -9``, a crash) left behind:
    every ``tutor-worker-PID-*`` folder of :func:`cgroup_bases` whose tutor PID is gone, its sides' first.

    Returns:
        (the folders removed, the folders that could not be: a process of the dead tutor's still in one);
        the caller says both, since nothing is removed silently.
    """
    removed: list[str] = []
    left: list[str] = []
    for base in cgroup_bases().values():
        try:
            names = sorted(n for n in os.listdir(base) if n.startswith(WORKER_PREFIX))
        except OSError:
            continue
        for name in names:
            pid = name[len(WORKER_PREFIX):].split("-")[0]
            path = os.path.join(base, name)
            if pid.isdigit() and not os.path.exists(f"/proc/{pid}") and os.path.isdir(path):
                stuck = remove_delegated({"stale": path}, patience_s=0.2)
                left += stuck
                if path not in stuck:
                    removed.append(path)
    return removed, left


def delegation_env(made: dict[str, str]) -> str:
    return os.pathsep.join(f"{controller}={path}" for controller, path in made.items())


def remove_delegated(made: dict[str, str], patience_s: float = 5.0) -> list[str]:
    """Remove a worker's cgroups (its sides' first); return the folders that could not be removed."""
    left = []
    for path in made.values():
        try:
            inner = [os.path.join(path, n) for n in os.listdir(path) if os.path.isdir(os.path.join(path, n))]
        except OSError:
            inner = []
        for folder in [*inner, path]:  # a killed sandbox's processes end a moment after its bwrap
            if not remove_cgroup(folder, patience_s=patience_s):
                left.append(folder)
    return left


def make_pids_cgroup(name: str, limit: int) -> str | None:
    """A fresh pids cgroup ``name`` that lets at most ``limit`` processes in; None where none can be made."""
    base = _pids_base()
    if base is None:
        return None
    path = os.path.join(base, name)
    try:
        os.mkdir(path)
        _write(os.path.join(path, "pids.max"), str(limit))
        return path
    except OSError:
        remove_cgroup(path)
        return None


def join_cgroup(path: str | None) -> str:
    """Move this process into the cgroup ``path`` (its children follow); nothing when ``path`` is None.

    Returns:
        "" when it joined (or there was nothing to join), else the kernel's refusal
        (``Permission denied``): the caller says so, since that cgroup's limit then does
        not hold (cgroup v2 lets a process move only with write access to the common
        ancestor's ``cgroup.procs``).
    """
    if not path:
        return ""
    try:
        _write(os.path.join(path, "cgroup.procs"), str(os.getpid()))
    except OSError as exc:
        return exc.strerror or str(exc) or type(exc).__name__
    return ""


def refused_forks(path: str | None) -> int:
    """How many times the cgroup at ``path`` refused a fork (``pids.events``: ``max N``); 0 without one."""
    if not path:
        return 0
    try:
        with open(os.path.join(path, "pids.events")) as fh:
            for line in fh:
                key, _, value = line.partition(" ")
                if key == "max":
                    return int(value)
    except (OSError, ValueError):
        pass
    return 0


def remove_cgroup(path: str | None, patience_s: float = 0.5) -> bool:
    """Remove the (empty) cgroup at ``path``, giving a last process being reaped a moment; whether it is gone."""
    if not path:
        return True
    for _ in range(max(1, int(patience_s / 0.01))):
        try:
            os.rmdir(path)
            return True
        except FileNotFoundError:
            return True
        except OSError:
            time.sleep(0.01)
    return not os.path.exists(path)


def remove_cgroups(prefix: str) -> None:
    """Remove every (empty) pids cgroup whose name starts with ``prefix`` (a killed worker's sides)."""
    base = _pids_base()
    if base is None:
        return
    try:
        names = [n for n in os.listdir(base) if n.startswith(prefix)]
    except OSError:
        return
    for name in names:
        remove_cgroup(os.path.join(base, name))
