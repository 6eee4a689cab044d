"""Grading runs the learner's code the way it says it does: ``tutor grade --fixes`` and ``tutor gradescope``
make the real :class:`tutor.sandbox.runner.Runner` with ``--timeout-scale`` and ``allow_unconfined=False``;
where bubblewrap is missing ``tutor grade --fixes`` refuses in one sentence (exit 2) and runs nothing; and
the universal self-repair of ``tutor fix`` (``test_each_side_alone``), handed in to ``tutor grade --fixes``,
is not fixed at grading's hidden seeds and does no damage."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from attack import Said, run_grade_fixes
from test_each_side_alone import ATTACK as SELF_REPAIR
from tutor.cli import COMMANDS
from tutor.cli.parser import build_parser
from tutor.sandbox import bwrap
from tutor.sandbox.runner import Runner, Worker, WorkerError

#: A repair that writes into the grader's home: it must never run unconfined.
OWNS_HOME = "import os\nopen(os.path.expanduser('~/owned'), 'w')\n"


@pytest.mark.parametrize("command", ["grade", "gradescope"])
def test_grading_makes_the_real_runner_with_its_timeout_scale_and_never_unconfined(command, tmp_path, monkeypatch):
    """The command's own factory (no ``runner_factory`` given) makes the real Runner; its worker's start is
    the one thing stopped here, so the options are read off the runner the grading really made."""
    made: list[Runner] = []
    real_init = Runner.__init__

    def init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        made.append(self)

    def no_start(self, *args, **kwargs):
        raise WorkerError("the test stops the worker before it starts")

    monkeypatch.setattr(Runner, "__init__", init)
    monkeypatch.setattr(Worker, "start", no_start)
    monkeypatch.delenv("TUTOR_CONFINE", raising=False)
    monkeypatch.delenv("TUTOR_TIMEOUT_SCALE", raising=False)
    if command == "grade":
        (tmp_path / "fixes" / "ada").mkdir(parents=True)
        (tmp_path / "fixes" / "ada" / "head-split.py").write_text(OWNS_HOME)
        argv = ["grade", "--fixes", str(tmp_path / "fixes"), "--out", str(tmp_path / "o"), "--hidden-seeds", "0"]
    else:
        (tmp_path / "ag" / "submission").mkdir(parents=True)
        (tmp_path / "ag" / "submission" / "head-split.py").write_text(OWNS_HOME)
        (tmp_path / "ag" / "source").mkdir()
        (tmp_path / "ag" / "source" / "assignment.toml").write_text('exercises = ["head-split"]\n')
        argv = ["gradescope", "--root", str(tmp_path / "ag"), "--hidden-seeds", "0"]
    args = build_parser().parse_args([*argv, "--timeout-scale", "3", "--device", "cpu"])
    assert getattr(args, "runner_factory", None) is None  # the command's own factory, not the tests' stand-in
    try:
        COMMANDS[args.command](args, Said())
    except Exception as exc:  # grade --fixes: the stopped worker is a check that could not run
        assert "the test stops the worker" in str(exc), exc
    assert len(made) == 1 and type(made[0]) is Runner
    assert made[0].timeout_scale == 3.0 and made[0].allow_unconfined is False


def test_without_bubblewrap_grade_fixes_refuses_in_one_sentence_with_exit_2(tmp_path):
    (tmp_path / "fixes" / "ada").mkdir(parents=True)
    (tmp_path / "fixes" / "ada" / "head-split.py").write_text(OWNS_HOME)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TUTOR_") or k == "TUTOR_CACHE_DIR"}
    env.update({bwrap.BWRAP_ENV: str(tmp_path / "no-bwrap-here"), "HOME": str(home)})
    done = subprocess.run([sys.executable, "-m", "tutor.cli", "grade", "--fixes", str(tmp_path / "fixes"), "--out",
                           str(tmp_path / "out"), "--hidden-seeds", "0", "--json"], capture_output=True, text=True,
                          env=env, stdin=subprocess.DEVNULL, timeout=600)
    assert done.returncode == 2, done.stdout + done.stderr
    error = json.loads(done.stdout)["error"]
    assert "no bubblewrap (bwrap) was found" in error and "--allow-unconfined" in error
    assert error.count(". ") == 0 and "\n" not in error  # one sentence
    assert list(home.iterdir()) == []  # the repair never ran
    rows = tmp_path / "out" / "rows.jsonl"
    assert not rows.exists() or rows.read_text().strip() == ""  # nothing graded


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return run_grade_fixes(tmp_path_factory.mktemp("grade-self-repair"), SELF_REPAIR)


def test_the_self_repair_handed_in_for_grading_is_not_fixed_at_hidden_seeds_and_does_no_damage(graded):
    assert graded.returncode == 0, graded.text[-3000:]
    assert graded.data["status"] == "fail", graded.data
    found, sides = eval(graded.saw)  # the attack's own list, printed by repr
    assert set(found) <= {"frame:Request", "frame:SideSpec", "heap:Request", "heap:SideSpec"}, found
    assert sides == 0  # no request in the learner's side names a side, its own or another
    graded.assert_not_fixed_and_no_damage()
