"""Set ``training``: the seed items about what one update is (seed 001; seed
000 §7), through the real worker, pinned by hand where the setup allows."""

import pytest

from helpers import fact


def test_step_per_microbatch(run):
    r = run("step-per-microbatch", "4, no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [1, True] and r.faulted == [4, False]
    clean, faulted = (fact(r, side, "One full batch") for side in ("clean", "faulted"))
    # Equal microbatches of 2 rows each hold a quarter of the targets, so the weighted gradients add
    # up to the full batch's exactly: one update, float64 rounding apart (2e-16 on CPU).
    assert float(clean["max |Δ weights| between the routes"]) < 1e-12
    # AdamW's first update moves each weight by about lr = 1e-3; four of them move it by about 4e-3
    # (a later step can exceed lr a little: when the gradient grows, m_hat, with its short memory,
    # outruns sqrt(v_hat), with its long one; 4.011e-3 measured on CPU).
    assert float(clean["max |change| of the microbatch route's weights"]) == pytest.approx(1e-3, rel=0.01)
    assert float(faulted["max |change| of the microbatch route's weights"]) == pytest.approx(4e-3, rel=0.02)
    assert float(faulted["max |Δ weights| between the routes"]) > 1e-3
