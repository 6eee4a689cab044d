"""The pure grading of a worker's answer (``tutor.sandbox.result``), on answers built by hand.

No worker and no torch: each test hands ``grade`` an :class:`Answer` whose
sides say what they measured, and pins every field of the result the rules
give — which side is graded, the status when a graded side did not measure,
``differs``, the prediction as read, and what is kept per side.
"""

from __future__ import annotations

import pytest

from tutor.model.answers import AnswerError
from tutor.sandbox.protocol import Answer, SideResult
from tutor.sandbox.result import RunResult, grade, read_prediction


def ok(observed, evidence=None, **extra):
    return SideResult(status="ok", observed=observed, evidence=evidence or [], **extra)


def answer(duration_s=0.5, **sides):
    return Answer(job=7, torch="2.13.0+cpu", device="cpu", duration_s=duration_s, sides=sides)


def test_a_faulted_exercise_is_graded_on_its_faulted_side(catalog):
    ex = catalog.get("head-split")  # observe = faulted, choice a-d
    note = [{"type": "note", "text": "first divergence: head split"}]
    result = grade(ex, answer(clean=ok("a", duration_s=0.25, confined=True),
                              faulted=ok("b", note, duration_s=0.5, confined=True)), "B", seed=3)
    assert (result.id, result.status, result.correct) == ("head-split", "pass", True)
    assert (result.clean, result.faulted, result.observed, result.differs) == ("a", "b", "b", True)
    assert (result.prediction, result.prediction_text) == ("B", "b")
    assert (result.seed, result.duration_s, result.device, result.torch) == (3, 0.5, "cpu", "2.13.0+cpu")
    assert (result.fault, result.kind, result.confined) == ("head-split-reshape", "choice", True)
    assert result.side_durations_s == {"clean": 0.25, "faulted": 0.5}
    assert result.evidence == {"clean": [], "faulted": note}
    assert result.observations == {"clean": "a", "faulted": "b"}
    assert (result.errors, result.refused, result.tampered, result.timed_out, result.output) == ({}, {}, [], [], {})
    wrong = grade(ex, answer(clean=ok("a"), faulted=ok("b")), "a")
    assert (wrong.status, wrong.correct, wrong.prediction_text) == ("fail", False, "a")


def test_without_a_prediction_the_run_is_ok_and_ungraded(catalog):
    ex = catalog.get("head-split")
    result = grade(ex, answer(clean=ok("a"), faulted=ok("a")))
    assert (result.status, result.correct, result.prediction, result.prediction_text) == ("ok", None, None, None)
    assert result.differs is False  # the fault changed nothing: what 'tutor check' flags


def test_one_unconfined_side_makes_the_run_unconfined_and_no_side_leaves_it_unknown(catalog):
    ex = catalog.get("head-split")
    assert grade(ex, answer(clean=ok("a", confined=True), faulted=ok("b", confined=False))).confined is False
    assert grade(ex, answer()).confined is None


def test_the_clean_side_is_graded_when_the_exercise_observes_it(catalog):
    ex = catalog.get("linear-weight")  # observe = clean, a shape
    result = grade(ex, answer(clean=ok([3]), faulted=ok([2, 3])), "(3,)")
    assert (result.observed, result.status, result.correct) == ([3], "pass", True)
    # the graded side measured: the other side's error is kept, and does not stop the verdict
    result = grade(ex, answer(clean=ok([3]), faulted=SideResult(status="error", error="boom")), "(3,)")
    assert (result.status, result.observed, result.differs) == ("pass", [3], None)
    assert result.errors == {"faulted": "boom"} and result.faulted is None


def test_both_sides_are_graded_as_a_pair(catalog):
    ex = catalog.get("numpy-sharing")  # observe = both
    result = grade(ex, answer(clean=ok([1, 2]), faulted=ok([2, 2])))
    assert result.observed == [[1, 2], [2, 2]] and result.status == "ok" and result.differs is True


@pytest.mark.parametrize("faulted, status", [
    (SideResult(status="error", error="ValueError: no"), "error"),
    (SideResult(status="timeout", error="the check did not finish within 30 s and was stopped"), "timeout"),
    (SideResult(status="error"), "error"),
])
def test_a_graded_side_that_did_not_measure_sets_the_status(catalog, faulted, status):
    ex = catalog.get("head-split")
    result = grade(ex, answer(clean=ok("a"), faulted=faulted), "b")
    assert (result.status, result.observed, result.correct, result.differs) == (status, None, None, None)
    assert result.clean == "a" and result.faulted is None
    assert result.errors == {"faulted": faulted.error or "unknown error"}
    assert result.timed_out == (["faulted"] if status == "timeout" else [])
    assert result.prediction_text == "b"  # read before anything ran


def test_a_timeout_outranks_an_error_on_the_other_side(catalog):
    ex = catalog.get("numpy-sharing")
    result = grade(ex, answer(clean=SideResult(status="error", error="e"),
                              faulted=SideResult(status="timeout", error="t")))
    assert result.status == "timeout" and result.timed_out == ["faulted"]
    assert result.error == "clean: e; faulted: t"


def test_a_graded_side_missing_altogether_leaves_the_run_ok_but_unobserved(catalog):
    ex = catalog.get("head-split")
    result = grade(ex, answer(clean=ok("a")))
    assert (result.status, result.observed, result.differs) == ("ok", None, None)


def test_what_a_side_printed_refused_or_forged_is_kept_under_its_name(catalog):
    ex = catalog.get("head-split")
    result = grade(ex, answer(clean=ok("a"), faulted=ok("b", output="hello\n", refused=["tried to write ~/x: refused"],
                                                        tampered=2),
                              yours=ok("b", output="")))
    assert result.output == {"faulted": "hello\n"}
    assert result.refused == {"faulted": ["tried to write ~/x: refused"]}
    assert result.tampered == ["faulted"]
    assert result.observations["yours"] == "b" and "yours" in result.evidence


def test_a_number_is_matched_within_the_exercise_tolerance(catalog):
    ex = catalog.get("validation-split")
    assert ex.kind.name == "number" and ex.tolerance == pytest.approx(3e-3)
    observed = 0.739163
    near = grade(ex, answer(clean=ok(observed), faulted=ok(observed)), "0.741")
    far = grade(ex, answer(clean=ok(observed), faulted=ok(observed)), "0.735")
    assert (near.correct, far.correct) == (True, False)  # |0.741 - 0.739163| < 3e-3 < |0.735 - 0.739163|


def test_an_unreadable_prediction_raises_before_any_result(catalog):
    with pytest.raises(AnswerError):
        grade(catalog.get("head-split"), answer(clean=ok("a"), faulted=ok("b")), "z")
    assert read_prediction(catalog.get("head-split"), " C ") == "c"
    assert read_prediction(catalog.get("head-split"), None) is None


def test_a_cancelled_run_says_so_and_keeps_what_is_known(catalog):
    ex = catalog.get("head-split")
    result = RunResult.cancelled(ex, "B", when="before it started", device="cpu", torch="2.13.0", seed=4,
                                 duration_s=1.5)
    assert (result.status, result.errors) == ("cancelled", {"run": "the run was cancelled before it started"})
    assert (result.prediction, result.prediction_text, result.seed, result.duration_s) == ("B", "b", 4, 1.5)
    assert (result.device, result.torch, result.fault, result.kind) == ("cpu", "2.13.0", "head-split-reshape",
                                                                         "choice")
    plain = RunResult.cancelled(ex)
    assert plain.errors == {"run": "the run was cancelled"} and (plain.device, plain.torch) == ("-", "-")
    assert (plain.seed, plain.duration_s, plain.prediction_text) == (0, 0.0, None)
    assert RunResult.cancelled(ex, "zz").prediction_text is None  # unreadable: kept as typed, not read


def test_to_dict_keeps_the_json_fields_and_leaves_out_the_extra_sides(catalog):
    ex = catalog.get("head-split")
    data = grade(ex, answer(clean=ok("a"), faulted=SideResult(status="error", error="boom"), yours=ok("b")),
                 "b").to_dict()
    assert "observations" not in data
    assert data["error"] == "faulted: boom" and data["clean"] == "a" and data["status"] == "error"
    assert data["id"] == "head-split" and data["evidence"] == {"clean": [], "yours": []}
    assert RunResult.cancelled(ex).to_dict()["error"] == "run: the run was cancelled"  # every error names its side
    assert grade(ex, answer(clean=ok("a"), faulted=ok("b"))).to_dict()["error"] is None
