"""An edit-mode run as Rich shows it: the verdict, each side's observation, the instruments, the diff."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from tutor.model.verdict import first_instrument_divergence, instruments_holding
from tutor.render.result import evidence_renderables, render_diff

#: The verdict of an edit-mode run (``tutor.model.verdict.Verdict.status``): its style and its headline.
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
        return Text(ex.kind.show_observation(result.observations[side]))
    if side in result.errors:
        first = result.errors[side]
        return Text(("timed out: " if side in result.timed_out else "raised: ") + first, style="yellow")
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
    # the check's own "first divergence" (what a predict result of the same fault names), side by side
    divergences = [_first_divergence_note(result.evidence.get(side, [])) for side, _ in names]
    if any(d is not None for d in divergences):
        table.add_row("first divergence", *[Text(d if d is not None else "-", style="" if d not in (None, "none")
                                                 else "dim") for d in divergences])
    if outcome.instruments is not None:
        instruments = outcome.instruments
        cells = []
        for side, _ in names:
            if side in instruments.observations:
                first = instruments.observations[side]
                cells.append(Text("none (all hold)" if first == "none" else first,
                                  style="green" if first == "none" else "red"))
            else:
                cells.append(Text("-", style="dim"))
        table.add_row("first audit link to fail", *cells)  # the audit's order, not the check's
    return table


def _first_divergence_note(evidence: list) -> str | None:
    """What a side's evidence names as its first divergence (a ``first divergence: ...`` note), or None."""
    for item in evidence:
        text = str(item.get("text", "")) if isinstance(item, dict) and item.get("type") == "note" else ""
        if text.startswith("first divergence:"):
            return text.split(":", 1)[1].strip()
    return None


def instruments_table(outcome) -> Table | None:
    """Which of the engine's instruments hold on the clean engine and on yours; None when none ran."""
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


def _ungraded(ex, prediction: str, status: str) -> str:
    """Why a break's prediction was not graded: free text, or (an answer of the exercise's kind) a file
    that never ran, so nothing was observed to grade it against."""
    from tutor.model import answers  # deferred: only an ungraded break reads its prediction again
    try:
        ex.parse_answer(prediction)
    except answers.AnswerError:
        return "(free text, not graded)"
    if status == "syntax error":
        return "(not graded: your file does not compile, so nothing was observed)"
    return "(not graded: your file observed nothing to compare it with)"


def render_edit(ex, outcome, series: bool = True, diff: bool = True) -> list:
    """An edit-mode run: the verdict, the three columns, the first difference, your diff, your evidence.

    Args:
        ex: the exercise.
        outcome: a :class:`tutor.app.session.EditOutcome`.
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
                  None: (_ungraded(ex, outcome.prediction, verdict.status), "dim")}[verdict.prediction_correct]
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
        parts.append(Text("The engine's instruments on your engine", style="bold"))
        parts.append(table)
        first = first_instrument_divergence(outcome.instruments)
        parts.append(Text(f"First instrument that diverges from clean: {first}" if first else
                          "Every instrument agrees with the clean engine.", style="bold" if first else "green"))
    if any(value not in (None, "", "-") for value in (result.device, result.torch)):  # else nothing ran
        ran = f" · {result.duration_s:.2f} s" if result.duration_s else ""
        parts.append(Text(f"device {result.device} · torch {result.torch}{ran}", style="dim"))
    return parts
