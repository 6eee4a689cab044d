"""Checks for the set ``comparison``: parameter accounting at a subword
vocabulary (seed 004, "Parameter accounting" and its exercise "Parameter
accounting at two scales")."""

from exercises.context import Context
from exercises.outcome import Measurement, note, table


def subword_breakdown(ctx: Context) -> Measurement:
    """The engine at V = 32,000, C = 512 (4 layers, 8 heads, block 64), counted on ``meta``.

    Observed: the token table's share of all unique parameters, rounded to
    4 decimals. Evidence: the breakdown by group, one block against the
    table, and the crossover vocabulary at this width. Counting is exact and
    allocates nothing (the ``meta`` device). Seed 004, "Parameter
    accounting" (exercise: the same breakdown at vocab_size 32,000,
    n_embd 512).
    """
    from engine.config import preset
    from engine.instruments.param_accounting import build_meta, count_by_group, percent_rows

    config = preset("seed", vocab_size=32_000, n_embd=512, n_head=8)
    model = build_meta(config)
    counted = count_by_group(model)
    total = counted["total"]
    table_size = model.wte.weight.numel()
    block = count_by_group(model.blocks[0])["total"]
    share = round(table_size / total, 4)
    crossover = block // config.n_embd + 1
    evidence = [
        table(f"V=32,000, C=512, {config.n_layer} layers, block {config.block_size}: unique parameters",
              ["group", "count", "share"], percent_rows(counted["groups"], total)),
        table("The token table against one block", ["quantity", "value"], [
            ["token table V x C", f"{table_size:,}"], ["one block", f"{block:,}"],
            ["table / block", f"{table_size / block:.2f}"], ["total", f"{total:,}"],
            ["table's share of the total", f"{share:.4f}"],
            ["lm_head shares the table", model.lm_head.weight is model.wte.weight],
            ["smallest V whose table outgrows one block at C=512", f"{crossover:,}"]]),
    ]
    if model.lm_head.weight is not model.wte.weight:
        evidence.append(note(f"The head is a second (V, C) matrix: {table_size:,} more parameters, and the "
                             "token table's share falls although it did not shrink."))
    return Measurement(observed=share, evidence=evidence)


def seed_backends(ctx: Context) -> Measurement:
    """One seed, one model, one batch: which routes give bit-identical logits?

    The small engine GPT is built twice from ``ctx.seed`` and reads one
    random (2, 16) batch in eval mode: (1) the same route twice; (2) the
    fused SDPA attention against the engine's written-out attention (the
    same mathematics, another kernel); (3) float32 against float64. Observed:
    ``[bit-identical for each of the three]``. Evidence: the largest
    difference of each, and (not graded, it depends on the machine) one
    large float32 sum with 1 thread against the worker's threads. Seed 000
    §8 ("Seeding is useful, but does not promise identical results across
    every backend, precision, or release").
    """
    import torch

    def logits(fused: bool = True, dtype=torch.float32):
        model = ctx.gpt("small").eval().to(dtype)
        for block in model.blocks:
            block.attn.fused = fused
        g = torch.Generator().manual_seed(ctx.seed)
        idx = torch.randint(0, model.config.vocab_size, (2, 16), generator=g).to(ctx.device)
        with torch.no_grad():
            return model(idx)[0].double()

    base = logits()
    routes = [("the same route, built twice", logits()), ("written-out attention", logits(fused=False)),
              ("float64", logits(dtype=torch.float64))]
    rows, observed = [], []
    for name, other in routes:
        same = torch.equal(base, other)
        observed.append(same)
        rows.append([name, same, (base - other).abs().max().item()])
    g = torch.Generator().manual_seed(ctx.seed)
    big = torch.randn(1 << 20, generator=g)
    threads = torch.get_num_threads()
    many = big.sum().item()
    torch.set_num_threads(1)
    try:
        one = big.sum().item()
    finally:
        torch.set_num_threads(threads)
    evidence = [
        table("Against fused SDPA in float32, same seed and batch", ["route", "bit-identical", "max |Δ logits|"],
              rows),
        table("Not graded: a 2^20-term float32 sum on this machine", ["threads", "sum"],
              [[threads, f"{many:.9g}"], [1, f"{one:.9g}"]]),
        note("A seed fixes the random numbers drawn, not the order in which a kernel adds products up: another "
             "kernel, another precision, another thread count or another release may round differently."),
    ]
    return Measurement(observed=observed, evidence=evidence)
