"""What each attention module hands its attention computation, read at the call (ATTENTION's second eye).

The projections give q, k and v as the module makes them; between them and
the attention scores a module may rotate q and k (rotary embeddings, kept as
a function, a method or an ``nn.Module``; applied inline from cos and sin
tables), normalise them (qk-norm) or scale q in advance. Rather than know
every way of doing that, ATTENTION watches the one place they all lead to: a
``TorchFunctionMode`` sees every torch call inside the model's forward, and
for each attention module keeps the first call of
``F.scaled_dot_product_attention`` (its q, k, v and what the module asked
for: ``scale``, ``is_causal``, ``attn_mask``, whose float entries are a bias
on the scores, ALiBi as MPT and BLOOM pass it, read by ``mask_bias``) or, for
attention written by hand, the first matmul of two 4-D tensors, or of two
3-D ones with the heads folded into the batch (``bmm``, ``baddbmm``: the
scores' q @ k^T), the first
``tanh`` after it (a soft-cap) and the input of the softmax after that, from
which the scores the module applied are read (``read_scores``): a scale, a
soft-cap, a per-head bias by distance (ALiBi). The q there also gives the
head count, H = q.size(1), where no attribute names it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
from torch.overrides import TorchFunctionMode

from exercises.audit.measure import rounding_tol

#: The torch functions that compute scores by hand: q @ k^T, on (B, H, T, D) or with the heads folded into
#: the batch, (B·H, T, D); ``baddbmm`` adds a bias to them as it goes (BLOOM's ALiBi).
MATMULS = {"matmul", "__matmul__", "bmm", "baddbmm"}
#: A mask entry at or below this is a key the query may not read (the dtype's minimum, -1e4, -inf).
MASKED = -1e4
#: The softmax of hand-written attention, whose input is the scaled (and masked) scores.
SOFTMAXES = {"softmax", "_softmax"}
#: ``F.scaled_dot_product_attention``'s positional arguments after q, k, v, by name.
SDPA_ARGS = ("attn_mask", "dropout_p", "is_causal", "scale")
#: A hand-written scale is read only where every score the causal mask keeps is one multiple of
#: q @ k^T within this relative spread (rounding is ~1e-7 in float32); a soft-cap's factor, and a bias
#: by distance, are read to the same spread. Anything else (a learned temperature per head, a bias
#: that depends on the content) leaves the scores unread.
SCALE_SPREAD = 1e-4


@dataclass
class Call:
    """One attention module's attention call, tensors (B, n, T, D) as passed.

    Attributes:
        kind: "sdpa" or "matmul" (scores by hand).
        q, k: as they reach the scores (a matmul's right operand transposed back to k).
        v: SDPA's value, or None by hand.
        scale: the factor the call applies to q @ k^T: SDPA's ``scale`` (1/sqrt(D) when none is passed),
            or by hand the softmax input's ratio to q @ k^T; None where it could not be read.
        asked: what the call asked for, in words ("scale=0.0625, is_causal=True"; "softmax input =
            0.25 x q @ k^T"), or why the scale is unread.
        causal_asked: for SDPA, whether it asked for a mask at all (``is_causal`` or ``attn_mask``).
        softcap: by hand, the c of scores c * tanh(s * q @ k^T / c) (Gemma 2's soft-capping), or None.
        bias: by hand, a bias (1, H, T, S) added to the scores that depends only on the head and the
            distance i - j (ALiBi; taken relative to each query's own key, which softmax cannot tell
            apart), or None.
        convention: what the scores do besides a scale, in words ("" for plain scaled scores).
        mask: SDPA's ``attn_mask`` as an additive bias (B or 1, H, T, S), float32, a bool mask's False as
            -inf; None without one (``mask_bias`` reads it).
    """

    kind: str
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor | None = None
    scale: float | None = None
    asked: str = ""
    causal_asked: bool = True
    scores: torch.Tensor | None = None
    mask: torch.Tensor | None = None
    tanh: tuple | None = None
    softcap: float | None = None
    bias: torch.Tensor | None = None
    convention: str = ""


class AttentionCalls(TorchFunctionMode):
    """Records, per attention module (the innermost one running, ``current[-1]``), its first attention call
    as a ``Call`` in ``calls[name]``. ``batch`` is the forward's B, which unfolds (B·H, T, D) operands."""

    def __init__(self, current: list, batch: int = 0) -> None:
        super().__init__()
        self.current, self.calls, self.batch, self.history = current, {}, batch, {}

    def begin(self, name: str) -> None:
        """Module ``name`` is entered again: the call it made last time goes to its history."""
        if name in self.calls:
            self.history.setdefault(name, []).append(self.calls.pop(name))

    def short_read(self, name: str, T: int) -> tuple[int, int] | None:
        """Where module ``name`` was driven one query per call over T positions and its last call's query
        read fewer than T keys: (calls, keys read). Each position attends over every key before it, so
        the last of T reads T; fewer means the cache is not read back."""
        calls = self.history.get(name, []) + ([self.calls[name]] if name in self.calls else [])
        if len(calls) < 2 or any(c.q.dim() != 4 or c.q.size(2) != 1 for c in calls) or len(calls) != T:
            return None
        keys = calls[-1].k.size(2)
        return (len(calls), keys) if keys < T else None

    def call_of(self, name: str, T: int) -> Call | None:
        """Module ``name``'s attention call over the forward's T positions: its first call, or, where the
        model was driven one position per call (each call's queries after the last's, each reading the
        cached keys so far) and the last call reads T keys, one call stitched from them: every call's
        queries in order, the last call's keys and values, scale and softcap. Each call's query reads
        only the keys cached so far, so no mask is asked for, and none is needed."""
        calls = self.history.get(name, []) + ([self.calls[name]] if name in self.calls else [])
        if not calls:
            return None
        first, last = calls[0], calls[-1]
        if len(calls) == 1 or first.q.dim() != 4 or first.q.size(2) >= T \
                or sum(c.q.size(2) for c in calls) != T or last.k.size(2) < T \
                or any(c.q.shape[:2] != first.q.shape[:2] or c.q.size(-1) != first.q.size(-1) for c in calls):
            return first
        return replace(last, q=torch.cat([c.q for c in calls], dim=2), causal_asked=True, mask=None,
                       asked=f"{last.asked}; {len(calls)} calls of one position each, joined")

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = self.current[-1] if self.current else None
        fname = getattr(func, "__name__", "")
        if name is None:
            return func(*args, **kwargs)
        call = self.calls.get(name)
        if call is None and fname == "scaled_dot_product_attention" and len(args) >= 3:
            self.calls[name] = sdpa_call(args, kwargs)
        elif call is None and fname in MATMULS and self._scores(fname, args, kwargs) is not None:
            q, kt = self._scores(fname, args, kwargs)
            out = func(*args, **kwargs)
            self.calls[name] = Call("matmul", q, kt.transpose(-2, -1), asked="no softmax after q @ k^T read",
                                    scores=(q @ kt) if fname == "baddbmm" else out.detach().view(q.shape[:-1] + (-1,)))
            return out
        elif call is not None and call.kind == "matmul" and call.scores is not None and call.tanh is None \
                and fname == "tanh" and args and isinstance(args[0], torch.Tensor):
            out = func(*args, **kwargs)
            call.tanh = (_like(args[0], call.scores), _like(out, call.scores))
            return out
        elif call is not None and call.kind == "matmul" and call.scores is not None and fname in SOFTMAXES \
                and args and isinstance(args[0], torch.Tensor):
            read_scores(call, _like(args[0], call.scores))
            call.scores = call.tanh = None
        return func(*args, **kwargs)

    def _scores(self, fname: str, args: tuple, kwargs: dict) -> tuple[torch.Tensor, torch.Tensor] | None:
        """(q (B, H, T, D), k^T (B, H, D, S)) when a matmul computes attention scores: two 4-D operands, or
        two 3-D ones (B·H, T, D) @ (B·H, D, S) with the batch's B dividing B·H (``bmm``, ``matmul``, and
        ``baddbmm``'s ``batch1`` and ``batch2``, by position or keyword); else None. A 3-D product needs D
        of at least 4 (a rotary table's outer product is (B, D/2, 1) @ (B, 1, T))."""
        a, b = matmul_operands(fname, args, kwargs)
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or a.dim() != b.dim() \
                or a.size(-1) != b.size(-2):
            return None
        if a.dim() == 4:
            return a.detach(), b.detach()
        if a.dim() == 3 and self.batch and a.size(0) == b.size(0) and a.size(0) % self.batch == 0 \
                and a.size(-1) >= 4:
            H = a.size(0) // self.batch
            return (a.detach().reshape(self.batch, H, *a.shape[1:]), b.detach().reshape(self.batch, H, *b.shape[1:]))
        return None


def matmul_operands(fname: str, args: tuple, kwargs: dict) -> tuple:
    """(a, b) of the product ``a @ b`` a call of ``fname`` computes (``matmul``, ``__matmul__``, ``bmm``, and
    ``baddbmm``'s ``batch1`` and ``batch2``, by position or keyword); (None, None) where it has no two."""
    if fname == "baddbmm":
        rest = list(args[1:3])
        return tuple((rest + [kwargs.get("batch1"), kwargs.get("batch2")][len(rest):])[:2])
    return tuple(args) if len(args) == 2 else (None, None)


def _like(t: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
    """A tensor of the scores' size in the scores' (B, H, T, S) shape (a softmax over (B·H, T, S) unfolded)."""
    t = t.detach()
    return t.reshape(scores.shape) if t.shape != scores.shape and t.numel() == scores.numel() else t


def sdpa_call(args: tuple, kwargs: dict) -> Call:
    """The ``Call`` of ``F.scaled_dot_product_attention(q, k, v, ...)``: its tensors and what it asked for."""
    q, k, v = (t.detach() for t in args[:3])
    named = {**dict(zip(SDPA_ARGS, args[3:])), **kwargs}
    scale, mask, causal = named.get("scale"), named.get("attn_mask"), bool(named.get("is_causal", False))
    said = [f"scale={float(scale):.4g}" if scale is not None else "scale default 1/sqrt(D)"]
    if causal:
        said.append("is_causal=True")
    if isinstance(mask, torch.Tensor):
        said.append(f"attn_mask {tuple(mask.shape)} {str(mask.dtype).removeprefix('torch.')}")
    effective = float(scale) if scale is not None else 1.0 / math.sqrt(q.size(-1))
    bias = None
    if isinstance(mask, torch.Tensor):
        B, H, T, S = q.size(0), q.size(1), q.size(2), k.size(2)
        bias = mask.detach()
        bias = torch.zeros(bias.shape, device=bias.device).masked_fill(~bias, float("-inf")) \
            if bias.dtype == torch.bool else bias.float()
        bias = torch.broadcast_to(bias, (B, H, T, S))
        if B > 1 and bool((bias == bias[:1]).all()):
            bias = bias[:1]
    return Call("sdpa", q, k, v, effective, "SDPA " + ", ".join(said),
                causal_asked=causal or isinstance(mask, torch.Tensor), mask=bias)


def mask_bias(mask: torch.Tensor, spread: float = SCALE_SPREAD) -> tuple[torch.Tensor | None, str]:
    """What an SDPA ``attn_mask`` (B or 1, H, T, T), as an additive bias, does to the scores where a causal
    mask keeps them (key position <= query position), each row taken relative to its own diagonal
    (softmax ignores a constant per row): (None, "") when nothing (a plain causal mask); else (the bias,
    in words: "ALiBi ... as an SDPA attn_mask" when it is linear in the distance per head, "a sliding
    window of w positions ..." where it masks keys a causal mask keeps, else "an additive bias on the
    scores"). What it does to the future is not read here: the reference is causal, so a mask that
    lets the future in differs from it."""
    T = mask.size(-1)
    if mask.size(-2) != T:
        return None, ""
    kept = torch.ones(T, T, dtype=torch.bool, device=mask.device).tril()
    diagonal = torch.arange(T, device=mask.device)
    distance = (diagonal[:, None] - diagonal[None, :]).clamp_min(0)
    hidden = (mask <= MASKED) & kept
    if bool(hidden.any()):
        reach = distance[kept & ~hidden.any(0).any(0)]
        w = int(reach.max()) + 1 if reach.numel() else 0
        return mask, f"a sliding window of {w} positions (an attn_mask hiding older keys)"
    rel = mask.double() - mask.double()[..., diagonal, diagonal].unsqueeze(-1)
    scale = max(float(mask[..., kept].abs().max()), 1.0)
    if float(rel[..., kept].abs().max()) <= spread * scale:
        return None, ""
    H = rel.size(1)
    by = torch.zeros(H, T, dtype=rel.dtype, device=rel.device)
    for d in range(T):  # the bias at each distance, per head, over the batch: ALiBi's is -slope x d
        by[:, d] = rel[..., (distance == d) & kept].mean(dim=(0, -1))
    fitted = by[:, distance][None]  # (1, H, T, T)
    if float((rel - fitted)[..., kept].abs().max()) > spread * scale:
        return mask, "an additive bias on the scores (attn_mask)"
    return mask, alibi_words(by, spread) + " as an SDPA attn_mask"


def alibi_words(by_distance: torch.Tensor, spread: float) -> str:
    """A per-head bias by distance (H, T) in words: ALiBi with its slopes when linear in the distance
    (the wrong sign said: a bias that grows with the distance), else a bias by distance."""
    T = by_distance.size(-1)
    d = torch.arange(T, dtype=by_distance.dtype, device=by_distance.device)
    slopes = -(by_distance[:, 1:] / d[1:]).mean(-1)  # (H,)
    linear = float((by_distance + slopes[:, None] * d).abs().max()) <= \
        10 * spread * max(float(by_distance.abs().max()), 1e-30)
    if not linear:
        return "a per-head bias by distance (relative positions)"
    words = f"slopes {float(slopes[0]):.4g} .. {float(slopes[-1]):.4g}"
    if bool((slopes < 0).all()):
        return f"{WRONG_SIGN} ({words}: the bias grows with the distance)"
    return f"ALiBi (a per-head bias linear in the distance, {words})"


#: How a bias linear in the distance whose every slope has the wrong sign is named: each query then
#: favours the keys furthest in its past, which no model trained with ALiBi does.
WRONG_SIGN = "ALiBi with slopes of the wrong sign"


def scale_by_hand(scores: torch.Tensor, logits: torch.Tensor, spread: float = SCALE_SPREAD,
                  hidden: torch.Tensor | None = None) -> tuple[float | None, str]:
    """The factor between hand-written scores q @ k^T and the softmax's input, read where a causal mask
    keeps them (key position <= query position) and ``hidden`` (T, S), a window's, does not, and a word
    on it; (None, why) when it is not one factor (an additive bias, a soft-cap) or the shapes differ."""
    if scores.shape != logits.shape or scores.dim() != 4:
        return None, f"softmax input {tuple(logits.shape)} is not q @ k^T's shape {tuple(scores.shape)}"
    T, S = scores.shape[-2:]
    kept = torch.ones(T, S, dtype=torch.bool, device=scores.device).tril(S - T)
    kept = (kept if hidden is None else kept & ~hidden).expand_as(scores)
    raw, seen = scores.float()[kept], logits.float()[kept]
    big = raw.abs() > 1e-3 * float(raw.abs().max().clamp_min(1e-30))
    if not bool(big.any()) or not bool(torch.isfinite(seen[big]).all()):
        return None, "the softmax input is not finite where a causal mask keeps the scores"
    ratio = seen[big] / raw[big]
    scale = float(ratio.median())
    if scale == 0 or float((ratio - scale).abs().max()) > spread * abs(scale):
        return None, "softmax input is not one multiple of q @ k^T (a bias or a cap on the scores)"
    return scale, f"softmax input = {scale:.4g} x q @ k^T"


def read_scores(call: Call, logits: torch.Tensor) -> None:
    """Read, from a hand-written call's q @ k^T (``call.scores``), the tanh seen after it (``call.tanh``)
    and the softmax's input ``logits``, the scores the module applied, into ``call``: ``scale`` and
    ``asked`` always, ``softcap``, ``bias`` and ``convention`` where it has them. In order: one multiple
    of q @ k^T (``scale_by_hand``); a soft-cap, c * tanh(u) with u one multiple of q @ k^T; a scale and a
    bias by distance (``scale_and_bias``). Unread (scale None, ``asked`` saying why) otherwise."""
    hidden, window = hidden_keys(logits)
    scale, asked = scale_by_hand(call.scores, logits, hidden=hidden)
    spread = max(rounding_tol(SCALE_SPREAD, t.dtype) for t in (call.scores, logits))  # they round in the model's dtype
    if scale is None and call.tanh is not None:
        into, out = call.tanh
        cap, _ = scale_by_hand(out, logits, spread, hidden)
        pre, _ = scale_by_hand(call.scores, into, spread)
        if cap is not None and pre is not None:
            scale, call.softcap = pre * cap, cap
            call.convention = f"soft-capped at {cap:.3g} (tanh)"
            asked = f"softmax input = {cap:.4g} x tanh({pre:.4g} x q @ k^T)"
    if scale is None and call.tanh is None:
        scale, bias, words = scale_and_bias(call.scores, logits, spread, hidden)
        if scale is not None:
            call.bias, call.convention = bias, words
            asked = f"softmax input = {scale:.4g} x q @ k^T + {words}"
    if scale is not None and hidden is not None:  # the window goes into the reference as a mask
        H, T, S = logits.shape[-3:]
        masked = torch.zeros(1, H, T, S, device=logits.device).masked_fill(hidden, float("-inf"))
        call.bias = masked if call.bias is None else call.bias.float() + masked
        call.convention = " and ".join(w for w in (call.convention, window) if w)
        asked += f", {window}"
    call.scale, call.asked = scale, asked


def hidden_keys(logits: torch.Tensor) -> tuple[torch.Tensor | None, str]:
    """The keys a causal mask keeps that a hand-written softmax's input (B, H, T, S) hides (at or below
    ``MASKED``) in every row of the batch and every head, as (T, S), and that in words ("a sliding window
    of w positions ..."); (None, "") where none is hidden, where rows or heads hide different keys (a
    padding mask, a bias of its own), or where a query's own key is hidden (no window does that)."""
    if logits.dim() != 4 or not logits.is_floating_point():
        return None, ""
    T, S = logits.shape[-2:]
    kept = torch.ones(T, S, dtype=torch.bool, device=logits.device).tril(S - T)
    below = (logits.detach() <= MASKED) & kept
    hidden = below[0, 0]
    own = torch.arange(T, device=logits.device) + (S - T)
    if not bool(hidden.any()) or not bool((below == hidden).all()) or bool(hidden[torch.arange(T), own].any()):
        return None, ""
    distance = (own[:, None] - torch.arange(S, device=logits.device)[None, :]).clamp_min(0)
    reach = distance[kept & ~hidden]
    return hidden, f"a sliding window of {int(reach.max()) + 1} positions (the softmax input hiding older keys)"


def scale_and_bias(scores: torch.Tensor, logits: torch.Tensor, spread: float = SCALE_SPREAD,
                   hidden: torch.Tensor | None = None) -> tuple[float | None, torch.Tensor | None, str]:
    """Fit logits = s * scores + b[h, i - j] over the entries a causal mask keeps (less ``hidden``, a
    window's), each row taken relative
    to its own diagonal (softmax ignores a constant per row, so a bias by key position, as BLOOM's and
    MPT's ALiBi, is a bias by distance). Returns (s, b as (1, H, T, S) with b = 0 on the diagonal, words:
    "ALiBi ..." when b is linear in the distance per head) or (None, None, "") when the fit leaves more
    than ``spread`` of the logits' scale, or the bias differs between rows of the batch."""
    if scores.shape != logits.shape or scores.dim() != 4 or scores.size(-1) != scores.size(-2):
        return None, None, ""
    raw, seen = scores.double(), logits.double()
    T = raw.size(-1)
    kept = torch.ones(T, T, dtype=torch.bool, device=raw.device).tril()
    kept = kept if hidden is None else kept & ~hidden
    diagonal = torch.arange(T, device=raw.device)
    raw = raw - raw[..., diagonal, diagonal].unsqueeze(-1)
    seen = seen - seen[..., diagonal, diagonal].unsqueeze(-1)
    if not bool(torch.isfinite(seen[..., kept]).all()):
        return None, None, ""
    distance = (diagonal[:, None] - diagonal[None, :]).clamp_min(0)  # (T, S), i - j where kept
    groups = distance[kept]  # (K,)
    H = raw.size(1)
    r, l = raw[..., kept].transpose(0, 1).reshape(H, -1, groups.numel()), seen[..., kept].transpose(0, 1).reshape(
        H, -1, groups.numel())  # (H, B, K)

    def by_distance(t):  # the mean over the batch and over each distance's entries: (H, T)
        total = torch.zeros(H, T, dtype=t.dtype, device=t.device).index_add_(1, groups, t.sum(1))
        count = torch.zeros(T, dtype=t.dtype, device=t.device).index_add_(0, groups, torch.ones_like(groups,
                                                                                                   dtype=t.dtype))
        return total / (count * t.size(1)).clamp_min(1)

    r_c, l_c = r - by_distance(r)[:, groups][:, None], l - by_distance(l)[:, groups][:, None]
    s = float((r_c * l_c).sum() / (r_c * r_c).sum().clamp_min(1e-300))
    bias = by_distance(l - s * r)  # (H, T)
    misfit = float((l - s * r - bias[:, groups][:, None]).abs().max())
    if s == 0 or misfit > spread * max(float(l.abs().max()), 1e-30) or \
            float(bias.abs().max()) <= spread * float(l.abs().max()):
        return None, None, ""
    full = torch.zeros(H, T, T, dtype=torch.float32, device=scores.device)
    full[:, kept] = bias[:, groups].float()
    return s, full[None], alibi_words(bias, spread)


def unscaled(at_call: torch.Tensor, projected: torch.Tensor | None) -> tuple[torch.Tensor, float, str]:
    """The q (or k) a module attends with, (B, n, T, D), with any uniform scale c it applied in advance
    taken off, c (1.0 where none was taken off), and a word on what was found.

    Rotary embeddings preserve each head vector's norm, so ``|at_call| / |projected|`` per vector is one
    constant c when the module only rotated and pre-scaled: q at the call is then c × (rotated q), and
    c is divided out, and the scale the module applies is judged whole: c times the call's own scale. When the ratio varies (qk-norm, or anything else that is not a
    rotation), the tensor at the call is the module's own q, taken as it is.
    """
    if projected is None or projected.shape[0] != at_call.shape[0] or projected.shape[2:] != at_call.shape[2:]:
        return at_call, 1.0, "as passed"
    if projected.size(1) != at_call.size(1):
        if at_call.size(1) % projected.size(1):
            return at_call, 1.0, "as passed"
        projected = projected.repeat_interleave(at_call.size(1) // projected.size(1), dim=1)
    a, p = at_call.float().norm(dim=-1), projected.float().norm(dim=-1)
    keep = p > 1e-6 * float(p.max().clamp_min(1e-30))
    if not bool(keep.any()):
        return at_call, 1.0, "as passed"
    ratio = a[keep] / p[keep]
    c = float(ratio.mean())
    if c > 0 and float((ratio - c).abs().max()) <= 1e-2 * c:
        return at_call.float() / c, c, "norm-preserving" if abs(c - 1) < 1e-2 else f"pre-scaled by {c:.3g}, taken off"
    return at_call, 1.0, "normalised or transformed after its projection, as passed"
