"""The architecture links: ATTENTION and RESIDUAL (seed 004, "The model:
attention" and "The model: MLP, block, assembly").

Both test one module at a time against what it must compute, inside the
model's own forward (so every module gets exactly the arguments its model
passes it: rotary tables, masks, caches), reading inputs and outputs by
hooks. Weights are changed in place for the one forward and restored after:
ATTENTION gives the projections N(0, 1/fan_in), so a wrong formula cannot
hide (at GPT-2's N(0, 0.02) initialisation the scores are so small that
softmax is nearly uniform whatever the scale); RESIDUAL zeroes the output
projections. In place, not on a copy: a module may reach its parts through
closures (minGPT's ``mlpf`` lambda) that a copy would leave pointing at the
original.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from exercises.audit.adapter import n_head_of
from exercises.audit.links.attention_call import SCALE_SPREAD, WRONG_SIGN, AttentionCalls, mask_bias, unscaled
from exercises.audit.links.attention_flow import FlowWatch, checked_flows
from exercises.audit.measure import mode, rounding_tol, seeded
from exercises.audit.report import Link
from exercises.audit.subject import Subject

#: Names of a packed q, k, v projection; of separate ones; of the output projection.
PACKED = ("c_attn", "qkv", "in_proj", "query_key_value", "Wqkv", "wqkv", "qkv_proj", "att_proj")
SEPARATE = (("q_proj", "k_proj", "v_proj"), ("wq", "wk", "wv"), ("query", "key", "value"), ("q", "k", "v"),
            ("to_q", "to_k", "to_v"), ("c_q", "c_k", "c_v"))
OUTPUT = ("c_proj", "proj", "o_proj", "out_proj", "wo", "dense", "to_out", "out")
#: ATTENTION: what enters a module's output projection must equal the SDPA reference
#: within ATTENTION_TOL times the reference's largest entry. Measured inside the
#: model's own forward (B=2, T=8, C=64, H=4, D=16, projections N(0, 1/fan_in), the
#: blocks' normalised streams as inputs): 0.0 for modules that call SDPA themselves
#: (nanoGPT, minGPT, Hugging Face GPT-2, NeoX and Llama with rotary and grouped kv
#: heads, litgpt, x-transformers), 2e-7 for a hand-written softmax; scores scaled by
#: 1/sqrt(C) instead of 1/sqrt(D): relative 0.10-0.27 (max |Δ| 0.27-0.68); an
#: inverted scale, sqrt(D): relative 0.81-0.87 (max |Δ| 2.0-2.3). Three orders of
#: magnitude each side.
ATTENTION_TOL = 1e-4
#: RESIDUAL: with its output projections zeroed a block returns x + 0 + 0, which is
#: x exactly (measured 0.0 on every clean block of the zoo, parallel residual
#: included); RESIDUAL_TOL times max(1, max |x|) only absorbs rounding. Inside the
#: model's forward x is the embedding stream: a residual built from norm(x) is off
#: by 3.6 there (nanoGPT), a lost residual by max |x|, 0.10-0.11 (nanoGPT, minGPT).
RESIDUAL_TOL = 1e-6


def _first_tensor(out):
    if isinstance(out, torch.Tensor):
        return out
    if isinstance(out, (tuple, list)):
        return next(t for t in out if isinstance(t, torch.Tensor))
    raise TypeError(f"the module returned {type(out).__name__}")


def _in_features(m: nn.Module) -> int | None:
    if isinstance(m, nn.Linear):
        return m.in_features
    if type(m).__name__ == "Conv1D" and isinstance(getattr(m, "weight", None), torch.Tensor):
        return int(m.weight.shape[0])
    return None


def _projection_owners(model: nn.Module) -> str:
    """What the model has instead, for ATTENTION's skip: the first modules holding two or more projections,
    with their projections' names."""
    owners = []
    for name, m in model.named_modules():
        parts = [n for n, c in m.named_children() if _out_features(c) is not None]
        if len(parts) >= 2:
            owners.append(f"{name or 'the model'} ({', '.join(parts[:4])})")
    return f"the modules with projections are {', '.join(owners[:3])}" if owners else \
        f"{type(model).__name__} has no module with two or more projections"


def find_attention(model: nn.Module) -> list[tuple[str, nn.Module, str, tuple[str, ...], str]]:
    """Attention modules the audit can read: (name, module, "packed"/"separate", projection names, output name).

    A module qualifies when its direct children include an output projection
    named like one (``OUTPUT``; an ``nn.Linear`` or Hugging Face's ``Conv1D``)
    and either a packed projection wider than its input (q, k and v in one,
    grouped-query widths included) or three named like q, k, v.
    """
    found = []
    for name, m in model.named_modules():
        linears = {n: c for n, c in m.named_children() if _out_features(c) is not None}
        out = next((n for n in OUTPUT if n in linears), None)
        if out is None:
            continue
        packed = next((n for n in PACKED if n in linears and _out_features(linears[n]) > _in_features(linears[n])),
                      None)
        separate = next((names for names in SEPARATE if all(n in linears for n in names)), None)
        if packed:
            found.append((name, m, "packed", (packed,), out))
        elif separate:
            found.append((name, m, "separate", separate, out))
    return found


#: Hook points an attention module of TransformerLens carries: q, k, v (B, T, n, D) and z, the heads'
#: output before W_O; rot_q, rot_k after its rotary embedding, where it has one.
HOOKED = ("hook_q", "hook_k", "hook_v", "hook_z")
#: Its weight matrices, Parameters (H, C, D) rather than Linear modules, and their biases.
HOOKED_WEIGHTS = ("W_Q", "W_K", "W_V")


def find_hooked_attention(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """Attention modules that expose q, k, v and z as hook modules (TransformerLens' ``HookPoint``s)."""
    return [(name, m) for name, m in model.named_modules()
            if all(isinstance(getattr(m, h, None), nn.Module) for h in HOOKED)
            and all(isinstance(getattr(m, w, None), torch.Tensor) for w in HOOKED_WEIGHTS)]


@contextlib.contextmanager
def randomised_hooked(modules: list[nn.Module], generator: torch.Generator):
    """``randomised`` for hooked attention: W_Q, W_K, W_V (H, C, D) get N(0, 1/C), their biases zero."""
    saved = []
    with torch.no_grad():
        for module in modules:
            for w, b in zip(HOOKED_WEIGHTS, ("b_Q", "b_K", "b_V")):
                weight = getattr(module, w)
                saved.append((weight, weight.detach().clone()))
                weight.copy_(torch.randn(weight.shape, generator=generator) / weight.size(-2) ** 0.5)
                bias = getattr(module, b, None)
                if isinstance(bias, torch.Tensor):
                    saved.append((bias, bias.detach().clone()))
                    bias.zero_()
    with _put_back(saved):
        yield


@contextlib.contextmanager
def _put_back(saved: list[tuple[torch.Tensor, torch.Tensor]]):
    """For the block, then copy each saved ``(tensor, value)`` back into its tensor (the model's own weights)."""
    try:
        yield
    finally:
        with torch.no_grad():
            for t, value in saved:
                t.copy_(value)


@contextlib.contextmanager
def randomised(modules: list[nn.Module], generator: torch.Generator):
    """Give every projection inside ``modules`` weights N(0, 1/fan_in) and zero biases, in place, for the
    block; put the model's own values back after. Unit-scale inputs then give unit-scale scores, where a
    wrong softmax scale cannot hide (at N(0, 0.02) softmax is nearly uniform whatever the scale)."""
    saved = []
    with torch.no_grad():
        for module in modules:
            for m in module.modules():
                fan_in = _in_features(m)
                if fan_in is None:
                    continue
                saved.append((m.weight, m.weight.detach().clone()))
                m.weight.copy_(torch.randn(m.weight.shape, generator=generator) / fan_in ** 0.5)
                if getattr(m, "bias", None) is not None:
                    saved.append((m.bias, m.bias.detach().clone()))
                    m.bias.zero_()
    with _put_back(saved):
        yield


@contextlib.contextmanager
def watching_rotary(modules: list[tuple[str, nn.Module]], current: list, seen: dict):
    """Record what each attention module's rotary function returns (by the module it ran in), for the block.

    The functions are found in the Python module that defines each attention
    class: every module-level function named like a rotary embedding
    (``apply_rotary_pos_emb``, ``apply_rope``, ``apply_rotary_emb``).
    """
    import sys

    patched = []
    for _, module in modules:
        namespace = vars(sys.modules[type(module).__module__]) if type(module).__module__ in sys.modules else {}
        for fname, fn in list(namespace.items()):
            if not callable(fn) or not any(r in fname.lower() for r in ("rotary", "rope")) or isinstance(fn, type) \
                    or any(fn is p[2] for p in patched if p[0] is namespace and p[1] == fname):
                continue

            def watched(*args, _fn=fn, **kwargs):
                out = _fn(*args, **kwargs)
                if current:
                    seen.setdefault(current[-1], []).extend(out if isinstance(out, (tuple, list)) else [out])
                return out

            patched.append((namespace, fname, fn))
            namespace[fname] = watched
    try:
        yield
    finally:
        for namespace, fname, fn in reversed(patched):
            namespace[fname] = fn


def _entering(current: list, by_projection: set, name: str, calls: AttentionCalls):
    """A projection's forward hook that marks its attention module as running where the module's own hooks
    did not (a block that calls ``self.attention.forward(...)`` directly, as llama2.c's does, bypasses them):
    whatever runs between its q, k, v projections and its output projection is that module's attention."""
    def hook(module, args, out):
        if not current or current[-1] != name:
            calls.begin(name)
            current.append(name)
            by_projection.add(name)
    return hook


def _leaving(current: list, by_projection: set, name: str):
    """The output projection's pre-hook that ends what ``_entering`` began: the attention call is over."""
    def hook(module, args):
        if name in by_projection and current and current[-1] == name:
            current.pop()
            by_projection.discard(name)
    return hook


def _every(store: dict, key, what: str):
    """A hook that appends each input or output of a module to ``store[key]`` and changes nothing."""
    if what == "input":
        def hook(module, args):
            store.setdefault(key, []).append(args[0])
    else:
        def hook(module, args, out):
            store.setdefault(key, []).append(_first_tensor(out))
    return hook


def _joined(tensors: list, T: int):
    """What a module saw over the forward: its first call's tensor, or, where the model is driven one
    position (or chunk) per call and the calls' (B, t, ...) tensors add up to T positions, all of them
    joined along the sequence (pytorch-llama's one token per forward)."""
    first = tensors[0]
    if len(tensors) > 1 and isinstance(first, torch.Tensor) and first.dim() == 3 and first.size(1) < T \
            and all(isinstance(t, torch.Tensor) and t.dim() == 3 and t.shape[0::2] == first.shape[0::2]
                    for t in tensors) and sum(t.size(1) for t in tensors) == T:
        return torch.cat(tensors, dim=1)
    return first


def _keep(store: dict, key, what: str):
    """A hook that keeps the first input or output of a module under ``key`` and changes nothing (returns None)."""
    if what == "input":
        def hook(module, args):
            store.setdefault(key, args[0])
    else:
        def hook(module, args, out):
            store.setdefault(key, _first_tensor(out))
    return hook


def _heads(t: torch.Tensor, T: int, D: int) -> torch.Tensor | None:
    """A (B, T, n·D) projection or a 4-D tensor in (B, T, n, D) or (B, n, T, D) as (B, n, T, D)."""
    if t.dim() == 3:
        return t.reshape(t.size(0), T, -1, D).transpose(1, 2)
    if t.dim() == 4 and t.size(-1) <= D:
        return t.transpose(1, 2) if t.size(1) == T and t.size(2) != T else t
    return None


def _layouts(qkv: torch.Tensor, H: int, T: int, D: int) -> list[tuple[str, tuple]]:
    """The ways a packed (B, T, (H + 2·Hkv)·D) projection may order q, k, v: (name, (q, k, v) each (B, n, T, D))."""
    B, width = qkv.size(0), qkv.size(-1)
    kv = (width // D - H) // 2
    found = []
    if kv >= 1 and (H + 2 * kv) * D == width:
        q, k, v = qkv.split((H * D, kv * D, kv * D), dim=-1)
        found.append(("[q | k | v]", tuple(_heads(t, T, D) for t in (q, k, v))))
        if H % kv == 0:  # per kv group: its q heads, then k, then v (GPT-NeoX when kv == H; litgpt's older layout)
            g = qkv.view(B, T, kv, H // kv + 2, D)
            q = g[:, :, :, :-2].reshape(B, T, H, D).transpose(1, 2)
            found.append(("per group [q.. k v]", (q, g[:, :, :, -2].transpose(1, 2), g[:, :, :, -1].transpose(1, 2))))
        if kv == H:
            q, k, v = qkv.view(B, T, H, 3 * D).split(D, dim=-1)
            found.append(("per head [q k v]", tuple(t.transpose(1, 2) for t in (q, k, v))))
    return found


def _with_rotary(proj: torch.Tensor, rotated: torch.Tensor | None) -> torch.Tensor:
    """The heads after rotary: the rotated part where the rotary function returned one (partial rotary
    rotates the first dims of each head), the projection's own values elsewhere."""
    if rotated is None:
        return proj
    if rotated.size(-1) == proj.size(-1):
        return rotated
    return torch.cat([rotated, proj[..., rotated.size(-1):]], dim=-1)


def attention_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float | None = None,
                        softcap: float | None = None, bias: torch.Tensor | None = None,
                        grouped: bool = True) -> torch.Tensor:
    """Causal SDPA from heads q (B, H, T, D), k and v (B, Hkv, T, D), kv repeated to H (grouped-query
    attention: query head h reads kv head h // (H / Hkv); with ``grouped`` False, tiled instead, h mod Hkv,
    what ``repeat`` gives), scores scaled by ``scale`` (default 1/sqrt(D)), soft-capped as
    c * tanh(scores / c) where ``softcap`` gives c, plus ``bias`` (1, H, T, T) where given (ALiBi), merged to
    (B, T, H·D): what goes into the output projection."""
    H = q.size(1)
    k, v = (t.repeat_interleave(H // t.size(1), dim=1) if grouped else t.repeat(1, H // t.size(1), 1, 1)
            for t in (k, v))
    q, k, v = q.float(), k.float(), v.float()
    if softcap is None and bias is None:
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale)  # (B, H, T, D)
    else:
        scores = (q @ k.transpose(-2, -1)) * (scale if scale is not None else 1.0 / math.sqrt(q.size(-1)))
        if softcap is not None:
            scores = softcap * torch.tanh(scores / softcap)
        if bias is not None:
            scores = scores + bias.to(scores.device)
        T, S = scores.shape[-2:]
        causal = torch.ones(T, S, dtype=torch.bool, device=scores.device).tril(S - T)
        y = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1) @ v
    return y.transpose(1, 2).reshape(q.size(0), q.size(2), -1)


def attention(s: Subject) -> Link:
    """ATTENTION: each attention module equals SDPA computed from its own q, k, v, after its own rotary.

    The model runs its own forward (eval mode, two rows of the batch) with
    every projection of every attention module found (``find_attention``)
    given weights N(0, 1/fan_in) in place, restored after: the inputs are
    the blocks' normalised streams, so the scores are unit-scale and a wrong
    scale — 1/sqrt(C) for 1/sqrt(D), sqrt(D) — moves the output well past
    ``ATTENTION_TOL``. Hooks read each module's q, k, v projections and what
    goes into its output projection; q and k are read again where they reach
    the module's attention call (``attention_call``: SDPA's arguments, or the
    operands of q @ k^T), so a rotary embedding however it is kept (a
    function, a method, an ``nn.Module``, cos and sin applied inline) and a
    qk-norm are judged as the module attends, a uniform pre-scale of q is
    taken off (its scale is judged whole), and the head count comes from that
    call where no attribute names it. Without a call to read, the module's
    rotary function, where it has one, is watched for the rotated q and k
    (partial rotary included).
    The reference is causal SDPA with k, v repeated to the query heads
    (grouped-query attention); a packed projection is read in each layout
    its width allows and the closest taken. The tolerance follows the
    model's dtype (``Subject.tol``). Attention computed by hand outside the
    modules found (none named like projections: PaLM's fused block) is
    found in the same forward by its data flow (``attention_flow``: scores,
    softmax, a product with v) and checked from what it computed; a module
    read by its projections keeps the one record of the attention inside it,
    and one it skips (its projections never ran as modules) is checked by
    its data flow instead.
    "skip" where no module can be read: none found either way, the head
    count neither named nor read from a call, or no hook fired.
    """
    found = find_attention(s.model)
    if not found and find_hooked_attention(s.model):
        return _hooked_attention(s)
    seen, rotary, current, handles, by_projection, steps = {}, {}, [], [], set(), {}
    skipped, checked, worst, tiled = [], [], (0.0, "", None), {}
    readable, unconventional, unmasked = [], [], []
    generator = torch.Generator().manual_seed(0)
    idx = s.xs[:2, :8]
    T = idx.size(1)
    calls, flows = AttentionCalls(current, batch=idx.size(0)), FlowWatch(s.model, idx.size(0), T, current)
    for name, module, kind, projections, output in found:
        readable.append((name, module, kind, projections, output, n_head_of(module, s.model)))
        parts = dict(module.named_children())
        for proj in projections:
            handles.append(parts[proj].register_forward_hook(_every(steps, (name, proj), "output")))
            handles.append(parts[proj].register_forward_hook(_entering(current, by_projection, name, calls)))
        handles.append(parts[output].register_forward_pre_hook(_every(steps, (name, "into output"), "input")))
        handles.append(parts[output].register_forward_pre_hook(_leaving(current, by_projection, name)))
        handles.append(module.register_forward_pre_hook(
            lambda m, args, name=name: (calls.begin(name), current.append(name)) and None))
        handles.append(module.register_forward_hook(
            lambda m, args, out, name=name: (current.pop() if current and current[-1] == name else None) and None))
    try:
        with randomised([r[1] for r in readable], generator), watching_rotary([(r[0], r[1]) for r in readable],
                                                                               current, rotary), \
                mode(s.model, False), torch.no_grad(), seeded(0), calls, flows:
            s.forward(idx)
    finally:
        for h in handles:
            h.remove()
    seen = {key: _joined(tensors, T) for key, tensors in steps.items()}
    for name, module, kind, projections, output, H in readable:
        label = name or "model"
        got = seen.get((name, "into output"))
        if got is None or any((name, p) not in seen for p in projections):
            skipped.append(f"{label} (its projections did not run in the forward)")
            continue
        if got.dim() == 3 and got.size(1) != T:
            skipped.append(f"{label} (it attends {got.size(1)} position(s) per call, not the forward's {T}: the "
                           "model is driven a chunk at a time, and the comparison needs whole sequences)")
            continue
        short = calls.short_read(name, T)
        if short is not None:
            return Link("ATTENTION", "FAIL", f"{label} is driven one token per call, and its query at position "
                                             f"{T - 1} reads {short[1]} key(s), not the {T} of positions 0..{T - 1}: "
                                             "each position attends over its whole past",
                        [["calls", f"{short[0]} of one query each"], ["keys at the last call", str(short[1])]],
                        advice="read the cache back up to the current position (keys[:, :start_pos + 1]), after "
                               "writing this call's key and value into it")
        call = calls.call_of(name, T)
        at_call = call is not None and call.q.dim() == 4 and call.q.size(2) == T
        heads_from = "attribute"
        if at_call and call.k.size(2) > T:  # a cache's slots past the sequence: its keys are the first T
            call.k = call.k[:, :, :T]
            call.v = None if call.v is None else call.v[:, :, :T]
            call.mask = None if call.mask is None else call.mask[..., :T]
        if at_call and call.mask is not None and call.bias is None:  # SDPA's attn_mask, read as a bias
            spread = rounding_tol(SCALE_SPREAD, call.q.dtype)
            call.bias, call.convention = mask_bias(call.mask, spread)
        if at_call and (H is None or call.q.size(1) != H):
            H, heads_from = int(call.q.size(1)), f"from its {'SDPA call' if call.kind == 'sdpa' else 'q @ k^T'}"
        if H is None:
            skipped.append(f"{label} (no attribute names its head count, and no SDPA call or q @ k^T ran in it to "
                           "read the heads from)")
            continue
        got = got.float()
        D = got.size(-1) // H
        if kind == "separate":
            candidates = [("q, k, v", tuple(_heads(seen[(name, p)].float(), T, D) for p in projections))]
        else:
            candidates = _layouts(seen[(name, projections[0])].float(), H, T, D)
        rotated = [_heads(t.float(), T, D) for t in rotary.get(name, []) if isinstance(t, torch.Tensor)]
        rotated = [t for t in rotated if t is not None]
        best = None
        for layout, (q, k, v) in candidates:
            how, own, softcap, bias, convention = "", None, None, None, ""
            if at_call and q is not None and k is not None and call.q.size(-1) == q.size(-1):
                (q, c_q, q_how), (k, c_k, k_how) = unscaled(call.q, q), unscaled(call.k, k)
                how = f", q {q_how} and k {k_how} at the attention call"
                if call.v is not None and v is not None and call.v.shape == v.shape:
                    # the values the module attends over, whatever packed layout made them (CodeGen's
                    # model-parallel q, v, k); a v tiled to the query heads before the call keeps the
                    # projection's, so a kv head read by the wrong query heads still shows
                    v, how = call.v.float(), how + ", v as passed"
                own = None if call.scale is None else call.scale * c_q * c_k
                if own is not None:
                    softcap, bias, convention = call.softcap, call.bias, call.convention
            elif rotated:
                rq = next((t for t in rotated if t.size(1) == q.size(1)), None)
                rk = next((t for t in rotated if t is not rq and t.size(1) == k.size(1)), None)
                q, k = _with_rotary(q, rq), _with_rotary(k, rk)
            conventional = 1.0 / math.sqrt(D)
            if bias is not None and bias.size(1) != q.size(1):
                continue
            ref = attention_reference(q, k, v, own if own is not None else conventional, softcap, bias)
            if ref.shape != got.shape:
                continue
            absolute = float((got - ref).abs().max())
            relative = absolute / max(1.0, float(ref.abs().max()))
            if best is None or relative < best.relative:
                best = Compared(layout, k.size(1), how, absolute, relative, own, conventional, q.size(1), convention)
                if 1 < v.size(1) < q.size(1):  # grouped kv heads: would the other tiling explain the output?
                    other = attention_reference(q, k, v, own if own is not None else conventional, softcap, bias,
                                                grouped=False)
                    best.tiled = float((got - other).abs().max()) / max(1.0, float(other.abs().max()))
        if best is None:
            skipped.append(f"{label} (no layout of its projections gives q, k, v for H={H})")
            continue
        extras = (best.how or (", rotary applied" if rotated else "")) + \
            (f", {best.kv} kv heads" if best.kv != H else "") + \
            ("" if heads_from == "attribute" else f", H read {heads_from}")
        asked = f"; asked: {call.asked}" if at_call else ""
        checked.append([label, f"{kind} {best.layout}, H={H}, D={D}{extras}{asked}; against causal SDPA at "
                               f"{best.scale_words()}: max |Δ| {best.absolute:.3e}, relative {best.relative:.3e}"])
        if best.relative >= worst[0]:
            worst = (best.relative, label, best.own, best.convention)
        if best.tiled is not None:
            tiled[label] = best.tiled
        if best.unconventional:
            unconventional.append((label, best))
        if at_call and call.kind == "sdpa" and not call.causal_asked:
            unmasked.append(label)
    # attention by hand outside the modules read by their projections (or in one skipped: it stands in)
    read = [r[0] for r in readable if (r[0] or "model") in {row[0] for row in checked}]
    by_flow = checked_flows(flows.flows, read, attention_reference)
    skipped = [w for w in skipped if not any(w.startswith(f"{c.label} (") for c in by_flow)]
    for c in by_flow:
        if c.fail:  # elsewhere, found by what it computes: its softmax's axis or its mask breaks the contract
            return Link("ATTENTION", "FAIL", c.fail, checked + [[c.label, f"by its data flow: {c.asked}"]],
                        advice=c.advice)
        best = Compared("by its data flow", c.kv, "", c.absolute, c.relative, c.own, 1 / math.sqrt(c.D), c.heads,
                        c.convention)
        checked.append([c.label, f"by its data flow: {c.asked}, H={c.heads}, D={c.D}"
                                 f"{f', {c.kv} kv heads' if c.kv != c.heads else ''}; against causal SDPA at "
                                 f"{best.scale_words()}: max |Δ| {c.absolute:.3e}, relative {c.relative:.3e}"])
        worst = (c.relative, c.label, c.own, c.convention) if c.relative >= worst[0] else worst
        unconventional += [(c.label, best)] if best.unconventional else []
    if not found and not checked:
        return Link("ATTENTION", "skip", "no attention module found (a packed qkv or q/k/v projections, Linear or "
                                         "Conv1D, beside an output projection named like one: "
                                         f"{', '.join(OUTPUT)}; nor a softmax between two products computed by "
                                         f"hand); {_projection_owners(s.model)}")
    return _attention_verdict(checked, skipped, worst, s, unconventional, unmasked, tiled)


@dataclass
class Compared:
    """One attention module against causal SDPA: the layout read, its kv heads, how q and k were read,
    the difference, and the scale compared at: the module's own (``own``, read from its call, None
    where unread) or, without it, the 1/sqrt(D) convention; with grouped kv heads, the relative difference
    from the reference whose kv heads are tiled rather than grouped (``tiled``), else None."""

    layout: str
    kv: int
    how: str
    absolute: float
    relative: float
    own: float | None
    conventional: float
    heads: int
    convention: str = ""
    tiled: float | None = None

    def scale_words(self) -> str:
        if self.own is None:
            return f"1/sqrt(D) = {self.conventional:.4g} (its own scale unread)"
        return f"its own scale {self.own:.4g}" + (f" ({self.named})" if self.unconventional_scale else "") + \
            (f", {self.convention}" if self.convention else "")

    @property
    def named(self) -> str:
        return scale_name(self.own, self.conventional, self.heads)

    @property
    def unconventional_scale(self) -> bool:
        """Whether the module's own scale is not 1/sqrt(D) (beyond rounding)."""
        return self.own is not None and abs(self.own / self.conventional - 1) > SCALE_RTOL

    @property
    def unconventional(self) -> bool:
        """Whether the module's scores depart from q @ k^T / sqrt(D): another scale, a soft-cap, a bias."""
        return self.unconventional_scale or bool(self.convention)

    def departure(self) -> str:
        """How the scores depart from q @ k^T / sqrt(D), in words."""
        scale = f"{self.own:.4g} ({self.named})" if self.unconventional_scale else ""
        return " and ".join(w for w in (scale, self.convention) if w)


#: The scores' conventions read at a hand-written call (``attention_call.read_scores``), by the word
#: that names each, and the warning each gives: the contract holds, the model departs from plain scores.
CONVENTIONS = {
    "soft-capped": "soft-capped scores, c * tanh(scores / c), are right for a model trained with them (Gemma 2); "
                   "they bound every score to (-c, c)",
    "ALiBi": "ALiBi's per-head bias by distance stands in for position embeddings in the models trained with "
             "it (BLOOM, MPT)",
    "bias by distance": "a per-head bias by distance (relative positions) is right for a model trained with it",
    "sliding window": "a sliding window is right for a model trained with it (Mistral, Gemma 2's local layers); it "
                      "reads no key older than the window",
    "additive bias": "an additive bias on the scores from the model's own mask is right for a model trained with it",
}
#: A module's own scale is the 1/sqrt(D) convention within this relative difference (float32 rounding
#: of a pre-scale measured from the norms is ~1e-6; the smallest named departure, 1/sqrt(C) at H=2, is 0.29).
SCALE_RTOL = 1e-3


def scale_name(scale: float, conventional: float, heads: int) -> str:
    """A scale in words against 1/sqrt(D): the common alternatives named where it is one of them
    (1/D as muP's, 1 as unscaled scores, 1/sqrt(C) for the width C = H·D of H heads, sqrt(D)), else
    its ratio to 1/sqrt(D)."""
    D = round(1 / conventional ** 2)
    known = {"1/D, muP's": 1 / D, "1, unscaled scores": 1.0, f"1/sqrt(C), C = {heads * D} the heads' width":
             1 / math.sqrt(heads * D), "sqrt(D), inverted": math.sqrt(D)}
    for words, value in known.items():
        if abs(scale / value - 1) <= SCALE_RTOL:
            return words
    return f"{scale / conventional:.3g} x 1/sqrt(D)"


def _attention_verdict(checked: list, skipped: list[str], worst: tuple, s: Subject,
                       unconventional: list = (), unmasked: list[str] = (), tiled: dict | None = None) -> Link:
    """ATTENTION's verdict from the modules checked (label, what was compared), those skipped (why), the
    worst relative difference from causal SDPA as (difference, module label, its own scale or None where
    the reference used 1/sqrt(D), and optionally the scores' convention read at its call), the modules
    whose scores depart from q @ k^T / sqrt(D) (label, ``Compared``), the SDPA calls that asked for no
    mask, and, per module with grouped kv heads, its relative difference from the reference with the kv
    heads tiled the other way (``repeat``'s h mod Hkv): where that one matches, the advice says so.

    The contract every correct GPT keeps: each query position attends, causally, over its own head's
    keys and values. It fails on a difference from causal attention over the scores the module applies
    itself; a scale that is not 1/sqrt(D) (muP's 1/D, GPT-Neo's unscaled scores), a soft-cap (Gemma 2) or
    a per-head bias by distance (ALiBi) keeps the contract and is a warning, unless the audit was asked
    to expect causal SDPA at 1/sqrt(D) (``--expect sdpa``): then it fails, naming the departure."""
    evidence = checked + ([["not checked", "; ".join(skipped)]] if skipped else [])
    if not checked:
        return Link("ATTENTION", "skip", f"no attention module could be checked: {'; '.join(skipped)}", evidence)
    tol = s.tol(ATTENTION_TOL)
    evidence.append(["tolerance", f"{tol:.1e} of the reference's scale ({s.precision})"])
    difference, label, own, *convention = worst
    if difference > tol:
        said = f"(relative, tolerance {tol:.1e} for {s.precision}) on unit-scale scores"
        other = (tiled or {}).get(label)
        if other is not None and other <= tol:
            evidence.append(["kv heads tiled, not grouped", f"{label}: query head h reading kv head h mod Hkv (what "
                             f"repeat gives) matches its output, relative {other:.3e}"])
            return Link("ATTENTION", "FAIL", f"{label} differs from causal attention over its own scores by "
                                             f"{difference:.3g} {said}, and equals it with the kv heads tiled "
                                             f"(relative {other:.1e}): the key/value heads are shared with the wrong "
                                             "query heads", evidence,
                        advice="query head h must read kv head h // (H / Hkv): expand k and v with "
                               "repeat_interleave(H // Hkv, dim=head axis), not repeat (which gives h mod Hkv)")
        if own is None:
            return Link("ATTENTION", "FAIL", f"{label} differs from softmax(q k^T / sqrt(D)) v by {difference:.3g} "
                                             f"{said}", evidence,
                        advice="check the scale (1/sqrt(D), D the head size, not n_embd), the causal mask, and "
                               "how heads are split and merged")
        mask = ("; its SDPA call passed neither is_causal=True nor an attn_mask" if label in unmasked else "")
        scores = f"q k^T x {own:.4g}" + "".join(f", {c}" for c in convention if c)
        return Link("ATTENTION", "FAIL", f"{label} differs from causal softmax({scores}) v, at the scale "
                                         f"it applies itself, by {difference:.3g} {said}: not a matter of scale{mask}",
                    evidence, advice="check the causal mask, how heads are split and merged (transpose before "
                                     "view), and which kv head each query head reads")
    flipped = [(name, c) for name, c in unconventional if c.convention.startswith(WRONG_SIGN)]
    if flipped:
        names = ", ".join(name for name, _ in flipped)
        return Link("ATTENTION", "FAIL", f"{names} add{'s' if len(flipped) == 1 else ''} {flipped[0][1].convention}, "
                                         "so each query favours the keys furthest in its past: ALiBi subtracts "
                                         "slope x distance, every slope positive", evidence,
                    advice="check the sign of the slopes or of the distance (bias = -slope x (i - j) for key j "
                           "at or before query i)")
    if unconventional:
        by_departure: dict[str, list[str]] = {}
        for name, c in unconventional:
            by_departure.setdefault(c.departure(), []).append(name)
        departures = "; ".join(f"{words} in {', '.join(names)}" for words, names in by_departure.items())
        scaled = [c for _, c in unconventional if c.unconventional_scale]
        scale_only = not any(c.convention for _, c in unconventional)
        what = "scale the scores by other than 1/sqrt(D)" if scale_only else \
            "apply their own scores, not q @ k^T / sqrt(D)"
        warnings = []
        if scaled:
            warnings.append("a scale other than 1/sqrt(D) is right for a model trained with it (muP's 1/D, "
                            "GPT-Neo's unscaled scores); otherwise its attention is flatter or sharper than intended")
        warnings += [CONVENTIONS[k] for k in CONVENTIONS if any(k in c.convention for _, c in unconventional)]
        if "sdpa" in s.expect:
            evidence.append(["expected (--expect sdpa)", "causal SDPA at 1/sqrt(D), no other scale, soft-cap or bias"])
            return Link("ATTENTION", "FAIL", f"{len(unconventional)} of {len(checked)} attention modules "
                                             f"{what}, where --expect sdpa holds them to causal SDPA at 1/sqrt(D): "
                                             f"{departures} (each equals causal attention over its own scores, max "
                                             f"{difference:.1e})", evidence,
                        advice="drop --expect sdpa if the model was trained with this convention; otherwise use "
                               "F.scaled_dot_product_attention(q, k, v, is_causal=True) with its default scale")
        equal = "causal SDPA at their own scale" if scale_only else \
            "causal attention over the scores they apply"
        return Link("ATTENTION", "warn", f"{len(checked)} attention modules equal {equal} "
                                         f"(max {difference:.1e}), but {len(unconventional)} {what}: "
                                         f"{departures}", evidence, warnings=warnings)
    return Link("ATTENTION", "ok", f"{len(checked)} attention modules equal the SDPA reference from their own "
                                   f"q, k, v (max {difference:.1e})", evidence)


def _hooked_attention(s: Subject) -> Link:
    """ATTENTION for TransformerLens-style modules: q, k, v (after rotary where ``hook_rot_q`` fires) and
    z read at their hook points in the model's own forward, W_Q, W_K, W_V randomised in place."""
    found = find_hooked_attention(s.model)
    seen, handles = {}, []
    for name, module in found:
        for h in HOOKED + ("hook_rot_q", "hook_rot_k"):
            point = getattr(module, h, None)
            if isinstance(point, nn.Module):
                handles.append(point.register_forward_hook(_keep(seen, (name, h), "output")))
    generator = torch.Generator().manual_seed(0)
    try:
        with randomised_hooked([m for _, m in found], generator), mode(s.model, False), torch.no_grad(), seeded(0):
            s.forward(s.xs[:2, :8])
    finally:
        for h in handles:
            h.remove()
    checked, skipped, worst = [], [], (0.0, "", None)
    for name, _ in found:
        if any((name, h) not in seen for h in HOOKED):
            skipped.append(f"{name} (its hook points did not run in the forward)")
            continue
        q, k = seen.get((name, "hook_rot_q"), seen[(name, "hook_q")]), seen.get((name, "hook_rot_k"), seen[(name, "hook_k")])
        q, k, v, z = (t.float().transpose(1, 2) for t in (q, k, seen[(name, "hook_v")], seen[(name, "hook_z")]))
        ref = attention_reference(q, k, v)
        got = z.transpose(1, 2).reshape(ref.shape)
        absolute = float((got - ref).abs().max())
        relative = absolute / max(1.0, float(ref.abs().max()))
        checked.append([name, f"hook points q, k, v, z, H={q.size(1)}, D={q.size(-1)}: max |Δ| {absolute:.3e}, "
                              f"relative {relative:.3e}"])
        if relative >= worst[0]:
            worst = (relative, name, None)
    return _attention_verdict(checked, skipped, worst, s)


# ---------------------------------------------------------------------------
# RESIDUAL


#: Output weights kept as Parameters, not Linear modules (TransformerLens): the attention's, the MLP's.
OUTPUT_WEIGHTS = (("W_O", "b_O"), ("W_out", "b_out"))


def _projections_in(block: nn.Module) -> int:
    return sum(_out_features(l) is not None or any(isinstance(getattr(l, w, None), torch.Tensor)
                                                   for w, _ in OUTPUT_WEIGHTS) for l in block.modules())


def find_blocks(model: nn.Module) -> tuple[str, nn.ModuleList] | None:
    """The stack of transformer blocks: the first ModuleList of one class whose items hold two or more
    projections (``nn.Linear``, Hugging Face's ``Conv1D``, or TransformerLens' ``W_O`` and ``W_out``); without
    one, the longest run of such items in an ``nn.Sequential`` (PaLM-pytorch's embedding, ``Residual``
    blocks, norm and head in one), named by its slice."""
    for name, m in model.named_modules():
        if isinstance(m, nn.ModuleList) and len(m) and len({type(b) for b in m}) == 1 and _projections_in(m[0]) >= 2:
            return name, m
    best = None
    for name, m in model.named_modules():
        if not isinstance(m, nn.Sequential):
            continue
        items, start = list(m), 0
        while start < len(items):
            stop = start
            while stop < len(items) and type(items[stop]) is type(items[start]) and _projections_in(items[stop]) >= 2:
                stop += 1
            if stop - start >= 2 and (best is None or stop - start > len(best[1])):
                best = (f"{name or 'model'}[{start}:{stop}]", nn.ModuleList(items[start:stop]))
            start = max(stop, start + 1)
    return best


def output_projections(block: nn.Module, C: int) -> list[tuple[str, nn.Module]]:
    """The last projection back to C (an ``nn.Linear`` or Hugging Face's ``Conv1D``) inside each child of
    ``block``: the attention's and the MLP's output projections, as (name, module)."""
    found = []
    for child_name, child in block.named_children():
        own = [(w, b) for w, b in OUTPUT_WEIGHTS if isinstance(getattr(child, w, None), torch.Tensor)
               and getattr(child, w).size(-1) == C]
        if own:  # TransformerLens: the weight itself, (H, D, C) or (4C, C), and its bias
            w, b = own[0]
            found.append((f"{child_name}.{w}", _Weights(getattr(child, w), getattr(child, b, None))))
            continue
        last = [(n, l) for n, l in child.named_modules() if _out_features(l) == C]
        if last:
            n, linear = last[-1]
            found.append((f"{child_name}.{n}" if n else child_name, linear))
    return found


class _Weights:
    """A weight and a bias held as Parameters of a module, seen like a Linear's (``.weight``, ``.bias``)."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None) -> None:
        self.weight, self.bias = weight, bias


@contextlib.contextmanager
def zeroed(projections: list[tuple[str, nn.Module]]):
    """Zero the projections' weights and biases in place for the block; put every value back after.

    In place, not on a copy: a block may reach its parts through closures
    (minGPT's ``mlpf`` lambda) that a deep copy would leave pointing at the original.
    """
    saved = [(t, t.detach().clone()) for _, m in projections for t in (m.weight, getattr(m, "bias", None))
             if isinstance(t, torch.Tensor)]
    try:
        with torch.no_grad():
            for t, _ in saved:
                t.zero_()
        yield
    finally:
        with torch.no_grad():
            for t, value in saved:
                t.copy_(value)


def _out_features(m: nn.Module) -> int | None:
    """Output width of a Linear, or of Hugging Face's Conv1D (weight (in, out), ``nf`` outputs)."""
    if isinstance(m, nn.Linear):
        return m.out_features
    if type(m).__name__ == "Conv1D" and isinstance(getattr(m, "nf", None), int):
        return m.nf
    return None


def residual(s: Subject) -> Link:
    """RESIDUAL: the stream carries each block's input forward.

    The contract every correct block keeps, whatever its layout: its input
    reaches its output added to what its branches (attention, MLP, experts)
    contribute, and a norm, where one comes after, normalises that sum. Two
    measurements, the second only for the blocks the first could not
    settle, both inside the model's own forward (eval mode, two rows of the
    batch) so every block gets exactly the arguments its model passes it:

    1. Each branch's last projection back to C zeroed in place (restored
       after): a pre-norm block, x + attn(ln_1(x)) + mlp(ln_2(x)), parallel
       (GPT-J, GPT-NeoX) or sequential, then returns x exactly.
    2. Each branch's whole output (``branches_of``: the outermost modules of
       the block with weights of their own, not norms, whose output has the
       stream's shape) held at a fixed random tensor r of the stream's
       scale, and the block run on its input x and on x + d, d random at
       the output's scale (so rounding in bfloat16 cannot hide it). A block
       that adds x to its branches moves by exactly d: experts that are not
       ``nn.Linear`` (Mixtral's), a norm after each branch (Gemma 2's
       sandwich: x + norm(r), whatever the norm's bias), a block that wraps
       another. A post-norm block (GPT-1, BERT, OPT-350m's
       ``ln(x + attn(x))``) ends in a norm of its own (its output is that
       norm's output) and moves when its input does (the norm sees
       x + d + r). A residual built from ``norm(x)`` moves by neither
       (ln(x + d) + r), nor does a dropped residual (r, or ln(r)), nor one
       added twice (by 2d).

    Where the stack holds each layer's parts rather than blocks
    (x-transformers' (norms, layer, residual) triples, combined by its
    Decoder), the whole stack is checked by the first measurement: the
    stream into its final norm must be the stream that entered it. "skip"
    when no stack of blocks is found.
    """
    found = find_blocks(s.model)
    if found is None:
        lists = [f"{n} ({len(m)} {type(m[0]).__name__ if len(m) else 'items'})" for n, m in s.model.named_modules()
                 if isinstance(m, nn.ModuleList)]
        return Link("RESIDUAL", "skip", "no stack of blocks (a ModuleList of one class whose items hold two or more "
                                        "Linear or Conv1D projections) found; "
                                        + (f"the ModuleLists are {', '.join(lists[:3])}" if lists else
                                           f"{type(s.model).__name__} holds no ModuleList"))
    stack_name, blocks = found
    if isinstance(blocks[0], (nn.ModuleList, nn.ModuleDict, nn.Sequential)):
        return _residual_of_stack(s, stack_name, blocks)
    C = _width(blocks[0])
    projections = [output_projections(block, C) for block in blocks]
    with zeroed([p for ps in projections for p in ps]):
        seen = _through_blocks(s, blocks)
    if len(seen) < len(blocks):
        return Link("RESIDUAL", "skip", f"{len(blocks) - len(seen)} of {len(blocks)} blocks in {stack_name} did "
                                        "not run in the forward")
    for i in range(len(blocks)):
        x, out = seen[i][:2]
        if x is None or out is None or out.shape != x.shape:
            return Link("RESIDUAL", "skip", f"{stack_name}[{i}]'s input or output is not a (B, T, C) tensor")
    evidence, layouts, failed = [], {}, []
    deltas = {i: _largest_difference(seen[i][1], seen[i][0]) for i in range(len(blocks))}
    for i in range(len(blocks)):
        names = [n for n, _ in projections[i]]
        evidence.append([f"{stack_name}[{i}]", f"zeroed {', '.join(names) or 'no projection back to C'}: "
                                               f"max |block(x) - x| {deltas[i]:.3e}"])
        if deltas[i] <= _residual_tol(seen[i][0]):
            layouts[i] = "pre-norm"
    rest = [i for i in range(len(blocks)) if i not in layouts]
    if rest:
        branches = {i: branches_of(blocks[i]) for i in rest}
        fixed: dict = {}
        try:
            once = _through_blocks(s, blocks, branches, fixed)
            nudges = {i: _like(once[i][1], torch.Generator().manual_seed(i + 1)) for i in rest if i in once}
            twice = _through_blocks(s, blocks, branches, fixed, fed={i: once[i][0] + d for i, d in nudges.items()})
        except Exception as exc:  # the judgement falls back on the first measurement, and says why
            once, twice = {}, {}
            evidence.append(["branches held", f"the forward raised {type(exc).__name__} with the branches' "
                                              f"outputs held: {str(exc)[:160]}"])
        for i in rest:
            if i not in once or i not in twice:
                failed.append((i, "it did not run with its branches held", None))
                continue
            (x, out, norms), out2, d = once[i], twice[i][1], nudges[i]
            moved = (out2 - out).float()
            carried = _largest_difference(moved, d)
            last = norms[-1] if norms else None
            ends = last is not None and last[1].shape == out.shape and _largest_difference(out, last[1]) <= \
                _residual_tol(out)
            scale = max(float(out.float().abs().max()), 1e-12)
            held = [b for j, b in enumerate(branches[i]) if (i, j) in fixed]  # the stream-shaped ones
            evidence.append([f"{stack_name}[{i}]", f"outputs of {_names(held)} held at fixed values: adding d to "
                                                   f"the input adds d to the output within {carried:.3e}; the "
                                                   "output " + (f"is {last[0]}'s" if ends else "is not a norm's")
                                                   + f" and moves by {float(moved.abs().max()) / scale:.3g} of "
                                                     "its scale"])
            if carried <= s.tol(RESIDUAL_TOL) * max(1.0, float(out2.float().abs().max())):  # rounds in x's dtype
                layouts[i] = "branches held"
            elif ends and float(moved.abs().max()) / scale > POST_NORM_MOVES:
                layouts[i] = f"post-norm (ends in {last[0]})"
            else:
                times = float(moved.flatten() @ d.float().flatten()) / max(float(d.float().pow(2).sum()), 1e-30)
                failed.append((i, "it ends in a norm that does not see its input: the residual connection is lost"
                               if ends else None, times))
    if failed:
        i, why, times = failed[0]
        x, out = seen[i][:2]
        tol = _residual_tol(x)
        if why is None:
            rms = float(out.float().pow(2).mean(-1).sqrt().mean())
            added = f"adding d to its input, with its branches held, adds {times:.3g} d to its output" \
                if times is not None else ""
            why = ("the output is zero: the residual connection is lost" if float(out.abs().max()) < tol else
                   "the output is normalised (rms 1 per position): the residual was built from norm(x)"
                   if abs(rms - 1) < 0.05 else
                   f"{added}, not d: the stream carries its input more than once" if added and times > 1.5 else
                   f"{added}: the block drops its input" if added and abs(times) < 0.5 else
                   "the residual stream does not carry x")
        names = [n for n, _ in projections[i]]
        return Link("RESIDUAL", "FAIL", f"{stack_name}[{i}] with {' and '.join(names) or 'its branches'} zeroed "
                                        f"returns something other than its input (max |Δ| {deltas[i]:.3g}), and "
                                        f"no norm after its branches explains it: {why}", evidence,
                    advice=_residual_advice(why, f"{stack_name}[{i}]"))
    counts: dict[str, int] = {}
    for layout in layouts.values():
        counts[layout.split(" (")[0]] = counts.get(layout.split(" (")[0], 0) + 1
    how = "; ".join(f"{n} {LAYOUT_WORDS[layout]}" for layout, n in counts.items())
    return Link("RESIDUAL", "ok", f"{len(blocks)} blocks carry their input forward: {how}", evidence)


#: How each layout showed that its block carries its input forward, in the verdict.
LAYOUT_WORDS = {"pre-norm": "return their input with their output projections zeroed",
                "branches held": "add their input to their branches' outputs (d added to it, with the branches "
                                 "held, adds d)",
                "post-norm": "normalise the sum of their input and their branches (post-norm)"}
#: Post-norm: with the branches held at r, adding d (the output's scale) to a block's input turns
#: norm(x + r) into norm(x + d + r), which moves the output by about its own scale for random d; a
#: norm that never sees x (a dropped residual) does not move at all (0.0).
POST_NORM_MOVES = 1e-2


def _like(t: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """A random tensor of ``t``'s shape, dtype and device with the same root-mean-square per position."""
    scale = t.float().pow(2).mean(-1, keepdim=True).sqrt()
    return (torch.randn(t.shape, generator=generator).to(t.device) * scale).to(t.dtype)


def _residual_tol(x: torch.Tensor) -> float:
    return RESIDUAL_TOL * max(1.0, float(x.float().abs().max()))


def _largest_difference(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a.float() - b.float()).abs().max())


def _names(branches: list[tuple[str, nn.Module]]) -> str:
    return ", ".join(n for n, _ in branches) or "none"


def _is_norm(m: nn.Module) -> bool:
    """A normalisation: a module with a ``normalized_shape``, or named like a norm and holding no weight
    matrix (an attention class named for its qk-norm is not one)."""
    return hasattr(m, "normalized_shape") or "norm" in type(m).__name__.lower() and not _matrices(m)


def _matrices(m: nn.Module) -> set[int]:
    return {id(p) for p in m.parameters() if p.dim() >= 2}


def branches_of(block: nn.Module) -> list[tuple[str, nn.Module]]:
    """The modules of ``block`` whose outputs its residual stream adds: the outermost modules inside it that
    hold weight matrices, are not norms and do not hold every weight of the block (a module that does wraps
    the block's parts, and is looked into). Which of them give the stream's shape is seen when they run."""
    own = _matrices(block)
    found = []

    def visit(prefix: str, module: nn.Module) -> None:
        for name, child in module.named_children():
            where = f"{prefix}{name}"
            weights = _matrices(child)
            if not weights or _is_norm(child):
                continue
            if weights == own:
                visit(f"{where}.", child)
            else:
                found.append((where, child))

    visit("", block)
    return found


def _replace_first(out, value: torch.Tensor):
    """``out`` (a tensor, or a tuple or list starting with one) with its first tensor replaced by ``value``;
    None (the output unchanged) for anything else."""
    if isinstance(out, torch.Tensor):
        return value
    if not isinstance(out, (tuple, list)):
        return None
    items = list(out)
    items[next(n for n, t in enumerate(items) if isinstance(t, torch.Tensor))] = value
    return type(out)(*items) if hasattr(out, "_fields") else type(out)(items)


def _stream_of(args: tuple, kwargs: dict) -> torch.Tensor | None:
    if args and isinstance(args[0], torch.Tensor):
        return args[0]
    return next((v for v in kwargs.values() if isinstance(v, torch.Tensor) and v.dim() == 3), None)


def _through_blocks(s: Subject, blocks: nn.ModuleList, held: dict | None = None, values=None,
                    fed: dict | None = None) -> dict[int, tuple]:
    """Run the model's forward (eval mode, two rows of the batch) and read each block's input and output
    and the outputs of the norms inside it, in the order they ran: ``{i: (x, out, [(norm name, output)])}``.

    ``held`` names, per block, branches whose stream-shaped outputs are replaced by a fixed random tensor
    of the block input's scale per position, made once and kept in the dict ``values`` so a second forward
    gets the same. ``fed`` gives, per block, an input to feed it in place of the one it receives."""
    held, fed = held or {}, fed or {}
    seen: dict[int, tuple] = {}
    handles = []
    generator = torch.Generator().manual_seed(0)
    for i, block in enumerate(blocks):
        norms: list = []

        def enter(module, args, kwargs, i=i, norms=norms):
            norms.clear()
            if i not in fed:
                return None
            x = fed[i]
            if args and isinstance(args[0], torch.Tensor):
                return (x, *args[1:]), kwargs
            key = next((k for k, v in kwargs.items() if isinstance(v, torch.Tensor) and v.dim() == 3), None)
            return None if key is None else (args, {**kwargs, key: x})

        def leave(module, args, kwargs, out, i=i, norms=norms):
            seen.setdefault(i, (_stream_of(args, kwargs), _first_tensor(out), list(norms)))

        handles.append(block.register_forward_pre_hook(enter, with_kwargs=True))
        handles.append(block.register_forward_hook(leave, with_kwargs=True))
        for name, m in block.named_modules():
            if name and _is_norm(m):
                handles.append(m.register_forward_hook(
                    lambda m, a, out, name=name, norms=norms: norms.append((name, _first_tensor(out))) and None))
        stream: list = []
        handles.append(block.register_forward_pre_hook(
            lambda m, a, k, stream=stream: stream.insert(0, _stream_of(a, k)) and None, with_kwargs=True))
        for j, (name, branch) in enumerate(held.get(i, [])):
            def replace(module, args, out, key=(i, j), stream=stream):
                first = _first_tensor(out)
                x = stream[0] if stream else None
                if x is None or first.shape != x.shape:
                    return None
                if key not in values:
                    values[key] = _like(x, generator).to(first.dtype)
                return _replace_first(out, values[key])
            handles.append(branch.register_forward_hook(replace))
    try:
        with mode(s.model, False), torch.no_grad(), seeded(0):
            s.forward(s.xs[:2])
    finally:
        for h in handles:
            h.remove()
    return seen


def _residual_of_stack(s: Subject, stack_name: str, layers: nn.ModuleList) -> Link:
    """RESIDUAL where the stack holds the parts of each layer, not blocks (x-transformers: (norms, layer,
    residual) triples its Decoder combines): with every output projection in the stack zeroed, the stream
    entering the stack's final norm must be the stream that entered the stack."""
    owner_name = stack_name.rpartition(".")[0]
    owner = s.model.get_submodule(owner_name) if owner_name else s.model
    final = next((c for n, c in owner.named_children() if "norm" in n.lower() and c is not layers), None)
    if final is None:
        return Link("RESIDUAL", "skip", f"{stack_name} holds {type(layers[0]).__name__}s, not blocks, and "
                                        f"{owner_name or 'the model'} has no final norm to read the stream at")
    C = _width(layers[0])
    projections = [p for layer in layers for p in output_projections(layer, C)]
    seen: dict = {}
    handles = [owner.register_forward_pre_hook(_keep(seen, "into the stack", "input")),
               final.register_forward_pre_hook(_keep(seen, "into the final norm", "input"))]
    try:
        with zeroed(projections), mode(s.model, False), torch.no_grad(), seeded(0):
            s.forward(s.xs[:2])
    finally:
        for h in handles:
            h.remove()
    x, out = seen.get("into the stack"), seen.get("into the final norm")
    if x is None or out is None or x.shape != out.shape:
        return Link("RESIDUAL", "skip", f"the stream into {owner_name or 'the model'} and into its final norm "
                                        "could not be read as (B, T, C) tensors")
    delta = float((out.float() - x.float()).abs().max())
    evidence = [[stack_name, f"{len(layers)} layers, zeroed {len(projections)} output projections: "
                             f"max |stack(x) - x| {delta:.3e}"]]
    if delta > RESIDUAL_TOL * max(1.0, float(x.abs().max())):
        why = "the residual connection is lost" if float(out.abs().max()) < RESIDUAL_TOL else \
            "the residual stream does not carry x"
        return Link("RESIDUAL", "FAIL", f"{stack_name} with its {len(projections)} output projections zeroed "
                                        f"changes the stream (max |Δ| {delta:.3g}): {why}", evidence,
                    advice=_residual_advice(why, stack_name))
    return Link("RESIDUAL", "ok", f"{stack_name}: with all {len(projections)} output projections zeroed the stream "
                                  "passes through its layers unchanged", evidence)


def _residual_advice(why: str, where: str) -> str:
    """What to change in ``where`` for the residual fault ``why`` names."""
    form = "x = x + attn(ln_1(x)); x = x + mlp(ln_2(x)) (pre-norm), or x = ln(x + attn(x)) (post-norm)"
    if "more than once" in why:
        return f"{where} adds its input twice: write each sum once, {form}"
    if "norm(x)" in why:
        return f"{where} adds its branches to ln(x), not to x: keep the un-normalised x for the sum, {form}"
    if "drops" in why or "lost" in why:
        return f"{where} returns its branches' output without its input: add the branch to x, {form}"
    return f"{where} must carry x forward and add its branches to it: {form}"


def _width(block: nn.Module) -> int:
    """C: the normalised width of the block (a norm among its own children first, as a per-head qk-norm
    inside its attention is D wide, not C; else its first norm's weight), else its first Linear's input."""
    children = [m for _, m in block.named_children()]
    for m in children + [m for m in block.modules() if m not in children]:
        shape = getattr(m, "normalized_shape", None)
        if shape:
            return int(shape[-1] if isinstance(shape, (tuple, list, torch.Size)) else shape)
        weight = getattr(m, "weight", getattr(m, "w", None))  # TransformerLens' LayerNorm keeps its gain as w
        if "norm" in type(m).__name__.lower() and isinstance(weight, torch.Tensor) and weight.dim() == 1:
            return int(weight.numel())
    first = next(m for m in block.modules() if _out_features(m) is not None)
    return first.in_features if isinstance(first, nn.Linear) else int(first.weight.shape[0])
