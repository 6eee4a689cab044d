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


def _flat_grad(model: torch.nn.Module) -> torch.Tensor:
    return torch.cat([torch.zeros(p.numel(), dtype=p.dtype, device=p.device) if p.grad is None
                      else p.grad.flatten() for p in model.parameters()])


def evaluate_between_microbatches(ctx: Context) -> Measurement:
    """The accumulated gradient when ``engine.train.evaluate`` runs between two microbatches.

    A 1-layer small engine in float64; two microbatches of 4 windows × 8
    tokens, each loss halved and backpropagated into the same ``.grad``; a
    validation ``evaluate`` on other windows runs after the first (an
    evaluation hook firing mid-accumulation). Observed: [the gradient
    equals the full batch's within 1e-9, it equals the second microbatch's
    half alone]. Seed 001, "Backward and update are different operations"
    (gradients accumulate until something resets them).
    """
    from engine.train import evaluate

    data, _ = corpus(ctx, 20_000)
    model = ctx.gpt("small", n_layer=1).double()
    windows = torch.stack([data[i:i + 9] for i in range(0, 1200, 100)])  # (12, 9)
    x, y = windows[:, :-1], windows[:, 1:]
    parts = [(x[:4], y[:4]), (x[4:8], y[4:8])]
    val = (x[8:], y[8:])

    def half(xs, ys):
        (model(xs, targets=ys)[1] / 2).backward()

    model.zero_grad(set_to_none=True)
    model(x[:8], targets=y[:8])[1].backward()
    full = _flat_grad(model)
    model.zero_grad(set_to_none=True)
    half(*parts[1])
    second = _flat_grad(model)

    model.zero_grad(set_to_none=True)
    half(*parts[0])
    norm_before = _flat_grad(model).norm().item()
    val_loss = evaluate(model, *val)
    norm_after = _flat_grad(model).norm().item()
    half(*parts[1])
    got = _flat_grad(model)
    observed = [bool(torch.allclose(got, full, rtol=0, atol=1e-9)), bool(torch.allclose(got, second, rtol=0, atol=1e-9))]
    evidence = [
        table("The gradient around evaluate()", ["quantity", "value"], [
            ["|grad| after microbatch 1", norm_before], ["validation loss", val_loss],
            ["|grad| after evaluate()", norm_after], ["|grad| after microbatch 2", got.norm().item()],
            ["|full-batch grad|", full.norm().item()], ["|microbatch 2's half alone|", second.norm().item()]]),
    ]
    if norm_after < norm_before:
        evidence.append(note("evaluate() reset the gradients: microbatch 1's half was gone before microbatch 2 "
                             "added its own, and the step that follows would use half a batch at half the weight."))
    return Measurement(observed=observed, evidence=evidence)


def copying_is_free(ctx: Context) -> Measurement:
    """A 1-layer engine trained on y = x (the targets not shifted), and what its last position reads.

    The small engine with 1 layer trains 60 AdamW updates (lr 3e-3) on 8
    windows of 16 corpus tokens whose targets are the inputs themselves.
    Then every earlier token of one window is changed in turn. Observed:
    [final copy loss below 0.1 nats, some earlier token moves the last
    position's logits by more than 1e-6]. Seed 004, Exercises ("explain,
    from the causal mask, exactly why predicting token t from token t is
    nearly free") and seed 001, "Make the target unambiguous".
    """
    from engine.train import make_optimizer, train_step

    data, _ = corpus(ctx, 20_000)
    model = ctx.gpt("small", n_layer=1)
    x = torch.stack([data[i:i + 16] for i in range(0, 8000, 1000)])  # (8, 16)
    optimizer = make_optimizer(model, lr=3e-3)
    losses = [train_step(model, optimizer, x, x) for _ in range(60)]
    ctx.progress(0.9, "probing")
    model.eval()
    probe = x[:1]
    moved = 0.0
    with torch.no_grad():
        base = model(probe)[0][0, -1]
        for t in range(15):
            changed = probe.clone()
            changed[0, t] = (changed[0, t] + 1) % model.config.vocab_size
            moved = max(moved, (model(changed)[0][0, -1] - base).abs().max().item())
    observed = [losses[-1] < 0.1, moved > 1e-6]
    evidence = [
        table("Trained on y = x", ["quantity", "value"], [
            ["first loss", losses[0]], ["loss after 60 updates", losses[-1]],
            ["max |Δ last logits| over earlier tokens changed", moved]]),
    ]
    if observed[0] and not observed[1]:
        evidence.append(note("The model copies perfectly and no other token can reach its last position: copying "
                             "token t needs only the residual stream, which already carries token t's embedding "
                             "to position t. Attention is not involved at all."))
    return Measurement(observed=observed, evidence=evidence)
