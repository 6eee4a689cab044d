"""Checks for the set ``generation`` — generation is a different program (seed 004).

Training runs the model once over a fixed batch; generation is a loop that
feeds the model its own output. These checks run ``engine.generate`` and
observe the contracts that loop owes: eval mode, the block_size crop, sane
sampling knobs, and a KV cache that changes the cost but not the tokens.
"""

import time

import torch

from exercises.context import Context
from exercises.outcome import Measurement, first_line, note, table

TRAIN_STEPS = 200
PROMPT = "The "


def _trained(ctx: Context, steps: int = TRAIN_STEPS, **overrides):
    """A small engine trained briefly on the corpus; returned in train mode.

    2 layers, 2 heads, C = 64, block_size 32, AdamW lr 5e-3, batch 16 —
    enough for word-like text, a second or two on one CPU core.

    Returns:
        (model, tokenizer); the model is left in train mode, as a training
        loop leaves it.
    """
    from engine.corpus import make_corpus
    from engine.data import get_batch
    from engine.tokenizer import CharTokenizer
    from engine.train import make_optimizer, train_step

    text = make_corpus(50_000, seed=ctx.seed)
    tok = CharTokenizer(text)
    data = tok.encode_tensor(text)
    model = ctx.gpt("small", vocab_size=tok.vocab_size, **overrides)
    config = model.config
    optimizer = make_optimizer(model, lr=5e-3)
    g = torch.Generator().manual_seed(ctx.seed)
    model.train()
    for step in range(steps):
        if step % 50 == 0:
            ctx.progress(0.8 * step / steps, f"training step {step} of {steps}")
        x, y = get_batch(data, 16, config.block_size, generator=g, device=ctx.device)
        train_step(model, optimizer, x, y)
    ctx.progress(0.8, "generating")
    return model, tok


def _first_difference(a: torch.Tensor, b: torch.Tensor):
    """First index where two (1, N) id tensors differ, or None."""
    diff = (a[0] != b[0]).nonzero()
    return int(diff[0]) if len(diff) else None


def dropout_generation(ctx: Context) -> Measurement:
    """Generate twice from a model left in train mode, with the same seed.

    A small engine with dropout 0.1 trains 200 steps and is left in train
    mode. ``generate`` then samples 60 tokens after ``"The "`` twice, each
    time with a fresh ``torch.Generator`` seeded identically. Observed: True
    when the two runs produce the same tokens.
    Seed 004, "Generation is a different program" (dropout left active).
    """
    from engine.generate import generate

    model, tok = _trained(ctx, dropout=0.1)
    prompt = tok.encode_tensor(PROMPT)[None].to(ctx.device)
    mode_before = model.training
    runs = []
    for _ in range(2):
        g = torch.Generator(device=ctx.device).manual_seed(ctx.seed)
        runs.append(generate(model, prompt, 60, generator=g))
    same = torch.equal(runs[0], runs[1])
    first = _first_difference(runs[0], runs[1])
    evidence = [
        table("Two runs, same prompt, same sampling seed",
              ["run", "text"], [[i + 1, repr(tok.decode(r[0].tolist()))] for i, r in enumerate(runs)]),
        table("Facts", ["quantity", "value"],
              [["config.dropout", model.config.dropout], ["model.training before the calls", mode_before],
               ["model.training after the calls", model.training], ["same tokens", same],
               ["first differing position", first if first is not None else "none"]]),
    ]
    if not same:
        evidence.append(note("The sampling generator was reseeded for each run, so sampling alone would "
                             "repeat itself; the difference comes from dropout, which draws from torch's "
                             "global generator on every forward."))
    return Measurement(observed=bool(same), evidence=evidence)


def no_crop(ctx: Context) -> Measurement:
    """Ask for more tokens than block_size leaves room for.

    An untrained engine with block_size 16 extends a 12-token prompt by 10
    tokens, greedily. A forward pre-hook records the length of every context
    the model is fed. Observed: the exception class ``generate`` raises, or
    ``"none"``.
    Seed 004, "Generation is a different program" (generating past the
    context length).
    """
    from engine.generate import generate

    model = ctx.gpt("small", block_size=16, n_layer=1, n_embd=32).eval()
    config = model.config
    g = torch.Generator().manual_seed(ctx.seed)
    prompt = torch.randint(0, config.vocab_size, (1, 12), generator=g).to(ctx.device)
    lengths = []
    handle = model.register_forward_pre_hook(lambda _m, args: lengths.append(args[0].shape[1]))
    try:
        out = generate(model, prompt, 10, greedy=True)
        observed, outcome = "none", f"returned {tuple(out.shape)}"
    except Exception as exc:  # the point of the exercise: report, do not crash
        observed, outcome = type(exc).__name__, first_line(exc, limit=120)
    finally:
        handle.remove()
    evidence = [
        table("generate(prompt of 12, max_new_tokens=10) with block_size 16",
              ["quantity", "value"],
              [["block_size", config.block_size], ["prompt length", prompt.shape[1]],
               ["context length fed, per step", " ".join(str(n) for n in lengths)], ["outcome", outcome]]),
    ]
    return Measurement(observed=observed, evidence=evidence)


def sampling_knobs(ctx: Context) -> Measurement:
    """top_k=1 against greedy, then two invalid knobs.

    An untrained engine (V = 37) extends a random (2, 8) prompt by 20 tokens
    greedily and with ``top_k=1`` sampling. Then ``generate`` is called with
    ``top_k=38`` (> V) and with ``temperature=0``; these two probes run on a
    CPU copy of the model, so a NaN never reaches a CUDA kernel. Observed:
    ``[top_k=1 equals greedy, exception class for top_k=V+1, exception class
    for temperature=0]`` (``"none"`` when nothing is raised).
    Seed 004, "Generation is a different program" and the final checklist
    (temperature > 0; top-k bounded by the vocabulary size).
    """
    import copy

    from engine.generate import generate

    model = ctx.gpt("small", n_layer=1, n_embd=32).eval()
    config = model.config
    V = config.vocab_size
    g = torch.Generator().manual_seed(ctx.seed)
    prompt = torch.randint(0, V, (2, 8), generator=g).to(ctx.device)
    greedy = generate(model, prompt, 20, greedy=True)
    top1 = generate(model, prompt, 20, top_k=1,
                    generator=torch.Generator(device=ctx.device).manual_seed(ctx.seed))
    same = torch.equal(greedy, top1)

    cpu_model = copy.deepcopy(model).cpu()
    rows, errors = [], []
    for label, knobs in ((f"top_k={V + 1}", {"top_k": V + 1}), ("temperature=0", {"temperature": 0.0})):
        try:
            generate(cpu_model, prompt.cpu(), 5, generator=torch.Generator().manual_seed(ctx.seed), **knobs)
            errors.append("none")
            rows.append([label, "none", "generated 5 tokens"])
        except Exception as exc:  # the observation is the exception itself
            errors.append(type(exc).__name__)
            rows.append([label, type(exc).__name__, first_line(exc, with_type=False, limit=120)])
    evidence = [
        table("Greedy against top_k=1 (20 new tokens, 2 rows)", ["quantity", "value"],
              [["same tokens", same], ["positions that differ", int((greedy != top1).sum())]]),
        table(f"Invalid knobs (V = {V})", ["call", "raised", "first line"], rows),
    ]
    return Measurement(observed=[bool(same), *errors], evidence=evidence)


TIMING_CONTEXTS = (16, 64, 128, 256, 512)


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def _ms_per_token(ctx: Context) -> list[list]:
    """ms for one new token at each context length T: naive vs cached.

    Naive: one forward over the last T tokens (what the uncached loop runs
    per token). Cached: one forward of the newest token against a cache
    holding T - 1 tokens. Untrained engine, 2 layers, C = 64, block_size 512;
    the best of 5 repeats. Rows: [T, naive ms, cached ms, naive / cached].
    """

    model = ctx.gpt("small", block_size=max(TIMING_CONTEXTS)).eval()
    config = model.config
    idx = torch.randint(0, config.vocab_size, (1, config.block_size),
                        generator=torch.Generator().manual_seed(ctx.seed)).to(ctx.device)

    def best(fn) -> float:
        times = []
        for _ in range(5):
            _sync(ctx.device)
            start = time.perf_counter()
            fn()
            _sync(ctx.device)
            times.append(time.perf_counter() - start)
        return min(times) * 1e3

    rows = []
    with torch.no_grad():
        model(idx[:, :8])  # warm-up
        for T in TIMING_CONTEXTS:
            naive = best(lambda: model(idx[:, :T]))
            cache = model.new_cache(1)
            model(idx[:, :T - 1], cache=cache)

            def step():
                model(idx[:, T - 1:T], cache=cache)
                for layer in cache:
                    layer.seq_len = T - 1  # forget the step, keep the prefill

            cached = best(step)
            rows.append([T, f"{naive:.3f}", f"{cached:.3f}", f"{naive / cached:.1f}x"])
    return rows


def cached_generation(ctx: Context) -> Measurement:
    """The same greedy continuation with and without the KV cache, and its cost.

    A small engine (block_size 32) trains 200 steps; ``generate`` then
    extends ``"The "`` by 80 greedy tokens twice, ``use_cache=False`` and
    ``use_cache=True``. 80 tokens overfill the 32-token window, so the cached
    path must slide its window too. Observed: True when the two paths part,
    and not before the first token predicted from a slid window. Evidence: the first differing position, the first token
    predicted from a slid window (measured by a hook on the naive loop's
    inputs: index 33 for a 4-token prompt and block_size 32), the tokens
    around the first difference, and ms per new token against context
    length, naive vs cached (timings are evidence only, never graded).
    Seed 004, "Generation is a different program" (the cost structure) and
    Exercises, "Generation cost"; seed 000 §6.
    """
    from engine.generate import generate

    model, tok = _trained(ctx)
    prompt = tok.encode_tensor(PROMPT)[None].to(ctx.device)
    fed = []  # the length of every context the naive loop feeds the model
    handle = model.register_forward_pre_hook(lambda _m, args: fed.append(args[0].shape[1]))
    try:
        naive = generate(model, prompt, 80, greedy=True)
    finally:
        handle.remove()
    cached = generate(model, prompt, 80, greedy=True, use_cache=True)
    same = torch.equal(naive, cached)
    first = _first_difference(naive, cached)
    # Call k predicts the token at index len(prompt) + k from the tokens before it; the window
    # has slid once that call is fed fewer tokens than there are.
    P = prompt.shape[1]
    slid = next((P + k for k, n in enumerate(fed) if n < P + k), None)
    around = first if first is not None else slid
    rows = []
    if around is not None:
        for i in range(max(0, around - 2), min(naive.shape[1], around + 4)):
            rows.append([i, repr(tok.decode([naive[0, i].item()])), repr(tok.decode([cached[0, i].item()]))])
    ctx.progress(0.9, "timing")
    timing = _ms_per_token(ctx)
    evidence = [
        table("Greedy continuation of 'The ' (block_size 32)",
              ["path", "text"],
              [["naive", repr(tok.decode(naive[0].tolist()))], ["cached", repr(tok.decode(cached[0].tolist()))]]),
        table("Facts", ["quantity", "value"],
              [["same tokens", same], ["first differing position", first if first is not None else "none"],
               ["first token predicted from a slid window (measured)", slid if slid is not None else "none"],
               ["context lengths the naive loop fed", f"{fed[0]}, {fed[1]}, ... up to {max(fed)}"]]),
        table("Tokens around " + ("the first difference" if first is not None else "the first slide"),
              ["index", "naive", "cached"], rows),
        table("ms per new token against context length T (block_size 512)",
              ["T", "naive ms", "cached ms", "naive / cached"], timing),
        note("Naive decoding re-encodes all T visible tokens for every new one; the cache projects only the "
             "newest token and attends it to T stored keys."),
    ]
    parted_after_slide = first is not None and slid is not None and first >= slid
    return Measurement(observed=parted_after_slide, evidence=evidence)


#: Temperatures the diversity check sweeps, lowest first.
TEMPERATURES = (0.5, 1.0, 2.0)


def temperature_effect(ctx: Context) -> Measurement:
    """Sample diversity of the engine's sampling distribution at three temperatures.

    Fixed logits over V = 37 ids, N(0, 2) from a generator seeded with
    ``ctx.seed``, go through ``engine.generate.sampling_distribution`` at
    temperatures 0.5, 1 and 2. For each: the entropy (nats) and the number
    of distinct ids in 200 draws. Observed: a choice — ``a``: entropy rises
    with the temperature; ``b``: neither (not monotone, or unchanged within
    1e-6); ``c``: it falls. Seed 004, "Generation is a different program"
    (0.5 sharpens, 1.5 flattens).
    """
    import math

    from engine.generate import sampling_distribution

    g = torch.Generator().manual_seed(ctx.seed)
    logits = (2.0 * torch.randn(1, 37, generator=g)).to(ctx.device)
    draws = torch.Generator(device=ctx.device).manual_seed(ctx.seed)
    rows, entropies = [], []
    for t in TEMPERATURES:
        probs = sampling_distribution(logits, temperature=t)  # (1, V)
        entropy = -(probs * probs.clamp_min(1e-30).log()).sum().item()
        sample = torch.multinomial(probs[0], 200, replacement=True, generator=draws)
        entropies.append(entropy)
        rows.append([t, entropy, probs.max().item(), int(sample.unique().numel())])
    steps = [b - a for a, b in zip(entropies, entropies[1:])]
    if all(s > 1e-6 for s in steps):
        observed = "a"
    elif all(s < -1e-6 for s in steps):
        observed = "c"
    else:
        observed = "b"
    evidence = [
        table("sampling_distribution at three temperatures (V = 37)",
              ["temperature", "entropy (nats)", "top probability", "distinct ids in 200 draws"], rows),
        note(f"Uniform over 37 ids would give entropy ln 37 = {math.log(37):.3f}."),
    ]
    return Measurement(observed=observed, evidence=evidence)
