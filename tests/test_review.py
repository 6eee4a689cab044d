"""Where a learner continues, which exercise comes next and what is due for review, on progress made by hand.

Every expected cursor, box and due time below is worked out from the module's rules (tutor/model/review.py):
continue at the last attempted exercise if unsolved, else the first untried one after it; Leitner boxes of
1, 3 and 7 days, a wrong or unsure (under 70 %) answer back to box 1.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest

from tutor.model import review
from tutor.model.attempts import Attempt, ExerciseProgress, LearnerProgress

T0 = datetime(2026, 1, 1, 10, 0, tzinfo=timezone.utc)


def attempt(day: float = 0, correct: bool = False, **fields) -> Attempt:
    """A graded prediction ``day`` days after T0 (right or wrong as asked)."""
    base = dict(time=(T0 + timedelta(days=day)).isoformat(timespec="seconds"), prediction="a", observed="b",
                correct=correct, status="pass" if correct else "fail", device="cpu", engine_hash="h")
    return Attempt(**{**base, **fields})


def catalog(*ids: str):
    return SimpleNamespace(exercises=[SimpleNamespace(id=i, graded=True) for i in ids])


def progress(**entries: list) -> LearnerProgress:
    return LearnerProgress("ada", {k.replace("_", "-"): ExerciseProgress(attempts=v) for k, v in entries.items()})


# --- times ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("stamp, moment", [
    ("2026-01-01T10:00:00+00:00", T0), ("2026-01-01T10:00:00Z", T0), ("2026-01-01T10:00:00", T0),
    ("2026-01-01T12:00:00+02:00", T0), ("", None), ("yesterday", None)])
def test_an_attempts_time_reads_as_an_aware_moment_utc_when_it_has_no_offset(stamp, moment):
    read = review.when(stamp)
    assert read == moment
    if read is not None:
        assert read.utcoffset() is not None


def test_graded_keeps_the_timed_predictions_since_the_reset_oldest_first():
    entry = ExerciseProgress(attempts=[attempt(2, True), attempt(-1, before_reset=True), attempt(1),
                                       attempt(0, status="timeout"), attempt(0, True, mode="fix"),
                                       attempt(0, time="not a time"), attempt(0.5)])
    assert [a.time[:10] for a in review.graded(entry)] == ["2026-01-01", "2026-01-02", "2026-01-03"]
    assert [review.when(a.time) for a in review.graded(entry)] == [T0 + timedelta(days=d) for d in (0.5, 1, 2)]


# --- continue and next ------------------------------------------------------------------------------------

def test_a_new_learner_starts_at_the_first_exercise():
    assert review.continue_point(catalog("a", "b"), progress()) == review.Continue("a", "start here")
    untimed = progress(b=[attempt(0, time="")])
    assert review.continue_point(catalog("a", "b"), untimed) == review.Continue("a", "start here")


def test_the_last_attempted_exercise_is_continued_while_unsolved():
    mine = progress(a=[attempt(0, True)], c=[attempt(1)], b=[attempt(0.5)])
    assert review.continue_point(catalog("a", "b", "c"), mine) == review.Continue("c", "left unsolved")


def test_the_latest_of_equal_times_is_the_one_later_in_the_catalog():
    tie = progress(a=[attempt(1)], b=[attempt(1, True)], c=[])
    assert review.continue_point(catalog("a", "b", "c"), tie) == review.Continue("c", "next after b")


def test_after_a_solved_exercise_the_first_untried_one_after_it_wrapping_round():
    solved_last = progress(b=[attempt(0)], c=[attempt(1, True)], d=[attempt(0.5)])
    assert review.continue_point(catalog("a", "b", "c", "d"), solved_last) == review.Continue("a", "next after c")
    reset = progress(c=[attempt(1, True)], d=[attempt(0, True, before_reset=True)])
    assert review.continue_point(catalog("a", "b", "c", "d"), reset) == review.Continue("d", "next after c")


def test_with_everything_tried_the_first_unsolved_then_the_last_one():
    tried = progress(a=[attempt(0, True)], b=[attempt(0)], c=[attempt(2, True)])
    assert review.continue_point(catalog("a", "b", "c"), tried) == review.Continue("b", "not solved yet")
    done = progress(a=[attempt(0, True)], b=[attempt(3, True)], c=[attempt(2, True)])
    assert review.continue_point(catalog("a", "b", "c"), done) == review.Continue("b", "every exercise solved")


def test_next_is_the_first_untried_after_this_one_else_the_one_after_it():
    cat = catalog("a", "b", "c", "d")
    assert review.next_after(cat, progress(b=[attempt()]), "a") == "c"
    assert review.next_after(cat, progress(a=[attempt()], b=[attempt()]), "d") == "c"
    everything = progress(a=[attempt()], b=[attempt()], c=[attempt()], d=[attempt()])
    assert [review.next_after(cat, everything, i) for i in "abcd"] == ["b", "c", "d", None]
    only_this_one_left = progress(a=[attempt()], b=[attempt()], c=[attempt()])
    assert review.next_after(cat, only_this_one_left, "d") is None
    assert review.next_after(cat, only_this_one_left, "c") == "d"


# --- the Leitner boxes ------------------------------------------------------------------------------------

def state(*attempts):
    return review.review_state("x", ExerciseProgress(attempts=list(attempts)))


def test_an_exercise_never_wrong_and_always_sure_is_in_no_box():
    assert state() is None
    assert state(attempt(0, True), attempt(1, True, confidence=70)) is None


def test_a_wrong_answer_goes_to_box_one_for_a_day():
    assert state(attempt(0, True), attempt(2)) == review.ReviewState("x", 1, T0 + timedelta(days=3),
                                                                     T0 + timedelta(days=2))


def test_a_right_but_unsure_answer_goes_to_box_one_too():
    assert state(attempt(0, True, confidence=69)).box == 1
    assert state(attempt(0, True, confidence=70)) is None


def test_right_once_due_moves_up_a_box_and_right_early_moves_nothing():
    assert state(attempt(0), attempt(1, True)) == review.ReviewState("x", 2, T0 + timedelta(days=4),
                                                                     T0 + timedelta(days=1))
    early = state(attempt(0), attempt(0.5, True))
    assert (early.box, early.due, early.last) == (1, T0 + timedelta(days=1), T0 + timedelta(days=0.5))
    third = state(attempt(0), attempt(1, True), attempt(4, True))
    assert (third.box, third.due) == (3, T0 + timedelta(days=11))
    assert state(attempt(0), attempt(1, True), attempt(4, True), attempt(10.9, True)).box == 3
    assert state(attempt(0), attempt(1, True), attempt(4, True), attempt(11, True)) is None  # out of the boxes


def test_a_wrong_answer_in_a_high_box_goes_back_to_box_one():
    back = state(attempt(0), attempt(1, True), attempt(4, True), attempt(5))
    assert (back.box, back.due) == (1, T0 + timedelta(days=6))
    unsure = state(attempt(0), attempt(1, True), attempt(2, True, confidence=50))
    assert (unsure.box, unsure.due) == (1, T0 + timedelta(days=3))


def test_a_state_says_its_box_due_time_last_attempt_and_interval():
    assert state(attempt(0), attempt(1, True)).to_dict() == {
        "id": "x", "box": 2, "due": "2026-01-05T10:00:00+00:00", "last_attempt": "2026-01-02T10:00:00+00:00",
        "interval_days": 3}
    assert state(attempt(0)).to_dict()["interval_days"] == 1
    assert state(attempt(0), attempt(1, True), attempt(4, True)).to_dict()["interval_days"] == 7


def test_review_lists_the_boxed_exercises_soonest_due_first_and_due_those_whose_time_has_come():
    cat = catalog("a", "b", "c")
    mine = progress(a=[attempt(2)], b=[attempt(0, True)], c=[attempt(1)])
    assert [(s.exercise_id, s.due) for s in review.review_states(cat, mine)] == [
        ("c", T0 + timedelta(days=2)), ("a", T0 + timedelta(days=3))]
    assert [s.exercise_id for s in review.due(cat, mine, now=T0 + timedelta(days=2))] == ["c"]
    assert [s.exercise_id for s in review.due(cat, mine, now=T0 + timedelta(days=3))] == ["c", "a"]
    assert review.due(cat, mine, now=T0 + timedelta(days=2) - timedelta(seconds=1)) == []
    assert [s.exercise_id for s in review.due(cat, mine)] == ["c", "a"]  # now: long after 2026-01-04


# --- review as recall ---------------------------------------------------------------------------------------

def test_the_first_exercise_due_for_review_is_where_to_continue():
    mine = progress(a=[attempt(0)], b=[attempt(0.5)], c=[attempt(1)])
    due_now = review.due(catalog("a", "b", "c"), mine, now=T0 + timedelta(days=1.6))
    assert [s.exercise_id for s in due_now] == ["a", "b"]
    assert review.continue_point(catalog("a", "b", "c"), mine, due_now) == review.Continue("a", "due for review")
    assert review.continue_point(catalog("a", "b", "c"), mine, []) == review.Continue("c", "left unsolved")


def test_an_exercise_is_due_from_its_due_time_on():
    entry = ExerciseProgress(attempts=[attempt(0)])
    assert review.due_state("x", entry, now=T0 + timedelta(hours=23)) is None
    assert review.due_state("x", entry, now=T0 + timedelta(days=1)).box == 1
    assert review.due_state("x", ExerciseProgress(attempts=[attempt(0, True)]), now=T0 + timedelta(days=9)) is None


@pytest.mark.parametrize("later, words", [(timedelta(hours=5), "today"), (timedelta(days=1, hours=2), "1 day ago"),
                                          (timedelta(days=9), "9 days ago")])
def test_when_it_was_last_seen_is_said_in_whole_days(later, words):
    assert review.seen_ago(T0, now=T0 + later) == words
