"""As root, the sandbox is not root outside: the runner starts bwrap as uid and gid 65534 (the folders
nobody cannot enter, a Python under /root, covered in that start's own mount namespace), so the worker,
its fork server and every side are uid 65534 on this machine, and a file they make is nobody's.

(Before, bwrap started as root mapped the sandbox's uid to 0 outside: no capabilities, but root's uid.)"""

import os

import pytest

from tutor.sandbox import bwrap, namespaces

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="only a tutor run as root has a uid to give up")


def _uids(pid: int) -> list[int]:
    with open(f"/proc/{pid}/status") as fh:
        line = next(line for line in fh if line.startswith("Uid:"))
    return [int(u) for u in line.split()[1:]]


@ROOT_ONLY
def test_the_sandbox_runs_as_nobody_outside(runner):
    wall = bwrap.available()
    if wall.user is None and (wall.note or not wall.path):
        pytest.skip(wall.note or wall.why)  # the probe said why this machine keeps root outside
    runner.worker.start()
    outer = runner.worker._proc.pid  # bwrap, as the runner started it
    pids = [outer, *namespaces.descendants(outer)]  # bwrap's init, the worker, its fork server
    assert len(pids) >= 4, pids
    assert {pid: _uids(pid) for pid in pids} == {pid: [bwrap.SANDBOX_ID] * 4 for pid in pids}


@ROOT_ONLY
def test_where_nobody_cannot_reach_the_python_the_probe_says_so(monkeypatch):
    if not bwrap.find():
        pytest.skip("no bwrap here")
    real = bwrap._try

    def refused_for_nobody(path, user):
        if user is not None:
            raise OSError("nobody cannot enter it")  # as the start's preexec step would fail
        return real(path, user)

    monkeypatch.setattr(bwrap, "_try", refused_for_nobody)
    bwrap._tried.cache_clear()
    try:
        wall = bwrap.available()
    finally:
        bwrap._tried.cache_clear()
    assert wall.path and wall.user is None
    assert "uid 65534 cannot reach the Python installation" in wall.note
