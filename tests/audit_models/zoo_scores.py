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


# ---------------------------------------------------------------------------
# ALiBi handed to SDPA as a float mask (MPT's and BLOOM's SDPA paths), and BLOOM's eager path on 3-D
# tensors: the bias and the scale folded into torch.baddbmm over (B·H, T, D).


class AlibiMask(zoo_nano.SelfAttention):
    """ALiBi and the causal mask in one float ``attn_mask`` to SDPA: slope x key position where a key may be
    read, the dtype's minimum where it may not. ``future_from`` is how far past the query the mask starts."""

    future_from = 1
    slope_sign = 1.0

    def attend(self, q, k, v):
        B, H, T, D = q.shape
        position = torch.arange(T, device=q.device)
        bias = self.slope_sign * alibi_slopes(H).to(q)[:, None, None] * position[None, None, :]  # (H, 1, T)
        future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(diagonal=self.future_from)
        attn_mask = bias.masked_fill(future, torch.finfo(q.dtype).min)[None]  # (1, H, T, T)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)


class AlibiMaskLeaks(AlibiMask):
    """The bug: the mask starts two past the query, so position t also reads t + 1."""

    future_from = 2


class AlibiMaskSignFlipped(AlibiMask):
    """The bug: the slopes' sign flipped, so each query favours the keys furthest in its past."""

    slope_sign = -1.0


class BloomBaddbmm(zoo_nano.SelfAttention):
    """BLOOM's eager attention: heads flattened into the batch, alibi.baddbmm(q, k^T, beta=1, alpha=1/sqrt(D)),
    the future filled with the dtype's minimum, softmax in float32, then bmm with v."""

    slope_sign = 1.0

    def attend(self, q, k, v):
        B, H, T, D = q.shape
        slopes = self.slope_sign * alibi_slopes(H).to(q)
        alibi = (slopes[:, None] * torch.arange(T, device=q.device)[None, :]).repeat(B, 1)[:, None, :]  # (B·H, 1, T)
        query_layer, key_layer = q.reshape(B * H, T, D), k.reshape(B * H, T, D).transpose(1, 2)
        matmul_result = alibi.baddbmm(batch1=query_layer, batch2=key_layer, beta=1.0, alpha=1 / math.sqrt(D))
        attention_scores = matmul_result.view(B, H, T, T)
        future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(diagonal=1)
        attn_weights = attention_scores.masked_fill(future, torch.finfo(attention_scores.dtype).min)
        attention_probs = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(q.dtype)
        context = torch.bmm(attention_probs.view(B * H, T, T), v.reshape(B * H, T, D))
        return context.view(B, H, T, D)


class BloomBaddbmmSignFlipped(BloomBaddbmm):
    slope_sign = -1.0


def build_alibi_mask():
    return zoo_nano.build(model_class=with_attention(AlibiMask))


def build_alibi_mask_leaks():
    return zoo_nano.build(model_class=with_attention(AlibiMaskLeaks))


def build_alibi_mask_sign_flipped():
    return zoo_nano.build(model_class=with_attention(AlibiMaskSignFlipped))


def build_bloom_baddbmm():
    return zoo_nano.build(model_class=with_attention(BloomBaddbmm))


def build_bloom_baddbmm_sign_flipped():
    return zoo_nano.build(model_class=with_attention(BloomBaddbmmSignFlipped))


class SlidingWindow(zoo_nano.SelfAttention):
    """A causal sliding window (Mistral's) as a bool attn_mask: each query reads its own key and the
    ``window - 1`` before it."""

    window = 4

    def attend(self, q, k, v):
        T = q.size(2)
        position = torch.arange(T, device=q.device)
        distance = position[:, None] - position[None, :]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=(distance >= 0) & (distance < self.window))


def build_sliding_window():
    return zoo_nano.build(model_class=with_attention(SlidingWindow))
