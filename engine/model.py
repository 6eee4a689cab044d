"""A small GPT, written to be read.

Seed 004, "The model": token + position embeddings, a stack of pre-norm
transformer blocks (causal self-attention, then an MLP, each inside a residual
connection), a final LayerNorm and a linear head to vocabulary logits.
Seed 000, section 6: a KV cache that lets generation feed one token at a time.

The same classes build the block of today's open models when the config asks
for it (``GPTConfig``: pos, n_kv_head, norm, mlp, window): rotary positions
applied to queries and keys inside attention (``rope_rotate``), fewer
key/value heads than query heads (grouped-query attention), RMSNorm
(``RMSNorm``), a gated MLP (``SwiGLU``) and sliding-window attention
(``sliding_window_mask``). The default config is the seed's model.

Shapes use B batch, T time (tokens), C channels (n_embd), H heads (n_head),
H_kv key/value heads (n_kv_head), D head size (C // H), V vocabulary.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import GPTConfig


# ---------------------------------------------------------------------------
# Heads


def split_heads(x: torch.Tensor, n_head: int) -> torch.Tensor:
    """Partition the channel axis into heads: (B, T, C) -> (B, H, T, D).

    Seed 004, "The model: attention". Each head gets a contiguous slice of D =
    C // H channels at every position; the time axis is untouched. The view
    must split C, then move H in front of T; reshaping straight to
    (B, H, T, D) gives the same shape but cuts the sequence into blocks.
    """
    B, T, C = x.shape
    return x.view(B, T, n_head, C // n_head).transpose(1, 2)  # (B, H, T, D)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """Inverse of ``split_heads``: (B, H, T, D) -> (B, T, C) with C = H * D.

    Seed 004, "The model: attention". merge_heads(split_heads(q, H)) == q
    exactly; the shape ledger checks that round trip.
    """
    B, H, T, D = x.shape
    return x.transpose(1, 2).contiguous().view(B, T, H * D)  # (B, T, C)


# ---------------------------------------------------------------------------
# Rotary positions


def rope_rotate(x: torch.Tensor, positions: torch.Tensor, theta: float = 10000.0) -> torch.Tensor:
    """Turn every head vector by angles proportional to its position: (B, H, T, D) -> (B, H, T, D).

    Rotary position embedding (RoPE), the position signal of Llama-style
    models. The D channels of a head form D/2 pairs, channel i with channel
    i + D/2 (the "rotate half" layout); pair i at position p turns by the
    angle p * theta ** (-2i / D): fast for the first pairs, slow for the
    last. A rotation keeps every vector's length, and turning a query by p
    and a key by p' leaves their dot product depending on p - p' only, so
    attention scores see how far apart two tokens are, not where they are.

    Args:
        x: (B, H, T, D) queries or keys, D even.
        positions: (T,) the absolute position of each of the T time steps;
            with a KV cache they start at the cached length. (B, T) gives
            every row its own positions (a left-padded batch).
        theta: the frequency base (``GPTConfig.rope_theta``).

    Returns:
        The rotated tensor, same shape and dtype (angles are computed in
        float32).
    """
    D = x.size(-1)
    half = D // 2
    inv_freq = theta ** (-torch.arange(0, half, device=x.device, dtype=torch.float32) * 2 / D)  # (D/2,)
    angles = positions.to(torch.float32)[..., None] * inv_freq  # (T, D/2) or (B, T, D/2)
    if angles.dim() == 3:
        angles = angles[:, None]  # (B, 1, T, D/2): one set of positions per row, shared by the heads
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)  # broadcast over B and H
    x1, x2 = x[..., :half], x[..., half:]  # (B, H, T, D/2) each: the two channels of every pair
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)  # (B, H, T, D)


# ---------------------------------------------------------------------------
# Attention, written out


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
              mask: torch.Tensor | None = None,
              dropout_p: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention with every step in view: the path SDPA fuses.

    Seed 004, "The model: attention"; seed 000, section 4. Each query scores
    every key, ``q @ k^T``, scaled by 1/sqrt(D) so the scores keep unit
    variance whatever the head size; keys the mask forbids get a score of
    -inf, so the softmax gives them exactly zero weight; each output is the
    weighted average of the values. With the same mask it equals
    ``F.scaled_dot_product_attention`` within float rounding, and it hands
    back the weights, which SDPA keeps to itself.

    Args:
        q: (B, H, T_q, D) queries.
        k, v: (B, H, T_k, D) keys and values.
        mask: optional bool (T_q, T_k); True means "may attend" (SDPA's
            convention; see ``causal_mask``). Every row needs one True.
        dropout_p: probability of dropping an attention weight (training).

    Returns:
        (y, weights): y (B, H, T_q, D); weights (B, H, T_q, T_k), each row
        summing to 1 (before dropout).
    """
    D = q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, T_q, T_k)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))  # forbidden keys
    weights = F.softmax(scores, dim=-1)  # (B, H, T_q, T_k)
    y = F.dropout(weights, p=dropout_p) @ v if dropout_p > 0 else weights @ v  # (B, H, T_q, D)
    return y, weights


def hide_padding(mask: torch.Tensor, pads: torch.Tensor, offset: int) -> torch.Tensor:
    """Also hide each row's padding keys: (T_new, T_total) mask -> (B, 1, T_new, T_total).

    Seed 000, section 7 ("Masking chooses which examples count"). Row b of
    a left-padded batch opens with pads[b] padding positions; no query may
    attend them, except that a padding query keeps its own key, so that no
    row of the mask is empty (an empty row makes its softmax 0 / 0 = NaN,
    and a NaN value poisons every weighted sum it enters, even with weight 0).

    Args:
        mask: bool (T_new, T_total), True = may attend (``causal_mask``).
        pads: (B,) int64 padding count of each row.
        offset: absolute position of the first query.
    """
    T_new, T_total = mask.shape
    keys = torch.arange(T_total, device=mask.device)  # (T_total,)
    real = keys[None, :] >= pads[:, None]  # (B, T_total): keys that are tokens
    own = keys[None, :] == torch.arange(offset, offset + T_new, device=mask.device)[:, None]  # (T_new, T_total)
    return (mask & real[:, None, None, :]) | own  # (B, 1, T_new, T_total)


# ---------------------------------------------------------------------------
# KV cache


def causal_mask(offset: int, T_new: int, T_total: int, device=None) -> torch.Tensor:
    """Boolean attention mask for T_new queries that start at position ``offset``.

    Seed 000, section 6: a cache changes coordinates, not the meaning of
    attention. Query i sits at absolute position offset + i and may see key j
    iff j <= offset + i. With offset=3, T_new=2, T_total=5 the rows are
    [1 1 1 1 0] and [1 1 1 1 1].

    Returns:
        Bool tensor of shape (T_new, T_total); True means "may attend", the
        convention of ``F.scaled_dot_product_attention``.
    """
    q_pos = torch.arange(offset, offset + T_new, device=device).unsqueeze(1)  # (T_new, 1)
    k_pos = torch.arange(T_total, device=device).unsqueeze(0)  # (1, T_total)
    return k_pos <= q_pos  # (T_new, T_total)


def sliding_window_mask(offset: int, T_new: int, T_total: int, window: int, device=None) -> torch.Tensor:
    """``causal_mask`` restricted to the ``window`` most recent positions, the query's own included.

    Sliding-window attention (Mistral's convention): query i at absolute
    position q = offset + i may see key j iff q - window < j <= q, so every
    row holds at most ``window`` keys. With offset=0, T_new=T_total=5 and
    window=2 the last row is [0 0 0 1 1].

    Returns:
        Bool tensor (T_new, T_total); True means "may attend".
    """
    q_pos = torch.arange(offset, offset + T_new, device=device).unsqueeze(1)  # (T_new, 1)
    k_pos = torch.arange(T_total, device=device).unsqueeze(0)  # (1, T_total)
    recent = k_pos > q_pos - window  # (T_new, T_total): the last `window` positions
    return causal_mask(offset, T_new, T_total, device) & recent  # (T_new, T_total)


class KVCache:
    """Keys and values of one attention layer, kept between forward calls.

    Seed 000, section 6. Storage is preallocated as two (B, H, max_len, D)
    tensors (H is the number of key/value heads: with grouped-query attention
    the cache holds only H_kv of them); ``update`` writes new entries by index along the time axis, so a
    decoding step copies only the new token's keys and values (no torch.cat
    over the whole history). Meant for inference under ``torch.no_grad()``.

    Args:
        batch_size: B.
        n_head: H.
        max_len: the most tokens the cache can hold (the model's block_size).
        head_size: D.
        device, dtype: where and how to store keys and values.

    Attributes:
        seq_len: how many tokens are stored so far.
        pads: None, or (B,) int64 for a left-padded batch: row b's first
            pads[b] positions are padding. Attention then hides those keys
            from every real query, and positions count from each row's
            first real token (``engine.generate.generate_batch``).
    """

    def __init__(self, batch_size: int, n_head: int, max_len: int, head_size: int,
                 device=None, dtype=None) -> None:
        shape = (batch_size, n_head, max_len, head_size)
        self.k = torch.zeros(shape, device=device, dtype=dtype)  # (B, H, max_len, D)
        self.v = torch.zeros(shape, device=device, dtype=dtype)  # (B, H, max_len, D)
        self.max_len = max_len
        self.seq_len = 0
        self.pads: torch.Tensor | None = None

    def update(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append new keys and values and return everything stored so far.

        Args:
            k, v: (B, H, T_new, D) projections of the new tokens.

        Returns:
            (k_all, v_all), views of shape (B, H, seq_len, D) after the write.

        Raises:
            ValueError: if the new tokens would not fit in max_len, or their
                (B, H, D) differ from the cache's.
        """
        B, H, T_new, D = k.shape
        if (B, H, D) != (self.k.size(0), self.k.size(1), self.k.size(3)):
            raise ValueError(
                f"keys of shape {tuple(k.shape)} do not fit a cache of shape "
                f"{tuple(self.k.shape)}; (B, H, D) must match."
            )
        end = self.seq_len + T_new
        if end > self.max_len:
            raise ValueError(
                f"KV cache overflow: {self.seq_len} stored + {T_new} new = {end} "
                f"tokens exceeds max_len {self.max_len}."
            )
        self.k[:, :, self.seq_len:end] = k
        self.v[:, :, self.seq_len:end] = v
        self.seq_len = end
        return self.k[:, :, :end], self.v[:, :, :end]  # (B, H, seq_len, D) each


# ---------------------------------------------------------------------------
# Modules


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention through SDPA.

    Seed 004, "The model: attention". One packed Linear makes q, k and v;
    each is split into H heads; ``F.scaled_dot_product_attention`` applies
    the causal restriction; heads are merged and projected back to C.

    Options of the config: with ``pos="rope"`` the queries and keys are
    turned to their absolute positions (``rope_rotate``) before the keys
    enter the cache; with ``n_kv_head < n_head`` the Linear makes H_kv
    key and value heads, the cache keeps those, and each is repeated for
    the n_head // n_kv_head query heads of its group (query head h reads
    key/value head h // group); with ``window`` every query sees only the
    most recent positions (``sliding_window_mask``).

    Attributes:
        fused: True (the default) runs SDPA. False runs the written-out
            ``attention`` with an explicit causal mask, the same function
            step by step, and keeps its weights in ``self.weights``
            (B, H, T, T_k) after each call, for instruments to read.
    """

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        C = config.n_embd
        self.n_head = config.n_head
        self.n_kv_head = config.kv_heads
        # Rotary positions turn q and k here; None: learned positions, added before the blocks.
        self.rope_theta = config.rope_theta if config.pos == "rope" else None
        self.window = config.window
        self.dropout = config.dropout
        kv_width = self.n_kv_head * config.head_size  # H_kv * D; C when every head has its own
        self.sizes = (C, kv_width, kv_width)  # q, k, v along the packed output
        self.qkv = nn.Linear(C, C + 2 * kv_width, bias=False)
        self.proj = nn.Linear(C, C, bias=False)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.fused = True
        self.weights: torch.Tensor | None = None

    def mask(self, offset: int, T: int, T_total: int, device=None) -> torch.Tensor:
        """The bool (T, T_total) mask of this layer: causal, or causal within the sliding window."""
        if self.window is None:
            return causal_mask(offset, T, T_total, device)
        return sliding_window_mask(offset, T, T_total, self.window, device)

    def forward(self, x: torch.Tensor, cache: KVCache | None = None,
                offset: int = 0) -> torch.Tensor:
        """(B, T, C) -> (B, T, C).

        Seed 004's attention is the first two lines and the SDPA call with
        ``is_causal=True``, then the merge and projection. Each option of the
        config adds one line between them and keeps its mechanism in a
        method of its own: ``rotate`` (rotary positions), ``KVCache.update``
        (the cache), ``share_kv_heads`` (grouped-query attention) and
        ``attn_mask`` (the explicit mask that a cache, a sliding window or
        padding needs, as does the written-out path).

        Args:
            x: (B, T, C) normalised residual stream.
            cache: this layer's KV cache, or None for a full causal pass.
            offset: absolute position of x's first token (the number of
                tokens already in the cache).
        """
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(self.sizes, dim=2)  # (B, T, C), (B, T, H_kv * D), (B, T, H_kv * D)
        q, k, v = split_heads(q, self.n_head), split_heads(k, self.n_kv_head), split_heads(v, self.n_kv_head)
        pads = None if cache is None else cache.pads  # (B,) padding counts of a left-padded batch, or None
        if self.rope_theta is not None:
            q, k = self.rotate(q, k, offset, pads)  # keys enter the cache already turned
        if cache is not None:
            k, v = cache.update(k, v)  # (B, H_kv, offset + T, D)
        if self.n_kv_head < self.n_head:
            k, v = self.share_kv_heads(k, v)  # (B, H, T_k, D)
        dropout_p = self.dropout if self.training else 0.0
        if self.fused and cache is None and self.window is None:  # the seed's model
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout_p, is_causal=True)  # (B, H, T, D)
        elif self.fused:
            # One new token is the newest position and may see every cached
            # key: it needs no mask. A chunk of T > 1 tokens does, and so do
            # a sliding window, which hides the oldest keys, and padding.
            needs_mask = T > 1 or self.window is not None or pads is not None
            mask = self.attn_mask(offset, T, k.size(2), pads, x.device) if needs_mask else None
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)  # (B, H, T, D)
        else:
            mask = self.attn_mask(offset, T, k.size(2), pads, x.device)  # (T, T_k) or (B, 1, T, T_k)
            y, self.weights = attention(q, k, v, mask, dropout_p)  # (B, H, T, D), (B, H, T, T_k)
        return self.resid_dropout(self.proj(merge_heads(y)))  # (B, T, C)

    def rotate(self, q: torch.Tensor, k: torch.Tensor, offset: int,
               pads: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """Rotary positions: turn queries and keys to the absolute positions of their tokens.

        The T new tokens sit at offset, offset + 1, ...; in a left-padded
        batch each row counts from its first real token instead, so a prompt
        gets the same angles whatever padding precedes it.

        Args:
            q: (B, H, T, D) queries; k: (B, H_kv, T, D) keys.
            offset: absolute position of the first new token.
            pads: None, or (B,) padding counts (``KVCache.pads``).

        Returns:
            (q, k), rotated, same shapes.
        """
        T = q.size(2)
        positions = torch.arange(offset, offset + T, device=q.device)  # (T,): where the new tokens sit
        if pads is not None:
            positions = (positions - pads[:, None]).clamp(min=0)  # (B, T): count from the first real token
        return rope_rotate(q, positions, self.rope_theta), rope_rotate(k, positions, self.rope_theta)

    def share_kv_heads(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Grouped-query attention: repeat each key/value head for its group of query heads.

        (B, H_kv, T_k, D) -> (B, H, T_k, D). The group of kv head j is the
        n_head // n_kv_head consecutive query heads from j * group on, so
        query head h reads kv head h // group: [kv0, kv0, kv1, kv1].
        """
        group = self.n_head // self.n_kv_head
        if group > 1:
            k = k.repeat_interleave(group, dim=1)  # (B, H, T_k, D): query head h reads kv head h // group
            v = v.repeat_interleave(group, dim=1)  # (B, H, T_k, D)
        return k, v

    def attn_mask(self, offset: int, T: int, T_k: int, pads: torch.Tensor | None,
                  device=None) -> torch.Tensor:
        """The explicit bool mask of one call: ``mask`` (causal, or the sliding window), padding hidden.

        Returns:
            (T, T_k), or (B, 1, T, T_k) when ``pads`` hides each row's
            padding keys (``hide_padding``); True means "may attend".
        """
        mask = self.mask(offset, T, T_k, device)  # (T, T_k)
        if pads is not None:
            mask = hide_padding(mask, pads, offset)  # (B, 1, T, T_k)
        return mask


class MLP(nn.Module):
    """Per-position feed-forward network: (B, T, C) -> (B, T, C), hidden 4C.

    Seed 004, "The model: MLP, block, assembly".
    """

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        C = config.n_embd
        self.fc = nn.Linear(C, 4 * C, bias=config.bias)
        self.gelu = nn.GELU()
        self.proj = nn.Linear(4 * C, C, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.gelu(self.fc(x))  # (B, T, 4C)
        return self.dropout(self.proj(x))  # (B, T, C)


class SwiGLU(nn.Module):
    """The gated MLP of Llama-style models: (B, T, C) -> (B, T, C), hidden width F.

    Two projections of the input, ``gate`` and ``up`` (C -> F each); the
    gate passes through SiLU (x * sigmoid(x)) and multiplies the other
    elementwise; ``proj`` maps back to C. Three matrices instead of two, so
    a hidden width of about 8C/3 (``GPTConfig.mlp_hidden``) holds what the
    GELU MLP's 4C does.
    """

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        C, hidden = config.n_embd, config.hidden_size
        self.gate = nn.Linear(C, hidden, bias=config.bias)
        self.up = nn.Linear(C, hidden, bias=config.bias)
        self.proj = nn.Linear(hidden, C, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.silu(self.gate(x)) * self.up(x)  # (B, T, F)
        return self.dropout(self.proj(x))  # (B, T, C)


class RMSNorm(nn.Module):
    """Root-mean-square normalisation over the channels: (..., C) -> (..., C).

    Each position is divided by the root mean square of its C entries,
    sqrt(mean(x²) + eps), and scaled by a learned gain (C parameters,
    initialised to 1). Unlike LayerNorm it neither subtracts the mean nor
    adds a shift, so a constant vector c·1 comes out as sign(c)·1 (for
    |c|² much larger than eps). Equal to ``torch.nn.RMSNorm(C, eps)``.

    A bfloat16 or float16 input is normalised in float32 and rounded back
    once, before the gain, as Llama's implementation does: the squares, their
    mean and the division then lose nothing to the low-precision format.
    """

    def __init__(self, n_embd: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(n_embd))  # (C,)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.to(torch.promote_types(dtype, torch.float32))  # bf16 / fp16 -> float32 for the statistics
        rms = x.pow(2).mean(dim=-1, keepdim=True).add(self.eps).sqrt()  # (..., 1)
        return (x / rms).to(dtype) * self.weight  # (..., C): one rounding back, then the gain


def make_norm(config: GPTConfig) -> nn.Module:
    """The normalisation layer the config names: ``nn.LayerNorm(C)`` (the seed's) or ``RMSNorm(C)``."""
    if config.norm == "rmsnorm":
        return RMSNorm(config.n_embd)
    return nn.LayerNorm(config.n_embd)


def make_mlp(config: GPTConfig) -> nn.Module:
    """The feed-forward network the config names: ``MLP`` (GELU, the seed's) or ``SwiGLU``."""
    if config.mlp == "swiglu":
        return SwiGLU(config)
    return MLP(config)


class Block(nn.Module):
    """One pre-norm transformer block; preserves (B, T, C).

    Seed 004, "The model: MLP, block, assembly".
    """

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = make_norm(config)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = make_norm(config)
        self.mlp = make_mlp(config)

    def forward(self, x: torch.Tensor, cache: KVCache | None = None,
                offset: int = 0) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x), cache=cache, offset=offset)
        x = x + self.mlp(self.ln_2(x))
        return x  # (B, T, C)


class GPT(nn.Module):
    """A GPT language model over integer token ids.

    Seed 004, "The model". With the default GPTConfig it has 804,224 unique
    parameters (808,960 untied). With ``pos="rope"`` there is no position
    table (``wpe`` is None): positions act inside every attention layer.

    Args:
        config: the hyperparameters; see ``GPTConfig``.
    """

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)  # (V, C)
        # Learned positions: a (block_size, C) table added once. Rotary ones have no table.
        self.wpe = nn.Embedding(config.block_size, config.n_embd) if config.pos == "learned" else None
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.ln_f = make_norm(config)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)  # (V, C)
        self.apply(self._init_weights)
        # Tie after initialisation, so the shared (V, C) matrix keeps the
        # embedding's initialisation, and before any optimizer is built.
        if config.tie_weights:
            self.lm_head.weight = self.wte.weight

    def _init_weights(self, module: nn.Module) -> None:
        """Initialise one module: Linear and Embedding weights ~ N(0, 0.02²), Linear biases 0.

        GPT-2's base scheme, applied to every module by ``self.apply``; the
        norms keep PyTorch's own init (gain 1, LayerNorm shift 0) and the
        tied lm_head shares the token table's weights. GPT-2 (and nanoGPT)
        also shrink the std of each residual branch's output projection
        (``attn.proj``, ``mlp.proj``) by 1/√(2·n_layer), so that the
        2·n_layer branches added to the residual stream sum to about the
        variance of one; this engine leaves that scaling out, so every
        Linear starts at std 0.02 (at the seed's 4 layers the scaled std
        would be 0.02/√8 ≈ 0.0071). The initial loss stays near ln(V) either
        way: the logits start small.
        """
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def num_params(self) -> int:
        """Number of unique parameter values; a tied matrix counts once.

        Seed 004, "Parameter accounting".
        """
        return sum(p.numel() for p in {id(p): p for p in self.parameters()}.values())

    def new_cache(self, batch_size: int, device=None, dtype=None) -> list[KVCache]:
        """One empty KV cache per block, each sized block_size.

        Seed 000, section 6. Pass the list as ``cache=`` to ``forward``; the
        caches advance together. Device and dtype default to the model's.
        """
        first = next(self.parameters())
        device = first.device if device is None else device
        dtype = first.dtype if dtype is None else dtype
        c = self.config
        return [
            KVCache(batch_size, c.kv_heads, c.block_size, c.head_size, device=device, dtype=dtype)
            for _ in range(c.n_layer)
        ]

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None,
                cache: list[KVCache] | None = None):
        """Token ids -> next-token logits, and the loss when targets are given.

        Seed 004, "The pipeline".

        Args:
            idx: (B, T) integer token ids in [0, V).
            targets: optional (B, T) integer ids, idx shifted left by one.
            cache: optional list of n_layer KV caches (see ``new_cache``);
                idx then continues the tokens already cached.

        Returns:
            (logits, loss): logits (B, T, V); loss is the mean cross entropy
            in nats (a 0-dim tensor), or None without targets.

        Raises:
            TypeError: if idx is not an integer tensor.
            ValueError: if idx is not 2-D, if T exceeds block_size, or if the
                cached tokens plus T exceed block_size.
            IndexError: if a token id is outside [0, V) (with
                ``config.check_ids``, the default).
        """
        if not isinstance(idx, torch.Tensor) or idx.is_floating_point() or idx.is_complex():
            kind = idx.dtype if isinstance(idx, torch.Tensor) else type(idx).__name__
            raise TypeError(f"idx must be an integer tensor of token ids, got {kind}.")
        if idx.dim() != 2:
            raise ValueError(f"idx must have shape (B, T), got {tuple(idx.shape)}.")
        B, T = idx.shape
        V = self.config.vocab_size
        block_size = self.config.block_size
        if T > block_size:
            raise ValueError(f"sequence length {T} exceeds block_size {block_size}")
        offset = cache[0].seq_len if cache is not None else 0
        if offset + T > block_size:
            raise ValueError(
                f"cached length {offset} + new length {T} = {offset + T} "
                f"exceeds block_size {block_size}"
            )
        if self.config.check_ids and idx.numel() > 0:  # a host sync on an accelerator: see GPTConfig.check_ids
            lo, hi = int(idx.min()), int(idx.max())
            if lo < 0 or hi >= V:
                bad = lo if lo < 0 else hi
                raise IndexError(
                    f"token id {bad} is outside [0, {V}): the embedding table has "
                    f"{V} rows; check the tokenizer's vocab_size against the model's."
                )

        pos = torch.arange(offset, offset + T, device=idx.device)  # (T,)
        if cache is not None and cache[0].pads is not None:
            pos = (pos - cache[0].pads[:, None]).clamp(min=0)  # (B, T): each row counts from its first real token
        tok_emb = self.wte(idx)  # (B, T, C)
        pos_emb = self.wpe(pos) if self.wpe is not None else 0.0  # (T, C), broadcast over B; rotary: none here
        x = self.drop(tok_emb + pos_emb)  # (B, T, C)
        for i, block in enumerate(self.blocks):
            x = block(x, cache=None if cache is None else cache[i], offset=offset)  # (B, T, C)
        x = self.ln_f(x)  # (B, T, C)
        logits = self.lm_head(x)  # (B, T, V)

        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))
        return logits, loss
