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


def test_a_saved_confidence_counts_from_1_to_100():
    assert [confidence_of(attempt(confidence=c)) for c in (None, 0, 9, 25, 50, 100, 101, -5)] == \
        [None, None, 9, 25, 50, 100, None, None]


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
        table("", True, 100, mode="fix", minute=3), table("b", True, 0, minute=4)]}})
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


# --- what a run leaves, field by field -----------------------------------------------------------

def _run(status: str, **fields):
    from tutor.sandbox.result import RunResult
    return RunResult(id="head-split", status=status, device="cuda", torch="t", fault="head-split-reshape",
                     kind="choice", seed=7, **fields)


def test_a_graded_run_leaves_every_field_it_was_given():
    attempt = Attempt.of(_run("pass", prediction="b", prediction_text="b", observed="b", correct=True),
                         confidence=80, time="2026-01-01T10:00:00+00:00", submission="s1", hints=2)
    assert (attempt.time, attempt.prediction, attempt.observed, attempt.correct, attempt.status, attempt.device,
            attempt.seed, attempt.confidence, attempt.submission, attempt.hints, attempt.mode) == \
        ("2026-01-01T10:00:00+00:00", "b", "b", True, "pass", "cuda", 7, 80, "s1", 2, "predict")
    assert len(attempt.engine_hash) == 12
    bare = Attempt.of(_run("fail", prediction="a", prediction_text="a", observed="b", correct=False))
    assert (bare.confidence, bare.submission, bare.hints, bare.correct) == (None, "", 0, False)
    assert datetime.fromisoformat(bare.time).tzinfo is not None  # timed now, in UTC


def test_an_edit_run_leaves_its_mode_diff_verdict_and_what_the_learners_side_observed():
    from tutor.model.verdict import Verdict
    ok = Verdict("fix", "fixed", "fixed", yours_status="ok", yours_observed="b", prediction_correct=None)
    attempt = Attempt.of_edit(_run("ok"), "fix", "--- a\n+++ b\n", ok, "c")
    assert (attempt.prediction, attempt.observed, attempt.correct, attempt.status, attempt.device, attempt.seed,
            attempt.mode, attempt.diff, attempt.verdict) == \
        ("c", "b", True, "ok", "cuda", 7, "fix", "--- a\n+++ b\n", "fixed")
    assert len(attempt.engine_hash) == 12 and datetime.fromisoformat(attempt.time).tzinfo is not None
    assert (attempt.confidence, attempt.hints, attempt.submission) == (None, 0, "")
    crashed = Verdict("fix", "not fixed", "not fixed", yours_status="error", yours_observed=None)
    attempt = Attempt.of_edit(_run("ok"), "fix", "", crashed)
    assert (attempt.observed, attempt.status, attempt.correct, attempt.prediction) == ("error", "error", False, "")


def test_the_confidence_scale_starts_at_the_questions_chance_and_a_guess_is_that_chance():
    from tutor.model import answers
    from tutor.model.attempts import GUESS, ProgressError, check_confidence
    choices = [(str(n), f"choice {n}") for n in range(11)]
    kinds = {"yes/no": answers.Bool(), "4 choices": answers.Choice(choices=tuple(choices[:4])),
             "11 choices": answers.Choice(choices=tuple(choices)), "a number": answers.Number(),
             "a shape": answers.Shape()}
    assert {name: kind.chance for name, kind in kinds.items()} == \
        {"yes/no": 50, "4 choices": 25, "11 choices": 9, "a number": 10, "a shape": 10}
    assert [check_confidence(v, 25) for v in (None, 25, 30, 100, GUESS)] == [None, 25, 30, 100, 25]
    assert [check_confidence(v, 9) for v in (9, GUESS)] == [9, 9]
    for wrong in (24, 101, 70.0, True, "70"):
        with pytest.raises(ProgressError) as raised:
            check_confidence(wrong, 25)
        assert str(raised.value) == (f"the confidence {wrong!r} is not allowed for this question; give a whole "
                                     "percent from 25 (a blind guess's chance, or 'guess') to 100 (certain)")


def test_tutor_run_takes_a_guess_and_refuses_a_confidence_below_the_questions_chance(tmp_path, capsys):
    common = ["--progress-dir", str(tmp_path), "--learner", "ada", "--json"]
    assert main(["run", "index-assign", "--predict", "yes", "--confidence", "guess", *common]) == 0
    assert json.loads(capsys.readouterr().out)["confidence"] == 50  # yes/no: a guess is a coin toss
    assert ProgressStore(tmp_path).load("ada").of("index-assign").attempts[-1].confidence == 50
    assert main(["run", "index-assign", "--predict", "yes", "--confidence", "30", *common]) == 2
    assert json.loads(capsys.readouterr().out)["error"] == (
        "the confidence 30 is not allowed for this question; give a whole percent from 50 (a blind guess's chance, "
        "or 'guess') to 100 (certain) (exercise index-assign)")


def test_edits_are_the_edit_mode_attempts_or_those_of_one_mode():
    progress = ExerciseProgress(attempts=[Attempt(**row) for row in (
        table("a", True), table("", True, mode="fix"), table("a", False, mode="break"), table("", False, mode="fix"))])
    assert [a.mode for a in progress.edits()] == ["fix", "break", "fix"]
    assert [(a.mode, a.correct) for a in progress.edits("fix")] == [("fix", True), ("fix", False)]
    assert [a.mode for a in progress.edits("hunt")] == []


def test_a_learners_progress_as_a_dict_names_a_reset_only_when_there_was_one():
    from tutor.model.attempts import LearnerProgress
    fresh = ExerciseProgress(attempts=[Attempt(**table("b", True))], note="n", note_time="t")
    reset = ExerciseProgress(reset_time="2026-01-02T00:00:00+00:00")
    data = LearnerProgress("ada", {"b": reset, "a": fresh}).to_dict()
    assert list(data["exercises"]) == ["a", "b"]
    assert data["exercises"]["a"] == {"attempts": [Attempt(**table("b", True)).to_dict()], "note": "n",
                                      "note_time": "t", "solved": True}
    assert data["exercises"]["b"] == {"attempts": [], "note": "", "note_time": "", "solved": False,
                                      "reset_time": "2026-01-02T00:00:00+00:00"}


# --- which attempt counts ------------------------------------------------------------------------

@pytest.mark.parametrize("stamp, key", [
    ("2026-11-30T09:00:00+00:00", (1, "2026-11-30T09:00:00")),  # the form tutor writes
    ("2026-11-30T09:00:00Z", (1, "2026-11-30T09:00:00")),
    ("2026-11-30T09:00:00z", (1, "2026-11-30T09:00:00")),
    ("2026-11-30T11:00:00+02:00", (1, "2026-11-30T09:00:00")),  # 25 characters, another offset
    ("2026-11-30 09:00:00+00:00", (1, "2026-11-30T09:00:00")),  # 25 characters, a space for the T
    ("2026-11-30T09:00:00", (1, "2026-11-30T09:00:00")),  # no offset: UTC, never the machine's zone
    ("2026-11-30T09:00:00.250000+00:00", (1, "2026-11-30T09:00:00.250000")),
    ("  2026-11-30T04:00:00-05:00 ", (1, "2026-11-30T09:00:00")),
    ("yesterday", (1, "yesterday")),  # compared as text, among the timed
])
def test_a_submission_time_sorts_by_its_utc_moment(stamp, key, new_york):
    from tutor.model.attempts import time_key
    assert time_key(stamp) == key


def test_rows_out_of_time_order_are_sorted_and_a_tie_keeps_the_given_order():
    from tutor.model.attempts import counting, in_time_order
    rows = [("second", "2026-11-30T10:00:00+00:00"), ("first", "2026-11-30T09:00:00+00:00"),
            ("third", "2026-11-30T11:00:00+00:00")]
    assert [name for name, _ in in_time_order(rows, lambda r: r[1])] == ["first", "second", "third"]
    assert counting(rows, lambda r: r[1])[0] == "third"
    tie = [("given first", "2026-11-30T09:00:00Z"), ("given last", "2026-11-30T09:00:00+00:00")]
    assert counting(tie, lambda r: r[1])[0] == "given last"
    assert counting([], lambda r: r[1]) is None


# --- calibration, worked by hand -----------------------------------------------------------------

def test_a_bucket_reads_its_rate_and_says_too_few_below_three():
    assert (calibration.Bucket(80).rate, calibration.Bucket(80).verdict) == (None, "")
    assert calibration.Bucket(80, count=2, right=2).verdict == "too few to tell"
    assert calibration.Bucket(80, count=4, right=1).rate == 0.25
    assert calibration.Bucket(80, count=4, right=1).to_dict() == {"confidence": 80, "count": 4, "right": 1,
                                                                  "rate": 0.25, "verdict": "over-confident"}


@pytest.mark.parametrize("confidence, bucket", [(50, 50), (59, 50), (60, 60), (75, 70), (99, 90), (100, 100),
                                                (40, 40), (25, 20), (9, 10), (120, 100)])
def test_a_confidence_falls_in_the_bucket_of_its_tens(confidence, bucket):
    assert calibration.bucket_of(confidence) == bucket


def test_calibration_counts_graded_predictions_with_a_confidence_and_scores_brier():
    attempts = [attempt(status="pass", correct=True, confidence=80),    # (0.8 - 1)^2 = 0.04
                attempt(status="fail", correct=False, confidence=80),   # 0.64
                attempt(status="pass", correct=True, confidence=100),   # 0
                attempt(status="fail", correct=False, confidence=55),   # 0.3025
                attempt(status="pass", correct=True),                    # unrated
                attempt(status="timeout", correct=False, confidence=90),  # not graded: left out
                attempt(status="pass", correct=True, confidence=90, mode="fix")]  # an edit: left out
    result = calibration.calibrate(attempts)
    assert (result.count, result.right, result.unrated) == (4, 2, 1)
    # An unrated attempt neither ends the count nor resets the tally of unrated ones.
    later = calibration.calibrate([attempt(status="fail", correct=False), attempt(status="pass", correct=True),
                                   attempt(status="pass", correct=True, confidence=70)])
    assert (later.count, later.right, later.unrated) == (1, 1, 2)
    assert result.brier == pytest.approx((0.04 + 0.64 + 0 + 0.3025) / 4, abs=1e-12)
    assert [(b.confidence, b.count, b.right) for b in result.buckets] == \
        [(10, 0, 0), (20, 0, 0), (30, 0, 0), (40, 0, 0), (50, 1, 0), (60, 0, 0), (70, 0, 0), (80, 2, 1),
         (90, 0, 0), (100, 1, 1)]
    assert [b["confidence"] for b in result.to_dict()["buckets"]] == [50, 80, 100]  # the empty ones left out
    assert {k: v for k, v in result.to_dict().items() if k != "buckets"} == \
        {"count": 4, "right": 2, "brier": result.brier, "unrated": 1}
    assert calibration.calibrate([]).brier is None


def test_calibration_by_set_counts_each_sets_exercises_and_everything_overall():
    from types import SimpleNamespace
    from tutor.model.attempts import LearnerProgress
    catalog = SimpleNamespace(sets=[SimpleNamespace(id="one", exercises=[SimpleNamespace(id="a")]),
                                    SimpleNamespace(id="two", exercises=[SimpleNamespace(id="b")])])
    progress = LearnerProgress("ada", {
        "a": ExerciseProgress(attempts=[attempt(status="pass", correct=True, confidence=90)]),
        "gone": ExerciseProgress(attempts=[attempt(status="fail", correct=False, confidence=60)])})
    overall, per_set = calibration.calibration_by_set(catalog, progress)
    assert (overall.count, overall.right) == (2, 1)
    assert {k: (c.count, c.right) for k, c in per_set.items()} == {"one": (1, 1), "two": (0, 0)}


def test_accuracy_by_day_runs_oldest_first_with_the_rate_so_far():
    from tutor.model.attempts import LearnerProgress
    day = lambda d, **kw: attempt(time=f"2026-01-0{d}T10:00:00+00:00", **kw)  # noqa: E731
    progress = LearnerProgress("ada", {
        "a": ExerciseProgress(attempts=[day(2, status="pass", correct=True), day(1, status="fail"),
                                        day(2, status="pass", correct=True), day(3, status="timeout"),
                                        day(3, status="pass", correct=True, mode="fix"), attempt(time="2026")]),
        "b": ExerciseProgress(attempts=[day(1, status="pass", correct=True),
                                        attempt(time="2026-01-04", status="fail")])})  # a bare date counts
    days = calibration.accuracy_by_day(progress)
    assert [(d.date, d.count, d.right, d.so_far, d.rate) for d in days] == [
        ("2026-01-01", 2, 1, 0.5, 0.5), ("2026-01-02", 2, 2, 0.75, 1.0), ("2026-01-04", 1, 0, 0.6, 0.0)]
    assert calibration.Day("2026-01-01", 0, 0, 0.0).rate == 0.0
