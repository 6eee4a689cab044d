"""The modern block as GPTConfig options: rotary positions, grouped-query attention,
RMSNorm, SwiGLU and sliding-window attention, and the engine pieces the newer
field bugs live in (repetition penalty, cosine schedule, written-out cross entropy).

Every expected value is derived by hand in the test; the default config stays
the seed's model (804,224 parameters).
"""

import itertools
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from engine.config import GPTConfig, preset
from engine.generate import apply_repetition_penalty, beam_search, generate, generate_batch, left_pad
from engine.instruments.cache_check import cached_vs_full
from engine.instruments.intervention import future_token_intervention
from engine.instruments.param_accounting import agree, formula_of
from engine.instruments.shape_ledger import shape_ledger
from engine.losses import cross_entropy
from engine.model import GPT, RMSNorm, SwiGLU, hide_padding, rope_rotate, sliding_window_mask
from engine.train import cosine_schedule, warmup_schedule

C, L, V, BLOCK = 128, 4, 37, 64


def _params(**overrides) -> int:
    return GPT(preset("seed", **overrides)).num_params()


# ---------------------------------------------------------------------------
# Parameter counts, by hand


def test_the_default_is_the_seed_model():
    assert GPTConfig() == preset("seed")
    assert _params() == 804_224  # seed 004, "The environment"


@pytest.mark.parametrize("overrides, expected", [
    # no position table: 804,224 - block_size * C = 804,224 - 64 * 128
    (dict(pos="rope"), 804_224 - BLOCK * C),
    # K = 2 heads * D 32 = 64: qkv is C x (C + 2K) = 128 x 256 instead of 128 x 384, per layer
    (dict(n_kv_head=2), 804_224 - L * C * (3 * C - (C + 2 * 64))),
    # one key/value head: K = 32, qkv 128 x 192
    (dict(n_kv_head=1), 804_224 - L * C * (3 * C - (C + 2 * 32))),
    # a gain and no shift: 2L + 1 = 9 norms lose C each
    (dict(norm="rmsnorm"), 804_224 - (2 * L + 1) * C),
    # three C x 4C matrices and biases 2 * 4C + C, instead of two and 4C + C
    (dict(mlp="swiglu"), 804_224 + L * ((3 * C * 4 * C + 2 * 4 * C + C) - (2 * C * 4 * C + 4 * C + C))),
])
def test_each_option_changes_the_count_by_its_own_term(overrides, expected):
    assert _params(**overrides) == expected
    assert agree(preset("seed", **overrides))["agree"]


def test_the_llama_tiny_preset_counts_743_168():
    config = preset("llama-tiny")
    per_layer = (C * (C + 2 * 64) + C * C) + 3 * C * 352 + 2 * C  # attention, SwiGLU (no biases), two RMSNorms
    assert GPT(config).num_params() == V * C + L * per_layer + C == 743_168  # tied table, blocks, ln_f
    report = agree(config)
    assert report["agree"] and formula_of(config)["total"] == 743_168
    assert GPT(config).wpe is None


def test_bad_options_are_one_sentence():
    with pytest.raises(ValueError, match="pos must be one of 'learned', 'rope'"):
        GPTConfig(pos="alibi")
    with pytest.raises(ValueError, match=r"n_head \(4\) must be divisible by n_kv_head \(3\)"):
        GPTConfig(n_kv_head=3)
    with pytest.raises(ValueError, match="head size D = 3 must be even"):
        GPTConfig(n_embd=12, n_head=4, pos="rope")
    with pytest.raises(ValueError, match="window must be a positive integer or None"):
        GPTConfig(window=0)


# ---------------------------------------------------------------------------
# Rotary positions


def test_rope_keeps_lengths_and_position_zero_is_the_identity():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 10, 16, generator=g)
    turned = rope_rotate(x, torch.arange(10))
    assert torch.allclose(turned.norm(dim=-1), x.norm(dim=-1), atol=1e-5)
    assert torch.equal(rope_rotate(x[:, :, :1], torch.zeros(1, dtype=torch.long)), x[:, :, :1])


def test_rope_turns_pair_zero_by_one_radian_per_position():
    # Pair 0 = channels (0, D/2) turns by p * theta**0 = p radians: (1, 0) at p = 1 becomes (cos 1, sin 1).
    x = torch.zeros(1, 1, 1, 8)
    x[..., 0] = 1.0
    turned = rope_rotate(x, torch.tensor([1]))
    assert torch.allclose(turned[0, 0, 0, [0, 4]], torch.tensor([math.cos(1.0), math.sin(1.0)]), atol=1e-6)


def test_a_rope_score_depends_only_on_the_relative_offset():
    g = torch.Generator().manual_seed(1)
    q, k = torch.randn(1, 1, 1, 32, generator=g), torch.randn(1, 1, 1, 32, generator=g)

    def score(p_q: int, p_k: int) -> float:
        return (rope_rotate(q, torch.tensor([p_q])) * rope_rotate(k, torch.tensor([p_k]))).sum().item()

    assert score(7, 3) == pytest.approx(score(40, 36), abs=1e-4)  # both 4 apart
    assert score(7, 3) == pytest.approx(score(4, 0), abs=1e-4)
    assert abs(score(7, 3) - score(7, 2)) > 1e-3  # a different offset is a different score


# ---------------------------------------------------------------------------
# Grouped-query attention


def _tiny(**overrides) -> GPT:
    torch.manual_seed(0)
    sizes = dict(n_layer=2, n_head=4, n_embd=32, block_size=16)
    return GPT(preset("small", **{**sizes, **overrides})).eval()


def test_n_kv_head_equal_to_n_head_is_multi_head_attention():
    mha = _tiny()
    same = GPT(preset("small", n_layer=2, n_head=4, n_embd=32, block_size=16, n_kv_head=4)).eval()
    same.load_state_dict(mha.state_dict())
    idx = torch.randint(0, V, (2, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(mha(idx)[0], same(idx)[0])


def test_grouped_heads_equal_mha_with_each_kv_head_copied_for_its_group():
    """Query head h reads key/value head h // group: an MHA whose key and value heads
    2h' and 2h'+1 both carry GQA head h' computes the same function."""
    gqa = _tiny(n_kv_head=2)
    mha = GPT(preset("small", n_layer=2, n_head=4, n_embd=32, block_size=16)).eval()
    state = gqa.state_dict()
    D = 8
    for i in range(2):
        W = state[f"blocks.{i}.attn.qkv.weight"]  # (C + 2 * 16, C)
        q, k, v = W.split([32, 16, 16], dim=0)
        expand = lambda w: w.view(2, D, 32).repeat_interleave(2, dim=0).reshape(4 * D, 32)  # noqa: E731
        state[f"blocks.{i}.attn.qkv.weight"] = torch.cat([q, expand(k), expand(v)], dim=0)
    mha.load_state_dict(state)
    idx = torch.randint(0, V, (2, 9), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.allclose(gqa(idx)[0], mha(idx)[0], atol=1e-6)
    assert gqa.new_cache(1)[0].k.shape == (1, 2, 16, D)  # the cache holds the 2 shared heads only


# ---------------------------------------------------------------------------
# RMSNorm, SwiGLU, the sliding window


def test_rmsnorm_of_a_constant_vector_is_its_sign():
    norm = RMSNorm(6)
    x = torch.full((1, 1, 6), -3.0)
    # rms = sqrt(9 + 1e-6), so every entry is -3 / 3.00000017 = -0.99999994...
    assert torch.allclose(norm(x), torch.full((1, 1, 6), -3.0 / math.sqrt(9.0 + 1e-6)))
    reference = nn.RMSNorm(6, eps=1e-6)
    y = torch.randn(2, 5, 6, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(norm(y), reference(y), atol=1e-6)
    assert sum(p.numel() for p in norm.parameters()) == 6  # a gain, no shift


def test_rmsnorm_takes_low_precision_statistics_in_float32_and_rounds_once():
    norm = RMSNorm(128)
    x = (3 * torch.randn(64, 128, generator=torch.Generator().manual_seed(0), dtype=torch.float64))
    low = x.to(torch.bfloat16)
    exact = low.double() / (low.double().pow(2).mean(dim=-1, keepdim=True) + 1e-6).sqrt()
    out = norm.to(torch.bfloat16)(low)
    assert out.dtype == torch.bfloat16
    assert torch.equal(out, exact.to(torch.bfloat16))  # the float32 result, rounded once, is the best bfloat16 value
    wide = RMSNorm(128).double()(x)
    assert wide.dtype == torch.float64  # float64 is not narrowed to float32
    assert torch.allclose(wide, x / (x.pow(2).mean(dim=-1, keepdim=True) + 1e-6).sqrt(), rtol=1e-12, atol=0)


def test_swiglu_gates_by_silu_of_the_gate():
    mlp = SwiGLU(GPTConfig(n_embd=4, n_head=1, mlp_hidden=3, bias=False))
    with torch.no_grad():
        mlp.gate.weight.fill_(1.0)  # each hidden unit sees the sum of x
        mlp.up.weight.fill_(0.5)
        mlp.proj.weight.fill_(1.0)
    x = torch.tensor([[[1.0, 0.0, 0.0, 1.0]]])  # sum 2
    hidden = 2.0 * torch.sigmoid(torch.tensor(2.0)) * 1.0  # silu(2) * (0.5 * 2)
    assert torch.allclose(mlp(x), torch.full((1, 1, 4), 3 * hidden.item()))


def test_sliding_window_rows_hold_the_last_window_positions():
    mask = sliding_window_mask(0, 5, 5, window=2)
    assert mask.sum(dim=1).tolist() == [1, 2, 2, 2, 2]
    assert mask[4].tolist() == [False, False, False, True, True]
    assert torch.equal(sliding_window_mask(3, 2, 5, window=2), torch.tensor([[0, 0, 1, 1, 0], [0, 0, 0, 1, 1]]).bool())


# ---------------------------------------------------------------------------
# Every combination: cache, intervention, ledger

COMBINATIONS = list(itertools.product(["learned", "rope"], [None, 2], ["layernorm", "rmsnorm"],
                                      ["gelu", "swiglu"], [None, 3]))


@pytest.mark.parametrize("pos, n_kv_head, norm, mlp, window", COMBINATIONS)
def test_every_combination_caches_exactly_and_stays_causal(pos, n_kv_head, norm, mlp, window):
    model = _tiny(pos=pos, n_kv_head=n_kv_head, norm=norm, mlp=mlp, window=window)
    idx = torch.randint(0, V, (2, 7), generator=torch.Generator().manual_seed(0))
    for chunks in ([1] * 7, [3, 1, 3]):
        report = cached_vs_full(model, idx, chunks)
        assert report["equal"], (chunks, report["per_chunk_max_delta"])
    probe = future_token_intervention(model, idx, position=3, generator=torch.Generator().manual_seed(1))
    assert probe["causal"], probe
    ledger = shape_ledger(model, idx)
    assert ledger.first_divergence is None, ledger.to_dict()
    stages = [row.stage for row in ledger.rows]
    assert ("rotary q" in stages) == (pos == "rope") and ("position_embedding" in stages) == (pos == "learned")
    for fused in (False, True):  # the written-out path agrees with SDPA
        for block in model.blocks:
            block.attn.fused = fused
        with torch.no_grad():
            logits = model(idx)[0]
        if not fused:
            explicit = logits
    assert torch.allclose(explicit, logits, atol=1e-5)


def test_a_window_hides_what_lies_behind_it():
    model = _tiny(n_layer=1, window=3)
    idx = torch.randint(0, V, (1, 10), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        before = model(idx)[0][0, -1]
        moved = []
        for t in range(10):
            changed = idx.clone()
            changed[0, t] = (changed[0, t] + 1) % V
            moved.append(bool((model(changed)[0][0, -1] - before).abs().max() > 1e-6))
    assert moved == [False] * 7 + [True] * 3  # one layer: the last position reads positions 7, 8, 9


def test_cached_generation_of_the_modern_block_equals_naive_past_block_size():
    model = _tiny(pos="rope", n_kv_head=2, norm="rmsnorm", mlp="swiglu")
    prompt = torch.randint(0, V, (2, 5), generator=torch.Generator().manual_seed(0))
    naive = generate(model, prompt, 20, greedy=True)  # 25 tokens, block_size 16: the window slides
    cached = generate(model, prompt, 20, greedy=True, use_cache=True)
    assert torch.equal(naive, cached)


# ---------------------------------------------------------------------------
# Generation, schedules and the loss


def test_the_repetition_penalty_lowers_every_seen_logit():
    logits = torch.tensor([[2.0, -1.0, 0.5, -3.0]])
    seen = torch.tensor([[0, 1, 0]])  # ids 0 and 1 occurred
    assert apply_repetition_penalty(logits, seen, 2.0).tolist() == [[1.0, -2.0, 0.5, -3.0]]
    assert torch.equal(apply_repetition_penalty(logits, seen, 1.0), logits)
    with pytest.raises(ValueError, match="repetition_penalty must be greater than 0"):
        generate(_tiny(), seen, 1, repetition_penalty=0.0)


def _rates(make_scheduler, steps: int) -> list[float]:
    p = nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.SGD([p], lr=1.0)
    scheduler = make_scheduler(optimizer)
    rates = []
    for _ in range(steps):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return rates


def test_the_warmup_starts_at_one_quarter_for_four_steps():
    assert _rates(lambda o: warmup_schedule(o, 4), 5) == [0.25, 0.5, 0.75, 1.0, 1.0]


def test_the_cosine_decays_from_the_peak_to_the_floor_on_the_last_update():
    rates = _rates(lambda o: cosine_schedule(o, warmup_steps=2, total_steps=7, min_lr_ratio=0.1), 8)
    # warm-up 0.5, 1; then p = 0, 1/4, 1/2, 3/4, 1 over the 4 decay steps; then the floor
    cosine = [0.1 + 0.9 * (1 + math.cos(math.pi * p)) / 2 for p in (0, 0.25, 0.5, 0.75, 1.0)]
    assert rates == pytest.approx([0.5, 1.0] + cosine + [0.1])
    assert rates[6] == pytest.approx(0.1) and rates[5] > 0.1  # the floor arrives on update 7 of 7
    with pytest.raises(ValueError, match="must exceed warmup_steps"):
        cosine_schedule(torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=1.0), 3, 4)


def test_the_written_out_cross_entropy_matches_the_fused_one():
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(12, V, generator=g) * 2
    targets = torch.randint(0, V, (12,), generator=g)
    targets[8:] = -100  # four padded positions
    for eps in (0.0, 0.1):
        fused = F.cross_entropy(logits, targets, label_smoothing=eps)
        assert cross_entropy(logits, targets, eps).item() == pytest.approx(fused.item(), abs=1e-5)
    # uniform logits: -log p = ln V for every id, so both terms are ln V whatever eps is
    assert cross_entropy(torch.zeros(12, V), targets, 0.1).item() == pytest.approx(math.log(V), abs=1e-6)
    bf16 = cross_entropy(logits.bfloat16(), targets, 0.1)
    assert bf16.dtype == torch.float32
    assert bf16.item() == pytest.approx(F.cross_entropy(logits.bfloat16().float(), targets, label_smoothing=0.1).item(),
                                        abs=1e-5)
    with pytest.raises(ValueError, match="no real target"):
        cross_entropy(logits, torch.full((12,), -100))


def test_the_llama_tiny_preset_passes_the_capstone_audit():
    from exercises.audit import audit

    torch.set_num_threads(1)
    report = audit(lambda: GPT(preset("llama-tiny")), overfit_steps=0)  # CAPABILITY skipped to save time
    statuses = {link.name: link.status for link in report.links}
    assert report.status == "ok" and report.first_failure is None, report.text()
    # ATTENTION reads q and k where they reach the attention call, after the engine's own rotary embedding
    # (a rotation: norm-preserving), and finds them equal to SDPA there in every block
    assert statuses["ATTENTION"] == statuses["CACHE"] == statuses["SHAPE"] == "ok"
    attention = next(link for link in report.links if link.name == "ATTENTION")
    blocks = attention.evidence[:4]
    assert [name for name, _ in blocks] == [f"blocks.{i}.attn" for i in range(4)]
    assert all("q norm-preserving and k norm-preserving at the attention call" in value for _, value in blocks)



# ---------------------------------------------------------------------------
# Prompts of different lengths in one batch


def test_left_pad_puts_every_prompt_flush_right():
    idx, pads = left_pad([[5, 6, 7], [8]], pad_id=0)
    assert idx.tolist() == [[5, 6, 7], [0, 0, 8]] and pads.tolist() == [0, 2]
    mask = hide_padding(torch.ones(3, 3, dtype=torch.bool).tril(), pads, offset=0)  # (B, 1, 3, 3)
    # row 1: keys 0, 1 are padding; padding queries keep only their own key, the real query sees itself
    assert mask[1, 0].int().tolist() == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]
    assert mask[0, 0].int().tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]


@pytest.mark.parametrize("overrides", [{}, dict(pos="rope", n_kv_head=2, norm="rmsnorm", mlp="swiglu"), dict(window=3)])
def test_a_padded_batch_continues_every_prompt_as_it_would_alone(overrides):
    model = _tiny(block_size=24, **overrides)
    prompts = [[1, 2, 3, 4, 5, 6, 7], [8, 9, 10], [11]]
    alone = [generate(model, torch.tensor([p]), 6, greedy=True, use_cache=True)[0].tolist() for p in prompts]
    assert generate_batch(model, prompts, 6, pad_id=3) == alone
    assert generate_batch(model, prompts, 6, pad_id=30) == alone  # the padding's value is never seen
    with pytest.raises(ValueError, match="exceeds block_size 24"):
        generate_batch(model, prompts, 18)



def test_beam_search_with_width_one_is_greedy_decoding():
    model = _tiny()
    prompt = torch.randint(0, V, (1, 4), generator=torch.Generator().manual_seed(0))
    greedy = generate(model, prompt, 5, greedy=True)[0].tolist()
    ids, score = beam_search(model, prompt, max_new_tokens=5, beam_width=1, eos_id=V)  # an id never produced
    assert ids == greedy
    with torch.no_grad():
        logp = model(torch.tensor([ids[:-1]]))[0][0].log_softmax(-1)  # (T, V)
    by_hand = sum(logp[t - 1, ids[t]].item() for t in range(4, 9)) / 5  # mean over the 5 new tokens
    assert score == pytest.approx(by_hand, abs=1e-5)
    with pytest.raises(ValueError, match="one prompt of shape"):
        beam_search(model, torch.zeros(2, 3, dtype=torch.long), 3, 2, eos_id=0)
