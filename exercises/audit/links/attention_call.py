"""What each attention module hands its attention computation, read at the call (ATTENTION's second eye).

The projections give q, k and v as the module makes them; between them and
the attention scores a module may rotate q and k (rotary embeddings, kept as
a function, a method or an ``nn.Module``; applied inline from cos and sin
tables), normalise them (qk-norm) or scale q in advance. Rather than know
every way of doing that, ATTENTION watches the one place they all lead to: a
``TorchFunctionMode`` sees every torch call inside the model's forward, and
for each attention module keeps the first call of
``F.scaled_dot_product_attention`` (its q, k, v and ``scale``) or, for
attention written by hand, the first matmul of two 4-D tensors (the scores'
q @ k^T). The q there also gives the head count, H = q.size(1), where no
attribute names it.
"""

from __future__ import annotations

import torch
from torch.overrides import TorchFunctionMode

#: The torch functions that compute scores by hand: q @ k^T.
MATMULS = {"matmul", "__matmul__", "bmm"}


class AttentionCalls(TorchFunctionMode):
    """Records, per attention module (the innermost one running, ``current[-1]``), its first attention call.

    ``calls[name]`` is ``("sdpa", q, k, v, scale)`` or ``("matmul", q, k, None, None)``, tensors as they
    were passed (B, n, T, D); a matmul's right operand is transposed back to k.
    """

    def __init__(self, current: list) -> None:
        super().__init__()
        self.current, self.calls = current, {}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = self.current[-1] if self.current else None
        if name is not None and name not in self.calls:
            fname = getattr(func, "__name__", "")
            if fname == "scaled_dot_product_attention" and len(args) >= 3:
                self.calls[name] = ("sdpa", args[0].detach(), args[1].detach(), args[2].detach(),
                                    kwargs.get("scale"))
            elif fname in MATMULS and len(args) == 2 and all(isinstance(a, torch.Tensor) and a.dim() == 4
                                                             for a in args):
                a, b = args
                if a.size(-1) == b.size(-2):
                    self.calls[name] = ("matmul", a.detach(), b.detach().transpose(-2, -1), None, None)
        return func(*args, **kwargs)


def unscaled(at_call: torch.Tensor, projected: torch.Tensor | None) -> tuple[torch.Tensor, str]:
    """The q (or k) a module attends with, (B, n, T, D), with any uniform scale it applied in advance
    taken off, and a word on what was found.

    Rotary embeddings preserve each head vector's norm, so ``|at_call| / |projected|`` per vector is one
    constant c when the module only rotated and pre-scaled: q at the call is then c × (rotated q), and
    c is divided out, so the scale the module applies is judged whole (a pre-scaled q of 1/sqrt(D)
    passes, one of 1/sqrt(C) fails). When the ratio varies (qk-norm, or anything else that is not a
    rotation), the tensor at the call is the module's own q, taken as it is.
    """
    if projected is None or projected.shape[0] != at_call.shape[0] or projected.shape[2:] != at_call.shape[2:]:
        return at_call, "as passed"
    if projected.size(1) != at_call.size(1):
        if at_call.size(1) % projected.size(1):
            return at_call, "as passed"
        projected = projected.repeat_interleave(at_call.size(1) // projected.size(1), dim=1)
    a, p = at_call.float().norm(dim=-1), projected.float().norm(dim=-1)
    keep = p > 1e-6 * float(p.max().clamp_min(1e-30))
    if not bool(keep.any()):
        return at_call, "as passed"
    ratio = a[keep] / p[keep]
    c = float(ratio.mean())
    if c > 0 and float((ratio - c).abs().max()) <= 1e-2 * c:
        return at_call.float() / c, "norm-preserving" if abs(c - 1) < 1e-2 else f"pre-scaled by {c:.3g}, taken off"
    return at_call, "normalised or transformed after its projection, as passed"
