"""The tutor as people install it: a wheel in a fresh venv, run from a folder of one's own.

One venv for the whole file (tests/installed.py: the wheel of this tree, the CPU
torch, the wheel's dependencies), outside the checkout and outside /tmp. Every
command runs from a fresh folder with a fresh HOME and none of this session's
variables, as a learner or an instructor would run it: each mode that runs a
check (run, fix, break, check, grade, gradescope, audit) must work there, its
progress must land in the user data folder under that HOME, and nothing may be
written into the venv's site-packages. As root, the same for an ordinary user.

All of it is in this one file, so that pytest-xdist (``--dist loadfile``)
builds the venv once.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path

import pytest

from installed import NOBODY, installed, listing, site_packages, wheel  # noqa: F401  (fixtures)
from test_grade_batch import autograder, subject

ZOO = Path(__file__).resolve().parent / "zoo"


@pytest.fixture(scope="module")
def learner(installed):
    """Whoever runs the tests (root on CI), with a HOME and a folder of their own."""
    return installed.person("learner")


@pytest.fixture(scope="module")
def ordinary(installed):
    """nobody (uid 65534), with a HOME they own: only where the tests run as root."""
    if os.geteuid() != 0:
        pytest.skip("the tests do not run as root, so they cannot run the tutor as another user")
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed: it runs the tutor as another user")
    if not installed.everyone:
        pytest.skip("no Python of this version lies where an ordinary user can run it")
    return installed.person("nobody", NOBODY)


@pytest.fixture(autouse=True)
def site_packages_untouched(installed):
    """After each test: the venv's site-packages is file for file as pip left it."""
    yield
    now = listing(site_packages(installed.venv))
    changed = sorted(name for name in now.keys() | installed.files.keys()
                     if now.get(name) != installed.files.get(name))
    assert not changed, f"written into site-packages: {changed[:10]}"


def saved_in_data_folder(person, reply):
    """The attempt was saved in the person's user data folder: return the progress file."""
    saved = Path(reply["saved_to"])
    assert saved.parent == person.data / "progress", reply["saved_to"]
    return saved


def every_fault_shows(person, catalog, set_id):
    data = person.reply("check", "--set", set_id)
    expected = sorted(ex.id for ex in catalog.get_set(set_id).exercises)
    assert sorted(r["id"] for r in data["results"]) == expected
    assert [r["id"] for r in data["results"] if not (r["ok"] and r["differs"])] == []
    assert data["faults_shown"] == data["faults"] == len(expected)


def test_list_shows_every_exercise_of_the_catalog(learner, catalog):
    data = learner.reply("list")
    assert [e["id"] for s in data["sets"] for e in s["exercises"]] == [ex.id for ex in catalog.exercises]


def test_run_grades_a_right_and_a_wrong_prediction_and_saves_both(learner):
    right = learner.reply("run", "broadcast-loss", "--predict", "(3, 3)")
    assert right["refused"] == {}  # nothing tried outside what a side may read: site-packages listed, not read
    assert (right["status"], right["correct"], right["observed_text"], right["confined"]) == ("pass", True, "(3, 3)",
                                                                                               True)
    wrong = learner.reply("run", "broadcast-loss", "--predict", "(3,)", code=1)
    assert (wrong["status"], wrong["correct"], wrong["observed_text"]) == ("fail", False, "(3, 3)")
    progress = saved_in_data_folder(learner, right)
    assert wrong["saved_to"] == right["saved_to"]
    assert progress.read_text(encoding="utf-8").count('prediction = "(3') == 2


def test_fix_grades_the_clean_file_fixed_and_the_faulted_file_not_fixed(learner, catalog):
    clean = learner.write("clean/model.py", subject(catalog, "head-split"))
    faulted = learner.write("faulted/model.py", subject(catalog, "head-split", fixed=False))
    fixed = learner.reply("fix", "head-split", "--file", str(clean))
    assert (fixed["fixed"], fixed["verdict"]["status"], fixed["refused"]) == (True, "fixed", {})
    not_fixed = learner.reply("fix", "head-split", "--file", str(faulted), code=1)
    assert (not_fixed["fixed"], not_fixed["verdict"]["status"]) == (False, "not fixed")
    saved_in_data_folder(learner, not_fixed)
    copy = Path(not_fixed["working_copy"])  # kept in the progress folder: the file last run
    assert copy.is_relative_to(learner.data / "progress" / "work"), not_fixed["working_copy"]
    assert copy.read_text(encoding="utf-8") == faulted.read_text(encoding="utf-8")


def test_break_measures_a_fault_of_ones_own(learner, catalog):
    mine = learner.write("mine/losses.py", subject(catalog, "broadcast-loss", fixed=False))
    held = learner.reply("break", "broadcast-loss", "--file", str(mine), "--predict", "(3, 3)")
    assert (held["verdict"]["status"], held["yours"]["observed_text"], held["prediction_correct"]) == (
        "changed", "(3, 3)", True)
    assert held["refused"] == {}
    saved_in_data_folder(learner, held)


def test_check_shows_every_fault_of_a_set(learner, catalog):
    every_fault_shows(learner, catalog, "shapes")


def test_grade_answers_grades_each_row(learner):
    answers = learner.write("class/answers.csv", 'learner,exercise,answer\nada,broadcast-loss,"(3, 3)"\n'
                                                 'bob,broadcast-loss,"(3,)"\ncy,broadcast-loss,banana\n')
    out = answers.parent / "graded"
    learner.reply("grade", "--answers", str(answers), "--exercises", "broadcast-loss", "--out", str(out))
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as f:
        book = {row["learner"]: row for row in csv.DictReader(f)}
    assert {name: row["status"] for name, row in book.items()} == {"ada": "pass", "bob": "fail", "cy": "unreadable"}
    assert (book["ada"]["confined"], book["bob"]["confined"]) == ("yes", "yes")  # the unreadable row never ran
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert {r["extra_data"]["learner"]: r["score"] for r in results["learners"]} == {"ada": 1.0, "bob": 0.0,
                                                                                     "cy": 0.0}


def test_grade_fixes_grades_a_repair_fixed_and_a_faulted_file_not(learner, catalog):
    fixes = learner.cwd / "fixes"
    learner.write("fixes/ada/broadcast-loss.py", subject(catalog, "broadcast-loss"))
    learner.write("fixes/bob/broadcast-loss.py", subject(catalog, "broadcast-loss", fixed=False))
    out = learner.cwd / "fixes-graded"
    learner.reply("grade", "--fixes", str(fixes), "--exercises", "broadcast-loss", "--out", str(out))
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as f:
        book = {row["learner"]: row for row in csv.DictReader(f)}
    assert {name: (row["mode"], row["status"], row["verdict"]) for name, row in book.items()} == {
        "ada": ("fix", "pass", "fixed"), "bob": ("fix", "fail", "not fixed")}


def test_gradescope_writes_a_graded_results_json(learner, catalog):
    root = autograder(learner.cwd / "gradescope",
                      {"answers.toml": 'head-split = "b"\n', "broadcast-loss.py": subject(catalog, "broadcast-loss")},
                      '[[exercises]]\nid = "head-split"\npoints = 2\n[[exercises]]\nid = "broadcast-loss"\n')
    learner.reply("gradescope", "--root", str(root))
    result = json.loads((root / "results" / "results.json").read_text(encoding="utf-8"))
    assert (result["score"], [(t["extra_data"]["exercise"], t["score"], t["status"]) for t in result["tests"]]) == (
        3.0, [("head-split", 2.0, "passed"), ("broadcast-loss", 1.0, "passed")])


def test_audit_holds_on_the_vendored_nanogpt(learner):
    shutil.copytree(ZOO / "nanogpt", learner.cwd / "zoo" / "nanogpt", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ZOO / "subjects.py", learner.cwd / "zoo")
    report = learner.reply("audit", "zoo/subjects.py:nanogpt")
    assert (report["status"], report["first_failure"]) == ("ok", None)
    # two conventions it departs from, each a warning with its reason: its loss rejects targets padded with
    # -100 (it ignores -1), and its optimizer decays the embedding tables; no link fails or skips
    departed = {link["name"]: link for link in report["links"] if link["status"] != "ok"}
    assert {name: link["status"] for name, link in departed.items()} == {"INIT": "warn", "OWNERSHIP": "warn"}
    assert report["warned"] == ["INIT", "OWNERSHIP"] and all(link["warnings"] for link in departed.values())


def test_an_ordinary_user_runs_and_saves_in_their_own_data_folder(ordinary):
    right = ordinary.reply("run", "broadcast-loss", "--predict", "(3, 3)")
    assert (right["status"], right["correct"], right["confined"]) == ("pass", True, True)
    assert saved_in_data_folder(ordinary, right).stat().st_uid == NOBODY


def test_an_ordinary_user_sees_every_fault_of_a_set(ordinary, catalog):
    every_fault_shows(ordinary, catalog, "shapes")


def test_an_ordinary_users_repair_is_fixed(ordinary, catalog):
    clean = ordinary.write("clean/model.py", subject(catalog, "head-split"))
    fixed = ordinary.reply("fix", "head-split", "--file", str(clean), "--no-save")
    assert (fixed["fixed"], fixed["verdict"]["status"]) == (True, "fixed")
