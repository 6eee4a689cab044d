"""Checks for the set ``training``: what a run's state is beyond its weights
(seed 001, "Parts 3 and 4" and "In the real world"; seed 000 §3).

AdamW's decay is decoupled from its averages; an optimizer's state belongs
to the parameters it has been stepping; a resumed run needs the data
position and the random state as well as the model and the optimizer. Each
check reads the state itself (a weight's move, a step count, the weights
after a resume) instead of trusting a description of it.
"""

import io

import torch

from exercises.context import Context
from exercises.outcome import Measurement, note, table
from exercises.training_common import corpus


def decoupled_decay(ctx: Context) -> Measurement:
    """How far one step moves weights whose gradient is exactly 0.

    The small engine (block 32) takes one ``train_step`` on a batch of 4 × 8
    tokens with ``make_optimizer(lr=1e-3, weight_decay=0.1)``. Position
    rows 8 … 31 are never read, so their gradient is 0. AdamW shrinks them
    by lr · λ · w only; Adam with ``weight_decay`` adds λ · w to the gradient
    before its averages, and its first step normalises that to about lr.
    Observed: the largest |Δw| over those rows, in units of lr. Seed 001,
    "Parts 3 and 4" (AdamW keeps its weight decay separate from its running
    averages).
    """
    from engine.train import make_optimizer, train_step

    data, _ = corpus(ctx, 20_000)
    model = ctx.gpt("small")
    lr, decay = 1e-3, 0.1
    optimizer = make_optimizer(model, lr=lr, weight_decay=decay)
    x = torch.stack([data[i:i + 8] for i in (0, 100, 200, 300)])  # (4, 8)
    y = torch.stack([data[i + 1:i + 9] for i in (0, 100, 200, 300)])
    unused = model.wpe.weight[8:]  # (24, C): positions a T = 8 batch never reads
    before = unused.detach().clone()
    train_step(model, optimizer, x, y)
    grad = model.wpe.weight.grad[8:]
    move = (unused.detach() - before).abs()
    observed = move.max().item() / lr
    evidence = [
        table("Position rows 8-31 after one step (lr 1e-3, weight decay 0.1)", ["quantity", "value"], [
            ["optimizer", type(optimizer).__name__], ["max |gradient|", grad.abs().max().item()],
            ["max |w| before", before.abs().max().item()], ["max |Δw| / lr", observed],
            ["λ · max |w| (a decoupled decay)", decay * before.abs().max().item()]]),
    ]
    if observed > 0.5:
        evidence.append(note("The decay entered the gradient (g = 0 + λw) and the first Adam step divides it by its "
                             "own size: every unused weight moved by about lr towards 0, as far as a weight with a "
                             "real gradient. AdamW's decay stays proportional to the weight: lr · λ · |w|."))
    return Measurement(observed=observed, evidence=evidence)


def rebuilt_optimizer(ctx: Context) -> Measurement:
    """AdamW's step count for a weight that trained before an unfreeze.

    A 2-layer head over a frozen 1-layer body (C = 16), AdamW lr 1e-2, 10
    updates of the head; then the snippet's ``unfreeze(body, optimizer)``
    and one more update. Observed: ``state["step"]`` of the head's first
    weight afterwards (10 + 1 = 11 when its state survived). Seed 000 §3
    ("replacing or rebuilding parameter groups also requires thinking about
    existing optimizer state").
    """
    from exercises.snippets.unfreeze import unfreeze

    device = torch.device(ctx.device)
    torch.manual_seed(ctx.seed)
    body = torch.nn.Linear(16, 16).to(device)
    head = torch.nn.Sequential(torch.nn.Tanh(), torch.nn.Linear(16, 1)).to(device)
    body.requires_grad_(False)
    g = torch.Generator().manual_seed(ctx.seed)
    x, y = torch.randn(32, 16, generator=g).to(device), torch.randn(32, 1, generator=g).to(device)
    optimizer = torch.optim.AdamW(head.parameters(), lr=1e-2)

    def update(opt):
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.mse_loss(head(body(x)), y).backward()
        opt.step()

    for _ in range(10):
        update(optimizer)
    weight = head[1].weight
    before = weight.detach().clone()
    optimizer = unfreeze(body, optimizer)
    update(optimizer)
    step = optimizer.state[weight]["step"]
    observed = float(step.item() if torch.is_tensor(step) else step)
    size = (weight.detach() - before).abs().mean().item() / 1e-2
    evidence = [
        table("The head's weight across the unfreeze", ["quantity", "value"], [
            ["parameter groups", len(optimizer.param_groups)],
            ["step count after update 11", observed],
            ["mean |Δw| of update 11 / lr", size]]),
    ]
    if observed < 11:
        evidence.append(note("The optimizer that stepped update 11 never saw the first ten: its averages started "
                             "at 0 and its bias correction at step 1, so the head's update was a first step again, "
                             "about lr per weight whatever the gradient."))
    return Measurement(observed=observed, evidence=evidence)


def _resumable_run(ctx: Context, dropout: float) -> dict:
    """8 updates straight, and 4 + save + rebuild + load + 4; the final weights and batch starts of both."""
    from engine.data import get_batch
    from engine.train import load_checkpoint, make_optimizer, save_checkpoint, train_step

    data, _ = corpus(ctx, 20_000)

    def start():
        model = ctx.gpt("small", n_layer=1, dropout=dropout)
        return model, make_optimizer(model, lr=3e-3), torch.Generator().manual_seed(ctx.seed)

    def steps(model, optimizer, gen, n, starts):
        for _ in range(n):
            probe = torch.Generator().set_state(gen.get_state())
            starts.append(int(torch.randint(0, len(data) - 16 - 1, (1,), generator=probe)))
            x, y = get_batch(data, 4, 16, generator=gen, device=ctx.device)
            train_step(model, optimizer, x, y)

    model, optimizer, gen = start()
    straight = []
    steps(model, optimizer, gen, 8, straight)
    final = torch.cat([p.detach().flatten() for p in model.parameters()])

    model, optimizer, gen = start()
    resumed = []
    steps(model, optimizer, gen, 4, resumed)
    buffer = io.BytesIO()
    save_checkpoint(buffer, model, optimizer, 4, generator=gen)
    for _ in range(5):
        torch.rand(3)  # the rest of the first process: anything that draws from torch's generator
    model, optimizer, gen = start()  # a new process: every object built again, every seed set again
    buffer.seek(0)
    load_checkpoint(buffer, model, optimizer, generator=gen)
    steps(model, optimizer, gen, 4, resumed)
    again = torch.cat([p.detach().flatten() for p in model.parameters()])
    return {"delta": (again - final).abs().max().item(), "straight": straight, "resumed": resumed}


def resume_random_state(ctx: Context) -> Measurement:
    """A resumed run against the straight one, without and with dropout.

    The small engine cut to 1 layer trains for 8 updates on random windows
    (``engine.data.get_batch`` with its own generator: the data position),
    and again for 4, saves with ``save_checkpoint(..., generator=)``,
    rebuilds everything as a new process would (every seed set again),
    loads and trains 4 more. Observed: [final weights equal within 1e-6 at
    dropout 0, at dropout 0.1]. Seed 001, "In the real world" (resuming
    depends on optimizer state, schedule position, data position and
    relevant random-number state).
    """
    runs = {p: _resumable_run(ctx, p) for p in (0.0, 0.1)}
    flags = [runs[p]["delta"] <= 1e-6 for p in (0.0, 0.1)]
    evidence = [
        table("Resumed against straight (8 updates, resumed after 4)",
              ["dropout", "max |Δ weights|", "same batch starts"],
              [[p, r["delta"], r["straight"] == r["resumed"]] for p, r in runs.items()]),
        table("Batch starts, updates 4-7", ["run", "starts"], [
            ["straight", str(runs[0.0]["straight"][4:])], ["resumed", str(runs[0.0]["resumed"][4:])],
            ["a fresh sampler (no data position)", str(runs[0.0]["straight"][:4])]]),
    ]
    if flags[0] and not flags[1]:
        evidence.append(note("The batches were the same (the sampler's state was saved), but dropout drew its masks "
                             "from torch's generator as the new process had seeded it, not where the first process "
                             "left it. Without dropout nothing random runs in an update, so nothing was lost."))
    return Measurement(observed=flags, evidence=evidence)
