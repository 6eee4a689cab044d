"""The two outputs of the command line: Rich for people, one JSON object for programs.

:mod:`tutor.cli` picks one per command (``--json`` or not). Each output is
also the :class:`tutor.cli.replies.Events` sink the command reports to while it
works, and draws the command's :class:`tutor.cli.replies.Reply` at the end, or
the error that stopped it. Sentences for the learner go to stderr in both
(``tutor: SENTENCE``); with JSON, stdout holds exactly one object.

Every JSON object, whatever the command and whether it worked, has the same
envelope (:func:`envelope`):

* ``schema_version`` — :data:`SCHEMA_VERSION`, raised when a key changes meaning or type;
* ``learner`` — the learner the command was about (text), or null when none
  (``list``, ``show``, ``check``, ``run --no-save``, a class-wide command);
* ``exit_code`` — the process's exit status (an integer, 0 included);
* ``error`` — one sentence when something stopped or spoiled the command
  (every exit code other than 0 and 1 has one), else null. An error that
  stopped a command before it had anything to show is
  ``{"status": "usage_error" | "could_not_run" | "interrupted", "error": ...}``
  with the envelope and what the input was about (``id``, ``prediction``).

Across commands a key has one type: an answer's ``observed`` is its value
(a list for a shape, a number, true/false, text) and ``observed_text`` how
it is written; ``note`` is text ("" when there is none); counts are integers.
"""

from __future__ import annotations

import json
import sys
from functools import singledispatchmethod
from typing import Any

from tutor.cli.replies import (CheckReply, DoctorReply, EditReply, EveryoneReply, GradeReply, GradescopeReply, ListReply,
                               ProgressReply, Reply, ReportReply, ReviewReply, RunReply, ShowReply, ShowSetReply,
                               VersionReply)
from tutor.cli.width import output_width
from tutor.model.attempts import show_time

#: The version of the JSON objects the commands print (see the module docstring).
SCHEMA_VERSION = 1

#: Columns of one ``tutor check`` line: the id, then each side's value (longer ones cut with "…").
CHECK_ID_WIDTH, CHECK_VALUE_WIDTH = 23, 13
#: Width of a check line without its two values: mark, duration, id and the labels.
_CHECK_FIXED = 4 + 10 + CHECK_ID_WIDTH + 1 + len("clean=") + 1 + len("faulted=")


def fail(sentence: str) -> None:
    """One sentence for the learner on stderr."""
    sys.stderr.write(f"tutor: {sentence}\n")


def list_rows(sets) -> list:
    """``tutor list`` as one Rich ``Text`` per line: each set's line (title, id, summary), then
    its exercises as ``  id  answer  title`` in columns as wide as the longest id and answer kind.

    A line is never wrapped by Rich (the terminal folds one that is too long), so each row
    stays one line for ``grep`` and the columns line up.
    """
    # deferred: Rich loads only when something is drawn (--json draws nothing)
    from rich.text import Text
    words = {e.kind: e.kind.words for s in sets for e in s.exercises}
    id_width = max((len(e.id) for s in sets for e in s.exercises), default=2)
    kind_width = max(map(len, words.values()), default=6)
    rows = [Text(f"  {'id':<{id_width}}  {'answer':<{kind_width}}  title", style="dim")] if words else []
    for s in sets:
        rows.append(Text.assemble((s.title, "bold"), f"  ({s.id}) — {s.summary}"))
        for e in s.exercises:
            row = Text(f"  {e.id:<{id_width}}  {words[e.kind]:<{kind_width}}  {e.title}")
            row.stylize("bold", 2, 2 + len(e.id))
            rows.append(row)
    return rows


def envelope(data: dict, code: int) -> dict:
    """``data`` with the keys every JSON object has: schema_version first, then the data, with
    ``learner`` and ``error`` (null when the data has none) and ``exit_code``."""
    obj = {"schema_version": SCHEMA_VERSION, **data}
    obj.setdefault("learner", None)
    obj.setdefault("error", None)
    obj["exit_code"] = code
    return obj


class JsonOutput:
    """Exactly one JSON object on stdout: the reply's data, or the error."""

    def __init__(self) -> None:
        self.printed = False

    def notice(self, sentence: str) -> None:
        fail(sentence)

    def checked(self, exercise, result, ok: bool) -> None:
        pass  # the rows are in the reply

    def graded(self, row) -> None:
        pass  # the rows are in the reply

    def show(self, reply: Reply) -> None:
        self._print(envelope(reply.data, reply.code))

    def error(self, status: str, sentence: str, code: int, context: dict | None = None) -> int:
        """The error on stderr and as the one JSON object; returns ``code``.

        ``context`` (what the input was about: ``id``, ``learner``, ``prediction``) joins the object.
        """
        fail(sentence)
        if not self.printed:
            self._print(envelope({"status": status, "error": sentence, **(context or {})}, code))
        return code

    def _print(self, obj: Any) -> None:
        self.printed = True
        sys.stdout.write(json.dumps(obj, indent=2) + "\n")


class RichOutput:
    """Tables, panels and colour for a terminal (plain text when piped or NO_COLOR is set)."""

    def __init__(self) -> None:
        self._console = None

    @property
    def console(self):
        if self._console is None:
            # deferred: Rich loads only when something is drawn (--json draws nothing)
            from rich.console import Console

            from tutor.cli.piped import PipedConsole
            width = output_width()
            # a terminal, or COLUMNS: Rich wraps at its width; a pipe or a file: prose whole, tables as wide
            # as their content
            self._console = Console(highlight=False) if width is None else PipedConsole(highlight=False, width=width)
        return self._console

    def notice(self, sentence: str) -> None:
        fail(sentence)

    def error(self, status: str, sentence: str, code: int, context: dict | None = None) -> int:
        fail(sentence)
        return code

    def graded(self, row) -> None:
        """One ``tutor grade`` line as soon as a row is graded: verdict, learner, exercise, the answer."""
        # deferred: Rich loads only when something is drawn (--json draws nothing)
        from rich.text import Text
        said = getattr(row, "tally", row.status)  # a warm-up's answer is said as one, never as a pass or a fail
        style = {"pass": "green", "fail": "yellow", "warm-up": "cyan"}.get(said, "red")
        line = Text(f"{said:<10}", style=style)
        line.append(f" {fit(row.learner or '?', 20):<20} {fit(row.exercise or '?', 23):<23} ")
        line.append(fit(row.answer_text, 30))
        self.console.print(line, no_wrap=True, overflow="ellipsis")
        if row.reason and row.status != "fail":
            # deferred: Rich loads only when something is drawn (--json draws nothing)
            from rich.padding import Padding
            self.console.print(Padding(Text(row.reason, style="red"), (0, 0, 0, 11), expand=False))  # wrapped: indented

    def checked(self, exercise, result, ok: bool) -> None:
        """One ``tutor check`` line as soon as the exercise ran; the whole error below it."""
        # deferred: Rich loads only when something is drawn (--json draws nothing)
        from rich.text import Text
        console = self.console
        console.print(check_line(exercise, result, ok, console.width), no_wrap=True, overflow="ellipsis")
        if result.error:
            console.print(Text(f"     {result.error}", style="red"))

    @singledispatchmethod
    def show(self, reply: Reply) -> None:
        raise TypeError(f"no view for {type(reply).__name__}")

    @show.register
    def _(self, reply: ListReply) -> None:
        rows = list_rows(reply.sets)
        # One Text per line, printed in one call: a table per set costs a layout pass per cell.
        self.console.print(*rows, sep="\n", soft_wrap=True)

    @show.register
    def _(self, reply: ShowReply) -> None:
        # deferred: Rich loads only when something is drawn (--json draws nothing)
        from rich.markdown import Markdown
        from rich.panel import Panel

        from tutor.render import render_diff
        ex, fault, console = reply.exercise, reply.fault, self.console
        console.print(Panel(Markdown(ex.prompt), title=f"{ex.id} · {ex.title}"))
        console.print(f"[dim]{escape(ex.source_label)}[/dim]")  # on its own line: a panel border would cut it
        if ex.choices:
            for cid, text in ex.choices:
                console.print(f"  [bold]{escape(cid)}[/bold]  {escape(text)}")
        ending = "" if ex.answer_format.endswith(("…", ".")) else "."
        console.print(f"Answer with {escape(ex.answer_format)}{ending}")
        console.print(f"  tutor run {ex.id} --predict ANSWER", soft_wrap=True)
        if fault:
            console.print(f"\nThe fault [bold]{fault.id}[/bold]: {escape(fault.summary)}")
            console.print(render_diff(reply.patch))

    @show.register
    def _(self, reply: ShowSetReply) -> None:
        # deferred: Rich loads only when something is drawn (--json draws nothing)
        from rich.markdown import Markdown
        from rich.panel import Panel
        from rich.text import Text
        exercise_set, console = reply.exercise_set, self.console
        primer = Markdown(exercise_set.primer or exercise_set.summary)  # Markdown, as a prompt is
        console.print(Panel(primer, title=f"{exercise_set.title} ({exercise_set.id})"))
        width = max(len(e.id) for e in exercise_set.exercises) if exercise_set.exercises else 0
        for n, e in enumerate(exercise_set.exercises, start=1):
            row = Text(f"{n:>3}  {e.id:<{width}}  {e.title}")
            row.stylize("bold", 5, 5 + len(e.id))
            console.print(row, no_wrap=True, overflow="ellipsis")
        if exercise_set.exercises:
            console.print(f"  tutor show {exercise_set.exercises[0].id}   (an exercise: its prompt and its fault)",
                          soft_wrap=True, markup=False)

    @show.register
    def _(self, reply: RunReply) -> None:
        # deferred: Rich loads only when something is drawn (--json draws nothing)
        from tutor.render import render_result
        for renderable in render_result(reply.exercise, reply.result, saved=reply.saved_to is not None):
            self.console.print(renderable)
        if reply.saved_to:
            self.console.print(f"[dim]saved to {reply.saved_to}[/dim]")

    @show.register
    def _(self, reply: EditReply) -> None:
        # deferred: Rich loads only when something is drawn (--json draws nothing)
        from tutor.render import render_edit
        for renderable in render_edit(reply.exercise, reply.outcome):
            self.console.print(renderable)
        if reply.saved_to:
            self.console.print(f"[dim]saved to {escape(reply.saved_to)}[/dim]")
        if reply.working_copy:
            self.console.print(f"[dim]your working copy: {escape(reply.working_copy)}[/dim]")

    @show.register
    def _(self, reply: CheckReply) -> None:
        # The lines were printed as each exercise ran (``checked``); the wall time and summary close them.
        if reply.show_wall:
            workers = f"{reply.jobs} worker{'s' if reply.jobs > 1 else ''}"
            timeouts = f"; {reply.timeouts} ran out of time" if reply.timeouts else ""
            self.console.print(f"checked {reply.data['total']} in {reply.wall_s:.1f} s wall time "
                               f"with {workers}{timeouts}")
        summary = f"{reply.shown} of {reply.faults} faults show against their clean run"
        if reply.unfaulted:
            summary += (f"; {reply.ran} of {reply.unfaulted} exercise{'s' if reply.unfaulted > 1 else ''} "
                        "without a fault ran")
        self.console.print(summary)

    @show.register
    def _(self, reply: ProgressReply) -> None:
        # deferred: Rich loads only when something is drawn (--json draws nothing)
        from rich.text import Text

        from tutor.render import calibration_renderables, progress_table, set_totals, sure_bets
        progress, store, learner, console = reply.progress, reply.store, reply.learner, self.console
        kept = reply.data.get("kept_aside", [])
        if not progress.exercises:
            console.print(Text(f"No attempts saved yet for {learner} in {store.folder}. "
                               "Start with: tutor (the TUI), or tutor show ID then tutor run ID --predict ANSWER"))
            _kept_aside_lines(console, kept)
            return
        console.print(Text(f"Progress of {learner} ({store.path(learner)})", style="bold"))
        table = progress_table(progress, reply.catalog, reply.seeded, note_preview)
        console.print(table)
        _kept_aside_lines(console, kept)
        if reply.calibration is not None:
            overall, per_set = reply.calibration
            console.print(Text("\nTotals", style="bold"))
            console.print(set_totals(reply.catalog, progress, per_set))
            console.print(Text("\nCalibration: how often you were right when you said how sure you were",
                               style="bold"))
            for renderable in calibration_renderables(overall, sure_bets(progress)):
                console.print(renderable)

    @show.register
    def _(self, reply: ReviewReply) -> None:
        # deferred: Rich loads only when something is drawn (--json draws nothing)
        from rich.text import Text

        from tutor.model.review import INTERVALS_DAYS
        from tutor.render import WordTable
        console = self.console
        if not reply.due:
            upcoming = (f"; the next comes back {show_time(reply.later[0].due.isoformat(timespec='seconds'))}"
                        if reply.later else "")
            console.print(Text(f"Nothing is due for review for {reply.learner}{upcoming}."))
            return
        console.print(Text(f"{len(reply.due)} due for review for {reply.learner}", style="bold"))
        table = WordTable(["exercise", "title", "box", "due since"], styles=["bold", "", "", ""])
        for state in reply.due:
            ex = reply.catalog.get(state.exercise_id)
            table.add_row(state.exercise_id, ex.title,
                          f"{state.box} ({INTERVALS_DAYS[state.box - 1]}d)",
                          show_time(state.due.isoformat(timespec="seconds")))
        console.print(table)
        console.print(Text("Open one with: tutor run ID --predict ANSWER, or in the TUI (↻ marks them).",
                           style="dim"))

    @show.register
    def _(self, reply: EveryoneReply) -> None:
        # deferred: Rich loads only when something is drawn (--json draws nothing)
        from rich.table import Table
        from rich.text import Text

        from tutor.render.progress import exercises_count, with_warm_ups
        console, rows = self.console, reply.rows
        if not rows:
            console.print(Text(f"No progress files in {reply.folder}."))
            _kept_aside_lines(console, reply.kept_aside)
            return
        total = f" ({exercises_count(reply.total - reply.ungraded, reply.ungraded)})" if reply.total else ""
        console.print(Text(f"Learners in {reply.folder}{total}", style="bold"))
        table = Table()
        table.add_column("learner", no_wrap=True)
        for col in ("tried", "ever solved", "attempts", "notes", "last attempt"):
            table.add_column(col, overflow="fold")
        for r in rows:
            if r["error"]:
                table.add_row(r["learner"], Text("cannot be read (below)", style="red"), "", "", "", "")
            else:
                when = show_time(r["last_attempt"]) if r["last_attempt"] else "-"
                table.add_row(r["learner"], with_warm_ups(r["tried"], r.get("warm_ups", 0)), str(r["solved"]),
                              str(r["attempts"]), str(r["notes"]), when)
        console.print(table)
        _kept_aside_lines(console, reply.kept_aside)
        for r in rows:
            if r["error"]:
                fail(r["error"])

    @show.register
    def _(self, reply: VersionReply) -> None:
        # deferred: Rich loads only when something is drawn (--json draws nothing)
        from rich.text import Text
        d = reply.data
        self.console.print(Text(f"tutor {d['version']} (JSON schema {SCHEMA_VERSION}, progress format "
                                f"{d['progress_format']})"))

    @show.register
    def _(self, reply: GradeReply) -> None:
        show_summary(self.console, reply)

    @show.register
    def _(self, reply: GradescopeReply) -> None:
        # deferred: Rich loads only when something is drawn (--json draws nothing)
        from rich.text import Text
        result = reply.data.get("result", {})
        tests = result.get("tests", [])
        # a submission that could not be graded has no extra_data: its tests still carry the assignment's points
        most = (result.get("extra_data") or {}).get("max_score", sum(t.get("max_score", 0) for t in tests))
        self.console.print(Text(f"Gradescope result: {result.get('score', 0):g} of {most:g} points over "
                                f"{len(tests)} tests, written to {reply.path}", style="bold"))
        if reply.data.get("error"):
            fail(reply.data["error"])

    @show.register
    def _(self, reply: DoctorReply) -> None:
        # deferred: only 'tutor doctor' draws its findings
        from tutor.cli.views import show_doctor
        show_doctor(self.console, reply.data)
        if reply.data.get("error"):
            fail(reply.data["error"])

    @show.register
    def _(self, reply: ReportReply) -> None:
        # deferred: the instructor's modules load only for their own views
        from tutor.cli.views import show_report
        from tutor.instructor.report import to_csv
        if reply.csv:
            sys.stdout.write(to_csv(reply.report))
            sys.stdout.flush()
        else:
            show_report(self.console, reply.report)
        if reply.data.get("error"):
            fail(reply.data["error"])


def _kept_aside_lines(console, kept: list) -> None:
    """Name the damaged files that were moved aside, so a review never forgets them."""
    # deferred: Rich loads only when something is drawn (--json draws nothing)
    from rich.text import Text
    if not kept:
        return
    count = f"{len(kept)} damaged file{'s were' if len(kept) > 1 else ' was'}"
    console.print(Text(f"{count} moved aside and kept (not counted above):", style="yellow"))
    for path in kept:
        console.print(Text(f"  {path}"))


#: How much of a note ``tutor progress`` shows (``tutor progress --json`` and the TUI show it all).
NOTE_PREVIEW_CHARS = 200


def note_preview(note: str, limit: int = NOTE_PREVIEW_CHARS) -> str:
    """The note on one line, cut at the last whole word before ``limit`` characters (with …)."""
    flat = " ".join(note.split())
    if len(flat) <= limit:
        return flat
    cut = flat[:limit].rsplit(" ", 1)[0] if " " in flat[:limit] else flat[:limit]
    return cut.rstrip(" ,;:") + " …"


def escape(text: str) -> str:
    """Text shown through Rich markup: square brackets are data, not tags."""
    # deferred: Rich loads only when something is drawn (--json draws nothing)
    from rich.markup import escape as rich_escape
    return rich_escape(str(text))


def check_line(ex, result, ok: bool, width: int = 80):
    """One ``tutor check`` result on one line of under ``width`` columns: mark, duration, id, clean, faulted.

    Each value gets half of what the terminal leaves (at least 13 columns);
    when both must be cut, they are cut around their first difference, so
    the line still shows how the fault changed the outcome.
    """
    # deferred: Rich loads only when something is drawn (--json draws nothing)
    from rich.text import Text
    line = Text()
    line.append("ok  " if ok else "FAIL", style="green" if ok else "red")
    clean = ex.kind.show_observation(result.clean) if result.clean is not None else "-"
    faulted = ex.kind.show_observation(result.faulted) if result.faulted is not None else "-"
    value_width = max(CHECK_VALUE_WIDTH, (width - 1 - _CHECK_FIXED) // 2)
    clean, faulted = fit_pair(clean, faulted, value_width)
    line.append(f" {result.duration_s:5.2f}s  {fit(ex.id, CHECK_ID_WIDTH):<{CHECK_ID_WIDTH}} "
                f"clean={clean:<{value_width}} faulted={faulted}")
    return line


def fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, the last one an ellipsis when anything was cut."""
    return text if len(text) <= width else text[:width - 1] + "…"


def fit_pair(a: str, b: str, width: int) -> tuple[str, str]:
    """Cut ``a`` and ``b`` to ``width`` characters each, keeping their first difference in view."""
    if len(a) <= width and len(b) <= width:
        return a, b
    first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    start = max(0, first - width // 3) if first >= width - 2 else 0

    def window(text: str) -> str:
        if start == 0:
            return fit(text, width)
        piece = "…" + text[start + 1:]
        return fit(piece, width)
    return window(a), window(b)


# --- the instructor's views ------------------------------------------------------------------

def show_summary(console, reply: GradeReply) -> None:
    """``tutor grade``'s view after the rows' lines: counts, the assignment, where the files went, what was saved."""
    # deferred: Rich loads only when something is drawn (--json draws nothing)
    from rich.text import Text
    s = reply.summary
    order = ("pass", "fail", "warm-up", "unreadable", "not_assigned", "error", "timeout", "cancelled")
    counts = ", ".join(f"{s.counts[k]} {k.replace('_', ' ')}" for k in order if s.counts.get(k))
    console.print(Text(f"Graded {s.rows} row{'s' if s.rows != 1 else ''} ({s.learners} learner"
                       f"{'s' if s.learners != 1 else ''}, {len(s.exercises)} exercise"
                       f"{'s' if len(s.exercises) != 1 else ''}, max_score {s.max_score:g}) in {s.duration_s:.1f} s "
                       f"on {s.workers} worker{'s' if s.workers != 1 else ''}, {s.checks} distinct check"
                       f"{'s' if s.checks != 1 else ''}: {counts}.", style="bold"))
    if s.inferred:
        console.print(Text(f"Assignment inferred from the rows: {', '.join(s.exercises) or 'none'}."))
    if s.resumed:
        console.print(Text(f"Resumed: {s.resumed} row{'s were' if s.resumed != 1 else ' was'} graded already."))
    if s.warnings:
        console.print(Text(f"{s.warnings} row{'s have' if s.warnings != 1 else ' has'} a warning (see the "
                           "gradebook's warnings column).", style="yellow"))
    console.print(Text(f"Gradebook: {s.gradebook}"))
    console.print(Text(f"Results:   {s.results}"))
    if s.saved is not None:
        console.print(Text(f"Saved {s.saved} attempt{'s' if s.saved != 1 else ''} to the progress files in "
                           f"{s.progress_folder}."))
    if reply.data.get("error"):
        fail(reply.data["error"])
