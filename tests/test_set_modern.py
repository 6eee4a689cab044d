"""The set ``modern`` observes what the modern block and the newer field bugs give (CPU, seed 0).

Each test says how its values follow from the setup by hand: the positions a
chunk is turned to, h // 2 against h % 2, 15 / (15 + e), a window row, the
sign of -3 / 2, ε · 4 · ln 37 / 12, the bfloat16 grid of 1/64, k / 4 at k = 0,
where k / 17 reaches 1, and which rows of a padded batch hold padding.
"""

import math

import pytest

from helpers import fact, facts, graded, rows

MODERN = ["rope-cache-offset", "gqa-repeat-tiles", "bool-mask-added", "window-off-by-one",
          "penalty-divides-negatives", "smoothing-counts-padding", "ce-bfloat16", "warmup-starts-at-zero",
          "cosine-floor-early", "batch-right-padding", "batch-pads-unmasked", "beam-length-with-prompt", "compile-padded-lengths",
          "rmsnorm-constant", "rmsnorm-bf16-upcast", "swiglu-hidden-4c", "swiglu-gate-up-swapped"]


def test_the_set_holds_seventeen_engine_faults(catalog):
    exercises = catalog.get_set("modern").exercises
    assert [e.id for e in exercises] == MODERN
    assert all(catalog.fault_of(e).file.startswith("engine/") for e in exercises)


def test_rope_chunks_after_the_first_lose_their_offset(run, catalog):
    r = run("rope-cache-offset", "yes, no, no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [True, True, True] and r.faulted == [True, False, False]
    # chunk 1 sits at position 3 and chunk 2 at 4..6; the fault turns both as if they began at 0
    turned = {side: [row[2] for row in rows(r, side, "Cached chunks")] for side in ("clean", "faulted")}
    assert turned["clean"] == ["[0, 1, 2]", "[3]", "[4, 5, 6]"]
    assert turned["faulted"] == ["[0, 1, 2]", "[0]", "[0, 1, 2]"]
    assert fact(r, "clean", "One token")["equal"] == "True" and fact(r, "faulted", "One token")["equal"] == "False"
    assert not graded(catalog, r, "yes, yes, yes")


def test_tiled_kv_heads_read_h_mod_2_instead_of_h_div_2(run, catalog):
    r = run("gqa-repeat-tiles", "0, 1, 0, 1")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [h // 2 for h in range(4)] and r.faulted == [h % 2 for h in range(4)]
    converted = "max |Δ logits| against the grouped model"
    assert float(fact(r, "clean", "The checkpoint converted")[converted]) == 0.0
    assert float(fact(r, "faulted", "The checkpoint converted")[converted]) > 0.1


def test_the_tiling_prompt_does_not_state_its_own_answer(catalog):
    prompt = " ".join(catalog.get("gqa-repeat-tiles").prompt.split())
    # the faulted order, in the words a prompt could give it (it said "[kv0, kv1, kv0, kv1]")
    for answer in ("kv0, kv1, kv0, kv1", "0, 1, 0, 1", "h % 2", "h mod 2", "each head in place"):
        assert answer not in prompt, answer


def test_a_bool_mask_added_leaves_fifteen_sixteenths_unblocked(run, catalog):
    r = run("bool-mask-added", "0.85")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == 0.0
    # Scores near 0: the own key gets e^1, each of 15 forbidden keys e^0, so 15 / (15 + e) = 0.8466.
    assert abs(r.faulted - 15 / (15 + math.e)) < 0.01 and abs(r.faulted - 0.8508) < 1e-3
    assert fact(r, "clean", "Future-token")["causal"] == "True"
    assert fact(r, "faulted", "Future-token")["causal"] == "False"
    gaps = [float(g) for g in fact(r, "faulted", "Its log-weights").values()]
    assert all(abs(g - 1.0) < 0.1 for g in gaps)  # the +1.0 the bool added, read back from the weights
    assert not graded(catalog, r, "0.94")  # 15/16, the mask-tiny-fill answer, is a different bug


def test_the_window_row_holds_four_keys_and_the_fault_five(run, catalog):
    r = run("window-off-by-one", "5")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == 4 and r.faulted == 5  # positions 8..11 against 7..11 for q = 11, w = 4
    assert fact(r, "clean", "The layer's mask")["4"] == "0 0 0 0 0 0 0 0 1 1 1 1"
    assert fact(r, "faulted", "The layer's mask")["4"] == "0 0 0 0 0 0 0 1 1 1 1 1"
    moved = [row[0] for row in rows(r, "faulted", "Change one token") if row[2] == "True"]
    assert moved == ["7", "8", "9", "10", "11"]


def test_dividing_a_negative_logit_raises_it(run, catalog):
    r = run("penalty-divides-negatives", "c")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == "a" and r.faulted == "c"
    id3 = {side: rows(r, side, "Penalty 2")[3] for side in ("clean", "faulted")}
    assert id3["clean"][2] == "-3 -> -6" and id3["faulted"][2] == "-3 -> -1.5"
    # softmax([2, 1, -1, -3])[3] = e^-3 / (e^2 + e + e^-1 + e^-3) = 0.0047; after: e^-1.5 / (2e + e^-1 + e^-1.5) = 0.0370
    assert id3["clean"][3] == "0.0047 -> 0.0004" and id3["faulted"][3] == "0.0047 -> 0.0370"


def test_smoothing_over_the_padding_adds_a_tenth_of_four_twelfths_of_ln_37(run, catalog):
    r = run("smoothing-counts-padding", "0.12")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert abs(r.clean) < 1e-5
    # ε · (4 padded positions) · ln 37 / (12 real ones) = 0.1 · 4 · 3.611 / 12 = 0.1204 at near-uniform logits
    assert abs(r.faulted - 0.1 * 4 * math.log(37) / 12) < 0.002 and abs(r.faulted - 0.12103) < 1e-4
    assert fact(r, "faulted", "Label smoothing")["real targets / padded"] == "12 / 4"


def test_a_bfloat16_loss_cannot_show_a_drop_of_0_004(run, catalog):
    r = run("ce-bfloat16", "no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean is True and r.faulted is False
    change = {side: fact(r, side, "The change") for side in ("clean", "faulted")}
    assert abs(float(change["clean"]["true drop (float64)"]) - 0.0037922) < 1e-6
    assert abs(float(change["clean"]["reported drop"]) - float(change["clean"]["true drop (float64)"])) < 1e-5
    # both faulted losses are bfloat16 values in [2, 4): multiples of 1/64, so their difference is too
    reported = float(change["faulted"]["reported drop"])
    assert reported * 64 == round(reported * 64)
    assert rows(r, "faulted", "Two losses")[2][1:] == ["bfloat16", "bfloat16"]


def test_a_warmup_from_k_over_4_wastes_the_first_update(run, catalog):
    r = run("warmup-starts-at-zero", "4")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == 5 and r.faulted == 4
    factors = {side: [float(row[2]) for row in rows(r, side, "Five updates")] for side in ("clean", "faulted")}
    assert factors["clean"] == [0.25, 0.5, 0.75, 1.0, 1.0]  # (k + 1) / 4
    assert factors["faulted"] == [0.0, 0.25, 0.5, 0.75, 1.0]  # k / 4
    assert rows(r, "faulted", "Five updates")[0][3] == "False"


def test_a_cosine_counted_from_zero_sits_at_the_floor_for_seven_updates(run, catalog):
    r = run("cosine-floor-early", "7")
    assert r.status == "pass", (r.status, r.error, r.observed)
    # clean: p = (k - 6) / 17 reaches 1 only at k = 23; faulted: k / 17 >= 1 from k = 17, updates 17..23
    assert r.clean == 1 and r.faulted == 7
    clean, faulted = fact(r, "clean", "Landmarks"), fact(r, "faulted", "Landmarks")
    assert clean["first update at the floor"] == "23" and faulted["first update at the floor"] == "17"
    assert float(clean["lr of update 6 (first decay)"]) == pytest.approx(0.01)
    # faulted update 6: 0.1 + 0.9 · (1 + cos(π · 6/17)) / 2 of lr, an abrupt drop after the warm-up
    drop = 0.01 * (0.1 + 0.9 * (1 + math.cos(math.pi * 6 / 17)) / 2)
    assert float(faulted["lr of update 6 (first decay)"]) == pytest.approx(drop, rel=1e-4)


def _layout(r, side):
    return [row[1] for row in rows(r, side, "The padded batch")]


def test_right_padding_changes_every_row_that_ends_in_padding(run, catalog):
    r = run("batch-right-padding", "yes, no, no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    # 'The planet' (10) fills its row; 'A ' (2) and 'When that' (9) take 8 and 1 padding ids
    assert r.clean == [True, True, True] and r.faulted == [True, False, False]
    assert _layout(r, "clean") == ["'The planet'", "'········A '", "'·When that'"]
    assert _layout(r, "faulted") == ["'The planet'", "'A ........'", "'When that.'"]
    assert [row[3] for row in rows(r, "faulted", "The padded batch")][1:] == ["'.'", "'.'"]  # read from padding


def test_unrecorded_left_padding_changes_the_padded_rows_only(run, catalog):
    r = run("batch-pads-unmasked", "yes, no, no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [True, True, True] and r.faulted == [True, False, False]
    assert _layout(r, "faulted") == _layout(r, "clean")  # the same left-padded batch: only the cache's record differs
    assert not graded(catalog, r, "no, no, no")


def test_a_prompt_counted_in_the_beam_length_favours_the_shortest_answer(run, catalog):
    r = run("beam-length-with-prompt", "1")
    assert r.status == "pass", (r.status, r.error, r.observed)
    # per new token: ln 0.4 = -0.916 against ln(0.598 * 0.7 * 0.699) / 3 = -0.410, so 'xy.' (3 tokens);
    # over all tokens: -0.916 / 21 = -0.0436 against -1.229 / 23 = -0.0534, so '.' (1 token)
    assert r.clean == 3 and r.faulted == 1
    assert fact(r, "clean", "What beam_search")["new tokens"] == "xy." and fact(r, "faulted", "What beam_search")["new tokens"] == "."
    assert float(fact(r, "clean", "What beam_search")["its score"]) == pytest.approx(math.log(0.598 * 0.7 * 0.699) / 3, abs=1e-5)
    assert float(fact(r, "faulted", "What beam_search")["its score"]) == pytest.approx(math.log(0.4) / 21, abs=1e-5)


def test_rmsnorm_keeps_a_constant_vectors_sign_and_owns_c_parameters(run, catalog):
    r = run("rmsnorm-constant", "-1, 0")
    assert r.status == "pass", (r.status, r.error, r.observed)
    # -2 / sqrt(4 + 1e-6) = -0.99999988; centred first: 0 / sqrt(1e-6) = 0
    assert abs(r.observed[0] - (-2 / math.sqrt(4 + 1e-6))) < 1e-6 and r.observed[1] == 0.0
    table = facts(r, "clean", "x = -2·1")
    assert table["engine RMSNorm"][1:] == ["1", "128"] and table["nn.LayerNorm"] == ["0", "1", "256"]
    assert not graded(catalog, r, "0, 0") and not graded(catalog, r, "1, 0")


def test_rmsnorm_in_bfloat16_rounds_once_only_with_the_upcast(run, catalog):
    r = run("rmsnorm-bf16-upcast", "c")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == "a" and r.faulted == "c"
    assert fact(r, "clean", "RMSNorm in bfloat16")["outputs equal to the rounded exact value"] == "8192 of 8192"
    matched = int(fact(r, "faulted", "RMSNorm in bfloat16")["outputs equal to the rounded exact value"].split()[0])
    assert 5000 < matched < 6500  # measured 5684 of 8192 (69 %) at seed 0
    # one rounding: within the unit roundoff 2^-8 (8 significant bits); several roundings: past it
    assert float(fact(r, "clean", "RMSNorm in bfloat16")["max relative error"]) <= 2 ** -8
    assert float(fact(r, "faulted", "RMSNorm in bfloat16")["max relative error"]) > 2 ** -8


def test_swiglu_at_4c_costs_a_third_of_the_model(run):
    r = run("swiglu-hidden-4c", "1068416")
    assert r.status == "pass", (r.status, r.error, r.observed)
    # GELU MLP: (128*512 + 512) + (512*128 + 128) = 131,712; SwiGLU: 386 F + 128 per block
    gelu_total, per_block = 804_224, lambda F: 2 * (128 * F + F) + F * 128 + 128
    assert r.clean == gelu_total + 4 * (per_block(352) - 131_712) == 821_376
    assert r.faulted == gelu_total + 4 * (per_block(512) - 131_712) == 1_068_416
    assert facts(r, "clean", "The seed's GPT")["GELU (the seed's)"] == ["512", "131712", "804224"]


def test_swapped_gate_and_up_is_another_function_that_still_trains(run, catalog):
    r = run("swiglu-gate-up-swapped", "no, yes")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [True, True] and r.faulted == [False, True]
    for side in ("clean", "faulted"):
        table = fact(r, side, "The MLP against")
        assert abs(float(table["first loss"]) - math.log(37)) < 0.3  # untrained: about uniform over V = 37
    assert float(fact(r, "clean", "The MLP against")["max |Δ| on 16 positions"]) <= 1e-5
    assert not graded(catalog, r, "yes, yes")
