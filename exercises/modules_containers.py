"""Checks for the set ``modules``, part 2: containers, hooks, frozen layers and
uninitialised parameters (seed 000 §3 and §7).

What ``nn.Module`` registers and runs for you: a ParameterList against a
plain list, Sequential against ModuleList, ``model(x)`` against
``model.forward(x)``; what ``requires_grad_(False)`` means to an optimizer;
and a parameter allocated with ``torch.empty``.
"""

import torch
from torch import nn

from exercises.context import Context
from exercises.outcome import Measurement, first_line, note, table


def parameter_list(ctx: Context) -> Measurement:
    """Count the parameter tensors a ``gain_bank.GainBank(C=8, stages=3)`` registers.

    Observed: ``len(list(bank.parameters()))``. Evidence: the state_dict
    keys, and whether one AdamW step (lr 0.1) on a loss through the bank
    moves the gains. Seed 000 §3 ("Use ParameterList or ParameterDict for
    parameters").
    """
    from exercises.snippets.gain_bank import GainBank

    torch.manual_seed(ctx.seed)
    bank = GainBank(8, stages=3).to(ctx.device)
    registered = list(bank.parameters())
    g = torch.Generator().manual_seed(ctx.seed)
    x = torch.randn(4, 8, generator=g).to(ctx.device)
    before = [p.detach().clone() for p in bank.gains]
    if registered:
        optimizer = torch.optim.AdamW(registered, lr=0.1)
        optimizer.zero_grad(set_to_none=True)
        (bank(x) ** 2).mean().backward()
        optimizer.step()
        moved = any(not torch.equal(p.detach(), b) for p, b in zip(bank.gains, before))
        step = "one AdamW step taken"
    else:
        moved, step = False, "no optimizer: AdamW refuses an empty parameter list"
        try:
            torch.optim.AdamW(registered, lr=0.1)
        except Exception as exc:
            step = first_line(exc, limit=90)
    evidence = [
        table("GainBank(C=8, stages=3)", ["quantity", "value"], [
            ["type(bank.gains)", type(bank.gains).__name__], ["tensors in bank.gains", len(bank.gains)],
            ["parameters() yields", len(registered)], ["state_dict keys", ", ".join(bank.state_dict()) or "none"]]),
        table("Training", ["question", "answer"], [["optimizer", step], ["gains moved", moved]]),
    ]
    return Measurement(observed=len(registered), evidence=evidence)


def sequential_vs_modulelist(ctx: Context) -> Measurement:
    """Call the small engine GPT (2 blocks in an ``nn.ModuleList``) on a batch of ids (4, 8).

    The subject is ``GPT.forward``'s loop over ``self.blocks``. Observed:
    the exception class the call raises, or ``"none"``. Evidence: the
    container's type, the blocks and parameters it registered (the same
    either way), and the call's outcome. The subject used to be a snippet
    stack of Linear layers held in a Sequential; the engine's blocks are the
    case the seed names, since each needs its cache and offset. Seed 000 §3
    ("Sequential adds another behavior: it defines an ordered chain of
    forward calls").
    """
    model = ctx.gpt("small")
    g = torch.Generator().manual_seed(ctx.seed)
    idx = torch.randint(0, model.config.vocab_size, (4, 8), generator=g).to(ctx.device)
    try:
        with torch.no_grad():
            logits, _ = model(idx)
        observed, outcome = "none", f"ran: logits {tuple(logits.shape)}"
    except Exception as exc:  # the missing forward is the observation
        observed, outcome = type(exc).__name__, first_line(exc, limit=110)
    evidence = [
        table("The small engine GPT, batch (4, 8)", ["quantity", "value"], [
            ["type(model.blocks)", type(model.blocks).__name__], ["blocks registered", len(model.blocks)],
            ["parameter scalars in the blocks", f"{sum(p.numel() for p in model.blocks.parameters()):,}"],
            ["model(idx)", outcome]]),
    ]
    return Measurement(observed=observed, evidence=evidence)


def frozen_param(ctx: Context) -> Measurement:
    """Freeze the first layer with ``freeze.freeze``, then take one AdamW step over every parameter.

    A two-layer model, Linear(4, 4) then Linear(4, 3), float64; AdamW over
    ``model.parameters()`` (lr 0.1, weight_decay 0.1) and one step on a
    cross entropy. Observed: ``[first.weight.grad is None, first.weight
    moved]``. Seed 000 §3 ("A registered parameter may also be unused in a
    particular forward pass, or frozen"); seed 001, "Backward and update are
    different operations" (a None gradient is skipped).
    """
    from exercises.snippets.freeze import freeze

    torch.manual_seed(ctx.seed)
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 3)).double().to(ctx.device)
    first = model[0]
    freeze(first)
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.1, weight_decay=0.1)
    g = torch.Generator().manual_seed(ctx.seed)
    x = torch.randn(6, 4, generator=g, dtype=torch.float64).to(ctx.device)
    y = torch.randint(0, 3, (6,), generator=g).to(ctx.device)
    before = first.weight.detach().clone()
    last_before = model[1].weight.detach().clone()
    optimizer.zero_grad(set_to_none=True)
    torch.nn.functional.cross_entropy(model(x), y).backward()
    optimizer.step()
    grad_none = first.weight.grad is None
    moved = not torch.equal(first.weight.detach(), before)
    evidence = [
        table("The first layer after one step", ["question", "answer"], [
            ["weight.requires_grad", first.weight.requires_grad], ["first.training", first.training],
            ["weight.grad is None", grad_none], ["weight moved", moved],
            ["max |change|", (first.weight.detach() - before).abs().max().item()]]),
        table("For comparison, the second layer", ["question", "answer"], [
            ["weight.grad is None", model[1].weight.grad is None],
            ["weight moved", not torch.equal(model[1].weight.detach(), last_before)]]),
        table("The optimizer", ["quantity", "value"], [
            ["parameters it holds", sum(len(gr["params"]) for gr in optimizer.param_groups)],
            ["parameters with state after the step", sum(1 for s in optimizer.state.values() if s)]]),
    ]
    return Measurement(observed=[bool(grad_none), bool(moved)], evidence=evidence)


def forward_bypasses_hooks(ctx: Context) -> Measurement:
    """Count forward-hook calls while ``probe.logits_of`` reads the small engine GPT's logits.

    Forward hooks count calls on the model itself and on ``blocks[0]``; the
    probe reads logits for a random batch (2, 16) once. Observed: the number
    of times the model's own hook ran. Seed 000 §3 ("directly calling
    forward bypasses the module's call machinery, including relevant
    hooks").
    """
    from exercises.snippets.probe import logits_of

    model = ctx.gpt("small").eval()
    calls = {"model": 0, "blocks[0]": 0}

    def counter(name):
        def hook(_module, _inputs, _output):
            calls[name] += 1
        return hook

    handles = [model.register_forward_hook(counter("model")),
               model.blocks[0].register_forward_hook(counter("blocks[0]"))]
    idx = torch.randint(0, model.config.vocab_size, (2, 16),
                        generator=torch.Generator().manual_seed(ctx.seed)).to(ctx.device)
    try:
        logits = logits_of(model, idx)
    finally:
        for h in handles:
            h.remove()
    evidence = [
        table("Forward hooks during one logits_of call", ["hook on", "calls"],
              [["the model", calls["model"]], ["blocks[0]", calls["blocks[0]"]]]),
        table("The result", ["quantity", "value"], [["logits shape", str(tuple(logits.shape))]]),
    ]
    if calls["model"] == 0:
        evidence.append(note("model.forward(idx) skipped nn.Module.__call__, so the model's own hooks never "
                             "ran; inside forward the blocks are still called as block(x), so theirs did."))
    return Measurement(observed=calls["model"], evidence=evidence)


def empty_init(ctx: Context) -> Measurement:
    """Build ``positions.PositionTable(block_size=64, C=128)``.

    Observed: the exception class construction raises, or ``"none"``.
    Evidence: the table's statistics when it builds, and for contrast the
    statistics of a fresh ``torch.empty(64, 128)`` (whatever memory held:
    shown, never graded). Seed 000 §7 ("A positional parameter created with
    torch.empty has allocated storage but no meaningful initialization").
    """
    from exercises.snippets.positions import PositionTable

    torch.manual_seed(ctx.seed)
    try:
        table_ = PositionTable(64, 128).to(ctx.device)
        w = table_.weight.detach()
        observed, outcome = "none", f"built: mean {w.mean().item():.4f}, std {w.std().item():.4f}"
    except Exception as exc:  # the misspelt initializer is the observation
        observed, outcome = type(exc).__name__, first_line(exc, limit=110)
    raw = torch.empty(64, 128)
    finite = bool(torch.isfinite(raw).all())
    spread = f"min {raw.min().item():.3g}, max {raw.max().item():.3g}" if finite else "holds non-finite values"
    evidence = [
        table("PositionTable(64, 128)", ["quantity", "value"], [
            ["construction", outcome], ["nn.init has normal_", hasattr(nn.init, "normal_")],
            ["nn.init has normalize_", hasattr(nn.init, "normalize_")]]),
        table("A fresh torch.empty(64, 128), unfilled (varies from run to run)", ["quantity", "value"], [
            ["all zeros", bool((raw == 0).all())], ["values", spread]]),
    ]
    return Measurement(observed=observed, evidence=evidence)


def empty_unfilled(ctx: Context) -> Measurement:
    """Build ``positions.PositionTable(block_size=64, C=128)`` and test whether it was initialised.

    Observed: whether the table's standard deviation lies in [0.015,
    0.025], as ``nn.init.normal_(std=0.02)`` gives for 8,192 draws (within
    a few tenths of a percent). An unfilled ``torch.empty`` holds whatever
    the memory held: a fresh allocation here holds zeros (std 0), elsewhere
    old values or non-finite garbage; its values vary from run to run and
    are never shown. The test is not proof of a fill: memory a freed
    N(0, 0.02) tensor of the same size left behind passes it (the hints
    teach that trap). Seed 000 §7 ("a positional parameter created with torch.empty has
    allocated storage but no meaningful initialization. Fill it before use").
    """
    from exercises.snippets.positions import PositionTable

    torch.manual_seed(ctx.seed)
    w = PositionTable(64, 128).to(ctx.device).weight.detach()
    std = w.std().item()
    initialised = bool(torch.isfinite(w).all()) and 0.015 <= std <= 0.025
    evidence = [
        table("PositionTable(64, 128)", ["quantity", "value"], [
            ["std in [0.015, 0.025]", initialised],
            ["what normal_(std=0.02) gives", torch.empty(64, 128).normal_(0.0, 0.02, generator=torch.Generator().manual_seed(ctx.seed)).std().item()]]),
    ]
    if not initialised:
        evidence.append(note("The table holds whatever memory held when it was allocated (its values are not shown: "
                             "they differ from run to run). Nothing raised: training would start from it silently."))
    return Measurement(observed=initialised, evidence=evidence)


def module_dict(ctx: Context) -> Measurement:
    """``task_heads.TaskHeads(C=8, {"next": 5, "sentiment": 2})`` converted with ``.double()``, then run.

    The model is built in float32, converted with ``model.double()`` (as a
    float64 gradient check would), and fed a float64 (4, 8) batch. Observed:
    the class name of the exception the forward raises, or ``"none"``.
    Evidence: the exception's first line, the dtype of the trunk's and each
    head's weight after ``.double()``, the parameter tensors ``parameters()``
    yields and the state_dict's keys. Seed 000 §3 ("Use ModuleList or
    ModuleDict for child modules").
    """
    from exercises.outcome import first_line
    from exercises.snippets.task_heads import TaskHeads

    torch.manual_seed(ctx.seed)
    model = TaskHeads(8, {"next": 5, "sentiment": 2}).to(ctx.device)
    model.double()
    g = torch.Generator().manual_seed(ctx.seed)
    x = torch.randn(4, 8, generator=g, dtype=torch.float64).to(ctx.device)
    try:
        shapes = {task: tuple(out.shape) for task, out in model(x).items()}
        error, said = "none", ", ".join(f"{t} {s}" for t, s in shapes.items())
    except Exception as exc:  # the outcome to report
        error, said = type(exc).__name__, first_line(exc, limit=90)
    dtypes = [["trunk.weight", str(model.trunk.weight.dtype).replace("torch.", "")]]
    dtypes += [[f"heads[{task!r}].weight", str(head.weight.dtype).replace("torch.", "")]
               for task, head in model.heads.items()]
    evidence = [
        table("model.double(), then a float64 (4, 8) batch", ["quantity", "value"], [
            ["forward", said], ["parameter tensors in parameters()", len(list(model.parameters()))],
            ["state_dict keys", ", ".join(model.state_dict())]]),
        table("Weight dtypes after model.double()", ["weight", "dtype"], dtypes),
    ]
    return Measurement(observed=error, evidence=evidence)
