"""A side's /proc is a fresh procfs of its own PID namespace: it lists the side's own processes and its
namespace's init, never the worker, bwrap's init, another side's warden or anything of the grader's.

(Before, the side read the sandbox's /proc: the worker's processes with their command lines, bwrap's init
as ``bwrap --args 3``, and every other side's warden.)"""

import pytest

from attack import run_fix

ATTACK = """
import os
own = os.getpid()
others = {}
for pid in (p for p in os.listdir('/proc') if p.isdigit() and int(p) != own):
    try:
        others[pid] = open('/proc/' + pid + '/cmdline', 'rb').read().replace(b'\\0', b' ').decode().strip()
    except OSError as exc:
        others[pid] = type(exc).__name__
report([sorted(others.items()), own, os.getppid()])
"""


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    return run_fix(tmp_path_factory.mktemp("proc"), ATTACK)


def test_only_the_sides_own_processes_are_visible(outcome):
    others, pid, ppid = eval(outcome.saw)  # the attack's own list
    # the namespace's init, renamed, is all there is besides the side's own process
    assert others == [("1", "tutor-side-init")], others
    assert ppid == 0 and pid == 2  # a PID namespace of its own: its parent, the warden, lives outside it


def test_no_command_line_of_the_worker_or_the_grader(outcome):
    text = outcome.saw
    for word in ("tutor.sandbox.worker", "bwrap", "pytest", "tutor.cli", " fix ", "/tmp"):
        assert word not in text, text


def test_not_fixed_and_no_damage(outcome):
    outcome.assert_not_fixed_and_no_damage()
