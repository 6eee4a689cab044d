"""A side's /proc shows only the sandbox's processes: no grader's command line, no tutor, no path bwrap bound.

(The side's PID namespace is nested in the sandbox's, whose /proc it reads: it sees the worker's processes,
bwrap's init as ``bwrap --args 3``, and the other sides' wardens, whose memory Landlock keeps it from.)"""

import pytest

from attack import run_fix

ATTACK = """
import os
cmdlines = {}
for pid in (p for p in os.listdir('/proc') if p.isdigit()):
    try:
        cmdlines[pid] = open('/proc/' + pid + '/cmdline', 'rb').read().replace(b'\\0', b' ').decode()
    except OSError as exc:
        cmdlines[pid] = type(exc).__name__
host = [c for c in cmdlines.values() if 'pytest' in c or 'tutor.cli' in c or ' fix ' in c or '/tmp' in c]
kinds = sorted({('bwrap' if 'bwrap --args' in c else 'worker') if 'tutor.sandbox.worker' in c else c[:40]
                for c in cmdlines.values()} - {'', 'FileNotFoundError'})
long = max(len(c) for c in cmdlines.values() if 'bwrap' in c)
report([len(cmdlines), kinds, len(host), os.getpid(), os.getppid(), long])
"""


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    return run_fix(tmp_path_factory.mktemp("proc"), ATTACK)


def test_only_the_sides_own_processes_are_visible(outcome):
    count, kinds, host, pid, ppid, bwrap_cmdline = eval(outcome.saw)  # the attack's own list
    assert host == 0 and kinds == ["bwrap", "worker"], outcome.saw
    assert bwrap_cmdline < 200  # "bwrap --args 3 -- python -m tutor.sandbox.worker": no bind, no variable
    assert count <= 16  # bwrap's init, the worker, its sides' wardens, inits and children; nothing of the host's
    assert ppid == 0 and pid == 2  # a PID namespace of its own: its parent, the warden, lives outside it


def test_not_fixed_and_no_damage(outcome):
    outcome.assert_not_fixed_and_no_damage()
