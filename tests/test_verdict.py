"""An edit-mode verdict, read off results built by hand: every sentence and field pinned.

Each expected value is worked out from the rules the verdict states (its
docstrings), not read back from a run: a fix is fixed when the learner's side
observes what the clean code observes and its evidence agrees row by row; a
hidden seed can only take a fixed verdict back; evidence cells that read as
numbers agree within 1 % relative, 1e-6 absolute or the exercise's tolerance.
No worker runs here.
"""

from __future__ import annotations

import pytest

from tutor.model.grading import Prediction
from tutor.model.verdict import (Verdict, evidence_reproduces, first_difference, first_instrument_divergence,
                                 instruments_holding, judge, judge_hidden, observe_break, read_break_prediction,
                                 same_observation)
from tutor.sandbox.protocol import Answer, SideResult
from tutor.sandbox.runner import RunResult, grade


@pytest.fixture(scope="module")
def cat(catalog):
    return catalog


@pytest.fixture(scope="module")
def choice(cat):
    """A choice exercise (answers shown as their key, tolerance 0)."""
    ex = cat.get("head-split")
    assert (ex.kind.name, ex.tolerance) == ("choice", 0.0)
    return ex


def table(title, rows, columns=("what", "value")):
    return {"type": "table", "title": title, "columns": list(columns), "rows": [list(r) for r in rows]}


def series(title, values):
    return {"type": "series", "title": title, "label": "", "values": list(values)}


def ok(observed, *evidence):
    return SideResult(status="ok", observed=observed, evidence=list(evidence))


def raised(error):
    return SideResult(status="error", error=error)


def result_of(ex, **sides):
    return grade(ex, Answer(job=1, torch="t", device="cpu", duration_s=0.1, sides=sides))


FACTS = table("Facts", [["first head", "kept"]])
MIXED = table("Facts", [["first head", "mixed"]])
MIXED_DIFFERENCE = "table 'Facts', row 1 (first head): value: yours mixed · clean kept"


# --- judge: fixed, not fixed, could not run ---------------------------------------------

def test_a_fix_that_observes_and_shows_what_clean_does_is_fixed_in_words(choice):
    verdict = judge(choice, result_of(choice, clean=ok("a", FACTS), repeat=ok("a", FACTS), yours=ok("a", FACTS)))
    assert verdict == Verdict("fix", "fixed", "fixed: it observes what the clean code observes, a", None, "ok", "a")
    hunt = judge(choice, result_of(choice, clean=ok("a", FACTS), yours=ok("a", FACTS)), "hunt")
    assert (hunt.mode, hunt.sentence) == ("hunt", "fixed: the audit observes what the clean code observes, a")


def test_a_hunt_fixed_where_no_link_fails_says_so_in_words_without_the_answer_value(choice):
    """The capstone's "none" (no link fails) is an answer's id: the sentence says what it means instead."""
    hunt = judge(choice, result_of(choice, clean=ok("none", FACTS), yours=ok("none", FACTS)), "hunt")
    assert hunt.sentence == "fixed: every audit link holds"


def test_the_same_observation_with_other_evidence_is_not_fixed(choice):
    verdict = judge(choice, result_of(choice, clean=ok("a", FACTS), repeat=ok("a", FACTS), yours=ok("a", MIXED)))
    assert verdict == Verdict("fix", "not fixed", "not fixed: yours observes a as the clean code does, but the "
                              f"evidence behind it differs — {MIXED_DIFFERENCE}", MIXED_DIFFERENCE, "ok", "a")


def test_another_observation_is_not_fixed_with_or_without_an_evidence_difference(choice):
    verdict = judge(choice, result_of(choice, clean=ok("a", FACTS), yours=ok("b", MIXED)))
    assert verdict == Verdict("fix", "not fixed", "not fixed: yours observes b, clean observes a; first difference: "
                              f"{MIXED_DIFFERENCE}", MIXED_DIFFERENCE, "ok", "b")
    verdict = judge(choice, result_of(choice, clean=ok("a", FACTS), yours=ok("b", FACTS)))
    assert verdict == Verdict("fix", "not fixed", "not fixed: yours observes b, clean observes a", None, "ok", "b")


def test_a_clean_observation_that_varies_is_matched_by_either_run_and_named(choice):
    varies = " (the clean code itself observed c and e on two runs: this measurement varies from run to run)"
    result = result_of(choice, clean=ok("c", FACTS), repeat=ok("e", FACTS), yours=ok("e", FACTS))
    assert evidence_reproduces(result)
    verdict = judge(choice, result)
    assert (verdict.status, verdict.sentence) == ("fixed", f"fixed: it observes what the clean code observes, e{varies}")
    verdict = judge(choice, result_of(choice, clean=ok("c", FACTS), repeat=ok("e", FACTS), yours=ok("d", FACTS)))
    assert verdict.sentence == f"not fixed: yours observes d, clean observes c{varies}"


def test_evidence_that_does_not_reproduce_on_the_clean_code_cannot_unfix_a_matching_observation(choice):
    clean = ok("a", table("Timing", [["backward ms", "10.2"], ["loss ms", "0.16"]]))
    repeat = ok("a", table("Timing", [["backward ms", "7.9"], ["loss ms", "0.16"]]))
    yours = ok("a", table("Timing", [["backward ms", "8.4"], ["loss ms", "0.5"]]))
    result = result_of(choice, clean=clean, repeat=repeat, yours=yours)
    assert not evidence_reproduces(result)
    difference = "table 'Timing', row 2 (loss ms): value: yours 0.5 · clean 0.16"
    verdict = judge(choice, result)
    assert verdict == Verdict("fix", "fixed", "fixed: it observes what the clean code observes, a (its evidence "
                              f"differs at {difference}, but the clean code's own evidence varies from run to run, "
                              "so only the observation counts)", difference, "ok", "a")


def test_a_repeat_that_did_not_measure_leaves_clean_the_only_run(choice):
    """Without a measured repeat, every row of clean's evidence counts, one on the clean side only included."""
    extra = table("Extra", [["x", "1"]])
    result = result_of(choice, clean=ok("a", FACTS, extra), repeat=raised("RuntimeError: boom"),
                       yours=ok("a", FACTS))
    assert evidence_reproduces(result)
    verdict = judge(choice, result)
    assert (verdict.status, verdict.difference) == ("not fixed", "table 'Extra' is on the clean side only")
    # with a measured repeat that lacks it, the clean code did not reproduce it: it is not held against yours
    result = result_of(choice, clean=ok("a", FACTS, extra), repeat=ok("a", FACTS), yours=ok("a", FACTS))
    assert not evidence_reproduces(result)
    assert judge(choice, result).sentence == "fixed: it observes what the clean code observes, a"


def test_the_exercises_tolerance_applies_to_its_evidence_cells(cat):
    ex = cat.get("hand-update")                         # a number, tolerance 0.001
    assert (ex.kind.name, ex.tolerance) == ("number", 0.001)
    clean, yours = ok(1.5, table("Step", [["w", "0"]])), ok(1.5, table("Step", [["w", "0.0005"]]))
    # 0.0005 apart: over 1e-6 absolute and 1 % of 0.0005 relative, within the exercise's 0.001
    assert judge(ex, result_of(ex, clean=clean, yours=yours)).status == "fixed"
    far = ok(1.5, table("Step", [["w", "0.002"]]))
    assert judge(ex, result_of(ex, clean=clean, yours=far)).difference == \
        "table 'Step', row 1 (w): value: yours 0.002 · clean 0"


def test_a_fix_is_judged_and_shown_in_the_exercises_kind(cat):
    shape = cat.get("broadcast-loss")                   # shapes are written (4, 1), not [4, 1]
    verdict = judge(shape, result_of(shape, clean=ok([4, 1], FACTS), yours=ok([4, 1], FACTS)))
    assert verdict.sentence == "fixed: it observes what the clean code observes, (4, 1)"
    verdict = judge(shape, result_of(shape, clean=ok([4], FACTS), repeat=ok([4, 1], FACTS), yours=ok([4, 4], MIXED)))
    assert verdict.sentence == ("not fixed: yours observes (4, 4), clean observes (4,) (the clean code itself "
                                "observed (4,) and (4, 1) on two runs: this measurement varies from run to run); "
                                f"first difference: {MIXED_DIFFERENCE}")
    verdict = judge(shape, result_of(shape, clean=ok([4], FACTS), yours=ok([4], MIXED)))
    assert verdict.sentence == ("not fixed: yours observes (4,) as the clean code does, but the evidence behind it "
                                f"differs — {MIXED_DIFFERENCE}")
    number = cat.get("hand-update")                     # a number, tolerance 0.001
    verdict = judge(number, result_of(number, clean=ok(1.0, FACTS), repeat=ok(1.0005, FACTS), yours=ok(1.0005, FACTS)))
    # 1.0 and 1.0005 are the same observation within 0.001: the clean code does not vary, yours matches it
    assert verdict.sentence == "fixed: it observes what the clean code observes, 1"
    assert judge(number, result_of(number, clean=ok(1.0, FACTS), yours=ok(1.002, FACTS))).status == "not fixed"


def test_evidence_a_side_did_not_give_is_an_empty_list(choice):
    """A RunResult made by hand may leave out a measured side's evidence: it counts as none."""
    def made(observations, evidence):
        return RunResult(id="x", status="ok", device="cpu", torch="t", fault=None, kind="choice",
                         observations=observations, evidence=evidence)

    t = table("T", [["x", "1"]])
    every = {"clean": "a", "repeat": "a", "yours": "a"}
    assert evidence_reproduces(made(every, {}))                           # nothing on either clean run: alike
    assert not evidence_reproduces(made(every, {"clean": [t]}))
    # the repeat gave none of clean's table, so it is not held against yours
    assert judge(choice, made(every, {"clean": [t]})).status == "fixed"
    alone = {"clean": "a", "yours": "a"}
    assert judge(choice, made(alone, {"clean": [t]})).difference == "table 'T' is on the clean side only"
    assert judge(choice, made(alone, {"yours": [t]})).difference == "table 'T' is on the yours side only"


def test_a_side_that_did_not_finish_is_not_fixed_and_says_why(choice):
    error = "NameError: name 'q' is not defined (model.py:40)"
    verdict = judge(choice, result_of(choice, clean=ok("a", FACTS), yours=raised(error)))
    assert verdict == Verdict("fix", "not fixed", f"not fixed: your side did not finish — {error}",
                              yours_status="error", yours_error=error)
    slow = SideResult(status="timeout", error="the check did not finish within 30 s and was stopped")
    verdict = judge(choice, result_of(choice, clean=ok("a", FACTS), yours=slow))
    assert (verdict.yours_status, verdict.yours_error) == ("timeout", slow.error)
    verdict = judge(choice, result_of(choice, clean=ok("a", FACTS)))
    assert (verdict.status, verdict.yours_status, verdict.sentence) == (
        "not fixed", "missing", "not fixed: your side did not finish — your side did not run")
    lost = RunResult(id="x", status="error", device="cpu", torch="t", fault=None, kind="choice",
                     observations={"clean": "a"}, errors={"run": "the check worker stopped"})
    assert judge(choice, lost).sentence == "not fixed: your side did not finish — the check worker stopped"


def test_a_clean_side_that_did_not_measure_gives_could_not_run_in_every_mode(choice):
    broke = "RuntimeError: the clean code broke"
    result = result_of(choice, clean=raised(broke), yours=ok("a", FACTS))
    verdict = judge(choice, result)
    assert verdict == Verdict("fix", "could not run", "the clean side did not measure, so nothing to compare with: "
                              f"{broke}", yours_status="ok", yours_observed="a")
    assert (verdict.fixed, verdict.ran) == (None, False)
    assert judge(choice, result, "hunt").mode == "hunt"
    verdict = observe_break(choice, result, "a")
    assert verdict == Verdict("break", "could not run", f"the clean side did not measure: {broke}",
                              yours_status="ok", yours_observed="a")
    failed = result_of(choice, clean=raised(broke), yours=raised("ValueError: v"))
    assert (judge(choice, failed).yours_status, judge(choice, failed).yours_error) == ("error", "ValueError: v")
    cancelled = RunResult.cancelled(choice, None, when="before it started")
    assert judge(choice, cancelled).sentence == ("the clean side did not measure, so nothing to compare with: "
                                                 "the run was cancelled before it started")
    bare = RunResult(id="x", status="timeout", device="cpu", torch="t", fault=None, kind="choice")
    assert observe_break(choice, bare).sentence == "the clean side did not measure: the run ended timeout"
    both = RunResult(id="x", status="error", device="cpu", torch="t", fault=None, kind="choice",
                     errors={"run": "the run's own sentence", "clean": "clean's sentence"})
    assert judge(choice, both).sentence.endswith(": clean's sentence")


def test_what_a_verdict_is_in_each_mode_and_status():
    assert Verdict("break", "fixed", "s").fixed is None
    assert (Verdict("hunt", "fixed", "s").fixed, Verdict("fix", "not fixed", "s").fixed) == (True, False)
    assert Verdict("fix", "syntax error", "s").fixed is False
    assert [Verdict("fix", s, "x").ran for s in ("fixed", "not fixed", "could not run", "syntax error")] == \
        [True, True, False, False]
    assert Verdict("break", "changed", "s").ran and Verdict("break", "unchanged", "s").ran


# --- hidden seeds -----------------------------------------------------------------------

def _fixed_at_seed_0(choice):
    verdict = judge(choice, result_of(choice, clean=ok("a", FACTS), yours=ok("a", FACTS)))
    assert verdict.fixed
    return verdict


def test_hidden_seeds_confirm_a_fix_by_name_and_say_when_they_could_not_tell_more(choice):
    seen = _fixed_at_seed_0(choice)
    at = {seed: result_of(choice, clean=ok("a", table("Facts", [["seed", seed]])),
                          yours=ok("a", table("Facts", [["seed", seed]]))) for seed in (7, 11)}
    verdict = judge_hidden(choice, seen, 0, [(7, at[7]), (11, at[11])])
    assert verdict == Verdict("fix", "fixed", f"{seen.sentence}; fixed at 2 hidden seeds too", None, "ok", "a",
                              seeds=(0, 7, 11), hidden_seeds=(7, 11))
    one = judge_hidden(choice, seen, 3, [(7, at[7])])
    assert (one.sentence, one.seeds, one.hidden_seeds) == (f"{seen.sentence}; fixed at 1 hidden seed too", (3, 7), (7,))
    same = result_of(choice, clean=ok("a", FACTS), yours=ok("a", FACTS))
    verdict = judge_hidden(choice, seen, 0, [(7, same), (11, same)])
    assert verdict.sentence == (f"{seen.sentence}; fixed at 2 hidden seeds too (this check's clean evidence is "
                                "the same at every seed, so they could not tell more)")
    # the same at the first two seeds, not at the third: the seeds told more
    verdict = judge_hidden(choice, seen, 0, [(7, same), (11, same), (13, at[7])])
    assert verdict.sentence == f"{seen.sentence}; fixed at 3 hidden seeds too"
    verdict = judge_hidden(choice, seen, 0, [(7, at[7]), (11, same), (13, same)])
    assert verdict.sentence == f"{seen.sentence}; fixed at 3 hidden seeds too"


def test_a_fix_that_fails_at_a_hidden_seed_is_not_fixed_there(choice):
    seen = _fixed_at_seed_0(choice)
    good = result_of(choice, clean=ok("a", FACTS), yours=ok("a", FACTS))
    bad = result_of(choice, clean=ok("b", FACTS), yours=ok("a", FACTS))
    verdict = judge_hidden(choice, seen, 0, [(7, good), (11, bad), (13, bad)])
    # neither the seed nor what either side observed there: a later hand-in could copy them
    assert verdict == Verdict("fix", "not fixed", "not fixed at a hidden seed (fixed at seed 0, the one you could "
                              "see): it observes something other than what the clean code observes there", None,
                              "ok", "a", seeds=(0, 7, 11, 13), hidden_seeds=(7, 11, 13))
    differs = result_of(choice, clean=ok("a", table("Facts", [["seed", 7]])), yours=ok("a", FACTS))
    assert judge_hidden(choice, seen, 0, [(7, differs)]).sentence.endswith(
        "it observes what the clean code observes there, but the evidence behind it differs")
    stopped = result_of(choice, clean=ok("a", FACTS), yours=raised("RuntimeError: seed 7 of 2**31"))
    assert judge_hidden(choice, seen, 0, [(7, stopped)]).sentence.endswith("your side did not finish there")
    hunted = judge_hidden(choice, judge(choice, good, "hunt"), 0, [(7, bad)], "hunt")
    assert (hunted.mode, hunted.status) == ("hunt", "not fixed")


def test_a_hidden_seed_whose_clean_side_did_not_measure_leaves_the_fix_not_judged(choice):
    seen = _fixed_at_seed_0(choice)
    broken = result_of(choice, clean=raised("RuntimeError: out of memory"), yours=ok("a", FACTS))
    verdict = judge_hidden(choice, seen, 0, [(7, broken)])
    assert verdict == Verdict("fix", "not fixed", "not judged: the clean code did not measure at a hidden seed, so "
                              "there was nothing to compare with; grade it again", None, "ok", "a",
                              seeds=(0, 7), hidden_seeds=(7,))


def test_hidden_seeds_never_change_a_verdict_that_is_not_fixed(choice):
    unfixed = judge(choice, result_of(choice, clean=ok("a", FACTS), yours=ok("b", FACTS)))
    good = result_of(choice, clean=ok("b", FACTS), yours=ok("b", FACTS))
    assert judge_hidden(choice, unfixed, 0, [(7, good)]) == Verdict(
        "fix", "not fixed", "not fixed: yours observes b, clean observes a", None, "ok", "b", seeds=(0,))
    seen = _fixed_at_seed_0(choice)
    assert judge_hidden(choice, seen, 5, []) == Verdict("fix", "fixed", seen.sentence, None, "ok", "a", seeds=(5,))
    # judged again where it is not fixed: only its own seed is named, whatever it carried before
    carried = Verdict("fix", "not fixed", "s", seeds=(0, 7), hidden_seeds=(7,))
    assert (judge_hidden(choice, carried, 0, [(9, good)]).seeds, judge_hidden(choice, carried, 0, []).hidden_seeds) \
        == ((0,), ())


# --- break --------------------------------------------------------------------------------

def test_a_break_that_changes_the_observation_names_clean_then_yours(choice):
    verdict = observe_break(choice, result_of(choice, clean=ok("a", FACTS), yours=ok("b", MIXED)), "b")
    assert verdict == Verdict("break", "changed", "your fault changes the observation: a → b; first divergence: "
                              f"{MIXED_DIFFERENCE}", MIXED_DIFFERENCE, "ok", "b", prediction_correct=True)
    verdict = observe_break(choice, result_of(choice, clean=ok("a", FACTS), yours=ok("b", FACTS)), "c")
    assert (verdict.sentence, verdict.prediction_correct) == ("your fault changes the observation: a → b", False)


def test_a_break_the_check_cannot_see_is_unchanged_against_either_clean_run(choice):
    verdict = observe_break(choice, result_of(choice, clean=ok("a", FACTS), yours=ok("a", FACTS)))
    assert verdict == Verdict("break", "unchanged", "your fault leaves the observation as it is (a); the evidence "
                              "is the same too", None, "ok", "a")
    verdict = observe_break(choice, result_of(choice, clean=ok("a", FACTS), yours=ok("a", MIXED)))
    assert verdict.sentence == f"your fault leaves the observation as it is (a); the evidence diverges at " \
                               f"{MIXED_DIFFERENCE}"
    assert verdict.difference == MIXED_DIFFERENCE
    # the repeat observed e: a learner's side observing e has not changed what the clean code can observe
    varying = result_of(choice, clean=ok("c", FACTS), repeat=ok("e", FACTS), yours=ok("e", FACTS))
    assert observe_break(choice, varying).status == "unchanged"


def test_a_break_that_stops_the_check_grades_an_exception_named_as_the_prediction(choice):
    error = "RuntimeError: shapes cannot be multiplied (linear.py:134)"
    result = result_of(choice, clean=ok("a", FACTS), yours=raised(error))
    verdict = observe_break(choice, result, "runtimeerror")
    assert verdict == Verdict("break", "changed", f"your fault stops the check: {error}", yours_status="error",
                              yours_error=error, prediction_correct=True)
    assert observe_break(choice, result, "ValueError").prediction_correct is False
    assert observe_break(choice, result, "the heads mix positions").prediction_correct is None
    assert observe_break(choice, result, "b").prediction_correct is False  # a choice, and nothing was observed
    assert observe_break(choice, result).prediction_correct is None
    assert observe_break(choice, result, "").prediction_correct is None
    slow = SideResult(status="timeout", error="RuntimeError: did not finish within 3 s")
    stopped = observe_break(choice, result_of(choice, clean=ok("a", FACTS), yours=slow), "RuntimeError")
    assert (stopped.status, stopped.yours_status, stopped.prediction_correct) == ("changed", "timeout", None)


def test_a_break_is_read_and_shown_in_the_exercises_kind(cat):
    shape = cat.get("broadcast-loss")                   # shapes are written (4, 1), not [4, 1]
    assert shape.kind.name == "shape"
    verdict = observe_break(shape, result_of(shape, clean=ok([4], FACTS), yours=ok([4, 1], FACTS)), "(4, 1)")
    assert (verdict.sentence, verdict.prediction_correct) == ("your fault changes the observation: (4,) → (4, 1)", True)
    verdict = observe_break(shape, result_of(shape, clean=ok([4], FACTS), yours=ok([4], FACTS)))
    assert verdict.sentence == "your fault leaves the observation as it is ((4,)); the evidence is the same too"
    number = cat.get("hand-update")                     # a number, tolerance 0.001
    within = result_of(number, clean=ok(1.0, FACTS), yours=ok(1.0005, FACTS))
    verdict = observe_break(number, within, "1.0")
    assert (verdict.status, verdict.prediction_correct) == ("unchanged", True)   # 0.0005 off: within 0.001
    assert observe_break(number, within, "1.003").prediction_correct is False    # 0.0025 off: outside it
    assert observe_break(number, result_of(number, clean=ok(1.0, FACTS), yours=ok(1.002, FACTS))).status == "changed"


def test_a_break_prediction_reads_as_the_kind_or_is_kept_as_free_text(cat):
    shape = cat.get("broadcast-loss")
    assert read_break_prediction(shape, "(4, 1)") == (Prediction([4, 1], "(4, 1)"), "(4, 1)")
    assert read_break_prediction(shape, "  it broadcasts  ") == (None, "it broadcasts")
    assert read_break_prediction(shape, "   ") == (None, None)
    assert read_break_prediction(shape, None) == (None, None)


# --- observations and evidence ------------------------------------------------------------

def test_observations_are_equal_item_by_item_with_nan_equal_only_to_nan(cat, choice):
    nan = float("nan")
    assert same_observation(choice, nan, nan) and same_observation(choice, [1.0, nan], [1.0, nan])
    assert not same_observation(choice, 1.0, nan) and not same_observation(choice, nan, 1.0)
    assert not same_observation(choice, [1.0], [1.0, 2.0]) and not same_observation(choice, [1.0, 2.0], [1.0])
    assert not same_observation(choice, [1.0, 2.0], [1.0, 3.0])
    assert not same_observation(choice, "a", "b")
    assert not same_observation(choice, ["a"], "a") and not same_observation(choice, "a", ["a"])
    number = cat.get("hand-update")
    assert same_observation(number, 1.0, 1.0005) and not same_observation(number, 1.0, 1.002)
    assert not same_observation(number, 1.0, "a word")  # not a number: no match, no exception
    assert not same_observation(number, "a word", 1.0)  # nor when reading it as one raises


def test_notes_and_evidence_marked_as_varying_are_never_compared():
    note = {"type": "note", "text": "a remark"}
    assert first_difference([note], []) is None and first_difference([], [note]) is None
    varying = table("A fresh torch.empty(4), unfilled (varies from run to run)", [["x", "1"]])
    other = table("A fresh torch.empty(4), unfilled (varies from run to run)", [["x", "2"]])
    assert first_difference([varying], [other]) is None
    assert first_difference([varying], []) is None and first_difference([], [varying]) is None
    assert first_difference(["not an item", 3], ["nor this"]) is None


def test_a_side_only_evidence_item_is_named_with_the_sides_names():
    t = table("T", [["x", "1"]])
    assert first_difference([t], [], "mine", "ref") == "table 'T' is on the mine side only"
    assert first_difference([], [t], "mine", "ref") == "table 'T' is on the ref side only"
    s = series("loss", [1.0])
    assert first_difference([s], [], repeat=[]) == "series 'loss' is on the yours side only"
    # the clean code gave it on one of its two runs only: not held against either side
    assert first_difference([t], [], repeat=[t]) is None
    assert first_difference([], [t], repeat=[]) is None
    assert first_difference([], [t], repeat=[t]) == "table 'T' is on the clean side only"
    untitled = {"type": "table", "rows": []}
    assert first_difference([untitled], []) == "table '' is on the yours side only"
    assert first_difference([{"title": "odd"}], []) == "? 'odd' is on the yours side only"


def test_a_differing_row_names_its_number_the_cells_both_sides_share_and_each_changed_cell():
    clean = table("Loss", [[1, "2.5", "ok"], [2, "1.25", "ok"]], columns=("step", "loss", "state"))
    yours = table("Loss", [[1, "2.5", "ok"], [2, "9", "bad"]], columns=("step", "loss", "state"))
    # the row is named by the cells both sides share ("step 2"), never by a value of one side ("bad")
    assert first_difference([yours], [clean]) == "table 'Loss', row 2 (step 2): loss: yours 9 · clean 1.25; state: " \
                                                 "yours bad · clean ok"
    digits = table("Loss", [[1, 2], [3, 4]], columns=("a", "b", "c"))     # columns that do not fit the rows
    assert first_difference([digits], [table("Loss", [[1, 2], [3, 5]])]) == \
        "table 'Loss', row 2: cell 2: yours 4 · clean 5"
    short = table("Loss", [[1, "2.5", "ok"], [2]])
    assert first_difference([short], [clean], "mine", "ref") == "table 'Loss', row 2: mine 2 · ref 2, 1.25, ok"
    assert first_difference([clean], [short]) == "table 'Loss', row 2 (step 2): yours 2, 1.25, ok · clean 2"
    labelled = table("Banned", [[0, 3, "-inf"], [1, 0, "-inf"]], columns=("row", "token", "logit"))
    missed = table("Banned", [[0, 3, "0"], [1, 0, "-inf"]], columns=("row", "token", "logit"))
    # a cell that reads as a number ("-inf", "0.2") is a value, not a name: the shared leading ones name the row
    assert first_difference([missed], [labelled]) == "table 'Banned', row 1 (row 0, token 3): logit: yours 0 · clean -inf"
    named = table("Facts", [["first head", "mixed"]], columns=("quantity", "value"))
    renamed = table("Facts", [["last head", "mixed"]], columns=("quantity", "value"))
    assert first_difference([renamed], [named]) == "table 'Facts', row 1: quantity: yours last head · clean first head"


def test_a_table_without_rows_or_columns_or_a_series_without_values_has_none():
    bare = {"type": "table", "title": "T"}
    one = {"type": "table", "title": "T", "rows": [["a", "1"]]}
    assert first_difference([bare], [one]) == "table 'T' has 0 rows on the yours side and 1 on the clean side"
    assert first_difference([one], [bare]) == "table 'T' has 1 rows on the yours side and 0 on the clean side"
    other = {"type": "table", "title": "T", "rows": [["a", "2"]]}
    assert first_difference([other], [one], repeat=[bare]) is None    # the repeat gave no row: none compared
    assert first_difference([one], [other]) == "table 'T', row 1 (a): cell 2: yours 1 · clean 2"
    points, none = series("s", [1.0, 2.0]), {"type": "series", "title": "s"}
    assert first_difference([none], [points]) == "series 's' has 0 points on the yours side and 2 on the clean side"
    assert first_difference([points], [none]) == "series 's' has 2 points on the yours side and 0 on the clean side"
    assert first_difference([series("s", [5.0, 6.0])], [points], repeat=[none]) is None


def test_items_skipped_on_the_way_do_not_stop_the_comparison():
    note = {"type": "note", "text": "a remark"}
    t, changed, extra = table("T", [["x", "1"]]), table("T", [["x", "2"]]), table("X", [["y", "1"]])
    assert first_difference([note, changed], [t]) == "table 'T', row 1 (x): value: yours 2 · clean 1"
    # X is on the clean code's repeat only: skipped, and T is still compared
    assert first_difference([extra, changed], [t], repeat=[extra, t]) == \
        "table 'T', row 1 (x): value: yours 2 · clean 1"


def test_rows_or_points_more_or_fewer_are_a_difference_unless_the_clean_code_varies_in_count():
    two, three = table("T", [["a", "1"], ["b", "2"]]), table("T", [["a", "1"], ["b", "2"], ["c", "3"]])
    assert first_difference([three], [two]) == "table 'T' has 3 rows on the yours side and 2 on the clean side"
    assert first_difference([two], [three], "mine", "ref") == "table 'T' has 2 rows on the mine side and 3 on the " \
                                                              "ref side"
    assert first_difference([three], [two], repeat=[two]) == first_difference([three], [two])
    assert first_difference([three], [two], repeat=[three]) is None
    s2, s3 = series("loss", [3.0, 2.0]), series("loss", [3.0, 2.0, 1.0])
    assert first_difference([s2], [s3]) == "series 'loss' has 2 points on the yours side and 3 on the clean side"
    assert first_difference([s3], [s2], "mine", "ref") == "series 'loss' has 3 points on the mine side and 2 on " \
                                                          "the ref side"
    assert first_difference([s3], [s2], repeat=[s3]) is None
    assert first_difference([s3], [s2], repeat=[s2]) is not None


def test_only_what_the_clean_code_reproduces_exactly_is_compared():
    clean = table("T", [["ms", "10.2"], ["rows", "4"], ["tail", "1"]])
    repeat = table("T", [["ms", "7.9"], ["rows", "4"]])             # row 1 varies; row 3 is missing on the repeat
    yours = table("T", [["ms", "30"], ["rows", "4"], ["tail", "9"]])
    assert first_difference([yours], [clean], repeat=[repeat]) is None
    assert first_difference([yours], [clean]) == "table 'T', row 1 (ms): value: yours 30 · clean 10.2"
    wrong = table("T", [["ms", "30"], ["rows", "5"], ["tail", "9"]])
    assert first_difference([wrong], [clean], repeat=[repeat]) == "table 'T', row 2 (rows): value: yours 5 · clean 4"
    values, again = series("s", [1.0, 2.0, 3.0]), series("s", [1.5, 2.0])
    assert first_difference([series("s", [9.0, 2.0, 9.0])], [values], repeat=[again]) is None
    assert first_difference([series("s", [9.0, 7.0, 9.0])], [values], "mine", "ref", repeat=[again]) == \
        "series 's', point 2: mine 7 · ref 2"
    nan = float("nan")
    assert first_difference([series("s", [1.0, 5.0])], [series("s", [nan, 2.0])], repeat=[series("s", [nan, 2.0])]) \
        == "series 's', point 1: yours 1 · clean nan"


def test_numeric_cells_agree_within_the_tolerances_and_others_must_be_equal():
    def agree(a, b, tolerance=0.0):
        return first_difference([table("T", [[a]])], [table("T", [[b]])], tolerance=tolerance) is None

    assert agree("804,224", 804224) and agree("12.5%", "12.5") and agree("1.0", "1")
    assert agree("100", "100.99") and not agree("100", "102")             # 1 % of the larger
    assert agree("-100", "-100.99") and not agree("-100", "-102")
    assert agree("100", "101.005") and agree("101.005", "100")             # 1 % of the larger, not the smaller
    assert agree("0", "1e-7") and not agree("0", "1e-5")                    # 1e-6 absolute
    assert agree("1", "1.5", tolerance=0.5) and not agree("1", "1.5", tolerance=0.25)
    assert agree("nan", "nan") and not agree("nan", "1") and not agree("1", "nan")
    assert agree("inf", "inf") and not agree("inf", "1e308") and not agree("-inf", "inf")
    assert agree("kept", "kept") and not agree("kept", "mixed")
    assert not agree(True, "1") and agree(True, True) and not agree(True, False)
    # a cell that is not a number agrees when it is equal (True == 1) or prints the same (True, "True")
    assert agree(True, 1) and agree(True, "True") and not agree("2X", "2")
    # within the exercise's tolerance a cell is not named among the changed ones
    assert first_difference([table("T", [["0", "5"]])], [table("T", [["0.0005", "6"]])], tolerance=0.001) == \
        "table 'T', row 1: value: yours 5 · clean 6"


# --- the instruments run ---------------------------------------------------------------------

class Instruments:
    """An instruments run as the runner hands it back: each side's evidence, and the errors of the others."""

    def __init__(self, evidence, errors=None):
        self.evidence, self.errors = evidence, errors or {}


def instruments(*rows, title="Instruments on this engine"):
    return [{"type": "table", "title": title, "rows": [list(r) for r in rows]}]


def test_instruments_rows_come_from_the_instruments_tables_of_clean_faulted_and_yours():
    result = Instruments({
        "yours": instruments(("LOOP", "holds", "ok"), ("SHAPE", "fails", "(2, 3)")),
        "repeat": instruments(("SHAPE", "skip")),
        "faulted": instruments(("SHAPE", "skip")) + [series("Instruments over time", [1.0])],
        "clean": instruments(("SHAPE", "holds")) + instruments(("LEAK", "fails", "x"), title="Other instruments"),
    })
    assert instruments_holding(result) == [
        {"link": "SHAPE", "clean": "holds", "clean_verdict": "", "faulted": "skip", "faulted_verdict": "",
         "yours": "fails", "yours_verdict": "(2, 3)"},
        {"link": "LOOP", "yours": "holds", "yours_verdict": "ok"},
    ]
    assert instruments_holding(Instruments({}, {"clean": "raised"})) == []
    assert instruments_holding(Instruments({"clean": [{"type": "table", "title": "Instruments"}]})) == []


def test_the_first_divergent_instrument_says_which_side_did_not_run():
    result = Instruments({"yours": instruments(("LOOP", "holds", "ok"))})
    assert first_instrument_divergence(result) == "LOOP: did not run on clean, holds on yours"
    result = Instruments({"clean": instruments(("LOOP", "holds", "the loss falls")),
                          "yours": instruments(("LOOP", "skip", "no optimizer"))})
    assert first_instrument_divergence(result) == "LOOP: holds on clean, skip on yours — the loss falls"
    result = Instruments({"clean": instruments(("LOOP", "holds", "")), "yours": instruments(("LOOP", "fails", ""))})
    assert first_instrument_divergence(result) == "LOOP: holds on clean, fails on yours"


def test_a_reading_with_a_unit_agrees_within_the_tolerance_of_its_number_and_only_in_the_same_unit():
    """A memory reading "2,816 KiB" against "2,817 KiB" is the jitter EVIDENCE_REL_TOL allows (it was compared
    as text and named as the difference, hiding the real one); a unit that differs never agrees."""
    clean = table("Peak", [["peak intermediates", "2,817 KiB"]])
    assert first_difference([table("Peak", [["peak intermediates", "2,816 KiB"]])], [clean]) is None
    assert first_difference([table("Peak", [["peak intermediates", "2,817 MiB"]])], [clean]) == \
        "table 'Peak', row 1 (peak intermediates): value: yours 2,817 MiB · clean 2,817 KiB"
    assert first_difference([table("Peak", [["peak intermediates", "3,400 KiB"]])], [clean]) == \
        "table 'Peak', row 1 (peak intermediates): value: yours 3,400 KiB · clean 2,817 KiB"
