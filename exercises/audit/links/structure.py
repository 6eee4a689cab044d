"""The structure links: CAUSALITY, SHAPE and REGISTRATION (seed 004, "Using AI on
a generated language model", links 3, 4 and 6)."""

from __future__ import annotations

import copy

import torch
import torch.nn as nn

from exercises.audit.adapter import Forward, engine_like, output_head
from exercises.audit.measure import finite_delta, finite_scale, invalid_logits, mode, seeded
from exercises.audit.links import setup_tables
from exercises.audit.report import Link
from exercises.audit.subject import Subject


def causality(s: Subject) -> Link:
    """CAUSALITY: change only the tokens after position i (eval mode, no gradients).

    The prefix 0..i must stay within tolerance (1e-5 times the largest
    finite logit, at least 1e-5) and the suffix must move, or the
    intervention proved nothing. i = T // 2 - 1; the new tokens are drawn
    from ``s.generator``. Finite logits are compared by value and the rest by
    kind (``measure.finite_delta``): a model that bans tokens with −inf is
    causal when the same tokens stay banned. Both forwards start from the
    same RNG state, so dropout left on in eval mode (EVAL's concern) draws
    the same masks and cannot pass for a leak.
    """
    idx, V = s.xs, s.limit
    B, T = idx.shape
    position = T // 2 - 1
    shift = torch.randint(1, V, (B, T - position - 1), generator=s.generator).to(idx.device)
    changed = idx.clone()
    changed[:, position + 1:] = (idx[:, position + 1:] + shift) % V
    with mode(s.model, False), torch.no_grad():
        with seeded(0):
            before = s.forward(idx)
        with seeded(0):
            after = s.forward(changed)
    invalid = _not_finite(before)
    if invalid:
        return Link("CAUSALITY", "FAIL", f"the logits are not finite ({invalid}), so whether the past moved cannot "
                    "be read: a correct GPT's logits are finite, −inf only where it bans a token",
                    [["changed", f"tokens after position {position} (eval mode)"], ["non-finite logits", invalid]],
                    advice="find the first NaN or +inf: a mask filled with +inf or NaN instead of −inf, a row "
                           "masked entirely (softmax over −inf only gives NaN), or a division by a zero norm; "
                           "INIT and the engine's shape ledger read the same forward")
    prefix, prefix_kinds = finite_delta(before[:, : position + 1], after[:, : position + 1])
    suffix, suffix_kinds = finite_delta(before[:, position + 1:], after[:, position + 1:])
    tol = s.tol(1e-5) * finite_scale(before)
    prefix_ok, informative = prefix <= tol and prefix_kinds == 0, suffix > tol or suffix_kinds > 0
    stream = None
    if prefix_ok and not informative:
        stream = _into_head(s, idx, changed, position)
        if stream is not None:
            head_name, before, prefix, suffix, tol = stream
            prefix_ok, informative = prefix <= tol, suffix > tol
    ok = prefix_ok and informative
    if ok:
        verdict = f"prefix 0..{position} still (max |Δ| {prefix:.1e}); suffix moved ({suffix:.2e})"
        if stream is not None:
            verdict += (f", read at the stream into {stream[0]}: its logits do not depend on the input yet "
                        f"({stream[0]}.weight starts at zero)")
    elif prefix_kinds:
        verdict = f"the past moved: {prefix_kinds} prefix logits changed between finite, −inf, +inf and NaN"
    elif not prefix_ok:
        verdict = f"the past moved: prefix max |Δ logits| {prefix:.3e} > tol {tol:.1e}"
    else:
        verdict = f"uninformative: the suffix did not move ({suffix:.1e})"
    evidence = [["changed", f"tokens after position {position} (eval mode)"],
                ["prefix max |Δ logits|", f"{prefix:.3e}"], ["suffix max |Δ logits|", f"{suffix:.3e}"],
                ["tolerance", f"{tol:.1e} ({s.precision})"]]
    banned = int((before == float("-inf")).sum())
    if banned or prefix_kinds or suffix_kinds:
        evidence.append(["non-finite logits", f"{banned} −inf before the change; kinds changed: prefix "
                                              f"{prefix_kinds}, suffix {suffix_kinds}"])
    advice = ""
    if not prefix_ok:
        first = _first_moved(before, after if stream is None else None, position, tol)
        if first is not None:
            evidence.append(["first position that moved", f"{first} of 0..{position}"])
            verdict += f", first at position {first} of 0..{position}"
        advice = causality_advice(first, position)
    elif not ok:
        advice = (f"the tokens after position {position} changed and no logit after it moved: the logits do not "
                  "read the tokens they follow (a forward that returns a constant, or ignores idx past a point)")
    return Link("CAUSALITY", "ok" if ok else "FAIL", verdict, evidence, advice=advice)


def _first_moved(before: torch.Tensor, after: torch.Tensor | None, position: int, tol: float) -> int | None:
    """The first position of 0..``position`` whose logits moved past ``tol`` (or changed kind), or None
    when ``after`` is not the logits' (CAUSALITY read one layer down)."""
    if after is None:
        return None
    for p in range(position + 1):
        delta, kinds = finite_delta(before[:, p:p + 1], after[:, p:p + 1])
        if kinds or delta > tol:
            return p
    return None


def causality_advice(first: int | None, position: int) -> str:
    """What to look for when changing the tokens after ``position`` moved the logits at ``first``."""
    where = ("a mask that lets query i see key j > i (a causal mask shifted by one: triu(2) where triu(1) "
             "belongs), is_causal off with no mask, or an op that mixes positions along T (a cumulative sum "
             "run backwards, a mean or norm over the sequence)")
    if first is None:
        return f"a position reads tokens after it: hide every key j > i from query i; look for {where}"
    ahead = position + 1 - first
    if first == 0:
        reach = (f"the change from position {position + 1} on reached position 0: the whole future leaks in "
                 "(no mask at all, or an op over the whole sequence)")
    else:
        reach = (f"the change from position {position + 1} on reached position {first} first, {ahead} position(s) "
                 "back (a leak of k keys ahead in each layer reaches k x layers back: one position per layer is a "
                 "causal mask shifted by one)")
    return f"{reach}; hide every key j > i from query i. Look for {where}"


def _not_finite(logits: torch.Tensor) -> str:
    """'' when every logit is finite or −inf (a banned token); else how many are NaN and +inf, of how many."""
    nan, inf = invalid_logits(logits)
    return f"{nan} NaN and {inf} +inf of {logits.numel()} logits" if nan or inf else ""


def _into_head(s: Subject, idx: torch.Tensor, changed: torch.Tensor, position: int):
    """CAUSALITY one layer down, for a model whose logits do not depend on its input at init (an output
    head initialised to zero, as nanochat's is): (head name, the stream before the change, prefix max
    |Δ|, suffix max |Δ|, tolerance) read at the stream entering the head; None when the head's weight is
    not all zero or its input cannot be read as (B, T, C)."""
    found = output_head(s.model, s.V)
    if found is None or not isinstance(getattr(found[1], "weight", None), torch.Tensor) \
            or bool(found[1].weight.detach().ne(0).any()):
        return None
    name, head = found
    streams = []
    handle = head.register_forward_pre_hook(lambda m, args: streams.append(args[0].detach()) and None)
    try:
        with mode(s.model, False), torch.no_grad():
            for ids in (idx, changed):
                with seeded(0):
                    s.forward(ids)
    finally:
        handle.remove()
    if len(streams) < 2 or streams[0].dim() != 3 or streams[0].shape[:2] != idx.shape:
        return None
    before, after = streams[0], streams[-1]
    prefix = finite_delta(before[:, :position + 1], after[:, :position + 1])[0]
    suffix = finite_delta(before[:, position + 1:], after[:, position + 1:])[0]
    return name, before, prefix, suffix, s.tol(1e-5) * finite_scale(before)


def shape(s: Subject) -> Link:
    """SHAPE: the shape ledger with the head-split round trip where the model is
    built like the engine; otherwise the contract (B, T) -> (B, T, V) and
    n_embd divisible by n_head where the config states them.

    Only shapes: NaN logits are INIT's to name, and −inf is how a correct
    model bans a token.
    """
    model, idx, V = s.model, s.xs, s.V
    B, T = idx.shape
    if engine_like(model) and s.forward.convention == "plain" and not s.forward.interface.hf:
        from engine.instruments.shape_ledger import shape_ledger

        ledger = shape_ledger(model, idx)
        first = ledger.first_divergence
        rows = [[f"{r.stage}", f"{r.shape} {r.invariant} {'ok' if r.ok else 'X'}"] for r in ledger.rows
                if not r.ok or r.stage in ("head split", "lm_head")]
        verdict = (f"{len(ledger.rows)} ledger rows hold, head-split round trip included" if first is None else
                   f"first divergence: {first}")
        return Link("SHAPE", "ok" if first is None else "FAIL", verdict, rows,
                    advice="" if first is None else f"the first stage whose shape breaks its invariant is {first}: "
                    "check the view/transpose there (split into heads as (B, T, H, D).transpose(1, 2), merge back "
                    "with .transpose(1, 2).contiguous().view(B, T, C))")
    with mode(model, False), torch.no_grad():
        logits = s.forward(idx)
    shape_ok = tuple(logits.shape) == (B, T, V)
    banned, nan = int((logits == float("-inf")).sum()), int(torch.isnan(logits).sum())
    rows = [["logits", f"{tuple(logits.shape)}, expected {(B, T, V)}"],
            ["non-finite", f"{banned} −inf, {nan} NaN (INIT judges the numbers)"]]
    cfg = getattr(model, "config", None)
    heads_ok = True
    if hasattr(cfg, "n_embd") and hasattr(cfg, "n_head"):
        heads_ok = cfg.n_embd % cfg.n_head == 0
        rows.append(["n_embd % n_head", str(cfg.n_embd % cfg.n_head)])
    ok = shape_ok and heads_ok
    verdict = ("contract only (no engine-style ledger for this structure): (B, T) -> (B, T, V)" if ok else
               f"contract broken: logits {tuple(logits.shape)}, expected {(B, T, V)}" if not shape_ok else
               f"n_embd {cfg.n_embd} is not a multiple of n_head {cfg.n_head}")
    if ok:
        advice = ""
    elif not shape_ok and logits.dim() == 2 and logits.shape[0] == B:
        advice = "the forward returns one row per sequence: return the logits at every position, (B, T, V) " \
                 "(a forward that keeps only the last position, logits[:, -1], should do so only without targets)"
    elif not shape_ok and logits.dim() == 2 and logits.shape[0] == B * T:
        advice = "the logits come flattened to (B*T, V): return them as (B, T, V) and flatten only inside the loss"
    elif not shape_ok:
        advice = f"the forward must map (B, T) ids to (B, T, V) logits, V = {V} the vocabulary: check the head's " \
                 "out_features and any transpose or reshape after it"
    else:
        advice = "choose n_embd a multiple of n_head, so each head gets D = n_embd // n_head dimensions"
    return Link("SHAPE", "ok" if ok else "FAIL", verdict, rows, advice=advice)


def registration(s: Subject) -> Link:
    """REGISTRATION: every parameter in named_parameters(); tied tensors noted;
    nothing the model needs kept where nn.Module cannot see it.

    Fails on a tensor kept as a plain attribute wanting gradients (it is
    never trained), on a plain tensor attribute the model breaks without
    once its parameters are on another device (a mask or a constant left
    behind by ``.to()``: register it with ``register_buffer``;
    ``setup_tables.forward_after_move`` measures it), and on a module with parameters
    kept in a plain list, tuple or dict (use nn.ModuleList / nn.ModuleDict).
    A plain tensor the model carries along itself (modded-nanogpt's rotary
    ``inv_freq``, converted where it is used) is a warning: it is still
    missing from ``state_dict()``. The attributes are those the model had when the factory
    returned it (``Subject.attributes``): what a forward pass stores on a
    module later (an attention map kept for plotting) is not part of the build.
    """
    model = s.model
    named = list(model.named_parameters(remove_duplicate=False))
    first_name: dict[int, str] = {}
    tied = []
    for name, p in named:
        if id(p) in first_name:
            tied.append(f"{name} is {first_name[id(p)]}")
        else:
            first_name[id(p)] = name
    registered_tensors = {id(t) for t in model.parameters()} | {id(t) for t in model.buffers()}
    registered_storage = {t.data_ptr() for t in list(model.parameters()) + list(model.buffers()) if t.numel()}
    registered_modules = {id(m) for m in model.modules()}
    hidden, plain, accepted, plain_tensors = [], [], [], []
    for where, value in s.attributes:
        container = isinstance(value, (list, tuple, dict))
        items = list(value.values()) if isinstance(value, dict) else list(value) if container else [value]
        tensors = [v for v in items if isinstance(v, torch.Tensor)]
        modules = [v for v in items if isinstance(v, nn.Module)]
        aliases = [t for t in tensors if id(t) in registered_tensors or t.numel() and t.data_ptr() in registered_storage]
        if tensors and len(aliases) == len(tensors):
            accepted.append(f"{where} (an alias of a registered tensor)")
        elif any(t.requires_grad and not isinstance(t, nn.Parameter) for t in tensors):
            hidden.append(f"{where} (tensor wanting grad, not a Parameter)")
        elif container and any(isinstance(t, nn.Parameter) for t in tensors):
            hidden.append(f"{where} (Parameters in a plain {type(value).__name__})")
        elif tensors and where in _moved_by_forward(s):
            accepted.append(f"{where} (kept out of state_dict() on purpose: the forward moves it itself)")
        elif tensors:
            plain.append(f"{where} ({_kind(tensors[0])} kept as a plain attribute, not a buffer)")
            plain_tensors.append((where, tensors[0]))
        elif modules and all(id(m) in registered_modules for m in modules):
            accepted.append(f"{where} (a plain {type(value).__name__} of modules registered elsewhere: an index)")
        elif container and any(isinstance(v, nn.Module) and any(True for _ in v.parameters()) for v in items):
            hidden.append(f"{where} (modules in a plain {type(value).__name__})")
    unique = sum(p.numel() for p in {id(p): p for _, p in named}.values())
    moved = setup_tables.forward_after_move(s, plain_tensors) if plain else None
    managed = plain if moved is None else []
    problems = hidden + (plain if moved is not None else [])
    ok = not problems and unique > 0
    verdict = (f"{len(first_name)} parameter tensors, {unique:,} values" + (f"; tied: {tied[0]}" if tied else "")
               if ok else f"not registered: {problems[0]}" if problems else "the model has no parameters")
    if not ok and problems and problems[0] in plain and moved.startswith(("raises", "fails")):
        verdict += ("; with its parameters on another device the forward "
                    + (moved.split(" while ")[0] if moved.startswith("fails") else moved.split(":")[0]))
    if ok and managed:
        verdict += (f"; outside state_dict(): {managed[0].split(' (')[0]}" + (f" and {len(managed) - 1} more"
                                                                              if len(managed) > 1 else "")
                    + ", plain tensors the model carries along itself (its forward still runs with its "
                      "parameters moved to another device)")
    rows = [["named tensors (unique)", f"{len(named)} ({len(first_name)})"], ["unique values", f"{unique:,}"],
            ["tied", "; ".join(tied) or "none"]]
    if accepted:
        rows.append(["kept outside nn.Module's registries, deliberately", "; ".join(accepted[:3])])
    non_persistent = sorted(set(dict(model.named_buffers())) - set(model.state_dict()))
    if non_persistent:
        rows.append(["non-persistent buffers (persistent=False)", ", ".join(non_persistent[:3])
                     + (f" and {len(non_persistent) - 3} more" if len(non_persistent) > 3 else "")])
    if hidden:
        rows.append(["hidden from named_parameters()", "; ".join(hidden[:3])])
    if plain:
        rows.append(["hidden from state_dict() and .to()", "; ".join(plain[:3])])
        rows.append(["after .to(torch.float64)", _left_behind(model, plain[0].split(" (")[0])])
        rows.append(["forward with parameters and buffers on another device",
                     "runs: the model moves or converts them where it uses them" if moved is None else moved])
    warnings = [] if not (ok and managed) else [
        "a plain tensor attribute is not in state_dict(): a checkpoint does not hold it, so the model must rebuild "
        "it when built; register_buffer(name, tensor, persistent=False) says so and moves it with the model"]
    status = "FAIL" if not ok else "warn" if managed else "ok"
    made = setup_tables.measure(s) if ok else None
    if made is not None:
        rows += setup_tables.rows(made)
        if made.broken:
            status = "FAIL"
            verdict = (f"not registered: {made.names}, plain tensors made after the build (by {made.setup}(...) "
                       f"or the first forward); after "
                       f".to(torch.float64) and {made.setup} again the forward {made.dtype_move}")
        else:
            status = "warn"
            verdict += (f"; outside state_dict(): {made.names}, plain tensors made after the build (by "
                        f"{made.setup}(...) or the first forward; "
                        + ("they follow .to(torch.float64)" if len(made.followed) == len(made.tables) else
                           "the forward still runs after .to(torch.float64)" if made.dtype_move is None else
                           f"after .to(torch.float64) {made.dtype_move}")
                        + (", not after a move to another device" if made.device_broken else "") + ")")
            warnings.append(setup_tables.warning(made))
    advice = ""
    if status == "FAIL" and made is not None and made.broken:
        advice = (f"make {made.names} with register_buffer(name, tensor, persistent=False) in {made.setup} (or "
                  "the first forward), so .to() converts and moves them, or rebuild them in the dtype and device "
                  "of the weights each time")
    elif status == "FAIL" and problems:
        name = problems[0].split(" (")[0]
        advice = (f"{name} holds Parameters or modules nn.Module cannot see: use nn.ModuleList / nn.ModuleDict / "
                  "nn.ParameterList, or assign each to an attribute" if problems[0] in hidden and
                  "wanting grad" not in problems[0] else
                  f"{name} needs gradients but is a plain tensor: make it nn.Parameter(...) so named_parameters() "
                  "and the optimizer see it" if problems[0] in hidden else
                  f"{name} stays where it was made when the model moves: register_buffer('{name.split('.')[-1]}', "
                  "tensor, persistent=False) moves it with the model, or move it to the input's device in forward")
    elif status == "FAIL":
        advice = "the model has no parameters: build its layers as nn.Module attributes (nn.Linear, nn.Embedding)"
    return Link("REGISTRATION", status, verdict, rows, warnings, advice=advice)


def _moved_by_forward(s: Subject) -> set[str]:
    """The plain tensor attributes the model's own forward moves to where its parameters are (as Meta's
    Llama does with ``self.freqs_cis = self.freqs_cis.to(h.device)`` and its KV cache), measured, not read.

    A copy of the model goes to the ``meta`` device, where plain attributes are left behind on the CPU,
    and runs one forward on meta ids; an attribute found on ``meta`` afterwards was moved by the forward
    itself, by whichever method of whichever class (a subclass whose forward calls its parent's, a class
    with no readable source). Whether that forward finishes does not matter: what it moved is what
    counts. Memoised on the subject; empty when the model cannot be copied.
    """
    if "moved by forward" in s.memo:
        return s.memo["moved by forward"]
    moved: set[str] = set()
    s.memo["moved by forward"] = moved
    candidates = [where for where, value in s.attributes if isinstance(value, torch.Tensor)
                  or isinstance(value, (list, tuple, dict)) and any(isinstance(v, torch.Tensor) for v in
                                                                    (value.values() if isinstance(value, dict) else value))]
    if not candidates:
        return moved
    try:
        twin = copy.deepcopy(s.model).to("meta")
    except Exception:
        return moved
    try:
        with mode(twin, False), torch.no_grad():
            Forward(twin, s.forward.interface)(s.xs[:1, :4].to("meta"))
    except Exception:
        pass  # a forward that cannot finish on meta (a .item(), a data-dependent shape) moved what it moved
    for where in candidates:
        value = setup_tables.attribute_at(twin, where)
        if value is None:
            continue
        items = list(value.values()) if isinstance(value, dict) else list(value) if isinstance(value, (list, tuple)) \
            else [value]
        tensors = [t for t in items if isinstance(t, torch.Tensor)]
        if tensors and all(t.device.type == "meta" for t in tensors):
            moved.add(where)
    return moved


def _kind(t: torch.Tensor) -> str:
    return f"a {t.dtype} tensor {tuple(t.shape)}".replace("torch.", "")


def _left_behind(model: nn.Module, where: str) -> str:
    """What ``.to(torch.float64)`` does to a plain tensor attribute, measured on a copy of the model."""
    try:
        twin = copy.deepcopy(model).to(torch.float64)
        value = setup_tables.attribute_at(twin, where)
        if not isinstance(value, torch.Tensor):
            value = next(v for v in (value.values() if isinstance(value, dict) else value)
                         if isinstance(v, torch.Tensor))
        weight = next(twin.parameters())
        return f"parameters {weight.dtype}, {where} still {value.dtype}; not in state_dict(): " \
               f"{where not in twin.state_dict()}".replace("torch.", "")
    except Exception as exc:  # a model that cannot be copied: say so, the verdict stands
        return f"not measured (copying the model raised {type(exc).__name__})"


def tie(s: Subject) -> Link:
    """TIE: a head that starts equal to the token table must *be* the token table.

    Seed 004, "Weight tying". Judged on the model as the factory built it
    (``Subject.tie``): a head whose values equal the table's while it is a
    different Parameter is a tie that did not happen — a copy, or a
    ``load_state_dict(..., assign=True)`` that replaced the shared Parameter
    with two (they share storage until the optimizer or ``.to()`` splits
    them; each gets its own gradient). A config flag that declares a tie
    over a head with values of its own (a head replaced for fine-tuning) is
    a warning, not a failure: the flag is stale, the model may be right.
    """
    t = s.tie
    if t["table"] is None or t["head"] is None:
        missing = "token table" if t["table"] is None else "output head (a Linear to V)"
        tables = [n for n, m in s.model.named_modules() if isinstance(m, nn.Embedding)]
        found = (f"; the nn.Embedding modules are {', '.join(tables[:3])}" if t["table"] is None and tables else
                 f"; {type(s.model).__name__} holds no nn.Embedding" if t["table"] is None else
                 f"; no nn.Linear in {type(s.model).__name__} has {s.V} outputs")
        return Link("TIE", "skip", f"no {missing} found to compare{found}")
    pair = f"{t['head']}.weight is {t['table']}.weight"
    evidence = [["head / table", f"{t['head']} / {t['table']}"], ["same Parameter", str(t["same"])],
                ["equal values at build", str(t["equal"])], ["same storage", str(t["shared"])],
                ["declared", t["declared"] or "no flag"]]
    if t["same"]:
        return Link("TIE", "ok", f"tied: {pair}", evidence)
    if t["equal"]:
        how = ("two Parameters over one storage (load_state_dict(..., assign=True) breaks a tie this way)"
               if t["shared"] else "a copy of the table")
        return Link("TIE", "FAIL", f"{pair} is False: the head starts equal to the table but is {how}", evidence,
                    advice=f"tie them: {t['head']}.weight = {t['table']}.weight, after any load_state_dict, so "
                           "both names hold one Parameter")
    link = Link("TIE", "ok", "untied: the head and the token table are separate matrices", evidence)
    if t["declared"]:  # a warning: the verdict names the stale flag
        link.verdict += f"; {t['declared']} is set all the same"
        link.warnings.append(f"{t['declared']} is true but {pair} is False and their values differ "
                             "(a replaced head? then the flag is stale)")
    return link
