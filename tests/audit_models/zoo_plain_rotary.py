"""A plain tensor attribute the model carries along itself, for REGISTRATION's test zoo: the rotary
embedding of modded-nanogpt (its ``Rotary`` and ``apply_rotary_emb`` as of late 2024, written here in
that style, not copied) in every attention module of zoo_nano.py's GPT. ``inv_freq`` is a plain
attribute, not a buffer; the forward converts it where it uses it (``.type_as(self.inv_freq)``, then
``.to(x.device)``), so the model runs after ``.double()`` or ``.to(device)``.

``build`` is clean; ``build_unconverted`` is the same rotary with the conversion left out
(``torch.outer(torch.arange(T, device=x.device), self.inv_freq)``), which breaks the model on a GPU.
"""

import torch
import torch.nn as nn
from torch.nn import functional as F

import zoo_nano
from bug_attention_kv_tiling import with_attention


class Rotary(nn.Module):
    def __init__(self, dim, base=10000):
        super().__init__()
        self.inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        self.seq_len_cached = None
        self.cos_cached = None
        self.sin_cached = None

    def frequencies(self, x, seq_len):
        t = torch.arange(seq_len, device=x.device).type_as(self.inv_freq)
        return torch.outer(t, self.inv_freq).to(x.device)

    def forward(self, x):
        seq_len = x.shape[1]
        if seq_len != self.seq_len_cached:
            self.seq_len_cached = seq_len
            freqs = self.frequencies(x, seq_len)
            self.cos_cached = freqs.cos()
            self.sin_cached = freqs.sin()
        return self.cos_cached[None, :, None, :], self.sin_cached[None, :, None, :]


class RotaryUnconverted(Rotary):
    def frequencies(self, x, seq_len):
        return torch.outer(torch.arange(seq_len, device=x.device), self.inv_freq)


def apply_rotary_emb(x, cos, sin):
    assert x.ndim == 4  # multihead attention, (B, T, H, D)
    d = x.shape[3] // 2
    x1, x2 = x[..., :d], x[..., d:]
    y1 = x1 * cos + x2 * sin
    y2 = x1 * (-sin) + x2 * cos
    return torch.cat([y1, y2], 3).type_as(x)


class RotaryAttention(zoo_nano.SelfAttention):
    rotary_class = Rotary

    def __init__(self, config):
        super().__init__(config)
        self.rotary = self.rotary_class(config.n_embd // config.n_head)

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head) for t in self.c_attn(x).split(C, dim=2))
        cos, sin = self.rotary(q)
        q, k = apply_rotary_emb(q, cos, sin), apply_rotary_emb(k, cos, sin)
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        return self.resid_dropout(self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C)))


class UnconvertedAttention(RotaryAttention):
    rotary_class = RotaryUnconverted


def build():
    return zoo_nano.build(model_class=with_attention(RotaryAttention))


def build_unconverted():
    return zoo_nano.build(model_class=with_attention(UnconvertedAttention))
