"""Contracts of the engine parts the field exercises reach: written-out attention,
top-p and the sampling distribution, padded vocabularies, padded batches, the
loss-scaled step and the non-finite ledger.

Values are derived by hand where the text says so; the rest are contracts
(equal within float rounding, or exact).
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from engine.config import GPTConfig
from engine.data import IGNORE_INDEX, pad_batch
from engine.generate import generate, sampling_distribution, top_p_filter, valid_logits
from engine.instruments import cached_vs_full, future_token_intervention
from engine.instruments.nonfinite import nonfinite_ledger
from engine.model import GPT, attention, causal_mask
from engine.train import scaled_train_step, train_step

SMALL = GPTConfig(vocab_size=37, block_size=16, n_layer=2, n_head=4, n_embd=32)


def _model(**overrides) -> GPT:
    torch.manual_seed(0)
    return GPT(GPTConfig(**{**SMALL.__dict__, **overrides})).eval()


def _written_out(model: GPT) -> GPT:
    for block in model.blocks:
        block.attn.fused = False
    return model


def _ids(B: int, T: int, seed: int = 0) -> torch.Tensor:
    return torch.randint(0, 37, (B, T), generator=torch.Generator().manual_seed(seed))


# --- written-out attention ---------------------------------------------------


def test_attention_equals_sdpa_and_its_weights_are_a_masked_softmax():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 4, 8, 16, generator=g) for _ in range(3))
    y, weights = attention(q, k, v, causal_mask(0, 8, 8))
    reference = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert (y - reference).abs().max().item() < 1e-6
    assert torch.allclose(weights.sum(-1), torch.ones(2, 4, 8))
    assert weights[..., 0, 1:].abs().max().item() == 0.0  # the first query sees only itself
    assert weights[..., 0, 0].eq(1.0).all()


def test_the_written_out_path_computes_the_same_model():
    fused = _model()
    idx = _ids(2, 12)
    with torch.no_grad():
        expected, _ = fused(idx)
        got, _ = _written_out(fused)(idx)
    assert (got - expected).abs().max().item() < 1e-5
    weights = fused.blocks[1].attn.weights
    assert weights.shape == (2, 4, 12, 12)
    assert torch.equal(weights.triu(1), torch.zeros_like(weights))  # no weight on a later key


def test_the_written_out_path_is_causal_and_its_cache_matches_the_full_pass():
    model = _written_out(_model())
    probe = future_token_intervention(model, _ids(1, 12), position=5, generator=torch.Generator().manual_seed(1))
    assert probe["causal"] and probe["prefix_max_delta"] == 0.0
    for chunks in ([1] * 7, [3, 1, 3]):
        assert cached_vs_full(model, _ids(1, 7), chunks)["equal"], chunks


# --- sampling ------------------------------------------------------------------


def test_top_p_keeps_the_id_that_crosses_p():
    # by hand: ranked probabilities 0.5, 0.41, 0.09; the mass above each is 0, 0.5, 0.91.
    logits = torch.tensor([[0.41, 0.09, 0.5]]).log()
    kept = torch.isfinite(top_p_filter(logits, 0.9))
    assert kept.tolist() == [[True, False, True]]
    assert torch.isfinite(top_p_filter(logits, 1.0)).all()
    assert torch.isfinite(top_p_filter(logits, 0.3)).tolist() == [[False, False, True]]  # the top id always stays


def test_sampling_distribution_order_padding_and_temperature():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0, 5.0]])
    assert sampling_distribution(logits, valid_vocab=4)[0, 4].item() == 0.0
    assert torch.equal(valid_logits(logits, None), logits)

    def entropy(p):
        return -(p * p.clamp_min(1e-30).log()).sum().item()

    cold, warm = (sampling_distribution(logits[:, :4], temperature=t) for t in (0.5, 2.0))
    assert entropy(cold) < entropy(sampling_distribution(logits[:, :4])) < entropy(warm)
    # top-p reads the tempered distribution: 0.5 sharpens [2, 1, 0, -1] so that id 0 alone holds 0.87.
    assert (sampling_distribution(logits[:, :4], temperature=0.5, top_p=0.8) > 0).sum().item() == 1
    assert (sampling_distribution(logits[:, :4], temperature=1.0, top_p=0.8) > 0).sum().item() == 2


def test_generate_validates_top_p_and_valid_vocab_and_never_picks_a_padded_id():
    model = _model(vocab_size=64)
    prompt = _ids(1, 3)
    with pytest.raises(ValueError, match="top_p"):
        generate(model, prompt, 2, top_p=0.0)
    with pytest.raises(ValueError, match="valid_vocab"):
        generate(model, prompt, 2, valid_vocab=65)
    out = generate(model, prompt.repeat(64, 1), 8, valid_vocab=37, top_p=0.95,
                   generator=torch.Generator().manual_seed(0))
    assert out[:, 3:].max().item() < 37
    assert generate(model, prompt, 4, greedy=True, valid_vocab=37)[:, 3:].max().item() < 37


# --- padded batches ------------------------------------------------------------


def test_pad_batch_targets_skip_padding_and_the_loss_averages_real_tokens():
    x, y = pad_batch([[5, 6, 7, 8, 9], [1, 2, 3, 4, 5, 6, 7, 8]], pad_id=0)
    assert x.shape == y.shape == (2, 7)
    assert x[0].tolist() == [5, 6, 7, 8, 0, 0, 0] and y[0].tolist() == [6, 7, 8, 9] + [IGNORE_INDEX] * 3
    assert (y != IGNORE_INDEX).sum().item() == 11  # 4 + 7 real next tokens
    model = _model()
    logits, loss = model(x, targets=y)
    real = y != IGNORE_INDEX
    by_hand = F.cross_entropy(logits[real], y[real])
    assert abs(loss.item() - by_hand.item()) < 1e-6
    with pytest.raises(ValueError, match="2 or more"):
        pad_batch([[3]], pad_id=0)


# --- the loss-scaled step ---------------------------------------------------------


def _update_norm(model, step) -> float:
    before = [p.detach().clone() for p in model.parameters()]
    step()
    return math.sqrt(sum((p.detach() - b).pow(2).sum().item() for p, b in zip(model.parameters(), before)))


def test_scaled_step_clips_the_true_gradient():
    model = _model().train()
    x, y = _ids(4, 16, seed=1), _ids(4, 16, seed=2)
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 16)
    norm = _update_norm(model, lambda: scaled_train_step(model, optimizer, scaler, x, y, max_norm=0.01))
    assert abs(norm - 0.01) < 1e-6  # SGD with lr 1 moves by the clipped gradient


def test_scaled_step_without_clipping_is_the_plain_step():
    plain, scaled = _model().train(), _model().train()
    x, y = _ids(4, 16, seed=1), _ids(4, 16, seed=2)
    train_step(plain, torch.optim.SGD(plain.parameters(), lr=0.1), x, y)
    scaled_train_step(scaled, torch.optim.SGD(scaled.parameters(), lr=0.1),
                      torch.amp.GradScaler("cpu", init_scale=2.0 ** 16), x, y, max_norm=1e9)
    for a, b in zip(plain.parameters(), scaled.parameters()):
        assert (a - b).abs().max().item() < 1e-6


# --- the non-finite ledger ----------------------------------------------------------


def test_nonfinite_ledger_names_the_first_module_to_hold_a_nan():
    model = _model(n_layer=3)
    clean = nonfinite_ledger(model, _ids(1, 8))
    assert clean.first is None
    names = [row.module for row in clean.rows]
    assert names.index("blocks.0.attn.proj") < names.index("blocks.0.attn") < names.index("blocks.1.ln_1")
    with torch.no_grad():
        model.blocks[1].mlp.fc.weight[0, 0] = float("nan")
    broken = nonfinite_ledger(model, _ids(1, 8))
    assert broken.first.module == "blocks.1.mlp.fc"
    assert broken.first.nonfinite == 8  # one hidden unit, at each of the 8 positions
    assert all(len(m._forward_hooks) == 0 for m in model.modules())
