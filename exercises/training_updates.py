"""Checks for the set ``training``, part 1: one update by hand (seed 001, Parts 1 and 2).

What ``backward`` leaves in ``.grad``, what the optimizer does with it, and
how gradients from pieces of a batch add up.
"""

import torch
import torch.nn.functional as F

from exercises.context import Context
from exercises.outcome import Measurement, note, series, table
from exercises.training_common import bigram_data



def _hand_sgd_step(logits: torch.Tensor, target: torch.Tensor, lr: float) -> torch.Tensor:
    """One plain SGD step worked out from the formula, without autograd.

    theta_new = theta - lr * (softmax(theta) - onehot(target)) / N for the
    mean cross entropy over N rows (seed 001, "Derive the gradient rather
    than trusting a slogan"). For logits [0, 0, 0], target 1 and lr 0.3 it
    gives [-0.1, 0.2, -0.1].

    Args:
        logits: (N, V) float logits; target: (N,) int64 ids.
    """
    onehot = F.one_hot(target, logits.shape[-1]).to(logits.dtype)  # (N, V)
    return logits - lr * (logits.softmax(-1) - onehot) / logits.shape[0]


def _vec(t: torch.Tensor) -> str:
    """A short 1-D tensor as text, 6 significant digits per entry."""
    return "[" + ", ".join(f"{v:.6g}" for v in t.flatten().tolist()) + "]"


def hand_update(ctx: Context) -> Measurement:
    """One SGD step (lr 0.3) on logits [0, 0, 0] with target 1, in float64.

    Observed: the loss after the step (the exercise grades the clean side:
    0.908918; the target's probability rises from 1/3 to 0.402960). The
    gradient is checked three ways: autograd, softmax - onehot, and a central
    finite difference; the step is compared with torch.optim.SGD's.
    Seed 001, "The idea in plain words" and lab Part 1.
    """
    from exercises.snippets import one_step

    device = torch.device(ctx.device)
    logits = torch.zeros(1, 3, dtype=torch.float64, device=device)
    target = torch.tensor([1], device=device)
    lr = 0.3
    loss, grad, updated = one_step.sgd_update(logits, target, lr)
    analytic = logits.softmax(-1) - F.one_hot(target, 3).double()
    eps = 1e-6
    bump = torch.zeros_like(logits)
    bump[0, 1] = eps
    finite = ((F.cross_entropy(logits + bump, target) - F.cross_entropy(logits - bump, target)) / (2 * eps)).item()
    reference = torch.nn.Parameter(logits.clone())
    sgd = torch.optim.SGD([reference], lr=lr)
    F.cross_entropy(reference, target).backward()
    sgd.step()
    after = F.cross_entropy(updated, target).item()
    p_before = logits.softmax(-1)[0, 1].item()
    p_after = updated.softmax(-1)[0, 1].item()
    evidence = [
        table("One step, lr 0.3, target 1", ["quantity", "value"], [
            ["logits before", _vec(logits)], ["loss before", loss.item()], ["gradient", _vec(grad)],
            ["logits after", _vec(updated)], ["target prob", f"{p_before:.6f} -> {p_after:.6f}"],
            ["loss after", after]]),
        table("The gradient, three ways", ["route", "target logit"], [
            ["autograd", grad[0, 1].item()], ["softmax - onehot", analytic[0, 1].item()],
            ["finite difference", finite]]),
        table("The step against torch.optim.SGD", ["question", "answer"], [
            ["same logits as SGD's step", torch.allclose(updated, reference.detach(), atol=1e-12)],
            ["loss went down", after < loss.item()]]),
    ]
    return Measurement(observed=round(after, 9), evidence=evidence)


def skip_zero_grad(ctx: Context) -> Measurement:
    """Observe the ratio of the second gradient to the first at unchanged weights.

    Logits [0, 0, 0] (float64), target 1, SGD lr 0.3. After the two passes one
    SGD step is taken with whatever ``.grad`` holds and compared with the hand
    update worked out from the formula, [-0.1, 0.2, -0.1] (seed 001, Part 1
    and Part 2).
    """
    from exercises.snippets import accumulate

    device = torch.device(ctx.device)
    logits = torch.nn.Parameter(torch.zeros(1, 3, dtype=torch.float64, device=device))
    target = torch.tensor([1], device=device)
    optimizer = torch.optim.SGD([logits], lr=0.3)
    before = logits.detach().clone()
    first, second = accumulate.two_gradients(logits, target, optimizer)
    unchanged = torch.equal(logits.detach(), before)
    ratio = (second / first)[0]
    optimizer.step()
    after = logits.detach()[0]
    hand = _hand_sgd_step(before, target, lr=0.3)[0]  # from the formula: [-0.1, 0.2, -0.1]
    matches_hand = torch.allclose(after, hand, atol=1e-12)
    step_ratio = ((after - before[0]).norm() / (hand - before[0]).norm()).item()
    evidence = [
        table("Gradients at unchanged weights", ["pass", "logit 0", "logit 1", "logit 2"],
              [["first", *first[0].tolist()], ["second", *second[0].tolist()], ["second / first", *ratio.tolist()]]),
        table("One SGD step (lr 0.3) with what .grad holds", ["", "logit 0", "logit 1", "logit 2"],
              [["after the step", *after.tolist()], ["hand update (formula)", *hand.tolist()]]),
        table("Facts", ["question", "answer"],
              [["weights unchanged by backward", unchanged], ["step matches the hand update", matches_hand],
               ["step length / hand step length", step_ratio]]),
    ]
    if ratio[1].item() != 1.0:
        evidence.append(note(f"Without the reset, backward adds the same gradient again: the step is "
                             f"{step_ratio:g} times as long as the hand update."))
    return Measurement(observed=round(ratio[1].item(), 12), evidence=evidence)


def backward_no_update(ctx: Context) -> Measurement:
    """Does training move the weights? Backward alone, then 20 loop iterations.

    The snippet bigram (zero table, float64) on the seed's toy text. First a
    lone ``loss.backward()``: .grad fills, the weights stay bit-identical.
    Then ``loop.train`` for 20 steps with AdamW lr 0.1. Observed: True when
    the weights differ after the 20 iterations. Seed 001, lab Part 2.
    """
    from exercises.snippets import bigram, loop

    _, x, y, model = bigram_data(ctx)
    weight = model.table.weight
    start = weight.detach().clone()
    _, loss = model(x, y)
    loss.backward()
    after_backward = torch.equal(weight.detach(), start)
    grad_norm = weight.grad.norm().item()
    weight.grad = None
    optimizer = bigram.make_optimizer(model)
    curve = loop.train(model, optimizer, x, y, 20)
    changed = not torch.equal(weight.detach(), start)
    evidence = [
        table("backward() alone", ["question", "answer"], [
            ["weights bit-identical afterwards", after_backward], ["norm of .grad", grad_norm]]),
        table("loop.train: 20 iterations", ["question", "answer"], [
            ["weights changed", changed], ["max |change|", (weight.detach() - start).abs().max().item()],
            ["loss", f"{curve[0]:.6f} -> {curve[-1]:.6f}"]]),
        series("loss after each iteration", curve, "nats"),
    ]
    return Measurement(observed=changed, evidence=evidence)


class _TwoHeads(torch.nn.Module):
    """Two linear heads on the same input; a loss may use one or both."""

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(4, 3)
        self.b = torch.nn.Linear(4, 3)


def set_to_none(ctx: Context) -> Measurement:
    """What a reset leaves in .grad, and whether Adam then moves an unused head.

    Step 1 trains both heads (loss through a(x) + b(x)); step 2's loss uses
    only head a. Both steps go through ``loop.optimizer_step`` with Adam
    (lr 0.1). After step 2: is b.weight.grad None, zeros, or old values, and
    did b move during step 2? Observed choice: a None / stays, b zeros / stays,
    c zeros / moves, d anything else. Seed 001, lab Part 2 (reset to None).
    """
    from exercises.snippets import loop

    device = torch.device(ctx.device)
    model = _TwoHeads().double().to(device)
    g = torch.Generator().manual_seed(ctx.seed)
    x = torch.randn(6, 4, generator=g, dtype=torch.float64).to(device)
    y = torch.randint(0, 3, (6,), generator=g).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    loop.optimizer_step(optimizer, lambda: F.cross_entropy(model.a(x) + model.b(x), y))
    b_before = model.b.weight.detach().clone()
    loop.optimizer_step(optimizer, lambda: F.cross_entropy(model.a(x), y))
    grad = model.b.weight.grad
    moved = not torch.equal(model.b.weight.detach(), b_before)
    if grad is None:
        state, observed = "None", "a" if not moved else "d"
    elif not bool(grad.ne(0).any()):
        state, observed = "a zero tensor", "c" if moved else "b"
    else:
        state, observed = "nonzero values", "d"
    evidence = [
        table("Head b after step 2 (its loss never touches b)", ["question", "answer"], [
            ["b.weight.grad is", state], ["b moved during step 2", moved],
            ["max |change| in step 2", (model.b.weight.detach() - b_before).abs().max().item()],
            ["a.weight.grad is None", model.a.weight.grad is None]]),
    ]
    if moved:
        evidence.append(note("Adam still holds b's running averages from step 1; a zero gradient is a "
                             "gradient, so it steps b anyway. A None gradient makes it skip b."))
    return Measurement(observed=observed, evidence=evidence)


def microbatch_weighting(ctx: Context) -> Measurement:
    """Accumulated gradient of unequal microbatches against the full-batch gradient.

    The bigram (float64, table drawn from N(0, 1)) on the seed's toy text,
    42 targets split into microbatches of 30 and 12. Observed: True when the
    snippet's accumulated gradient equals the full-batch mean's within 1e-6.
    The weights the snippet effectively used are recovered by least squares
    from each microbatch's own gradient. Seed 001, "Explain it back".
    """
    from exercises.snippets.microbatch import accumulated_gradients

    _, x, y, model = bigram_data(ctx)
    g = torch.Generator().manual_seed(ctx.seed)
    with torch.no_grad():
        model.table.weight.copy_(torch.randn(model.table.weight.shape, generator=g, dtype=torch.float64))
    pieces = [(x[:, :30], y[:, :30]), (x[:, 30:], y[:, 30:])]

    def gradient(xs, ys) -> torch.Tensor:
        model.zero_grad(set_to_none=True)
        model(xs, ys)[1].backward()
        return model.table.weight.grad.detach().clone()

    full = gradient(x, y)
    own = [gradient(xs, ys) for xs, ys in pieces]
    accumulated = accumulated_gradients(model, pieces)["table.weight"]
    gap = (accumulated - full).abs().max().item()
    basis = torch.stack([o.flatten() for o in own], dim=1)  # (V*V, 2)
    used = torch.linalg.lstsq(basis.cpu(), accumulated.flatten().unsqueeze(1).cpu()).solution.flatten()
    total = y.numel()
    rows = [[f"{ys.numel()} targets", f"{ys.numel() / total:.4f}", f"{w:.4f}"] for (_, ys), w in zip(pieces, used.tolist())]
    evidence = [
        table("Microbatches", ["microbatch", "share of tokens", "weight used"], rows),
        table("Accumulated against full batch", ["quantity", "value"], [
            ["max |Δ gradient|", gap], ["max |full gradient|", full.abs().max().item()],
            ["equal (1e-6)", gap <= 1e-6]]),
    ]
    return Measurement(observed=gap <= 1e-6, evidence=evidence)


def batch_mean_gradient(ctx: Context) -> Measurement:
    """The gradient of the snippet's batch loss against the mean's, worked out by hand.

    Logits (N = 8, V = 5) in float64 and random targets. The reference is the
    gradient of the *mean* cross entropy from the formula (softmax - onehot)
    / N. Observed: the ratio of the subject's gradient to it (the least-
    squares factor over all 40 entries; 1 for a mean). Evidence: one row of
    each, and the length of one SGD step (lr 0.1) under each. Seed 001,
    "Derive the gradient rather than trusting a slogan" (the mean divides
    each row's gradient by N).
    """
    from exercises.snippets.batch_loss import batch_loss

    device = torch.device(ctx.device)
    g = torch.Generator().manual_seed(ctx.seed)
    N, V = 8, 5
    logits = torch.randn(N, V, generator=g, dtype=torch.float64).to(device).requires_grad_()
    targets = torch.randint(0, V, (N,), generator=g).to(device)
    batch_loss(logits, targets).backward()
    subject = logits.grad.detach()
    by_hand = (logits.detach().softmax(-1) - F.one_hot(targets, V).double()) / N  # mean's gradient
    ratio = ((subject * by_hand).sum() / (by_hand * by_hand).sum()).item()
    evidence = [
        table("Row 0 of the gradient", ["route", "values"], [
            ["subject's loss", _vec(subject[0])], ["(softmax - onehot) / N", _vec(by_hand[0])]]),
        table("Facts", ["quantity", "value"], [
            ["N (rows in the batch)", N], ["subject / mean-gradient", ratio],
            ["SGD step length at lr 0.1, subject", (0.1 * subject).norm().item()],
            ["SGD step length at lr 0.1, mean", (0.1 * by_hand).norm().item()]]),
    ]
    if abs(ratio - 1) > 1e-9:
        evidence.append(note(f"Every gradient is {ratio:g} times the mean's: the learning rate now means "
                             f"{ratio:g} times as much, and it changes again whenever the batch size does."))
    return Measurement(observed=round(ratio, 9), evidence=evidence)
