"""Padded self-attention written twice: nn.MultiheadAttention and functional SDPA.

Seed 000 §6, "A KV cache changes coordinates, not the meaning of attention"
(the API trap at the end). Two PyTorch APIs take a boolean mask with opposite
meanings:

* ``nn.MultiheadAttention(..., key_padding_mask=m)``: True means *ignore this
  key* (it is padding).
* ``F.scaled_dot_product_attention(..., attn_mask=m)``: True means *this query
  may attend this key*.

``sdpa_padded`` reuses the weights of a ``MultiheadAttention`` so that both
paths compute the same function when the mask is translated correctly.
"""

import torch
import torch.nn.functional as F
from torch import nn


def mha_padded(mha: nn.MultiheadAttention, x: torch.Tensor, key_padding_mask: torch.Tensor) -> torch.Tensor:
    """Self-attention over x with padded keys ignored, the module's way.

    Args:
        mha: a ``MultiheadAttention`` built with ``batch_first=True``.
        x: (B, T, C) inputs.
        key_padding_mask: (B, T) bool, True where the key is padding.

    Returns:
        (B, T, C) outputs.
    """
    out, _ = mha(x, x, x, key_padding_mask=key_padding_mask, need_weights=False)
    return out  # (B, T, C)


def sdpa_padded(mha: nn.MultiheadAttention, x: torch.Tensor, key_padding_mask: torch.Tensor) -> torch.Tensor:
    """The same self-attention through ``F.scaled_dot_product_attention``.

    Args and returns as ``mha_padded``; the projections are ``mha``'s own.
    """
    B, T, C = x.shape
    H = mha.num_heads
    D = C // H
    q, k, v = F.linear(x, mha.in_proj_weight, mha.in_proj_bias).split(C, dim=2)  # 3 x (B, T, C)
    q, k, v = (t.view(B, T, H, D).transpose(1, 2) for t in (q, k, v))  # (B, H, T, D) each
    keep = ~key_padding_mask  # padding mask (True = ignore) -> attention mask (True = attend)
    attn_mask = keep[:, None, None, :]  # (B, 1, 1, T): the same keys for every head and query
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)  # (B, H, T, D)
    y = y.transpose(1, 2).reshape(B, T, C)  # (B, T, C)
    return mha.out_proj(y)  # (B, T, C)
