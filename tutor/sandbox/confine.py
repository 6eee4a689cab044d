"""Confinement of a side's child: what code we did not write may read, write, reach and start.

A side of a run (clean, faulted, a learner's file, the audit's factory) runs
in a forked child of the check worker, and the worker itself runs inside
bubblewrap (:mod:`tutor.sandbox.bwrap`: its own user, PID, network, UTS, IPC
and cgroup namespaces, no capabilities, a clean environment, the Python
installation and the subject's packages read-only, a tmpfs scratch). Before
any of the subject's code is imported, the child is confined further, by
mechanisms the kernel enforces:

* **capabilities** dropped, all of them (the warden's user namespace gave
  it a full set), and the size of any file it writes capped
  (``RLIMIT_FSIZE``, :data:`FILE_CAP_MB`);
* **Landlock** (:mod:`tutor.sandbox.landlock`): *read* its private tree,
  the Python installation and the tutor's own packages (less any installed
  copy of the catalog's package, ``exercises``: only its folder's names), the system's libraries and ``/proc``/``/sys``; *write*
  only its private tree (where it may not make device nodes, FIFOs, sockets
  or symlinks) and ``/dev/null``. ABI 4 and later also refuse TCP where no
  network namespace could be made; ABI 6 and later signals and abstract
  UNIX sockets outside the child's domain; every ABI ``ptrace`` outside it;
* **seccomp** (:mod:`tutor.sandbox.seccomp`): no ``mknod``, no metadata
  change, no socket but TCP and UDP (no UNIX, vsock, netlink or raw packet
  socket), no io_uring, no mount, no ``ptrace``, and the rest of its list;
* **namespaces and cgroups**, made by the side's *warden*
  (:mod:`tutor.sandbox.namespaces`): PID and network namespaces, a pids
  and a memory cgroup where they can be made and joined (a refusal to join
  is said, and the side's ``limits`` name the cap that held instead).

:func:`probe` says, once per worker, what holds here (``Hello.confinement``);
``confined`` needs bubblewrap, a user namespace, no capabilities, Landlock
and seccomp together, and commands that grade someone else's code refuse to
run without it unless told ``--allow-unconfined``.

What the child *tried* is noted by a Python audit hook (:class:`Attempts`)
installed before the subject is imported; the kernel refuses, the hook only
says so, and says "refused" only where an active layer refuses that call.

Environment: ``TUTOR_CONFINE=off`` runs sides unconfined (to see what that
changes, or where the kernel refuses the mechanisms); the tutor then says so.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from dataclasses import asdict, dataclass, field
from typing import Callable

from tutor.sandbox import seccomp
from tutor.sandbox.landlock import Policy, drop_capabilities, effective_capabilities, landlock_abi, restrict
from tutor.sandbox.namespaces import (MAX_PROCESSES, join_cgroup, make_memory_cgroup, make_namespaces,
                                     make_pids_cgroup, remove_cgroup)
# the runner removes a killed worker's cgroups through this module, with the rest of what it asks of confinement
from tutor.sandbox.namespaces import remove_cgroups  # noqa: F401
from tutor.sandbox.reads import below

#: ``TUTOR_CONFINE=off`` turns confinement off (the tutor says so).
ENV = "TUTOR_CONFINE"
#: The largest file a side may write, MiB (``RLIMIT_FSIZE``; ``TUTOR_FILE_CAP_MB``).
_FILE_CAP = os.environ.get("TUTOR_FILE_CAP_MB", "").strip()
FILE_CAP_MB = max(1, int(_FILE_CAP)) if _FILE_CAP.isdigit() else 256
# --- what is available here ------------------------------------------------------------------------

@dataclass(frozen=True)
class Status:
    """What confinement this machine gives a side, as the worker found it when it started.

    Attributes:
        confined: every layer holds (bubblewrap, a user namespace, no
            capabilities, Landlock, seccomp) — what grading needs.
        sandbox: the worker's outer wall, ``bwrap 0.11.0``; "" where it
            was started without one.
        user_namespace: the worker runs in a user namespace of its own
            (its uid is not the tutor's).
        capabilities: a side's child's effective capabilities once it
            dropped them (``CapEff``, hex; ``"0"``: none).
        seccomp: a side's child runs under the seccomp filter
            (:mod:`tutor.sandbox.seccomp`).
        landlock: the kernel's Landlock ABI (0: none).
        pid_namespace: each side gets a PID namespace (killed whole when it ends).
        net_namespace: each side gets a loopback-only network namespace.
        network: how the network is refused: ``namespace``, ``landlock`` or ``none``.
        signals: signals to processes outside the side are refused (Landlock ABI 6).
        processes: how the process count is limited: ``cgroup`` (the kernel
            refuses a fork past :data:`MAX_PROCESSES`) or ``counted`` (the
            warden stops a side it finds past it). ``cgroup`` only where the
            probe's child could make one *and join it*; a side whose warden is
            refused later says so itself (``SideResult.limits``, a notice).
        memory: how a side's memory is capped: ``cgroup`` (the side's
            processes together) or ``rlimit`` (each process's address space),
            ``cgroup`` on the same terms.
        file_cap_mb: the largest file a side may write (``RLIMIT_FSIZE``), MiB.
        why: one sentence when something is missing, else "".
    """

    confined: bool
    landlock: int = 0
    pid_namespace: bool = False
    net_namespace: bool = False
    network: str = "none"
    signals: bool = False
    processes: str = "counted"
    sandbox: str = ""
    user_namespace: bool = False
    capabilities: str = ""
    seccomp: bool = False
    memory: str = "rlimit"
    file_cap_mb: int = 0
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

    def layers(self) -> tuple[dict, ...]:
        """Each layer a side is confined by, outermost first (``tutor doctor`` shows them): its ``name``,
        whether it ``holds``, what it is here (``detail``), and whether it is ``required`` for ``confined``,
        what grading needs (:attr:`why` names the first required layer missing)."""
        caps = self.capabilities
        rows = (
            ("bubblewrap", bool(self.sandbox), self.sandbox or "none: the check worker runs without its outer wall",
             True),
            ("user namespace", self.user_namespace, "the worker is nobody in a user namespace of its own"
             if self.user_namespace else "none: the worker keeps the tutor's user", True),
            ("capabilities", caps == "0", "all dropped" if caps == "0" else
             f"not all dropped (CapEff {caps})" if caps else "not dropped", True),
            ("Landlock", self.landlock > 0, f"ABI {self.landlock}" if self.landlock else "none", True),
            ("seccomp", self.seccomp, "the system-call filter is on" if self.seccomp else "no filter", True),
            ("PID namespace", self.pid_namespace, "one per side" if self.pid_namespace else "none", False),
            ("network namespace", self.net_namespace, "loopback only" if self.net_namespace else
             "none: Landlock refuses TCP" if self.network == "landlock" else "none: a side may reach the network",
             False),
            ("pids cgroup", self.processes == "cgroup", f"at most {MAX_PROCESSES} processes a side"
             if self.processes == "cgroup" else "none: the warden counts a side's processes", False),
            ("memory cgroup", self.memory == "cgroup", "a side's processes capped together"
             if self.memory == "cgroup" else "none: each process's address space is capped", False),
        )
        return tuple({"name": name, "holds": holds, "detail": detail, "required": required}
                     for name, holds, detail, required in rows)


def enabled() -> bool:
    """Whether ``TUTOR_CONFINE`` leaves confinement on (anything but ``off``, ``0``, ``no``)."""
    return os.environ.get(ENV, "").strip().lower() not in ("off", "0", "no", "false")


#: Set by the runner: the worker's outer wall (``bwrap 0.11.0``), or why it has none.
SANDBOX_ENV, SANDBOX_WHY_ENV = "TUTOR_SANDBOX", "TUTOR_SANDBOX_WHY"


def in_user_namespace() -> bool:
    """Whether this process runs in a user namespace of its own (its uid map is not the whole range to itself)."""
    try:
        with open("/proc/self/uid_map") as fh:
            rows = [line.split() for line in fh if line.strip()]
    except OSError:
        return False
    return rows != [["0", "0", "4294967295"]]


# Runs only in the probe's forked child, which ends in os._exit: a mutant here cannot reach a test of this process,
# so mutation testing leaves it alone; tests/test_sandbox_layers.py covers it by forking this machine's layers.
def _probe_child(abi: int, write_fd: int, groups: dict[str, str | None]) -> None:  # pragma: no mutate block
    """In a fork: join the probe's cgroups (``groups``: controller -> path), make the side's namespaces, drop
    capabilities, apply Landlock and seccomp; say what held."""
    found = {"pid_ns": False, "net_ns": False, "landlock": False, "seccomp": False, "caps": -1, "joined": []}
    try:
        # a cgroup counts only where a warden can move into it, as each side's warden will
        found["joined"] = [controller for controller, path in groups.items() if path and not join_cgroup(path)]
        found["pid_ns"], found["net_ns"] = make_namespaces()
        drop_capabilities()
        found["caps"] = effective_capabilities()
        if abi:
            try:
                restrict(Policy(tree=os.path.realpath(os.devnull), read=()), abi)
                found["landlock"] = True
            except OSError:
                pass
        try:
            seccomp.apply()
            found["seccomp"] = True
        except OSError:
            pass
    finally:
        try:
            os.write(write_fd, json.dumps(found).encode())
        finally:
            os._exit(0)


def probe() -> Status:
    """Find out, in a forked child, what confinement works here (the worker calls it once, at start)."""
    if not enabled():
        return Status(False, why=f"{ENV}=off turned confinement off")
    abi = landlock_abi()
    seccomp_loads = seccomp.available()  # loads libseccomp here, before the probe's Landlock forbids reading it
    groups = {"pids": make_pids_cgroup(f"tutor-probe-{os.getpid()}", MAX_PROCESSES),
              "memory": make_memory_cgroup(f"tutor-probe-{os.getpid()}", 1 << 30)}
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _probe_child(abi, write_fd, groups)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as fh:
        said = fh.read()
    os.waitpid(pid, 0)
    for group in groups.values():
        remove_cgroup(group)
    return status_from(said, abi, sandbox=os.environ.get(SANDBOX_ENV, ""),
                       sandbox_why=os.environ.get(SANDBOX_WHY_ENV, ""), user_namespace=in_user_namespace(),
                       seccomp_loads=seccomp_loads)


def status_from(said: bytes, abi: int, *, sandbox: str, sandbox_why: str, user_namespace: bool,
                seccomp_loads: bool) -> Status:
    """The Status a probe's findings make, and the first thing missing as its ``why``.

    ``said``: what the probe's child wrote (JSON: ``pid_ns``, ``net_ns``,
    ``landlock``, ``seccomp``, ``caps`` and the cgroups it ``joined``;
    anything else reads as nothing held); ``abi``: the kernel's Landlock
    ABI; ``sandbox``: the worker's outer wall, or "" and ``sandbox_why`` it
    has none; ``user_namespace``: the worker runs in one of its own;
    ``seccomp_loads``: the seccomp library loads here (the filter can be
    made, whether or not the kernel then takes it).
    """
    try:
        found = json.loads(said)
    except ValueError:
        found = {}
    joined = found.get("joined") if isinstance(found.get("joined"), list) else []
    pid_ns, net_ns = bool(found.get("pid_ns")), bool(found.get("net_ns"))
    landlock_ok, seccomp_ok, caps = bool(found.get("landlock")), bool(found.get("seccomp")), found.get("caps")
    capeff = f"{caps:x}" if isinstance(caps, int) and caps >= 0 else ""
    network = "namespace" if net_ns else ("landlock" if landlock_ok and abi >= 4 else "none")
    missing = [
        (not sandbox, sandbox_why or "the check worker was not started inside bubblewrap"),
        (not user_namespace, "the check worker has no user namespace of its own, so it keeps the tutor's user"),
        (caps != 0, "a side's child could not drop its capabilities" + (f" (CapEff {capeff})" if capeff else "")),
        (not landlock_ok, "this kernel has no Landlock (Linux 5.13 or later with Landlock enabled), so its files "
                          "are not protected from it" if not abi else "the kernel refused to apply Landlock here"),
        (not seccomp_ok, "no seccomp filter could be loaded (pip install pyseccomp, with the system's libseccomp)"
                         if not seccomp_loads else "the kernel refused the seccomp filter"),
        (network == "none", "no network namespace and a Landlock older than ABI 4, so it may open network "
                            "connections"),
    ]
    why = next((sentence for lacking, sentence in missing if lacking), "")
    return Status(confined=not any(lacking for lacking, _ in missing[:5]), landlock=abi if landlock_ok else 0,
                  pid_namespace=pid_ns, net_namespace=net_ns, network=network, signals=landlock_ok and abi >= 6,
                  processes="cgroup" if "pids" in joined else "counted", sandbox=sandbox, user_namespace=user_namespace,
                  capabilities=capeff, seccomp=seccomp_ok, memory="cgroup" if "memory" in joined else "rlimit",
                  file_cap_mb=FILE_CAP_MB, why=why)


# --- what the child tried ----------------------------------------------------------------------------

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
#: ``O_PATH``: a descriptor that names a path and reads nothing through it (Landlock checks no such open;
#: :func:`tutor.sandbox.landlock.restrict` opens each folder of its rules so, listed ones included).
_PATH_ONLY = getattr(os, "O_PATH", 0)


#: Calls that change a file's metadata: the seccomp filter refuses them wherever the file is.
_METADATA = {"os.chmod": "chmod", "os.chown": "chown", "os.utime": "touch", "os.setxattr": "set an attribute on",
             "os.removexattr": "remove an attribute of"}
#: Calls Landlock refuses outside the side's tree.
_TREE_ONLY = {"os.remove": "remove", "os.rmdir": "remove", "os.rename": "rename", "os.mkdir": "make a folder in",
              "os.truncate": "truncate", "os.symlink": "symlink", "os.link": "link", "shutil.rmtree": "remove",
              "shutil.move": "rename"}


#: Socket families named as a learner knows them; another is named by its constant (``AF_ALG``).
_SOCKET_KINDS = {"AF_UNIX": "a UNIX socket", "AF_VSOCK": "a vsock socket", "AF_NETLINK": "a netlink socket",
                 "AF_PACKET": "a raw packet socket"}


def _socket_kind(family: int) -> str:
    """``a vsock socket``, ``a socket of family AF_ALG``, ``a socket of family 99``: a socket of ``family``."""
    try:
        name = socket.AddressFamily(family).name
    except ValueError:
        name = str(family)
    return _SOCKET_KINDS.get(name, f"a socket of family {name}")


@dataclass
class Attempts:
    """An audit hook that notes what the subject tried; the kernel does the refusing, the hook only says so.

    A sentence ends "refused" only where a layer that is active refuses the
    call by construction (Landlock for paths outside the tree, seccomp for
    metadata and every socket but TCP and UDP, Landlock ABI 6 for signals,
    the network namespace or Landlock for TCP and UDP off the loopback);
    where that layer is absent it says what was tried and no more.

    Attributes:
        policy: the side's policy.
        report: called once with each new sentence (the child sends it to the worker).
        home: ``$HOME``, written ``~`` in sentences.
        landlock: Landlock is applied (paths outside the tree are refused).
        seccomp: the seccomp filter is applied.
        signals: signals out of the side are refused (Landlock ABI 6).
        network_refused: connections off the side's loopback are refused.
    """

    policy: Policy
    report: Callable[[str], None]
    home: str = field(default_factory=lambda: os.path.expanduser("~"))
    seen: set = field(default_factory=set)
    limit: int = 20
    landlock: bool = True
    seccomp: bool = False
    signals: bool = False
    network_refused: bool = True

    def install(self) -> None:
        sys.addaudithook(self)

    def _shown(self, path: str) -> str:
        if self.home and self.home not in ("/", "/tmp") and below(path, self.home):
            return "~" + path[len(self.home.rstrip("/")):]
        return path

    def _note(self, sentence: str, refused: bool = True) -> None:
        sentence += ": refused" if refused else ""
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
        return below(path, self.policy.tree) or path in self.policy.write_files

    def readable(self, path: str) -> bool:
        return self.writable(path) or any(below(path, root) for root in self.policy.read)

    def listable(self, path: str) -> bool:
        """Whether ``path`` is a folder at or below one the policy lets the child list but not read
        (Landlock grants listing for the whole hierarchy; a file's contents there stay refused)."""
        return any(below(path, folder) for folder in self.policy.listed) and os.path.isdir(path)

    def __call__(self, event: str, args: tuple) -> None:
        try:
            if event == "open" and args:
                path = self._path(args[0])
                if path is None:
                    return
                mode, flags = (args[1] if len(args) > 1 else "r") or "r", (args[2] if len(args) > 2 else 0) or 0
                if flags & _PATH_ONLY:
                    return  # a descriptor for the path alone, as for stat: no contents, and Landlock allows it
                writes = any(c in str(mode) for c in "wax+") or bool(flags & _WRITE_FLAGS)
                if writes and not self.writable(path):
                    self._note(f"tried to write {self._shown(path)}", self.landlock)
                elif not writes and not self.readable(path) and not path.startswith("/proc/") \
                        and not self.listable(path):
                    self._note(f"tried to read {self._shown(path)}", self.landlock)
            elif event in _METADATA:
                path = self._path(args[0]) if args else None
                if path is not None and (self.seccomp or not self.writable(path)):
                    self._note(f"tried to {_METADATA[event]} {self._shown(path)}", self.seccomp)
            elif event in _TREE_ONLY:
                path = self._path(args[0]) if args else None
                if path is not None and not self.writable(path):
                    self._note(f"tried to {_TREE_ONLY[event]} {self._shown(path)}", self.landlock)
            elif event == "socket.__new__" and len(args) > 1 and isinstance(args[1], int) \
                    and args[1] not in seccomp.SOCKET_FAMILIES:
                protocol = args[3] if len(args) > 3 else -1  # -1: the family's default, routing for netlink
                routing = args[1] == seccomp.NETLINK and protocol in (seccomp.NETLINK_ROUTE, -1)
                if not routing:  # routing netlink is let through (getifaddrs): no attempt to note
                    self._note(f"tried to open {_socket_kind(args[1])}", self.seccomp)
            elif event in ("socket.connect", "socket.bind", "socket.sendto") and len(args) > 1:
                address = args[1]
                host = address[0] if isinstance(address, tuple) and address else address
                if isinstance(host, str) and host in ("127.0.0.1", "::1", "localhost") and not self.policy.network:
                    return  # its own loopback, in its own network namespace
                if isinstance(address, tuple):
                    # the network namespace and Landlock refuse TCP and UDP; a socket of another family that
                    # exists at all is one no layer refused (the filter would have refused to make it)
                    inet = getattr(args[0], "family", socket.AF_INET) in seccomp.SOCKET_FAMILIES
                    verb = "listen on" if event == "socket.bind" else "connect to"
                    self._note(f"tried to {verb} {host}:{address[1] if len(address) > 1 else ''}",
                               self.network_refused and inet)
            elif event == "os.kill" and args and isinstance(args[0], int) and args[0] not in (0, os.getpid()):
                if args[0] < 0 or args[0] > MAX_PROCESSES * 16 or args[0] == 1:
                    self._note(f"tried to send a signal to process {args[0]}", self.signals)
        except Exception:
            pass


__all__ = ["Status", "Attempts", "probe", "status_from", "enabled", "ENV", "MAX_PROCESSES",
           "remove_cgroups"]
