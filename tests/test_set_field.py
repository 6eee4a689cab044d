"""The set ``field`` observes the known values of CATALOG-3, "The field" (CPU, seed 0).

Where a value follows from the setup by hand (the nucleus sizes, the flat
argmax index, ±17 through LayerNorm, 1 / 65,536), the test says how.
"""

from helpers import fact, graded, rows


def test_attn_scale_c_no_longer_matches_sdpa(run, catalog):
    r = run("attn-scale-c", "yes")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean is False and r.faulted is True
    # CATALOG-3: max |Δ| ≈ 0.65 at B=2, T=8, H=4, D=16 with N(0, 1) q, k, v.
    assert abs(float(fact(r, "faulted", "engine attention")["max |Δ output|"]) - 0.647) < 0.01
    assert float(fact(r, "clean", "engine attention")["max |Δ output|"]) < 1e-6
    scale = {side: float(fact(r, side, "The scale")["scale applied to q·k"]) for side in ("clean", "faulted")}
    assert abs(scale["clean"] - 1 / 4) < 1e-4 and abs(scale["faulted"] - 1 / 8) < 1e-4


def test_attn_scale_inverted_saturates_the_softmax(run, catalog):
    r = run("attn-scale-inverted", "0.97")
    assert r.status == "pass", (r.status, r.error, r.observed)
    # CATALOG-3: top attention weight ≈ 0.97 against ≈ 0.37.
    assert abs(r.clean - 0.3666) < 0.001 and abs(r.faulted - 0.9685) < 0.001
    assert not graded(catalog, r, "0.37")
    assert abs(float(fact(r, "faulted", "The scale")["scale applied to q·k"]) - 4.0) < 1e-3


def test_mask_tiny_fill_lets_the_past_see_the_future(run, catalog):
    r = run("mask-tiny-fill", "no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean is True and r.faulted is False
    assert float(fact(r, "clean", "Future-token")["prefix max |Δ logits| (0..7)"]) == 0.0
    first_query = {side: rows(r, side, "Block 0")[0] for side in ("clean", "faulted")}
    assert first_query["clean"][1:] == ["0", "0"]
    assert all(float(w) > 0.9 for w in first_query["faulted"][1:])  # 15/16 of a near-uniform row


def test_norm_over_time_is_not_causal_and_needs_exactly_block_size(run, catalog):
    r = run("norm-over-time", "no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean is True and r.faulted is False
    faulted = fact(r, "faulted", "blocks[0].ln_1")
    assert faulted["normalized_shape"] == "(16, 64)"
    assert faulted["a 12-token sequence"].startswith("RuntimeError")
    assert fact(r, "clean", "blocks[0].ln_1")["a 12-token sequence"] == "runs"


def test_residual_from_norm_moves_x_by_sixteen(run, catalog):
    # By hand: LayerNorm maps ±17 (mean 0, std 17) to ±1, so each entry moves by 16.
    r = run("residual-from-norm", "16")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == 0.0 and abs(r.faulted - 16.0) < 1e-4


def test_topp_crossing_keeps_one_id_instead_of_two(run, catalog):
    # By hand: running totals 0.5, 0.91, 1.0; the id that crosses 0.9 belongs to the nucleus.
    r = run("topp-crossing", "1")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == 2 and r.faulted == 1
    assert fact(r, "clean", "Other values")["0.3"] == "0"
    assert fact(r, "faulted", "Other values")["0.3"].startswith("(none")


def test_temperature_after_topp_keeps_more_ids(run, catalog):
    # By hand: ratio e^-1 reaches 0.9 with 3 ids (0.632, 0.865, 0.950); e^-0.5 needs 5 (… 0.871, 0.924).
    r = run("temperature-after-topp", "5")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == 3 and r.faulted == 5


def test_pad_not_ignored_counts_every_position(run, catalog):
    # By hand: sequences of 5 and 8 ids give 4 + 7 = 11 real targets among 2 x 7 positions.
    r = run("pad-not-ignored", "14")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == 11 and r.faulted == 14
    clean, faulted = (fact(r, side, "What the loss counts") for side in ("clean", "faulted"))
    assert clean["loss as reported"] == clean["mean over real targets"]
    assert faulted["loss as reported"] != faulted["mean over real targets"]
    assert rows(r, "faulted", "The padded targets")[0][1] == "7 30 4 19 0 0 0"


def test_argmax_without_dim_counts_none_correct(run, catalog):
    # By hand: the largest logit is row 5, class 0: flat index 20, which matches no target.
    r = run("argmax-no-dim", "0")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == 6 and r.faulted == 0
    assert fact(r, "faulted", "Predictions")["predictions"] == "20"


def test_train_mode_not_restored_turns_dropout_off(run, catalog):
    r = run("train-mode-not-restored", "0")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert abs(r.clean - 0.1) < 0.02 and r.faulted == 0.0
    assert fact(r, "faulted", "The loop")["model.training after evaluate"] == "False"
    assert fact(r, "clean", "The loop")["model.training after evaluate"] == "True"
    assert not graded(catalog, r, "0.1")


def test_clip_before_unscale_shrinks_the_update_by_the_loss_scale(run, catalog):
    # By hand: clipped to 1 while scaled by 2^16, then divided by 2^16.
    r = run("clip-before-unscale", "1.5e-5")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert abs(r.clean - 1.0) < 1e-4 and abs(r.faulted - 2.0 ** -16) < 1e-9
    assert float(fact(r, "clean", "One step")["true gradient norm"]) > 1.0  # so clipping is active
    assert not graded(catalog, r, "1")


def test_every_field_exercise_cites_its_public_report(catalog):
    # Each exercise of the set names the public report it reduces: an owner/name repository and an
    # issue or pull-request number (found in the public issue record, read before citing).
    import re

    cited = {}
    for ex in catalog.get_set("field").exercises:
        text = " ".join(ex.prompt.split())
        found = re.findall(r"([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+) (?:issue|pull request) #(\d+)", text)
        assert found, f"{ex.id}: the prompt cites no public report"
        cited[ex.id] = found[0]
    assert cited["attn-scale-c"] == ("karpathy/ng-video-lecture", "6")
    assert cited["topp-crossing"] == ("aws-neuron/transformers-neuronx", "46")
    assert cited["clip-before-unscale"] == ("Lightning-AI/pytorch-lightning", "9599")
    # The evaluation helper that restores the caller's mode is seed 001's, Part 6.
    assert catalog.get("train-mode-not-restored").source.startswith("001 · Part 6")
