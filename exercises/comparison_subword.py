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
