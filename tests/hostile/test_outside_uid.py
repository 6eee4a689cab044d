"""As root, the sandbox is not root outside: the runner starts bwrap as uid and gid 65534 (the folders
nobody cannot enter, a Python under /root, covered in that start's own mount namespace), so the worker,
its fork server and every side are uid 65534 on this machine, and a file they make is nobody's.

(Before, bwrap started as root mapped the sandbox's uid to 0 outside: no capabilities, but root's uid.)"""

import os

import pytest

from tutor.sandbox import bwrap, namespaces

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="only a tutor run as root has a uid to give up")


def _uids(pid: int) -> list[int]:
    with open(f"/proc/{pid}/status") as fh:
        line = next(line for line in fh if line.startswith("Uid:"))
    return [int(u) for u in line.split()[1:]]


def test_the_sandbox_runs_as_nobody_outside(runner):
    wall = bwrap.available()
    if wall.user is None and (wall.note or not wall.path):
        pytest.skip(wall.note or wall.why)  # the probe said why this machine keeps root outside
    runner.worker.start()
    outer = runner.worker._proc.pid  # bwrap, as the runner started it
    pids = [outer, *namespaces.descendants(outer)]  # bwrap's init, the worker, its fork server
    assert len(pids) >= 4, pids
    assert {pid: _uids(pid) for pid in pids} == {pid: [bwrap.SANDBOX_ID] * 4 for pid in pids}
