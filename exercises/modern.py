"""Checks for the set ``modern`` — the Llama-style block and the field's newer bugs.

The engine builds today's open-model block from ``GPTConfig`` options
(rotary positions, grouped-query attention, RMSNorm, SwiGLU, a sliding
window; the ``llama-tiny`` preset), and carries the pieces the newer bugs
live in: a repetition penalty, a cosine schedule, a written-out cross
entropy with label smoothing. Each check rebuilds the situation a public
report described and measures the number that gives it away. Seed 004
("The model: attention", "Generation is a different program", "Training")
and seed 000 (section 6, the KV cache; section 7, masking and precision)
supply the ideas.
"""

import math
import sys

import torch
import torch.nn.functional as F

from exercises.context import Context
from exercises.outcome import Measurement, note, series, table

TOL = 1e-5  # logits that differ by no more than this count as equal


def _ids(ctx: Context, V: int, shape: tuple[int, ...]) -> torch.Tensor:
    g = torch.Generator().manual_seed(ctx.seed)
    return torch.randint(0, V, shape, generator=g).to(ctx.device)


# ---------------------------------------------------------------------------
# Attention: rotary positions, grouped heads, masks


def rope_cache_offset(ctx: Context) -> Measurement:
    """Cached against full logits on a rotary-position model, chunk by chunk.

    ``llama-tiny`` cut to 2 layers and block 16 (rotary positions, 4 query
    heads sharing 2 key/value heads, RMSNorm, SwiGLU) reads 7 random tokens
    in full and through its KV cache in chunks of 3, 1, 3. Observed: for
    each chunk, whether its logits equal the full pass's within 1e-5.
    Evidence adds one-token steps and the position each chunk's queries were
    turned to. Seed 000 §6, "A KV cache changes coordinates, not the meaning
    of attention".
    """
    from engine.instruments.cache_check import cached_vs_full

    model = ctx.gpt("llama-tiny", n_layer=2, block_size=16).eval()
    V = model.config.vocab_size
    idx = _ids(ctx, V, (1, 7))
    chunked = cached_vs_full(model, idx, [3, 1, 3])
    steps = cached_vs_full(model, idx, [1] * 7)
    flags = [d <= TOL for d in chunked["per_chunk_max_delta"]]

    seen = []  # the positions each layer turned its queries to, call by call
    attn = model.blocks[0].attn
    module = sys.modules[type(model).__module__]
    original = module.rope_rotate

    def spy(x, positions, theta=10000.0):
        if x.size(1) == attn.n_head:  # the queries, not the keys
            seen.append(positions.tolist())
        return original(x, positions, theta)

    module.rope_rotate = spy
    try:
        with torch.no_grad():
            cache = model.new_cache(1)
            start = 0
            for n in (3, 1, 3):
                model(idx[:, start:start + n], cache=cache)
                start += n
    finally:
        module.rope_rotate = original
    seen = seen[::len(model.blocks)]  # block 0's call of each chunk
    evidence = [
        table("Cached chunks 3, 1, 3 against the full pass (tolerance 1e-5)",
              ["chunk", "true positions", "queries turned to", "max |Δ logits|"],
              [[i, list(range(s, s + n)), seen[i] if i < len(seen) else "?", d]
               for i, (s, n, d) in enumerate(zip((0, 3, 4), (3, 1, 3), chunked["per_chunk_max_delta"]))]),
        table("One token at a time", ["quantity", "value"],
              [["max |Δ logits| per step", " ".join(f"{d:.0e}" for d in steps["per_chunk_max_delta"])],
               ["equal", steps["equal"]]]),
    ]
    if not all(flags):
        evidence.append(note("This model has no position table: positions enter only as the angle each query "
                             "and key is turned by. A chunk turned as if it started at 0 meets cached keys "
                             "that were turned as if their own chunk started at 0 (only the first chunk's "
                             "sit at their true positions), so every offset to an earlier chunk is wrong."))
    return Measurement(observed=flags, evidence=evidence)


def gqa_grouping(ctx: Context) -> Measurement:
    """Which key/value head each query head reads in grouped-query attention.

    ``llama-tiny`` cut to 1 layer and block 16: 4 query heads, 2 key/value
    heads. For each key/value head j in turn, its value weights are set to
    zero; the query heads whose attention output then becomes exactly zero
    are the ones that read head j. Observed: the key/value head of query
    heads 0..3. Evidence: the same function built as multi-head attention
    from a converted checkpoint (each key/value head copied for its two
    query heads, the layout Llama checkpoints assume), and how far its
    logits are from the grouped model's.
    """
    model = ctx.gpt("llama-tiny", n_layer=1, block_size=16).eval()
    config = model.config
    C, H, H_kv, D = config.n_embd, config.n_head, config.kv_heads, config.head_size
    attn = model.blocks[0].attn
    idx = _ids(ctx, config.vocab_size, (1, 8))

    outputs = {}

    def keep(_module, inputs):
        outputs["y"] = inputs[0]  # (B, T, C): the merged heads, before the output projection

    handle = attn.proj.register_forward_pre_hook(keep)
    reads = [None] * H
    try:
        W = attn.qkv.weight  # (C + 2 * H_kv * D, C): rows q, then k, then v
        for j in range(H_kv):
            rows = slice(C + H_kv * D + j * D, C + H_kv * D + (j + 1) * D)  # value head j
            saved = W.data[rows].clone()
            W.data[rows] = 0.0
            with torch.no_grad():
                model(idx)
            W.data[rows] = saved
            y = outputs["y"].view(1, -1, H, D)  # (B, T, H, D)
            for h in range(H):
                if y[..., h, :].abs().max().item() == 0.0:
                    reads[h] = j
    finally:
        handle.remove()

    # The same weights as a multi-head model: kv head j copied for query heads j*g .. j*g + g - 1.
    mha = ctx.gpt("llama-tiny", n_layer=1, block_size=16, n_kv_head=H).eval()
    state = model.state_dict()
    q, k, v = state["blocks.0.attn.qkv.weight"].split([C, H_kv * D, H_kv * D], dim=0)
    group = H // H_kv
    copy = lambda w: w.view(H_kv, D, C).repeat_interleave(group, dim=0).reshape(H * D, C)  # noqa: E731
    state["blocks.0.attn.qkv.weight"] = torch.cat([q, copy(k), copy(v)], dim=0)
    mha.load_state_dict(state)
    with torch.no_grad():
        delta = (model(idx)[0] - mha(idx)[0]).abs().max().item()
    evidence = [
        table("Zero one value head, see which query heads go silent",
              ["query head", "reads kv head", "h // 2 (grouped)", "h % 2 (tiled)"],
              [[h, reads[h], h // group, h % H_kv] for h in range(H)]),
        table("The checkpoint converted to multi-head attention (each kv head copied for its group)",
              ["quantity", "value"], [["max |Δ logits| against the grouped model", delta],
                                      ["tolerance", TOL]]),
    ]
    if delta > TOL:
        evidence.append(note("The model still runs and would train from scratch; it is a checkpoint trained "
                             "with the other layout (every Llama checkpoint) that it reads wrong."))
    return Measurement(observed=reads, evidence=evidence)


def bool_mask_added(ctx: Context) -> Measurement:
    """How much attention the first query pays to keys the causal mask forbids.

    The seed-sized engine (4 layers, 4 heads, C = 128) on the written-out
    attention path reads 16 random tokens in eval mode. Observed: block 0's
    first query (position 0), its total weight on keys 1..15, averaged over
    the 4 heads. Evidence: the future-token intervention (tokens after
    position 7 changed). Seed 004, "The model: attention" (Level 4).
    """
    from engine.instruments.intervention import future_token_intervention, not_finite

    model = ctx.gpt("seed").eval()
    for block in model.blocks:
        block.attn.fused = False
    idx = _ids(ctx, model.config.vocab_size, (1, 16))
    with torch.no_grad():
        model(idx)
    weights = model.blocks[0].attn.weights  # (B, H, T, T)
    forbidden = weights[0, :, 0, 1:].sum(dim=-1)  # (H,): the first query's weight on later keys
    observed = forbidden.mean().item()
    log_w = weights[0, :, 0].log()  # (H, T): log-weights = scores up to a constant per head

    def gap(h: int) -> object:
        if forbidden[h].item() == 0.0:
            return "blocked (weight 0)"
        return (log_w[h, 0] - log_w[h, 1:].mean()).item()
    probe = future_token_intervention(model, idx, position=7, generator=torch.Generator().manual_seed(ctx.seed))
    evidence = [
        table("Block 0, the first query (position 0)", ["head", "weight on itself", "weight on keys 1..15"],
              [[h, weights[0, h, 0, 0].item(), forbidden[h].item()] for h in range(forbidden.numel())]),
        table("Its log-weights: itself against the mean of the forbidden keys", ["head", "log w(0) - log w(later)"],
              [[h, gap(h)] for h in range(forbidden.numel())]),
        table("Future-token intervention (tokens after position 7 changed)", ["quantity", "value"],
              [["prefix max |Δ logits| (0..7)", probe["prefix_max_delta"]],
               ["suffix max |Δ logits|", probe["suffix_max_delta"]],
               ["causal", probe["causal"] if not_finite(probe) is None else
                f"cannot say: logits not finite ({not_finite(probe)})"]]),
        note(f"If every score were equal and the 15 forbidden keys merely lost 1.0, the first query would "
             f"keep 15 / (15 + e) = {15 / (15 + math.e):.4f} of its weight on them."),
    ]
    return Measurement(observed=observed, evidence=evidence)


def sliding_window(ctx: Context) -> Measurement:
    """How many positions a query sees under a sliding window of 4.

    A 1-layer seed-width engine (4 heads, C = 128, block 16) with
    ``window=4`` reads 12 random tokens in eval mode. Each earlier token is
    changed in turn; with one layer, the last position's logits move only
    when the changed token lies inside its window. Observed: how many of the
    12 positions move the last position's logits. Evidence: which ones, and
    the last row of the layer's mask.
    """
    model = ctx.gpt("seed", n_layer=1, block_size=16, window=4).eval()
    V = model.config.vocab_size
    idx = _ids(ctx, V, (1, 12))
    moved = []
    with torch.no_grad():
        before = model(idx)[0][0, -1]  # (V,)
        for t in range(12):
            changed = idx.clone()
            changed[0, t] = (changed[0, t] + 1) % V
            moved.append((model(changed)[0][0, -1] - before).abs().max().item())
    seen = [t for t, d in enumerate(moved) if d > TOL]
    row = model.blocks[0].attn.mask(0, 12, 12)[-1].int().tolist()
    evidence = [
        table("Change one token, watch the last position (11)", ["position", "max |Δ logits|", "inside?"],
              [[t, d, d > TOL] for t, d in enumerate(moved)]),
        table("The layer's mask, last row (1 = may attend)", ["window", "row for position 11"],
              [[model.config.window, " ".join(map(str, row))]]),
    ]
    return Measurement(observed=len(seen), evidence=evidence)


# ---------------------------------------------------------------------------
# Generation


def repetition_penalty(ctx: Context) -> Measurement:
    """What the engine's repetition penalty does to a seen id with a negative logit.

    Next-token logits [2.0, 1.0, -1.0, -3.0] over four ids; ids 0 and 3
    already occur in the sequence; penalty 2. The engine's
    ``apply_repetition_penalty`` rescales them. Observed: a choice id for
    id 3's probability after the penalty against before it — ``a`` lower,
    ``b`` the same, ``c`` higher. Evidence: every id's logit and probability
    before and after. Seed 004, "Generation is a different program".
    """
    from engine.generate import apply_repetition_penalty

    logits = torch.tensor([[2.0, 1.0, -1.0, -3.0]], device=ctx.device)
    seen = torch.tensor([[0, 3]], device=ctx.device)
    after = apply_repetition_penalty(logits, seen, 2.0)
    p_before, p_after = F.softmax(logits, dim=-1)[0], F.softmax(after, dim=-1)[0]
    ratio = (p_after[3] / p_before[3]).item()
    observed = "a" if ratio < 1 - 1e-6 else "c" if ratio > 1 + 1e-6 else "b"
    rows = [[i, "yes" if i in (0, 3) else "no", f"{logits[0, i].item():g} -> {after[0, i].item():g}",
             f"{p_before[i].item():.4f} -> {p_after[i].item():.4f}"] for i in range(4)]
    evidence = [table("Penalty 2 on the seen ids 0 and 3", ["id", "seen", "logit", "probability"], rows),
                note(f"id 3's probability changed by a factor of {ratio:.3g}.")]
    return Measurement(observed=observed, evidence=evidence)


# ---------------------------------------------------------------------------
# The loss


def _padded_logits(ctx: Context):
    """An untrained seed-sized engine's logits on two sequences of 9 and 5 ids, padded to T = 8."""
    from engine.data import pad_batch

    model = ctx.gpt("seed").eval()
    V = model.config.vocab_size
    ids = _ids(ctx, V, (14,)).tolist()
    x, y = pad_batch([ids[:9], ids[9:]], pad_id=0, device=ctx.device)  # (2, 8) each; row 1 has 4 real targets
    with torch.no_grad():
        logits, _ = model(x)  # (2, 8, V)
    return logits.reshape(-1, V), y.reshape(-1), V


def smoothing_padding(ctx: Context) -> Measurement:
    """The engine's written-out label-smoothed loss against ``F.cross_entropy`` on a padded batch.

    Two sequences of 9 and 5 ids, padded to T = 8 (``engine.data.pad_batch``:
    12 real targets, 4 at ignore_index), through an untrained seed-sized
    engine. ``engine.losses.cross_entropy(logits, targets, 0.1)`` is compared
    with ``F.cross_entropy(logits, targets, label_smoothing=0.1)``.
    Observed: the written-out loss minus the fused one, in nats, rounded to
    4 decimals (the two sums round differently in the last float32 bits, by
    the CPU's kernels: without fault −2.4e-7 with torch's portable kernels,
    0.0 with AVX2's; the tolerance is 0.01). Seed 000 §7,
    "Masking chooses which examples count".
    """
    from engine.losses import cross_entropy

    logits, targets, V = _padded_logits(ctx)
    mine = cross_entropy(logits, targets, label_smoothing=0.1).item()
    fused = F.cross_entropy(logits.float(), targets, label_smoothing=0.1).item()
    plain = cross_entropy(logits, targets).item()
    n_real, n_pad = int((targets != -100).sum()), int((targets == -100).sum())
    evidence = [
        table("Label smoothing 0.1 over 16 positions", ["quantity", "value"],
              [["real targets / padded", f"{n_real} / {n_pad}"], ["engine, written out", mine],
               ["F.cross_entropy", fused], ["engine, no smoothing", plain], ["ln V (V = 37)", math.log(V)]]),
        note("At initialisation every id is about equally likely, so each position's uniform term is close to "
             "ln 37 = 3.61 nats."),
    ]
    return Measurement(observed=round(mine - fused, 4) + 0.0, evidence=evidence)  # + 0.0: -0.0 reads 0.0


def ce_bfloat16(ctx: Context) -> Measurement:
    """Whether the written-out loss on bfloat16 logits still sees a change of 0.004 nats.

    An untrained seed-sized engine's logits on 16 positions, cast to
    bfloat16 (as a bfloat16 model or autocast hands them over). A second set
    is the same logits with every target's logit raised by 0.004: a small
    improvement, like one careful update. Both go through
    ``engine.losses.cross_entropy``; the true difference is computed in
    float64 from the same bfloat16 tensors. Observed: whether the two losses'
    difference agrees with the true one within 0.001 nats. Seed 000 §7
    (precision), seed 004, "The pipeline".
    """
    from engine.losses import cross_entropy

    model = ctx.gpt("seed").eval()
    V = model.config.vocab_size
    idx = _ids(ctx, V, (1, 17))
    with torch.no_grad():
        logits, _ = model(idx[:, :-1])
    logits = logits.reshape(-1, V).to(torch.bfloat16)  # (16, V)
    targets = idx[0, 1:]  # (16,)
    better = logits.clone()
    better[torch.arange(16), targets] += 0.004  # rounded to bfloat16 as it is stored
    truth = [F.cross_entropy(t.double(), targets).item() for t in (logits, better)]
    seen = [cross_entropy(t, targets) for t in (logits, better)]
    true_delta, seen_delta = truth[0] - truth[1], (seen[0] - seen[1]).item()
    ok = abs(seen_delta - true_delta) <= 1e-3
    evidence = [
        table("Two losses of bfloat16 logits", ["quantity", "before", "after +0.004"],
              [["float64 of the same logits", truth[0], truth[1]],
               ["engine.losses.cross_entropy", seen[0].item(), seen[1].item()],
               ["its dtype", str(seen[0].dtype).replace("torch.", ""), str(seen[1].dtype).replace("torch.", "")]]),
        table("The change the loss reports", ["quantity", "value"],
              [["true drop (float64)", true_delta], ["reported drop", seen_delta],
               ["bfloat16 spacing between 2 and 4", 2.0 ** -6]]),
    ]
    return Measurement(observed=bool(ok), evidence=evidence)


# ---------------------------------------------------------------------------
# Schedules


def _lr_run(ctx: Context, make_scheduler, steps: int):
    """``steps`` engine train_steps on a 1-layer model; the lr and whether the weights moved, per update."""
    from engine.data import get_batch
    from engine.train import make_optimizer, train_step

    model = ctx.gpt("small", n_layer=1, n_embd=32, block_size=8)
    optimizer = make_optimizer(model, lr=1e-2)
    scheduler = make_scheduler(optimizer)
    rates = []
    optimizer.register_step_pre_hook(lambda opt, *_: rates.append(opt.param_groups[0]["lr"]))
    g = torch.Generator().manual_seed(ctx.seed)
    data = torch.randint(0, model.config.vocab_size, (200,), generator=g)
    moved = []
    for _ in range(steps):
        x, y = get_batch(data, 4, 8, generator=g, device=ctx.device)
        before = [p.detach().clone() for p in model.parameters()]
        train_step(model, optimizer, x, y, scheduler=scheduler)
        moved.append(any(not torch.equal(b, p) for b, p in zip(before, model.parameters())))
    return rates, moved


def warmup_first_update(ctx: Context) -> Measurement:
    """How many of the first five updates under a 4-step warm-up change the weights.

    ``engine.train.warmup_schedule(optimizer, 4)`` on AdamW (lr 0.01) drives
    five ``train_step`` calls of a 1-layer engine. A step pre-hook reads the
    learning rate each update ran at. Observed: how many of the five updates
    moved any weight. Seed 001, "In the real world" (scheduling changes the
    update scale).
    """
    from engine.train import warmup_schedule

    rates, moved = _lr_run(ctx, lambda opt: warmup_schedule(opt, 4), 5)
    evidence = [table("Five updates under a 4-step warm-up (lr 0.01)", ["update", "lr used", "lr / 0.01", "weights moved"],
                      [[k, r, r / 1e-2, m] for k, (r, m) in enumerate(zip(rates, moved))])]
    return Measurement(observed=sum(moved), evidence=evidence)


def cosine_floor(ctx: Context) -> Measurement:
    """How many updates of a 24-update cosine schedule run at the floor.

    ``engine.train.cosine_schedule(optimizer, warmup_steps=6,
    total_steps=24, min_lr_ratio=0.1)`` on AdamW (lr 0.01) drives 24
    ``train_step`` calls of a 1-layer engine; a step pre-hook reads each
    update's learning rate. Observed: how many updates ran at 0.1 × lr.
    Evidence: the whole curve. Seed 001, "In the real world".
    """
    from engine.train import cosine_schedule

    rates, _ = _lr_run(ctx, lambda opt: cosine_schedule(opt, 6, 24, 0.1), 24)
    floor = [k for k, r in enumerate(rates) if abs(r - 1e-3) <= 1e-12]
    evidence = [
        series("Learning rate of each of the 24 updates", rates, label="lr"),
        table("Landmarks", ["quantity", "value"],
              [["lr of update 5 (last warm-up)", rates[5]], ["lr of update 6 (first decay)", rates[6]],
               ["first update at the floor", floor[0] if floor else "none"], ["updates at the floor", len(floor)]]),
    ]
    return Measurement(observed=len(floor), evidence=evidence)


# ---------------------------------------------------------------------------
# Prompts of different lengths in one batch

#: Three prompts of 10, 2 and 9 characters; the first is the longest, so it has no padding.
BATCH_PROMPTS = ("The planet", "A ", "When that")


def _batch_against_alone(ctx: Context) -> Measurement:
    """Greedy continuations of three prompts, batched and each alone.

    A small engine (2 layers, C = 64, block 32) trains 100 steps on the
    corpus; ``engine.generate.generate_batch`` continues ``BATCH_PROMPTS``
    by 12 tokens in one batch, padding with the id of ".", and ``generate(..., greedy=True,
    use_cache=True)`` continues each prompt alone. Observed: for each
    prompt, whether the batched continuation equals the lone one. Seed 000
    §7 ("Masking chooses which examples count"), seed 004, "Generation is a
    different program".
    """
    from engine.generate import generate, generate_batch, left_pad
    from exercises.generation import _trained

    model, tok = _trained(ctx, steps=100)
    model.eval()
    prompts = [tok.encode(p) for p in BATCH_PROMPTS]
    ctx.progress(0.85, "generating")
    pad = tok.encode(".")[0]  # a visible padding id: a space would hide among the prompts' own spaces
    batched = generate_batch(model, prompts, 12, pad_id=pad)
    alone = [generate(model, torch.tensor([p], device=ctx.device), 12, greedy=True, use_cache=True)[0].tolist()
             for p in prompts]
    same = [b == a for b, a in zip(batched, alone)]
    idx, pads = left_pad(prompts, pad)
    layout = ["".join("·" if t < int(pads[b]) else tok.decode([int(idx[b, t])]) for t in range(idx.size(1)))
              for b in range(len(prompts))]
    evidence = [
        table("The padded batch (· = padding), and how each row reads its last column",
              ["prompt", "row as padded", "pads", "last column"],
              [[repr(p), repr(row), int(pads[b]), repr(tok.decode([int(idx[b, -1])]))]
               for b, (p, row) in enumerate(zip(BATCH_PROMPTS, layout))]),
        table("12 greedy tokens, batched against alone", ["prompt", "batched", "alone", "same"],
              [[repr(p), repr(tok.decode(b[len(q):])), repr(tok.decode(a[len(q):])), s]
               for p, q, b, a, s in zip(BATCH_PROMPTS, prompts, batched, alone, same)]),
    ]
    return Measurement(observed=same, evidence=evidence)


def batch_right_padding(ctx: Context) -> Measurement:
    """Batched against lone greedy continuations; the padding side is what the fault changes.

    See ``_batch_against_alone``. Observed: ``[same for each prompt]``.
    """
    return _batch_against_alone(ctx)


def batch_pads_unmasked(ctx: Context) -> Measurement:
    """Batched against lone greedy continuations; the cache's padding record is what the fault drops.

    See ``_batch_against_alone``. Observed: ``[same for each prompt]``.
    """
    return _batch_against_alone(ctx)


# ---------------------------------------------------------------------------
# Beam search

#: A bigram table over four ids (prompt token, x, y, end): row a holds P(next | last = a).
BIGRAM = [[0.001, 0.598, 0.001, 0.400],   # after the prompt token: x 0.598, end 0.4
          [0.001, 0.001, 0.700, 0.298],   # after x: y 0.7, end 0.298
          [0.001, 0.001, 0.299, 0.699],   # after y: y 0.299, end 0.699
          [0.250, 0.250, 0.250, 0.250]]   # after end (never used)


class _Bigram(torch.nn.Module):
    """A language model whose next-token probabilities depend only on the last id (``BIGRAM``)."""

    def __init__(self, block_size: int = 64) -> None:
        super().__init__()
        self.config = type("Config", (), {"block_size": block_size, "vocab_size": 4})()
        self.log_table = torch.nn.Parameter(torch.tensor(BIGRAM).log(), requires_grad=False)  # (4, 4)

    def forward(self, idx: torch.Tensor, targets=None):
        return self.log_table[idx], None  # (B, T, 4) logits: log-probabilities already


def beam_length(ctx: Context) -> Measurement:
    """How many new tokens the hypothesis beam search picks has, after a 20-token prompt.

    ``engine.generate.beam_search`` (beam width 2, at most 5 new tokens,
    length penalty 1) continues a prompt of 20 copies of id 0 under a bigram
    model with hand-set probabilities (``BIGRAM``; id 3 ends a hypothesis).
    Observed: the number of new tokens, the end id included, of the
    hypothesis it returns. Evidence: every finished hypothesis, its total
    log-probability and the two normalisations. Seed 004, "Generation is a
    different program".
    """
    from engine.generate import beam_search

    model = _Bigram().to(ctx.device)
    prompt = torch.zeros(1, 20, dtype=torch.long, device=ctx.device)
    ids, score = beam_search(model, prompt, max_new_tokens=5, beam_width=2, eos_id=3)
    new = ids[20:]
    names = "pxy."
    rows = []
    for tail in ([3], [1, 3], [1, 2, 3], [1, 2, 2, 3]):
        logp = sum(math.log(BIGRAM[a][b]) for a, b in zip([0] + tail[:-1], tail))
        rows.append(["".join(names[t] for t in tail), logp, logp / len(tail), logp / (20 + len(tail))])
    evidence = [
        table("Hypotheses after the prompt (. = end)", ["new tokens", "total log p", "÷ new tokens", "÷ all tokens"],
              rows),
        table("What beam_search returned", ["quantity", "value"],
              [["new tokens", "".join(names[t] for t in new)], ["its score", score]]),
    ]
    return Measurement(observed=len(new), evidence=evidence)
