"""``tutor report DIR`` on a fixture class whose counts are derived by hand below; it reads, never changes.

The class (head-split is a choice graded b; broadcast-loss a shape graded (3, 3)):

=======  ================================  =====================================  ==========
learner  head-split attempts               broadcast-loss attempts                other
=======  ================================  =====================================  ==========
ada      b ✓ (90 %)                        (3,) ✗ (80 %), (3, 3) ✓ (70 %)         note on head-split
bob      a ✗, a ✗, b ✓                     3 ✗ (read as (3,))
Cyd      a ✗, c ✗                          —                                      note on head-split
dan      b ✓ (confidence 1.0)              —
eve      timeout only (not a prediction)   —
fay      damaged file                      named, not counted
gus      kept aside earlier                named, not counted
=======  ================================  =====================================  ==========

head-split: tried ada, bob, Cyd, dan = 4; first try ada, dan = 2; ever ada, bob, dan = 3;
attempts 1, 3, 2, 1 → median 1.5; to solve 1 (ada), 3 (bob), 1 (dan) → median 1;
wrong: a by bob (2 attempts) and Cyd (1) = 2 learners, 3 attempts; c by Cyd = 1 learner;
eve's timeout is one other attempt; notes: ada, Cyd.
broadcast-loss: tried ada, bob = 2; first try 0; ever ada = 1; attempts 2, 1 → median 1.5;
to solve 2 → 2; wrong (3,) by ada and bob (3 is (3,)) = 2 learners, 2 attempts.
Calibration: ada 0.9 ✓, 0.8 ✗, 0.7 ✓ → mean 0.8, right 2/3, Brier (0.01 + 0.64 + 0.09) / 3;
dan 1.0 ✓ → mean 1, right 1, Brier 0.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys

import pytest
import tomli_w

from tutor.cli.replies import UsageError
from tutor.store.names import file_stem
from tutor.instructor.report import build_report, to_csv

DAMAGED = "format_version = 1\n[exercises.head-split\n"


def attempt(prediction, correct, confidence=None, status=None, minute=0):
    a = {"time": f"2026-11-29T10:{minute:02d}:00+00:00", "prediction": prediction, "observed": "b",
         "correct": correct, "status": status or ("pass" if correct else "fail"), "device": "cpu",
         "engine_hash": "abc123def456", "seed": 0}
    if confidence is not None:
        # saved as the TUI and `tutor run --confidence` save it: a whole percent up to 100 (the figures
        # below are written as fractions, which the report reads the same way)
        a["confidence"] = round(confidence * 100) if confidence <= 1 else confidence
    return a


def write(folder, learner, exercises, stem=None):
    data = {"format_version": 1, "learner": learner, "exercises": exercises}
    (folder / f"{stem or file_stem(learner)}.toml").write_text(tomli_w.dumps(data), encoding="utf-8")


@pytest.fixture()
def fixture_class(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    write(folder, "ada", {"head-split": {"note": "the reshape cuts time into head-sized blocks",
                                         "attempts": [attempt("b", True, 90)]},
                          "broadcast-loss": {"attempts": [attempt("(3,)", False, 80), attempt("(3, 3)", True, 70, minute=1)]}})
    write(folder, "bob", {"head-split": {"attempts": [attempt("a", False), attempt("a", False, minute=1),
                                                      attempt("b", True, minute=2)]},
                          "broadcast-loss": {"attempts": [attempt("3", False)]}})
    write(folder, "Cyd", {"head-split": {"note": "heads see other positions", "attempts": [attempt("a", False),
                                                                                            attempt("c", False, minute=1)]}})
    write(folder, "dan", {"head-split": {"attempts": [attempt("b", True, 1.0)]}})
    write(folder, "eve", {"head-split": {"attempts": [attempt("b", False, status="timeout")]}})
    (folder / "fay.toml").write_text(DAMAGED)
    (folder / "gus.toml.corrupt-20261129-100000-000000").write_text("kept")
    return folder


def snapshot(folder):
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir())}


def test_the_fixture_class_counts_are_the_hand_derived_ones(fixture_class, catalog):
    before = snapshot(fixture_class)
    report = build_report(fixture_class, catalog, top=3)
    assert report.learners == 5  # ada, bob, Cyd, dan, eve; fay is damaged
    by_id = {e.id: e for e in report.exercises}
    assert [e.id for e in report.exercises] == ["broadcast-loss", "head-split"]  # the catalog's order
    hs = by_id["head-split"]
    assert (hs.tried, hs.solved_first, hs.ever_solved) == (4, 2, 3)
    assert (hs.median_attempts, hs.median_attempts_to_solve, hs.other_attempts) == (1.5, 1.0, 1)
    assert [w.to_dict() for w in hs.wrong_predictions] == [{"prediction": "a", "learners": 2, "attempts": 3},
                                                           {"prediction": "c", "learners": 1, "attempts": 1}]
    assert [n["learner"] for n in hs.notes] == ["ada", "Cyd"]
    bl = by_id["broadcast-loss"]
    assert (bl.tried, bl.solved_first, bl.ever_solved, bl.median_attempts, bl.median_attempts_to_solve) == \
        (2, 0, 1, 1.5, 2.0)
    assert [w.to_dict() for w in bl.wrong_predictions] == [{"prediction": "(3,)", "learners": 2, "attempts": 2}]
    cal = {c.learner: c for c in report.calibration}
    assert set(cal) == {"ada", "dan"}
    assert cal["ada"].predictions == 3
    assert cal["ada"].mean_confidence == pytest.approx(0.8)
    assert cal["ada"].accuracy == pytest.approx(2 / 3)
    assert cal["ada"].brier == pytest.approx((0.01 + 0.64 + 0.09) / 3)
    assert cal["ada"].overconfidence == pytest.approx(0.8 - 2 / 3)
    assert (cal["dan"].mean_confidence, cal["dan"].accuracy, cal["dan"].brier) == (1.0, 1.0, 0.0)
    assert [d["file"] for d in report.damaged] == [str(fixture_class / "fay.toml")]
    assert "not valid TOML" in report.damaged[0]["problem"]
    assert report.kept_aside == [str(fixture_class / "gus.toml.corrupt-20261129-100000-000000")]
    assert snapshot(fixture_class) == before  # read only: nothing moved, nothing rewritten


def test_top_keeps_only_the_most_common_wrong_predictions(fixture_class, catalog):
    hs = next(e for e in build_report(fixture_class, catalog, top=1).exercises if e.id == "head-split")
    assert [w.prediction for w in hs.wrong_predictions] == ["a"]


def test_without_a_catalog_predictions_are_compared_as_written(fixture_class):
    report = build_report(fixture_class, None)
    bl = next(e for e in report.exercises if e.id == "broadcast-loss")
    assert {w.prediction: w.learners for w in bl.wrong_predictions} == {"(3,)": 1, "3": 1}
    assert bl.title is None and bl.in_catalog is False


def test_a_missing_folder_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="there is no progress folder"):
        build_report(tmp_path / "typo")


def test_an_empty_folder_is_an_empty_report(tmp_path, catalog):
    report = build_report(tmp_path, catalog)
    assert (report.learners, report.exercises, report.damaged, report.kept_aside) == (0, [], [], [])


def test_a_file_from_an_earlier_tutor_beside_the_same_learner_is_named_not_counted(tmp_path, catalog):
    write(tmp_path, "ada", {"head-split": {"attempts": [attempt("b", True)]}})
    write(tmp_path, "Ada", {"head-split": {"attempts": [attempt("a", False)]}}, stem="Ada")
    report = build_report(tmp_path, catalog)
    assert report.learners == 1 and report.exercises[0].ever_solved == 1
    assert report.shadowed == [{"file": str(tmp_path / "Ada.toml"), "same_learner_as": str(tmp_path / "ada.toml")}]


def test_a_newer_tutors_file_is_counted_and_named_read_only(tmp_path, catalog):
    from tutor.store.migration import FORMAT_VERSION
    data = {"format_version": FORMAT_VERSION + 1, "learner": "ada", "exercises": {"head-split": {"attempts": [attempt("b", True)]}}}
    (tmp_path / "ada.toml").write_text(tomli_w.dumps(data))
    report = build_report(tmp_path, catalog)
    assert report.learners == 1 and report.read_only == [str(tmp_path / "ada.toml")]


def test_fix_mode_attempts_are_not_predictions(tmp_path, catalog):
    fixed = attempt("", True)
    fixed["mode"] = "fix"  # edit mode's attempts carry a mode; a prediction has none or "predict"
    predicted = attempt("a", False)
    predicted["mode"] = "predict"
    write(tmp_path, "ada", {"head-split": {"attempts": [fixed, predicted]}})
    hs = build_report(tmp_path, catalog).exercises[0]
    assert (hs.tried, hs.solved_first, hs.other_attempts) == (1, 0, 1)


def test_the_csv_has_one_row_per_exercise(fixture_class, catalog):
    rows = list(csv.DictReader(io.StringIO(to_csv(build_report(fixture_class, catalog)))))
    assert [r["exercise"] for r in rows] == ["broadcast-loss", "head-split"]
    hs = rows[1]
    assert (hs["tried"], hs["solved_first"], hs["ever_solved"], hs["median_attempts"], hs["notes"]) == \
        ("4", "2", "3", "1.5", "2")
    assert (hs["wrong_prediction_1"], hs["wrong_prediction_1_learners"]) == ("a", "2")
    assert (hs["wrong_prediction_2"], hs["wrong_prediction_2_learners"]) == ("c", "1")
    assert rows[0]["wrong_prediction_2"] == ""


# --- through the command line ----------------------------------------------------------------

def tutor(*args, columns: int = 120):
    return subprocess.run([sys.executable, "-m", "tutor.cli", *args], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, env=dict(os.environ, COLUMNS=str(columns)))


def test_report_json_names_the_damaged_file_and_exits_2(fixture_class):
    before = snapshot(fixture_class)
    proc = tutor("report", str(fixture_class), "--json")
    assert proc.returncode == 2, proc.stderr
    data = json.loads(proc.stdout)
    assert data["schema_version"] == 1 and data["exit_code"] == 2 and data["learner"] is None
    assert data["error"].startswith("1 progress file cannot be read and is not counted (fay.toml)")
    assert proc.stderr == f"tutor: {data['error']}\n"
    assert data["learner_count"] == 5 and data["kept_aside"] == [str(fixture_class / "gus.toml.corrupt-20261129-100000-000000")]
    hs = next(e for e in data["exercises"] if e["id"] == "head-split")
    assert (hs["tried"], hs["solved_first"], hs["ever_solved"], hs["note_count"]) == (4, 2, 3, 2)
    assert hs["notes"][0] == {"learner": "ada", "note": "the reshape cuts time into head-sized blocks"}
    assert {c["learner"]: c["brier"] for c in data["calibration"]} == {"ada": round(0.74 / 3, 4), "dan": 0.0}
    assert snapshot(fixture_class) == before


def test_report_rich_and_csv_name_every_file_not_counted(fixture_class):
    # the header and the files not counted name the class folder, as long as the temp root makes it
    # (pytest-xdist adds a folder per worker): a terminal wide enough that no line of theirs wraps
    proc = tutor("report", str(fixture_class), columns=400)
    assert proc.returncode == 2
    assert "5 learners, 2 exercises tried" in proc.stdout and "a ×2 · c ×1" in proc.stdout
    assert f"not counted, cannot be read: {fixture_class / 'fay.toml'}" in proc.stdout
    assert "gus.toml.corrupt-20261129-100000-000000" in proc.stdout
    assert "Calibration" in proc.stdout
    as_csv = tutor("report", str(fixture_class), "--csv")
    assert as_csv.returncode == 2 and as_csv.stdout.startswith("exercise,set,title,tried,")
    assert "fay.toml" in as_csv.stderr


def test_report_of_a_missing_folder_is_one_sentence():
    proc = tutor("report", "/no/such/class", "--json")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert json.loads(proc.stdout)["error"].startswith("there is no progress folder /no/such/class")


def test_report_never_imports_torch(fixture_class):
    code = ("import sys; from tutor.cli import main; main(['report', sys.argv[1], '--json']); "
            "print('torch' in sys.modules, file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code, str(fixture_class)], capture_output=True, text=True, timeout=60)
    assert proc.stderr.strip().splitlines()[-1] == "False"


# --- a prediction recorded as a guess shows as one -----------------------------------------------------

def test_a_guess_shows_in_the_class_report_its_csv_and_json_and_in_tutor_progress(tmp_path, catalog):
    """A guess is a confidence at the question's chance (g in the TUI, --confidence guess): the class report
    counts the exercise's guesses and each learner's, in its table, CSV and JSON; tutor progress marks the
    last answer "(a guess)"."""
    from rich.console import Console
    from tutor.cli.views import show_report
    from tutor.model.attempts import Attempt, ExerciseProgress, LearnerProgress
    from tutor.render import progress_table
    chance = catalog.get("head-split").kind.chance  # 1 in its number of choices
    write(tmp_path, "ada", {"head-split": {"attempts": [attempt("a", False, chance), attempt("b", True, 90, minute=1)]},
                            "broadcast-loss": {"attempts": [attempt("(3, 3)", True, 80)]}})
    write(tmp_path, "bob", {"head-split": {"attempts": [attempt("b", True, chance)]}})
    report = build_report(tmp_path, catalog)
    by_id = {e.id: e for e in report.exercises}
    assert (by_id["head-split"].guessed, by_id["broadcast-loss"].guessed) == (2, 0)
    assert {c.learner: c.guesses for c in report.calibration} == {"ada": 1, "bob": 1}
    data = report.to_dict()
    assert [e["guessed"] for e in data["exercises"]] == [0, 2] and [c["guesses"] for c in data["calibration"]] == [1, 1]
    rows = list(csv.DictReader(io.StringIO(to_csv(report))))
    assert [r["guessed"] for r in rows] == ["0", "2"]
    console = Console(width=200, record=True, color_system=None, file=io.StringIO())
    show_report(console, report)
    shown = console.export_text()
    assert "guesses" in shown.split("Calibration")[0] and "guesses" in shown.split("Calibration")[1]
    # tutor progress: the last answer that counts, marked as the guess it was
    guessed = Attempt(time="2026-11-29T10:00:00+00:00", prediction="a", observed="b", correct=False, status="fail",
                      device="cpu", engine_hash="abc", confidence=chance)
    progress = LearnerProgress(learner="ada", exercises={"head-split": ExerciseProgress(attempts=[guessed])})
    console = Console(width=200, record=True, color_system=None, file=io.StringIO())
    console.print(progress_table(progress, catalog, set(), lambda note: note))
    assert "a (a guess)" in console.export_text()
