"""Attention whose scores are more than q @ k^T / sqrt(D), for ATTENTION's test zoo, in zoo_nano.py's
GPT. Written here in the style of the code named, not copied from it:

- ``Alibi``: ALiBi as BLOOM builds it (transformers' ``build_alibi_tensor``: slopes 2^(-8h/H), a bias
  slope x key position) added to scores computed as MPT's torch attention computes them (q.matmul(k) x
  softmax_scale + attn_bias, the future filled with the dtype's minimum); no position table is needed,
  but zoo_nano's GPT keeps its own;
- ``SoftCapped``: Gemma 2's eager attention (transformers' ``eager_attention_forward``): scores x
  query_pre_attn_scalar^-0.5, soft-capped as softcap x tanh(scores / softcap), an additive causal mask,
  softmax in float32; ``build_soft_capped_scalar`` with a ``query_pre_attn_scalar`` other than D.

``build_alibi`` and ``build_soft_capped`` are clean; the bugs leak the future in the same code:
``build_alibi_mask_shifted`` builds its mask with ``triu(diagonal=2)``, so each position also reads the
next; ``build_soft_capped_unmasked`` reaches the eager path with no mask (``attention_mask=None``).
"""

import math

import torch
from torch.nn import functional as F

import zoo_nano
from bug_attention_kv_tiling import with_attention


def alibi_slopes(n_head):
    """BLOOM's slopes for a power-of-two head count: base^1 .. base^H, base = 2^(-8/H)."""
    base = 2 ** (-(2 ** -(math.log2(n_head) - 3)))
    return torch.tensor([base ** (h + 1) for h in range(n_head)])


class Alibi(zoo_nano.SelfAttention):
    mask_diagonal = 1  # the future starts one past the query's own position

    def attend(self, q, k, v):
        B, H, T, D = q.shape
        position = torch.arange(T, device=q.device)
        attn_bias = alibi_slopes(H).to(q)[:, None, None] * position[None, None, :]  # (H, 1, T): slope x key position
        attn_weight = q.matmul(k.transpose(-2, -1)) * (1 / math.sqrt(D)) + attn_bias
        future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(diagonal=self.mask_diagonal)
        attn_weight = attn_weight.masked_fill(future, torch.finfo(q.dtype).min)
        return torch.softmax(attn_weight, dim=-1).matmul(v)


class AlibiMaskShifted(Alibi):
    mask_diagonal = 2


class SoftCapped(zoo_nano.SelfAttention):
    attn_logit_softcapping = 50.0
    masked = True

    query_pre_attn_scalar = None  # the head size D where None (Gemma 2 2B and 9B); Gemma 2 27B's is C / H

    def attend(self, q, k, v):
        T, D = q.size(2), q.size(-1)
        scaling = (self.query_pre_attn_scalar or D) ** -0.5
        attn_weights = torch.matmul(q, k.transpose(2, 3)) * scaling
        attn_weights = attn_weights / self.attn_logit_softcapping
        attn_weights = torch.tanh(attn_weights)
        attn_weights = attn_weights * self.attn_logit_softcapping
        if self.masked:
            causal_mask = torch.full((T, T), torch.finfo(q.dtype).min, device=q.device).triu(1)
            attn_weights = attn_weights + causal_mask
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(q.dtype)
        return torch.matmul(attn_weights, v)


class SoftCappedUnmasked(SoftCapped):
    masked = False


class SoftCappedScalar(SoftCapped):
    """``query_pre_attn_scalar`` other than D, here the width C = 64 of the 4 heads of 16."""

    query_pre_attn_scalar = 64


def build_alibi():
    return zoo_nano.build(model_class=with_attention(Alibi))


def build_alibi_mask_shifted():
    return zoo_nano.build(model_class=with_attention(AlibiMaskShifted))


def build_soft_capped():
    return zoo_nano.build(model_class=with_attention(SoftCapped))


def build_soft_capped_scalar():
    return zoo_nano.build(model_class=with_attention(SoftCappedScalar))


def build_soft_capped_unmasked():
    return zoo_nano.build(model_class=with_attention(SoftCappedUnmasked))
