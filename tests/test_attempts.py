"""The attempt vocabulary is stated once (tutor.model.attempts), and every reader agrees with it.

The figures below are worked out by hand from the attempts written here; none
is read back from the code under test.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
import tomli_w

from exercises.mysteries import hidden_fault
from tutor.app.session import Session
from tutor.cli import main
from tutor.model import calibration, review
from tutor.model.attempts import (GRADED, RECORDED, Attempt, ExerciseProgress, confidence_of, is_prediction,
                                  verdict_of)
from tutor.store.catalog_cache import load_catalog
from tutor.store.names import file_stem
from tutor.store.progress import ProgressStore

T0 = datetime(2026, 1, 1, 10, 0, tzinfo=timezone.utc)


def at(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds")


def table(prediction: str, correct: bool, confidence: int | None = None, status: str | None = None,
          mode: str = "predict", minute: int = 0, seed: int = 0) -> dict:
    """One attempt as a progress file holds it (written by hand, so any value can be tried)."""
    row = {"time": at(T0 + timedelta(minutes=minute)), "prediction": prediction, "observed": "b",
           "correct": correct, "status": status or ("pass" if correct else "fail"), "device": "cpu",
           "engine_hash": "abc123def456", "seed": seed, "mode": mode}
    if confidence is not None:
        row["confidence"] = confidence
    if mode != "predict":
        row.update(diff="--- a\n+++ b\n", verdict="fixed" if correct else "not fixed")
    return row


def write(folder, learner: str, exercises: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    data = {"format_version": 2, "learner": learner, "exercises": exercises}
    (folder / f"{file_stem(learner)}.toml").write_text(tomli_w.dumps(data), encoding="utf-8")


def attempt(**fields) -> Attempt:
    base = dict(time=at(T0), prediction="a", observed="b", correct=False, status="fail", device="cpu",
                engine_hash="h")
    return Attempt(**{**base, **fields})


# --- the vocabulary --------------------------------------------------------------------------

def test_graded_and_recorded_statuses():
    assert GRADED == ("pass", "fail")
    assert RECORDED == ("pass", "fail", "timeout")


def test_only_a_pass_or_fail_of_a_prediction_is_a_prediction():
    assert is_prediction(attempt(status="pass", correct=True))
    assert is_prediction(attempt(status="fail"))
    assert not is_prediction(attempt(status="timeout"))
    assert not is_prediction(attempt(status="pass", correct=True, mode="fix"))
    assert not is_prediction(attempt(status="fail", mode="break"))


def test_a_confidence_counts_only_inside_50_to_100():
    assert [confidence_of(attempt(confidence=c)) for c in (None, 49, 50, 70, 100, 101, 30)] == \
        [None, None, 50, 70, 100, None, None]


def test_what_an_attempt_came_to_in_one_word():
    assert verdict_of(attempt(status="timeout")) == "timeout"
    assert verdict_of(attempt(status="pass", correct=True)) == "pass"
    assert verdict_of(attempt(status="ok", mode="fix", verdict="not fixed")) == "not fixed"


def test_a_timeout_never_solves_an_exercise():
    entry = ExerciseProgress(attempts=[attempt(status="timeout", correct=False)])
    assert not entry.solved
    entry.attempts.append(attempt(status="pass", correct=True))
    assert entry.solved


# --- one Brier score ------------------------------------------------------------------------
#
# ada's head-split: 80 % right, 60 % wrong (both count);
#   a timeout at 90 % (not a prediction), a fix at 100 % (edit mode), 30 % right (out of range: unrated).
# Brier = ((0.8 - 1)^2 + (0.6 - 0)^2) / 2 = (0.04 + 0.36) / 2 = 0.2; right 1 of 2; mean confidence 0.7.

def test_one_file_gives_one_brier_score_in_tutor_progress_and_tutor_report(tmp_path, capsys):
    folder = tmp_path / "class"
    write(folder, "ada", {"head-split": {"attempts": [
        table("b", True, 80), table("a", False, 60, minute=1), table("b", False, 90, status="timeout", minute=2),
        table("", True, 100, mode="fix", minute=3), table("b", True, 30, minute=4)]}})
    assert main(["progress", "--json", "--progress-dir", str(folder), "--learner", "ada"]) == 0
    overall = json.loads(capsys.readouterr().out)["calibration"]["overall"]
    assert main(["report", str(folder), "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["calibration"]
    assert overall["brier"] == pytest.approx(0.2) and row["brier"] == pytest.approx(0.2)
    assert (overall["count"], overall["right"], overall["unrated"]) == (2, 1, 1)
    assert row["predictions"] == 2 and row["accuracy"] == pytest.approx(0.5)
    assert row["mean_confidence"] == pytest.approx(0.7)


# --- a saved timeout, reopened -------------------------------------------------------------

def test_a_saved_timeout_is_shown_as_a_timeout_when_the_exercise_is_reopened(tmp_path):
    pytest.importorskip("textual")
    from test_tui import LEARNER, drive, first_of_kind, make_app, open_exercise, text_of
    from textual.widgets import Static
    ex = first_of_kind("shape")
    ProgressStore(tmp_path).record_attempt(LEARNER, ex.id, attempt(prediction="(3, 3)", observed="", correct=False,
                                                                   status="timeout"))
    app, _ = make_app(tmp_path)

    async def script(pilot):
        screen = await open_exercise(pilot, ex.id)
        shown = text_of(screen.query_one("#result-text", Static))
        assert "the check ran out of time" in shown
        assert "did not match" not in shown
    drive(app, script)


# --- calibration's "about right", decided: within 10 points, 10 included -------------------

@pytest.mark.parametrize("confidence, right, verdict", [
    (80, 7, "about right"),       # 70 % at 80 %: exactly 10 points under
    (80, 6, "over-confident"),    # 60 %: 20 under
    (60, 7, "about right"),       # 70 % at 60 %: exactly 10 over
    (60, 8, "under-confident"),   # 80 %: 20 over
    (90, 9, "about right"),
])
def test_a_bucket_exactly_ten_points_off_is_about_right(confidence, right, verdict):
    assert calibration.Bucket(confidence, count=10, right=right).verdict == verdict


# --- review: 70 % and right is sure; due at the moment it comes back ----------------------

def test_a_right_answer_at_70_percent_is_sure_and_at_69_it_is_not():
    sure = ExerciseProgress(attempts=[attempt(status="pass", correct=True, confidence=70)])
    unsure = ExerciseProgress(attempts=[attempt(status="pass", correct=True, confidence=69)])
    assert review.review_state("x", sure) is None
    state = review.review_state("x", unsure)
    assert state.box == 1 and state.due == T0 + timedelta(days=1)


def test_an_exercise_is_due_at_the_very_moment_it_comes_back():
    cat = load_catalog()
    ex = cat.exercises[0]

    class Progress:
        def of(self, exercise_id):
            return ExerciseProgress(attempts=[attempt(status="fail")]) if exercise_id == ex.id else ExerciseProgress()
    comes_back = T0 + timedelta(days=1)
    assert [s.exercise_id for s in review.due(cat, Progress(), now=comes_back)] == [ex.id]
    assert review.due(cat, Progress(), now=comes_back - timedelta(seconds=1)) == []


# --- the hunt's mystery ---------------------------------------------------------------------

def test_a_fix_attempt_does_not_change_the_hunts_mystery(tmp_path):
    cat = load_catalog()
    capstone = next(e for e in cat.exercises if e.seed_per_attempt)
    # n predictions made: the hunt meets the mystery of the last one, seed n - 1; choose n so that seeds n - 1
    # and n both hide a fault (the hunt skips a seed whose mystery is the clean engine)
    n = next(k for k in range(1, 20) if hidden_fault(k - 1) != "none" and hidden_fault(k) != "none")
    store = ProgressStore(tmp_path)
    for k in range(n):
        store.record_attempt("ada", capstone.id, attempt(seed=k, status="fail"))
    session = Session(cat, runner=None, store=store, learner="ada")
    session.load()
    assert session.edit_task(capstone, "fix").seed == n - 1
    store.record_attempt("ada", capstone.id, attempt(seed=n - 1, status="ok", mode="hunt", verdict="not fixed"))
    session.load()
    assert session.edit_task(capstone, "fix").seed == n - 1
