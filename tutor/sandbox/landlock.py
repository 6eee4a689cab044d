"""Landlock, the ``prctl`` options and the capability drop confinement needs: a small ctypes binding.

Landlock (Linux 5.13+, unprivileged; ``include/uapi/linux/landlock.h``)
confines a process to the files it may read or write, and from ABI 4 the
TCP ports it may bind or connect to, from ABI 6 the processes it may signal.
:func:`restrict` applies one :class:`Policy` to the calling process (a
side's child, after ``fork``, so the warm worker keeps its speed);
:func:`landlock_abi` says which ABI this kernel offers. ``prctl`` sets
``no_new_privs`` (which Landlock needs) and, in :func:`die_with_parent`, the
signal a forked process gets when its parent ends; :func:`drop_capabilities`
gives up every capability (``prctl`` and ``capset``).

What a child may read, and what works on this machine, are
:mod:`tutor.sandbox.confine`'s; namespaces and cgroups are
:mod:`tutor.sandbox.namespaces`'.
"""

from __future__ import annotations

import ctypes
import os
import sys
from dataclasses import dataclass

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # the same on every architecture
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH, _RULE_NET_PORT = 1, 2
_PR_SET_NO_NEW_PRIVS, _PR_SET_PDEATHSIG = 38, 1
_PR_CAPBSET_DROP, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
_CAPABILITY_VERSION_3 = 0x20080522

FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FS_REMOVE_DIR, FS_REMOVE_FILE, FS_MAKE_CHAR, FS_MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
FS_MAKE_REG, FS_MAKE_SOCK, FS_MAKE_FIFO, FS_MAKE_BLOCK = 1 << 8, 1 << 9, 1 << 10, 1 << 11
FS_MAKE_SYM, FS_REFER, FS_TRUNCATE, FS_IOCTL_DEV = 1 << 12, 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
_READ_RIGHTS = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
#: What a side may do in its own tree: everything but making device nodes, FIFOs, sockets and symlinks
#: (a block device there read a whole disk raw; a FIFO or a link there is a trap for whoever reads it next).
_TREE_DENIED = FS_MAKE_BLOCK | FS_MAKE_CHAR | FS_MAKE_FIFO | FS_MAKE_SOCK | FS_MAKE_SYM


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


_libc = None


def libc():
    """The C library, loaded once, with ``errno`` kept (``ctypes.get_errno``)."""
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
        version = libc().syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0),
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
        listed: folders the child may list but not read (the names in them
            and in the folders below them, never a file's contents).
    """

    tree: str
    read: tuple[str, ...]
    write_files: tuple[str, ...] = ("/dev/null",)
    network: bool = True
    listed: tuple[str, ...] = ()


def restrict(policy: Policy, abi: int) -> None:
    """Confine this process (a side's child, before the subject is imported) to ``policy``.

    Sets ``no_new_privs`` and applies one Landlock ruleset: reads as
    ``policy.read``, everything in ``policy.tree`` but making device
    nodes, FIFOs, sockets and symlinks there, read-write on
    ``policy.write_files``; with ABI >= 4 and ``policy.network`` no TCP bind
    or connect; with ABI >= 6 no signal and no abstract UNIX socket outside
    the domain. A path that does not exist is skipped.

    Raises:
        ConfinementError: a step the kernel refused (names it and errno).
    """
    c = libc()
    handled_fs = _handled_fs(abi)
    attr = _RulesetAttr(handled_access_fs=handled_fs,
                        handled_access_net=(NET_BIND_TCP | NET_CONNECT_TCP) if abi >= 4 and policy.network else 0,
                        scoped=(SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if abi >= 6 else 0)
    size = 24 if abi >= 6 else (16 if abi >= 4 else 8)
    ruleset = c.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        raise ConfinementError(ctypes.get_errno(), "landlock_create_ruleset was refused")
    try:
        rules = [(policy.tree, handled_fs & ~_TREE_DENIED)]
        rules += [(path, _READ_RIGHTS) for path in policy.read]
        rules += [(path, FS_READ_DIR) for path in policy.listed]
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
                if c.syscall(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), ctypes.c_uint32(0)) < 0:
                    raise ConfinementError(ctypes.get_errno(), f"landlock_add_rule was refused for {path}")
            finally:
                os.close(fd)
        if c.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise ConfinementError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) was refused")
        if c.syscall(_SYS_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)) < 0:
            raise ConfinementError(ctypes.get_errno(), "landlock_restrict_self was refused")
    finally:
        os.close(ruleset)


def die_with_parent(sig: int = 9) -> None:
    """Ask the kernel to send this process ``sig`` when the thread that forked it ends (PR_SET_PDEATHSIG).

    Only for processes forked from a process's main thread (the worker's and
    the warden's forks): the signal follows the forking *thread*.
    """
    try:
        libc().prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)
    except (OSError, AttributeError):
        pass


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_capabilities() -> None:
    """Give up every capability this process holds: ambient, bounding set, effective, permitted, inheritable.

    A side's warden makes a user namespace of its own where it must (not
    root), and a process that makes one holds every capability inside it;
    the child drops them before the subject is imported, so it holds none
    anywhere (``CapEff`` 0). A step the kernel refuses is skipped: the
    capability read afterwards (:func:`effective_capabilities`) is the truth.
    """
    c = libc()
    try:
        c.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
        for cap in range(64):
            c.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
        header, data = _CapHeader(_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
        c.capset(ctypes.byref(header), data)
    except (OSError, AttributeError):
        pass


def effective_capabilities() -> int:
    """This process's effective capabilities (``CapEff`` of /proc/self/status); -1 where unreadable."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("CapEff:"):
                    return int(line.split()[1], 16)
    except (OSError, ValueError):
        pass
    return -1
