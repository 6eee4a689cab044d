"""The longer views of single commands, drawn by :class:`tutor.cli.output.RichOutput`: ``tutor doctor``'s
findings and ``tutor report``'s class report.

Apart from :mod:`tutor.cli.output`, which keeps the outputs and the views of
the other commands, so that each module stays short; loaded only when one of
these two commands draws.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from tutor.instructor.report import _number, edits_words


#: ``tutor doctor``'s last line for each of its statuses (its error sentence, if any, goes to stderr).
DOCTOR_VERDICTS = {
    "ok": "All is well: a learner's runs work here, and code under check runs confined, as grading needs.",
    "grading_would_refuse": "A learner's runs work here, but grading would refuse to run here (exit 5).",
    "not_working": "A learner's runs do not work here (exit 1).",
    "could_not_run": "The check worker could not start (exit 3).",
}


def show_doctor(console, data: dict) -> None:
    """``tutor doctor``'s plain lines: where the tutor and progress are, what the worker runs, each layer
    of the sandbox (yes or no, what it is here), each check (pass, or why not), and what that comes to."""
    installed, progress, worker, say = data["installed"], data["progress"], data["worker"], console.print
    how = {"editable": f"an editable install of {installed['checkout']}", "installed": "installed",
           "source": "a source folder on the path, not installed"}[installed["mode"]]
    say(Text(f"tutor {data['version']} at {installed['folder']} ({how})"))
    writable = "writable" if progress["writable"] else "cannot be written"
    say(Text(f"progress goes to {progress['folder']} ({writable}), as learner {progress['learner']}"))
    say(Text(f"Python {data['python']['version']} ({data['python']['executable']})"))
    if worker:
        cuda = "CUDA seen" if worker["cuda"] else "no CUDA seen"
        say(Text(f"torch {worker['torch']}, checks run on {worker['device']} ({cuda}), {worker['cores']} cores"))
    if data["layers"]:
        say(Text("sandbox (each side's confinement, as the check worker found it):"))
    for layer in data["layers"]:
        mark, style = ("yes", "green") if layer["holds"] else ("no", "red" if layer["required"] else "yellow")
        say(Text.assemble((f"  {mark:<4}", style), f"{layer['name']:<18} {layer['detail']}"))
    if data["confinement"] and data["confinement"]["why"]:
        say(Text(f"  why: {data['confinement']['why']}"))
    if data["checks"]:
        say(Text("checks (one of each kind, nothing recorded):"))
    for row in data["checks"]:
        mark, style = ("pass", "green") if row["ok"] else ("FAIL", "red")
        say(Text.assemble((f"  {mark:<6}", style), f"{row['kind']:<8} {row['id']:<16} {row['duration_s']:5.1f} s"))
        if row["reason"]:
            say(Text(f"        {row['reason']}", style="red"))
    say(Text(DOCTOR_VERDICTS[data["status"]], style="bold"))


def show_report(console, report) -> None:
    """``tutor report``'s view (a :class:`tutor.instructor.report.ClassReport`): the exercise table,
    calibration, and the files not counted."""
    # "tried" as each row's tried counts it (a graded prediction); the rows with only other attempts apart
    others = (f", {report.only_other} more with only ungraded attempts (warm-up bets, fix, break, hunt)"
              if report.only_other else "")
    console.print(Text(f"Class report of {report.folder}: {report.learners} learner"
                       f"{'s' if report.learners != 1 else ''}, {report.tried} exercise"
                       f"{'s' if report.tried != 1 else ''} tried{others}", style="bold"))
    if report.exercises:
        table = Table()
        table.add_column("exercise", no_wrap=True)
        fixes = any(e.fix_tried for e in report.exercises)
        hinted = any(e.hinted for e in report.exercises)  # predictions made after a hint, where there are any
        guessed = any(e.guessed for e in report.exercises)  # predictions recorded as a guess, where there are any
        for column in ("tried", "1st try", "solved", "median tries", "notes") + (("fixed",) if fixes else ()) \
                + (("after a hint",) if hinted else ()) + (("guesses",) if guessed else ()):
            table.add_column(column, justify="right", overflow="fold")
        table.add_column("wrong predictions (learners)", overflow="fold", ratio=1)
        if edited := any(e.edits for e in report.exercises):  # fix, break and hunt attempts by verdict
            table.add_column("edits (fix, break, hunt)", overflow="fold", ratio=1)
        for e in report.exercises:
            wrong = " · ".join(f"{w.prediction} ×{w.learners}" for w in e.wrong_predictions) or "-"
            cells = [str(e.tried), str(e.solved_first), str(e.ever_solved), _number(e.median_attempts) or "-",
                     str(len(e.notes))] + ([f"{e.fix_fixed}/{e.fix_tried}"] if fixes else []) \
                + ([str(e.hinted)] if hinted else []) + ([str(e.guessed)] if guessed else [])
            table.add_row(e.id if e.in_catalog else f"{e.id} (not in the catalog)", *cells, Text(wrong),
                          *([Text(edits_words(e.edits) or "-")] if edited else []))
        console.print(table)
    if report.calibration:
        table = Table(title="Calibration: confidence against how often right")
        table.add_column("learner", no_wrap=True)
        guesses = any(c.guesses for c in report.calibration)  # a column only where some prediction was a guess
        for column in ("predictions", "mean confidence", "right", "Brier", "over-confidence") + \
                (("guesses",) if guesses else ()):
            table.add_column(column, justify="right")
        for c in report.calibration:
            table.add_row(Text(c.learner), str(c.predictions), f"{c.mean_confidence:.0%}", f"{c.accuracy:.0%}",
                          f"{c.brier:.3f}", f"{c.overconfidence:+.0%}", *([str(c.guesses)] if guesses else []))
        console.print(table)
    for d in report.damaged:
        console.print(Text(f"not counted, cannot be read: {d['file']}", style="red"))
    for s in report.shadowed:
        console.print(Text(f"not counted, the same learner as {s['same_learner_as']}: {s['file']}", style="yellow"))
    for path in report.read_only:
        console.print(Text(f"written by a newer tutor, counted as it reads here: {path}", style="yellow"))
    if report.kept_aside:
        console.print(Text(f"{len(report.kept_aside)} damaged file{'s were' if len(report.kept_aside) > 1 else ' was'} "
                           "moved aside earlier and kept (not counted):", style="yellow"))
        for path in report.kept_aside:
            console.print(Text(f"  {path}"))
