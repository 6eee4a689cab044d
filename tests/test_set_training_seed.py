"""Set ``training``: the seed items about what one update is (seed 001; seed
000 §7), through the real worker, pinned by hand where the setup allows."""

import math

import pytest

from exercises.outcome import fmt
from helpers import fact, facts, graded, rows


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


def test_clip_nonfinite_cannot_repair_the_forward(run):
    r = run("clip-nonfinite", "no, no, yes")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [False, False, True] and r.faulted is None  # no fault: the engine as shipped
    facts = fact(r, "clean", "One train_step with max_norm")
    assert facts["loss"] == "nan" and facts["gradient norm the optimizer used (after clipping)"] == "nan"
    # The one-layer small GPT holds 54,272 values; NaN reaches every gradient and so every weight.
    n = facts["non-finite weights after the step"].split(" of ")
    assert n[0] == n[1] == "54,272"
    # Graded: the healthy weights (all but the planted +inf) that the step turned NaN: every one.
    assert facts["finite before the step, NaN after it (graded)"] == "54,271 of 54,271"


def test_mode_switches_are_not_steps(run):
    r = run("mode-not-step", "no, yes, no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [False, True, False]
    facts = fact(r, "clean", "Mode switches")
    assert facts["loss.backward() in eval mode: parameters with a finite .grad"] == "24 of 24"
    assert facts["eval-mode loss requires grad"] == "True"  # eval mode does not stop autograd


def test_steps_not_epoch_covers_about_1_minus_1_over_e(run):
    r = run("steps-not-epoch", "0.63")
    assert r.status == "pass", (r.status, r.error, r.observed)
    # N = 180,000 training tokens, 703 steps of 8 x 32 targets. A position is missed by all 5,624
    # windows with probability (1 - 32/N)^5624 ~ e^-1, so about 1 - 1/e = 0.632 are scored.
    import math
    p_missed = (1 - 32 / 180_000) ** (703 * 8)
    assert abs(r.clean - (1 - p_missed)) < 0.01 and abs(1 - p_missed - (1 - math.exp(-1))) < 0.002
    assert r.clean == 0.636  # CPU, seed 0
    times = fact(r, "clean", "How often each position")
    assert sum(int(v.replace(",", "")) for v in times.values()) == 180_000


def test_fp8_scaling_without_a_scale_flushes_everything(run):
    r = run("fp8-scaling", "1")
    assert r.status == "pass", (r.status, r.error, r.observed)
    # N(0, 1) * 1e-5 has max |x| about 4e-5, two orders below e4m3's smallest subnormal 2^-9: all 0.
    assert r.clean == 0.0 and r.faulted == 1.0
    clean = fact(r, "clean", "1,000 values")
    assert clean["e4m3: largest / smallest normal"] == "448 / 0.015625"
    assert float(clean["max |x|"]) < 2.0 ** -9 / 10
    # Scaled, 3 mantissa bits: round-to-nearest keeps every value within 1/16 relative error.
    assert float(clean["median relative error of the rest"]) < 1 / 16


def test_reversed_stress_rewards_transitions_not_tokens(run):
    r = run("reversed-stress", "yes, no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [True, False]
    losses = {row[0]: row[1:] for row in rows(r, "clean", "Stress loss")}
    # By symmetry of 0 and 1 in the training string, repeated ones score exactly as seed 001's repeated
    # zeros (3.686117), and the reversed string exactly as the training string itself (0.025389).
    assert float(losses["1 1 1 1 1 1 1 1 1"][1]) == pytest.approx(3.686117, abs=1e-5)
    assert float(losses["1 0 1 0 1 0 1 0 1"][1]) == pytest.approx(0.025389, abs=1e-5)
    assert losses["1 1 1 1 1 1 1 1 1"][0] == losses["1 0 1 0 1 0 1 0 1"][0] == "0.693147"  # ln 2, zero table


def test_teacher_forcing_one_pass_equals_prefixes(run):
    r = run("teacher-forcing", "yes")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean is False and r.faulted is True
    assert float(fact(r, "clean", "Agreement")["max |Δ|"]) < 1e-5
    per_t = {row[0]: row[1:] for row in rows(r, "faulted", "Loss at each position")}
    # Non-causal: the last position's prefix is the whole input, so it still agrees; earlier ones that
    # read later tokens do not (t = 0 included: alone it sees one token, in the pass all twelve).
    assert per_t["11"][0] == per_t["11"][1]
    assert sum(a != b for a, b in per_t.values()) >= 10


def test_evaluate_restores_the_mode_even_on_an_error(run):
    r = run("evaluate-on-error", "yes, no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [True, True] and r.faulted == [True, False]
    calls = {row[0]: row[1:] for row in rows(r, "faulted", "evaluate() called from train mode")}
    assert calls["too long (2, 40)"][0] == "ValueError: sequence length 40 exceeds block_size 32"
    assert fact(r, "faulted", "Next training forward")["dropout active (two forwards differ)"] == "False"
    assert fact(r, "clean", "Next training forward")["dropout active (two forwards differ)"] == "True"


def test_evaluate_restores_the_roots_mode_not_a_deliberate_mix(run):
    # Graded on the engine as shipped: model.train(True) in the finally sets every submodule, so the
    # first block the caller kept in eval mode trains again (its residual dropout zeroes about 0.1).
    r = run("evaluate-mixed-modes", "yes, no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [True, False] and r.faulted == [True, True]
    modes = {row[0]: row[1:] for row in rows(r, "clean", "Modes around one evaluate()")}
    assert modes == {"model": ["train", "train"], "blocks[0]": ["eval", "train"], "blocks[1]": ["train", "train"]}
    zeroed = "blocks[0]'s residual dropout: inputs zeroed"
    assert abs(float(fact(r, "clean", "Next training forward")[zeroed]) - 0.1) < 0.03
    assert fact(r, "faulted", "Next training forward")[zeroed] == "0.000"  # each module's own mode kept
    assert run("evaluate-mixed-modes", "yes, yes").status == "fail"


def test_mask_times_nan(run, catalog):
    r = run("mask-times-nan", "yes")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean is False and r.faulted is True
    # Selected: (1 + 3 + 3 + 3) / 4 = 2.5, the NaN never enters the sum. Multiplied: 0 * NaN = NaN.
    assert fact(r, "clean", "Losses with a NaN")["masked_mean"] == "2.5"
    assert fact(r, "faulted", "Losses with a NaN")["masked_mean"] == "nan"
    # the backward through a mask is the next exercise's question (mask-the-input): its evidence, not this one's
    for side in ("clean", "faulted"):
        assert not any(item.get("title", "").startswith("Backward") for item in r.evidence[side])
    told = " ".join(catalog.get("mask-times-nan").hints).lower()
    assert "grad" not in told and "backward" not in told


def test_masking_the_output_of_a_log_leaves_a_nan_gradient(run, catalog):
    r = run("mask-the-input", "yes, no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [True, True] and r.faulted == [True, False]
    for side in ("clean", "faulted"):  # (ln 2 + ln 4 + ln 2) / 3 either way
        assert abs(float(fact(r, side, "Mean -log p")["loss (nats)"]) - 4 * math.log(2) / 3) < 1e-5
    # -1 / (3 p): -0.6667 at p = 0.5, -1.3333 at 0.25; 0 at the padding, or 0 * -inf = NaN
    assert fact(r, "clean", "Mean -log p")["probs.grad"] == "[[-0.6667, -1.3333], [-0.6667, 0.0]]"
    assert fact(r, "faulted", "Mean -log p")["probs.grad"] == "[[-0.6667, -1.3333], [-0.6667, nan]]"
    assert not graded(catalog, r, "yes, yes")
    # where() keeps the NaN out of the forward only: d/dx log x = 1/0 = inf meets the unselected branch's 0.
    for side in ("clean", "faulted"):
        backward = facts(r, side, "Backward through a mask")
        assert backward["where(mask, log(x), 0)"] == [fmt(math.log(2)), "[nan, 0.5]"]
        assert backward["log(where(mask, x, 1))"] == [fmt(math.log(2)), "[0.0, 0.5]"]
