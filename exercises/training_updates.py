"""Checks for the set ``training``, part 1: one update by hand (seed 001, Parts 1 and 2).

What ``backward`` leaves in ``.grad``, what the optimizer does with it, and
how gradients from pieces of a batch add up.
"""

import torch
import torch.nn.functional as F

from exercises.context import Context
from exercises.outcome import Measurement, note, series, table
from exercises.training_common import part6_gpt



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


def _flat(tensors) -> torch.Tensor:
    """Tensors (parameters or gradients) joined into one 1-D float64 vector."""
    return torch.cat([t.detach().double().flatten() for t in tensors])


def backward_no_update(ctx: Context) -> Measurement:
    """Does ``engine.train.train_step`` move the weights? Backward alone, then 20 steps.

    The engine GPT in seed 001 Part 6's configuration (V = 3, C = 16, one
    layer, block 8, tied) on its two repeating sequences. First a lone ``loss.backward()``: .grad
    fills, the weights stay bit-identical. Then 20 ``train_step`` updates
    with AdamW (lr 0.01, no weight decay), the loss evaluated before and
    after each. Observed: True when the weights after the 20 steps are
    bit-identical to the starting ones.
    The subject used to be a snippet bigram, flat at ln 8 under the fault;
    on the GPT the flat line is its own starting loss (1.227703 on CPU,
    seed 0), and the clean loss falls to 0.061102 in 20 updates. Seed 001,
    lab Part 2 ("backward does not update weights") and Part 6.
    """
    from engine.train import evaluate, make_optimizer, train_step

    model, x, y = part6_gpt(ctx)
    start = _flat(model.parameters())
    _, loss = model(x, targets=y)
    loss.backward()
    after_backward = torch.equal(_flat(model.parameters()), start)
    grad_norm = _flat(p.grad for p in model.parameters()).norm().item()
    model.zero_grad(set_to_none=True)
    optimizer = make_optimizer(model, lr=0.01, weight_decay=0.0)
    curve = [evaluate(model, x, y)]
    for _ in range(20):
        train_step(model, optimizer, x, y)
        curve.append(evaluate(model, x, y))
    change = (_flat(model.parameters()) - start).abs().max().item()
    changed = change > 0
    evidence = [
        table("backward() alone", ["question", "answer"], [
            ["weights bit-identical afterwards", after_backward], ["norm of every .grad together", grad_norm]]),
        table("train_step: 20 updates", ["question", "answer"], [
            ["weights changed", changed], ["max |change|", change],
            ["loss", f"{curve[0]:.6f} -> {curve[-1]:.6f}"]]),
        series("loss before the first update and after each", curve, "nats"),
    ]
    if not changed:
        evidence.append(note("Every update computed a loss and filled .grad, and nothing read it: the "
                             "weights are where they started, and so is the loss."))
    return Measurement(observed=not changed, evidence=evidence)


def set_to_none(ctx: Context) -> Measurement:
    """What ``train_step``'s reset leaves in .grad, and whether AdamW then moves a frozen tensor.

    The engine GPT in seed 001 Part 6's configuration (block 8) and its
    sequences, AdamW (lr 0.01, no weight
    decay) through ``engine.train.train_step``. Step 1 trains every
    parameter; then the block's attention is frozen
    (``requires_grad_(False)``), so step 2's loss no longer reaches it.
    After step 2: is the attention's qkv weight gradient None, zeros, or old
    values, and did that weight move during step 2? Observed choice: a zeros /
    moves, b zeros / stays, c None / stays, d anything else. Seed 001, lab
    Part 2 (the reset sets gradients to None) and "Backward and update are
    different operations".
    """
    from engine.train import make_optimizer, train_step

    model, x, y = part6_gpt(ctx)
    optimizer = make_optimizer(model, lr=0.01, weight_decay=0.0)
    train_step(model, optimizer, x, y)  # step 1: every parameter learns
    attention = model.blocks[0].attn
    attention.requires_grad_(False)  # frozen from now on
    weight = attention.qkv.weight
    before = weight.detach().clone()
    train_step(model, optimizer, x, y)  # step 2: the loss no longer reaches the attention
    grad = weight.grad
    change = (weight.detach() - before).abs().max().item()
    moved = change > 0
    if grad is None:
        state, observed = "None", "c" if not moved else "d"
    elif not bool(grad.ne(0).any()):
        state, observed = "a zero tensor", "a" if moved else "b"
    else:
        state, observed = "nonzero values", "d"
    evidence = [
        table("The frozen attention after step 2 (its loss never reaches it)", ["question", "answer"], [
            ["qkv.weight.grad is", state], ["qkv.weight moved during step 2", moved],
            ["max |change| in step 2", change],
            ["ln_f.weight (still trained) has a gradient", model.ln_f.weight.grad is not None]]),
    ]
    if moved:
        evidence.append(note("AdamW still holds the attention's running averages from step 1; a zero "
                             "gradient is a gradient, so it steps the frozen weight anyway. A None gradient "
                             "makes it skip the tensor."))
    return Measurement(observed=observed, evidence=evidence)


#: microbatch_weighting's batch: 7 windows of 6 tokens, 42 targets, split 5 + 2 windows (30 + 12 targets).
MICRO_B, MICRO_T, MICRO_SPLIT = 7, 6, 5


def microbatch_gradients(ctx: Context):
    """The gradients of ``engine.train.accumulate_gradients`` over two unequal microbatches, and their parts.

    A 1-layer engine GPT (C = 32, V = 37) in float64 reads ``MICRO_B`` = 7
    random windows of ``MICRO_T`` = 6 tokens (42 targets), split into the
    first ``MICRO_SPLIT`` = 5 windows (30 targets) and the last 2 (12).

    Returns:
        ``(y, pieces, full, basis, accumulated)``: the targets (7, 6); the two
        ``(x, y)`` microbatches; the full batch's mean gradient (P,); each
        microbatch's own mean gradient as the columns of ``basis`` (P, 2); and
        what ``accumulate_gradients`` left in ``.grad`` (P,), P the number of
        parameter values. Seed 001, "Backward and update are different operations".
    """
    from engine.train import accumulate_gradients

    model = ctx.gpt("small", n_layer=1, n_embd=32).double()
    V = model.config.vocab_size
    g = torch.Generator().manual_seed(ctx.seed)
    data = torch.randint(0, V, (MICRO_B, MICRO_T + 1), generator=g).to(ctx.device)
    x, y = data[:, :-1].contiguous(), data[:, 1:].contiguous()  # (7, 6) each
    pieces = [(x[:MICRO_SPLIT], y[:MICRO_SPLIT]), (x[MICRO_SPLIT:], y[MICRO_SPLIT:])]

    def gradient(xs, ys) -> torch.Tensor:
        model.zero_grad(set_to_none=True)
        model(xs, targets=ys)[1].backward()
        return _flat(p.grad for p in model.parameters())

    full = gradient(x, y)
    own = [gradient(xs, ys) for xs, ys in pieces]
    accumulate_gradients(model, pieces)
    accumulated = _flat(p.grad for p in model.parameters())
    return y, pieces, full, torch.stack(own, dim=1), accumulated


def microbatch_weighting(ctx: Context) -> Measurement:
    """``engine.train.accumulate_gradients`` over unequal microbatches against the full batch.

    A 1-layer engine GPT (C = 32, V = 37) in float64 reads 7 random windows
    of 6 tokens (42 targets); the microbatches are the first 5 windows (30
    targets) and the last 2 (12). The reference is the gradient of one mean
    over all 42 targets (one forward of the whole batch; the windows do not
    see each other). Observed: True when the accumulated gradient equals it
    within 1e-6 (every parameter). The weights the engine effectively used
    are recovered by least squares from each microbatch's own gradient. The
    subject used to be a snippet bigram; the rule and the weights are the
    same on the GPT (30/42, 12/42 against 1/2, 1/2). Seed 001, "Explain it
    back" and "In the real world" (accumulation).
    """
    y, pieces, full, basis, accumulated = microbatch_gradients(ctx)
    gap = (accumulated - full).abs().max().item()
    used = torch.linalg.lstsq(basis.cpu(), accumulated.unsqueeze(1).cpu()).solution.flatten()
    total = y.numel()
    rows = [[f"{ys.numel()} targets", f"{ys.numel() / total:.4f}", f"{w:.4f}"] for (_, ys), w in zip(pieces, used.tolist())]
    evidence = [
        table("Microbatches", ["microbatch", "share of targets", "weight used"], rows),
        table("Accumulated against full batch", ["quantity", "value"], [
            ["parameters compared", f"{full.numel():,}"], ["max |Δ gradient|", gap],
            ["max |full gradient|", full.abs().max().item()], ["equal (1e-6)", gap <= 1e-6]]),
    ]
    return Measurement(observed=gap <= 1e-6, evidence=evidence)


def batch_mean_gradient(ctx: Context) -> Measurement:
    """The gradient of the engine GPT's loss at its logits against the mean's, worked out by hand.

    A 1-layer engine GPT (C = 16, V = 5, block 4) in float64 reads a random
    batch of B = 2 windows of T = 4 tokens: N = 8 positions. A forward hook
    keeps the logits (B, T, V) so their gradient can be read after
    ``loss.backward()``. The reference is the gradient of the *mean* cross
    entropy from the formula (softmax - onehot) / N. Observed: the ratio of
    the subject's gradient to it (the least-squares factor over all 40
    entries; 1 for a mean). Evidence: one row of each, and the length of one
    SGD step (lr 0.1) over every parameter of the GPT. The subject used to
    be a snippet loss on (8, 5) logits; the engine's loss line gives the
    same ratio. Seed 001, "Derive the gradient rather than trusting a
    slogan" (the mean divides each row's gradient by N).
    """
    model = ctx.gpt("small", vocab_size=5, block_size=4, n_layer=1, n_embd=16).double()
    B, T, V = 2, 4, model.config.vocab_size
    N = B * T
    g = torch.Generator().manual_seed(ctx.seed)
    data = torch.randint(0, V, (B, T + 1), generator=g).to(ctx.device)
    x, y = data[:, :-1].contiguous(), data[:, 1:].contiguous()  # (B, T) each
    kept = {}

    def keep_logits(_module, _inputs, output):
        output.retain_grad()
        kept["logits"] = output

    handle = model.lm_head.register_forward_hook(keep_logits)
    try:
        _, loss = model(x, targets=y)
    finally:
        handle.remove()
    loss.backward()
    logits = kept["logits"]  # (B, T, V)
    subject = logits.grad.detach().reshape(N, V)
    flat_logits = logits.detach().reshape(N, V)
    by_hand = (flat_logits.softmax(-1) - F.one_hot(y.reshape(N), V).double()) / N  # the mean's gradient
    ratio = ((subject * by_hand).sum() / (by_hand * by_hand).sum()).item()
    step = 0.1 * _flat(p.grad for p in model.parameters()).norm().item()
    evidence = [
        table("Position 0 of the logits' gradient", ["route", "values"], [
            ["the engine's loss", _vec(subject[0])], ["(softmax - onehot) / N", _vec(by_hand[0])]]),
        table("Facts", ["quantity", "value"], [
            ["N = B x T (positions in the batch)", N], ["subject / mean-gradient", ratio],
            ["loss the GPT reports", loss.item()],
            ["SGD step length at lr 0.1, every parameter", step]]),
    ]
    if abs(ratio - 1) > 1e-9:
        evidence.append(note(f"Every gradient is {ratio:g} times the mean's: the learning rate now means "
                             f"{ratio:g} times as much, and it changes again whenever B or T does."))
    return Measurement(observed=round(ratio, 9), evidence=evidence)
