"""Behaviour that one-line mutants of the rules once changed unseen (scripts/mutation.sh found each).

Each test names the rule it pins; together with tests/test_mutants_trust.py (the sandbox's) they kill
the mutants that survived the tests of their own modules.
"""

from __future__ import annotations

import threading

import pytest

from tutor.app.session import Session
from tutor.instructor.answer_rows import AnswerRow
from tutor.instructor.grade import RowResult
from tutor.instructor.memo import KEPT, Observations
from tutor.instructor.saving import Saver
from tutor.model import calibration
from tutor.model.attempts import Attempt, in_time_order, time_key
from tutor.model.catalog import CatalogError, build_catalog
from tutor.model.verdict import Verdict
from tutor.sandbox.result import RunResult
from tutor.store.progress import ProgressStore


def _result(status: str, **fields) -> RunResult:
    return RunResult(id="head-split", status=status, device="cpu", torch="t", fault="head-split-reshape",
                     kind="choice", **fields)


# --- a class's measurements: a timed-out check is measured again ------------------------------

@pytest.mark.parametrize("status", ["timeout", "cancelled"])
def test_a_measurement_that_ran_out_or_was_stopped_is_not_reused(status):
    assert status not in KEPT
    observations, measured = Observations(), []

    def measure():
        measured.append(1)
        return _result(status)

    first, reused = observations.get(("k",), measure)
    again, reused_again = observations.get(("k",), measure)
    assert (first.status, reused, reused_again, len(measured)) == (status, False, False, 2)
    assert (observations.measured, observations.reused) == (2, 0)


@pytest.mark.parametrize("status", ["ok", "error"])
def test_a_measurement_that_observed_or_raised_is_measured_once(status):
    observations, measured = Observations(), []
    observations.get(("k",), lambda: measured.append(1) or _result(status))
    kept, reused = observations.get(("k",), lambda: measured.append(1) or _result(status))
    assert (kept.status, reused, len(measured), observations.reused) == (status, True, 1, 1)


def test_rows_waiting_on_one_measurement_share_it():
    observations, started, release = Observations(), threading.Event(), threading.Event()

    def slow():
        started.set()
        release.wait(5)
        return _result("ok")

    out = []
    worker = threading.Thread(target=lambda: out.append(observations.get(("k",), slow)))
    worker.start()
    started.wait(5)
    waiter = threading.Thread(target=lambda: out.append(observations.get(("k",), lambda: _result("error"))))
    waiter.start()
    release.set()
    worker.join(5), waiter.join(5)
    assert sorted(reused for _, reused in out) == [False, True] and {r.status for r, _ in out} == {"ok"}


# --- tutor grade --save: only graded rows become attempts -------------------------------------

def _row_result(status: str, submitted_at: str | None = "2026-11-30T09:00:00+00:00") -> RowResult:
    row = AnswerRow(line=2, learner="ada", key="ada", exercise="head-split", answer="b",
                    submitted_at=submitted_at)
    result = _result(status, prediction="b", prediction_text="b",
                     **({"observed": "b", "correct": True} if status == "pass" else {}))
    return RowResult(row=row, status=status, result=result)


def test_save_records_a_graded_row_and_never_a_timed_out_one(tmp_path, catalog):
    store, notices = ProgressStore(tmp_path), []
    saver = Saver(catalog, store, notices.append)
    timed_out = _row_result("timeout")
    saver(timed_out)
    assert timed_out.saved_to is None and not (tmp_path / "ada.toml").exists()
    graded = _row_result("pass")
    saver(graded)
    [attempt] = store.load("ada").of("head-split").attempts
    assert (attempt.status, attempt.correct, attempt.submission, graded.saved_to) == \
        ("pass", True, graded.row.submission, store.path("ada"))
    assert notices == []


def test_save_keeps_an_untimed_row_untimed(tmp_path, catalog):
    store = ProgressStore(tmp_path)
    Saver(catalog, store, lambda _: None)(_row_result("pass", submitted_at=None))
    [attempt] = store.load("ada").of("head-split").attempts
    assert attempt.time == ""  # older than every timed attempt, never "now"


# --- the attempt vocabulary -------------------------------------------------------------------

def test_a_break_saves_whether_its_prediction_was_right_not_whether_anything_was_fixed():
    result = _result("ok")
    right = Verdict("break", "changed", "changed", yours_status="ok", yours_observed="a", prediction_correct=True)
    wrong = Verdict("break", "changed", "changed", yours_status="ok", yours_observed="a", prediction_correct=False)
    assert right.fixed is None
    assert Attempt.of_edit(result, "break", "", right, "a").correct is True
    assert Attempt.of_edit(result, "break", "", wrong, "d").correct is False
    fixed = Verdict("fix", "fixed", "fixed", yours_status="ok", yours_observed="a", prediction_correct=False)
    assert Attempt.of_edit(result, "fix", "", fixed).correct is True


def test_a_timed_out_run_is_recorded_as_such_observing_and_grading_nothing():
    attempt = Attempt.of(_result("timeout", prediction="b", prediction_text="b", observed="b", correct=True))
    assert (attempt.status, attempt.observed, attempt.correct, attempt.prediction) == ("timeout", "", False, "b")
    assert Attempt.of(_result("pass", observed="b", correct=True), time="").time == ""


def test_an_untimed_row_sorts_before_every_timed_one_so_the_latest_timed_counts():
    assert time_key(None) == time_key("") == (0, "")
    assert time_key(None) < time_key("1970-01-01T00:00:00+00:00") < time_key("2026-11-30T09:00:00Z")
    rows = [("late", "2026-11-30T10:00:00+00:00"), ("untimed", None), ("early", "2026-11-30T09:00:00+01:00")]
    assert [name for name, _ in in_time_order(rows, lambda r: r[1])] == ["untimed", "early", "late"]


def test_a_bucket_tells_from_exactly_the_fewest_predictions_it_needs():
    fewest = calibration.FEWEST_TO_TELL
    assert fewest == 3
    assert calibration.Bucket(100, count=fewest, right=fewest).verdict == "about right"
    assert calibration.Bucket(100, count=fewest, right=0).verdict == "over-confident"
    assert calibration.Bucket(100, count=fewest - 1, right=fewest - 1).verdict == "too few to tell"
    assert calibration.Bucket(100, count=0, right=0).verdict == ""


# --- the catalog's refusals, sentence by sentence -----------------------------------------------

SET = '''format_version = 1
[set]
id = "tiny"
title = "Tiny"
order = 1
summary = "One exercise."

[[exercise]]
id = "tiny-one"
set = "tiny"
title = "One"
source = "000 · 1. Shape is part of the algorithm"
prompt = "Which?"
kind = "choice"
choices = [{{id = "a", text = "first"}}, {{id = "{second}", text = "second"}}]
check = "shapes.broadcast_loss"
explain = "Why?"
hints = ["a nudge", "the mechanism"]
budget_s = 0.5
{extra}
'''


def _build(tmp_path, catalog_root, second="b", extra=""):
    path = tmp_path / "tiny.toml"
    path.write_text(SET.format(second=second, extra=extra))
    return build_catalog(tmp_path, catalog_root, [path])


@pytest.fixture()
def catalog_root():
    from tutor.model.catalog import EXERCISES_DIR
    return EXERCISES_DIR.parent


def test_the_tiny_set_itself_loads(tmp_path, catalog_root):
    assert _build(tmp_path, catalog_root).get("tiny-one").kind.options == (("a", "first"), ("b", "second"))


def test_a_duplicate_choice_id_is_refused_in_one_sentence(tmp_path, catalog_root):
    with pytest.raises(CatalogError) as err:
        _build(tmp_path, catalog_root, second="a")
    assert str(err.value) == "tiny.toml: exercise 'tiny-one': key 'choices' has a duplicate choice id"


@pytest.mark.parametrize("observe", ["faulted", "both"])
def test_observing_a_fault_the_exercise_does_not_have_is_refused_in_one_sentence(tmp_path, catalog_root, observe):
    with pytest.raises(CatalogError) as err:
        _build(tmp_path, catalog_root, extra=f'observe = "{observe}"')
    assert str(err.value) == f"tiny.toml: exercise 'tiny-one': key 'observe' is '{observe}' but the exercise has no fault"


def test_a_session_records_a_row_at_the_time_it_was_submitted(tmp_path, catalog):
    store = ProgressStore(tmp_path)
    session = Session(catalog, runner=None, store=store, learner="ada")
    outcome = session.record(catalog.get("head-split"), _result("pass", observed="b", correct=True),
                             time="2026-11-30T09:00:00+00:00", submission="s1")
    [attempt] = store.load("ada").of("head-split").attempts
    assert outcome.saved_to == store.path("ada") and (attempt.time, attempt.submission) == \
        ("2026-11-30T09:00:00+00:00", "s1")
