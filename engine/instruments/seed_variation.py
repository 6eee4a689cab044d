"""Baseline seed variation and the paired comparison.

Seed 004, "The run record, and this model's baseline variation" and "Weight
tying" (the book's Chapter 14): before calling two configurations different,
measure how much the *identical* configuration moves from seed to seed; then
compare the two configurations *paired* — the same seeds on both sides, so
each seed contributes one difference with its own initialisation and
batches held fixed.

The verdict rule used here is deliberately plain: the difference is
``resolved`` only when every paired delta has the same sign and the smallest
of them in size is larger than their spread (max − min); otherwise it is
``not resolved``. A baseline min/max range is context, never a threshold.
"""

from __future__ import annotations

import statistics
from typing import Callable


def summarize(values: list[float]) -> dict:
    """{"n", "median", "mean", "stdev" (sample; 0 for one value), "spread" (max − min), "min", "max"}."""
    values = [float(v) for v in values]
    if not values:
        raise ValueError("summarize needs at least one value")
    return {"n": len(values), "median": statistics.median(values), "mean": statistics.fmean(values),
            "stdev": statistics.stdev(values) if len(values) > 1 else 0.0,
            "spread": max(values) - min(values), "min": min(values), "max": max(values)}


def baseline(run: Callable[[int], dict], seeds: list[int], metric: str = "final_val_loss") -> dict:
    """Run the identical configuration at each seed and summarise ``metric``.

    Args:
        run: seed -> run record (``engine.instruments.run_record.train_run``).
        seeds: the seeds.

    Returns:
        {"records": [...], "values": [...], "summary": summarize(values)}.
    """
    records = [run(s) for s in seeds]
    values = [r[metric] for r in records]
    return {"records": records, "values": values, "summary": summarize(values)}


def verdict(deltas: list[float]) -> tuple[str, str]:
    """("resolved" | "not resolved", one sentence why) for paired deltas (B − A)."""
    if len(deltas) < 2:
        return "not resolved", "one pair cannot show a spread; run more seeds."
    spread = max(deltas) - min(deltas)
    signs = {(d > 0) - (d < 0) for d in deltas}
    if len(signs) != 1 or 0 in signs:
        favour = sum(d < 0 for d in deltas)
        return "not resolved", (f"the paired deltas disagree in sign ({favour} of {len(deltas)} favour B, "
                                "that is, B has the lower value).")
    smallest = min(abs(d) for d in deltas)
    if smallest <= spread:
        return "not resolved", (f"the deltas agree in sign, but the smallest ({smallest:.4g}) does not exceed "
                                f"their spread ({spread:.4g}).")
    side = "B lower" if deltas[0] < 0 else "A lower"
    return "resolved", (f"every delta has the same sign ({side}) and the smallest ({smallest:.4g}) exceeds "
                        f"their spread ({spread:.4g}).")


def paired(run_a: Callable[[int], dict], run_b: Callable[[int], dict], seeds: list[int],
           metric: str = "final_val_loss", seeds_b: list[int] | None = None,
           progress: Callable[[float, str], None] | None = None) -> dict:
    """Paired comparison of two configurations over the same seeds.

    Args:
        run_a, run_b: seed -> run record for configurations A and B.
        seeds: the seeds, run on both sides.
        seeds_b: B's seeds, when they differ from A's (an *unpaired*
            comparison — kept only to show what pairing buys).
        progress: optional callback(fraction, message).

    Returns:
        {"rows": [(seed_a, seed_b, a, b, b − a), ...], "deltas", "mean",
        "stdev", "spread", "verdict", "why", "a": summarize(a values),
        "b": summarize(b values), "paired": seeds_b is None or equal}.
    """
    seeds_b = list(seeds) if seeds_b is None else list(seeds_b)
    if len(seeds_b) != len(seeds):
        raise ValueError("both sides need the same number of seeds")
    rows, total = [], 2 * len(seeds)
    for i, (sa, sb) in enumerate(zip(seeds, seeds_b)):
        a = run_a(sa)[metric]
        if progress:
            progress((2 * i + 1) / total, f"A seed {sa}")
        b = run_b(sb)[metric]
        if progress:
            progress((2 * i + 2) / total, f"B seed {sb}")
        rows.append((sa, sb, a, b, b - a))
    deltas = [r[4] for r in rows]
    word, why = verdict(deltas)
    stats = summarize(deltas)
    return {"rows": rows, "deltas": deltas, "mean": stats["mean"], "stdev": stats["stdev"],
            "spread": stats["spread"], "verdict": word, "why": why,
            "a": summarize([r[2] for r in rows]), "b": summarize([r[3] for r in rows]),
            "paired": seeds_b == list(seeds)}
