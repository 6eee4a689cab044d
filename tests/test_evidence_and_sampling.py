"""Boundaries a one-character change would move, pinned with values known by hand.

A fake repair is caught by its evidence (a table on one side only, a row one
cell short); top-p keeps an id only while the mass above it is short of p
(four equal logits: each 1/4 exactly, so p = 1/2 keeps two); top-k keeps
only the k largest, however close the next one is.
"""

from __future__ import annotations

import torch

from engine.generate import sampling_distribution, top_p_filter
from tutor.model.verdict import first_difference

TABLE = {"type": "table", "title": "loss by step", "columns": ["step", "loss"], "rows": [[1, "2.5"], [2, "1.25"]]}


def test_a_table_on_the_clean_side_only_is_a_difference():
    assert first_difference([], [TABLE]) == "table 'loss by step' is on the clean side only"
    assert first_difference([TABLE], []) == "table 'loss by step' is on the yours side only"
    assert first_difference([TABLE], [TABLE]) is None


def test_a_row_one_cell_short_differs():
    short = {**TABLE, "rows": [[1, "2.5"], [2]]}
    sentence = first_difference([short], [TABLE])
    assert sentence is not None and sentence.startswith("table 'loss by step', row 2")


def test_top_p_drops_the_id_whose_mass_above_is_exactly_p():
    logits = torch.zeros(1, 4)                      # probabilities 1/4 each, exactly
    kept = torch.isfinite(top_p_filter(logits, 0.5))
    assert int(kept.sum()) == 2                     # mass above: 0, 1/4 (kept); 1/2, 3/4 (dropped)
    probs = sampling_distribution(logits, top_p=0.5)
    assert sorted(probs[0].tolist()) == [0.0, 0.0, 0.5, 0.5]


def test_top_k_of_one_keeps_only_the_largest_logit_however_close_the_next():
    logits = torch.tensor([[3.0, 2.9995, 1.0]])
    probs = sampling_distribution(logits, top_k=1)
    assert probs.tolist() == [[1.0, 0.0, 0.0]]
    two = sampling_distribution(logits, top_k=2)
    assert two[0, 2].item() == 0.0 and two[0, 0].item() > two[0, 1].item() > 0.0


# --- the instruments' table and a verdict's JSON ------------------------------------------------

class Instruments:
    """An instruments run as the runner hands it back: each side's table, or its error."""

    def __init__(self, evidence, errors=None):
        self.evidence, self.errors = evidence, errors or {}


def instruments_table(*rows):
    return [{"type": "table", "title": "Instruments on this engine", "columns": ["instrument", "status", "verdict"],
             "rows": [list(r) for r in rows]}, {"type": "table", "title": "CAUSALITY evidence", "rows": [["x", 1]]}]


def test_the_instruments_rows_pair_each_link_across_the_sides():
    from tutor.model.verdict import instruments_holding
    result = Instruments({
        "clean": instruments_table(("SHAPE", "holds", "ok"), ("CAUSALITY", "holds", "ok")),
        "yours": instruments_table(("SHAPE", "holds", "ok"), ("CAUSALITY", "fails", "position 3 saw position 5")),
    }, errors={"faulted": "the faulted side raised"})
    assert instruments_holding(result) == [
        {"link": "SHAPE", "clean": "holds", "clean_verdict": "ok", "yours": "holds", "yours_verdict": "ok"},
        {"link": "CAUSALITY", "clean": "holds", "clean_verdict": "ok", "yours": "fails",
         "yours_verdict": "position 3 saw position 5"},
    ]


def test_the_first_divergent_instrument_is_named_with_the_learners_verdict():
    from tutor.model.verdict import first_instrument_divergence
    same = Instruments({"clean": instruments_table(("SHAPE", "holds", "ok")),
                        "yours": instruments_table(("SHAPE", "holds", "ok"))})
    assert first_instrument_divergence(same) is None
    broke = Instruments({"clean": instruments_table(("SHAPE", "holds", "ok"), ("CAUSALITY", "holds", "ok")),
                         "yours": instruments_table(("SHAPE", "holds", "ok"), ("CAUSALITY", "fails", "leak at 3"))})
    assert first_instrument_divergence(broke) == "CAUSALITY: holds on clean, fails on yours — leak at 3"
    repaired = Instruments({"clean": instruments_table(("SHAPE", "fails", "odd clean")),
                            "yours": instruments_table(("SHAPE", "holds", "ok"))})
    assert first_instrument_divergence(repaired) == "SHAPE: fails on clean, holds on yours — odd clean"
    missing = Instruments({"clean": instruments_table(("LOOP", "holds", "ok"))}, errors={"yours": "raised"})
    assert first_instrument_divergence(missing) == "LOOP: holds on clean, did not run on yours — ok"


def test_a_verdicts_json_names_its_fields():
    from tutor.model.verdict import Verdict
    fixed = Verdict("fix", "fixed", "fixed: yours observes (3,)", yours_status="ok", yours_observed=[3])
    assert fixed.to_dict() == {"mode": "fix", "status": "fixed", "sentence": "fixed: yours observes (3,)",
                               "fixed": True, "difference": None, "prediction_correct": None, "seeds": [],
                               "hidden_seeds": []}
    broke = Verdict("break", "changed", "s", difference="row 2", prediction_correct=False)
    assert broke.to_dict() == {"mode": "break", "status": "changed", "sentence": "s", "fixed": None,
                               "difference": "row 2", "prediction_correct": False, "seeds": [], "hidden_seeds": []}
    judged = Verdict("fix", "fixed", "s", seeds=(0, 7, 11), hidden_seeds=(7, 11))
    assert (judged.to_dict()["seeds"], judged.to_dict()["hidden_seeds"]) == ([0, 7, 11], [7, 11])
    assert Verdict("fix", "could not run", "s").to_dict()["fixed"] is None
    assert Verdict("hunt", "not fixed", "s").to_dict()["fixed"] is False
