"""Contracts of the engine GPT, pinned with values from the seeds.

Seed 004 gives the parameter counts (804,224 tied / 808,960 untied), the
37-character corpus vocabulary, the alignment contract and the shape ledger;
Seed 000 section 6 gives cached == full logits for chunks [1]*T and [3, 1, 3].
"""

from __future__ import annotations

import json
import math

import pytest
import torch

from engine.config import GPTConfig
from engine.corpus import make_corpus
from engine.data import check_alignment, get_batch, split
from engine.generate import generate
from engine.instruments import cached_vs_full, future_token_intervention, shape_ledger
from engine.instruments.intervention import require_finite
from engine.model import GPT, KVCache, causal_mask, merge_heads, split_heads
from engine.tokenizer import CharTokenizer
from engine.train import evaluate, make_optimizer, overfit_batch, train_step

SMALL = GPTConfig(vocab_size=37, block_size=16, n_layer=2, n_head=4, n_embd=32)


@pytest.fixture(scope="module")
def corpus() -> str:
    return make_corpus(200_000, seed=0)


@pytest.fixture(scope="module")
def tokenizer(corpus) -> CharTokenizer:
    return CharTokenizer(corpus)


@pytest.fixture
def small_model() -> GPT:
    torch.manual_seed(0)
    return GPT(SMALL).eval()


def random_ids(B: int, T: int, V: int = 37, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, V, (B, T), generator=g)


# --- config and parameters -------------------------------------------------


def test_config_rejects_indivisible_heads():
    with pytest.raises(ValueError, match="divisible"):
        GPTConfig(n_embd=130, n_head=4)


def test_parameter_counts_tied_and_untied():
    tied = GPT(GPTConfig(vocab_size=37, block_size=64, n_layer=4, n_head=4, n_embd=128))
    untied = GPT(GPTConfig(vocab_size=37, block_size=64, n_layer=4, n_head=4, n_embd=128,
                           tie_weights=False))
    assert tied.num_params() == 804_224
    assert untied.num_params() == 808_960
    assert tied.lm_head.weight is tied.wte.weight
    assert untied.lm_head.weight is not untied.wte.weight
    assert len(list(tied.parameters())) == 44
    assert len(list(untied.parameters())) == 45


def test_initial_loss_near_uniform_reference(small_model):
    idx = random_ids(4, 16)
    _, loss = small_model(idx, targets=random_ids(4, 16, seed=1))
    assert abs(loss.item() - math.log(37)) < 0.2


# --- forward contracts ------------------------------------------------------


def test_forward_shapes(small_model):
    logits, loss = small_model(random_ids(3, 10))
    assert logits.shape == (3, 10, 37)
    assert loss is None
    logits, loss = small_model(random_ids(3, 10), targets=random_ids(3, 10, seed=1))
    assert loss.dim() == 0 and torch.isfinite(loss)


def test_sequence_longer_than_block_size_names_both_numbers(small_model):
    with pytest.raises(ValueError, match="sequence length 20 exceeds block_size 16"):
        small_model(random_ids(1, 20))


def test_cache_overflow_in_forward_names_both_numbers(small_model):
    cache = small_model.new_cache(1)
    small_model(random_ids(1, 12), cache=cache)
    with pytest.raises(ValueError, match=r"12.*block_size 16"):
        small_model(random_ids(1, 5), cache=cache)


def test_token_id_out_of_range_raises_index_error(small_model):
    idx = random_ids(1, 8)
    idx[0, 3] = 37
    with pytest.raises(IndexError, match=r"token id 37 is outside \[0, 37\)"):
        small_model(idx)


def test_without_check_ids_the_range_is_left_to_the_embedding():
    torch.manual_seed(0)
    model = GPT(GPTConfig(**{**SMALL.__dict__, "check_ids": False}))
    idx = random_ids(1, 8)
    idx[0, 3] = 37
    with pytest.raises(IndexError) as caught:
        model(idx)
    assert "token id" not in str(caught.value)  # the embedding's own message, not the engine's


def test_float_and_1d_ids_are_rejected(small_model):
    with pytest.raises(TypeError):
        small_model(random_ids(1, 8).float())
    with pytest.raises(ValueError):
        small_model(random_ids(1, 8)[0])


def test_split_merge_round_trip():
    x = torch.randn(2, 5, 32)
    heads = split_heads(x, 4)
    assert heads.shape == (2, 4, 5, 8)
    assert torch.equal(heads[:, 1], x[:, :, 8:16])  # head 1 owns channels 8..15
    assert torch.equal(merge_heads(heads), x)


def test_causal_mask_with_offset():
    mask = causal_mask(3, 2, 5, "cpu")
    assert mask.tolist() == [[True, True, True, True, False], [True, True, True, True, True]]


def test_kv_cache_writes_in_place_and_refuses_overflow():
    cache = KVCache(batch_size=1, n_head=2, max_len=4, head_size=3)
    storage = cache.k.data_ptr()
    k = torch.randn(1, 2, 3, 3)
    k_all, v_all = cache.update(k, k + 1)
    assert cache.seq_len == 3 and k_all.shape == (1, 2, 3, 3)
    assert torch.equal(k_all, k) and cache.k.data_ptr() == storage
    with pytest.raises(ValueError, match="overflow"):
        cache.update(torch.randn(1, 2, 2, 3), torch.randn(1, 2, 2, 3))


# --- instruments on the clean engine ----------------------------------------


def test_future_token_intervention_clean_model_is_causal(small_model):
    result = future_token_intervention(small_model, random_ids(2, 16), position=7,
                                       generator=torch.Generator().manual_seed(0))
    assert result["prefix_max_delta"] <= result["tolerance"] == 1e-5
    assert result["suffix_max_delta"] > 1e-5
    assert result["causal"] is True


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_future_token_intervention_says_nothing_moved_or_stayed_when_logits_are_not_finite(small_model, bad):
    """NaN compares false with the tolerance (it read as "the past moved"), and inf - inf is NaN: the probe
    counts the non-finite logits and leaves its verdicts unset."""
    first = torch.tensor([0])
    hook = small_model.lm_head.register_forward_hook(lambda module, args, out: out.index_fill(1, first, bad))
    try:
        result = future_token_intervention(small_model, random_ids(2, 16), position=7,
                                           generator=torch.Generator().manual_seed(0))
    finally:
        hook.remove()
    assert result["prefix_ok"] is None and result["informative"] is None and result["causal"] is None
    counted = 2 * 2 * 37  # both forwards, B = 2, position 0's V = 37 logits
    assert (result["nan"], result["inf"], result["logits"]) == \
        ((counted, 0) if bad != bad else (0, counted)) + (2 * 2 * 16 * 37,)
    with pytest.raises(FloatingPointError, match=r"logits are not finite \((148 NaN and 0|0 NaN and 148) inf of "
                       r"2368 logits.*cannot say whether the past moved"):
        require_finite(result)
    require_finite(future_token_intervention(small_model, random_ids(2, 16), position=7))  # finite: nothing raised


@pytest.mark.parametrize("chunks", [[1] * 7, [3, 1, 3]])
def test_cached_logits_equal_full_logits(small_model, chunks):
    result = cached_vs_full(small_model, random_ids(2, 7), chunks)
    assert result["equal"], result
    assert result["max_delta"] <= 1e-5
    assert len(result["per_chunk_max_delta"]) == len(chunks)


def test_shape_ledger_clean_model(small_model):
    ledger = shape_ledger(small_model, random_ids(2, 16))
    stages = [row.stage for row in ledger.rows]
    assert ledger.first_divergence is None
    assert stages[:4] == ["token_embedding", "position_embedding", "tok + pos", "head split"]
    head = ledger.rows[3]
    assert head.shape == (2, 4, 16, 8) and head.invariant == "merge(split(q)) == q (round trip)"
    assert stages[-3:] == ["ln_f", "lm_head", "flatten for CE"]
    assert ledger.rows[-1].shape == (32, 37)
    json.dumps(ledger.to_dict())  # plain data


def test_shape_ledger_flags_wrong_head_split(small_model):
    def wrong_split(x, n_head):
        B, T, C = x.shape
        return x.reshape(B, n_head, T, C // n_head)  # right shape, wrong data

    ledger = shape_ledger(small_model, random_ids(2, 16), split_heads_fn=wrong_split)
    assert ledger.first_divergence == "head split"
    assert ledger.rows[3].shape == (2, 4, 16, 8)  # the shape alone looks fine
    assert all(row.ok for row in ledger.rows if row.stage != "head split")


# --- data --------------------------------------------------------------------


def test_corpus_is_deterministic_and_long_enough(corpus):
    assert len(corpus) >= 200_000
    assert make_corpus(200_000, seed=0) == corpus
    assert make_corpus(5_000, seed=1) != corpus[:5_000]


def test_tokenizer_round_trip_and_vocabulary(corpus, tokenizer):
    assert tokenizer.vocab_size == 37
    ids = tokenizer.encode_tensor(corpus)
    assert ids.dtype == torch.int64 and ids.min() == 0 and ids.max() == 36
    assert tokenizer.decode(ids) == corpus


def test_tokenizer_unseen_character_names_it(corpus):
    small = CharTokenizer("the cat")
    with pytest.raises(KeyError, match="'S'"):
        small.encode("the Sat")
    with pytest.raises(IndexError, match="token id 9"):
        small.decode([0, 9])


def test_real_batch_is_aligned(corpus, tokenizer):
    train, val = split(tokenizer.encode_tensor(corpus))
    assert len(train) + len(val) == len(corpus)
    x, y = get_batch(train, 8, 64, generator=torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (8, 64) and x.dtype == torch.int64
    assert check_alignment(x, y)
    assert not check_alignment(x, x)  # y = x, the misaligned target


def test_get_batch_starts_leave_out_the_last_window():
    data = torch.arange(10)  # block_size 6: valid starts 0..3; the seed's draw gives 0..2
    x, y = get_batch(data, 400, 6, generator=torch.Generator().manual_seed(0))
    assert sorted(set(x[:, 0].tolist())) == [0, 1, 2]
    assert check_alignment(x, y) and int(y.max()) == 8
    with pytest.raises(ValueError, match="need at least 11"):
        get_batch(data, 1, 9)


# --- training ----------------------------------------------------------------


def test_evaluate_restores_train_mode(small_model):
    small_model.train()
    x, y = random_ids(2, 8), random_ids(2, 8, seed=1)
    evaluate(small_model, x, y)
    assert small_model.training
    with pytest.raises(IndexError):
        evaluate(small_model, x, y + 100)
    assert small_model.training


def test_train_step_and_overfit_batch_lower_the_loss(small_model):
    x, y = random_ids(2, 16), random_ids(2, 16, seed=1)
    optimizer = torch.optim.AdamW(small_model.parameters(), lr=1e-3)
    assert isinstance(train_step(small_model, optimizer, x, y), float)
    curve = overfit_batch(small_model, x, y, steps=60, lr=3e-3)
    assert len(curve) == 60 and curve[-1] < 0.5 * curve[0]
    assert not small_model.training  # overfit_batch restores eval mode


def test_make_optimizer_is_fused_adamw_with_plain_adamws_arithmetic():
    torch.manual_seed(0)
    fused_model, plain_model = GPT(SMALL), GPT(SMALL)
    plain_model.load_state_dict(fused_model.state_dict())
    fused = make_optimizer(fused_model, lr=1e-2)
    plain = torch.optim.AdamW(plain_model.parameters(), lr=1e-2, foreach=False)
    assert isinstance(fused, torch.optim.AdamW) and fused.defaults["fused"]
    assert fused.defaults["weight_decay"] == 0.01  # torch's default decay, kept
    x, y = random_ids(2, 16), random_ids(2, 16, seed=1)
    for _ in range(3):
        assert train_step(fused_model, fused, x, y) == pytest.approx(train_step(plain_model, plain, x, y), abs=1e-5)
    for a, b in zip(fused_model.parameters(), plain_model.parameters()):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)
    # the tied matrix is one parameter, updated once per step
    assert len(fused.param_groups[0]["params"]) == len(list(fused_model.parameters()))
    # by hand: wte, wpe, 10 tensors per block x 2 blocks, ln_f's two; the tied lm_head adds none
    assert len(fused.param_groups[0]["params"]) == 24
    assert sum(p is fused_model.wte.weight for p in fused.param_groups[0]["params"]) == 1


# --- generation --------------------------------------------------------------


def test_top_k_one_equals_greedy(small_model):
    prompt = random_ids(2, 4)
    greedy = generate(small_model, prompt, 20, greedy=True)
    top1 = generate(small_model, prompt, 20, top_k=1, generator=torch.Generator().manual_seed(0))
    assert greedy.shape == (2, 24)
    assert torch.equal(greedy, top1)


def test_cached_generation_matches_uncached_past_the_window(small_model):
    prompt = random_ids(1, 5)
    naive = generate(small_model, prompt, 30, greedy=True)  # 35 tokens > block_size 16
    cached = generate(small_model, prompt, 30, greedy=True, use_cache=True)
    assert torch.equal(naive, cached)


def test_generate_rejects_bad_sampling_settings(small_model):
    prompt = random_ids(1, 4)
    with pytest.raises(ValueError, match="temperature"):
        generate(small_model, prompt, 5, temperature=0)
    with pytest.raises(ValueError, match="top_k=38"):
        generate(small_model, prompt, 5, top_k=38)


def test_generate_restores_train_mode(small_model):
    small_model.train()
    generate(small_model, random_ids(1, 4), 3)
    assert small_model.training


# ---------------------------------------------------------------------------
# Named sizes: engine.config.PRESETS and the checks' one builder, ctx.gpt


def test_presets_give_the_seed_counts():
    from engine.config import PRESETS, preset

    assert GPT(preset("seed")).num_params() == 804_224  # seed 004, tied
    assert GPT(preset("seed", tie_weights=False)).num_params() == 808_960  # seed 004, untied
    small = preset("small", n_layer=1)
    assert (small.n_layer, small.n_head, small.n_embd, small.block_size) == (1, 2, 64, 32)
    assert PRESETS["gpt2-small"]["vocab_size"] == 50_257
    with pytest.raises(KeyError, match="the presets are seed, small, gpt2-small"):
        preset("medium")
    with pytest.raises(ValueError, match="divisible"):
        preset("small", n_embd=63)


def test_ctx_gpt_is_seeded_and_reproducible():
    from exercises.context import Context

    a = Context(seed=0).gpt("small", dropout=0.1)
    b = Context(seed=0).gpt("small", dropout=0.1)
    c = Context(seed=1).gpt("small", dropout=0.1)
    assert a.training and a.config.dropout == 0.1 and a.config.n_layer == 2
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not torch.equal(a.blocks[0].attn.qkv.weight, c.blocks[0].attn.qkv.weight)
    torch.manual_seed(0)
    by_hand = GPT(GPTConfig(vocab_size=37, block_size=32, n_layer=2, n_head=2, n_embd=64, dropout=0.1))
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), by_hand.parameters()))


def test_train_cites_sections_that_exist():
    # Make_optimizer cited seed 001 "The optimizer owns the update", a section the seed
    # does not have; AdamW built once outside the loop is its "Parts 3 and 4" section.
    import engine.train

    assert "The optimizer owns the update" not in engine.train.make_optimizer.__doc__
    assert '"Parts 3 and 4: inspect and train the bigram"' in engine.train.make_optimizer.__doc__


# ---------------------------------------------------------------------------
# The loop's machinery: decay groups, warm-up, clipping, checkpoints


def _tiny(seed: int = 0) -> GPT:
    torch.manual_seed(seed)
    return GPT(GPTConfig(vocab_size=5, block_size=8, n_layer=1, n_head=2, n_embd=8))


def _batch(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    data = torch.randint(0, 5, (2, 9), generator=g)
    return data[:, :-1], data[:, 1:]


def test_decay_groups_split_by_rank():
    from engine.train import decay_groups

    model = _tiny()
    matrices, vectors = decay_groups(model, 0.1)
    assert matrices["weight_decay"] == 0.1 and vectors["weight_decay"] == 0.0
    # wte (tied with lm_head, once), wpe, qkv, proj, fc, mlp proj: 6 matrices; the rest are vectors.
    assert len(matrices["params"]) == 6 and all(p.dim() == 2 for p in matrices["params"])
    assert {p.dim() for p in vectors["params"]} == {1}
    assert len(matrices["params"]) + len(vectors["params"]) == len(list(model.parameters()))
    optimizer = make_optimizer(model, lr=1e-3, weight_decay=0.1, split_decay=True)
    assert [g["weight_decay"] for g in optimizer.param_groups] == [0.1, 0.0]
    assert len(make_optimizer(model).param_groups) == 1  # the default decays every tensor


def test_warmup_schedule_by_hand():
    from engine.train import warmup_schedule

    model = _tiny()
    optimizer = torch.optim.SGD(model.parameters(), lr=2.0)
    scheduler = warmup_schedule(optimizer, 4)
    used = []
    for _ in range(6):
        used.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    assert used == [0.5, 1.0, 1.5, 2.0, 2.0, 2.0]  # 2.0 * min(1, (k + 1) / 4)
    with pytest.raises(ValueError, match="warmup_steps"):
        warmup_schedule(optimizer, 0)


def test_train_step_clips_before_the_step_and_schedules_after():
    from engine.train import warmup_schedule

    model = _tiny()
    x, y = _batch()
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    scheduler = warmup_schedule(optimizer, 2)
    seen = []
    optimizer.register_step_pre_hook(lambda opt, *_: seen.append(
        (opt.param_groups[0]["lr"], torch.cat([p.grad.flatten() for p in model.parameters()]).norm().item())))
    before = torch.cat([p.detach().flatten() for p in model.parameters()])
    train_step(model, optimizer, x, y, max_norm=0.01, scheduler=scheduler)
    after = torch.cat([p.detach().flatten() for p in model.parameters()])
    lr, grad_norm = seen[0]
    assert lr == 0.5 and grad_norm == pytest.approx(0.01, rel=1e-4)  # clipped before the step read it
    assert (after - before).norm().item() == pytest.approx(0.5 * 0.01, rel=1e-4)  # SGD: lr x clipped norm
    assert optimizer.param_groups[0]["lr"] == 1.0  # advanced after the step


def test_train_step_returns_the_loss_it_stepped_on():
    model = _tiny()
    x, y = _batch()
    before = evaluate(model, x, y)
    returned = train_step(model, torch.optim.SGD(model.parameters(), lr=0.5), x, y)
    assert returned == pytest.approx(before, abs=1e-6)
    assert abs(evaluate(model, x, y) - before) > 1e-4  # the weights moved; the returned loss did not follow


def test_checkpoint_resume_matches_an_uninterrupted_run():
    import io

    from engine.train import load_checkpoint, save_checkpoint, warmup_schedule

    x, y = _batch()

    def fresh():
        model = _tiny()
        optimizer = make_optimizer(model, lr=1e-2)
        return model, optimizer, warmup_schedule(optimizer, 3)

    model, optimizer, scheduler = fresh()
    for _ in range(6):
        train_step(model, optimizer, x, y, scheduler=scheduler)
    straight = [p.detach().clone() for p in model.parameters()]

    model, optimizer, scheduler = fresh()
    for _ in range(3):
        train_step(model, optimizer, x, y, scheduler=scheduler)
    buffer = io.BytesIO()
    save_checkpoint(buffer, model, optimizer, 3, scheduler)
    buffer.seek(0)
    model, optimizer, scheduler = fresh()
    assert load_checkpoint(buffer, model, optimizer, scheduler) == 3
    for _ in range(3):
        train_step(model, optimizer, x, y, scheduler=scheduler)
    assert all(torch.equal(a, b) for a, b in zip(straight, model.parameters()))

    buffer.seek(0)
    other = _tiny(seed=1)
    load_checkpoint(buffer, other)  # weights only into a differently seeded model
    assert torch.equal(other.wte.weight, straight[0]) is False  # it holds the step-3 weights, not step 6
    with pytest.raises(KeyError):
        load_checkpoint(io.BytesIO(_saved({"weights": 1})), other)


def _saved(obj) -> bytes:
    import io

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def test_accumulate_gradients_over_unequal_microbatches_equals_the_full_batch():
    # Seed 001, "Explain it back": microbatches of 6 and 2 windows weigh 3/4 and 1/4 of the batch.
    from engine.train import accumulate_gradients

    model = _tiny().double()
    g = torch.Generator().manual_seed(0)
    data = torch.randint(0, 5, (8, 5), generator=g)
    x, y = data[:, :-1], data[:, 1:]  # (8, 4): 32 targets
    model(x, targets=y)[1].backward()
    full = [p.grad.clone() for p in model.parameters()]
    mean = accumulate_gradients(model, [(x[:6], y[:6]), (x[6:], y[6:])])
    assert mean == pytest.approx(evaluate(model, x, y), abs=1e-12)  # the mean over all 32 targets
    assert all(torch.allclose(a, p.grad, atol=1e-12) for a, p in zip(full, model.parameters()))
    equal_halves = 0.5 * model(x[:6], targets=y[:6])[1] + 0.5 * model(x[6:], targets=y[6:])[1]
    assert abs(equal_halves.item() - mean) > 1e-4  # 1/2 each would be a different objective


def test_accumulate_gradients_counts_real_targets_and_resets_first():
    from engine.data import IGNORE_INDEX, pad_batch
    from engine.train import accumulate_gradients

    model = _tiny().double()
    x, y = pad_batch([[1, 2, 3, 4, 0], [2, 3]], pad_id=0)  # 4 real targets + 1 real target
    for p in model.parameters():
        p.grad = torch.full_like(p, 7.0)  # stale gradients must not survive
    accumulate_gradients(model, [(x[:1], y[:1]), (x[1:], y[1:])])
    together = [p.grad.clone() for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    model(x, targets=y)[1].backward()  # the loss skips IGNORE_INDEX: a mean over 5 real targets
    assert (y == IGNORE_INDEX).sum() == 3
    assert all(torch.allclose(a, p.grad, atol=1e-12) for a, p in zip(together, model.parameters()))
    with pytest.raises(ValueError, match="no target"):
        accumulate_gradients(model, [(x[1:], torch.full_like(y[1:], IGNORE_INDEX))])


def test_a_checkpoint_restores_the_data_position_and_torchs_random_state():
    import io

    from engine.train import load_checkpoint, make_optimizer, save_checkpoint

    model = GPT(GPTConfig(vocab_size=5, block_size=4, n_layer=1, n_head=1, n_embd=8))
    optimizer = make_optimizer(model)
    sampler = torch.Generator().manual_seed(1)
    torch.randint(0, 100, (3,), generator=sampler)  # the sampler has moved on
    buffer = io.BytesIO()
    save_checkpoint(buffer, model, optimizer, 0, generator=sampler)
    next_draws = torch.randint(0, 100, (5,), generator=sampler), torch.rand(5)
    fresh = torch.Generator().manual_seed(1)
    torch.manual_seed(123)  # a new process seeds torch again
    buffer.seek(0)
    load_checkpoint(buffer, model, optimizer, generator=fresh)
    assert torch.equal(torch.randint(0, 100, (5,), generator=fresh), next_draws[0])
    assert torch.equal(torch.rand(5), next_draws[1])
