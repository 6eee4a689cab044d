"""The tutor run by an unprivileged user: the same sandbox (bwrap as that user, its own user namespace),
a side that sees only its own processes, an attack that is not fixed and does no damage, and a real repair
that is fixed. Run as root, the test starts the tutor as uid 65534 (the Python installation made
reachable for it as the runner does for bwrap); run as another user, it runs the tutor as that user."""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from attack import CLEAN, run_fix
from test_proc_recon import ATTACK
from tutor.sandbox import bwrap

NOBODY = 65534


@pytest.fixture(scope="module")
def place():
    if os.geteuid() == 0 and bwrap.available().user is None:
        pytest.skip("uid 65534 cannot reach the Python installation or the tutor's source here")
    folder = Path(tempfile.mkdtemp(prefix="hostile-nonroot-"))  # not under pytest's root-only temp folder
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _user():
    return NOBODY if os.geteuid() == 0 else None


def _root(place: Path, name: str) -> Path:
    root = place / name
    root.mkdir()
    return root


def test_an_attack_as_an_unprivileged_user_sees_only_its_side_and_does_no_damage(place):
    outcome = run_fix(_root(place, "attack"), ATTACK, user=_user())
    others, pid, ppid = eval(outcome.saw)
    assert others == [("1", "tutor-side-init")], others
    assert (pid, ppid) == (2, 0)
    outcome.assert_not_fixed_and_no_damage()


def test_a_real_repair_as_an_unprivileged_user_is_fixed(place):
    outcome = run_fix(_root(place, "repair"), "", user=_user(), text=CLEAN)
    assert outcome.data.get("fixed") is True and outcome.data.get("confined") is True, outcome.text[-3000:]
    assert outcome.leftovers == [] and outcome.temp_left == [] and outcome.witness.changed() == {}
