"""Rich renderables for a run's result — used by the CLI and inside the TUI.

Evidence tables wrap long cells (``overflow="fold"``) instead of cutting them,
so nothing is silently truncated on an 80-column terminal.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from exercises import answers

_BLOCKS = "▁▂▃▄▅▆▇█"
VERDICT_STYLE = {"pass": "bold green", "fail": "bold red", "ok": "bold cyan",
                 "error": "bold yellow", "timeout": "bold yellow", "cancelled": "bold yellow"}
VERDICT_TEXT = {"pass": "✓ your prediction matched the observation",
                "fail": "✗ your prediction did not match the observation",
                "ok": "the check ran (no prediction)",
                "error": "the check could not finish — that is itself an outcome",
                "timeout": "the check ran out of time and was stopped",
                "cancelled": "the run was cancelled"}


def sparkline(values: list[float], width: int = 48) -> str:
    """A one-line drawing of a series (min at ▁, max at █)."""
    if not values:
        return ""
    if len(values) > width:
        step = len(values) / width
        values = [values[int(i * step)] for i in range(width)]
    lo, hi = min(values), max(values)
    span = (hi - lo) or 1.0
    return "".join(_BLOCKS[min(len(_BLOCKS) - 1, int((v - lo) / span * (len(_BLOCKS) - 1) + 0.5))] for v in values)


def evidence_renderables(items: list[dict], side: str, series: bool = True) -> list:
    """Tables, notes and (unless ``series`` is False) text sparklines of one side's evidence.

    Each line starts with ``[side]``; an empty ``side`` (an exercise with no
    fault has only one side) leaves the label out.
    """
    prefix = f"[{side}] " if side else ""
    out = []
    for item in items:
        kind = item.get("type")
        if kind == "table":
            # The title goes on its own line: as a table title it would wrap
            # to the width of a narrow table.
            out.append(Text(f"{prefix}{item['title']}", style="bold"))
            table = Table(show_lines=False, expand=False, pad_edge=False)
            for column in item["columns"]:
                table.add_column(Text(str(column)), overflow="fold")
            for row in item["rows"]:
                table.add_row(*[Text(str(c)) for c in row])
            out.append(table)
        elif kind == "series" and series:
            values = item.get("values", [])
            label = f" {item['label']}" if item.get("label") else ""
            first, last = (values[0], values[-1]) if values else (float("nan"), float("nan"))
            out.append(Text.assemble((f"{prefix}{item['title']}{label}: ", "bold"),
                                     f"{first:.4g} → {last:.4g}  ", (sparkline(values), "cyan")))
        elif kind == "note":
            out.append(Text(f"{prefix}{item['text']}", style="italic"))
    return out


def comparison_table(ex, result) -> Table:
    table = Table(show_header=True, expand=False, pad_edge=False)
    table.add_column("", style="bold")
    table.add_column("value", overflow="fold")
    if result.prediction is not None:
        # As it was read and graded, which is also how it is saved ("capability" for the key 6).
        table.add_row("your prediction", Text(result.prediction_text or result.prediction))
    if result.observed is not None:
        table.add_row("observed", Text(answers.show(ex.kind, result.observed)))
    if ex.fault and result.clean is not None and ex.observe != "clean":
        table.add_row("clean subject", Text(answers.show(ex.kind, result.clean)))
    if ex.fault and result.faulted is not None and ex.observe == "clean":
        table.add_row("faulted subject", Text(answers.show(ex.kind, result.faulted)))
    if ex.seed_per_attempt:
        table.add_row("mystery", Text(f"seed {result.seed} (tutor run {ex.id} --seed {result.seed} rebuilds it)"))
    ran = f" · {result.duration_s:.2f} s" if result.duration_s or result.status != "cancelled" else ""
    table.add_row("device", Text(f"{result.device} · torch {result.torch}{ran}"))
    return table


def render_result(ex, result, series: bool = True) -> list:
    """The verdict, prediction against observation, errors, and evidence.

    ``series=False`` leaves loss curves out, for a caller that draws them itself.
    """
    parts: list = [Text(VERDICT_TEXT.get(result.status, result.status),
                        style=VERDICT_STYLE.get(result.status, "bold"))]
    parts.append(comparison_table(ex, result))
    # With no fault there is one side, and naming it "clean" would mislead
    # (the capstone's mystery model, say): such lines carry no side label.
    label = (lambda side: side) if ex.fault else (lambda side: "")
    for side, message in result.errors.items():
        if result.status == "cancelled" and side == "run":
            continue  # the verdict line already says so
        parts.append(Text(f"{label(side) or 'the check'}: {message}", style="yellow"))
    for side, output in result.output.items():
        if output.strip():
            parts.append(Text(f"{label(side) or 'the check'} printed:\n{output[:600]}", style="dim"))
    for side in ("faulted", "clean"):
        if side in result.evidence:
            parts.extend(evidence_renderables(result.evidence[side], label(side), series))
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


# --- edit mode (issue 12) ------------------------------------------------------

#: The verdict of an edit-mode run (``tutor.edit.Verdict.status``): its style and its headline.
EDIT_STYLE = {"fixed": "bold green", "not fixed": "bold red", "changed": "bold cyan", "unchanged": "bold yellow",
              "could not run": "bold yellow", "syntax error": "bold red"}
EDIT_TEXT = {"fixed": "✓ fixed — your code observes what the clean code observes",
             "not fixed": "✗ not fixed — your code does not yet observe what the clean code observes",
             "changed": "your fault shows: the check observes something else",
             "unchanged": "your fault does not show in this check's observation",
             "could not run": "the check could not measure the clean code, so there is no verdict",
             "syntax error": "✗ your file does not compile, so it was not run"}
#: How each side of an edit-mode run is headed, in order.
EDIT_COLUMNS = (("clean", "clean"), ("faulted", "faulted"), ("yours", "yours"))


def side_cell(ex, result, side: str) -> Text:
    """One side's cell of the three columns: its observation, or how it ended."""
    if side in result.observations:
        return Text(answers.show(ex.kind, result.observations[side]))
    if side in result.errors:
        first = result.errors[side]
        return Text(("timed out: " if "did not finish within" in first else "raised: ") + first, style="yellow")
    return Text("-", style="dim")


def edit_columns(ex, outcome) -> Table:
    """Clean, faulted (when the run has it) and yours side by side: what each observed."""
    result, task = outcome.result, outcome.task
    names = [(side, label) for side, label in EDIT_COLUMNS
             if side != "faulted" or any(s.name == "faulted" for s in task.sides(outcome.text))]
    table = Table(show_header=True, expand=False, pad_edge=False)
    table.add_column("", style="bold")
    for _, label in names:
        title = "mystery" if task.hidden and label == "faulted" else label
        table.add_column(title, overflow="fold")
    table.add_row("observed", *[side_cell(ex, result, side) for side, _ in names])
    if outcome.instruments is not None:
        instruments = outcome.instruments
        cells = []
        for side, _ in names:
            if side in instruments.observations:
                first = instruments.observations[side]
                cells.append(Text("all hold" if first == "none" else f"{first} fails first",
                                  style="green" if first == "none" else "red"))
            else:
                cells.append(Text("-", style="dim"))
        table.add_row("instruments", *cells)
    return table


def instruments_table(outcome) -> Table | None:
    """Which of the engine's instruments hold on the clean engine and on yours; None when none ran."""
    from tutor.edit import instruments_holding
    if outcome.instruments is None:
        return None
    rows = instruments_holding(outcome.instruments)
    table = Table(show_header=True, expand=False, pad_edge=False)
    sides = [side for side in ("clean", "faulted", "yours") if any(side in row for row in rows)
             or side in outcome.instruments.errors]
    table.add_column("instrument")
    for side in sides:
        table.add_column("mystery" if side == "faulted" and outcome.task.hidden else side, overflow="fold")
    table.add_column("why it fails on yours", overflow="fold")
    styles = {"holds": "green", "fails": "bold red"}
    for row in rows:
        yours = row.get("yours", "-")
        table.add_row(row["link"], *[Text(row.get(side, "-"), style=styles.get(row.get(side), "")) for side in sides],
                      Text(row.get("yours_verdict", "") if yours == "fails" else "", style="dim"))
    for side, message in outcome.instruments.errors.items():
        table.add_row(Text(f"({side} did not run)"), *[Text(message if s == side else "", style="yellow")
                                                      for s in sides], "")
    return table


def render_edit(ex, outcome, series: bool = True, diff: bool = True) -> list:
    """An edit-mode run: the verdict, the three columns, the first difference, your diff, your evidence.

    Args:
        ex: the exercise.
        outcome: a :class:`tutor.session.EditOutcome`.
        series: whether loss curves are drawn as text (the TUI draws its own).
        diff: whether the learner's diff is shown.
    """
    verdict, result, task = outcome.verdict, outcome.result, outcome.task
    mode = {"fix": "Fix it", "break": "Break it", "hunt": "Find and fix"}[task.mode]
    parts: list = [Text.assemble((f"{mode} · ", "bold"), (EDIT_TEXT.get(verdict.status, verdict.status),
                                                         EDIT_STYLE.get(verdict.status, "bold")))]
    if verdict.status != "syntax error":
        parts.append(edit_columns(ex, outcome))
    parts.append(Text(verdict.sentence))
    if task.mode == "break" and outcome.prediction:
        graded = {True: ("✓ your prediction matched", "green"), False: ("✗ your prediction did not match", "red"),
                  None: ("(free text, not graded)", "dim")}[verdict.prediction_correct]
        parts.append(Text.assemble(("your prediction: ", "bold"), outcome.prediction, "  ", graded))
    if "run" in result.errors and result.errors["run"] not in verdict.sentence:
        parts.append(Text(result.errors["run"], style="yellow"))
    output = result.output.get("yours", "")
    if output.strip():
        parts.append(Text(f"yours printed:\n{output[:600]}", style="dim"))
    if diff:
        parts.append(Text("your diff" + (" (against the file you were given)" if task.hidden else
                                         " (against the clean file)"), style="bold"))
        parts.append(render_diff(outcome.diff) if outcome.diff.strip() else Text("(no change)", style="dim"))
    if "yours" in result.evidence:
        parts.extend(evidence_renderables(result.evidence["yours"], "yours", series))
    table = instruments_table(outcome)
    if table is not None:
        from tutor.edit import first_instrument_divergence
        parts.append(Text("The engine's instruments on your engine", style="bold"))
        parts.append(table)
        first = first_instrument_divergence(outcome.instruments)
        parts.append(Text(f"First instrument that diverges from clean: {first}" if first else
                          "Every instrument agrees with the clean engine.", style="bold" if first else "green"))
    ran = f" · {result.duration_s:.2f} s" if result.duration_s else ""
    parts.append(Text(f"device {result.device} · torch {result.torch}{ran}", style="dim"))
    return parts
