"""The architecture links: ATTENTION and RESIDUAL (seed 004, "The model:
attention" and "The model: MLP, block, assembly").

Both test one module at a time against what it must compute, on a copy,
with weights chosen so a wrong formula cannot hide: at GPT-2's N(0, 0.02)
initialisation the attention scores are so small that softmax is nearly
uniform whatever the scale, and every bug in the scale passes training-free
links. The model itself is never changed.
"""

from __future__ import annotations

import copy
import inspect

import torch
import torch.nn as nn
import torch.nn.functional as F

from exercises.audit.adapter import n_head_of
from exercises.audit.report import Link
from exercises.audit.subject import Subject

#: Names of a packed q, k, v projection; of separate ones; of the output projection.
PACKED = ("c_attn", "qkv", "in_proj", "query_key_value", "Wqkv", "qkv_proj", "att_proj")
SEPARATE = (("q_proj", "k_proj", "v_proj"), ("wq", "wk", "wv"), ("query", "key", "value"), ("q", "k", "v"),
            ("to_q", "to_k", "to_v"))
OUTPUT = ("c_proj", "proj", "o_proj", "out_proj", "wo", "dense", "to_out", "out")
#: Signs of rotary positions applied inside attention (no plain SDPA reference then).
ROTARY = ("rotary", "rope", "freqs", "cos_cached", "sin_cached")
#: ATTENTION: a module's output must equal the SDPA reference within ATTENTION_TOL
#: times the reference's largest entry. Measured (B=2, T=8, C=64, H=4, D=16,
#: weights N(0, 1/fan_in), inputs N(0, 1)): 0.0 for modules that call SDPA
#: themselves, 2e-7 for a hand-written softmax (max |Δ| 6e-7); scores scaled by
#: 1/sqrt(C) instead of 1/sqrt(D): relative 0.34-0.36 (max |Δ| 0.95-1.01); an
#: inverted scale, sqrt(D): relative 0.70-0.95 (max |Δ| 2.0-2.7). The audit's tests saw
#: max |Δ| 0.65 and 3.1 on its own models. Three orders of magnitude each side.
ATTENTION_TOL = 1e-4
#: RESIDUAL: with its output projections zeroed a block returns x + 0 + 0, which is
#: x exactly (measured 0.0 on every clean block); RESIDUAL_TOL times max |x| only
#: absorbs rounding. A residual built from norm(x) is off by 0.59-0.73 here (by up
#: to 16 in a wider test of the zoo), a lost residual by 3.7-4.1 (max |x|).
RESIDUAL_TOL = 1e-6


def _first_tensor(out):
    if isinstance(out, torch.Tensor):
        return out
    if isinstance(out, (tuple, list)):
        return next(t for t in out if isinstance(t, torch.Tensor))
    raise TypeError(f"the module returned {type(out).__name__}")


def _randomise(module: nn.Module, generator: torch.Generator) -> None:
    """Every Linear inside gets weights N(0, 1/fan_in) and zero biases: unit-scale outputs for unit inputs."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.Linear):
                m.weight.copy_(torch.randn(m.weight.shape, generator=generator) / m.in_features ** 0.5)
                if m.bias is not None:
                    m.bias.zero_()


def find_attention(model: nn.Module) -> list[tuple[str, nn.Module, str, tuple[str, ...], str]]:
    """Attention modules the audit can read: (name, module, "packed"/"separate", projection names, output name).

    A module qualifies when its direct children include an output Linear
    named like one (``OUTPUT``) and either a packed Linear C -> 3C or three
    Linears named like q, k, v.
    """
    found = []
    for name, m in model.named_modules():
        linears = {n: c for n, c in m.named_children() if isinstance(c, nn.Linear)}
        out = next((n for n in OUTPUT if n in linears), None)
        if out is None:
            continue
        packed = next((n for n in PACKED if n in linears and linears[n].out_features == 3 * linears[n].in_features),
                      None)
        separate = next((names for names in SEPARATE if all(n in linears for n in names)), None)
        if packed:
            found.append((name, m, "packed", (packed,), out))
        elif separate:
            found.append((name, m, "separate", separate, out))
    return found


def _rotary(module: nn.Module) -> bool:
    # An attribute set to None or False (a switch that is off) is no sign of rotary positions.
    names = [n.lower() for n, _ in module.named_modules()] + [a.lower() for a, value in vars(module).items()
                                                              if value is not None and value is not False]
    try:
        params = list(inspect.signature(module.forward).parameters)
    except (TypeError, ValueError):
        params = []
    return any(r in n for n in names + params for r in ROTARY) or "position_embeddings" in params


def attention_reference(module: nn.Module, kind: str, projections: tuple[str, ...], output: str, n_head: int,
                        x: torch.Tensor) -> list[torch.Tensor]:
    """What causal multi-head attention computes from the module's own projections, for input x (B, T, C).

    ``softmax(q k^T / sqrt(D) + causal mask) v``, heads merged, through the
    output projection. A packed projection may order its 3C outputs as
    [q | k | v] (nanoGPT, the engine) or per head (GPT-NeoX); one reference
    per ordering is returned. Separate k, v with fewer heads (grouped-query
    attention) are repeated to n_head.
    """
    B, T, C = x.shape
    D = C // n_head
    parts = dict(module.named_children())

    def attend(q, k, v):
        q = q.view(B, T, n_head, D).transpose(1, 2)  # (B, H, T, D)
        kv_heads = k.size(-1) // D
        k = k.view(B, T, kv_heads, D).transpose(1, 2).repeat_interleave(n_head // kv_heads, dim=1)
        v = v.view(B, T, kv_heads, D).transpose(1, 2).repeat_interleave(n_head // kv_heads, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, T, D)
        return parts[output](y.transpose(1, 2).reshape(B, T, C))  # (B, T, C)

    if kind == "separate":
        q, k, v = (parts[n](x) for n in projections)
        return [attend(q, k, v)]
    qkv = parts[projections[0]](x)  # (B, T, 3C)
    blocks = attend(*qkv.split(C, dim=-1))
    per_head = qkv.view(B, T, n_head, 3 * D).split(D, dim=-1)  # each (B, T, H, D)
    interleaved = attend(*(t.reshape(B, T, C) for t in per_head))
    return [blocks, interleaved]


def attention(s: Subject) -> Link:
    """ATTENTION: each attention module equals SDPA computed from its own q, k, v projections.

    On a copy of each module found (``find_attention``), weights
    N(0, 1/fan_in) and inputs N(0, 1) (B=2, T=8) make the scores unit-scale,
    so a wrong scale — 1/sqrt(C) for 1/sqrt(D), sqrt(D) for 1/sqrt(D) —
    moves the output well past ``ATTENTION_TOL``. "skip" where no module can
    be read: no packed or q/k/v projections with an output projection, the
    head count unknown, rotary positions inside, or a forward that needs
    more than x.
    """
    found = find_attention(s.model)
    if not found:
        return Link("ATTENTION", "skip", "no attention module found (a packed qkv or q/k/v Linears with an output "
                                         "projection)")
    generator = torch.Generator().manual_seed(0)
    checked, skipped, worst = [], [], (0.0, "")
    for name, module, kind, projections, output in found:
        H = n_head_of(module, s.model)
        if H is None or _rotary(module):
            skipped.append(f"{name or 'model'} ({'head count unknown' if H is None else 'rotary positions'})")
            continue
        twin = copy.deepcopy(module).cpu().float().eval()
        _randomise(twin, generator)
        C = dict(twin.named_children())[output].out_features
        x = torch.randn(2, 8, C, generator=generator)
        try:
            with torch.no_grad():
                got = _first_tensor(twin(x))
                references = attention_reference(twin, kind, projections, output, H, x)
        except (TypeError, RuntimeError, ValueError) as exc:
            skipped.append(f"{name or 'model'} ({type(exc).__name__} when called with x alone)")
            continue
        absolute, ref = min(((float((got - r).abs().max()), r) for r in references), key=lambda pair: pair[0])
        delta = absolute / max(1.0, float(ref.abs().max()))
        checked.append([name or "model", f"{kind} q/k/v, H={H}, D={C // H}: max |Δ| {absolute:.3e}, "
                                         f"relative {delta:.3e}"])
        if delta >= worst[0]:
            worst = (delta, name or "model")
    evidence = checked + ([["not checked", "; ".join(skipped)]] if skipped else [])
    if not checked:
        return Link("ATTENTION", "skip", f"no attention module could be checked: {'; '.join(skipped)}", evidence)
    evidence.append(["tolerance", f"{ATTENTION_TOL:.0e} of the reference's scale"])
    if worst[0] > ATTENTION_TOL:
        return Link("ATTENTION", "FAIL", f"{worst[1]} differs from softmax(q k^T / sqrt(D)) v by {worst[0]:.3g} "
                                         "(relative) on unit-scale scores: check the scale (1/sqrt(D), D the head "
                                         "size) and the mask", evidence)
    return Link("ATTENTION", "ok", f"{len(checked)} attention modules equal the SDPA reference from their own "
                                   f"q, k, v (max {worst[0]:.1e})", evidence)


# ---------------------------------------------------------------------------
# RESIDUAL


def find_blocks(model: nn.Module) -> tuple[str, nn.ModuleList] | None:
    """The stack of transformer blocks: the first ModuleList of one class whose items hold two or more Linears."""
    for name, m in model.named_modules():
        if isinstance(m, nn.ModuleList) and len(m) and len({type(b) for b in m}) == 1 \
                and sum(isinstance(l, nn.Linear) for l in m[0].modules()) >= 2:
            return name, m
    return None


def zero_outputs(block: nn.Module, C: int) -> list[str]:
    """Zero, in place, the last Linear to C outputs inside each child of ``block`` (the attention's and the
    MLP's output projections); return their names."""
    zeroed = []
    with torch.no_grad():
        for child_name, child in block.named_children():
            last = [(n, l) for n, l in child.named_modules() if isinstance(l, nn.Linear) and l.out_features == C]
            if last:
                n, linear = last[-1]
                linear.weight.zero_()
                if linear.bias is not None:
                    linear.bias.zero_()
                zeroed.append(f"{child_name}.{n}" if n else child_name)
    return zeroed


def residual(s: Subject) -> Link:
    """RESIDUAL: with its output projections zeroed, every block returns its input.

    A pre-norm block computes x + attn(ln_1(x)), then + mlp(ln_2(x)); zero
    the last Linear back to C in each part and both branches add zero, so
    the block is the identity. A residual built from the normalised stream
    (``x = ln(x); x = x + attn(x)``) returns ln(x), a lost residual returns
    zeros. Post-norm blocks (GPT-1's ``ln(x + attn(x))``) also return ln(x)
    and fail: the audit expects the pre-norm GPT-2 layout. On a copy of each
    block, inputs N(0, 1), (B=2, T=8); "skip" when no stack of blocks is
    found or a block needs more than x.
    """
    found = find_blocks(s.model)
    if found is None:
        return Link("RESIDUAL", "skip", "no stack of blocks (a ModuleList of layers) found")
    stack_name, blocks = found
    generator = torch.Generator().manual_seed(0)
    evidence, worst = [], (0.0, 0, None, [])
    for i, block in enumerate(blocks):
        twin = copy.deepcopy(block).cpu().float().eval()
        C = _width(twin)
        zeroed = zero_outputs(twin, C)
        x = torch.randn(2, 8, C, generator=generator)
        try:
            with torch.no_grad():
                out = _first_tensor(twin(x))
        except (TypeError, RuntimeError, ValueError) as exc:
            return Link("RESIDUAL", "skip", f"{stack_name}[{i}] cannot be called with x alone ({type(exc).__name__})")
        delta = float((out - x).abs().max())
        evidence.append([f"{stack_name}[{i}]", f"zeroed {', '.join(zeroed)}: max |block(x) - x| {delta:.3e}"])
        if delta >= worst[0]:
            worst = (delta, i, out, zeroed)
    tol = RESIDUAL_TOL * max(1.0, float(x.abs().max()))
    delta, i, out, zeroed = worst
    if delta > tol:
        mean, std = float(out.mean(-1).abs().max()), float(out.std(-1, unbiased=False).mean())
        why = ("the output is zero: the residual connection is lost" if float(out.abs().max()) < tol else
               "the output is normalised (mean 0, std 1 per position): the residual was built from norm(x)"
               if mean < 1e-3 and abs(std - 1) < 0.05 else "the residual stream does not carry x")
        return Link("RESIDUAL", "FAIL", f"{stack_name}[{i}] with {' and '.join(zeroed)} zeroed returns something "
                                        f"other than its input (max |Δ| {delta:.3g}): {why}; a block is "
                                        "x + attn(ln(x)), then + mlp(ln(x))", evidence)
    return Link("RESIDUAL", "ok", f"{len(blocks)} blocks return their input with their output projections zeroed",
                evidence)


def _width(block: nn.Module) -> int:
    """C: the normalised width of the block (its first LayerNorm-like weight), else its first Linear's input."""
    for m in block.modules():
        shape = getattr(m, "normalized_shape", None)
        if shape:
            return int(shape[-1])
    return next(m for m in block.modules() if isinstance(m, nn.Linear)).in_features
