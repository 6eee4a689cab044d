"""Confinement of a side's child: what code we did not write may read, write, reach and start.

A side of a run (clean, faulted, a learner's file, the audit's factory) runs
in a forked child of the check worker. Before any of the subject's code is
imported, the child is confined with mechanisms the kernel enforces, not
checks of our own:

* **Landlock** (Linux 5.13+, unprivileged, applied after ``fork`` so the
  warm worker keeps its speed): the child may *read* its private tree, the
  Python installation (less any installed copy of the subject packages and
  of ``tutor``), the system's libraries and ``/proc``/``/sys``, and may
  *write* only its private tree and ``/dev/null``. Nothing else: not
  ``$HOME``, not the progress folder, not the project's source, not another
  side's tree. ABI 4 and later also refuse TCP ``bind``/``connect`` (used
  when no network namespace could be made); ABI 6 and later refuse signals
  to processes outside the child's domain (the worker, other sides) and
  abstract UNIX sockets. Landlock also refuses ``ptrace`` (and so
  ``/proc/<pid>/mem``) of any process outside the domain, from ABI 1.
* **Namespaces**, made by the side's *warden* (the worker's fork that
  forks the child and waits for it): a PID namespace, so the child is its
  init and every process it starts dies with it; a network namespace with
  only a loopback device, so nothing outside is reachable (two processes of
  one check can still talk over 127.0.0.1, as ``rank-offset``'s do). As
  root these need no user namespace; otherwise one is made first, mapping
  the user to itself. Where neither works, the warden's process group is
  what is killed whole.
* **Limits**: ``no_new_privs``; the address space (``RLIMIT_AS``, as
  before); a counted limit on processes (the warden counts the child's
  descendants and stops the side at :data:`MAX_PROCESSES`).

:func:`status` says, once per worker, what is available here; the runner
reports it (``"confined"`` in JSON) and commands that grade someone else's
code refuse to run without it unless told ``--allow-unconfined``.

What the child *tried* and was refused is noted by a Python audit hook
(:class:`Attempts`) installed before the subject is imported: a write or a
read outside what the policy allows, a TCP connection out. The kernel
refuses; the hook only says so, and the side's result carries the sentence
("tried to write ~/x: refused").

Environment: ``TUTOR_CONFINE=off`` runs sides unconfined (to see what that
changes, or where the kernel refuses the mechanisms); the tutor then says so.
"""

from __future__ import annotations

import ctypes
import fcntl
import glob
import importlib.util
import os
import socket
import struct
import sys
import sysconfig
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable

#: ``TUTOR_CONFINE=off`` turns confinement off (the tutor says so).
ENV = "TUTOR_CONFINE"
#: The most processes one side may have at once (the child included); past it the side is stopped.
MAX_PROCESSES = 64
#: The packages no side may read outside its own tree (their installed copies hold the clean subject).
PRIVATE_PACKAGES = ("engine", "exercises", "tutor")

# --- Landlock: a small ctypes binding (include/uapi/linux/landlock.h) ------------------------------

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # the same on every architecture
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH, _RULE_NET_PORT = 1, 2
_PR_SET_NO_NEW_PRIVS, _PR_SET_PDEATHSIG = 38, 1

FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FS_REMOVE_DIR, FS_REMOVE_FILE, FS_MAKE_CHAR, FS_MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
FS_MAKE_REG, FS_MAKE_SOCK, FS_MAKE_FIFO, FS_MAKE_BLOCK = 1 << 8, 1 << 9, 1 << 10, 1 << 11
FS_MAKE_SYM, FS_REFER, FS_TRUNCATE, FS_IOCTL_DEV = 1 << 12, 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
_READ_RIGHTS = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_libc = None


def _syscall():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    return _libc


def landlock_abi() -> int:
    """The Landlock ABI version this kernel offers; 0 where there is none (not Linux, too old, disabled)."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        version = _syscall().syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0),
                                     ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(0, int(version))


def _handled_fs(abi: int) -> int:
    rights = (1 << 13) - 1  # EXECUTE … MAKE_SYM: ABI 1
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


class ConfinementError(OSError):
    """The kernel refused to confine the child; the message says which step."""


@dataclass(frozen=True)
class Policy:
    """What one side's child may touch.

    Attributes:
        tree: the side's private tree (read and write, its own tmp inside).
        read: folders and files the child may read (never write).
        write_files: files it may read and write besides its tree (``/dev/null``).
        network: refuse every TCP bind and connect with Landlock (used when
            the warden could not give the child a network namespace).
    """

    tree: str
    read: tuple[str, ...]
    write_files: tuple[str, ...] = ("/dev/null",)
    network: bool = True


def restrict(policy: Policy, abi: int) -> None:
    """Confine this process (a side's child, before the subject is imported) to ``policy``.

    Sets ``no_new_privs`` and applies one Landlock ruleset: reads as
    ``policy.read``, everything in ``policy.tree``, read-write on
    ``policy.write_files``; with ABI >= 4 and ``policy.network`` no TCP bind
    or connect; with ABI >= 6 no signal and no abstract UNIX socket outside
    the domain. A path that does not exist is skipped.

    Raises:
        ConfinementError: a step the kernel refused (names it and errno).
    """
    libc = _syscall()
    handled_fs = _handled_fs(abi)
    attr = _RulesetAttr(handled_access_fs=handled_fs,
                        handled_access_net=(NET_BIND_TCP | NET_CONNECT_TCP) if abi >= 4 and policy.network else 0,
                        scoped=(SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if abi >= 6 else 0)
    size = 24 if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        raise ConfinementError(ctypes.get_errno(), "landlock_create_ruleset was refused")
    try:
        rules = [(policy.tree, handled_fs)]
        rules += [(path, _READ_RIGHTS) for path in policy.read]
        rules += [(path, FS_READ_FILE | FS_WRITE_FILE | (FS_IOCTL_DEV if abi >= 5 else 0))
                  for path in policy.write_files]
        for path, rights in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # not on this machine
            try:
                if not os.path.isdir(path):
                    rights &= _FILE_RIGHTS
                rule = _PathBeneathAttr(allowed_access=rights & handled_fs, parent_fd=fd)
                if libc.syscall(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), ctypes.c_uint32(0)) < 0:
                    raise ConfinementError(ctypes.get_errno(), f"landlock_add_rule was refused for {path}")
            finally:
                os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise ConfinementError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) was refused")
        if libc.syscall(_SYS_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)) < 0:
            raise ConfinementError(ctypes.get_errno(), "landlock_restrict_self was refused")
    finally:
        os.close(ruleset)


def die_with_parent(sig: int = 9) -> None:
    """Ask the kernel to send this process ``sig`` when the thread that forked it ends (PR_SET_PDEATHSIG).

    Only for processes forked from a process's main thread (the worker's and
    the warden's forks): the signal follows the forking *thread*.
    """
    try:
        _syscall().prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)
    except (OSError, AttributeError):
        pass


# --- what a child may read -------------------------------------------------------------------------

#: System folders a child may read: shared libraries, time zones, CPU facts.
SYSTEM_READ = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/proc", "/sys", "/etc/ld.so.cache",
               "/etc/localtime", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/hosts",
               "/dev/urandom", "/dev/random", "/dev/zero", "/dev/full")


def _below(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _allow_except(root: str, forbidden: list[str], out: list[str], depth: int = 0) -> None:
    """Add ``root`` to ``out``, or, when a forbidden path lies inside it, every child of it but that path."""
    if any(_below(root, f) for f in forbidden):
        return
    inside = [f for f in forbidden if _below(f, root)]
    if not inside:
        out.append(root)
        return
    if depth > 12 or not os.path.isdir(root):
        return
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return
    for name in names:
        _allow_except(os.path.join(root, name), forbidden, out, depth + 1)


def installed_packages() -> list[str]:
    """Where the private packages (:data:`PRIVATE_PACKAGES`) are installed or checked out, resolved."""
    found = []
    for name in PRIVATE_PACKAGES:
        module = sys.modules.get(name)
        paths = list(getattr(module, "__path__", []) or []) if module else []
        if not paths:
            spec = importlib.util.find_spec(name)
            paths = list(spec.submodule_search_locations or []) if spec else []
        found += [os.path.realpath(p) for p in paths]
    return found


def read_roots(forbidden: Iterable[str] = (), cut_private: bool = True) -> tuple[str, ...]:
    """What every side's child may read, less ``forbidden`` and the installed private packages.

    The Python installation (its standard library, and every ``sys.path``
    entry inside it or named ``site-packages``: never the folder the tutor
    was started in), and :data:`SYSTEM_READ`; a forbidden folder
    inside one of them (a non-editable install puts ``exercises/`` in
    ``site-packages``) is cut out by allowing each of its siblings instead.
    ``cut_private=False`` keeps the installed private packages (the audit
    runs the tutor's own instruments on the user's own model).
    """
    private = installed_packages() if cut_private else []
    banned = sorted({os.path.realpath(p) for p in [*forbidden, *private]})
    roots: list[str] = []
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    candidates = [sysconfig.get_paths().get(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")]
    real_prefixes = [os.path.realpath(p) for p in prefixes]
    for entry in sys.path:  # installed packages only: not the folder the tutor was started in
        real = os.path.realpath(entry) if entry else ""
        if real and os.path.isdir(real) and (any(_below(real, p) for p in real_prefixes)
                                             or os.path.basename(real) in ("site-packages", "dist-packages")):
            candidates.append(real)
    candidates += [os.path.join(p, "lib") for p in prefixes] + list(SYSTEM_READ)
    # Package metadata beside an editable checkout (importlib.metadata reads entry points there):
    # names and versions only, no source.
    for entry in sys.path:
        if entry and os.path.isdir(entry):
            candidates += glob.glob(os.path.join(entry, "*.egg-info")) + glob.glob(os.path.join(entry, "*.dist-info"))
    for path in dict.fromkeys(os.path.realpath(p) for p in candidates if p):
        if os.path.exists(path):
            _allow_except(path, banned, roots)
    # A root inside another is redundant; keep the outer one.
    roots = sorted(set(roots))
    return tuple(r for r in roots if not any(r != o and _below(r, o) for o in roots))


# --- namespaces (the warden) -----------------------------------------------------------------------

CLONE_NEWNET, CLONE_NEWUSER, CLONE_NEWPID = 0x40000000, 0x10000000, 0x20000000


def make_namespaces() -> tuple[bool, bool]:
    """Move this process (a side's warden, single-threaded) into fresh PID and network namespaces.

    Its next child is the new PID namespace's init: when that child ends,
    the kernel kills every process it started. The network namespace has
    only a loopback device, brought up here. As root no user namespace is
    needed; otherwise one is made first, mapping the user to itself.

    Returns:
        (pid namespace made, network namespace made).
    """
    libc = _syscall()
    flags = CLONE_NEWPID | CLONE_NEWNET
    if libc.unshare(flags) != 0:
        uid, gid = os.geteuid(), os.getegid()
        if libc.unshare(flags | CLONE_NEWUSER) != 0:
            return False, False
        try:
            _write("/proc/self/setgroups", "deny")
            _write("/proc/self/uid_map", f"{uid} {uid} 1")
            _write("/proc/self/gid_map", f"{gid} {gid} 1")
        except OSError:
            return True, True  # namespaces made; ids unmapped (files still open as before)
    _loopback_up()
    return True, True


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

def _pids_base() -> str | None:
    """The folder a pids cgroup can be made in (cgroup v1's pids hierarchy, or v2 with pids delegated), or None."""
    v1 = "/sys/fs/cgroup/pids"
    if os.path.isfile(os.path.join(v1, "cgroup.procs")) and os.access(v1, os.W_OK):
        return v1
    try:
        with open("/proc/self/cgroup") as fh:
            line = next((l for l in fh.read().splitlines() if l.startswith("0::")), "")
        base = "/sys/fs/cgroup" + line[3:].rstrip("/")
        with open(os.path.join(base, "cgroup.subtree_control")) as fh:
            if "pids" in fh.read().split() and os.access(base, os.W_OK):
                return base
    except (OSError, StopIteration):
        pass
    return None


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


def join_cgroup(path: str | None) -> None:
    """Move this process into the cgroup ``path`` (its children follow); nothing when ``path`` is None."""
    if path:
        try:
            _write(os.path.join(path, "cgroup.procs"), str(os.getpid()))
        except OSError:
            pass


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


def remove_cgroup(path: str | None) -> None:
    """Remove the (empty) cgroup at ``path``; a cgroup whose last process is still being reaped gets a moment."""
    if not path:
        return
    for _ in range(20):
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)


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


# --- what is available here ------------------------------------------------------------------------

@dataclass(frozen=True)
class Status:
    """What confinement this machine gives a side, as the worker found it when it started.

    Attributes:
        confined: the file system is confined (Landlock) — what grading needs.
        landlock: the kernel's Landlock ABI (0: none).
        pid_namespace: each side gets a PID namespace (killed whole when it ends).
        net_namespace: each side gets a loopback-only network namespace.
        network: how the network is refused: ``namespace``, ``landlock`` or ``none``.
        signals: signals to processes outside the side are refused (Landlock ABI 6).
        processes: how the process count is limited: ``cgroup`` (the kernel
            refuses a fork past :data:`MAX_PROCESSES`) or ``counted`` (the
            warden stops a side it finds past it).
        why: one sentence when something is missing, else "".
    """

    confined: bool
    landlock: int = 0
    pid_namespace: bool = False
    net_namespace: bool = False
    network: str = "none"
    signals: bool = False
    processes: str = "counted"
    why: str = ""

    def to_wire(self) -> dict:
        return asdict(self)

    @classmethod
    def from_wire(cls, data: dict | None) -> "Status":
        if not isinstance(data, dict):
            return cls(False, why="the check worker did not say how it confines code")
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})

    @property
    def sentence(self) -> str:
        """One sentence for the learner: what is confined, or why nothing is."""
        if not self.confined:
            return f"Code under check runs unconfined here: {self.why}"
        return ""


def enabled() -> bool:
    """Whether ``TUTOR_CONFINE`` leaves confinement on (anything but ``off``, ``0``, ``no``)."""
    return os.environ.get(ENV, "").strip().lower() not in ("off", "0", "no", "false")


def probe() -> Status:
    """Find out, in a forked child, what confinement works here (the worker calls it once, at start)."""
    if not enabled():
        return Status(False, why=f"{ENV}=off turned confinement off")
    abi = landlock_abi()
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(read_fd)
            pid_ns, net_ns = make_namespaces()
            code |= (1 if pid_ns else 0) | (2 if net_ns else 0)
            if abi:
                try:
                    restrict(Policy(tree=os.path.realpath(os.devnull), read=()), abi)
                    code |= 4
                except OSError:
                    pass
        finally:
            os._exit(code)
    os.close(write_fd)
    os.close(read_fd)
    _, wait = os.waitpid(pid, 0)
    code = os.WEXITSTATUS(wait) if os.WIFEXITED(wait) else 0
    pid_ns, net_ns, landlock_ok = bool(code & 1), bool(code & 2), bool(code & 4)
    network = "namespace" if net_ns else ("landlock" if landlock_ok and abi >= 4 else "none")
    why = ""
    if not landlock_ok:
        why = ("this kernel has no Landlock (Linux 5.13 or later with Landlock enabled), so its files are "
               "not protected from it" if not abi else "the kernel refused to apply Landlock here")
    elif network == "none":
        why = "no network namespace and a Landlock older than ABI 4, so it may open network connections"
    group = make_pids_cgroup(f"tutor-probe-{os.getpid()}", MAX_PROCESSES)
    remove_cgroup(group)
    return Status(confined=landlock_ok, landlock=abi if landlock_ok else 0, pid_namespace=pid_ns,
                  net_namespace=net_ns, network=network, signals=landlock_ok and abi >= 6,
                  processes="cgroup" if group else "counted", why=why)


# --- what the child tried ----------------------------------------------------------------------------

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


@dataclass
class Attempts:
    """An audit hook that notes what the subject tried and the policy refuses (the kernel does the refusing).

    Attributes:
        policy: the side's policy.
        report: called once with each new sentence (the child sends it to the worker).
        home: ``$HOME``, written ``~`` in sentences.
    """

    policy: Policy
    report: Callable[[str], None]
    home: str = field(default_factory=lambda: os.path.expanduser("~"))
    seen: set = field(default_factory=set)
    limit: int = 20

    def install(self) -> None:
        sys.addaudithook(self)

    def _shown(self, path: str) -> str:
        if self.home and self.home != "/" and _below(path, self.home):
            return "~" + path[len(self.home.rstrip("/")):]
        return path

    def _note(self, sentence: str) -> None:
        if sentence not in self.seen and len(self.seen) < self.limit:
            self.seen.add(sentence)
            try:
                self.report(sentence)
            except Exception:
                pass

    def _path(self, value) -> str | None:
        if isinstance(value, int) or value is None:
            return None
        try:
            path = os.fsdecode(os.fspath(value))
        except TypeError:
            return None
        return os.path.normpath(os.path.join(os.getcwd(), path)) if not os.path.isabs(path) else os.path.normpath(path)

    def writable(self, path: str) -> bool:
        return _below(path, self.policy.tree) or path in self.policy.write_files

    def readable(self, path: str) -> bool:
        return self.writable(path) or any(_below(path, root) for root in self.policy.read)

    def __call__(self, event: str, args: tuple) -> None:
        try:
            if event == "open" and args:
                path = self._path(args[0])
                if path is None:
                    return
                mode, flags = (args[1] if len(args) > 1 else "r") or "r", (args[2] if len(args) > 2 else 0) or 0
                writes = any(c in str(mode) for c in "wax+") or bool(flags & _WRITE_FLAGS)
                if writes and not self.writable(path):
                    self._note(f"tried to write {self._shown(path)}: refused")
                elif not writes and not self.readable(path) and not path.startswith("/proc/"):
                    self._note(f"tried to read {self._shown(path)}: refused")
            elif event in ("os.remove", "os.rmdir", "os.rename", "os.mkdir", "os.truncate", "os.chmod",
                           "os.symlink", "os.link", "shutil.rmtree", "shutil.move", "os.utime", "os.chown"):
                path = self._path(args[0]) if args else None
                if path is not None and not self.writable(path):
                    verb = {"rmtree": "remove", "rmdir": "remove", "move": "rename", "utime": "touch",
                            "mkdir": "make a folder in"}.get(event.split(".")[1], event.split(".")[1])
                    self._note(f"tried to {verb} {self._shown(path)}: refused")
            elif event in ("socket.connect", "socket.bind", "socket.sendto") and len(args) > 1:
                address = args[1]
                host = address[0] if isinstance(address, tuple) and address else address
                if isinstance(host, str) and host in ("127.0.0.1", "::1", "localhost") and not self.policy.network:
                    return  # its own loopback, in its own network namespace
                if isinstance(address, tuple):
                    verb = "listen on" if event == "socket.bind" else "connect to"
                    self._note(f"tried to {verb} {host}:{address[1] if len(address) > 1 else ''}: refused")
            elif event == "os.kill" and args and isinstance(args[0], int) and args[0] not in (0, os.getpid()):
                if args[0] < 0 or args[0] > MAX_PROCESSES * 16 or args[0] == 1:
                    self._note(f"tried to send a signal to process {args[0]}: refused")
        except Exception:
            pass


__all__ = ["ConfinementError", "Policy", "Status", "Attempts", "restrict", "read_roots", "make_namespaces",
           "descendants", "probe", "landlock_abi", "die_with_parent", "MAX_PROCESSES", "ENV", "enabled"]
