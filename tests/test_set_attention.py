"""The set ``attention`` observes the known values of seed 000 §4, §6 and seed 004 (CATALOG.md)."""

import math
import re

import pytest

from helpers import graded, rows


def test_head_split_shape_unchanged_round_trip_row_diverges(run, catalog):
    r = run("head-split", "b")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == "a" and r.faulted == "b"


def test_head_merge_without_transpose_is_caught_by_the_round_trip_row(run, catalog):
    r = run("head-merge", "b")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == "a" and r.faulted == "b"
    probe = dict(rows(r, "faulted", "Future-token"))
    assert probe["logits shape"] == "(2, 16, 37)" and probe["causal"] == "False"
    assert dict(rows(r, "clean", "Future-token"))["prefix max |Δ logits|"] == "0"


def test_cache_offset_chunks_differ_without_the_offset(run, catalog):
    r = run("cache-offset", "no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean is True and r.faulted is False


def test_cache_no_mask_breaks_multi_token_chunks_only(run, catalog):
    # Seed 000 §6: one-token decoding needs no mask; chunks 3, 1, 3 do.
    r = run("cache-no-mask", "yes, no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [True, True] and r.faulted == [True, False]
    assert not graded(catalog, r, "no, no")
    first_position = {side: float(rows(r, side, "One cached chunk")[0][1]) for side in ("clean", "faulted")}
    assert first_position["clean"] == 0.0 and first_position["faulted"] > 1e-3


def test_sdpa_bool_mask_same_tensor_different_output(run, catalog):
    r = run("sdpa-bool-mask", "no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean is True and r.faulted is False
    masks = rows(r, "clean", "The boolean tensors")
    assert masks[0][1:] == ["F F F F T", "T T T T F"]  # translated: True = attend
    assert rows(r, "faulted", "The boolean tensors")[0][1:] == ["F F F F T", "F F F F T"]


def test_entropy_floor_matches_the_hand_count():
    # Per sentence: a template (ln 5), det and det2 (ln 5 each), adj, noun, verb (ln 12 each),
    # an adverbial (ln 8); one template in five also draws noun2 (ln 12).
    from engine.corpus import make_corpus
    from exercises.attention import _entropy_floor

    text = make_corpus(100_000)
    nats = 3 * math.log(5) + 3 * math.log(12) + math.log(8) + math.log(12) / 5
    assert abs(_entropy_floor(text) - nats / (len(text) / text.count("."))) < 1e-12
    assert 0.23 < _entropy_floor(text) < 0.25


def test_non_causal_loss_drops_below_the_floor_and_the_past_moves(run, catalog):
    # Seed 004: non-causal val 0.023 against causal 0.369; the past moved by ~10 logits.
    r = run("non-causal", "a")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == "d" and r.faulted == "a"
    after = {side: dict(rows(r, side, "After")) for side in ("clean", "faulted")}
    assert float(after["faulted"]["validation loss"]) * 3 < float(after["clean"]["validation loss"])
    assert float(after["clean"]["prefix max |Δ logits| (pos 0..7)"]) == 0.0
    assert float(after["faulted"]["prefix max |Δ logits| (pos 0..7)"]) > 1.0
    curves = [item for item in r.evidence["faulted"] if item["type"] == "series"]
    assert len(curves) == 2 and curves[0]["values"][0] > 3.0  # starts near ln 37
    # the hints lead there without saying where the loss ends or that the past moves
    told = " ".join(catalog.get("non-causal").hints)
    assert not re.search(r"(under|below|above) the (entropy )?floor", told) and "the past reads" not in told


def test_sdpa_dropout_eval_two_eval_forwards_differ(run, catalog):
    r = run("sdpa-dropout-eval", "yes")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean is False and r.faulted is True
    facts = dict(rows(r, "faulted", "Two eval-mode"))
    assert facts["model.training"] == "False" and facts["nn.Dropout modules in train mode"].startswith("0 of")


def test_a_non_finite_validation_loss_is_named_not_classed_above_the_floor(monkeypatch):
    """A side whose loss went NaN (a learner's own fault in Break it): NaN compares false with the floor,
    and would read as "above the floor"; the check says it is not finite instead."""
    import pytest
    pytest.importorskip("torch")
    import engine.train
    from exercises.attention import non_causal
    from exercises.context import Context
    monkeypatch.setattr(engine.train, "train_step", lambda *args, **kwargs: float("nan"))  # no training: fast
    monkeypatch.setattr(engine.train, "evaluate", lambda *args, **kwargs: float("nan"))
    with pytest.raises(FloatingPointError, match=r"validation loss is nan \(not finite\).*neither below nor above"):
        non_causal(Context())


@pytest.mark.parametrize("val_loss", [float("nan"), 0.1])
def test_non_finite_logits_in_the_future_token_test_are_named_never_read_as_the_past_moving(monkeypatch, val_loss):
    """A side whose logits went NaN (a learner's own fault in Break it): a NaN delta compares false with the
    tolerance and read as "the past moved" (choice a or c); the check says the logits are not finite, counted,
    before the validation loss those logits make NaN too."""
    torch = pytest.importorskip("torch")
    import engine.train
    from exercises.attention import non_causal
    from exercises.context import Context
    monkeypatch.setattr(engine.train, "train_step", lambda *args, **kwargs: 1.0)  # no training: fast
    monkeypatch.setattr(engine.train, "evaluate", lambda *args, **kwargs: val_loss)  # NaN as those logits make it
    build = Context.gpt

    def nan_logits(self, *args, **kwargs):
        model = build(self, *args, **kwargs)
        model.lm_head.register_forward_hook(lambda module, inputs, out: torch.full_like(out, float("nan")))
        return model
    monkeypatch.setattr(Context, "gpt", nan_logits)
    with pytest.raises(FloatingPointError, match=r"logits are not finite \(\d+ NaN and 0 inf of \d+ logits.*"
                       r"cannot say whether the past moved") as raised:
        non_causal(Context())
    assert "validation loss" not in str(raised.value)  # the cause is named, not the loss it spoils
