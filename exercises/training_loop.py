"""Checks for the set ``training``, part 5: the engine's loop and what a longer
run adds to it (seed 001, Part 6 and "In the real world"; seed 000 §8).

Each check drives ``engine.train`` (``train_step``, ``overfit_batch``,
``make_optimizer``, ``warmup_schedule``, the checkpoint pair) on an engine
GPT from ``ctx.gpt`` and measures what the step actually did: the learning
rate and gradient norm the optimizer saw (a step pre-hook), how far the
weights moved, and whether two routes reach the same weights.
"""

import io
import math
import warnings

import torch

from exercises.context import Context
from exercises.outcome import Measurement, note, series, table
from exercises.training_common import corpus, fixed_batch, part6_gpt


def _flat(model: torch.nn.Module) -> torch.Tensor:
    """Every parameter of ``model`` in one 1-D float64 vector (a tied matrix once)."""
    return torch.cat([p.detach().double().flatten() for p in model.parameters()])


def _random_batch(ctx: Context, V: int, B: int = 4, T: int = 16):
    """A random (B, T) batch of ids and their next-token targets on ctx.device."""
    g = torch.Generator().manual_seed(ctx.seed)
    data = torch.randint(0, V, (B, T + 1), generator=g)
    return data[:, :-1].contiguous().to(ctx.device), data[:, 1:].contiguous().to(ctx.device)


def train_step_gpt(ctx: Context) -> Measurement:
    """Seed 001, Part 6: the same ``train_step`` trains a tiny GPT.

    The engine GPT in the seed's configuration (V = 3, C = 16, one layer,
    2 heads, block 8, tied) reads the seed's two repeating sequences
    (0 1 2 0 1 2 ... and 1 2 0 1 2 0 ...), shifted into (2, 8) inputs and
    targets, and takes 80 ``engine.train.train_step`` updates with AdamW
    (lr 0.01, no weight decay). Observed: ``model.num_params()``, the unique
    parameters: 3,424 on the engine; the seed's 3,488 adds the qkv and
    output-projection biases (3C + C = 64) its attention has and the
    engine's lacks. Evidence: shapes, the loss before and after, how far the
    attention projection moved.
    """
    from engine.train import evaluate, make_optimizer, train_step

    model, x, y = part6_gpt(ctx)  # (2, 8) inputs and targets
    optimizer = make_optimizer(model, lr=0.01, weight_decay=0.0)
    before = evaluate(model, x, y)
    qkv = model.blocks[0].attn.qkv.weight
    qkv_start = qkv.detach().clone()
    curve = [train_step(model, optimizer, x, y) for _ in range(80)]
    after = evaluate(model, x, y)
    logits, _ = model(x)
    counted = model.num_params()
    named = sum(t.numel() for t in model.state_dict().values())
    evidence = [
        table("Shapes", ["tensor", "shape"], [
            ["inputs x", tuple(x.shape)], ["logits", tuple(logits.shape)], ["targets y", tuple(y.shape)]]),
        table("Parameters", ["count", "value"], [
            ["model.num_params()", f"{counted:,}"], ["every tensor in state_dict", f"{named:,}"],
            ["lm_head.weight is wte.weight", model.lm_head.weight is model.wte.weight],
            ["V x C of the shared table", model.config.vocab_size * model.config.n_embd]]),
        table("80 updates of train_step", ["quantity", "value"], [
            ["loss before", before], ["ln 3 (a uniform guess)", math.log(3)], ["loss after", after],
            ["max |change| of the qkv weight", (qkv.detach() - qkv_start).abs().max().item()]]),
        series("loss train_step returned at each update", curve, "nats"),
    ]
    if counted != named - model.config.vocab_size * model.config.n_embd:
        evidence.append(note("num_params disagrees with the unique count: the shared (V, C) table appears "
                             "twice in state_dict, once as wte.weight and once as lm_head.weight."))
    return Measurement(observed=int(counted), evidence=evidence)


def pre_update_loss(ctx: Context) -> Measurement:
    """Is the loss ``train_step`` returns the loss it stepped on?

    The small engine GPT, a random batch (4, 16), AdamW lr 3e-3. The loss at
    the starting weights is measured with ``evaluate`` (no dropout, so it is
    the training forward's loss too), one ``train_step`` runs, and the loss
    at the new weights is measured. Observed: True when the returned value
    is lower than the starting loss by more than 1e-6: a loss one update
    ahead of the weights it is logged for. Seed 001, "Parts 3 and 4".
    """
    from engine.train import evaluate, make_optimizer, train_step

    model = ctx.gpt("small")
    x, y = _random_batch(ctx, model.config.vocab_size)
    optimizer = make_optimizer(model, lr=3e-3)
    start = evaluate(model, x, y)
    returned = train_step(model, optimizer, x, y)
    updated = evaluate(model, x, y)
    same = abs(returned - start) <= 1e-6
    lower = returned < start - 1e-6
    evidence = [
        table("One train_step", ["loss", "nats"], [
            ["at the starting weights (evaluate)", start], ["returned by train_step", returned],
            ["at the updated weights (evaluate)", updated]]),
        table("Facts", ["question", "answer"], [
            ["returned == starting loss (1e-6)", same],
            ["returned == updated loss (1e-6)", abs(returned - updated) <= 1e-6]]),
    ]
    if not same:
        evidence.append(note("The returned loss was computed after the step: it belongs to weights the "
                             "gradient was never taken at, and a log of it is one update ahead of its label."))
    return Measurement(observed=bool(lower), evidence=evidence)


OVERFIT_STEPS = 40


def optimizer_in_loop(ctx: Context) -> Measurement:
    """``engine.train.overfit_batch`` against a loop whose AdamW is built once.

    Two identical small engine GPTs and one fixed corpus batch (4, 32): one
    runs ``overfit_batch(steps=40, lr=3e-3)``; the other runs ``train_step``
    40 times with one ``make_optimizer(lr=3e-3)`` built before the loop.
    Observed: how many recorded losses, from the first, the two curves share
    (within 1e-6) before they first part; 40 when they agree at every step.
    Evidence adds the size of the update in the last step relative to lr: a
    fresh AdamW's first step moves every weight by about lr. Seed 001,
    "Parts 3 and 4" (construct the optimizer once, outside the loop).
    """
    from engine.train import make_optimizer, overfit_batch, train_step

    data, tokenizer = corpus(ctx)
    x, y = fixed_batch(ctx, data, 4, 32)
    subject = ctx.gpt("small", vocab_size=tokenizer.vocab_size)
    reference = ctx.gpt("small", vocab_size=tokenizer.vocab_size)
    last_moves = {}  # name -> mean |Δw| between the last two forward passes

    def watch(name: str, model):
        previous = {}

        def before_forward(_module, _args) -> None:
            w = _flat(model)
            if "w" in previous:
                last_moves[name] = (w - previous["w"]).abs().mean().item()
            previous["w"] = w
        return model.register_forward_pre_hook(before_forward)

    hooks = [watch("subject", subject), watch("reference", reference)]
    ctx.progress(0.1, "overfit_batch")
    curve = overfit_batch(subject, x, y, steps=OVERFIT_STEPS, lr=3e-3)
    ctx.progress(0.55, "the reference loop")
    optimizer = make_optimizer(reference, lr=3e-3)
    reference.train()
    ref_curve = [train_step(reference, optimizer, x, y) for _ in range(OVERFIT_STEPS)]
    for h in hooks:
        h.remove()
    gap = max(abs(a - b) for a, b in zip(curve, ref_curve))
    same = gap <= 1e-6
    shared = next((i for i, (a, b) in enumerate(zip(curve, ref_curve)) if abs(a - b) > 1e-6), len(curve))
    evidence = [
        series("overfit_batch: loss before each step", curve, "nats"),
        series("AdamW built once: loss before each step", ref_curve, "nats"),
        table(f"After {OVERFIT_STEPS} steps", ["quantity", "overfit_batch", "built once"], [
            ["last loss", curve[-1], ref_curve[-1]],
            ["mean |Δw| between the last two forwards / lr", last_moves["subject"] / 3e-3,
             last_moves["reference"] / 3e-3]]),
        table("Facts", ["question", "answer"], [["max |Δ loss| between the curves", gap], ["same (1e-6)", same],
                                                ["losses shared before they part (graded)", shared]]),
    ]
    if not same:
        evidence.append(note("A fresh AdamW has no running averages: its first step divides the gradient by "
                             "its own magnitude, so every weight moves by about lr, whatever the gradient. "
                             "Rebuilt every step, every step is a first step."))
    return Measurement(observed=shared, evidence=evidence)


def decay_split(ctx: Context) -> Measurement:
    """Which tensors AdamW's weight decay shrinks when the optimizer splits decay by rank.

    The small engine GPT; ``make_optimizer(lr=0.01, weight_decay=0.1,
    split_decay=True)``. To watch decay alone, the loss is 0 x the logits'
    sum: every gradient is zero, so Adam's own update is zero and only the
    decoupled decay moves anything. 100 steps. Observed: True when the
    LayerNorm gains (which start at 1) have shrunk. Evidence: each group's
    size against (1 - lr * wd)^100 = 0.9048. Seed 000 §8 (weight decay by
    dimensionality is a convention).
    """
    from engine.train import make_optimizer

    model = ctx.gpt("small")
    x, _ = _random_batch(ctx, model.config.vocab_size)
    lr, wd, steps = 0.01, 0.1, 100
    optimizer = make_optimizer(model, lr=lr, weight_decay=wd, split_decay=True)
    gains = [m.weight for m in model.modules() if isinstance(m, torch.nn.LayerNorm)]
    matrices = [p for p in model.parameters() if p.dim() >= 2]
    gains_start = torch.cat([g.detach().flatten() for g in gains]).mean().item()
    matrix_start = torch.cat([p.detach().flatten() for p in matrices]).norm().item()
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        (0.0 * model(x)[0].sum()).backward()  # every gradient exists and is zero
        optimizer.step()
    gains_end = torch.cat([g.detach().flatten() for g in gains]).mean().item()
    matrix_end = torch.cat([p.detach().flatten() for p in matrices]).norm().item()
    shrunk = gains_end < gains_start - 1e-6
    evidence = [
        table("Decay groups the optimizer holds", ["group", "tensors", "weight_decay"],
              [[i, len(g["params"]), g["weight_decay"]] for i, g in enumerate(optimizer.param_groups)]),
        table(f"{steps} steps with zero gradients (lr {lr}, wd {wd})", ["tensors", "start", "end", "end / start"], [
            ["LayerNorm gains (mean)", gains_start, gains_end, gains_end / gains_start],
            ["matrices (norm)", matrix_start, matrix_end, matrix_end / matrix_start]]),
        note(f"Decoupled decay multiplies a decayed tensor by (1 - lr * wd) = {1 - lr * wd:g} per step: "
             f"{(1 - lr * wd) ** steps:.4f} after {steps} steps."),
    ]
    return Measurement(observed=bool(shrunk), evidence=evidence)


def clip_order(ctx: Context) -> Measurement:
    """How long is the update ``train_step`` makes with ``max_norm=1``?

    A model with one parameter vector w = (0, 0) whose loss is 3·w0 + 4·w1,
    so its gradient is (3, 4), of norm 5; SGD with lr 1, so the update is
    the gradient the optimizer reads. Observed: the length of the update,
    rounded to 4 decimals (1.0 when clipping runs before the step). Evidence
    repeats the experiment on the small engine GPT (max_norm 0.5, SGD lr 1):
    the gradient norm the optimizer read (a step pre-hook) and the update's
    length. Seed 001, "In the real world" (clipping limits the gradient norm
    before the optimizer uses it).
    """
    from engine.train import train_step

    class Slope(torch.nn.Module):
        """loss = 3·w0 + 4·w1: a gradient of (3, 4) wherever w is."""

        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(2, dtype=torch.float64))

        def forward(self, x, targets=None):
            slope = torch.tensor([3.0, 4.0], dtype=torch.float64, device=self.w.device)
            return None, (self.w * slope).sum()

    rows = []
    lengths = []
    for name, model, max_norm in (("w with gradient (3, 4)", Slope().to(ctx.device), 1.0),
                                  ("small engine GPT", ctx.gpt("small"), 0.5)):
        optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
        seen = []
        optimizer.register_step_pre_hook(lambda opt, *_: seen.append(torch.cat(
            [p.grad.double().flatten() for group in opt.param_groups for p in group["params"]
             if p.grad is not None]).norm().item()))
        x, y = _random_batch(ctx, 37)
        start = _flat(model)
        train_step(model, optimizer, x, y, max_norm=max_norm)
        length = (_flat(model) - start).norm().item()
        lengths.append(length)
        rows.append([name, max_norm, f"{seen[0]:.6g}", f"{length:.6g}"])
    evidence = [
        table("One train_step with clipping, SGD lr 1", ["model", "max_norm", "grad norm read", "update length"],
              rows),
    ]
    if lengths[0] > 1.0 + 1e-3:
        evidence.append(note("The optimizer read the unclipped gradient: clipping ran after the step, on "
                             "gradients nothing will use again, and the next zero_grad discards them."))
    return Measurement(observed=round(lengths[0], 4), evidence=evidence)


def schedule_order(ctx: Context) -> Measurement:
    """The learning rate each of the first five updates ran at, under a 4-step warm-up.

    The small engine GPT, a random batch (4, 16), AdamW (base lr 1e-3) with
    ``warmup_schedule(optimizer, 4)``, five ``train_step`` calls with the
    scheduler. A step pre-hook reads the learning rate the optimizer uses.
    Observed: those five rates divided by the base rate. Evidence adds any
    warning PyTorch raised. Seed 001, "In the real world".
    """
    from engine.train import make_optimizer, train_step, warmup_schedule

    model = ctx.gpt("small")
    x, y = _random_batch(ctx, model.config.vocab_size)
    base = 1e-3
    optimizer = make_optimizer(model, lr=base)
    scheduler = warmup_schedule(optimizer, 4)
    used = []
    optimizer.register_step_pre_hook(lambda opt, *_: used.append(opt.param_groups[0]["lr"]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(5):
            train_step(model, optimizer, x, y, scheduler=scheduler)
    ratios = [round(lr / base, 9) for lr in used]
    said = [str(w.message).split(". ")[0] + "." for w in caught if "lr_scheduler" in str(w.message)]
    evidence = [
        table("The rate each update used", ["update", "lr", "lr / base"],
              [[k, f"{lr:.6g}", r] for k, (lr, r) in enumerate(zip(used, ratios))]),
        table("Expected from the schedule: min(1, (k + 1) / 4)", ["update", "lr / base"],
              [[k, min(1.0, (k + 1) / 4)] for k in range(5)]),
        note("PyTorch warned: " + said[0] if said else "PyTorch raised no scheduler warning."),
    ]
    return Measurement(observed=ratios, evidence=evidence)


RESUME_STEPS = (4, 4)


def checkpoint_resume(ctx: Context) -> Measurement:
    """Does a run resumed from a checkpoint reach the weights of an uninterrupted run?

    The small engine GPT, AdamW lr 3e-3 (``make_optimizer``) with a 3-step
    warm-up, 8 fixed corpus batches (4, 32), one per step. Straight: 8
    ``train_step`` calls. Resumed: 4 steps, ``save_checkpoint`` to memory, a
    freshly built model, optimizer and schedule, ``load_checkpoint``, then
    the last 4 steps on the same batches. A step pre-hook on each optimizer
    records the learning rate every update actually ran at. Observed: True
    when the final weights agree within 1e-6. Seed 001, "In the real world"
    (resuming needs the optimizer state, the schedule position and the data
    position).

    A weights-only load loses two things at once: AdamW's running averages
    and step count (they restart at zero), and the learning rate the saved
    optimizer had reached. A freshly built optimizer under a fresh LambdaLR
    sits at lr * λ(0) (here 0.001); loading the schedule's own state moves
    its counter but does not rewrite the optimizer's rate, so the first
    resumed update runs at 0.001 and the next ``scheduler.step()`` sets
    0.003: [0.001, 0.003, 0.003, 0.003] where the straight run has 0.003
    throughout.
    """
    from engine.data import get_batch
    from engine.train import load_checkpoint, make_optimizer, save_checkpoint, train_step, warmup_schedule

    data, tokenizer = corpus(ctx)
    g = torch.Generator().manual_seed(ctx.seed)
    batches = [get_batch(data, 4, 32, generator=g) for _ in range(sum(RESUME_STEPS))]

    def fresh(rates: list):
        model = ctx.gpt("small", vocab_size=tokenizer.vocab_size)
        optimizer = make_optimizer(model, lr=3e-3)
        optimizer.register_step_pre_hook(lambda opt, args, kwargs: rates.append(opt.param_groups[0]["lr"]))
        return model, optimizer, warmup_schedule(optimizer, 3)

    straight_rates, resumed_rates = [], []
    model, optimizer, scheduler = fresh(straight_rates)
    straight = [train_step(model, optimizer, x, y, scheduler=scheduler) for x, y in batches]
    straight_weights = _flat(model)
    ctx.progress(0.5, "the resumed run")

    model, optimizer, scheduler = fresh(resumed_rates)
    first, rest = batches[:RESUME_STEPS[0]], batches[RESUME_STEPS[0]:]
    resumed = [train_step(model, optimizer, x, y, scheduler=scheduler) for x, y in first]
    buffer = io.BytesIO()
    save_checkpoint(buffer, model, optimizer, len(first), scheduler)
    size = buffer.tell()
    buffer.seek(0)
    model, optimizer, scheduler = fresh(resumed_rates)
    step = load_checkpoint(buffer, model, optimizer, scheduler)
    restored_state = sum(1 for s in optimizer.state.values() if s)
    lr_loaded = optimizer.param_groups[0]["lr"]
    resumed += [train_step(model, optimizer, x, y, scheduler=scheduler) for x, y in rest]
    gap = (_flat(model) - straight_weights).abs().max().item()
    same = gap <= 1e-6
    evidence = [
        table("Each update: its learning rate and the loss train_step returned",
              ["update", "lr straight / resumed", "loss straight", "loss resumed"],
              [[k, f"{ra:.6g} / {rb:.6g}", f"{a:.6f}", f"{b:.6f}"]
               for k, (ra, rb, a, b) in enumerate(zip(straight_rates, resumed_rates, straight, resumed))]),
        table("The checkpoint", ["quantity", "value"], [
            ["bytes written", f"{size:,}"], ["step read back", step],
            ["tensors with optimizer state after loading", f"{restored_state} of {len(list(model.parameters()))}"],
            ["lr just after loading (before update 4)", f"{lr_loaded:.6g}"],
            ["lr of the resumed updates 4-7", ", ".join(f"{r:.6g}" for r in resumed_rates[RESUME_STEPS[0]:])]]),
        table("Final weights", ["quantity", "value"], [["max |Δ| resumed vs straight", gap], ["same (1e-6)", same]]),
    ]
    parted = next((k for k, (a, b) in enumerate(zip(straight, resumed)) if abs(a - b) > 1e-6), None)
    if not same:
        evidence.append(note(f"Two things were lost with the optimizer's state. AdamW restarted from empty "
                             f"running averages and a step count of 0, so update {RESUME_STEPS[0]}, the first "
                             f"after the resume, was a first step; and the fresh optimizer sat at lr · λ(0) = "
                             f"{lr_loaded:.6g}, which the schedule's load does not rewrite, so that update also "
                             f"ran at the warm-up's first rate. The losses part from update {parted} on, the "
                             f"first computed at its result."))
    return Measurement(observed=bool(same), evidence=evidence)
