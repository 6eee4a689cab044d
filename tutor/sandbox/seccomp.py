"""A seccomp filter for a side's child: the system calls code under check never needs, refused by the kernel.

Made in the child before Landlock (:func:`build`) and loaded after it, before
any of the subject's code is imported (:func:`load`), with ``pyseccomp`` over the system's libseccomp.
Every call is allowed but these, which fail with ``EPERM``:

* making device nodes and FIFOs (``mknod``, ``mknodat``);
* changing a file's metadata, which Landlock has no right for: the
  ``chmod``, ``chown``, ``utime``/``utimes``/``utimensat``/``futimesat``
  and ``setxattr``/``removexattr`` families, and ``chattr``'s ioctl
  (``FS_IOC_SETFLAGS``, ``FS_IOC_FSSETXATTR``: immutable or append-only);
* every socket but TCP and UDP (``socket`` of any family but ``AF_INET``
  and ``AF_INET6``, which reach only the side's own loopback in its empty
  network namespace) and routing netlink (``getifaddrs``): no UNIX socket,
  pathname or abstract, so no agent, bus or daemon socket is reachable; no
  vsock, which a virtual machine's host answers outside any network
  namespace; no raw packets, no netlink of another protocol (audit, kernel
  events, socket diagnostics, generic), no kernel crypto API or key
  management. ``socketpair`` stays (the C library and ``multiprocessing``
  use it);
* io_uring (``io_uring_setup``, ``io_uring_enter``, ``io_uring_register``):
  its requests lie in shared memory no filter can read, so they would pass
  by every rule here. It says ``ENOSYS``, as a kernel without io_uring does;
* mounting and namespaces (``mount``, ``umount2``, ``pivot_root``, the new
  mount API, ``chroot``, ``unshare``, ``setns``, ``clone`` with a namespace
  flag; ``clone3``, whose flags a filter cannot read, says ``ENOSYS`` and
  the C library falls back to ``clone``), host names
  (``sethostname``, ``setdomainname``);
* reaching other processes' memory (``ptrace``, ``process_vm_readv``,
  ``process_vm_writev``), ``bpf``, ``perf_event_open``, ``userfaultfd``,
  file handles (``open_by_handle_at``), the kernel's keyrings (``keyctl``,
  ``add_key``, ``request_key``), kernel modules, the clock
  (``clock_settime``, ``settimeofday``, ``adjtimex``, ``clock_adjtime``),
  ``reboot``, ``kexec_*``, ``swapon``/``swapoff``.

A call of another architecture's table (a 32-bit ``int 0x80``) kills the
child (libseccomp's default for a foreign architecture).
"""

from __future__ import annotations

import errno
import socket

#: The calls refused outright (a name this libseccomp or architecture does not know is skipped).
DENIED = (
    "mknod", "mknodat",
    "chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat",
    "utime", "utimes", "utimensat", "futimesat",
    "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
    "setxattrat", "removexattrat",
    "mount", "umount2", "pivot_root", "move_mount", "fsopen", "fsmount", "fsconfig", "fspick", "open_tree",
    "mount_setattr", "chroot", "unshare", "setns", "sethostname", "setdomainname",
    "ptrace", "process_vm_readv", "process_vm_writev", "bpf", "perf_event_open", "userfaultfd",
    "open_by_handle_at", "keyctl", "add_key", "request_key", "init_module", "finit_module", "delete_module",
    "clock_settime", "settimeofday", "adjtimex", "clock_adjtime", "reboot", "kexec_load", "kexec_file_load",
    "swapon", "swapoff",
)
#: The socket families a side may make: TCP and UDP, over IPv4 and IPv6 (its network namespace has only a loopback).
SOCKET_FAMILIES = (socket.AF_INET, socket.AF_INET6)
#: Netlink, of its routing protocol alone (``NETLINK_ROUTE``): the C library's ``getifaddrs`` lists the
#: interfaces through it, and torch.distributed's gloo backend asks it for the loopback's address; in the
#: side's network namespace it sees only that loopback, and without capabilities it changes nothing.
NETLINK, NETLINK_ROUTE = 16, 0
#: io_uring's calls: "not here" (``ENOSYS``), as on a kernel built without it.
IO_URING = ("io_uring_setup", "io_uring_enter", "io_uring_register")
#: ``clone`` flags that make a namespace (a user namespace would hand the child a full set of capabilities
#: again): user, mount, PID, network, UTS, IPC, cgroup.
NAMESPACE_FLAGS = (0x10000000, 0x00020000, 0x20000000, 0x40000000, 0x04000000, 0x08000000, 0x02000000)
#: ``chattr``'s ioctls: FS_IOC_SETFLAGS (64- and 32-bit) and FS_IOC_FSSETXATTR.
SET_FLAGS_IOCTLS = (0x40086602, 0x40046602, 0x401C5820)


def available() -> bool:
    """Whether pyseccomp and the system's libseccomp load here (not whether the kernel takes a filter)."""
    try:
        _library()
    except (ImportError, OSError, AttributeError):
        return False
    return True


def _library():
    # pyseccomp loads libseccomp when imported: a machine without it has no seccomp layer, not a broken tutor
    import pyseccomp
    return pyseccomp


def build():
    """The filter, made but not yet loaded: :func:`load` puts it in force.

    Made before the child's Landlock is on, so that ``pyseccomp`` and the
    system's libseccomp are read while every installed package is still
    readable: a missing library is then said as missing, never confused
    with a read the confinement refused.

    Raises:
        OSError: pyseccomp or libseccomp is missing.
    """
    try:
        sc = _library()
    except (ImportError, AttributeError) as exc:
        raise OSError(errno.ENOSYS, f"pyseccomp or libseccomp is missing ({exc})") from None
    refuse = sc.ERRNO(errno.EPERM)
    flt = sc.SyscallFilter(defaction=sc.ALLOW)
    for name in DENIED:
        try:
            flt.add_rule(refuse, name)
        except (OSError, ValueError, RuntimeError):
            continue  # not a call of this kernel's architecture, or unknown to this libseccomp
    for comparisons in _other_families(sc):
        flt.add_rule(refuse, "socket", *(comparisons if isinstance(comparisons, tuple) else (comparisons,)))
    for name in IO_URING:
        try:
            flt.add_rule(sc.ERRNO(errno.ENOSYS), name)
        except (OSError, ValueError, RuntimeError):
            continue  # a libseccomp older than io_uring: the kernel's own answer stands
    for request in SET_FLAGS_IOCTLS:
        flt.add_rule(refuse, "ioctl", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, request))
    for flag in NAMESPACE_FLAGS:
        flt.add_rule(refuse, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    try:
        # clone3's flags lie in a structure a filter cannot read: "not here", and the C library falls back to clone
        flt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    except (OSError, ValueError, RuntimeError):
        pass
    return flt


def _other_families(sc) -> list:
    """Comparisons of ``socket``'s arguments that, one rule each, match every socket but those of
    :data:`SOCKET_FAMILIES` and routing netlink: a family below the least, each one between, above netlink (a
    value with any of its upper 32 bits set among them, which the kernel would cut to an int), and netlink of
    any protocol but ``NETLINK_ROUTE``."""
    allowed = (*SOCKET_FAMILIES, NETLINK)
    low, high = min(allowed), max(allowed)
    between = [family for family in range(low + 1, high) if family not in allowed]
    return ([sc.Arg(0, sc.LT, low), sc.Arg(0, sc.GT, high)]
            + [sc.Arg(0, sc.EQ, family) for family in between]
            + [(sc.Arg(0, sc.EQ, NETLINK), sc.Arg(2, sc.NE, NETLINK_ROUTE))])


def load(flt) -> None:
    """Put a filter made by :func:`build` in force in this process (and every process it starts).

    Raises:
        OSError: the kernel refused the filter.
    """
    try:
        flt.load()
    except (RuntimeError, ValueError) as exc:  # pyseccomp's own word for a refusal, where it is not an OSError
        raise OSError(errno.EPERM, f"the kernel refused the seccomp filter ({exc})") from None


def apply() -> None:
    """Make the filter and load it into this process at once (:func:`build`, then :func:`load`).

    Raises:
        OSError: libseccomp is missing or the kernel refused the filter.
    """
    load(build())
