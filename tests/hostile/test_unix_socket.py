"""No UNIX socket reaches out of a side: a pathname one (an agent, a bus, docker.sock) nor an abstract one."""

import os
import secrets

import pytest

from attack import run_fix, unix_listeners

ATTACK = """
import socket
res = {}
for label, address in (('path', PATHNAME), ('abstract', ABSTRACT)):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(address)
        s.sendall(b'hello from the side')
        res[label] = 'connected'
    except OSError as exc:
        res[label] = exc.errno
a, b = socket.socketpair()
a.sendall(b'x')
res['socketpair'] = b.recv(1).decode()
report(res)
"""


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    abstract = "\0tutor-test-" + secrets.token_hex(6)
    with unix_listeners(tmp_path_factory.mktemp("agent"), abstract) as (path, listening):
        yield path, abstract, listening


@pytest.fixture(scope="module")
def outcome(tmp_path_factory, servers):
    path, abstract, _ = servers
    code = ATTACK.replace("PATHNAME", repr(path)).replace("ABSTRACT", repr(abstract))
    return run_fix(tmp_path_factory.mktemp("unix"), code)


def _accepted(s) -> int:
    count = 0
    while True:
        try:
            s.accept()[0].close()
            count += 1
        except BlockingIOError:
            return count


def test_no_connection_arrives_and_socketpair_still_works(outcome, servers):
    res = eval(outcome.saw)  # the attack's own dict
    assert res["path"] != "connected" and res["abstract"] != "connected", res
    assert res["socketpair"] == "x"  # in-process pairs stay (multiprocessing uses them)
    assert [_accepted(s) for s in servers[2]] == [0, 0]
    assert os.path.exists(servers[0])


def test_not_fixed_and_no_damage(outcome):
    outcome.assert_not_fixed_and_no_damage()
