"""Checks for the set ``training``: what a measurement of one update can and
cannot show (seed 001, Parts 1-6 of its lab).

Each check tests a claim the seed makes about its own evidence: that a
snapshot must be a copy, that a floor must be computed over the right
counts, that AdamW's step is not the SGD step, that a fresh forward feeds
each backward, that a finite difference needs float64, that a reset
between microbatches undoes the accumulation, and that fitting Part 6's
sequences does not show what attention adds.
"""

import math

import torch
import torch.nn.functional as F

from exercises.context import Context
from exercises.outcome import Measurement, first_line, note, series, table
from exercises.training_common import bigram_data, counting, part6_gpt, train_bigram
from exercises.training_updates import MICRO_SPLIT, MICRO_T, microbatch_gradients


def update_snapshot(ctx: Context) -> Measurement:
    """The learning ledger's UPDATE link on seed 001 Part 6's GPT, and the check's own copies.

    The engine GPT in Part 6's configuration (V = 3, C = 16, one layer,
    block 8, tied) on its two repeating sequences, AdamW (lr 0.01, no
    weight decay) through ``learning_ledger`` with an 80-step CAPABILITY
    (below 0.1 nats). A step pre-hook and post-hook on the optimizer keep
    the check's own ``detach().clone()`` of every parameter around the
    ledger's first step, so the tensors that really moved are counted apart
    from the ledger. Observed: [tensors UPDATE counts as moved, CAPABILITY
    holds]. Seed 001, lab Part 2 ("copies matter": holding another
    reference to a tensor updated in place keeps no earlier value).
    """
    from engine.instruments.learning_ledger import learning_ledger
    from engine.train import make_optimizer

    model, x, y = part6_gpt(ctx)
    optimizer = make_optimizer(model, lr=0.01, weight_decay=0.0)
    params = [p for p in model.parameters() if p.requires_grad]
    copies: list[torch.Tensor] = []
    really_moved: list[int] = []

    def before_step(opt, args, kwargs) -> None:
        if not copies:
            copies.extend(p.detach().clone() for p in params)

    def after_step(opt, args, kwargs) -> None:
        if not really_moved:
            really_moved.append(sum(not torch.equal(c, p.detach()) for c, p in zip(copies, params)))

    optimizer.register_step_pre_hook(before_step)
    optimizer.register_step_post_hook(after_step)
    ledger = learning_ledger(model, optimizer, x, y, overfit_steps=80, overfit_below=0.1)
    update = next(r for r in ledger.rows if r.link == "UPDATE")
    counted = int(update.value.split("/")[0])
    capability = ledger.link_ok("CAPABILITY")
    evidence = [
        table("Learning ledger, Part 6's GPT", ["link", "check", "value", "ok"],
              [[r.link, r.check, r.value, "ok" if r.ok else "X"] for r in ledger.rows]),
        table("The first optimizer step, seen twice", ["who compares", "tensors moved"], [
            ["the ledger's UPDATE link", f"{counted}/{len(params)}"],
            ["the check's own detach().clone() copies", f"{really_moved[0]}/{len(params)}"]]),
        series("CAPABILITY: loss on the fixed batch, one point per step", ledger.curve, "nats"),
    ]
    if counted != really_moved[0]:
        evidence.append(note("The ledger's 'before' list shares storage with the parameters: the optimizer "
                             "writes the new values into that storage in place, so 'before' changes with the "
                             "weights and every comparison finds them equal."))
    return Measurement(observed=[counted, capability], evidence=evidence)


def reset_per_microbatch(ctx: Context) -> Measurement:
    """The weights ``accumulate_gradients`` effectively gives two unequal microbatches.

    The batch of ``microbatch-weighting``: a 1-layer engine GPT (C = 32,
    V = 37) in float64, 7 random windows of 6 tokens (42 targets), split
    into 5 windows (30 targets) and 2 (12). Each microbatch's own mean
    gradient is taken apart; the weights w1, w2 with accumulated ≈ w1·g1 +
    w2·g2 are recovered by least squares. Observed: [w1, w2] to 4 decimals
    (the full batch's mean is 30/42 = 0.7143 and 12/42 = 0.2857). Seed 001,
    "Backward and update are different operations" (resetting between
    intentionally accumulated microbatches changes the update).
    """
    y, pieces, full, basis, accumulated = microbatch_gradients(ctx)
    solved = torch.linalg.lstsq(basis.cpu(), accumulated.unsqueeze(1).cpu()).solution.flatten().tolist()
    used = [round(w, 4) + 0.0 for w in solved]  # + 0.0: no -0.0; the solver's last digits are not the fact
    residual = (accumulated.cpu() - basis.cpu() @ torch.tensor(solved, dtype=torch.float64)).abs().max().item()
    total = y.numel()
    evidence = [
        table("Microbatches", ["microbatch", "share of targets", "weight used"],
              [[f"{ys.numel()} targets", f"{ys.numel() / total:.4f}", f"{w:.4f}"] for (_, ys), w in zip(pieces, used)]),
        table("Accumulated against full batch", ["quantity", "value"], [
            ["max |Δ gradient| to the full batch", (accumulated - full).abs().max().item()],
            ["max |full gradient|", full.abs().max().item()],
            ["w1·g1 + w2·g2 reproduces it (1e-12)", residual < 1e-12]]),
    ]
    if used[0] < 0.5 * MICRO_SPLIT * MICRO_T / total:
        evidence.append(note("The first microbatch's contribution is gone: the second reset cleared it before "
                             "the second backward added its share."))
    return Measurement(observed=used, evidence=evidence)


def part6_without_attention(ctx: Context) -> Measurement:
    """Train seed 001 Part 6's GPT for 80 updates; the loss it reaches, and what moved.

    V = 3, C = 16, one layer, block 8, tied; the two repeating sequences
    0 1 2 ... and 1 2 0 ..., AdamW lr 0.01 without weight decay, 80
    ``engine.train.train_step`` calls (the seed: 1.156632 -> 0.002131 on
    its GPT). Observed: the loss after the 80 updates (``evaluate``), to 6
    decimals. Evidence: the qkv weight's change and how many parameter
    tensors received a gradient. Seed 001, "Part 6: swap in the assembled
    GPT" (the task is simple enough that a bigram could learn it).
    """
    from engine.train import evaluate, make_optimizer, train_step

    model, x, y = part6_gpt(ctx)
    optimizer = make_optimizer(model, lr=0.01, weight_decay=0.0)
    qkv = model.blocks[0].attn.qkv.weight
    qkv_start = qkv.detach().clone()
    before = evaluate(model, x, y)
    curve = [train_step(model, optimizer, x, y) for _ in range(80)]
    after = evaluate(model, x, y)
    params = list(model.parameters())
    with_grad = sum(p.grad is not None for p in params)
    transitions = sorted({(a, b) for a, b in zip(x.flatten().tolist(), y.flatten().tolist())})
    evidence = [
        table("80 updates of train_step", ["quantity", "value"], [
            ["loss before", before], ["ln 3 (a uniform guess)", math.log(3)], ["loss after", after],
            ["max |change| of the qkv weight", (qkv.detach() - qkv_start).abs().max().item()],
            ["parameter tensors with a gradient", f"{with_grad}/{len(params)}"]]),
        table("What the targets depend on", ["question", "answer"], [
            ["(current, next) pairs in the batch", " ".join(f"{a}->{b}" for a, b in transitions)],
            ["next token fixed by the current one", len({a for a, _ in transitions}) == len(transitions)]]),
        series("loss train_step returned at each update", curve, "nats"),
    ]
    return Measurement(observed=round(after, 6), evidence=evidence)


class _ThreeLogits(torch.nn.Module):
    """Part 1's example as a model: its parameters are the logits themselves.

    ``forward(idx, targets)`` returns ((B, 3) logits, the mean cross entropy
    or None), the contract ``engine.train.train_step`` trains.
    """

    def __init__(self, device: torch.device) -> None:
        super().__init__()
        self.z = torch.nn.Parameter(torch.zeros(1, 3, dtype=torch.float64, device=device))

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        logits = self.z.expand(idx.shape[0], 3)  # the same three scores for every row
        loss = None if targets is None else F.cross_entropy(logits, targets)
        return logits, loss


def adamw_first_step(ctx: Context) -> Measurement:
    """One ``train_step`` with ``engine.train.make_optimizer`` on logits [0, 0, 0], target 1, lr 0.3.

    Float64, no weight decay. Observed: the target logit after the step,
    to 9 decimals. Beside it, the plain SGD step worked out from the
    formula (z - lr · (softmax - onehot): 0.2 for the target) and a second
    step. Seed 001, "Parts 3 and 4" (AdamW is an adaptive update: do not use
    the hand SGD update as a numerical prediction for it) and Part 1.
    """
    from engine.train import make_optimizer, train_step

    device = torch.device(ctx.device)
    model = _ThreeLogits(device)
    optimizer = make_optimizer(model, lr=0.3, weight_decay=0.0)
    idx, target = torch.zeros(1, dtype=torch.long, device=device), torch.tensor([1], device=device)
    start = model.z.detach().clone()
    gradient = start.softmax(-1) - F.one_hot(target, 3).double()  # (1, 3), the hand formula
    hand_sgd = start - 0.3 * gradient
    train_step(model, optimizer, idx, target)
    first = model.z.detach().clone()
    train_step(model, optimizer, idx, target)
    second = model.z.detach().clone()

    def row(name: str, z: torch.Tensor) -> list:
        return [name, *(f"{v:.6f}" for v in z[0].tolist()), f"{F.cross_entropy(z, target).item():.6f}"]

    evidence = [
        table("Logits and loss", ["after", "z0", "z1 (target)", "z2", "loss"], [
            row("nothing", start), row("SGD step by hand", hand_sgd),
            row("1 train_step", first), row("2 train_steps", second)]),
        table("Step 1, per logit", ["logit", "gradient", "|change|", "lr·|gradient|"],
              [[i, f"{gradient[0, i].item():.6f}", f"{(first - start)[0, i].abs().item():.6f}",
                f"{0.3 * gradient[0, i].abs().item():.6f}"] for i in range(3)]),
        note(f"optimizer: {type(optimizer).__name__}"),
    ]
    return Measurement(observed=round(first[0, 1].item(), 9), evidence=evidence)


#: Where a computed counting floor lands: a below the trained bigram, b between it and ln V,
#: c above ln V (the untrained table's loss), d not a number.
FLOOR_CHOICES = ("a", "b", "c", "d")


def counting_floor(ctx: Context) -> Measurement:
    """The subject's counting floor against the trained bigram and the untrained one.

    The seed's toy text (V = 8, 42 pairs). ``bigram.counting_floor`` gives
    the table and the floor; the zero-initialised bigram trained 200 steps
    (AdamW lr 0.1, no decay, float64) gives the loss it reaches (seed 001:
    0.735081, from ln 8 = 2.079442). Observed choice: a floor below the
    trained loss, b between it and ln 8, c above ln 8, d not a number. The
    evidence recomputes the floor with the check's own counting (0.731409)
    and sums the subject's rows. Seed 001, lab Part 3.
    """
    from exercises.snippets import bigram

    vocab, x, y, _ = bigram_data(ctx)
    V = len(vocab)
    probs, floor = bigram.counting_floor(x, y, V)
    trained = train_bigram(ctx)["curve"][-1]
    _, reference = counting(x, y, V)
    if not math.isfinite(floor):
        observed = "d"
    elif floor <= trained:
        observed = "a"
    else:
        observed = "b" if floor < math.log(V) else "c"
    a = vocab.index("a")
    evidence = [
        table("Floors and losses (nats per target)", ["quantity", "value"], [
            ["the subject's floor", floor], ["trained bigram, 200 steps", trained],
            ["ln 8, the all-zero table", math.log(V)], ["the check's own counting floor", reference]]),
        table("The subject's table", ["question", "answer"], [
            ["row sums", " ".join(f"{s:.3f}" for s in probs.sum(1).tolist())],
            ["row 'a' (what follows a)", " ".join(f"{c!r}:{p:.3f}" for c, p in zip(vocab, probs[a].tolist()))],
            ["cells never seen", int((probs == 0).sum())]]),
    ]
    return Measurement(observed=observed, evidence=evidence)


def backward_same_graph(ctx: Context) -> Measurement:
    """Two backward passes at unchanged weights through the subject's ``two_gradients``.

    Logits [0, 0, 0] (float64), target 1, SGD lr 0.3. Observed: the class
    name of the exception the two passes raise, or ``"none"``. The evidence
    repeats the experiment with one loss and ``retain_graph=True`` on the
    first backward. Seed 001, "Backward and update are different operations"
    (the lab runs a fresh forward for each backward, so it never needs to
    retain a graph it has already used).
    """
    from exercises.snippets import accumulate

    device = torch.device(ctx.device)
    logits = torch.nn.Parameter(torch.zeros(1, 3, dtype=torch.float64, device=device))
    target = torch.tensor([1], device=device)
    optimizer = torch.optim.SGD([logits], lr=0.3)
    try:
        first, second = accumulate.two_gradients(logits, target, optimizer)
        observed, outcome = "none", f"second / first at the target: {(second / first)[0, 1].item():g}"
    except Exception as exc:  # the observation is the exception itself
        observed, outcome = type(exc).__name__, first_line(exc, limit=160)
    kept = torch.nn.Parameter(torch.zeros(1, 3, dtype=torch.float64, device=device))
    loss = F.cross_entropy(kept, target)
    loss.backward(retain_graph=True)  # keep the saved softmax for a second pass
    loss.backward()
    evidence = [
        table("Two backward passes", ["route", "outcome"], [
            ["the subject's two_gradients", outcome],
            ["one loss, retain_graph=True first", f"ran: .grad at the target {kept.grad[0, 1].item():g}"]]),
    ]
    return Measurement(observed=observed, evidence=evidence)


def finite_difference(ctx: Context) -> Measurement:
    """The subject's central difference on float32 logits [0, 0, 0], target 1, eps 1e-6.

    The analytic slope along the target logit is -2/3 (softmax - onehot).
    Observed: True when the estimate is within 1e-3 of it. The evidence
    sweeps eps in float32 and float64, computed by the check itself. Seed
    001, lab Part 1 (the central difference -0.666667; finite differences
    are numerically delicate).
    """
    from exercises.snippets import one_step

    device = torch.device(ctx.device)
    logits = torch.zeros(1, 3, dtype=torch.float32, device=device)  # a model's usual dtype
    target = torch.tensor([1], device=device)
    estimate = one_step.central_difference(logits, target, 1, eps=1e-6)
    exact = -2.0 / 3.0

    def slope(dtype: torch.dtype, eps: float) -> float:
        z = torch.zeros(1, 3, dtype=dtype, device=device)
        bump = torch.zeros_like(z)
        bump[0, 1] = eps
        return ((F.cross_entropy(z + bump, target) - F.cross_entropy(z - bump, target)) / (2 * eps)).item()

    loss = F.cross_entropy(logits, target).item()
    evidence = [
        table("The subject's estimate, eps 1e-6", ["quantity", "value"], [
            ["estimate", f"{estimate:.9f}"], ["analytic -2/3", f"{exact:.9f}"],
            ["|error|", f"{abs(estimate - exact):.3g}"]]),
        table("Central differences by dtype", ["eps", "float32", "float64"],
              [[f"{eps:g}", f"{slope(torch.float32, eps):.7f}", f"{slope(torch.float64, eps):.7f}"]
               for eps in (1e-2, 1e-4, 1e-6)]),
        note(f"At eps 1e-6 the two losses (near {loss:.4f}) differ by about 2·eps·2/3 = 1.3e-6. float32 spaces "
             f"the numbers in [1, 2) {torch.finfo(torch.float32).eps:.3g} apart, so that difference is a whole "
             f"number of such steps and the estimate a multiple of {torch.finfo(torch.float32).eps / 2e-6:.3f}."),
    ]
    return Measurement(observed=abs(estimate - exact) < 1e-3, evidence=evidence)


def loss_before_accuracy(ctx: Context) -> Measurement:
    """One SGD step (lr 0.3) on logits [1, 0, 0] whose target is 1: the argmax against the loss.

    Float64, through the subject's ``one_step.sgd_update``. Observed:
    [the highest-scoring candidate changed, the loss fell]. The evidence
    keeps stepping to find the first update after which the target is the
    argmax. Seed 001, "Turn scores into a penalty" (raising the correct
    candidate's probability lowers the loss even when the top-scoring token
    does not change, so the loss shows learning before a sample does).
    """
    from exercises.snippets import one_step

    device = torch.device(ctx.device)
    logits = torch.tensor([[1.0, 0.0, 0.0]], dtype=torch.float64, device=device)
    target = torch.tensor([1], device=device)
    loss, _, updated = one_step.sgd_update(logits, target, lr=0.3)
    after = F.cross_entropy(updated, target)
    changed = int(updated.argmax()) != int(logits.argmax())
    fell = after.item() < loss.item()
    z, flipped_at = updated, None
    for step in range(2, 51):  # keep stepping until the target leads, if it ever does
        z = one_step.sgd_update(z, target, lr=0.3)[2]
        if int(z.argmax()) == int(target):
            flipped_at = step
            break

    def row(name: str, scores: torch.Tensor) -> list:
        return [name, " ".join(f"{v:.4f}" for v in scores[0].tolist()),
                f"{scores.softmax(-1)[0, 1].item():.4f}", int(scores.argmax())]

    evidence = [
        table("One step, lr 0.3, target 1", ["logits", "values", "p(target)", "argmax"],
              [row("before", logits), row("after", updated)]),
        table("Two ways to score it", ["question", "answer"], [
            ["loss before -> after", f"{loss.item():.6f} -> {after.item():.6f}"],
            ["argmax correct before -> after", f"{int(logits.argmax()) == 1} -> {int(updated.argmax()) == 1}"],
            ["first update after which the target leads", flipped_at if flipped_at else "none within 50"]]),
    ]
    return Measurement(observed=[changed, fell], evidence=evidence)
