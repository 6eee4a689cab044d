"""Root outside is nobody inside: no capability, no_new_privs, the seccomp filter on, even when the tutor is root."""

import os

import pytest

from attack import run_fix

ATTACK = """
import os, socket
status = dict(line.split(':', 1) for line in open('/proc/self/status') if ':' in line)
facts = {key: status[key].strip() for key in ('CapEff', 'CapPrm', 'CapBnd', 'CapAmb', 'NoNewPrivs', 'Seccomp')}
facts['uid'] = os.getuid()
try:
    socket.sethostname('owned')
    facts['sethostname'] = 'allowed'
except OSError as exc:
    facts['sethostname'] = exc.errno
if os.uname().machine == 'x86_64':  # clone(CLONE_NEWUSER | SIGCHLD): a user namespace would give capabilities back
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    made = libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0)
    if made == 0:
        os._exit(0)
    facts['clone_newuser'] = 'made' if made > 0 else ctypes.get_errno()
report(facts)
"""


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    return run_fix(tmp_path_factory.mktemp("capabilities"), ATTACK)


def test_the_side_holds_no_capability(outcome):
    facts = eval(outcome.saw)  # the attack's own dict, printed by repr
    assert facts["CapEff"] == facts["CapPrm"] == facts["CapAmb"] == "0000000000000000", facts
    assert facts["CapBnd"] == "0000000000000000", facts
    assert facts["NoNewPrivs"] == "1" and facts["Seccomp"] == "2", facts  # 2: a filter is loaded
    assert facts["uid"] != 0 and facts["sethostname"] != "allowed", facts
    assert facts.get("clone_newuser", 1) == 1, facts  # EPERM from the seccomp filter


def test_not_fixed_and_no_damage(outcome):
    outcome.assert_not_fixed_and_no_damage()
    assert os.uname().nodename != "owned"
