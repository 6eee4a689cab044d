"""Baseline seed variation and the paired comparison.

Seed 004, "The run record, and this model's baseline variation" and "Weight
tying" (the book's Chapter 14): before calling two configurations different,
measure how much the *identical* configuration moves from seed to seed; then
compare the two configurations *paired* — the same seeds on both sides, so
each seed contributes one difference with its own initialisation and
batches held fixed.

The verdict weighs the mean paired delta against its own standard error:
the 95 % Student t interval of the mean, mean ± t(0.975, n − 1) · s / √n
over the n deltas B − A. The difference is ``resolved`` when that interval
excludes zero, otherwise ``not resolved``. Unlike a min/max rule over the
seeds it gets stricter, not looser, as the seeds get fewer, and one lucky
seed cannot decide it. A baseline min/max range is context, never a
threshold.
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


#: Two-sided 95 % quantiles of Student's t, t(0.975, df), for df = 1 .. 30 degrees of freedom.
T_975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
         2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
         2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)


def interval(deltas: list[float]) -> tuple[float, float, float]:
    """(mean, low, high): the 95 % t interval of the mean of n paired deltas.

    mean ± t(0.975, n − 1) · s / √n, with s the sample standard deviation.
    For the deltas 1, 2, 3: 2 ± 4.303 · 1 / √3 = [−0.484, 4.484].

    Raises:
        ValueError: with fewer than 2 deltas (one has no spread) or more
            than 31 (beyond the table of t quantiles).
    """
    n = len(deltas)
    if not 2 <= n <= len(T_975) + 1:
        raise ValueError(f"the interval needs 2 to {len(T_975) + 1} paired deltas, got {n}.")
    mean = statistics.fmean(deltas)
    half = T_975[n - 2] * statistics.stdev(deltas) / n ** 0.5
    return mean, mean - half, mean + half


def verdict(deltas: list[float]) -> tuple[str, str]:
    """("resolved" | "not resolved", one sentence why) for paired deltas (B − A).

    Resolved when the 95 % t interval of the mean delta (``interval``)
    excludes zero.
    """
    if len(deltas) < 2:
        return "not resolved", "one pair has no spread to weigh the mean against; run more seeds."
    mean, low, high = interval(deltas)
    if low <= 0 <= high:
        return "not resolved", (f"the 95% interval of the mean delta, [{low:+.4g}, {high:+.4g}], "
                                "includes zero.")
    side = "B lower" if mean < 0 else "A lower"
    return "resolved", (f"the 95% interval of the mean delta, [{low:+.4g}, {high:+.4g}], excludes zero "
                        f"({side}).")


def paired(run_a: Callable[[int], dict], run_b: Callable[[int], dict], seeds: list[int],
           metric: str = "final_val_loss", seeds_b: list[int] | None = None,
           progress: Callable[[float, str], None] | None = None) -> dict:
    """Paired comparison of two configurations over the same seeds.

    At each seed both arms start from the same initialisation (all but what
    the change adds) and read the same batches, so the difference B − A at
    that seed holds everything but the change fixed, and the noise the two
    runs share cancels in it.

    Args:
        run_a, run_b: seed -> run record for configurations A and B.
        seeds: the seeds; by default B runs them too.
        seeds_b: B's seeds, when they should differ from A's (an *unpaired*
            comparison, to show what pairing buys).
        progress: optional callback(fraction, message).

    Returns:
        {"rows": [(seed_a, seed_b, a, b, b − a), ...], "deltas", "mean",
        "stdev", "spread", "interval": (low, high) of the 95 % t interval
        (None for one seed), "verdict", "why", "a": summarize(a values),
        "b": summarize(b values), "paired": whether B ran A's seeds}.

    Raises:
        ValueError: if seeds_b and seeds differ in length.
    """
    if seeds_b is None:
        seeds_b = list(seeds)  # B runs A's seeds: each pair shares initialisation and batches
    seeds_b = list(seeds_b)
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
    bounds = interval(deltas)[1:] if len(deltas) > 1 else None
    return {"rows": rows, "deltas": deltas, "mean": stats["mean"], "stdev": stats["stdev"],
            "spread": stats["spread"], "interval": bounds, "verdict": word, "why": why,
            "a": summarize([r[2] for r in rows]), "b": summarize([r[3] for r in rows]),
            "paired": seeds_b == list(seeds)}
