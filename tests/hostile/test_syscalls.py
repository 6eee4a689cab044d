"""The seccomp filter refuses, inside a side, each call on its list that a learner's file could use to reach
the machine: mount, ptrace, bpf, perf_event_open, keyctl, module loading, clock_settime, reboot and
sethostname, each made raw through ``libc.syscall`` (no Python wrapper that could refuse first).

Every call is made with arguments that change nothing even where it were let through (a NULL buffer, an
impossible length, a wrong magic number), and several of them would answer otherwise than ``EPERM`` if
they reached the kernel: ``ptrace(PTRACE_TRACEME)`` needs no privilege and succeeds, ``perf_event_open``
and ``clock_settime`` with a NULL pointer fail with ``EFAULT``, ``keyctl(KEYCTL_GET_KEYRING_ID)`` needs
no privilege and answers a keyring (or ``ENOKEY``); as root, outside the sandbox, ``mount``, ``reboot``
and ``sethostname`` so made answer ``EFAULT`` or ``EINVAL``. ``EPERM`` for those is the filter's own answer
(:mod:`tutor.sandbox.seccomp`: ``ERRNO(EPERM)`` for every call on its list), not a capability check.
"""

import errno
import os

import pytest

pytestmark = pytest.mark.skipif(os.uname().machine not in ("x86_64", "aarch64"),
                                reason="the attack knows the call numbers of x86_64 and aarch64 only")

ATTACK = """
import ctypes, os
numbers = {'x86_64': dict(mount=165, ptrace=101, bpf=321, perf=298, keyctl=250, init_module=175,
                          finit_module=313, clock_settime=227, reboot=169, sethostname=170),
           'aarch64': dict(mount=40, ptrace=117, bpf=280, perf=241, keyctl=219, init_module=105,
                           finit_module=273, clock_settime=112, reboot=142, sethostname=161)}[os.uname().machine]
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
calls = {
    'mount': ('mount', 0, 0, 0, 0, 0),                    # no source, no target: nothing to mount
    'traceme': ('ptrace', 0, 0, 0, 0),                    # PTRACE_TRACEME: allowed to anyone, without the filter
    'attach1': ('ptrace', 16, 1, 0, 0),                   # PTRACE_ATTACH to pid 1
    'bpf': ('bpf', 0, 0, 0),                              # BPF_MAP_CREATE, no attributes
    'perf': ('perf', 0, 0, -1, -1, 0),                    # no attributes: EFAULT, without the filter
    'keyctl': ('keyctl', 0, -1, 0),                       # KEYCTL_GET_KEYRING_ID of the thread's keyring
    'init_module': ('init_module', 0, 0, 0),              # no image
    'finit_module': ('finit_module', -1, 0, 0),           # no file
    'clock_settime': ('clock_settime', 0, 0),             # CLOCK_REALTIME, no time: EFAULT, without the filter
    'reboot': ('reboot', 0, 0, 0, 0),                     # wrong magic numbers
    'sethostname': ('sethostname', 0, -1),                # an impossible length
}
said = {}
for what, (name, *args) in calls.items():
    ctypes.set_errno(0)
    done = libc.syscall(ctypes.c_long(numbers[name]), *(ctypes.c_long(a) for a in args))
    said[what] = ctypes.get_errno() if done == -1 else 'ran'
report(said)
"""


def test_each_call_is_refused_by_the_filter(outcome):
    said = outcome.reported  # errno per call, or 'ran'
    assert set(said) == {"mount", "traceme", "attach1", "bpf", "perf", "keyctl", "init_module", "finit_module",
                         "clock_settime", "reboot", "sethostname"}, outcome.text[-2000:]
    assert said == dict.fromkeys(said, errno.EPERM), said


def test_not_fixed_and_no_damage(outcome):
    outcome.assert_not_fixed_and_no_damage()
