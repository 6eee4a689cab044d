"""A GPT built the way Meta's Llama reference ``llama/model.py`` is, written afresh for the audit's zoo.

Meta's file is not vendored (its licence is the Llama 2 Community License,
and it builds its KV cache with ``.cuda()``); this one keeps every trait
the audit has to meet in it, at the zoo's size:

- ``forward(tokens, start_pos)`` with ``start_pos`` required, under
  ``torch.inference_mode()``: it returns full logits (B, T, V) and cannot
  be trained through;
- the KV cache (``cache_k``, ``cache_v``, (max_batch, max_seq, Hkv, D)) and
  the rotary table ``freqs_cis`` kept as plain attributes that the forward
  moves itself (``self.cache_k = self.cache_k.to(xq)``);
- rotary embeddings by complex multiplication in ``apply_rotary_emb`` on
  (B, T, H, D) queries and keys, grouped-query attention (``repeat_kv``),
  RMSNorm, SwiGLU, an untied head.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelArgs:
    dim: int = 64
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: int = 2
    vocab_size: int = 37
    max_batch_size: int = 4
    max_seq_len: int = 64


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0) -> torch.Tensor:
    """(end, dim / 2) complex rotations e^{i t θ_j}."""
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2).float() / dim))
    return torch.polar(torch.ones(end, dim // 2), torch.outer(torch.arange(end).float(), freqs))


def apply_rotary_emb(xq, xk, freqs_cis):
    """Rotate queries (B, T, H, D) and keys (B, T, Hkv, D) by the positions' complex rotations (T, D / 2)."""
    q = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    k = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    f = freqs_cis.view(1, q.size(1), 1, q.size(-1))
    return torch.view_as_real(q * f).flatten(3).type_as(xq), torch.view_as_real(k * f).flatten(3).type_as(xk)


def repeat_kv(x, n_rep: int):
    """(B, T, Hkv, D) -> (B, T, Hkv · n_rep, D)."""
    return x if n_rep == 1 else x.repeat_interleave(n_rep, dim=2)


class Attention(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = args.n_heads, args.n_kv_heads, args.dim // args.n_heads
        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(args.dim, args.n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(args.dim, args.n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(args.n_heads * self.head_dim, args.dim, bias=False)
        shape = (args.max_batch_size, args.max_seq_len, args.n_kv_heads, self.head_dim)
        self.cache_k, self.cache_v = torch.zeros(shape), torch.zeros(shape)

    def forward(self, x, start_pos: int, freqs_cis, mask):
        B, T, _ = x.shape
        xq = self.wq(x).view(B, T, self.n_heads, self.head_dim)
        xk = self.wk(x).view(B, T, self.n_kv_heads, self.head_dim)
        xv = self.wv(x).view(B, T, self.n_kv_heads, self.head_dim)
        xq, xk = apply_rotary_emb(xq, xk, freqs_cis)
        self.cache_k = self.cache_k.to(xq)
        self.cache_v = self.cache_v.to(xq)
        self.cache_k[:B, start_pos:start_pos + T] = xk
        self.cache_v[:B, start_pos:start_pos + T] = xv
        rep = self.n_heads // self.n_kv_heads
        keys = repeat_kv(self.cache_k[:B, :start_pos + T], rep).transpose(1, 2)  # (B, H, S, D)
        values = repeat_kv(self.cache_v[:B, :start_pos + T], rep).transpose(1, 2)
        scores = xq.transpose(1, 2) @ keys.transpose(2, 3) / math.sqrt(self.head_dim)  # (B, H, T, S)
        if mask is not None:
            scores = scores + mask
        y = F.softmax(scores.float(), dim=-1).type_as(xq) @ values  # (B, H, T, D)
        return self.wo(y.transpose(1, 2).reshape(B, T, -1))


class FeedForward(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1, self.w2 = nn.Linear(dim, hidden, bias=False), nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        self.attention, self.feed_forward = Attention(args), FeedForward(args.dim, 172)
        self.attention_norm, self.ffn_norm = RMSNorm(args.dim), RMSNorm(args.dim)

    def forward(self, x, start_pos, freqs_cis, mask):
        h = x + self.attention(self.attention_norm(x), start_pos, freqs_cis, mask)
        return h + self.feed_forward(self.ffn_norm(h))


class Transformer(nn.Module):
    def __init__(self, params: ModelArgs):
        super().__init__()
        self.params = params
        self.tok_embeddings = nn.Embedding(params.vocab_size, params.dim)
        self.layers = nn.ModuleList(TransformerBlock(params) for _ in range(params.n_layers))
        self.norm = RMSNorm(params.dim)
        self.output = nn.Linear(params.dim, params.vocab_size, bias=False)
        self.freqs_cis = precompute_freqs_cis(params.dim // params.n_heads, params.max_seq_len * 2)

    @torch.inference_mode()
    def forward(self, tokens: torch.Tensor, start_pos: int):
        B, T = tokens.shape
        h = self.tok_embeddings(tokens)
        self.freqs_cis = self.freqs_cis.to(h.device)
        freqs_cis = self.freqs_cis[start_pos:start_pos + T]
        mask = None
        if T > 1:  # causal within the chunk, everything cached before it visible
            mask = torch.triu(torch.full((T, T), float("-inf"), device=tokens.device), diagonal=1)
            mask = torch.hstack([torch.zeros((T, start_pos), device=tokens.device), mask]).type_as(h)
        for layer in self.layers:
            h = layer(h, start_pos, freqs_cis, mask)
        return self.output(self.norm(h)).float()


def build():
    return {"model": Transformer(ModelArgs())}
