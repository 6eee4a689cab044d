"""A practice exercise (0 points: the capstone's warm-up bet, or one an assignment gives none) in results.json.

It scores nothing either way, but its test still says what happened: a matched answer is a passed
test, never a failed one, and the learner's summary counts it among the exercises that matched, out of
the same exercises it counts them from.
"""

from __future__ import annotations

import datetime as dt

from tutor.instructor.assignment import Assigned, Assignment
from tutor.instructor.results import learner_result

NOW = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)


def _row(line: int, exercise: str, status: str, said: str, seen: str) -> dict:
    return {"line": line, "learner": "Ada", "key": "ada", "exercise": exercise, "status": status,
            "prediction_text": said, "observed_text": seen, "submission": f"s{line}", "confined": True,
            "duration_s": 1.0}


def test_a_matched_practice_answer_is_a_passed_test_worth_nothing():
    plan = Assignment((Assigned("broadcast-loss"), Assigned("audit", 0.0)), name="week")
    out = learner_result([_row(2, "broadcast-loss", "fail", "(3,)", "(3, 3)"),
                          _row(3, "audit", "pass", "alignment", "alignment")], plan, {}, NOW)
    graded, practice = out["tests"]
    assert (graded["score"], graded["status"]) == (0.0, "failed")
    assert (practice["score"], practice["max_score"], practice["status"]) == (0.0, 0.0, "passed")
    assert out["score"] == 0.0
    assert out["output"] == "Ada: 0 of 1 points: 1 of 2 exercises matched what their checks observed."


def test_a_missed_or_missing_practice_answer_is_a_failed_test_worth_nothing():
    plan = Assignment((Assigned("broadcast-loss"), Assigned("audit", 0.0)), name="week")
    missed = learner_result([_row(2, "broadcast-loss", "pass", "(3, 3)", "(3, 3)"),
                             _row(3, "audit", "fail", "gradients", "alignment")], plan, {}, NOW)
    assert [t["status"] for t in missed["tests"]] == ["passed", "failed"]
    assert missed["output"] == "Ada: 1 of 1 points: 1 of 2 exercises matched what their checks observed."
    missing = learner_result([_row(2, "broadcast-loss", "pass", "(3, 3)", "(3, 3)")], plan, {}, NOW)
    assert [t["status"] for t in missing["tests"]] == ["passed", "failed"]
