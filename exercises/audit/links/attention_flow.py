"""Attention found by what it computes, whatever module it sits in (ATTENTION's third eye).

The projection path (``architecture.find_attention``) needs a module whose
children are named like q, k, v and output projections. Attention written by
hand elsewhere — PaLM's parallel block, one fused projection for attention and
MLP, multi-query heads, scores by ``einsum`` — has no such names, yet it always
computes the same three steps, and they can be watched as they run:

1. scores: a product of a query-like and a key-like tensor contracted over
   the head dim (``einsum``, ``matmul`` / ``@``, ``bmm``, ``baddbmm``), whose
   last two axes are the queries (T, the forward's length) and the keys (S);
   both operands carry the batch, so a product with a weight matrix never
   qualifies. k may lack the query's head axis (one kv head shared by every
   query head, multi-query) or carry fewer heads (grouped-query);
2. a softmax of those scores (scaled, masked, capped or biased first);
3. a product of those weights with a value-like tensor, contracted over the
   keys.

``FlowWatch`` (a ``TorchFunctionMode``) sees each step and joins them into one
``Flow`` per attention computation, labelled by the innermost module of the
model running at its scores. A q scaled by a constant before the product
(``q * scale``, as PaLM does) is followed back to the q before the scale, so the
scale the module applies is read whole from what it computed (softmax input /
(q k^T), ``attention_call.read_scores``, soft-cap and bias by distance
included). ``check`` then holds each flow to the contract: its softmax
normalises over the keys, its weights are zero on every key after the query
(the mask actually applied, read from the weights' zeros), and its output
equals causal attention over its own q, k, v at its own scale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from torch.nn.modules import module as module_hooks
from torch.overrides import TorchFunctionMode

from exercises.audit.links.attention_call import MATMULS, SOFTMAXES, Call, matmul_operands, read_scores

#: A constant scale applied to q (or k) before the scores: ``q * c``, ``c * q``, ``q / c``, in place or not.
SCALINGS = {"mul", "__mul__", "__rmul__", "div", "__truediv__", "true_divide", "__imul__", "mul_", "__itruediv__",
            "div_"}
DIVIDING = {"div", "__truediv__", "true_divide", "__itruediv__", "div_"}
#: Calls that hand the softmax weights on unchanged in meaning (a dtype cast, eval-mode dropout, a copy).
PASSING = {"to", "type", "type_as", "float", "half", "bfloat16", "double", "dropout", "contiguous", "clone", "detach",
           "nan_to_num", "masked_fill"}
#: Calls that regroup the weights' leading axes (heads folded into the batch, or back), the last two kept.
RESHAPING = {"view", "reshape"}
#: A weight above this on a key after its query's position is the future read (a masked score gives exactly 0).
LEAK = 1e-6
#: How many recent scores, scalings and weights the watch keeps while it waits for the next step.
RECENT = 16


def _labels_einsum(args: tuple) -> tuple[list, list[list[str]], list[str]] | None:
    """(operands, each operand's axis labels, the output's labels) of ``einsum(equation, *operands)``; an
    ellipsis becomes labels aligned from the right (as it broadcasts). None where it cannot be read."""
    if not args or not isinstance(args[0], str):
        return None
    ops = list(args[1]) if len(args) == 2 and isinstance(args[1], (list, tuple)) else list(args[1:])
    if not ops or not all(isinstance(t, torch.Tensor) for t in ops):
        return None
    eq = args[0].replace(" ", "")
    terms, _, out = eq.partition("->")
    terms = terms.split(",")
    if len(terms) != len(ops):
        return None
    labels, dots = [], 0
    for term, t in zip(terms, ops):
        head, ell, tail = term.partition("...")
        n = t.dim() - len(head) - len(tail)
        if n < 0 or (not ell and n):
            return None
        dots = max(dots, n)
        labels.append(list(head) + [f"...{i}" for i in range(n, 0, -1)] + list(tail))
    if "->" not in eq:
        flat = [l for ls in labels for l in ls]
        out_labels = [f"...{i}" for i in range(dots, 0, -1)] + sorted(l for l in set(flat) if flat.count(l) == 1
                                                                      and not l.startswith("..."))
    else:
        head, _, tail = out.partition("...")
        out_labels = list(head) + ([f"...{i}" for i in range(dots, 0, -1)] if "..." in out else []) + list(tail)
    return ops, labels, out_labels


def _labels_matmul(fname: str, args: tuple, kwargs: dict) -> tuple[list, list[list[str]], list[str]] | None:
    """The same for ``a @ b`` (``matmul``, ``bmm``) and ``baddbmm``'s batch1 @ batch2: leading axes
    labelled from the right, as they broadcast."""
    a, b = matmul_operands(fname, args, kwargs)
    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)) or min(a.dim(), b.dim()) < 3:
        return None
    lead = max(a.dim(), b.dim()) - 2
    la = [f"...{i}" for i in range(a.dim() - 2, 0, -1)] + ["m", "c"]
    lb = [f"...{i}" for i in range(b.dim() - 2, 0, -1)] + ["c", "n"]
    return [a, b], [la, lb], [f"...{i}" for i in range(lead, 0, -1)] + ["m", "n"]


def _present(t: torch.Tensor, labels: list[str], other: tuple[torch.Tensor, list[str]]) -> list[str]:
    """The labels of ``t``'s axes that hold more than one entry where the other operand's same axis does
    (an axis of size 1 that broadcasts against it is absent: that operand is shared along it)."""
    o, ol = other
    return [l for i, l in enumerate(labels)
            if t.size(i) > 1 or l not in ol or o.size(ol.index(l)) == 1]


def _arrange(t: torch.Tensor, labels: list[str], order: list[str]) -> torch.Tensor | None:
    """``t`` with its axes ``labels`` permuted to ``order``; the axes not in ``order`` must be of size 1
    and are dropped. None where one is not."""
    keep = [labels.index(l) for l in order]
    drop = [i for i, l in enumerate(labels) if l not in order]
    if any(t.size(i) != 1 for i in drop):
        return None
    t = t.permute(keep + drop)
    return t.reshape(t.shape[:len(keep)])


@dataclass
class Scores:
    """A product that may be attention scores: q (B, H, T, D) and k (B, Hk, S, D) as they reached it, the
    constant q and k were scaled by just before (``prescale``), and how it was written."""

    module: str
    q: torch.Tensor
    k: torch.Tensor
    out: torch.Tensor
    prescale: float
    how: str
    tanh: tuple | None = None


@dataclass
class Flow:
    """One attention computation, tensors in (B, H, T, ·): q and k before any constant scale, v, the softmax's
    input (``logits``) and the weights that reached the product with v, the output, and the softmax's axis
    ("key", "query" or another)."""

    module: str
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    logits: torch.Tensor
    weights: torch.Tensor
    out: torch.Tensor
    axis: str
    prescale: float
    how: str
    tanh: tuple | None = None


class FlowWatch(TorchFunctionMode):
    """Joins scores, softmax and the product with v into ``flows`` while ``model`` runs a forward of batch
    ``B`` and length ``T``; ``owners`` is the projection path's stack of attention modules running. Enter it last (innermost) beside other modes: what it does in its handler is
    bookkeeping, no product or softmax of its own."""

    def __init__(self, model: nn.Module, B: int, T: int, owners: list | None = None) -> None:
        super().__init__()
        self.B, self.T, self.flows, self.owners = B, T, [], owners if owners is not None else []
        self.names = {id(m): name for name, m in model.named_modules()}
        self.stack, self.scores, self.scaled, self.weights, self.handles = [], [], {}, {}, []

    def __enter__(self):
        def enter(module, args):
            self.stack.append(self.names.get(id(module)))

        def leave(module, args, out):
            if self.stack:
                self.stack.pop()

        self.handles = [module_hooks.register_module_forward_pre_hook(enter),
                        module_hooks.register_module_forward_hook(leave, always_call=True)]
        return super().__enter__()

    def __exit__(self, *exc):
        for h in self.handles:
            h.remove()
        self.handles = []
        return super().__exit__(*exc)

    def module(self) -> str:
        """The attention module the projection path marks as running (``owners``: it also marks one whose
        ``forward`` is called directly, past the hooks), else the innermost module of the model running."""
        if self.owners:
            return self.owners[-1] or "model"
        return next((n for n in reversed(self.stack) if n is not None), "") or "model"

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        fname = getattr(func, "__name__", "")
        if fname in SCALINGS and len(args) == 2:
            return self._scaling(func, fname, args, kwargs)
        out = func(*args, **kwargs)
        if fname == "einsum" or fname in MATMULS:
            read = _labels_einsum(args) if fname == "einsum" else _labels_matmul(fname, args, kwargs)
            if read is not None and len(read[0]) == 2 and isinstance(out, torch.Tensor):
                self._product(fname, args, *read, out)
        elif fname in SOFTMAXES and args and isinstance(args[0], torch.Tensor) and isinstance(out, torch.Tensor):
            self._softmax(args[0], args[1] if len(args) > 1 else kwargs.get("dim"), out)
        elif fname == "tanh" and args and isinstance(args[0], torch.Tensor) and self.scores \
                and self.scores[-1].tanh is None and args[0].numel() == self.scores[-1].out.numel():
            self.scores[-1].tanh = (args[0], out)
        elif (fname in PASSING or fname in RESHAPING) and args and isinstance(args[0], torch.Tensor) \
                and id(args[0]) in self.weights and isinstance(out, torch.Tensor) \
                and (out.shape == args[0].shape if fname in PASSING else
                     out.numel() == args[0].numel() and out.shape[-2:] == args[0].shape[-2:]):
            self._remember(self.weights, out, self.weights[id(args[0])][:2])
        return out

    @staticmethod
    def _remember(store: dict, key_tensor: torch.Tensor, value: tuple) -> None:
        """Keep ``value`` under the tensor's id, with the tensor alive (so the id is not reused), the last
        ``RECENT`` only."""
        store[id(key_tensor)] = value + (key_tensor,)
        while len(store) > RECENT:
            del store[next(iter(store))]

    def _scaling(self, func, fname: str, args: tuple, kwargs: dict):
        t, c = args
        if fname not in DIVIDING and isinstance(c, torch.Tensor) and c.dim() >= 3 \
                and not (isinstance(t, torch.Tensor) and t.dim() >= 3):  # c * q
            t, c = c, t
        if isinstance(c, torch.Tensor) and c.numel() == 1 and not c.requires_grad:
            c = float(c)
        if not isinstance(t, torch.Tensor) or t.dim() < 3 or not isinstance(c, (int, float)) or c == 0 \
                or kwargs:
            return func(*args, **kwargs)
        before = t.clone() if fname.endswith("_") or fname.startswith("__i") else t
        held = self.scaled.get(id(t))
        base, more = (held[0], held[1]) if held is not None and held[2] is t else (before, 1.0)
        out = func(*args, **kwargs)
        factor = 1.0 / c if fname in DIVIDING else float(c)
        self._remember(self.scaled, out, (base, factor * more))
        return out

    def _unscaled(self, t: torch.Tensor) -> tuple[torch.Tensor, float]:
        held = self.scaled.get(id(t))
        return (held[0], held[1]) if held is not None and held[2] is t else (t, 1.0)

    def _product(self, fname: str, args: tuple, ops: list, labels: list, lo: list, out: torch.Tensor) -> None:
        a, b = ops
        la, lb = _present(a, labels[0], (b, labels[1])), _present(b, labels[1], (a, labels[0]))
        for w, lw, v, lv in ((a, labels[0], b, labels[1]), (b, labels[1], a, labels[0])):
            held = self.weights.get(id(w))
            if held is not None and held[2] is w:
                self._mixing(held[0], held[1], w, lw, v, lv, _present(v, lv, (w, lw)), lo, out)
                return
        contracted = [l for l in la if l in lb and l not in lo]
        if len(contracted) != 1 or len(lo) < 3:
            return
        d, (i, j), lead = contracted[0], lo[-2:], lo[:-2]
        if i in la and j in lb and i not in lb and j not in la:
            q, lq, k, lk = a, labels[0], b, labels[1]
        elif i in lb and j in la and i not in la and j not in lb:
            q, lq, k, lk = b, labels[1], a, labels[0]
        else:
            return
        kept_k = [l for l in lead if l in (lb if k is b else la)]
        if not lead or kept_k != lead[:len(kept_k)] or not kept_k or any(l not in lq for l in lead) \
                or any(l not in lead + [j, d] for l in (lb if k is b else la)):
            return
        qc, kc = _arrange(q, lq, lead + [i, d]), _arrange(k, lk, kept_k + [j, d])
        if qc is None or kc is None or qc.size(-2) != self.T or kc.size(-2) < self.T or qc.size(-1) < 2 \
                or qc[..., 0, 0].numel() % self.B or kc[..., 0, 0].numel() % self.B:
            return
        qc, kc = qc.reshape(self.B, -1, self.T, qc.size(-1)), kc.reshape(self.B, -1, kc.size(-2), kc.size(-1))
        if qc.size(1) % kc.size(1):
            return
        (q0, cq), (k0, ck) = self._unscaled(q), self._unscaled(k)
        if cq != 1.0 or ck != 1.0:  # q or k scaled by a constant just before: the scores read from before it
            qc = _arrange(q0, lq, lead + [i, d]).reshape(qc.shape)
            kc = _arrange(k0, lk, kept_k + [j, d]).reshape(kc.shape)
        how = f"einsum '{args[0]}'" if fname == "einsum" else f"{fname} {tuple(a.shape)} x {tuple(b.shape)}"
        self.scores.append(Scores(self.module(), qc, kc, out, cq * ck, how))
        del self.scores[:-RECENT]

    def _softmax(self, x: torch.Tensor, dim, out: torch.Tensor) -> None:
        score = next((s for s in reversed(self.scores) if s.out.numel() == x.numel()
                      and x.size(-1) == s.k.size(-2)), None)
        if score is None:
            return
        if dim is None:
            axis = "unknown"
        else:
            dim = dim % x.dim()
            axis = "key" if dim == x.dim() - 1 else "query" if dim == x.dim() - 2 and x.size(dim) == self.T else \
                f"dim={dim} of {tuple(x.shape)}"
        self._remember(self.weights, out, (score, (x, axis)))

    def _mixing(self, score: Scores, soft: tuple, w: torch.Tensor, lw: list, v: torch.Tensor, lv_all: list,
                lv: list, lo: list, out: torch.Tensor) -> None:
        """The weights ``w`` (from ``score``'s softmax) times ``v``: a flow where the product contracts the
        weights' key axis (their last) and the output keeps their query axis beside v's own last axis."""
        i, j, lead = lw[-2], lw[-1], lw[:-2]
        contracted = [l for l in lw if l in lv and l not in lo]
        dv = [l for l in lv if l not in lw and l in lo]
        if contracted != [j] or len(dv) != 1 or i not in lo or any(l not in lo for l in lead):
            return
        kept = [l for l in lead if l in lv]
        if kept != lead[:len(kept)] or any(l not in kept + [j, dv[0]] for l in lv):
            return
        vc, oc = _arrange(v, lv_all, kept + [j, dv[0]]), _arrange(out, lo, lead + [i, dv[0]])
        B, T, S = self.B, self.T, score.k.size(-2)
        if vc is None or oc is None or vc.size(-2) != S or w.numel() != score.out.numel():
            return
        x, axis = soft
        H = score.q.size(1)
        self.flows.append(Flow(score.module, score.q, score.k, vc.reshape(B, -1, S, vc.size(-1)),
                               x.reshape(B, H, T, S), w.reshape(B, H, T, S), oc.reshape(B, H, T, -1), axis,
                               score.prescale, score.how, score.tanh))
        if score in self.scores:
            self.scores.remove(score)


def inside(name: str, modules: list[str]) -> bool:
    """Whether module ``name`` is one of ``modules`` or inside one of them."""
    return any(name == m or name.startswith(m + ".") or (m in ("", "model")) for m in modules)


@dataclass
class Checked:
    """A flow held to the contract: what was compared and, where the contract is broken, why (``fail``)."""

    label: str
    heads: int
    kv: int
    D: int
    asked: str
    absolute: float
    relative: float
    own: float | None
    convention: str
    fail: str | None = None
    advice: str = ""


def check(flow: Flow, label: str, reference) -> Checked:
    """Hold ``flow`` to the contract; ``reference(q, k, v, scale, softcap, bias)`` is causal attention,
    merged to (B, T, H·D)."""
    B, H, T, S = flow.weights.shape
    D, kv = flow.q.size(-1), flow.k.size(1)
    weights = flow.weights.float()
    words = f"{flow.how}" + (f", q scaled by {flow.prescale:.4g} before it" if flow.prescale != 1.0 else "")
    fail, advice = None, ""
    if flow.axis != "key":
        sums = weights.sum(-1)
        fail = (f"{label}'s softmax normalises over {'the query positions' if flow.axis == 'query' else flow.axis}, "
                f"not over the keys: each query's weights must sum to 1 over the keys it reads, and they sum to "
                f"{float(sums.min()):.3g}..{float(sums.max()):.3g}")
        advice = "take the softmax over the keys, the last axis of the scores (dim=-1)"
    future = torch.ones(T, S, dtype=torch.bool, device=weights.device).triu(S - T + 1)
    read = (weights > LEAK) & future
    if fail is None and bool(read.any()):
        at = read.nonzero()
        rows, cols = at[:, -2], at[:, -1]  # query i's own key is key i + S - T
        ahead = int((cols - rows - (S - T)).max())
        first = int(rows.min())
        fail = (f"{label}'s softmax weights are nonzero on keys after the query's own position (query {first} "
                f"reads key {int(cols[rows == first].max())}, up to {ahead} position(s) ahead): the mask it "
                "applies lets the future in")
        advice = ("hide every key j > i from query i (a mask of ones.triu(1) filled with −inf, or tril() kept)"
                  + (f"; reading {ahead} position(s) ahead is a mask shifted by {ahead}" if ahead <= 2 else ""))
    k = flow.k.float().repeat_interleave(H // kv, dim=1)
    # q k^T in the dtype the model computed its scores in, so the scale is read to that dtype's rounding
    scores = (flow.q.float() @ k.transpose(-2, -1)).to(flow.logits.dtype if flow.logits.is_floating_point()
                                                       else torch.float32)
    call = Call("matmul", flow.q, flow.k, scores=scores, tanh=None)
    if flow.tanh is not None and flow.tanh[0].numel() == call.scores.numel():
        call.tanh = tuple(t.detach().reshape(call.scores.shape) for t in flow.tanh)
    read_scores(call, flow.logits)
    conventional = 1.0 / math.sqrt(D)
    ref = reference(flow.q.float(), flow.k.float(), flow.v.float(), call.scale if call.scale is not None
                    else conventional, call.softcap, call.bias)
    got = flow.out.float().transpose(1, 2).reshape(ref.shape)
    absolute = float((got - ref).abs().max())
    relative = absolute / max(1.0, float(ref.abs().max()))
    return Checked(label, H, kv, D, f"{words}; {call.asked}", absolute, relative, call.scale, call.convention, fail, advice)


def checked_flows(flows: list[Flow], owned: list[str], reference) -> list[Checked]:
    """Each flow outside the modules the projection path reads (``owned``), checked; a module that computes
    attention more than once (two flows, or a module run twice) is labelled by its count."""
    done, seen = [], {}
    for flow in flows:
        if inside(flow.module, owned):
            continue
        seen[flow.module] = seen.get(flow.module, 0) + 1
        label = flow.module if seen[flow.module] == 1 else f"{flow.module} (attention {seen[flow.module]})"
        done.append(check(flow, label, reference))
    return done
