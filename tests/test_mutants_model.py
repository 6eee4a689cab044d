"""The engine GPT, checked against values known by hand.

Each test pins a behaviour of engine/model.py that a mutation (a flipped sign,
a dropped argument; see scripts/mutation.sh) changed without any other test
failing. Seed 004, "The model": token + position embeddings, pre-norm blocks
that add their attention and MLP branches to the residual stream, dropout only
in training, GPT-2 initialisation N(0, 0.02).
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch
import torch.nn as nn

from engine.config import GPTConfig
from engine.model import GPT, Block, CausalSelfAttention, KVCache

SMALL = GPTConfig(vocab_size=37, block_size=16, n_layer=2, n_head=4, n_embd=32)


def gpt(**overrides) -> GPT:
    torch.manual_seed(0)
    return GPT(replace(SMALL, **overrides)).eval()


def ids(*rows: list[int]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.long)


def layer_norm_by_hand(x: torch.Tensor) -> torch.Tensor:
    """LayerNorm with weight 1 and bias 0 (its initial state): (x - mean) / sqrt(var + 1e-5) over C."""
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5)


def test_the_first_activation_is_the_token_row_plus_the_position_row():
    model = gpt()
    seen = []
    model.drop.register_forward_hook(lambda module, args, out: seen.append(args[0]))
    model(ids([5, 0, 36]))
    expected = model.wte.weight[[5, 0, 36]] + model.wpe.weight[[0, 1, 2]]  # (T, C)
    assert torch.equal(seen[0][0], expected)


@torch.no_grad()
def test_a_block_adds_its_mlp_branch_to_the_residual_stream():
    block = Block(SMALL).eval()
    block.attn.proj.weight.zero_()  # the attention branch adds nothing
    block.mlp.proj.weight.zero_()
    block.mlp.proj.bias.fill_(1.0)  # the MLP branch adds exactly 1 everywhere
    x = torch.randn(2, 3, SMALL.n_embd, generator=torch.Generator().manual_seed(0))
    assert torch.equal(block(x), x + 1.0)


@torch.no_grad()
def test_a_block_adds_causally_averaged_values_when_queries_and_keys_are_zero():
    C = SMALL.n_embd
    block = Block(SMALL).eval()
    block.mlp.proj.weight.zero_()
    block.mlp.proj.bias.zero_()  # the MLP branch adds nothing
    block.attn.qkv.weight.zero_()
    block.attn.qkv.weight[2 * C:].copy_(torch.eye(C))  # q = k = 0, v = the normalised input
    block.attn.proj.weight.copy_(torch.eye(C))
    x = torch.randn(1, 3, C, generator=torch.Generator().manual_seed(0))
    v = layer_norm_by_hand(x)
    # equal scores: position t attends to positions 0..t with weight 1 / (t + 1)
    averaged = torch.stack([v[:, : t + 1].mean(dim=1) for t in range(3)], dim=1)
    assert torch.allclose(block(x), x + averaged, atol=1e-5)


def test_dropout_changes_nothing_in_eval_mode():
    x = ids([1, 2, 3, 4, 5])
    with torch.no_grad():
        assert torch.equal(gpt(dropout=0.5)(x)[0], gpt(dropout=0.0)(x)[0])


@pytest.mark.parametrize("cached", [False, True])
def test_attention_dropout_acts_in_training_mode(cached):
    attn = CausalSelfAttention(replace(SMALL, dropout=0.5)).train()
    attn.resid_dropout = nn.Identity()  # leave only the dropout inside SDPA
    x = torch.randn(1, 6, SMALL.n_embd, generator=torch.Generator().manual_seed(0))

    def once():
        cache = KVCache(1, SMALL.n_head, SMALL.block_size, SMALL.head_size) if cached else None
        with torch.no_grad():
            return attn(x, cache=cache)
    torch.manual_seed(1)
    first = once()
    assert not torch.equal(first, once())  # a fresh dropout mask each call
    attn.eval()
    assert torch.equal(once(), once())


@pytest.mark.parametrize("bias", [True, False])
def test_the_mlp_carries_biases_only_when_the_config_says_so(bias):
    model = gpt(bias=bias)
    for block in model.blocks:
        assert (block.mlp.fc.bias is not None) is bias and (block.mlp.proj.bias is not None) is bias
        assert block.attn.qkv.bias is None and block.attn.proj.bias is None
    assert model.lm_head.bias is None


def test_weights_start_as_normal_noise_with_std_0_02_and_biases_at_zero():
    torch.manual_seed(0)
    model = GPT(GPTConfig())  # the seed's 804,224-parameter model
    for weight in (model.blocks[0].attn.qkv.weight, model.blocks[0].mlp.fc.weight, model.wte.weight,
                   model.wpe.weight):
        assert abs(weight.std().item() - 0.02) < 0.0008 and abs(weight.mean().item()) < 0.001
    assert torch.count_nonzero(model.blocks[0].mlp.fc.bias) == 0


def test_the_cache_stores_the_dtype_it_is_given_or_the_models():
    assert KVCache(1, 2, 4, 3, dtype=torch.float64).k.dtype == torch.float64
    assert KVCache(1, 2, 4, 3, dtype=torch.float64).v.dtype == torch.float64
    double = gpt().double()
    assert {(c.k.dtype, c.v.dtype) for c in double.new_cache(1)} == {(torch.float64, torch.float64)}
    assert {(c.k.dtype, c.v.dtype) for c in gpt().new_cache(1, dtype=torch.float16)} == {(torch.float16,) * 2}


@pytest.mark.parametrize("idx, error, message", [
    (torch.zeros(1, 3), TypeError, "idx must be an integer tensor of token ids, got torch.float32."),
    ([[1, 2]], TypeError, "idx must be an integer tensor of token ids, got list."),
    (torch.zeros(5, dtype=torch.long), ValueError, "idx must have shape (B, T), got (5,)."),
    (ids([-1, 3]), IndexError, "token id -1 is outside [0, 37)"),
    (ids([0, 40]), IndexError, "token id 40 is outside [0, 37)"),
    (ids([40]), IndexError, "token id 40 is outside [0, 37)"),
])
def test_bad_ids_are_named_in_one_sentence(idx, error, message):
    with pytest.raises(error) as caught:
        gpt()(idx)
    assert str(caught.value).startswith(message)


def test_an_empty_sequence_gives_empty_logits():
    logits, loss = gpt()(torch.zeros(2, 0, dtype=torch.long))
    assert logits.shape == (2, 0, SMALL.vocab_size) and loss is None


def test_a_cache_overflow_names_the_sum():
    model = gpt()
    cache = model.new_cache(1)
    model(ids(list(range(12))), cache=cache)
    with pytest.raises(ValueError, match=r"^cached length 12 \+ new length 5 = 17 exceeds block_size 16$"):
        model(ids([1, 2, 3, 4, 5]), cache=cache)


def test_the_loss_of_uniform_logits_is_log_v():
    model = gpt()
    with torch.no_grad():
        model.lm_head.weight.zero_()  # tied: the embedding is zero too, so every logit is 0
    x = ids([1, 2, 3])
    _, loss = model(x, targets=ids([4, 5, 6]))
    assert loss.item() == pytest.approx(math.log(SMALL.vocab_size), abs=1e-6)
