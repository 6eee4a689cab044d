"""A grader ended by a signal mid-batch leaves no cgroup folder for long: SIGTERM and SIGHUP (its terminal or
ssh session gone) end ``tutor grade`` as Ctrl-C does, so its own cleanup removes its worker's cgroups; after
SIGKILL, which no cleanup survives, the next start removes the folders the killed grader left and says so on
stderr, naming each.

The cgroups are made in a folder of this test's own (``TUTOR_CGROUPS`` names it for the tutors it starts),
so no other tutor on the machine sweeps them first. Skipped where this process may make no cgroup.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time

import pytest

from attack import CLEAN
from tutor.sandbox import bwrap, namespaces

EXERCISE = "broadcast-loss"
#: A hand-in that holds its side (and so its cgroup) until its time limit stops it: a kill lands mid-check.
SLEEPER = CLEAN + "\nimport time\ntime.sleep(600)\n"


@pytest.fixture
def cgroups():
    """controller -> a fresh cgroup folder of this test's, in which the tutors it starts make their workers'."""
    if not bwrap.available().path:
        pytest.skip("bubblewrap is not available: grading refuses to run unconfined")
    made = namespaces.delegate(f"tutor-test-{secrets.token_hex(4)}")
    if "pids" not in made:
        namespaces.remove_delegated(made)
        pytest.skip("no pids cgroup can be made here (no cgroup v1 pids hierarchy this process may write, nor a "
                    "delegated v2 one), so a worker has no cgroup folder to leave behind")
    yield made
    for base in made.values():  # whatever a failed test left, innermost first
        for name in os.listdir(base):
            if os.path.isdir(os.path.join(base, name)):
                namespaces.remove_delegated({"left": os.path.join(base, name)}, patience_s=1.0)
    namespaces.remove_delegated(made)


def workers_cgroups(made: dict[str, str], pid: int | None = None) -> list[str]:
    """The worker cgroup folders in this test's folders (of the tutor ``pid`` where given)."""
    prefix = namespaces.WORKER_PREFIX + (f"{pid}-" if pid is not None else "")
    return sorted(os.path.join(base, n) for base in made.values() for n in os.listdir(base) if n.startswith(prefix))


def grade(tmp_path, made: dict[str, str], learners: dict[str, str], out: str) -> subprocess.Popen:
    fixes = tmp_path / f"fixes-{out}"
    for who, text in learners.items():
        (fixes / who).mkdir(parents=True)
        (fixes / who / f"{EXERCISE}.py").write_text(text, encoding="utf-8")
    env = {**os.environ, namespaces.CGROUPS_ENV: namespaces.delegation_env(made)}
    return subprocess.Popen([sys.executable, "-m", "tutor.cli", "grade", "--fixes", str(fixes), "--out",
                             str(tmp_path / out), "--exercises", EXERCISE, "--device", "cpu", "--json"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)


def wait_for_a_side(made: dict[str, str], proc: subprocess.Popen) -> list[str]:
    """Wait until the grading's worker has a side's cgroup (a check is running); its worker's folders."""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and proc.poll() is None:
        folders = workers_cgroups(made, proc.pid)
        if any(os.path.isdir(os.path.join(f, n)) for f in folders for n in os.listdir(f)):
            return folders
        time.sleep(0.02)
    proc.kill()
    pytest.fail(f"the grading ran no side in a cgroup: {proc.communicate()[1][-2000:]}")


def empty(folders: list[str]) -> bool:
    """Whether no process is left in these cgroups or the ones inside them."""
    for folder in folders:
        for inner, _, _ in os.walk(folder):
            try:
                with open(os.path.join(inner, "cgroup.procs")) as fh:
                    if fh.read().strip():
                        return False
            except FileNotFoundError:
                continue
    return True


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_grader_ended_by_sigterm_or_sighup_removes_its_cgroups_itself(sig, tmp_path, cgroups):
    proc = grade(tmp_path, cgroups, {"ada": SLEEPER, "bob": CLEAN}, "o")
    assert wait_for_a_side(cgroups, proc)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode != 0, err[-2000:]
    assert "Traceback" not in err, err[-2000:]
    assert workers_cgroups(cgroups, proc.pid) == [], err[-2000:]  # its own exit removed them


def test_after_a_grader_killed_mid_batch_the_next_start_removes_its_cgroups_and_says_so(tmp_path, cgroups):
    killed = grade(tmp_path, cgroups, {"ada": SLEEPER, "bob": CLEAN}, "o")
    left = wait_for_a_side(cgroups, killed)
    killed.kill()
    killed.communicate(timeout=120)
    deadline = time.monotonic() + 120  # the worker and its sides end with their tutor, a moment after it
    while not empty(left) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert empty(left)
    assert workers_cgroups(cgroups, killed.pid) == left  # SIGKILL leaves them: no cleanup of its ran

    following = grade(tmp_path, cgroups, {"cy": CLEAN}, "o2")
    out, err = following.communicate(timeout=600)
    assert following.returncode in (0, 1), err[-2000:]
    said = [line for line in err.splitlines() if "a killed tutor left behind" in line]
    assert len(said) == 1 and said[0].startswith(f"tutor: removed {len(left)} cgroup folder"), err[-2000:]
    assert all(folder in said[0] for folder in left), (said, left)
    assert workers_cgroups(cgroups) == []  # the killed grader's gone, and the next one's own at its exit
