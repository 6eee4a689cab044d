"""What the tutor says about a warm-up (the capstone's ungraded ``audit``) is what happened: whether its bet
was saved, how the catalog's count is worded, a Find and fix of its mystery without a bet, a bet's
confidence that calibration leaves out, and a hunt's missing file named without giving the mystery away.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

import test_cli
from test_warm_up import WARM, home_line_then_page, warm
from tutor.app.outcome import Outcome
from tutor.cli import main
from tutor.model.attempts import Attempt, ProgressError
from tutor.store.catalog_cache import load_catalog
from tutor.store.progress import ProgressStore

FULL = "cannot write progress to the folder (No space left on device)"


def tutor(*args: str, folder: Path) -> subprocess.CompletedProcess:
    """``python -m tutor.cli ARGS`` with its progress in ``folder``, as a learner runs it."""
    return test_cli.tutor(*args, env={"TUTOR_PROGRESS_DIR": str(folder), "COLUMNS": "200"})


def bet() -> Attempt:
    """A warm-up bet on shape that missed (the mystery's first failing link was alignment), 90 % sure."""
    return Attempt(**{**warm(False).__dict__, "prediction": "shape", "observed": "alignment"})


def hunt() -> Attempt:
    return Attempt(time="2026-01-01T11:00:00+00:00", prediction="", observed="ok", correct=True, status="ok",
                   device="cpu", engine_hash="h", mode="hunt", verdict="fixed")


# --- the TUI says whether a warm-up's bet was saved ------------------------------------------------------

def test_the_tui_says_a_warm_up_bet_was_not_saved_when_its_save_failed_and_why(tmp_path):
    """The verdict said "a warm-up: saved, never graded" whatever the save did; now it follows the save, as
    a graded run's notification does, and says so again when the page is opened anew."""
    pytest.importorskip("textual")
    from textual.widgets import Static
    from test_tui import FakeRunner, drive, finish_runs, open_exercise, text_of, wait_until
    from tutor.ui.app import build_app
    from tutor.ui.screens.exercise import ExerciseScreen

    class FullDisk(ProgressStore):
        def record_attempt(self, *args, **kwargs):
            raise ProgressError(FULL)

    for store, said in ((FullDisk(tmp_path / "full"), f"a warm-up: not saved ({FULL}), never graded"),
                        (ProgressStore(tmp_path / "fine"), "a warm-up: saved, never graded")):
        app = build_app(load_catalog(), store, "ada", FakeRunner())
        seen: dict = {}

        async def script(pilot):
            screen = await open_exercise(pilot, WARM)
            await pilot.press("2")  # the key of alignment
            await pilot.press("r")
            await finish_runs(pilot)
            panel = screen.query_one("#result")
            await wait_until(pilot, lambda: panel.has_class("-shown"), "the bet's result")
            seen["verdict"] = " ".join(text_of(screen.query_one("#result-text", Static)).split())
            seen["notices"] = [str(n.message) for n in pilot.app._notifications]
            await pilot.press("escape")
            await wait_until(pilot, lambda: not isinstance(pilot.app.screen, ExerciseScreen), "the home screen")
            again = await open_exercise(pilot, WARM)
            await wait_until(pilot, lambda: again.query_one("#result").has_class("-shown"), "the result again")
            seen["reopened"] = " ".join(text_of(again.query_one("#result-text", Static)).split())
        drive(app, script, size=(120, 40))
        assert said in seen["verdict"] and said in seen["reopened"]
        failed = isinstance(store, FullDisk)
        assert ("a warm-up: saved" in seen["verdict"]) is not failed
        assert (f"The attempt was not saved: {FULL}" in seen["notices"]) is failed


def test_a_note_that_failed_after_its_attempt_was_saved_is_not_said_as_an_unsaved_attempt():
    from tutor.ui.saving import Kept, kept_of, save_notice
    saved_without_note = Outcome(result=None, saved_to=Path("ada.toml"),
                                 save_error=f"the attempt was saved but its note was not: {FULL}")
    assert save_notice(saved_without_note) == f"The attempt was saved but its note was not: {FULL}"
    assert kept_of(saved_without_note) == Kept(True, "")
    refused = Outcome(result=None, save_error=FULL)
    assert save_notice(refused) == f"The attempt was not saved: {FULL}" and kept_of(refused) == Kept(False, FULL)
    assert save_notice(Outcome(result=None, saved_to=Path("ada.toml"))) is None


# --- one wording for the catalog's count -----------------------------------------------------------------

def test_every_count_of_the_catalog_says_its_warm_up_the_same_way(tmp_path):
    """``--all`` said "(187 exercises, 1 of them an ungraded warm-up)" where the totals said "186 + warm-up":
    both now count the graded exercises and add the warm-up, "186 + 1 warm-up"."""
    catalog = load_catalog()
    graded, warm_ups = sum(e.graded for e in catalog.exercises), sum(not e.graded for e in catalog.exercises)
    assert warm_ups == 1
    store = ProgressStore(tmp_path)
    store.record_attempt("ada", WARM, bet())
    store.record_attempt("ada", WARM, hunt())  # a Find and fix of the warm-up's mystery: still the warm-up
    store.record_attempt("bob", WARM, hunt())
    everyone = tutor("progress", "--all", folder=tmp_path)
    assert everyone.returncode == 0, everyone.stderr
    assert f"({graded} graded exercises + 1 warm-up)" in everyone.stdout
    assert "of them" not in everyone.stdout and "(ungraded)" not in everyone.stdout
    rows = {line.split()[1]: line.split("│")[2].strip() for line in everyone.stdout.splitlines()
            if line.startswith("│ ")}
    assert rows == {"ada": "0 + 1 warm-up", "bob": "0 + 1 warm-up"}  # the hunt is no graded exercise tried
    data = json.loads(tutor("progress", "--all", "--json", folder=tmp_path).stdout)
    assert (data["exercise_count"], data["warm_up_count"]) == (graded + warm_ups, warm_ups)
    assert {r["learner"]: (r["tried"], r["warm_ups"]) for r in data["learners"]} == {"ada": (0, 1), "bob": (0, 1)}
    own = tutor("progress", "--learner", "ada", folder=tmp_path)
    totals = {line.split("│")[1].strip(): line.split("│")[4].strip() for line in own.stdout.splitlines()
              if line.count("│") == 7}
    capstone = catalog.get_set("capstone")
    assert totals["all"] == f"{graded} + 1 warm-up"
    assert totals[capstone.title] == f"{len(capstone.exercises) - 1} + 1 warm-up"


def test_the_counts_words_follow_the_number_of_warm_ups():
    from tutor.render.progress import exercises_count, with_warm_ups
    assert [with_warm_ups(3, n) for n in (0, 1, 2)] == ["3", "3 + 1 warm-up", "3 + 2 warm-ups"]
    assert [exercises_count(186, n) for n in (0, 1, 2)] == \
        ["186 exercises", "186 graded exercises + 1 warm-up", "186 graded exercises + 2 warm-ups"]
    assert exercises_count(1, 0) == "1 exercise" and exercises_count(1, 1) == "1 graded exercise + 1 warm-up"


# --- a Find and fix of the warm-up's mystery, with no bet --------------------------------------------------

def test_a_hunt_without_a_bet_is_said_as_one_on_the_home_pane_and_the_page(tmp_path):
    """The home pane said "warm-up made (ungraded) · 0 prediction(s)" and the page "✗ not solved yet" for a
    warm-up whose only attempt was a Find and fix of its mystery: no bet was made, and nothing is solved."""
    pytest.importorskip("textual")
    from textual.widgets import Static
    from test_tui import drive, make_app, text_of

    ProgressStore(tmp_path).record_attempt("ada", WARM, hunt())
    app, _ = make_app(tmp_path)
    seen = {}

    async def script(pilot):
        seen["home"], screen = await home_line_then_page(pilot, WARM)
        seen["page"] = " ".join(text_of(screen.query_one("#exercise-history", Static)).split())
    drive(app, script, size=(120, 40))
    assert "no warm-up bet yet (ungraded) · 0 warm-up bet(s), ungraded · 1 edit(s)" in seen["home"]
    assert "made" not in seen["home"] and "prediction" not in seen["home"]
    assert seen["page"].startswith("○ warm-up: ungraded · no bet yet · 1 edit attempt(s)")
    assert "not solved" not in seen["page"]


def test_a_graded_exercises_history_and_count_are_unchanged_by_the_warm_up_words():
    from tutor.model.attempts import ExerciseProgress
    from tutor.render.progress import answers_count, exercise_history, warm_up_state
    only_hunt = ExerciseProgress(attempts=[hunt()])
    assert exercise_history(only_hunt).plain.startswith("✗ not solved yet · no prediction yet · 1 edit attempt(s)")
    assert answers_count([hunt()]) == "0 prediction(s) · 1 edit(s)"
    assert warm_up_state([bet(), hunt()]) == "warm-up bet made (ungraded)"
    assert warm_up_state([hunt()]) == "no warm-up bet yet (ungraded)"


# --- a bet's confidence, which no calibration rates -----------------------------------------------------

def test_tutor_progress_never_says_a_confidence_given_with_a_bet_is_missing(tmp_path, capsys, monkeypatch):
    """A learner who bet with --confidence 90 was told "No prediction carries a confidence yet"."""
    monkeypatch.setenv("COLUMNS", "200")
    folder = tmp_path / "p"
    ProgressStore(folder).record_attempt("ada", WARM, bet())
    assert main(["progress", "--progress-dir", str(folder), "--learner", "ada"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "No graded prediction carries a confidence yet (your 1 warm-up bet(s) with a confidence are never " \
           "rated): give one with each prediction" in out
    assert "No prediction carries" not in out


def test_the_calibration_line_counts_the_bets_it_leaves_out():
    from tutor.model.calibration import calibrate
    from tutor.render.progress import calibration_renderables
    rated = Attempt(**{**bet().__dict__, "mode": "predict"})
    line = calibration_renderables(calibrate([rated]), bets=2)[-1].plain
    assert line.endswith("scores 0.250); your 2 warm-up bet(s) with a confidence are never rated")
    assert calibration_renderables(calibrate([rated]))[-1].plain.endswith("scores 0.250)")
    assert calibration_renderables(calibrate([]))[0].plain.startswith("No prediction carries a confidence yet:")


# --- tutor fix audit with a file that is not there ------------------------------------------------------

def test_a_hunts_missing_file_is_one_sentence_exit_2_and_names_no_file_of_the_mystery(tmp_path):
    """``tutor fix audit --file /nonexistent.py`` said "give the path of your edited engine/data.py": mystery
    0's fault is the one in engine/data.py, so the sentence told a learner who had not bet yet where it was
    (and a hunt that never ran does not count the mystery as revealed)."""
    missing = str(tmp_path / "nonexistent.py")
    for flag in ("--file", "--patch"):
        done = tutor("fix", WARM, flag, missing, folder=tmp_path / "progress")
        assert done.returncode == 2 and done.stdout == ""
        (line,) = done.stderr.splitlines()
        what, wanted = ("file", "your repaired copy of") if flag == "--file" else ("patch", "your diff against")
        assert line == f"tutor: there is no {what} {missing!r}; give the path of {wanted} the file that hides " \
                       "mystery 0's fault"
        assert "engine/" not in line and "snippets" not in line
    assert not list((tmp_path / "progress").glob("*.toml"))  # nothing ran, nothing was recorded


def test_a_fixs_missing_file_names_the_file_to_repair(tmp_path):
    ex = next(e for e in load_catalog().exercises if e.fault and e.graded)
    fault = load_catalog().fault_of(ex)
    done = tutor("fix", ex.id, "--file", str(tmp_path / "gone.py"), folder=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().endswith(f"; give the path of your repaired {fault.file}")
