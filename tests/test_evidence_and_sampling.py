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
