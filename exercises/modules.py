"""Checks for the set ``modules`` — registration, containers, optimizer identity
(seed 000 §3 and §4).

Each function measures the subject as it is (clean or faulted copy) and
returns a :class:`~exercises.outcome.Measurement`. Engine checks use the seed
configuration: n_layer=4, n_head=4, n_embd=128, block_size=64, V=37.
"""

import torch
from torch import nn

from exercises.context import Context
from exercises.outcome import Measurement, first_line, note, table


def _batch(ctx: Context, config, B: int = 2, T: int = 16):
    """A random (B, T) batch of token ids and next-token targets on ctx.device."""
    g = torch.Generator().manual_seed(ctx.seed)
    data = torch.randint(0, config.vocab_size, (B, T + 1), generator=g)
    return data[:, :-1].contiguous().to(ctx.device), data[:, 1:].contiguous().to(ctx.device)


def _count(module: nn.Module) -> int:
    """Scalars in the parameters ``module`` registers (a shared one counts once)."""
    return sum(p.numel() for p in {id(p): p for p in module.parameters()}.values())


def plain_list(ctx: Context) -> Measurement:
    """Count the engine's unique parameters and see whether a block learns.

    Seed configuration (C = 128, 4 blocks, V = 37). Observed: the number of
    unique parameter scalars ``model.parameters()`` yields. Evidence: the
    count in ``blocks`` and outside it, the ``blocks.*`` keys in ``state_dict``, and one
    AdamW step on a (2, 16) batch — does block 0's qkv weight get a gradient,
    and does it move? Seed 000 §3, "Containers are part of model structure".
    """
    model = ctx.gpt("seed")
    config = model.config
    # The tables, the final norm and the head are one row: what a LayerNorm owns is another exercise's question.
    outside = [(name, child) for name, child in model.named_children() if name != "blocks"]
    tied = "lm_head shares wte.weight" if model.lm_head.weight is model.wte.weight else ""
    rows = [[", ".join(name for name, _ in outside), ", ".join(type(child).__name__ for _, child in outside),
             _count(nn.ModuleList(child for _, child in outside)), tied]]
    if isinstance(model.blocks, nn.Module):
        rows.append(["blocks", type(model.blocks).__name__, _count(model.blocks), ""])
    else:
        rows.append(["(blocks)", type(model.blocks).__name__, "-", f"not a child; holds {len(model.blocks)} Blocks"])
    total = model.num_params()
    block_keys = sum(1 for k in model.state_dict() if k.startswith("blocks."))

    qkv = model.blocks[0].attn.qkv.weight
    before = qkv.detach().clone()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    idx, targets = _batch(ctx, config)
    try:
        _, loss = model(idx, targets)
        loss.backward()
        optimizer.step()
        step = f"loss {loss.item():.4f}"
    except Exception as exc:  # with the blocks left behind on another device
        step = first_line(exc, limit=150)
    has_grad = qkv.grad is not None
    moved = not torch.equal(qkv.detach(), before)
    evidence = [
        table("Parameters the model's children register", ["children", "types", "params", "note"], rows),
        table("What the model knows about", ["quantity", "value"],
              [["type of model.blocks", type(model.blocks).__name__],
               ["unique parameters", total],
               ["state_dict keys under blocks.", block_keys],
               ["tensors handed to AdamW", len(optimizer.param_groups[0]["params"])]]),
        table("One AdamW step (lr 0.01) on a (2, 16) batch", ["quantity", "value"],
              [["forward + backward", step],
               ["blocks[0].attn.qkv.weight has a grad", has_grad],
               ["blocks[0].attn.qkv.weight moved", moved]]),
    ]
    if not isinstance(model.blocks, nn.Module):
        evidence.append(note("The forward pass still loops over the blocks, so they compute and even receive "
                             "gradients; nothing else (parameters, state_dict, .to(), the optimizer) sees them."))
    return Measurement(observed=float(total), evidence=evidence)


def unregistered_tensor(ctx: Context) -> Measurement:
    """Does ``gain`` get a gradient, and does one SGD step move it?

    GainLinear(4, 3) on a batch of 8 (seeded), MSE against random targets,
    SGD(model.parameters(), lr=0.5). Observed: ``[gain has a grad, gain
    moved]``. Seed 000 §3, "A gradient is not proof that the optimizer will
    update a tensor".
    """
    from exercises.snippets.gain import GainLinear

    device = torch.device(ctx.device)
    with device:  # build every tensor of the module on the device, registered or not
        model = GainLinear(4, 3)
    gain = model.gain  # whatever object the module holds
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    g = torch.Generator().manual_seed(ctx.seed)
    x = torch.randn(8, 4, generator=g).to(device)
    y = torch.randn(8, 3, generator=g).to(device)
    before = gain.detach().clone()
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    has_grad = gain.grad is not None
    moved = not torch.equal(gain.detach(), before)
    held = any(p is gain for group in optimizer.param_groups for p in group["params"])
    names = [[name, tuple(p.shape)] for name, p in model.named_parameters()]
    evidence = [
        table("model.named_parameters()", ["name", "shape"], names),
        table("The three questions, for gain", ["question", "answer"],
              [["path from the loss (requires_grad)", gain.requires_grad],
               ["registered on the module", any(p is gain for p in model.parameters())],
               ["held by the optimizer", held]]),
        table("After backward and one SGD step (lr 0.5)", ["quantity", "value"],
              [["gain.grad", [round(v, 4) for v in gain.grad.tolist()] if has_grad else None],
               ["gain before", [round(v, 4) for v in before.tolist()]],
               ["gain after", [round(v, 4) for v in gain.detach().tolist()]],
               ["'gain' in state_dict", "gain" in model.state_dict()]]),
    ]
    if has_grad and not moved:
        evidence.append(note("Autograd found gain through the forward pass; the optimizer never had it."))
    return Measurement(observed=[has_grad, moved], evidence=evidence)


def replace_after_optimizer(ctx: Context) -> Measurement:
    """Re-initialise the head after the optimizer exists, then take one step.

    Classifier(4, 3) with SGD(model.parameters(), lr=0.5), then
    ``reinitialise_head``, then cross entropy on 8 seeded examples, backward
    and step. Observed: whether ``model.head.weight`` (the object the model
    holds now) kept its value. Seed 000 §3, "Optimizers remember objects, not
    attribute names".
    """
    from exercises.snippets.head_init import Classifier, reinitialise_head

    device = torch.device(ctx.device)
    model = Classifier(4, 3).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    original = model.head.weight
    reinitialise_head(model)
    weight = model.head.weight
    g = torch.Generator().manual_seed(ctx.seed)
    x = torch.randn(8, 4, generator=g).to(device)
    y = torch.randint(0, 3, (8,), generator=g).to(device)
    before = weight.detach().clone()
    body_before = model.body.weight.detach().clone()
    optimizer.zero_grad()
    torch.nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()
    moved = not torch.equal(weight.detach(), before)
    held = [p for group in optimizer.param_groups for p in group["params"]]
    evidence = [
        table("Who holds which object", ["question", "answer"],
              [["model.head.weight is the original object", weight is original],
               ["optimizer holds model.head.weight", any(p is weight for p in held)],
               ["optimizer holds the original object", any(p is original for p in held)]]),
        table("One SGD step (lr 0.5)", ["tensor", "has grad", "moved"],
              [["model.head.weight", weight.grad is not None, moved],
               ["model.body.weight", model.body.weight.grad is not None,
                not torch.equal(model.body.weight.detach(), body_before)]]),
    ]
    if not moved:
        evidence.append(note("The gradient landed on the new object; the optimizer only steps the objects it "
                             "was given, and the old one got no gradient, so nothing was updated."))
    return Measurement(observed=not moved, evidence=evidence)


def parameters_generator(ctx: Context) -> Measurement:
    """Run the two-pass parameter inventory on a small MLP.

    nn.Sequential(Linear(4, 8), ReLU, Linear(8, 2)): 4 parameter tensors,
    58 scalars. Observed: how many tensors the second pass visits. Seed 000
    §3, "Why does model.parameters() return a generator?".
    """
    from exercises.snippets.inventory import inventory

    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(ctx.device)
    report = inventory(model)
    refs = list(model.parameters())
    same_storage = all(a.data_ptr() == b.data_ptr() for a, b in zip(refs, model.parameters()))
    evidence = [
        table("inventory(model)", ["quantity", "value"],
              [["walked a", report["container"]], ["first pass: tensors", report["first_pass"]],
               ["second pass: tensors", report["second_pass"]], ["second pass: scalars", report["elements"]]]),
        table("What list(model.parameters()) holds", ["quantity", "value"],
              [["entries", len(refs)], ["same storage as the weights", same_storage],
               ["entries are the parameter objects", all(a is b for a, b in zip(refs, model.parameters()))]]),
    ]
    if report["second_pass"] == 0:
        evidence.append(note("The first pass used the generator up; the second loop started on an empty one "
                             "and raised nothing."))
    return Measurement(observed=float(report["second_pass"]), evidence=evidence)


def _services(ctx: Context, module: nn.Module) -> tuple[bool, bool, str, str]:
    """(in state_dict, follows .to(), tensor before, tensor after .to)."""
    in_state = "weights" in module.state_dict()
    before = f"{module.weights.dtype} on {module.weights.device.type}".replace("torch.", "")
    module.to(device=ctx.device, dtype=torch.float64)
    w = module.weights
    after = f"{w.dtype} on {w.device.type}".replace("torch.", "")
    follows = w.dtype == torch.float64 and w.device.type == torch.device(ctx.device).type
    return in_state, follows, before, after


def buffer_vs_attribute(ctx: Context) -> Measurement:
    """Which module services does the averaging matrix get?

    CausalAverage(block_size=4), built on the CPU in float32, then moved with
    ``.to(ctx.device, torch.float64)`` (on a CPU-only machine the dtype is
    what shows whether the tensor followed). Observed: one word — ``both``
    (in state_dict and follows .to()), ``saved`` (state_dict only),
    ``moved`` (.to() only) or ``neither``. Seed 000 §3, "Containers are part
    of model structure".
    """
    from exercises.snippets.causal_average import CausalAverage

    module = CausalAverage(block_size=4)
    in_state, follows, before, after = _services(ctx, module)
    x = torch.randn(2, 4, 3, dtype=torch.float64, device=ctx.device)
    try:
        y = module(x)
        forward = f"ok, {tuple(y.shape)} {str(y.dtype).replace('torch.', '')}"
    except Exception as exc:
        forward = first_line(exc, limit=150)
    word = {(True, True): "both", (True, False): "saved", (False, True): "moved", (False, False): "neither"}
    evidence = [
        table("What nn.Module does for the weights", ["question", "answer"],
              [["state_dict keys", ", ".join(module.state_dict()) or "(none)"],
               ["among model.parameters()", any(p is module.weights for p in module.parameters())],
               [f"before .to({ctx.device}, float64)", before], ["after", after]]),
        table("Forward after the move", ["input", "result"], [["(2, 4, 3) float64", forward]]),
    ]
    return Measurement(observed=word[(in_state, follows)], evidence=evidence)


def assign_tensor_to_param(ctx: Context) -> Measurement:
    """Call ``reinitialise_head`` on a Classifier(4, 3) and catch what it raises.

    Observed: the exception class name, or ``none``. Evidence: its first
    line, and what ``head.weight`` is afterwards. Seed 000 §3, "Optimizers
    remember objects, not attribute names".
    """
    from exercises.snippets.head_init import Classifier, reinitialise_head

    model = Classifier(4, 3).to(ctx.device)
    original = model.head.weight
    try:
        reinitialise_head(model)
        observed, message = "none", "no exception"
    except Exception as exc:
        observed, message = type(exc).__name__, first_line(exc, limit=150)
    w = model.head.weight
    evidence = [
        table("reinitialise_head(model)", ["quantity", "value"],
              [["raised", message],
               ["head.weight is a Parameter", isinstance(w, nn.Parameter)],
               ["head.weight is the original object", w is original],
               ["head.weight std (init asked 0.02)", round(w.detach().std().item(), 4)]]),
    ]
    if observed != "none":
        evidence.append(note("nn.Module.__setattr__ guards registered parameter names: only a Parameter or None "
                             "may replace one. The model keeps its old weight."))
    return Measurement(observed=observed, evidence=evidence)


def tie_weights(ctx: Context) -> Measurement:
    """Count the engine's unique parameters and follow the two (V, C) matrices.

    Seed configuration. Observed: unique parameter scalars. Evidence:
    identity and storage of ``wte.weight`` and ``lm_head.weight``, parameter
    and state_dict entries, and their largest difference before and after one
    AdamW step on a (2, 16) batch. Seed 000 §4, "Weight tying connects lookup
    and prediction"; seed 004, "Weight tying".
    """
    model = ctx.gpt("seed")
    config = model.config
    wte, head = model.wte.weight, model.lm_head.weight
    gap_before = (head - wte).abs().max().item()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    idx, targets = _batch(ctx, config)
    _, loss = model(idx, targets)
    loss.backward()
    optimizer.step()
    gap_after = (model.lm_head.weight - model.wte.weight).abs().max().item()
    total = model.num_params()
    evidence = [
        table("The token table and the output head", ["quantity", "value"],
              [["wte.weight", tuple(wte.shape)], ["lm_head.weight", tuple(head.shape)],
               ["same object", head is wte], ["same storage", head.data_ptr() == wte.data_ptr()]]),
        table("Counting", ["quantity", "value"],
              [["named_parameters() entries", len(list(model.named_parameters()))],
               ["state_dict keys", len(model.state_dict())],
               ["unique parameters", total]]),
        table("max |lm_head.weight - wte.weight|", ["when", "value"],
              [["after init", gap_before], ["after one AdamW step", gap_after]]),
    ]
    if head is not wte:
        evidence.append(note(f"Equal values at the start, two objects: V x C = {config.vocab_size} x "
                             f"{config.n_embd} = {config.vocab_size * config.n_embd} extra parameters, "
                             "and one AdamW step already pulls them apart."))
    return Measurement(observed=float(total), evidence=evidence)


def layernorm_params(ctx: Context) -> Measurement:
    """Count the parameters of the engine's final LayerNorm, ``ln_f``.

    Seed configuration, C = 128. Observed: the scalars ``ln_f`` registers.
    Evidence: its weight and bias, the three LayerNorm(C) variants for
    reference, and the whole model's count. Seed 000 §4, "Two temporary
    expansions, two different jobs".
    """
    model = ctx.gpt("seed")
    config = model.config
    C = config.n_embd
    ln = model.ln_f
    count = _count(ln)
    def shape(t):
        return tuple(t.shape) if t is not None else None

    reference = [["LayerNorm(C)", _count(nn.LayerNorm(C)), "2C"],
                 ["LayerNorm(C, bias=False)", _count(nn.LayerNorm(C, bias=False)), "C"],
                 ["LayerNorm(C, elementwise_affine=False)", _count(nn.LayerNorm(C, elementwise_affine=False)), "0"]]
    evidence = [
        table(f"The engine's ln_f (C = {C})", ["quantity", "value"],
              [["weight", shape(ln.weight)], ["bias", shape(ln.bias)], ["parameters", count],
               ["whole model, unique", model.num_params()]]),
        table(f"LayerNorm variants at C = {C}", ["constructor", "params", "rule"], reference),
        note("One scale and one shift per feature, shared by every batch element and position."),
    ]
    return Measurement(observed=count, evidence=evidence)


def linear_weight(ctx: Context) -> Measurement:
    """Read the weight shape of block 0's MLP expansion ``mlp.fc``.

    Seed configuration, C = 128. Observed: ``blocks[0].mlp.fc.weight.shape``.
    Evidence: every Linear in block 0 (in/out features, weight and bias
    shapes), whether ``fc(x) == x @ W.T + b``, and whether the model's forward
    runs. Seed 000 §4, "Read a transformer as a sequence of shape contracts".
    """
    model = ctx.gpt("seed")
    config = model.config
    block = model.blocks[0]
    rows = [[name, f"({m.in_features}, {m.out_features})", tuple(m.weight.shape),
             tuple(m.bias.shape) if m.bias is not None else None]
            for name, m in block.named_modules() if isinstance(m, nn.Linear)]
    fc = block.mlp.fc
    x = torch.randn(3, fc.in_features, device=ctx.device)
    with torch.no_grad():
        gap = (fc(x) - (x @ fc.weight.T + fc.bias)).abs().max().item()
    idx, _ = _batch(ctx, config)
    try:
        with torch.no_grad():
            logits, _ = model(idx)
        forward = f"ok, logits {tuple(logits.shape)}"
    except Exception as exc:
        forward = first_line(exc, limit=150)
    evidence = [
        table("Linear layers of block 0: nn.Linear(in, out)", ["name", "(in, out)", "weight", "bias"], rows),
        table("Checks", ["quantity", "value"],
              [["max |fc(x) - (x @ W.T + b)|", gap], ["model forward on (2, 16)", forward]]),
    ]
    return Measurement(observed=list(fc.weight.shape), evidence=evidence)


def head_divisibility(ctx: Context) -> Measurement:
    """Build and run an engine with C = 64 and H = 3 heads (64 is not a multiple of 3).

    The small engine's sizes with ``n_head=3``, then one forward on a
    random (2, 8) batch. Observed: the class name of the first exception,
    or ``"none"``. Evidence: where it was raised (building the config, or
    the forward pass) and its first line. Seed 004, "The final checklist"
    (n_embd % n_head == 0).
    """
    import traceback
    from pathlib import Path

    stage, raised, line, where = "config", "none", "built and ran", "-"
    try:
        model = ctx.gpt("small", n_head=3)
        stage = "forward"
        g = torch.Generator().manual_seed(ctx.seed)
        model(torch.randint(0, 37, (2, 8), generator=g).to(ctx.device))
        stage = "done"
    except Exception as exc:  # the observation is the exception itself
        raised, line = type(exc).__name__, first_line(exc, limit=110)
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        where = f"{Path(frame.filename).name}, in {frame.name}"
    evidence = [
        table("GPT with n_embd = 64, n_head = 3", ["quantity", "value"],
              [["64 // 3 (head size D)", 64 // 3], ["H * D", 3 * (64 // 3)], ["stage reached", stage],
               ["raised", raised], ["raised in", where]]),
        note(line),
    ]
    return Measurement(observed=raised, evidence=evidence)


def packed_qkv(ctx: Context) -> Measurement:
    """The engine's attention against a reference that reads the packed weight by its rows.

    One attention module (C = 64, H = 2, eval mode) of a 1-layer engine maps
    x ~ N(0, 1) of shape (2, 8, 64). The packed ``qkv`` Linear holds a
    (3C, C) weight: rows 0..C-1 make q, C..2C-1 make k, 2C..3C-1 make v (the
    q | k | v block order checkpoints rely on; GPT-2's stores it as a (C, 3C)
    Conv1D, transposed). The reference computes q, k, v
    from those row blocks and runs SDPA. Observed: a choice —
    ``a``: shapes kept, causal, different from the reference (1e-5);
    ``b``: shapes kept, causal, equal to it; ``c``: not causal;
    ``d``: an exception or a changed shape. Causality: changing x after
    position 3 must leave outputs 0..3 unchanged. Seed 000, section 4
    ("packed QKV"); seed 004, "The model: attention".
    """
    import torch.nn.functional as F

    from engine.model import merge_heads, split_heads

    model = ctx.gpt("small", n_layer=1).eval()
    attn = model.blocks[0].attn
    H, C = attn.n_head, model.config.n_embd
    g = torch.Generator().manual_seed(ctx.seed)
    x = torch.randn(2, 8, C, generator=g).to(ctx.device)
    later = x.clone()
    later[:, 4:] = torch.randn(2, 4, C, generator=g).to(ctx.device)
    try:
        with torch.no_grad():
            y = attn(x)  # (2, 8, C)
            y_later = attn(later)
    except Exception as exc:  # a packed split that cannot even run is an outcome
        return Measurement(observed="d", evidence=[note(first_line(exc, limit=120))])
    W = attn.qkv.weight  # (3C, C)
    with torch.no_grad():
        q, k, v = (split_heads(x @ W[i * C:(i + 1) * C].T, H) for i in range(3))  # (2, H, 8, D) each
        reference = attn.proj(merge_heads(F.scaled_dot_product_attention(q, k, v, is_causal=True)))
    gap = (y - reference).abs().max().item()
    past = (y_later[:, :4] - y[:, :4]).abs().max().item()
    if tuple(y.shape) != tuple(x.shape):
        observed = "d"
    elif past > 1e-5:
        observed = "c"
    else:
        observed = "b" if gap <= 1e-5 else "a"
    evidence = [
        table("Attention of block 0, x (2, 8, 64)", ["quantity", "value"],
              [["output shape", tuple(y.shape)], ["max |Δ| at 0..3 when x[4:] changes", past],
               ["max |Δ| against the row-block reference", gap]]),
        note("The reference reads the packed weight as [W_q; W_k; W_v], three blocks of C rows."),
    ]
    return Measurement(observed=observed, evidence=evidence)
