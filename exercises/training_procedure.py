"""Checks for the set ``training``: what counts as one update, and what does
not (seed 001, "Backward and update are different operations", "Common
mistakes and misconceptions"; seed 000 §7).

An update is ``optimizer.step()`` and nothing else: not ``backward()``, not
``model.train()``, not an epoch. These checks count updates with a step
pre-hook and compare weights, so the claim is measured rather than read.
"""

import math

import torch

from exercises.context import Context
from exercises.outcome import Measurement, note, table


def _flat(model: torch.nn.Module) -> torch.Tensor:
    """Every parameter of ``model`` as one 1-D float64 vector (a tied matrix once)."""
    return torch.cat([p.detach().double().flatten() for p in model.parameters()])


def _batch(ctx: Context, V: int, B: int, T: int):
    """A random (B, T) batch and its next-token targets, from a generator seeded with ctx.seed."""
    g = torch.Generator().manual_seed(ctx.seed)
    data = torch.randint(0, V, (B, T + 1), generator=g)
    return data[:, :-1].contiguous().to(ctx.device), data[:, 1:].contiguous().to(ctx.device)


def step_per_microbatch(ctx: Context) -> Measurement:
    """``engine.train.accumulated_step`` on 4 microbatches against one full-batch ``train_step``.

    Two copies of the small engine GPT (one layer, same seed, float64),
    AdamW lr 1e-3 without decay. The full batch (8, 32) takes one ``train_step``; the other
    copy takes one ``accumulated_step`` over the same batch cut into 4
    microbatches of 2 rows. A step pre-hook counts the optimizer's updates.
    Observed: ``[updates the accumulated route took, its weights equal the
    full batch's within 1e-6]``. Seed 001, "Backward and update are
    different operations" (stepping after each piece is a different
    procedure).
    """
    from engine.train import accumulated_step, make_optimizer, train_step

    full = ctx.gpt("small", n_layer=1).double()  # float64: the routes' rounding stays far below 1e-6
    pieces = ctx.gpt("small", n_layer=1).double()
    x, y = _batch(ctx, full.config.vocab_size, 8, 32)
    microbatches = [(x[i:i + 2], y[i:i + 2]) for i in range(0, 8, 2)]
    start = _flat(pieces)
    train_step(full, make_optimizer(full, lr=1e-3, weight_decay=0.0), x, y)
    optimizer = make_optimizer(pieces, lr=1e-3, weight_decay=0.0)
    updates: list[int] = []
    optimizer.register_step_pre_hook(lambda opt, args, kwargs: updates.append(1))
    mean = accumulated_step(pieces, optimizer, microbatches)
    gap = (_flat(pieces) - _flat(full)).abs().max().item()
    same = gap <= 1e-6
    evidence = [
        table("One full batch (8, 32) against 4 microbatches (2, 32)", ["quantity", "value"], [
            ["optimizer updates, full batch", 1], ["optimizer updates, microbatch route", len(updates)],
            ["max |Δ weights| between the routes", gap], ["same weights (1e-6)", same],
            ["max |change| of the microbatch route's weights", (_flat(pieces) - start).abs().max().item()],
            ["loss it reported", f"{mean:.5f}"]]),
    ]
    if len(updates) > 1:
        evidence.append(note(f"{len(updates)} updates instead of one: each microbatch's gradient was taken at "
                             "weights the previous update had already moved, and AdamW took a full-size "
                             "step each time. That is a different procedure, not a bigger batch."))
    return Measurement(observed=[len(updates), same], evidence=evidence)


def clip_nonfinite(ctx: Context) -> Measurement:
    """``train_step(max_norm=1.0)`` on a GPT whose forward is already non-finite.

    The small engine GPT (one layer) with one entry of its token table set
    to +inf, at a token the batch (4, 16) uses. One ``train_step`` with
    clipping to norm 1.0 (AdamW lr 1e-3); a step pre-hook reads the clipped
    gradients the optimizer is about to use. Observed: ``[the loss is finite,
    the clipped gradient norm is finite, some weight that was finite before
    the step is NaN after it]``: the last is what the step did to the healthy
    weights, not the planted +inf (which is left out of it). Seed 000 §7
    ("Gradient clipping cannot repair a forward pass that has already
    produced invalid values").
    """
    from engine.train import make_optimizer, train_step

    model = ctx.gpt("small", n_layer=1)
    x, y = _batch(ctx, model.config.vocab_size, 4, 16)
    with torch.no_grad():
        model.wte.weight[int(x[0, 0]), 0] = float("inf")  # one overflowed entry
    optimizer = make_optimizer(model, lr=1e-3, weight_decay=0.0)
    seen: dict = {}

    def read(opt, args, kwargs):
        grads = [p.grad for group in opt.param_groups for p in group["params"] if p.grad is not None]
        seen["norm"] = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])).item()
        seen["nonfinite"] = sum(int((~torch.isfinite(g)).sum()) for g in grads)

    optimizer.register_step_pre_hook(read)
    healthy = torch.isfinite(_flat(model))  # every weight but the planted +inf
    loss = train_step(model, optimizer, x, y, max_norm=1.0)
    weights = _flat(model)
    poisoned = int(torch.isnan(weights[healthy]).sum())  # finite before the step, NaN after it
    observed = [math.isfinite(loss), math.isfinite(seen["norm"]), poisoned > 0]
    evidence = [
        table("One train_step with max_norm = 1.0", ["quantity", "value"], [
            ["loss", loss], ["gradient norm the optimizer used (after clipping)", seen["norm"]],
            ["non-finite gradient entries", f"{seen['nonfinite']:,}"],
            ["non-finite weights after the step", f"{int((~torch.isfinite(weights)).sum()):,} of {weights.numel():,}"],
            ["finite before the step, NaN after it (graded)", f"{poisoned:,} of {int(healthy.sum()):,}"]]),
        note("Clipping multiplies every gradient by max_norm / norm. When the norm is NaN so is that factor, "
             "and it spreads to every gradient it touches: the place to look is the first operation whose "
             "output was not finite (the non-finite ledger), not the gradient."),
    ]
    return Measurement(observed=observed, evidence=evidence)


def mode_not_step(ctx: Context) -> Measurement:
    """What ``model.train()`` and ``model.eval()`` change, and what they do not.

    The small engine GPT with dropout 0.1 and a batch (2, 16). Three
    questions, measured: does ``model.train()`` change any weight; after
    ``model.eval()``, does a diagnostic ``loss.backward()`` fill every
    parameter's ``.grad`` (eval mode does not switch autograd off); and do
    two forwards in train mode agree (dropout is on). Observed: the three
    answers in that order. Seed 001, "Parts 3 and 4" (``model.train()``
    selects training behaviour; it does not take a training step) and
    "Common mistakes" (diagnostic backward computations can validly be run
    in eval mode).
    """
    model = ctx.gpt("small", dropout=0.1).eval()
    x, y = _batch(ctx, model.config.vocab_size, 2, 16)
    before = _flat(model)
    model.train()
    changed = not torch.equal(_flat(model), before)
    with torch.no_grad():
        first, _ = model(x)
        second, _ = model(x)
    train_equal = torch.equal(first, second)
    model.eval()
    _, loss = model(x, targets=y)
    loss.backward()
    params = list(model.parameters())
    filled = sum(p.grad is not None and bool(torch.isfinite(p.grad).all()) for p in params)
    all_filled = filled == len(params)
    evidence = [
        table("Mode switches against what changes", ["question", "answer"], [
            ["model.train() changed a weight", changed],
            ["two forwards in train mode (dropout 0.1) agree", train_equal],
            ["loss.backward() in eval mode: parameters with a finite .grad", f"{filled} of {len(params)}"],
            ["eval-mode loss requires grad", loss.requires_grad]]),
        note("model.train() and model.eval() set one flag, module.training, on every submodule; layers such as "
             "dropout read it on each call. No weight, no gradient and no optimizer state is touched, and "
             "autograd records in either mode: only torch.no_grad() or inference_mode stops it."),
    ]
    return Measurement(observed=[changed, all_filled, train_equal], evidence=evidence)


def steps_not_epoch(ctx: Context) -> Measurement:
    """How much of the training text random batches have scored after one "epoch" of steps.

    The engine corpus (200,000 characters), its training split (90 %), and
    ``engine.data.get_batch`` with B = 8, T = 32 and a generator seeded with
    ``ctx.seed``: as many steps as there are (B·T)-sized pieces in the split,
    N / (B·T). Observed: the fraction of the split's target positions that
    were a target at least once, to 3 decimals. Evidence: how many times
    positions were scored. Seed 001, "Common mistakes and misconceptions"
    ("An optimizer step is an epoch." A step is one update; an epoch is a
    pass through a defined dataset).
    """
    from engine.data import get_batch, split
    from exercises.training_common import corpus

    data, _ = corpus(ctx)
    train, _ = split(data.cpu())
    B, T = 8, 32
    N = len(train)
    steps = N // (B * T)
    g = torch.Generator().manual_seed(ctx.seed)
    hits = torch.zeros(N, dtype=torch.int64)
    positions = torch.arange(N)  # batching the positions themselves: y holds each target's position
    for _ in range(steps):
        _, y = get_batch(positions, B, T, generator=g)  # (B, T)
        hits.index_add_(0, y.flatten(), torch.ones(B * T, dtype=torch.int64))
    covered = round(float((hits > 0).float().mean()), 3)
    counts = torch.bincount(hits.clamp(max=4), minlength=5).tolist()
    evidence = [
        table("Random windows, one epoch's worth of steps", ["quantity", "value"], [
            ["training tokens N", f"{N:,}"], ["targets per step B x T", B * T], ["steps N / (B x T)", steps],
            ["targets scored in all", f"{steps * B * T:,}"], ["positions scored at least once", covered],
            ["1 - 1/e", f"{1 - math.exp(-1):.3f}"]]),
        table("How often each position was a target", ["times", "positions"],
              [[k if k < 4 else "4 or more", f"{c:,}"] for k, c in enumerate(counts)]),
    ]
    return Measurement(observed=covered, evidence=evidence)


def reversed_stress(ctx: Context) -> Measurement:
    """The seed's fit-versus-stress bigram, scored on two other stress strings.

    Bigram(2) in float64, SGD lr 1.0, 40 ``train_step`` updates on the
    snippet's 0 1 0 1 0 1 0 1 0, as ``fit-vs-stress`` trains it. Scored before
    and after on the repeated-ones string 1 1 1 1 1 1 1 1 1 and on the
    training string reversed, 1 0 1 0 1 0 1 0 1. Observed: ``[the ones
    string's loss rose, the reversed string's loss rose]``. Evidence: the
    learned next-token probabilities (which transitions training rewarded).
    Seed 001, lab "TRY THIS: Reverse the stress string's pattern. Predict
    which transition is rewarded."
    """
    from engine.train import evaluate, train_step
    from exercises.snippets.fit_stress import TRAIN_IDS, Bigram, shifted_pairs

    model = Bigram(2).double().to(ctx.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    train = [t.to(ctx.device) for t in shifted_pairs(torch.tensor([TRAIN_IDS]))]
    strings = {"1 1 1 1 1 1 1 1 1": [1] * 9, "1 0 1 0 1 0 1 0 1": [1 - t for t in TRAIN_IDS]}
    pairs = {name: [t.to(ctx.device) for t in shifted_pairs(torch.tensor([ids]))] for name, ids in strings.items()}
    before = {name: evaluate(model, *p) for name, p in pairs.items()}
    for _ in range(40):
        train_step(model, optimizer, *train)
    after = {name: evaluate(model, *p) for name, p in pairs.items()}
    probs = model.table.weight.detach().softmax(-1).cpu()  # (2, 2): row = current id
    rose = [after[name] > before[name] + 1e-9 for name in strings]
    evidence = [
        table("Stress loss (nats) before and after 40 updates on 0 1 0 1 …", ["stress string", "before", "after"],
              [[name, before[name], after[name]] for name in strings]),
        table("What training rewarded: P(next | current)", ["current", "next 0", "next 1"],
              [[k, f"{probs[k, 0]:.4f}", f"{probs[k, 1]:.4f}"] for k in range(2)]),
        note("The alternating string rewards two transitions, 0 -> 1 and 1 -> 0, and punishes their opposites: "
             "any string that repeats a token gets worse, and any string made of alternations gets better, "
             "whatever its first token."),
    ]
    return Measurement(observed=rose, evidence=evidence)


def teacher_forcing(ctx: Context) -> Measurement:
    """One teacher-forced forward against one forward per prefix.

    The small engine GPT in eval mode and one random sequence of 13 ids:
    inputs x (1, 12), targets y (1, 12). Teacher forcing scores every
    position in one forward over the true x. The same 12 losses are then
    computed the slow way: for each t, a forward over the true prefix
    x[:, :t + 1] alone, scoring its last position. Observed: True when the
    two differ at position 0 by more than 1e-5 (the first token has no earlier
    one to read, only later ones). Evidence: both lists. Seed 001, "Make the
    target unambiguous" (the correct earlier tokens are supplied as
    context, and the causal mask keeps later ones out of each prediction).
    """
    import torch.nn.functional as F

    model = ctx.gpt("small").eval()
    g = torch.Generator().manual_seed(ctx.seed)
    seq = torch.randint(0, model.config.vocab_size, (1, 13), generator=g).to(ctx.device)
    x, y = seq[:, :-1], seq[:, 1:]  # (1, 12) each
    with torch.no_grad():
        logits, _ = model(x)  # (1, 12, V): every position in one pass
        one_pass = F.cross_entropy(logits[0], y[0], reduction="none")  # (12,)
        prefixes = torch.stack([
            F.cross_entropy(model(x[:, :t + 1])[0][0, -1:], y[0, t:t + 1]) for t in range(x.size(1))])
    gap = (one_pass - prefixes).abs().max().item()
    agree = gap <= 1e-5
    evidence = [
        table("Loss at each position (nats)", ["t", "one forward", "prefix x[:, :t+1] alone"],
              [[t, f"{a:.6f}", f"{b:.6f}"] for t, (a, b) in enumerate(zip(one_pass.tolist(), prefixes.tolist()))]),
        table("Agreement", ["quantity", "value"], [["max |Δ|", gap], ["forwards needed", f"1 against {x.size(1)}"]]),
    ]
    if not agree:
        evidence.append(note("In one pass, position t's prediction read tokens after t; alone, its prefix had "
                             "none to read. The two are no longer the same computation, and the one-pass "
                             "loss rewards looking ahead."))
    first_differs = abs(one_pass[0].item() - prefixes[0].item()) > 1e-5
    return Measurement(observed=first_differs, evidence=evidence)


def evaluate_on_error(ctx: Context) -> Measurement:
    """Does ``engine.train.evaluate`` give the caller back its train mode, also when it raises?

    The small engine GPT with dropout 0.1, in train mode (block_size 32).
    First ``evaluate`` on a good (2, 16) batch; then on a batch of 40
    tokens, longer than block_size, which the GPT refuses with a ValueError
    (caught here, as a training loop that logs and goes on would catch it).
    Observed: ``[model.training after the good call, model.training after
    the failing call]``. Evidence: the error's first line, and whether the
    next two forwards differ (dropout on). Seed 001, Part 6 ("Our helper
    restores the caller's root train/eval mode, even on an error").
    """
    from engine.train import evaluate

    from exercises.outcome import first_line

    model = ctx.gpt("small", dropout=0.1)
    x, y = _batch(ctx, model.config.vocab_size, 2, 16)
    long_x, long_y = _batch(ctx, model.config.vocab_size, 2, model.config.block_size + 8)
    evaluate(model, x, y)
    after_good = model.training
    try:
        evaluate(model, long_x, long_y)
        error = "none"
    except Exception as exc:  # the outcome to report
        error = first_line(exc, limit=80)
    after_error = model.training
    with torch.no_grad():
        differ = not torch.equal(model(x)[0], model(x)[0])
    evidence = [
        table("evaluate() called from train mode", ["call", "result", "model.training after"], [
            ["good batch (2, 16)", "a loss", after_good],
            [f"too long (2, {model.config.block_size + 8})", error, after_error]]),
        table("Next training forward", ["question", "answer"], [["dropout active (two forwards differ)", differ]]),
    ]
    if not after_error:
        evidence.append(note("The error left evaluate() before the line that restores the mode: the model "
                             "stays in eval mode, and every later training step runs without dropout."))
    return Measurement(observed=[after_good, after_error], evidence=evidence)


def mask_times_nan(ctx: Context) -> Measurement:
    """The snippet's ``masked_mean`` with a NaN at a padded position.

    The same two sequences as ``masked-mean`` (lengths 1 and 3, losses 1 and
    3; padding 7), but one padded position holds NaN, as a padded position
    whose forward overflowed would. Observed: whether the mean is NaN.
    Evidence: the mean, 0 * NaN and what torch.where keeps there. Seed 000 §7 ("avoid assuming that
    multiplying an invalid value by zero removes it: 0 * NaN is still
    NaN").
    """
    from exercises.snippets.masked_loss import masked_mean

    device = torch.device(ctx.device)
    losses = torch.tensor([[1.0, 7.0, float("nan")], [3.0, 3.0, 3.0]], dtype=torch.float64, device=device)
    mask = torch.tensor([[True, False, False], [True, True, True]], device=device)
    value = masked_mean(losses, mask).item()
    finite = math.isfinite(value)
    evidence = [
        table("Losses with a NaN under the padding", ["quantity", "value"], [
            ["losses", "[[1, 7, nan], [3, 3, 3]]"], ["mask", "[[1, 0, 0], [1, 1, 1]]"],
            ["masked_mean", value], ["0 * NaN", (torch.tensor(0.0) * torch.tensor(float("nan"))).item()],
            ["torch.where(mask, losses, 0) at the NaN", torch.where(mask, losses, torch.zeros_like(losses))[0, 2].item()]]),
    ]
    if not finite:
        evidence.append(note("Multiplying by the mask computed 0 * NaN = NaN at the padded position, and the sum "
                             "carried it into the mean."))
    return Measurement(observed=math.isnan(value), evidence=evidence)


def _where_backward_table(device: torch.device) -> dict:
    """x.grad of where(mask, log(x), 0).sum() against log(where(mask, x, 1)).sum() at x = [0, 2].

    Seed 000 §7: prevent invalid operations rather than masking only their
    final outputs. Both sums are log 2; the first gradient is [nan, 0.5],
    the second [0, 0.5].
    """
    mask = torch.tensor([False, True], device=device)
    grads = []
    for masks_output in (True, False):
        x = torch.tensor([0.0, 2.0], device=device, requires_grad=True)
        if masks_output:
            y = torch.where(mask, torch.log(x), torch.zeros_like(x)).sum()
        else:
            y = torch.log(torch.where(mask, x, torch.ones_like(x))).sum()
        y.backward()
        grads.append((y.item(), x.grad.tolist()))
    return table("Backward through a mask, x = [0, 2], mask = [no, yes]", ["spelling", "sum", "x.grad"], [
        ["where(mask, log(x), 0)", grads[0][0], str(grads[0][1])],
        ["log(where(mask, x, 1))", grads[1][0], str(grads[1][1])]])


def mask_the_input(ctx: Context) -> Measurement:
    """The snippet's ``masked_nll`` where a padded position's probability is 0.

    Two sequences of lengths 2 and 1 padded to 2; target probabilities
    [[0.5, 0.25], [0.5, 0]], the 0 under the padding. The mean is
    (ln 2 + ln 4 + ln 2) / 3 = 4 ln 2 / 3 = 0.924 nats either way; the
    gradient at a real probability p is -1 / (3 p). Observed: [is the loss
    finite, is every gradient entry finite]. Evidence: the loss, its
    gradient, and both spellings of a masked log, backward, side by side. Seed 000 §7 ("prevent invalid
    operations where possible rather than masking only their final
    outputs").
    """
    from exercises.snippets.masked_loss import masked_nll

    device = torch.device(ctx.device)
    probs = torch.tensor([[0.5, 0.25], [0.5, 0.0]], dtype=torch.float64, device=device, requires_grad=True)
    mask = torch.tensor([[True, True], [True, False]], device=device)
    loss = masked_nll(probs, mask)
    loss.backward()
    grad = probs.grad
    observed = [math.isfinite(loss.item()), bool(torch.isfinite(grad).all())]
    evidence = [
        table("Mean -log p over the real positions", ["quantity", "value"], [
            ["probs", "[[0.5, 0.25], [0.5, 0 (padding)]]"], ["loss (nats)", loss.item()],
            ["4 ln 2 / 3", 4 * math.log(2) / 3], ["probs.grad", str([[round(g, 4) for g in row] for row in grad.tolist()])],
            ["-1 / (3 p) at 0.5, 0.25", str([round(-1 / 1.5, 4), round(-1 / 0.75, 4)])]]),
    ]
    evidence.append(_where_backward_table(device))
    if observed[0] and not observed[1]:
        evidence.append(note("The forward selected 0 at the padding, so the loss is right; backward sent that branch "
                             "a gradient of 0, and the log's derivative there is 1/0 = inf: 0 * inf = NaN in the "
                             "padded entry's gradient, and any optimizer step would spread it."))
    evidence.append(note("torch.where keeps an invalid value out of the forward value only. Make the invalid value "
                         "impossible (feed log a safe input) instead of masking only the output."))
    return Measurement(observed=observed, evidence=evidence)


def evaluate_mixed_modes(ctx: Context) -> Measurement:
    """What ``engine.train.evaluate`` gives back to a model whose modes were mixed on purpose.

    The small engine GPT (2 layers) with dropout 0.1, in train mode, with its
    first block switched to eval mode by the caller (a frozen block whose
    dropout should stay off while the rest trains). One ``evaluate`` on a
    (2, 16) batch. Observed: ``[the model is in train mode afterwards, the
    first block is still in eval mode afterwards]``, read from the modules'
    own ``training`` flags. Evidence: each block's mode before and after, and
    the fraction of the first block's residual-dropout inputs zeroed in the
    next training forward (about 0.1 when its dropout is back on). Seed 001,
    Part 6 ("Our helper restores the caller's root train/eval mode", and not
    a deliberately mixed one).
    """
    from engine.train import evaluate

    model = ctx.gpt("small", dropout=0.1)
    model.train()
    model.blocks[0].eval()  # the caller's choice: the first block runs without dropout
    before = [model.training, *(block.training for block in model.blocks)]
    x, y = _batch(ctx, model.config.vocab_size, 2, 16)
    evaluate(model, x, y)
    after = [model.training, *(block.training for block in model.blocks)]
    seen: dict = {}

    def count(_module, args, out) -> None:
        kept = args[0] != 0
        seen["zeroed"] = ((out == 0) & kept).sum().item() / max(int(kept.sum()), 1)

    hook = model.blocks[0].attn.resid_dropout.register_forward_hook(count)
    with torch.no_grad():
        model(x)
    hook.remove()
    mode = {True: "train", False: "eval"}
    evidence = [
        table("Modes around one evaluate()", ["module", "before", "after"],
              [["model", mode[before[0]], mode[after[0]]],
               *[[f"blocks[{i}]", mode[b], mode[a]] for i, (b, a) in enumerate(zip(before[1:], after[1:]))]]),
        table("Next training forward", ["question", "answer"],
              [["blocks[0]'s residual dropout: inputs zeroed", f"{seen['zeroed']:.3f}"]]),
    ]
    if after[1]:
        evidence.append(note("model.train(True) sets every submodule, so restoring the root's mode undid the "
                             "caller's choice: the first block trains with dropout again."))
    return Measurement(observed=[after[0], not after[1]], evidence=evidence)
