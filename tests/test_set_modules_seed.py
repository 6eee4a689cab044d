"""Set ``modules``: the seed item of a parameter registered after the optimizer
(seed 000 §3), through the real worker."""

import pytest

from helpers import fact


def test_late_parameter_needs_add_param_group(run):
    r = run("late-parameter", "yes, no, no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [True, True, True] and r.faulted == [True, False, False]
    faulted = fact(r, "faulted", "The gain added after the optimizer")
    assert faulted["value: start -> after 3 steps"] == "1.0000 -> 1.0000"
    # Without the optimizer, zero_grad never reaches the gain, so its gradient adds up: at unchanged
    # gain the third .grad is the sum of the three steps' own gradients, larger each time here.
    g1, g2, g3 = (float(v) for v in faulted["its .grad at each of the 3 steps"].split(", "))
    assert abs(g3) > abs(g2) > abs(g1)
    clean = fact(r, "clean", "The gain added after the optimizer")
    assert float(clean["its .grad at each of the 3 steps"].split(", ")[0]) == pytest.approx(g1)  # same first step
    assert fact(r, "faulted", "Counting tensors") == {"model.parameters()": "3", "optimizer.param_groups": "2"}


def test_an_unfilled_table_is_not_initialised(run):
    r = run("empty-unfilled", "no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean is True and r.faulted is False
    # 8,192 draws of N(0, 0.02): the sample std is 0.02 within a few tenths of a percent
    assert abs(float(fact(r, "clean", "PositionTable(64, 128)")["what normal_(std=0.02) gives"]) - 0.02) < 5e-4
