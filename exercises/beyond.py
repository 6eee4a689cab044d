"""Checks for the set ``beyond`` — the same reasoning past the transformer (seed 000, §8).

A nearest-neighbour lookup rewritten as an affine score, group-relative
baselines for post-training rewards, and the rank offset that keeps
distributed data windows apart.
"""

from __future__ import annotations

import torch

from exercises.context import Context
from exercises.outcome import Measurement, note, table

LABELS = ("A", "B")


def nn_affine(ctx: Context) -> Measurement:
    """Nearest neighbour as 2q·x − ‖x‖², then the classifier in ``snippets/neighbours.py``.

    Part 1: 64 random queries against 200 random exemplars (D = 8): the
    argmax of the affine score against the argmin of the L2 distance
    (``torch.cdist``). Part 2: the query q = 0 and three exemplars on the
    axes with ‖x_i‖² = −ln p_i for p = [0.45, 0.30, 0.25], so softmax of the
    scores is exactly p; labels [A, B, B]. Observed: the label ``classify``
    gives that query, as a choice id ``a`` (A) or ``b`` (B). Seed 000, §8.
    """
    from exercises.snippets.neighbours import affine_scores, classify

    device = torch.device(ctx.device)
    g = torch.Generator().manual_seed(ctx.seed)
    Q = torch.randn(64, 8, generator=g, dtype=torch.float64).to(device)
    X = torch.randn(200, 8, generator=g, dtype=torch.float64).to(device)
    by_l2 = torch.cdist(Q, X).argmin(dim=-1)
    by_affine = affine_scores(Q, X).argmax(dim=-1)
    agree = int((by_l2 == by_affine).sum())

    p = torch.tensor([0.45, 0.30, 0.25], dtype=torch.float64)
    exemplars = torch.diag(torch.sqrt(-torch.log(p))).to(device)  # (3, 3): ||x_i||² = -ln p_i
    labels = torch.tensor([0, 1, 1], device=device)
    query = torch.zeros(1, 3, dtype=torch.float64, device=device)
    probs = torch.softmax(affine_scores(query, exemplars), dim=-1)[0]
    label = int(classify(query, exemplars, labels, n_classes=2)[0])
    per_class = [float(probs[labels == c].sum()) for c in range(2)]
    evidence = [
        table("L2 argmin against affine argmax (64 queries, 200 exemplars, D=8)", ["quantity", "value"],
              [["queries that agree", f"{agree} / 64"], ["dtype", "float64"]]),
        table("Query q = 0 against three exemplars", ["exemplar", "label", "‖q − x‖²", "softmax p"],
              [[i, LABELS[int(labels[i])], f"{float(exemplars[i] @ exemplars[i]):.4f}", f"{float(probs[i]):.2f}"]
               for i in range(3)]),
        table("Classifier", ["quantity", "value"],
              [["nearest exemplar", f"{int(probs.argmax())} (label {LABELS[int(labels[probs.argmax()])]})"],
               ["class mass A / B", f"{per_class[0]:.2f} / {per_class[1]:.2f}"],
               ["classify() returns", LABELS[label]]]),
    ]
    return Measurement(observed="ab"[label], evidence=evidence)


def group_baseline(ctx: Context) -> Measurement:
    """Group-relative advantages from ``snippets/advantages.py`` on rewards (B=3, G=4).

    Rewards: prompt 0 [1, 1, 1, 0] (easy), prompt 1 [0, 0, 0, 1] (hard),
    prompt 2 [1, 1, 1, 1] (every response equal). Observed: True when any of
    prompt 2's advantages is further than 1e-6 from zero: a response credited
    although its group could not tell its responses apart. The evidence adds
    whether each row is centred on its own prompt. Seed 000, §8, "Post-training makes the same distinctions
    more consequential".
    """
    from exercises.snippets.advantages import advantages

    rewards = torch.tensor([[1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0]],
                           device=ctx.device)
    baseline, adv = advantages(rewards)
    row_sums = adv.sum(dim=1)
    centred = bool((row_sums.abs() <= 1e-6).all())
    credited = bool((adv[2].abs() > 1e-6).any())  # prompt 2's equal responses given an advantage
    evidence = [
        table("Rewards (B=3 prompts, G=4 responses)", ["prompt", "rewards", "advantages", "row sum"],
              [[b, " ".join(f"{v:g}" for v in rewards[b].tolist()), " ".join(f"{v:+.2f}" for v in adv[b].tolist()),
                f"{float(row_sums[b]):+.3f}"] for b in range(3)]),
        table("Baseline", ["quantity", "value"],
              [["baseline shape", tuple(baseline.shape)], ["baseline", " ".join(f"{v:.3f}" for v in baseline.flatten().tolist())],
               ["advantages shape", tuple(adv.shape)], ["every row centred", centred]]),
        note("Prompt 2's responses all earned 1: "
             + ("this baseline is not its own group's mean, so they get a nonzero advantage although their "
                "group could not tell them apart." if credited else
                "a baseline taken over each prompt's own group gives them zero advantage.")),
    ]
    return Measurement(observed=credited, evidence=evidence)


def _rank_main(rank: int, world: int, store: str, n_tokens: int, B: int, T: int, steps: int, conn) -> None:
    """One process: join the gloo group, read ``steps`` spans, gather every rank's token positions.

    The ranks meet through a file (``store``, a FileStore) and gloo talks over
    the loopback interface (``GLOO_SOCKET_IFNAME=lo``): neither asks for the
    machine's hostname, which a side's network namespace cannot resolve and
    which c10d and gloo would otherwise warn about on stderr before the evidence.
    """
    import datetime
    import os

    import torch.distributed as dist

    from exercises.snippets.shards import ShardedLoader

    try:
        torch.set_num_threads(1)
        os.environ["GLOO_SOCKET_IFNAME"] = "lo"
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=30))
        loader = ShardedLoader(n_tokens, B, T, rank, world)
        spans = [loader.next_span() for _ in range(steps)]
        mine = torch.zeros(n_tokens, dtype=torch.int64)
        for start, end in spans:
            mine[start:end] += 1
        everyone = [torch.zeros(n_tokens, dtype=torch.int64) for _ in range(world)]
        dist.all_gather(everyone, mine)
        dist.destroy_process_group()
        conn.send(("ok", spans, [t.tolist() for t in everyone] if rank == 0 else None))
    except BaseException as exc:  # reported to the check, never raised in the child
        conn.send(("error", f"{type(exc).__name__}: {exc}", None))
    finally:
        conn.close()


def rank_offset(ctx: Context) -> Measurement:
    """Two processes read one token stream through ``snippets/shards.py``.

    The check starts 2 processes (fork) that form a torch.distributed group
    on the gloo backend over loopback 127.0.0.1, meeting through a file in the
    side's own temporary folder. Each reads 4
    batches (B=2, T=8) from a 1,000-token stream and all-gathers a count of
    how often it read each position. Observed: how many distinct positions
    the two ranks read between them (128 when their windows are disjoint,
    fewer for every position both read). Seed 000, §8, "Distributed data".
    """
    import multiprocessing
    import os
    import tempfile

    world, n_tokens, B, T, steps = 2, 1000, 2, 8, 4
    mp = multiprocessing.get_context("fork")
    store = os.path.join(tempfile.mkdtemp(prefix="rank-store-"), "store")
    pipes = [mp.Pipe(duplex=False) for _ in range(world)]
    procs = [mp.Process(target=_rank_main, args=(r, world, store, n_tokens, B, T, steps, pipes[r][1]))
             for r in range(world)]
    for p in procs:
        p.start()
    for _, send_end in pipes:
        send_end.close()
    results = []
    try:
        for r, (recv_end, _) in enumerate(pipes):
            if not recv_end.poll(60):
                raise TimeoutError(f"rank {r} sent nothing within 60 s")
            results.append(recv_end.recv())
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
                p.join()
    errors = [r[1] for r in results if r[0] != "ok"]
    if errors:
        raise RuntimeError(f"a rank failed: {errors[0]}")
    counts = torch.tensor(results[0][2])  # (world, n_tokens)
    both = int(((counts[0] > 0) & (counts[1] > 0)).sum())
    read = [int((c > 0).sum()) for c in counts]
    disjoint = both == 0
    distinct = int(((counts > 0).any(dim=0)).sum())
    evidence = [
        table(f"Spans [start, end) read per rank (B·T = {B * T}, world {world})", ["rank", "spans"],
              [[r, " ".join(f"[{s},{e})" for s, e in results[r][1])] for r in range(world)]),
        table("Token positions (all-gathered on rank 0)", ["quantity", "value"],
              [["read by rank 0", read[0]], ["read by rank 1", read[1]], ["read by both", both],
               ["distinct positions (graded)", distinct], ["disjoint", disjoint]]),
        note("Backend gloo, 2 processes on 127.0.0.1; each rank steps by B·T·world after every batch."),
    ]
    return Measurement(observed=distinct, evidence=evidence)


def _peak_tensor_bytes(fn):
    """Run ``fn()`` and return (its result, the peak bytes of tensors it created, alive at once).

    Every tensor an operation returns during the call is followed from the
    moment it is made until Python frees it (a weak-reference finaliser);
    a storage counts once however many views share it, from its first
    tensor to its last. Inputs that existed before the call are not
    counted, nor views of them. Works on any device, without the
    allocator's statistics.
    """
    import weakref

    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    live = {"now": 0, "peak": 0}
    users: dict[int, int] = {}  # storage address -> tensors alive that use it
    sizes: dict[int, int] = {}

    def release(key: int) -> None:
        users[key] -= 1
        if users[key] == 0:
            live["now"] -= sizes.pop(key)
            del users[key]

    class Meter(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            given = {a.untyped_storage().data_ptr() for a in tree_leaves((args, kwargs))
                     if isinstance(a, torch.Tensor)}
            for t in tree_leaves(out):
                if isinstance(t, torch.Tensor) and t.untyped_storage().nbytes():
                    key = t.untyped_storage().data_ptr()
                    if key in given and key not in users:
                        continue  # a view of a tensor from outside the call: not new memory
                    if key not in users:
                        users[key], sizes[key] = 0, t.untyped_storage().nbytes()
                        live["now"] += sizes[key]
                        live["peak"] = max(live["peak"], live["now"])
                    users[key] += 1
                    weakref.finalize(t, release, key)
            return out

    with Meter():
        result = fn()
    return result, live["peak"]


def chunked_scores(ctx: Context) -> Measurement:
    """``chunked_nearest.nearest`` against one full (M, N) score matrix.

    M = 64 queries, N = 8,192 exemplars, D = 32, float32. The reference
    scores every pair at once (``neighbours.affine_scores``) and takes the
    argmax. Observed: ``[same winners and best scores within 1e-6 relative,
    peak intermediate bytes lower than the reference's]``, the peak counted
    by ``_peak_tensor_bytes``. Seed 000 §8 ("Chunking is necessary when that
    is too large").
    """
    from exercises.snippets import chunked_nearest
    from exercises.snippets.neighbours import affine_scores

    g = torch.Generator().manual_seed(ctx.seed)
    M, N, D = 64, 8192, 32
    queries = torch.randn(M, D, generator=g).to(ctx.device)
    exemplars = torch.randn(N, D, generator=g).to(ctx.device)

    def reference():
        best, where = affine_scores(queries, exemplars).max(dim=-1)  # (M, N) at once
        return best, where

    (ref_best, ref_where), ref_peak = _peak_tensor_bytes(reference)
    (best, where), peak = _peak_tensor_bytes(lambda: chunked_nearest.nearest(queries, exemplars))
    same_winners = bool(torch.equal(where, ref_where))
    close = bool(torch.allclose(best, ref_best, rtol=1e-6, atol=1e-5))
    lower = peak < ref_peak
    evidence = [
        table(f"M = {M} queries, N = {N:,} exemplars, D = {D}", ["route", "peak intermediates", "chunk"], [
            ["all pairs at once", f"{ref_peak / 2**10:,.0f} KiB", N],
            ["nearest (subject)", f"{peak / 2**10:,.0f} KiB", min(chunked_nearest.CHUNK, N)]]),
        table("Agreement", ["question", "answer"], [
            ["same nearest exemplar for every query", same_winners],
            ["max |Δ best score|", (best - ref_best).abs().max().item()],
            ["scores equal (1e-6 relative)", close], ["peak lower", lower]]),
        note(f"One full score matrix is M x N x 4 bytes = {M * N * 4 / 2**10:,.0f} KiB; the scores of a chunk "
             f"of {min(chunked_nearest.CHUNK, N):,} exemplars take "
             f"{M * min(chunked_nearest.CHUNK, N) * 4 / 2**10:,.0f} KiB."),
    ]
    return Measurement(observed=[same_winners and close, lower], evidence=evidence)


def l1_as_relu(ctx: Context) -> Measurement:
    """``l1.l1_distance`` against ``(a - b).abs().sum(-1)``: values and gradients.

    a, b: (6, 5) float64 drawn so that no difference is within 0.01 of 0.
    Observed: True when the values equal ``(a - b).sum(-1)``, the sum of the
    differences without the absolute value, within 1e-12. The evidence
    compares values and gradients with the L1 reference. Evidence adds a difference of exactly 0, where the two
    routes' gradients are compared too. Seed 000 §8 (|a| = ReLU(a) + ReLU(-a)).
    """
    from exercises.snippets.l1 import l1_distance

    g = torch.Generator().manual_seed(ctx.seed)
    b = torch.randn(6, 5, generator=g, dtype=torch.float64)
    step = torch.rand(6, 5, generator=g, dtype=torch.float64) + 0.01
    sign = torch.where(torch.rand(6, 5, generator=g) < 0.5, -1.0, 1.0).double()
    a0 = (b + sign * step).to(ctx.device)  # |a - b| >= 0.01 everywhere
    b = b.to(ctx.device)

    def both(fn, a):
        a = a.clone().requires_grad_()
        value = fn(a)
        value.sum().backward()
        return value.detach(), a.grad

    subject, subject_grad = both(lambda a: l1_distance(a, b), a0)
    reference, reference_grad = both(lambda a: (a - b).abs().sum(-1), a0)
    values = (subject - reference).abs().max().item()
    grads = (subject_grad - reference_grad).abs().max().item()
    equal = values <= 1e-12 and grads <= 1e-12
    plain_sum = (subject - (a0 - b).sum(-1)).abs().max().item() <= 1e-12
    at_zero = torch.zeros(1, 1, dtype=torch.float64, device=ctx.device)
    zero_subject = both(lambda a: l1_distance(a, at_zero), at_zero)[1].item()
    zero_reference = both(lambda a: (a - at_zero).abs().sum(-1), at_zero)[1].item()
    evidence = [
        table("Against (a - b).abs().sum(-1), away from 0", ["quantity", "max |Δ|"], [
            ["values", values], ["gradients with respect to a", grads]]),
        table("At a - b = 0 exactly", ["route", "gradient"], [
            ["l1_distance", zero_subject], ["abs", zero_reference]]),
        table("Facts", ["question", "answer"], [["equal values and gradients (1e-12)", equal],
                                                ["values equal the plain sum of a - b", plain_sum]]),
    ]
    return Measurement(observed=bool(plain_sum), evidence=evidence)


def fixed_old_logprobs(ctx: Context) -> Measurement:
    """The gradient ``policy_ratio.surrogate`` sends through its old log-probabilities.

    A policy with logits (4, 5) as its only parameter; responses (4,) drawn
    from it; advantages [1, -1, 0.5, -0.5]. As in the bug the seed warns
    about, the "old" log-probabilities are recomputed from the same policy,
    so they carry its graph. The gradient through the new side is what the
    loss gives with the old side detached by the check. Observed: the
    gradient through the old side as a multiple of the gradient through the
    new side (the least-squares factor; 0 when nothing flows through it).
    Seed 000 §8 ("the old log-probability is a fixed record of the sampling
    policy").
    """
    from exercises.snippets.policy_ratio import surrogate

    g = torch.Generator().manual_seed(ctx.seed)
    logits = torch.randn(4, 5, generator=g, dtype=torch.float64).to(ctx.device).requires_grad_()
    tokens = torch.multinomial(logits.detach().softmax(-1).cpu(), 1, generator=g).squeeze(-1).to(ctx.device)
    advantages = torch.tensor([1.0, -1.0, 0.5, -0.5], dtype=torch.float64, device=ctx.device)

    def log_probs():
        return torch.log_softmax(logits, dim=-1).gather(-1, tokens.unsqueeze(-1)).squeeze(-1)  # (4,)

    new_side = torch.autograd.grad(surrogate(log_probs(), log_probs().detach(), advantages), logits)[0]
    total = torch.autograd.grad(surrogate(log_probs(), log_probs(), advantages), logits)[0]
    old_side = total - new_side
    factor = ((old_side * new_side).sum() / (new_side * new_side).sum()).item()
    evidence = [
        table("Gradient of the surrogate with respect to the policy logits", ["part", "norm"], [
            ["through the new log-probs", new_side.norm().item()], ["through the old log-probs", old_side.norm().item()],
            ["total", total.norm().item()]]),
        table("Facts", ["quantity", "value"], [
            ["old side / new side", factor],
            ["ratio exp(new - old) per response", " ".join(f"{r:g}" for r in torch.exp(log_probs() - log_probs()).tolist())]]),
    ]
    if abs(factor) > 1e-9:
        evidence.append(note("The ratio exp(new - old) is 1 whatever the weights when old is the same "
                             "function of them: the two sides cancel and the policy receives no gradient."))
    return Measurement(observed=round(factor, 9), evidence=evidence)


def response_mask(ctx: Context) -> Measurement:
    """Which token log-probabilities a GRPO-style loss sends gradient to.

    Two rows share one prompt of 4 tokens, each followed by a response of 3
    (T = 7), advantages +1 and -1; the 14 token log-probabilities are
    leaves. Observed: how many of them receive a nonzero gradient (an
    int). Column 0 has no context, so at most 12 ever can; the response
    alone is 6, each with gradient ∓1/6. Seed 000 §8 ("Does the mask
    include prompt tokens?").
    """
    from exercises.snippets.response_loss import token_policy_loss

    device = torch.device(ctx.device)
    g = torch.Generator().manual_seed(ctx.seed)
    token_logp = (-torch.rand(2, 7, generator=g, dtype=torch.float64) * 3).to(device).requires_grad_(True)
    advantages = torch.tensor([1.0, -1.0], dtype=torch.float64, device=device)
    prompt_lens = torch.tensor([4, 4], device=device)
    token_policy_loss(token_logp, advantages, prompt_lens).backward()
    grad = token_logp.grad
    touched = int((grad != 0).sum())
    evidence = [
        table("Gradient on each token's log-probability (prompt = columns 0-3)",
              ["row", "advantage", "prompt columns 1-3", "response columns 4-6"],
              [[b, advantages[b].item(), str([round(v, 4) for v in grad[b, 1:4].tolist()]),
                str([round(v, 4) for v in grad[b, 4:].tolist()])] for b in range(2)]),
        table("Tokens with a gradient", ["quantity", "value"], [["nonzero entries of token_logp.grad", touched],
                                                                 ["response tokens", 6]]),
    ]
    if touched > 6:
        evidence.append(note("The mask counted the prompt: the policy is now pushed to make the prompt's own tokens "
                             "likelier after a good response and less likely after a bad one, though it never chose "
                             "them, and the larger denominator dilutes every response token's weight."))
    return Measurement(observed=float(touched), evidence=evidence)
