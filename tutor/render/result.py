"""A run's result as Rich shows it: the verdict, the observations side by side, the evidence, the diff."""

from __future__ import annotations

from rich.text import Text

from tutor.render.series import SeriesPlot, series_groups
from tutor.render.tables import WordTable

VERDICT_STYLE = {"pass": "bold green", "fail": "bold red", "ok": "bold cyan",
                 "error": "bold yellow", "timeout": "bold yellow", "cancelled": "bold yellow"}


VERDICT_TEXT = {"pass": "✓ your prediction matched the observation",
                "fail": "✗ your prediction did not match the observation",
                "ok": "the check ran (no prediction)",
                "error": "the check could not finish — that is itself an outcome",
                "timeout": "the check ran out of time",
                "cancelled": "the run was cancelled"}


#: What a learner can do about a timeout, after the verdict (the TUI passes its own, naming its key).
TIMEOUT_ADVICE = "the machine may be busy: run it again when it is quieter"


def evidence_renderables(items: list[dict], side: str, series: bool = True) -> list:
    """Tables, notes and (unless ``series`` is False) each series' first and last value, of one side's evidence.

    Each line starts with ``[side]``; an empty ``side`` (an exercise with no
    fault has only one side) leaves the label out. The series themselves are
    drawn by :func:`render_result`, every side on one plot.
    """
    prefix = f"[{side}] " if side else ""
    out = []
    for item in items:
        kind = item.get("type")
        if kind == "table":
            # The title goes on its own line: as a table title it would wrap
            # to the width of a narrow table.
            out.append(Text(f"{prefix}{item['title']}", style="bold"))
            out.append(WordTable([str(c) for c in item["columns"]],
                                 [[Text(str(c)) for c in row] for row in item["rows"]]))
        elif kind == "series" and series:
            values = item.get("values", [])
            label = f" {item['label']}" if item.get("label") else ""
            first, last = (values[0], values[-1]) if values else (float("nan"), float("nan"))
            out.append(Text.assemble((f"{prefix}{item['title']}{label}: ", "bold"), f"{first:.4g} → {last:.4g}"))
        elif kind == "note":
            out.append(Text(f"{prefix}{item['text']}", style="italic"))
    return out


def comparison_table(ex, result) -> "WordTable":
    table = WordTable(["", "value"], styles=["bold", ""])
    if result.prediction is not None:
        # As it was read and graded, which is also how it is saved ("capability" for the key 6).
        table.add_row("your prediction", Text(result.prediction_text or result.prediction))
    if result.observed is not None:
        table.add_row("observed", Text(ex.kind.show_observation(result.observed)))
    if ex.fault and result.clean is not None and ex.observe != "clean":
        table.add_row("clean subject", Text(ex.kind.show_observation(result.clean)))
    if ex.fault and result.faulted is not None and ex.observe == "clean":
        table.add_row("faulted subject", Text(ex.kind.show_observation(result.faulted)))
    if ex.seed_per_attempt:
        table.add_row("mystery", Text(f"seed {result.seed} (tutor run {ex.id} --seed {result.seed} rebuilds it)"))
    ran = f" · {result.duration_s:.2f} s" if result.duration_s or result.status != "cancelled" else ""
    table.add_row("device", Text(f"{result.device} · torch {result.torch}{ran}"))
    return table


def render_result(ex, result, series: bool = True, timeout_advice: str = TIMEOUT_ADVICE, saved: bool = True,
                  unsaved_why: str = "") -> list:
    """The verdict, prediction against observation, errors, and evidence.

    ``series=False`` leaves the plots of the series out, for a caller that
    draws them itself (:func:`series_groups`); with ``series=True`` each is
    a :class:`SeriesPlot`. An error that several sides
    share (both timed out, say) is said once, naming the sides; a timeout's
    verdict ends with ``timeout_advice``. A warm-up's verdict says whether its bet was ``saved``
    (``tutor run --no-save``, or a save that failed, keeps nothing), and ``unsaved_why``, when given,
    why it was not.
    """
    verdict = VERDICT_TEXT.get(result.status, result.status)
    if result.status == "timeout" and timeout_advice:
        verdict = f"{verdict} — {timeout_advice}"
    if not ex.graded and result.status in VERDICT_TEXT and result.correct is not None:
        kept = "saved" if saved else f"not saved ({unsaved_why})" if unsaved_why else "not saved"
        verdict = f"{verdict} — a warm-up: {kept}, never graded"  # counted in no score (Exercise.graded)
    parts: list = [Text(verdict, style=VERDICT_STYLE.get(result.status, "bold"))]
    parts.append(comparison_table(ex, result))
    # With no fault there is one side, and naming it "clean" would mislead
    # (the capstone's mystery model, say): such lines carry no side label.
    label = (lambda side: side) if ex.fault else (lambda side: "")
    said: dict[str, list[str]] = {}  # each message once, with every side that gave it
    for side, message in result.errors.items():
        if result.status == "cancelled" and side == "run":
            continue  # the verdict line already says so
        said.setdefault(message, []).append(label(side) or "the check")
    for message, sides in said.items():
        parts.append(Text(f"{' and '.join(sides)}: {message}", style="yellow"))
    for side, output in result.output.items():
        if output.strip():
            parts.append(Text(f"{label(side) or 'the check'} printed:\n{output[:600]}", style="dim"))
    for side in ("faulted", "clean"):
        if side in result.evidence:
            # each series is drawn below, every side on one plot, its legend giving the first and last values
            parts.extend(evidence_renderables(result.evidence[side], label(side), series=False))
    if series:
        parts.extend(SeriesPlot(group, sided=bool(ex.fault)) for group in series_groups(result.evidence))
    return parts


class DiffView:
    """A unified diff that wraps long lines. A wrapped piece keeps its line's
    +/- marker followed by ↳, so it reads neither as context nor as another
    changed line (colour or not)."""

    STYLES = {"-": ("bold red", "red"), "+": ("bold green", "green"), "@": ("cyan", "cyan"), " ": ("", "dim")}

    def __init__(self, patch: str) -> None:
        self.lines = patch.rstrip("\n").splitlines()

    def __rich_console__(self, console, options):
        width = max(8, options.max_width - 2)
        for line in self.lines:
            if line.startswith(("---", "+++")):
                marker, body, style = " ", line, "bold"
            elif line.startswith("@@"):
                marker, body, style = " ", line, "cyan"
            else:
                marker, body = (line[:1] or " "), line[1:]
                marker = marker if marker in "+-" else " "
                style = self.STYLES[marker][1]
            marker_style = self.STYLES.get(marker, ("", ""))[0]
            pieces = Text(body, style=style).wrap(console, width, overflow="fold", no_wrap=False) or [Text("")]
            for n, piece in enumerate(pieces):
                yield Text.assemble((marker, marker_style), ("↳", "dim") if n else " ", piece)


def render_diff(patch: str) -> "DiffView":
    """The renderable for a fault's diff (see :class:`DiffView`)."""
    return DiffView(patch)
