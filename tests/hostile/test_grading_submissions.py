"""A class's hand-ins cannot pass one learner's work off as another's, nor run unconfined by accident.

``tutor grade --fixes DIR`` grades only regular files that really lie in each learner's folder: a
symbolic link (a file, or a whole learner folder, pointing at a classmate's) and a file with a second
hard link are refused, each named in one sentence on stderr and in its gradebook row, and never run.
Byte-identical hand-ins of two learners are graded each and flagged (``same_as`` names the others).
A Gradescope ``answers.*`` file that is a link is refused the same way, before anything is read or run.
With ``TUTOR_CONFINE=off`` every grading command refuses (exit 2, one sentence) unless
``--allow-unconfined`` is given, before anything is read, run or written.

The runner here is a stand-in that records every run, so "never run" is counted, not assumed.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from attack import Said
from tutor.cli import COMMANDS
from tutor.cli.parser import build_parser
from tutor.cli.replies import UsageError
from tutor.instructor import gradebook
from tutor.sandbox.protocol import Answer, SideResult
from tutor.sandbox.runner import grade

#: A repair that writes into the grader's home: it must never run unconfined.
OWNS_HOME = "import os\nopen(os.path.expanduser('~/owned'), 'w')\n"
#: head-split: clean observes a, the fault b (any side but faulted observes the clean value here).
OBSERVED = {"clean": "a", "faulted": "b"}


class Recording:
    """A stand-in runner: every run is recorded with the text of the learner's side."""

    made: list = []

    def __init__(self, catalog, device="cpu"):
        self.runs, self.closed = [], False
        Recording.made.append(self)

    def run(self, exercise, prediction=None, on_progress=None, seed=0, sides=None, **kw):
        yours = [s for s in sides or () if s.name == "yours"]
        self.runs.append((exercise.id, seed, yours[0].files[0][1] if yours else None))
        out = {s.name: SideResult(status="ok", observed=OBSERVED["faulted" if s.name == "faulted" else "clean"],
                                  duration_s=0.01, confined=True) for s in sides or ()}
        return grade(exercise, Answer(job=1, torch="t", device="cpu", duration_s=0.02, sides=out), prediction, seed)

    def cancel(self):
        pass

    def close(self):
        self.closed = True


class FailsOn(Recording):
    """The stand-in runner, raising ``failure(message)`` after recording a hand-in that holds ``marker``."""

    marker: str
    failure: type[Exception]
    message: str

    def run(self, exercise, prediction=None, on_progress=None, seed=0, sides=None, **kw):
        result = super().run(exercise, prediction, on_progress, seed, sides, **kw)
        if self.marker in (self.runs[-1][2] or ""):
            raise self.failure(self.message)
        return result


@pytest.fixture(autouse=True)
def _fresh():
    Recording.made = []


def grade_fixes(argv, runner=None):
    """Run the command ``argv`` with a stand-in runner (:class:`Recording`, or ``runner``'s class); its reply
    and what it said."""
    args = build_parser().parse_args(argv)
    made = runner or Recording
    args.runner_factory = lambda cat, dev: made(cat, dev)
    said = Said()
    return COMMANDS[args.command](args, said), said


def grade_head_split(tmp_path):
    """``tutor grade --fixes`` over ``tmp_path/fixes`` into ``tmp_path/o``, head-split alone, no hidden seeds."""
    return grade_fixes(["grade", "--fixes", str(tmp_path / "fixes"), "--out", str(tmp_path / "o"),
                        "--exercises", "head-split", "--hidden-seeds", "0"])


def hand_in(fixes: Path, learner: str, text: str) -> Path:
    """``learner``'s repair of head-split, ``text``, in their folder under ``fixes``."""
    (fixes / learner).mkdir(parents=True, exist_ok=True)
    path = fixes / learner / "head-split.py"
    path.write_text(text, encoding="utf-8")
    return path


def clean_head_split(catalog) -> str:
    from exercises.faults import source_root
    fault = catalog.fault_of(catalog.get("head-split"))
    return (source_root() / fault.file).read_text(encoding="utf-8")


def digest(path: Path) -> tuple:
    st = os.lstat(path)
    return hashlib.sha256(path.read_bytes()).hexdigest(), st.st_mode, st.st_mtime_ns, st.st_nlink


def test_a_symlinked_submission_is_refused_and_never_graded_as_the_other_learners_work(tmp_path, catalog):
    fixes = tmp_path / "fixes"
    mine = hand_in(fixes, "learner-a", clean_head_split(catalog))
    (fixes / "learner-b").mkdir()
    (fixes / "learner-c").symlink_to(fixes / "learner-a")  # a whole folder that is someone else's
    before = digest(mine)
    (fixes / "learner-b" / "head-split.py").symlink_to("../learner-a/head-split.py")
    reply, said = grade_head_split(tmp_path)
    rows = {r["learner"]: r for r in gradebook.read_rows(tmp_path / "o")}
    assert rows["learner-a"]["status"] == "pass" and rows["learner-a"]["confined"] is True
    for who in ("learner-b", "learner-c"):
        assert rows[who]["status"] == "unreadable" and rows[who]["score"] == 0
        assert "is a symbolic link" in rows[who]["reason"] and rows[who]["refused"]
        assert any(n.startswith(f"{who}: ") and "symbolic link" in n for n in said.notices)
    assert len(Recording.made[0].runs) == 1  # only learner-a's own file ran
    results = json.loads((tmp_path / "o" / "results.json").read_text())
    by = {e["extra_data"]["learner"]: e for e in results["learners"]}
    assert by["learner-b"]["score"] == 0 and "symbolic link" in by["learner-b"]["tests"][0]["output"]
    assert results["confined"] is True and by["learner-a"]["tests"][0]["extra_data"]["confined"] is True
    assert digest(mine) == before


def test_a_hard_linked_submission_is_refused_for_both_names(tmp_path, catalog):
    fixes = tmp_path / "fixes"
    theirs = hand_in(fixes, "learner-a", clean_head_split(catalog))
    (fixes / "learner-b").mkdir()
    os.link(theirs, fixes / "learner-b" / "head-split.py")
    outside = tmp_path / "elsewhere.py"
    outside.write_text(clean_head_split(catalog), encoding="utf-8")
    (fixes / "learner-d").mkdir()
    os.link(outside, fixes / "learner-d" / "head-split.py")  # a second name for a file outside DIR
    reply, said = grade_head_split(tmp_path)
    rows = {r["learner"]: r for r in reply.data["rows"]}
    assert {r["status"] for r in rows.values()} == {"unreadable"}
    assert all("hard links" in r["reason"] for r in rows.values())
    assert Recording.made[0].runs == []
    assert len([n for n in said.notices if "hard links" in n]) == 3
    assert reply.code == 0  # refused rows are results, not a failed grading


def test_identical_repairs_of_two_learners_are_graded_each_and_flagged(tmp_path, catalog):
    text = clean_head_split(catalog)
    for who in ("ada", "bob", "cy"):
        hand_in(tmp_path / "fixes", who, text if who != "cy" else text + "# mine\n")
    reply, _ = grade_head_split(tmp_path)
    rows = {r["learner"]: r for r in reply.data["rows"]}
    assert (rows["ada"]["same_as"], rows["bob"]["same_as"], rows["cy"]["same_as"]) == (["bob"], ["ada"], [])
    import csv
    with open(tmp_path / "o" / "gradebook.csv", newline="", encoding="utf-8") as fh:
        book = {r["learner"]: r for r in csv.DictReader(fh)}
    assert (book["ada"]["same_as"], book["cy"]["same_as"]) == ("bob", "")


def test_a_gradescope_repair_that_is_a_symlink_is_refused(tmp_path, catalog):
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "source").mkdir()
    secret = root / "source" / "head-split.py"
    secret.write_text(clean_head_split(catalog), encoding="utf-8")
    (root / "submission" / "head-split.py").symlink_to(secret)
    (root / "source" / "assignment.toml").write_text('exercises = ["head-split"]\n')
    reply, _ = grade_fixes(["gradescope", "--root", str(root)])
    result = json.loads((root / "results" / "results.json").read_text())
    assert result["score"] == 0 and "symbolic link" in result["tests"][0]["output"]
    assert Recording.made[0].runs == []


def test_what_a_graded_side_could_not_do_is_a_notice_naming_the_learner(tmp_path, catalog):
    left = "left its tree, which could not be removed: /tmp/yours-x/engine (Operation not permitted)"

    class Leaving(Recording):
        def run(self, *args, **kwargs):
            result = super().run(*args, **kwargs)
            result.refused["yours"] = [left]
            return result

    hand_in(tmp_path / "fixes", "ada", clean_head_split(catalog))
    _, said = grade_fixes(["grade", "--fixes", str(tmp_path / "fixes"), "--out", str(tmp_path / "o"),
                           "--exercises", "head-split", "--hidden-seeds", "0"], runner=Leaving)
    assert f"ada: the yours side {left}" in said.notices


@pytest.mark.parametrize("how", ["symlink", "hard link"])
def test_a_gradescope_answers_file_that_is_a_link_is_refused_and_never_read(how, tmp_path, catalog):
    """``answers.*`` are read as repairs are (``fixes.read_file``): a link to the instructor's key (or to a
    classmate's answers) is one sentence in results.json, score 0, and nothing is run or read through it."""
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "source").mkdir()
    key = root / "source" / "key.toml"
    key.write_text('head-split = "b"\n')  # the instructor's answers
    (root / "source" / "assignment.toml").write_text('exercises = ["head-split"]\n')
    answers = root / "submission" / "answers.toml"
    answers.symlink_to(key) if how == "symlink" else os.link(key, answers)
    before = digest(key)
    reply, _ = grade_fixes(["gradescope", "--root", str(root)])
    result = json.loads((root / "results" / "results.json").read_text())
    said = "is a symbolic link" if how == "symlink" else "has 2 hard links"
    assert reply.code == 2 and said in reply.data["error"] and "submission/answers.toml" in reply.data["error"]
    assert result["score"] == 0 and said in result["output"]
    assert Recording.made == []  # refused before any runner was made
    assert digest(key) == before


@pytest.mark.parametrize("argv", [["grade", "--fixes", "{fixes}", "--out", "{out}"],
                                  ["grade", "--answers", "{answers}", "--out", "{out}"],
                                  ["gradescope", "--root", "{root}", "--results", "{out}/results.json"]])
def test_confinement_turned_off_refuses_every_grading_without_allow_unconfined(argv, tmp_path, catalog,
                                                                              monkeypatch):
    hand_in(tmp_path / "fixes", "ada", OWNS_HOME)
    answers = tmp_path / "a.csv"
    answers.write_text("learner,exercise,answer\nada,head-split,b\n")
    root = tmp_path / "ag"
    (root / "submission").mkdir(parents=True)
    (root / "submission" / "answers.toml").write_text('head-split = "b"\n')
    (root / "source").mkdir()
    (root / "source" / "assignment.toml").write_text('exercises = ["head-split"]\n')
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TUTOR_CONFINE", "off")
    words = [w.format(fixes=tmp_path / "fixes", answers=answers, root=root, out=tmp_path / "out") for w in argv]
    if words[0] == "gradescope":
        reply, _ = grade_fixes(words)
        assert reply.code == 2 and "--allow-unconfined" in reply.data["error"]
        assert json.loads((tmp_path / "out" / "results.json").read_text())["score"] == 0  # the learner is told
    else:
        with pytest.raises(UsageError, match=r"TUTOR_CONFINE=off.*--allow-unconfined"):
            grade_fixes(words)
        assert not (tmp_path / "out").exists()
    assert Recording.made == []  # no runner was even made
    assert list(home.iterdir()) == []
    reply, _ = grade_fixes(words + ["--allow-unconfined"])
    assert reply.code == 0 and len(Recording.made) == 1


def test_the_command_line_refuses_in_one_sentence_with_exit_2_and_writes_nothing(tmp_path):
    hand_in(tmp_path / "fixes", "ada", OWNS_HOME)
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "TUTOR_CONFINE": "off", "HOME": str(home)}
    done = subprocess.run([sys.executable, "-m", "tutor.cli", "grade", "--fixes", str(tmp_path / "fixes"), "--out",
                           str(tmp_path / "out"), "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2
    error = json.loads(done.stdout)["error"]
    assert "TUTOR_CONFINE=off" in error and "--allow-unconfined" in error and error.count(". ") == 0
    assert not (tmp_path / "out").exists() and list(home.iterdir()) == []


def test_a_machine_that_cannot_confine_refuses_the_grading_with_exit_2(tmp_path, catalog):
    from tutor.sandbox.runner import UnconfinedError, unconfined_sentence

    class Refusing(Recording):
        def run(self, *a, **kw):
            raise UnconfinedError(unconfined_sentence("no Landlock on this kernel"))

    answers = tmp_path / "a.csv"
    answers.write_text("learner,exercise,answer\nada,head-split,b\n")
    for argv in (["grade", "--answers", str(answers), "--out", str(tmp_path / "o")],
                 ["grade", "--fixes", str(tmp_path / "fixes"), "--out", str(tmp_path / "o2")]):
        hand_in(tmp_path / "fixes", "ada", clean_head_split(catalog))
        with pytest.raises(UsageError, match="--allow-unconfined"):
            grade_fixes(argv, runner=Refusing)
