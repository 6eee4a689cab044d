"""A learner's progress as Rich shows it: totals per set and calibration."""

from __future__ import annotations

from rich.text import Text

from tutor.render.tables import WordTable


def _percent(fraction: float | None) -> str:
    return "-" if fraction is None else f"{100 * fraction:.0f} %"


def set_totals(catalog, progress, per_set: dict | None = None) -> WordTable:
    """Per set: solved, tried, of how many, and (with calibration) the Brier score of its rated predictions."""
    columns = ["set", "solved", "tried", "exercises"] + (["rated", "Brier"] if per_set is not None else [])
    table = WordTable(columns, styles=["bold"] + [""] * (len(columns) - 1))
    totals = [0, 0, 0]
    for exercise_set in catalog.sets:
        entries = [progress.of(e.id) for e in exercise_set.exercises]
        row = [sum(e.solved for e in entries), sum(bool(e.current) for e in entries), len(entries)]
        totals = [a + b for a, b in zip(totals, row)]
        extra = []
        if per_set is not None:
            c = per_set.get(exercise_set.id)
            extra = [str(c.count) if c else "0", f"{c.brier:.3f}" if c and c.brier is not None else "-"]
        table.add_row(exercise_set.title, *[str(v) for v in row], *extra)
    extra = [""] * 2 if per_set is not None else []
    table.add_row(Text("all", style="bold"), *[Text(str(v), style="bold") for v in totals], *extra)
    return table


def calibration_renderables(overall) -> list:
    """How often the learner was right at each confidence, and the Brier score; a sentence when nothing is rated."""
    if not overall.count:
        return [Text("No prediction carries a confidence yet: give one with each prediction (keys 5…9 and 0 "
                     "in the TUI, --confidence with tutor run) to see how well you judge your own answers.",
                     style="dim")]
    table = WordTable(["you said", "predictions", "right", "right %", "reads as"])
    for bucket in overall.buckets:
        if bucket.count:
            style = {"about right": "green", "over-confident": "red", "under-confident": "yellow"}.get(
                bucket.verdict, "dim")
            table.add_row(f"{bucket.confidence} %", str(bucket.count), str(bucket.right), _percent(bucket.rate),
                          Text(bucket.verdict, style=style))
    unrated = f"; {overall.unrated} without a confidence are left out" if overall.unrated else ""
    return [table, Text.assemble(("Brier score ", "bold"), (f"{overall.brier:.3f}", "bold cyan"),
                                 f" over {overall.count} rated prediction(s) (0 is perfect, always saying 50 % "
                                 f"scores 0.250){unrated}")]
