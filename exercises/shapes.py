"""Checks for the set ``shapes`` — shape is part of the algorithm (seed 000 §1).

Each function measures the subject as it is (clean or faulted copy) and
returns a :class:`~exercises.outcome.Measurement`.
"""

import torch

from exercises.context import Context
from exercises.outcome import Measurement, first_line, note, table, whole_output


def broadcast_loss(ctx: Context) -> Measurement:
    """Observe the shape that the squared-error loss really compares.

    Predictions (3, 1) equal to targets (3,) value for value — 1, 2, 3 at
    seed 0, three whole numbers from 1 to 9 drawn from the seed at any other —
    so the intended loss is exactly 0; and the same predictions against the
    targets moved by a shift (1 at seed 0, drawn from the seed otherwise),
    where the intended loss is the shift squared. Observed: the shape of the
    per-example error tensor. Seed 000 §1, "Shape is part of the algorithm".
    """
    from exercises.snippets import losses

    device = torch.device(ctx.device)
    g = torch.Generator().manual_seed(ctx.seed)
    values = [1.0, 2.0, 3.0] if ctx.seed == 0 else torch.randint(1, 10, (3,), generator=g).float().tolist()
    shift = 1.0 if ctx.seed == 0 else float(torch.randint(1, 8, (1,), generator=g).item()) / 2
    predictions = torch.tensor(values, device=device).unsqueeze(1)  # (N, 1)
    targets = torch.tensor(values, device=device)  # (N,)
    errors = losses.squared_errors(predictions, targets)
    loss = losses.mse_loss(predictions, targets).item()
    moved = losses.mse_loss(predictions, targets + shift).item()
    rows = [["predictions", tuple(predictions.shape)], ["targets", tuple(targets.shape)],
            ["values", " ".join(f"{v:g}" for v in values)],
            ["squared errors", tuple(errors.shape)], ["loss", loss], ["loss is zero", loss == 0.0],
            [f"loss against targets + {shift:g} (intended {shift * shift:g})", moved]]
    evidence = [table("What the loss compared", ["quantity", "value"], rows)]
    if errors.dim() == 2:
        evidence.append(table("Squared errors: row i = prediction i against every target",
                              ["prediction", *(f"vs {v:g}" for v in values)],
                              [[predictions[i, 0].item(), *errors[i].tolist()] for i in range(errors.shape[0])]))
        evidence.append(note("(3, 1) minus (3,) broadcasts to (3, 3): the diagonal holds the intended pairs, "
                             "the rest are comparisons nobody asked for."))
    return Measurement(observed=list(errors.shape), evidence=evidence)


def squeeze_batch(ctx: Context) -> Measurement:
    """Observe the shape of the candidate scores when the batch holds one example.

    A shared ``nn.Linear(3, 1)`` scores C = 5 candidates per example, giving
    (B, 5, 1) before the squeeze. Measured at B = 4 and at B = 1; observed:
    the score shape at B = 1 (intended (1, 5)). The evidence follows the
    scores into the two lines a training step would run next: cross-entropy
    against (B,) targets and ``argmax(dim=1)`` for accuracy. Seed 000 §1.
    """
    from exercises.snippets import scoring

    device = torch.device(ctx.device)
    g = torch.Generator().manual_seed(ctx.seed)
    scorer = torch.nn.Linear(3, 1).to(device)
    rows, downstream, at_one = [], [], None
    for batch_size in (4, 1):
        candidates = torch.randn(batch_size, 5, 3, generator=g).to(device)  # (B, C, D)
        targets = torch.zeros(batch_size, dtype=torch.long, device=device)  # (B,)
        with torch.no_grad():
            raw = scorer(candidates)  # what the scorer hands to the squeeze
            scores = scoring.candidate_scores(scorer, candidates)
        rows.append([batch_size, tuple(candidates.shape), tuple(raw.shape), tuple(scores.shape)])
        try:
            loss = f"{torch.nn.functional.cross_entropy(scores, targets).item():.4f} (ran)"
        except Exception as exc:  # noqa: BLE001 - the exception is the evidence
            loss = first_line(exc)
        try:
            picked = f"{tuple(scores.argmax(dim=1).shape)} (ran)"
        except Exception as exc:  # noqa: BLE001
            picked = first_line(exc).split(" (")[0]
        downstream.append([batch_size, loss, picked])
        if batch_size == 1:
            at_one = list(scores.shape)
    evidence = [
        table("Shapes through the scorer", ["B", "candidates", "scorer output", "scores"], rows),
        table("The next two lines of a training step", ["B", "cross_entropy(scores, targets)", "argmax(dim=1)"],
              downstream),
    ]
    if len(at_one) != 2:
        evidence.append(note("At B = 1 the unrestricted squeeze removed every size-1 axis, the batch axis too. "
                             "cross_entropy then reads (C,) as one unbatched example and says nothing."))
    return Measurement(observed=at_one, evidence=evidence)


def softmax_axis(ctx: Context) -> Measurement:
    """Observe which axis of the probabilities sums to 1.

    Logits (B, T, V) = (2, 4, 6) from a seeded generator go through the
    subject's ``next_token_probs``. Observed: True when every (b, v) column
    sums to 1 over time (T) within 1e-5, which a softmax over the vocabulary
    does not give. The evidence shows the shapes (equal either
    way) and the range of sums over the vocabulary and over time. Seed 000 §1.
    """
    from exercises.snippets import next_token

    device = torch.device(ctx.device)
    g = torch.Generator().manual_seed(ctx.seed)
    logits = (2.0 * torch.randn(2, 4, 6, generator=g)).to(device)  # (B, T, V)
    probs = next_token.next_token_probs(logits)
    over_vocab = probs.sum(dim=-1)  # (B, T)
    over_time = probs.sum(dim=1)  # (B, V)
    sums_to_one = bool(torch.allclose(over_vocab, torch.ones_like(over_vocab), atol=1e-5))
    columns_sum_to_one = bool(torch.allclose(over_time, torch.ones_like(over_time), atol=1e-5))
    evidence = [
        table("Shapes", ["tensor", "shape"], [["logits", tuple(logits.shape)], ["probs", tuple(probs.shape)]]),
        table("Sums of probs", ["summed over", "min", "max"],
              [["vocabulary (dim -1)", over_vocab.min().item(), over_vocab.max().item()],
               ["time (dim 1)", over_time.min().item(), over_time.max().item()]]),
        table("Batch 0, per position", ["t", "sum over V"],
              [[t, over_vocab[0, t].item()] for t in range(over_vocab.shape[1])]),
    ]
    if not sums_to_one:
        evidence.append(note("Same shape, different calculation: each vocabulary entry was normalised across the "
                             "4 time steps, so no position holds a distribution over tokens."))
    return Measurement(observed=columns_sum_to_one, evidence=evidence)


def pairwise_index(ctx: Context) -> Measurement:
    """Observe the shape of ``submatrix(w, rows=[0, 1, 2], cols=[2, 3, 4])``.

    ``w`` is (4, 6) with ``w[r, c] = 10 * r + c``, so every selected value
    spells the coordinate it came from. Observed: the result's shape
    (intended (3, 3)). Seed 000 §1, "Indexing selects coordinates".
    """
    from exercises.snippets import indexing

    device = torch.device(ctx.device)
    w = (10 * torch.arange(4, device=device)[:, None] + torch.arange(6, device=device)).float()  # (4, 6)
    rows = torch.tensor([0, 1, 2], device=device)
    cols = torch.tensor([2, 3, 4], device=device)
    out = indexing.submatrix(w, rows, cols)
    evidence = [table("Shapes", ["tensor", "shape"],
                      [["w", tuple(w.shape)], ["rows", tuple(rows.shape)], ["cols", tuple(cols.shape)],
                       ["result", tuple(out.shape)]])]
    values = out.to(torch.long).cpu()
    if out.dim() == 2:
        evidence.append(table("Result (w[r, c] = 10·r + c)", ["", "col 2", "col 3", "col 4"],
                              [[f"row {r}", *values[i].tolist()] for i, r in enumerate(rows.tolist())]))
    else:
        evidence.append(table("Result (w[r, c] = 10·r + c)", ["i", "coordinate", "value"],
                              [[i, (r, c), v] for i, (r, c, v) in
                               enumerate(zip(rows.tolist(), cols.tolist(), values.tolist()))]))
        evidence.append(note("Two (3,) index tensors broadcast to (3,): they name three coordinate pairs, "
                             "not a block of rows times columns."))
    return Measurement(observed=list(out.shape), evidence=evidence)


def index_assign(ctx: Context) -> Measurement:
    """Observe whether ``ban_tokens`` changes the logits it is given.

    Logits (2, 5) of zeros; ban token 3 in row 0 and token 0 in row 1 (at
    any other seed than 0, one token per row drawn from the seed).
    Observed: True when ``logits`` is still all zeros afterwards. The evidence shows the
    banned entries and their softmax probability, every logit after the call
    (``ban_tokens``' whole output: a repair that bans more than it was asked
    to differs there), and which indexing expressions share storage with
    ``logits`` (``untyped_storage().data_ptr()``).
    Seed 000 §1, "Indexing selects coordinates" (reads copy, assignment writes).
    """
    from exercises.snippets import indexing

    device = torch.device(ctx.device)
    logits = torch.zeros(2, 5, device=device)  # (B, V)
    rows = torch.tensor([0, 1], device=device)
    g = torch.Generator().manual_seed(ctx.seed)
    banned = [3, 0] if ctx.seed == 0 else torch.randint(0, logits.shape[-1], (2,), generator=g).tolist()
    cols = torch.tensor(banned, device=device)
    before = logits.clone()
    indexing.ban_tokens(logits, rows, cols)
    changed = not torch.equal(logits, before)
    probs = torch.softmax(logits, dim=-1)
    ptr = logits.untyped_storage().data_ptr()
    evidence = [
        table("The banned entries after ban_tokens", ["row", "token", "logit", "probability"],
              [[r, c, logits[r, c].item(), probs[r, c].item()] for r, c in zip(rows.tolist(), cols.tolist())]),
        whole_output("The logits after ban_tokens", logits, "logits", "token"),
        table("Shares logits' storage?", ["expression", "kind of indexing", "shares"],
              [["logits[rows, cols]", "advanced (read)", logits[rows, cols].untyped_storage().data_ptr() == ptr],
               ["logits[0]", "basic slicing", logits[0].untyped_storage().data_ptr() == ptr],
               ["logits[:, 1:3]", "basic slicing", logits[:, 1:3].untyped_storage().data_ptr() == ptr]]),
        table("Facts", ["question", "answer"], [["logits changed", changed]]),
    ]
    if not changed:
        kept = probs[rows, cols].tolist()
        evidence.append(note("Reading logits[rows, cols] made a new tensor; fill_ wrote -inf into that copy, "
                             f"and the banned tokens keep probability {', '.join(f'{q:.3g}' for q in kept)} "
                             f"(1/V for V = {logits.shape[-1]}: every logit is still 0)."))
    return Measurement(observed=not changed, evidence=evidence)


def gather_repeat(ctx: Context) -> Measurement:
    """Observe the gradient the hand-written gather hands back to ``values``.

    ``values = [[10, 20, 30], [40, 50, 60]]`` (float64), ``index = [[0, 2],
    [1, 1]]``: row 1 reads 50 twice. The loss is the sum of the gathered
    values. Observed: ``values.grad`` flattened row by row (6 numbers). The
    evidence sets it beside the gradient of ``torch.gather``'s own backward.
    Seed 000 §1, "gather becomes simple when written as an equation".
    """
    from exercises.snippets import hand_gather

    device = torch.device(ctx.device)
    data = [[10.0, 20.0, 30.0], [40.0, 50.0, 60.0]]
    index = torch.tensor([[0, 2], [1, 1]], device=device)
    values = torch.tensor(data, dtype=torch.float64, device=device, requires_grad=True)
    out = hand_gather.gather(values, index)
    out.sum().backward()
    reference = torch.tensor(data, dtype=torch.float64, device=device, requires_grad=True)
    reference.gather(1, index).sum().backward()
    hand, auto = values.grad.cpu(), reference.grad.cpu()
    agrees = torch.equal(hand, auto)
    evidence = [
        table("Forward: out[i][j] = values[i][index[i][j]]", ["row", "index", "out"],
              [[i, index[i].tolist(), out[i].tolist()] for i in range(2)]),
        table("Gradient of out.sum() with respect to values", ["row", "hand-written", "torch.gather"],
              [[i, hand[i].tolist(), auto[i].tolist()] for i in range(2)]),
        table("Facts", ["question", "answer"], [["hand-written backward matches torch", agrees]]),
    ]
    if not agrees:
        evidence.append(note("scatter_ writes each upstream gradient into its slot instead of adding: the slot "
                             "of 50 receives two writes and keeps one. PyTorch documents scatter_ with repeated "
                             "indices as nondeterministic (which write survives is unspecified); here both "
                             f"writes carry the same upstream gradient, so the slot holds {hand[1, 1].item():g} "
                             "either way, not their sum."))
    return Measurement(observed=[float(v) for v in hand.flatten().tolist()], evidence=evidence)


def token_logprob(ctx: Context) -> Measurement:
    """Observe whether picking the observed tokens' log-probabilities raises.

    Logits (B, T, V) = (2, 3, 5) and targets (2, 3) from a seeded generator.
    Observed: the class name of the exception ``token_log_probs`` raises, or
    ``"none"``. When it runs, the evidence checks the result against
    per-position cross-entropy. Seed 000 §1, "gather ... selects the
    probability of each observed token".
    """
    from exercises.snippets import next_token

    device = torch.device(ctx.device)
    g = torch.Generator().manual_seed(ctx.seed)
    logits = torch.randn(2, 3, 5, generator=g).to(device)  # (B, T, V)
    targets = torch.randint(0, 5, (2, 3), generator=g).to(device)  # (B, T)
    rows = [["logits", tuple(logits.shape)], ["targets", tuple(targets.shape)]]
    try:
        picked = next_token.token_log_probs(logits, targets)
    except Exception as exc:  # noqa: BLE001 - the exception is the observation
        rows.append(["result", "(raised)"])
        evidence = [table("Shapes", ["tensor", "shape"], rows),
                    note(first_line(exc)),
                    note("gather wants an index with as many axes as its input: (B, T, V) needs (B, T, 1), "
                         "one vocabulary entry per (b, t). It never broadcasts the index.")]
        return Measurement(observed=type(exc).__name__, evidence=evidence)
    rows.append(["result", tuple(picked.shape)])
    ce = torch.nn.functional.cross_entropy(logits.transpose(1, 2), targets, reduction="none")  # (B, T)
    gap = (picked + ce).abs().max().item() if picked.shape == ce.shape else float("nan")
    evidence = [table("Shapes", ["tensor", "shape"], rows),
                table("Batch 0", ["t", "target", "log-prob", "-cross_entropy"],
                      [[t, targets[0, t].item(), picked[0, t].item(), -ce[0, t].item()] for t in range(3)]
                      if picked.shape == ce.shape else []),
                note(f"max |log-prob + cross_entropy| = {gap:.2e}")]
    return Measurement(observed="none", evidence=evidence)


def _keepdims_spelling() -> str:
    """The shape ``sum(-1, keepdims=True)`` gives on (2, 3, 5), or the exception it raises."""
    try:
        return str(tuple(torch.ones(2, 3, 5).sum(-1, keepdims=True).shape))
    except TypeError as exc:
        return first_line(exc, limit=60)


def keepdim_sum(ctx: Context) -> Measurement:
    """Normalise counts with ``normalize.counts_to_probs`` at two shapes.

    Integer counts in [1, 9] (float32) of shape (B, T, V) = (2, 3, 5), then
    (4, 4, 4), where B, T and V are equal. Observed: ``[exception class at
    (2, 3, 5) or "none", do all rows sum to 1 at (4, 4, 4)]``. Seed 000 §1, "Shape is
    part of the algorithm" (keepdim=True keeps the reduced axis visible).
    """
    from exercises.snippets.normalize import counts_to_probs

    g = torch.Generator().manual_seed(ctx.seed)
    rows, outcomes = [], []
    for shape in ((2, 3, 5), (4, 4, 4)):
        counts = torch.randint(1, 10, shape, generator=g).float().to(ctx.device)
        try:
            probs = counts_to_probs(counts)
            sums = probs.sum(dim=-1)  # (B, T)
            ok = bool(torch.allclose(sums, torch.ones_like(sums), atol=1e-6))
            outcomes.append(("none", ok))
            rows.append([str(shape), str(tuple(probs.shape)), f"{sums.min().item():.4g} .. {sums.max().item():.4g}"])
        except Exception as exc:  # a shape error is an observation
            outcomes.append((type(exc).__name__, False))
            rows.append([str(shape), first_line(exc, limit=70), "-"])
    totals = torch.ones(2, 3, 5).sum(dim=-1)
    spelling = _keepdims_spelling()
    evidence = [
        table("counts_to_probs(counts)", ["counts", "result shape / error", "row sums"], rows),
        table("Shapes of the row totals", ["expression", "shape"], [
            ["counts.sum(-1, keepdim=True)", str(tuple(torch.ones(2, 3, 5).sum(-1, keepdim=True).shape))],
            ["counts.sum(-1)", str(tuple(totals.shape))],
            ["counts.sum(-1, keepdims=True) (NumPy's spelling)", spelling]]),
        note("PyTorch documents the keyword as keepdim. " + (
            "This release also accepts NumPy's keepdims, silently and with the same result; it is not in "
            "the documentation, so write keepdim." if spelling == "(2, 3, 1)" else
            "NumPy's keepdims is not accepted here.")),
    ]
    if outcomes[1] == ("none", False):
        evidence.append(note("At (4, 4, 4) the (4, 4) totals broadcast against the last two axes: entry "
                             "[b, t, v] was divided by totals[t, v], not by its own row's total. No error, "
                             "wrong numbers."))
    return Measurement(observed=[outcomes[0][0], outcomes[1][1]], evidence=evidence)


def batched_transpose(ctx: Context) -> Measurement:
    """The shape of ``key_transpose.keys_for_scores`` on keys (B, H, T, D) = (2, 3, 5, 4).

    Observed: that shape, as a list. Evidence: whether ``scores(q, k)`` runs
    and its shape, any warning PyTorch raised, and every entry of what
    ``keys_for_scores`` returns (:func:`~exercises.outcome.whole_output`: a
    repair with the right shape and the entries in the wrong places, such
    as a reshape to (B, H, D, T), differs there). Seed 000 §4 ("for a
    batched tensor, .T is not a synonym for transpose the matrix inside each
    batch").
    """
    import warnings

    from exercises.snippets.key_transpose import keys_for_scores, scores

    g = torch.Generator().manual_seed(ctx.seed)
    q = torch.randn(2, 3, 5, 4, generator=g).to(ctx.device)  # (B, H, T, D)
    k = torch.randn(2, 3, 5, 4, generator=g).to(ctx.device)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kt = keys_for_scores(k)
        try:
            outcome = f"ran: {tuple(scores(q, k).shape)}"
        except Exception as exc:  # the shape error is the observation
            outcome = first_line(exc, limit=90)
    said = [str(w.message).split(". ")[0] + "." for w in caught]
    evidence = [
        table("Keys (B, H, T, D) = (2, 3, 5, 4)", ["expression", "value"], [
            ["keys_for_scores(k).shape", str(tuple(kt.shape))], ["k.transpose(-2, -1).shape", str(tuple(k.transpose(-2, -1).shape))],
            ["scores(q, k)", outcome]]),
        whole_output("What keys_for_scores(k) returns, all of it", kt, "keys_for_scores(k)"),
        note("PyTorch warned: " + said[0] if said else "PyTorch raised no warning."),
    ]
    return Measurement(observed=list(kt.shape), evidence=evidence)
