"""A side may make only TCP/UDP sockets (in its own empty network namespace), routing netlink (the C library's
``getifaddrs``) and socketpairs: every other address family — vsock (which a virtual machine's host answers,
outside any network namespace), raw packets, netlink of another protocol, the kernel's crypto API, key
management, UNIX — is refused by the seccomp filter, and so is io_uring
(whose requests a filter cannot read). The side's notice says "refused" for a socket the filter refused.

(Before, only UNIX sockets were refused: on a Firecracker VM a side opened AF_VSOCK, bound a port the host saw
taken and could reach CID 2, and it opened netlink, AF_ALG and io_uring rings.)

Each call is made raw through ``libc`` with arguments that would answer otherwise than ``EPERM`` or
``ENOSYS`` if they reached the kernel: a netlink socket needs no privilege, ``io_uring_setup`` with a NULL
parameter block answers ``EFAULT``, ``io_uring_enter``/``io_uring_register`` on no descriptor ``EBADF``.
"""

import errno
import os

import pytest

from attack import run_fix

pytestmark = pytest.mark.skipif(os.uname().machine not in ("x86_64", "aarch64"),
                                reason="the attack knows the call numbers of x86_64 and aarch64 only")

ATTACK = """
import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
families = {'vsock': (40, 0), 'pkt': (17, 0), 'alg': (38, 0), 'key': (15, 0), 'unix': (1, 0), 'uns': (0, 0),
            'bt': (31, 0), 'rds': (21, 0), 'tipc': (30, 0), 'high': (0x100000028, 0),
            'nl4': (16, 4), 'nl9': (16, 9), 'nl15': (16, 15), 'nl16': (16, 16), 'nlr': (16, 0)}
said = {}
for name, (family, protocol) in families.items():
    ctypes.set_errno(0)
    fd = libc.syscall(ctypes.c_long(41 if os.uname().machine == 'x86_64' else 198), ctypes.c_long(family),
                      ctypes.c_long(3 if family == 16 else 2), ctypes.c_long(protocol))
    said[name] = ctypes.get_errno() if fd == -1 else 'made'
for name, number, args in (('ur_s', 425, (1, 0)), ('ur_e', 426, (-1, 0, 0, 0, 0, 0)), ('ur_r', 427, (-1, 0, 0, 0))):
    ctypes.set_errno(0)
    done = libc.syscall(ctypes.c_long(number), *(ctypes.c_long(a) for a in args))
    said[name] = ctypes.get_errno() if done == -1 else 'made'
try:
    socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
    said['py'] = 'made'
except OSError as exc:
    said['py'] = exc.errno
tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
tcp.bind(('127.0.0.1', 0))
tcp.listen(1)
six = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
a, b = socket.socketpair()
a.sendall(b'x')
said['lo'] = tcp.getsockname()[1] > 0 and six.family == socket.AF_INET6 and b.recv(1) == b'x'
report(said)
"""


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    return run_fix(tmp_path_factory.mktemp("families"), ATTACK)


def test_every_family_but_inet_is_refused_by_the_filter(outcome):
    said = outcome.reported
    # netlink of sock_diag (4), audit (9), kernel events (15), generic (16); vsock through Python's socket too
    families = ("vsock", "pkt", "alg", "key", "unix", "uns", "bt", "rds", "tipc", "high", "nl4", "nl9", "nl15",
                "nl16", "py")
    assert {name: said.get(name) for name in families} == dict.fromkeys(families, errno.EPERM), said


def test_routing_netlink_stays_for_getifaddrs(outcome):
    # the C library lists interfaces through it (torch.distributed's gloo asks it for the loopback's address)
    assert outcome.reported["nlr"] == "made", outcome.reported


def test_io_uring_is_not_there(outcome):
    said = outcome.reported
    calls = ("ur_s", "ur_e", "ur_r")  # io_uring_setup, _enter, _register
    assert {name: said.get(name) for name in calls} == dict.fromkeys(calls, errno.ENOSYS), said


def test_tcp_udp_and_socketpair_still_work(outcome):
    assert outcome.reported["lo"] is True, outcome.reported


def test_the_notice_says_refused_for_what_was(outcome):
    assert "tried to open a vsock socket: refused" in outcome.text, outcome.text[-3000:]


def test_not_fixed_and_no_damage(outcome):
    outcome.assert_not_fixed_and_no_damage()
