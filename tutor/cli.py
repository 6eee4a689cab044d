"""The command line: ``tutor`` opens the TUI; the subcommands work headless.

Exit codes (``tutor run``): 0 the prediction matched, 1 it did not, 2 a usage
or input error (unknown id, unparseable answer, unsafe learner name, missing
device), 3 the check itself could not run (the subject raised, crashed or
timed out). ``--json`` prints exactly one JSON object on stdout; errors go to
stderr as one sentence naming the problem and the fix.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from exercises import answers
from exercises.faults import diff
from tutor import audit_cmd

EXIT_MATCH, EXIT_MISMATCH, EXIT_USAGE, EXIT_CHECK = 0, 1, 2, 3


class UsageError(Exception):
    """Bad input from the user: one sentence, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one sentence, exit 2, like every other input error
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"tutor: error: {message}; see '{self.prog} --help'.\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tutor", description="Learn PyTorch and GPT internals by breaking real code on "
                     "purpose. With no command, opens the terminal UI.")
    parser.add_argument("--progress-dir", help="folder for progress files (default: TUTOR_PROGRESS_DIR, "
                        "the checkout's progress/, or your user data folder)")
    parser.add_argument("--learner", help="learner name (default: TUTOR_LEARNER or your login name)")
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                        help="where checks run (default: auto, CUDA when present)")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")

    p = sub.add_parser("list", help="list the exercises")
    p.add_argument("--set", dest="set_id", help="only this set")
    p.add_argument("--json", action="store_true", help="print one JSON object")

    p = sub.add_parser("show", help="show an exercise: prompt, answer format, the fault's diff")
    p.add_argument("id")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("run", help="do one exercise headlessly: predict, run the check, grade, save")
    p.add_argument("id")
    p.add_argument("--predict", required=True, metavar="ANSWER", help="your prediction (see 'tutor show ID')")
    p.add_argument("--explain", metavar="TEXT", help="your explain-back note, saved with the attempt")
    p.add_argument("--no-save", action="store_true", help="do not record the attempt")
    p.add_argument("--json", action="store_true")
    _shared(p)

    p = sub.add_parser("check", help="run checks without a prediction: does each fault show?")
    p.add_argument("ids", nargs="*", metavar="ID", help="exercise ids (default: all)")
    p.add_argument("--set", dest="set_id", help="only this set")
    p.add_argument("--json", action="store_true")
    _shared(p, learner=False)

    p = sub.add_parser("progress", help="review saved attempts and notes")
    p.add_argument("--json", action="store_true")
    _shared(p, device=False)

    audit_cmd.add_parser(sub)
    return parser


def _shared(p: argparse.ArgumentParser, learner: bool = True, device: bool = True) -> None:
    # The same options are accepted after the subcommand too.
    if device:
        p.add_argument("--device", choices=["auto", "cpu", "cuda"], default=argparse.SUPPRESS)
    if learner:
        p.add_argument("--learner", default=argparse.SUPPRESS)
        p.add_argument("--progress-dir", default=argparse.SUPPRESS)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command is None:
            return _tui(args)
        return {"list": cmd_list, "show": cmd_show, "run": cmd_run, "check": cmd_check,
                "progress": cmd_progress, "audit": audit_cmd.run}[args.command](args)
    except UsageError as exc:
        _fail(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        _fail("interrupted; nothing half-written was saved")
        return 130


def _fail(sentence: str) -> None:
    sys.stderr.write(f"tutor: {sentence}\n")


def _catalog():
    from tutor.catalog import CatalogError, load_catalog
    try:
        return load_catalog()
    except CatalogError as exc:
        raise UsageError(f"the exercise catalog is broken: {exc}") from None


def _exercise(catalog, exercise_id: str):
    try:
        return catalog.get(exercise_id)
    except KeyError as exc:
        raise UsageError(exc.args[0]) from None


def _store_and_learner(args):
    from tutor.progress import ProgressError, ProgressStore, default_folder, default_learner, validate_learner
    try:
        learner = validate_learner(args.learner) if args.learner is not None else default_learner()
        return ProgressStore(default_folder(args.progress_dir)), learner
    except ProgressError as exc:
        raise UsageError(str(exc)) from None


def _load_quietly(store, learner: str):
    """Load a learner's progress; a failure is a usage error, warnings are kept for the caller."""
    from tutor.progress import ProgressError
    try:
        return store.load(learner)
    except ProgressError as exc:
        raise UsageError(str(exc)) from None


def _load_progress(store, learner: str):
    """Load a learner's progress and print its warnings (e.g. a damaged file moved aside)."""
    progress = _load_quietly(store, learner)
    for warning in progress.warnings:
        _fail(warning)
    return progress


def _print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2) + "\n")


def _console():
    from rich.console import Console
    return Console(highlight=False)


def escape(text: str) -> str:
    """Text shown through Rich markup: square brackets are data, not tags."""
    from rich.markup import escape as rich_escape
    return rich_escape(str(text))


# --- commands ----------------------------------------------------------------

def cmd_list(args) -> int:
    catalog = _catalog()
    sets = catalog.sets
    if args.set_id:
        try:
            sets = (catalog.get_set(args.set_id),)
        except KeyError as exc:
            raise UsageError(exc.args[0]) from None
    if args.json:
        _print_json({"sets": [{"id": s.id, "title": s.title, "summary": s.summary,
                               "exercises": [e.to_dict() for e in s.exercises]} for s in sets],
                     "count": sum(len(s.exercises) for s in sets)})
        return 0
    from rich.table import Table
    console = _console()
    for s in sets:
        table = Table(title=f"{s.title} — {s.summary}", title_justify="left", expand=False)
        table.add_column("id", style="bold")
        table.add_column("title")
        table.add_column("answer")
        for e in s.exercises:
            table.add_row(e.id, e.title, e.kind)
        console.print(table)
    return 0


def cmd_show(args) -> int:
    catalog = _catalog()
    ex = _exercise(catalog, args.id)
    fault = catalog.fault_of(ex)
    patch = diff(fault) if fault else ""
    if args.json:
        data = ex.to_dict()
        data.update(prompt=ex.prompt, explain=ex.explain, hints=list(ex.hints), diff=patch,
                    fault_summary=fault.summary if fault else None)
        _print_json(data)
        return 0
    from rich.markdown import Markdown
    from rich.panel import Panel
    from tutor.render import render_diff
    console = _console()
    console.print(Panel(Markdown(ex.prompt), title=f"{ex.id} · {ex.title}", subtitle=ex.source))
    if ex.choices:
        for cid, text in ex.choices:
            console.print(f"  [bold]{escape(cid)}[/bold]  {escape(text)}")
    console.print(f"Answer with {escape(ex.answer_format)}:  tutor run {ex.id} --predict ANSWER")
    if fault:
        console.print(f"\nThe fault [bold]{fault.id}[/bold]: {escape(fault.summary)}")
        console.print(render_diff(patch))
    return 0


def _runner(catalog, device: str):
    from tutor.runner import DeviceError, Runner
    try:
        return Runner(catalog, device=device)
    except DeviceError as exc:
        raise UsageError(str(exc)) from None


def cmd_run(args) -> int:
    from tutor.progress import Attempt, ProgressError, engine_hash, now
    from tutor.runner import DeviceError, WorkerError
    catalog = _catalog()
    ex = _exercise(catalog, args.id)
    try:
        ex.parse_answer(args.predict)
    except answers.AnswerError as exc:
        raise UsageError(f"{exc} (exercise {ex.id})") from None
    store, learner = (None, None) if args.no_save else _store_and_learner(args)
    if store is not None:
        loaded = _load_progress(store, learner)
        if loaded.read_only:
            raise UsageError("the progress file is read-only for this tutor; use --no-save or upgrade tutor")
        try:
            store.ensure_writable()
        except ProgressError as exc:
            raise UsageError(str(exc)) from None
    runner = _runner(catalog, args.device)
    try:
        result = runner.run(ex, args.predict)
    except DeviceError as exc:
        raise UsageError(str(exc)) from None
    except WorkerError as exc:
        _fail(str(exc))
        return EXIT_CHECK
    finally:
        runner.close()
    saved = None
    if store is not None and result.status in ("pass", "fail"):
        attempt = Attempt(time=now(), prediction=args.predict, observed=answers.show(ex.kind, result.observed),
                          correct=bool(result.correct), status=result.status, device=result.device,
                          engine_hash=engine_hash())
        try:
            store.record_attempt(learner, ex.id, attempt)
            if args.explain:
                store.save_note(learner, ex.id, args.explain)
            saved = str(store.path(learner))
        except ProgressError as exc:
            _fail(f"the attempt was not saved: {exc}")
    code = {"pass": EXIT_MATCH, "fail": EXIT_MISMATCH}.get(result.status, EXIT_CHECK)
    if args.json:
        data = result.to_dict()
        data["saved_to"] = saved
        data["observed_text"] = answers.show(ex.kind, result.observed) if result.observed is not None else None
        _print_json(data)
        return code
    _print_result(ex, result)
    if saved:
        _console().print(f"[dim]saved to {saved}[/dim]")
    return code


def _print_result(ex, result) -> None:
    from tutor.render import render_result
    console = _console()
    for renderable in render_result(ex, result):
        console.print(renderable)


def cmd_check(args) -> int:
    from tutor.runner import DeviceError, WorkerError
    catalog = _catalog()
    exercises = [_exercise(catalog, i) for i in args.ids] if args.ids else catalog.exercises
    if args.set_id:
        try:
            exercises = [e for e in exercises if e.set == catalog.get_set(args.set_id).id]
        except KeyError as exc:
            raise UsageError(exc.args[0]) from None
    runner = _runner(catalog, args.device)
    rows = []
    console = None if args.json else _console()
    try:
        try:
            runner.device  # resolve the device once: a missing CUDA is a usage error, not a traceback
        except DeviceError as exc:
            raise UsageError(str(exc)) from None
        for ex in exercises:
            result = runner.run(ex)
            ok = result.status == "ok" and (result.differs is not False)
            row = {"id": ex.id, "set": ex.set, "fault": ex.fault, "status": result.status,
                   "clean": result.clean, "faulted": result.faulted, "differs": result.differs,
                   "ok": ok, "duration_s": result.duration_s, "device": result.device, "error": result.error}
            rows.append(row)
            if console:
                mark = "[green]ok[/green]" if ok else "[red]FAIL[/red]"
                shown_clean = answers.show(ex.kind, result.clean) if result.clean is not None else "-"
                shown_fault = answers.show(ex.kind, result.faulted) if result.faulted is not None else "-"
                extra = f"  [red]{escape(result.error)}[/red]" if result.error else ""
                console.print(f"{mark} {ex.id:<24} clean={escape(shown_clean):<18} "
                              f"faulted={escape(shown_fault):<18} {result.duration_s:6.2f}s{extra}")
    except WorkerError as exc:
        _fail(str(exc))
        return EXIT_CHECK
    finally:
        runner.close()
    passed = sum(r["ok"] for r in rows)
    if args.json:
        _print_json({"results": rows, "passed": passed, "total": len(rows)})
    else:
        console.print(f"{passed} of {len(rows)} checks show their fault as the exercise claims")
    return 0 if passed == len(rows) else EXIT_CHECK


def cmd_progress(args) -> int:
    store, learner = _store_and_learner(args)
    progress = _load_progress(store, learner)
    if args.json:
        data = progress.to_dict()
        data["file"] = str(store.path(learner))
        _print_json(data)
        return 0
    from rich.table import Table
    from rich.text import Text
    console = _console()
    if not progress.exercises:
        console.print(Text(f"No attempts saved yet for {learner} in {store.folder}. "
                           "Start with: tutor (the TUI), or tutor show ID then tutor run ID --predict ANSWER"))
        return 0
    table = Table(title=f"Progress of {learner} ({store.path(learner)})", title_justify="left")
    for col in ("exercise", "attempts", "last prediction", "observed", "solved", "note"):
        table.add_column(col, overflow="fold")
    for ex_id, p in sorted(progress.exercises.items()):
        last = p.attempts[-1] if p.attempts else None
        table.add_row(ex_id, str(len(p.attempts)), Text(last.prediction if last else "-"),
                      Text(last.observed if last else "-"), "yes" if p.solved else "no",
                      Text((p.note[:60] + "…") if len(p.note) > 60 else p.note))
    console.print(table)
    return 0


def _tui(args) -> int:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("the terminal UI needs an interactive terminal; use 'tutor list', 'tutor show ID' "
                         "and 'tutor run ID --predict ANSWER' instead")
    store, learner = _store_and_learner(args)
    loaded = _load_quietly(store, learner)
    from tutor.ui.app import run_app
    run_app(catalog=_catalog(), store=store, learner=learner, device=args.device, warnings=loaded.warnings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
