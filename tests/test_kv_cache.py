"""The KV cache keeps each update where it belongs, and cached decoding gives the
naive path's logits, also once the sequence is longer than block_size.

Seed 000, section 6: a cache changes coordinates, not the meaning of attention.
The values below are known without the engine: the stored slices are the
tensors written, and the naive path reruns the model on the last block_size
tokens, so a step's logits are the model's on that window.
"""

from __future__ import annotations

import pytest
import torch

import engine.generate
from engine.config import GPTConfig
from engine.generate import generate
from engine.model import GPT, KVCache

SMALL = GPTConfig(vocab_size=37, block_size=16, n_layer=2, n_head=4, n_embd=32)


def numbered(B: int, H: int, T: int, D: int, start: float) -> torch.Tensor:
    """(B, H, T, D) holding start, start + 1, ... in row-major order: every entry is known by position."""
    return torch.arange(start, start + B * H * T * D).reshape(B, H, T, D)


def test_two_updates_fill_consecutive_slices_and_return_both():
    cache = KVCache(batch_size=2, n_head=3, max_len=6, head_size=4)
    k1, v1 = numbered(2, 3, 2, 4, 0.0), numbered(2, 3, 2, 4, 1000.0)
    k2, v2 = numbered(2, 3, 3, 4, 500.0), numbered(2, 3, 3, 4, 2000.0)
    cache.update(k1, v1)
    k_all, v_all = cache.update(k2, v2)
    assert cache.seq_len == 5
    assert k_all.shape == v_all.shape == (2, 3, 5, 4)
    # the second update sits at positions 2, 3, 4, after the first, in both keys and values
    assert torch.equal(k_all[:, :, 2:5], k2) and torch.equal(v_all[:, :, 2:5], v2)
    assert torch.equal(k_all[:, :, :2], k1) and torch.equal(v_all[:, :, :2], v1)
    # one known entry, read by hand: batch 1, head 2, time 3 (the second update's time 1), channel 0
    assert k_all[1, 2, 3, 0].item() == 564.0  # 500 + 1 * (3 * 3 * 4) + 2 * (3 * 4) + 1 * 4
    # the unused last row of storage is still zero
    assert torch.count_nonzero(cache.k[:, :, 5:]) == 0 and torch.count_nonzero(cache.v[:, :, 5:]) == 0


def test_an_update_that_does_not_fit_names_both_counts_and_changes_nothing():
    cache = KVCache(batch_size=1, n_head=1, max_len=4, head_size=2)
    cache.update(numbered(1, 1, 3, 2, 1.0), numbered(1, 1, 3, 2, 1.0))
    with pytest.raises(ValueError, match=r"3 stored \+ 2 new = 5 tokens exceeds max_len 4"):
        cache.update(numbered(1, 1, 2, 2, 9.0), numbered(1, 1, 2, 2, 9.0))
    assert cache.seq_len == 3 and torch.count_nonzero(cache.k[:, :, 3:]) == 0
    with pytest.raises(ValueError, match=r"\(B, H, D\) must match"):
        cache.update(numbered(1, 2, 1, 2, 0.0), numbered(1, 2, 1, 2, 0.0))


@pytest.fixture
def model() -> GPT:
    torch.manual_seed(0)
    return GPT(SMALL).eval()


def decode(model: GPT, prompt: torch.Tensor, steps: int, use_cache: bool,
           monkeypatch: pytest.MonkeyPatch) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Greedy generation, keeping the last-position logits (B, V) each step chose from."""
    chosen_from: list[torch.Tensor] = []
    pick = engine.generate._next_token

    def recording(logits, *args):
        chosen_from.append(logits.clone())
        return pick(logits, *args)
    monkeypatch.setattr(engine.generate, "_next_token", recording)
    ids = generate(model, prompt, steps, greedy=True, use_cache=use_cache)
    monkeypatch.setattr(engine.generate, "_next_token", pick)
    return ids, chosen_from


def test_cached_logits_equal_naive_logits_past_the_window(model, monkeypatch):
    g = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, SMALL.vocab_size, (2, 5), generator=g)
    steps = 30  # 5 + 30 = 35 tokens: the window of 16 slides from step 11 on
    naive_ids, naive = decode(model, prompt, steps, use_cache=False, monkeypatch=monkeypatch)
    cached_ids, cached = decode(model, prompt, steps, use_cache=True, monkeypatch=monkeypatch)
    assert len(naive) == len(cached) == steps
    assert torch.equal(naive_ids, cached_ids)
    for step in range(steps):
        assert cached[step].shape == (2, SMALL.vocab_size)
        assert torch.allclose(cached[step], naive[step], atol=1e-5), f"step {step}"
    # past the window, a step's logits are the model's on the last block_size tokens
    with torch.no_grad():
        for step in (12, 20, steps - 1):
            length = 5 + step  # tokens before this step's choice: 17, 25, 34, all over block_size 16
            window = naive_ids[:, length - SMALL.block_size:length]
            expected = model(window)[0][:, -1, :]  # (B, V)
            assert torch.allclose(cached[step], expected, atol=1e-5), f"step {step}"


@pytest.mark.parametrize("chunks", [[2, 2, 3], [2, 5], [7]])
def test_chunks_fed_through_the_cache_give_the_full_pass_logits(model, chunks):
    """A chunk of T > 1 new tokens needs the causal mask shifted by the offset; T = 2 is the smallest such chunk."""
    x = torch.randint(0, SMALL.vocab_size, (2, sum(chunks)), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        full = model(x)[0]  # (B, T, V)
        cache, start, pieces = model.new_cache(2), 0, []
        for size in chunks:
            pieces.append(model(x[:, start:start + size], cache=cache)[0])
            start += size
    assert cache[0].seq_len == sum(chunks)
    assert torch.allclose(torch.cat(pieces, dim=1), full, atol=1e-5)
