"""Small GPTs whose forward is driven by token positions, in the styles of three public code bases, for the
audit's test zoo (written for these tests, independent of engine/):

- ``FastTransformer``, gpt-fast's style: ``setup_caches(max_batch_size, max_seq_length)`` must run before
  any forward (it does nothing when the caches it has are already large enough), and every forward is
  ``forward(idx, input_pos)``: its keys and values go into the cache at ``input_pos`` and attention reads
  the whole cache under a causal mask cut at those rows. Fused ``wqkv``, rotary from a table indexed by
  ``input_pos``.
- ``LitLLaMA``, lit-llama's style: ``forward(idx, max_seq_length=None, input_pos=None)``; without
  ``input_pos`` a plain causal pass, with it per-layer caches made on first use (``reset_cache()`` drops
  them), written out of place with ``index_copy``.
- ``OneTokenLlama``, the style of a from-scratch Llama written for inference: ``forward(tokens, start_pos)``
  takes one token per call and keeps its keys and values in buffers, written in place (so nothing can be
  trained through it token by token; ``one_token_at_a_time`` is a factory's ``forward`` that can).

Each builder has a planted bug beside it: rotary positions that restart at 0 for every chunk
(``build_fast_positions_restart``), a cache read past the chunk (``build_lit_mask_open``).
"""

from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F


@dataclass
class ModelArgs:
    vocab_size: int = 37
    block_size: int = 64
    n_layer: int = 2
    n_head: int = 4
    dim: int = 64


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotary_table(length, head_dim, base=10000.0):
    """(length, head_dim // 2, 2): the cosine and sine of each position's angle per frequency pair."""
    inv = 1.0 / base ** (torch.arange(0, head_dim, 2).float() / head_dim)
    angles = torch.outer(torch.arange(length).float(), inv)
    return torch.stack([angles.cos(), angles.sin()], dim=-1)


def rotate(x, table):
    """x (B, T, H, D) rotated pairwise by table (T, D // 2, 2)."""
    pairs = x.float().reshape(*x.shape[:-1], -1, 2)
    cos, sin = table[None, :, None, :, 0], table[None, :, None, :, 1]
    out = torch.stack([pairs[..., 0] * cos - pairs[..., 1] * sin, pairs[..., 1] * cos + pairs[..., 0] * sin], -1)
    return out.flatten(3).type_as(x)


class FeedForward(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.w1, self.w3 = nn.Linear(dim, 2 * dim, bias=False), nn.Linear(dim, 2 * dim, bias=False)
        self.w2 = nn.Linear(2 * dim, dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


def _init(model):
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)


# ---------------------------------------------------------------------------
# gpt-fast's style


class KVCache(nn.Module):
    def __init__(self, max_batch_size, max_seq_length, n_head, head_dim, dtype=torch.float32, device=None):
        super().__init__()
        shape = (max_batch_size, n_head, max_seq_length, head_dim)
        self.register_buffer("k_cache", torch.zeros(shape, dtype=dtype, device=device), persistent=False)
        self.register_buffer("v_cache", torch.zeros(shape, dtype=dtype, device=device), persistent=False)

    def update(self, input_pos, k_val, v_val):
        self.k_cache[:, :, input_pos] = k_val
        self.v_cache[:, :, input_pos] = v_val
        return self.k_cache, self.v_cache


class FastAttention(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.n_head, self.head_dim, self.dim = args.n_head, args.dim // args.n_head, args.dim
        self.wqkv = nn.Linear(args.dim, 3 * args.dim, bias=False)
        self.wo = nn.Linear(args.dim, args.dim, bias=False)
        self.kv_cache = None

    def forward(self, x, freqs, mask, input_pos):
        B, T, _ = x.shape
        q, k, v = self.wqkv(x).split(self.dim, dim=-1)
        q, k, v = (t.view(B, T, self.n_head, self.head_dim) for t in (q, k, v))
        q, k = rotate(q, freqs), rotate(k, freqs)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        if self.kv_cache is not None:
            k, v = self.kv_cache.update(input_pos, k, v)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.wo(y.transpose(1, 2).reshape(B, T, self.dim))


class FastBlock(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.attention_norm, self.ffn_norm = RMSNorm(args.dim), RMSNorm(args.dim)
        self.attention, self.feed_forward = FastAttention(args), FeedForward(args.dim)

    def forward(self, x, input_pos, freqs, mask):
        h = x + self.attention(self.attention_norm(x), freqs, mask, input_pos)
        return h + self.feed_forward(self.ffn_norm(h))


class FastTransformer(nn.Module):
    def __init__(self, config=None):
        super().__init__()
        self.config = config = config or ModelArgs()
        self.tok_embeddings = nn.Embedding(config.vocab_size, config.dim)
        self.layers = nn.ModuleList([FastBlock(config) for _ in range(config.n_layer)])
        self.norm = RMSNorm(config.dim)
        self.output = nn.Linear(config.dim, config.vocab_size, bias=False)
        self.max_batch_size, self.max_seq_length = -1, -1
        self.register_buffer("freqs_cis", None, persistent=False)
        self.register_buffer("causal_mask", None, persistent=False)
        _init(self)

    def setup_caches(self, max_batch_size, max_seq_length):
        if self.max_seq_length >= max_seq_length and self.max_batch_size >= max_batch_size:
            return
        self.max_batch_size, self.max_seq_length = max_batch_size, max_seq_length
        device, dtype = self.output.weight.device, self.output.weight.dtype
        head_dim = self.config.dim // self.config.n_head
        for layer in self.layers:
            layer.attention.kv_cache = KVCache(max_batch_size, max_seq_length, self.config.n_head, head_dim,
                                               dtype, device)
        self.freqs_cis = rotary_table(self.config.block_size, head_dim).to(device)
        self.causal_mask = torch.tril(torch.ones(max_seq_length, max_seq_length, dtype=torch.bool, device=device))

    def positions(self, input_pos, T):
        return self.freqs_cis[input_pos]

    def forward(self, idx, input_pos=None):
        assert self.freqs_cis is not None, "Caches must be initialized first"
        mask = self.causal_mask[None, None, input_pos]
        freqs = self.positions(input_pos, idx.size(1))
        x = self.tok_embeddings(idx)
        for layer in self.layers:
            x = layer(x, input_pos, freqs, mask)
        return self.output(self.norm(x))


class FastPositionsRestart(FastTransformer):
    """The bug: the rotary angles are those of 0..T-1 whatever ``input_pos`` says, so a chunk decoded after
    a cache is rotated as if it started the sequence (the full forward, at positions 0..T-1, is right)."""

    def positions(self, input_pos, T):
        return self.freqs_cis[:T]


def build_fast(model_class=FastTransformer):
    model = model_class()
    model.setup_caches(max_batch_size=4, max_seq_length=model.config.block_size)
    return model, torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)


def build_fast_positions_restart():
    return build_fast(FastPositionsRestart)


# ---------------------------------------------------------------------------
# lit-llama's style


class CausalSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.n_head, self.n_embd = config.n_head, config.dim
        self.c_attn = nn.Linear(config.dim, 3 * config.dim, bias=False)
        self.c_proj = nn.Linear(config.dim, config.dim, bias=False)

    def forward(self, x, rope, mask, max_seq_length, input_pos=None, kv_cache=None):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head) for t in (q, k, v))
        q, k = rotate(q, rope), rotate(k, rope)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        if kv_cache is not None:
            cache_k, cache_v = kv_cache
            k, v = cache_k.index_copy(2, input_pos, k), cache_v.index_copy(2, input_pos, v)
            kv_cache = k, v
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C)), kv_cache


class LitBlock(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.rms_1, self.rms_2 = RMSNorm(config.dim), RMSNorm(config.dim)
        self.attn, self.mlp = CausalSelfAttention(config), FeedForward(config.dim)

    def forward(self, x, rope, mask, max_seq_length, input_pos=None, kv_cache=None):
        h, new_kv_cache = self.attn(self.rms_1(x), rope, mask, max_seq_length, input_pos, kv_cache)
        x = x + h
        return x + self.mlp(self.rms_2(x)), new_kv_cache


class LitLLaMA(nn.Module):
    def __init__(self, config=None):
        super().__init__()
        self.config = config = config or ModelArgs()
        self.lm_head = nn.Linear(config.dim, config.vocab_size, bias=False)
        self.transformer = nn.ModuleDict(dict(wte=nn.Embedding(config.vocab_size, config.dim),
                                              h=nn.ModuleList(LitBlock(config) for _ in range(config.n_layer)),
                                              ln_f=RMSNorm(config.dim)))
        self.register_buffer("rope_cache", rotary_table(config.block_size, config.dim // config.n_head),
                             persistent=False)
        mask = torch.tril(torch.ones(config.block_size, config.block_size, dtype=torch.bool))
        self.register_buffer("mask_cache", mask[None, None], persistent=False)
        self.kv_caches = []
        _init(self)

    def cache_mask(self, input_pos, max_seq_length):
        return self.mask_cache.index_select(2, input_pos)[:, :, :, :max_seq_length]

    def forward(self, idx, max_seq_length=None, input_pos=None):
        B, T = idx.size()
        max_seq_length = max_seq_length or self.config.block_size
        if input_pos is not None:
            rope, mask = self.rope_cache.index_select(0, input_pos), self.cache_mask(input_pos, max_seq_length)
        else:
            rope, mask = self.rope_cache[:T], self.mask_cache[:, :, :T, :T]
        x = self.transformer.wte(idx)
        if input_pos is None:
            for block in self.transformer.h:
                x, _ = block(x, rope, mask, max_seq_length)
        else:
            if not self.kv_caches:
                shape = (B, self.config.n_head, max_seq_length, self.config.dim // self.config.n_head)
                self.kv_caches = [(torch.zeros(shape, device=x.device, dtype=x.dtype),
                                   torch.zeros(shape, device=x.device, dtype=x.dtype)) for _ in self.transformer.h]
            for i, block in enumerate(self.transformer.h):
                x, self.kv_caches[i] = block(x, rope, mask, max_seq_length, input_pos, self.kv_caches[i])
        return self.lm_head(self.transformer.ln_f(x))

    def reset_cache(self):
        self.kv_caches.clear()


class LitMaskOpen(LitLLaMA):
    """The bug: with a cache, each chunk's rows of the mask let it see one position further than itself."""

    def cache_mask(self, input_pos, max_seq_length):
        return self.mask_cache.index_select(2, (input_pos + 1).clamp(max=self.config.block_size - 1))[
            :, :, :, :max_seq_length]


def build_lit():
    return LitLLaMA()


def build_lit_mask_open():
    return LitMaskOpen()


# ---------------------------------------------------------------------------
# One token per forward


class OneTokenAttention(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.n_heads, self.head_dim = args.n_head, args.dim // args.n_head
        self.wq, self.wk = nn.Linear(args.dim, args.dim, bias=False), nn.Linear(args.dim, args.dim, bias=False)
        self.wv, self.wo = nn.Linear(args.dim, args.dim, bias=False), nn.Linear(args.dim, args.dim, bias=False)
        shape = (4, args.block_size, self.n_heads, self.head_dim)
        self.register_buffer("cache_k", torch.zeros(shape), persistent=False)
        self.register_buffer("cache_v", torch.zeros(shape), persistent=False)

    def forward(self, x, start_pos, freqs):
        B, T, C = x.shape
        xq, xk, xv = (w(x).view(B, T, self.n_heads, self.head_dim) for w in (self.wq, self.wk, self.wv))
        xq, xk = rotate(xq, freqs), rotate(xk, freqs)
        self.cache_k[:B, start_pos:start_pos + T] = xk
        self.cache_v[:B, start_pos:start_pos + T] = xv
        keys, values = self.cache_k[:B, :start_pos + T], self.cache_v[:B, :start_pos + T]
        y = F.scaled_dot_product_attention(xq.transpose(1, 2), keys.transpose(1, 2), values.transpose(1, 2))
        return self.wo(y.transpose(1, 2).reshape(B, T, C))


class OneTokenBlock(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.attention_norm, self.ffn_norm = RMSNorm(args.dim), RMSNorm(args.dim)
        self.attention, self.feed_forward = OneTokenAttention(args), FeedForward(args.dim)

    def forward(self, x, start_pos, freqs):
        h = x + self.attention(self.attention_norm(x), start_pos, freqs)
        return h + self.feed_forward(self.ffn_norm(h))


class OneTokenLlama(nn.Module):
    def __init__(self, args=None):
        super().__init__()
        self.args = args = args or ModelArgs()
        self.tok_embeddings = nn.Embedding(args.vocab_size, args.dim)
        self.layers = nn.ModuleList(OneTokenBlock(args) for _ in range(args.n_layer))
        self.norm = RMSNorm(args.dim)
        self.output = nn.Linear(args.dim, args.vocab_size, bias=False)
        self.register_buffer("freqs", rotary_table(args.block_size, args.dim // args.n_head), persistent=False)
        _init(self)

    def forward(self, tokens: torch.Tensor, start_pos: int):
        batch_size, seq_len = tokens.shape
        assert seq_len == 1, "Only one token at a time can be processed"
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            h = layer(h, start_pos, self.freqs[start_pos:start_pos + seq_len])
        return self.output(self.norm(h)).float()


def build_one_token():
    return OneTokenLlama()


class OneTokenPos(OneTokenLlama):
    """The same model with its position parameter under a name the audit does not know."""

    def forward(self, tokens, pos=0):
        return super().forward(tokens, start_pos=pos)


def build_one_token_pos():
    return OneTokenPos()


def one_token_at_a_time(model, idx):
    """Full logits (B, T, V) from a one-token-per-forward model: each token at its own start_pos, in order.
    The caches are written in place, so each token gets its own copy of them (a clone keeps the graph to
    the keys already written, and a later write no longer changes a tensor an earlier step saved); they
    start cut loose from the graph of an earlier call."""
    caches = [(m, n) for m in model.modules() for n in ("cache_k", "cache_v") if hasattr(m, n)]
    for m, n in caches:
        setattr(m, n, getattr(m, n).detach().clone())
    logits = []
    for t in range(idx.size(1)):
        for m, n in caches:
            setattr(m, n, getattr(m, n).clone())
        logits.append(model(idx[:, t:t + 1], start_pos=t))
    return torch.cat(logits, dim=1)


def build_one_token_driven():
    return {"model": OneTokenLlama(), "forward": one_token_at_a_time}


def build_needs_mask():
    """A forward that needs an argument the audit cannot know."""
    class NeedsMask(LitLLaMA):
        def forward(self, idx, attention_bias):
            return super().forward(idx) + attention_bias

    return NeedsMask()
