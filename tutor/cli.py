"""The command line: ``tutor`` opens the TUI; the subcommands work headless.

Exit codes (``tutor run``): 0 the prediction matched, 1 it did not, 2 a usage
or input error (unknown id, unparseable answer, unsafe learner name, missing
device, unreadable progress file), 3 the check itself could not run (the
subject raised, crashed or timed out, or the check worker would not start).
Errors go to stderr as one sentence naming the problem and the fix. With
``--json`` every command prints exactly one JSON object on stdout, errors
included: ``{"status": "usage_error", "error": SENTENCE, "exit_code": 2}``, or
``"could_not_run"`` with exit code 3 (``tutor audit`` has its own statuses).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from exercises import answers
from exercises.faults import diff
from tutor import audit_cmd
from tutor.runner import DEVICES

EXIT_MATCH, EXIT_MISMATCH, EXIT_USAGE, EXIT_CHECK = 0, 1, 2, 3


class UsageError(Exception):
    """Bad input from the user: one sentence, exit 2."""


class CouldNotRun(Exception):
    """The check could not be run at all (e.g. the worker did not start): one sentence, exit 3."""


class ArgumentsError(UsageError):
    """Arguments argparse could not read."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one sentence, exit 2, like every other input error
        raise ArgumentsError(f"{message}; see '{self.prog} --help'.")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="tutor", description="Learn PyTorch and GPT internals by breaking real code on "
                     "purpose. With no command, opens the terminal UI.")
    parser.add_argument("--progress-dir", help="folder for progress files (default: TUTOR_PROGRESS_DIR, "
                        "the checkout's progress/, or your user data folder)")
    parser.add_argument("--learner", help="learner name (default: TUTOR_LEARNER or your login name)")
    parser.add_argument("--device", choices=DEVICES, default="auto",
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
    p.add_argument("--seed", type=_seed, metavar="N", help="the check's seed (default: 0; for the capstone, "
                   "the number of your earlier attempts, so each attempt meets a new mystery)")
    p.add_argument("--json", action="store_true")
    _shared(p)

    p = sub.add_parser("check", help="run checks without a prediction: does each fault show?")
    p.add_argument("ids", nargs="*", metavar="ID", help="exercise ids (default: all)")
    p.add_argument("--set", dest="set_id", help="only this set")
    p.add_argument("--json", action="store_true")
    _shared(p, learner=False)

    p = sub.add_parser("progress", help="review saved attempts and notes")
    p.add_argument("--all", action="store_true", help="one line per learner with a file in the progress folder")
    p.add_argument("--json", action="store_true")
    _shared(p, device=False)

    audit_cmd.add_parser(sub)
    return parser


def _seed(text: str) -> int:
    """Read ``--seed``: a whole number, 0 or more."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number 0 or more, got {text!r}")
    return value


def _shared(p: argparse.ArgumentParser, learner: bool = True, device: bool = True) -> None:
    # The same options are accepted after the subcommand too.
    if device:
        p.add_argument("--device", choices=DEVICES, default=argparse.SUPPRESS)
    if learner:
        p.add_argument("--learner", default=argparse.SUPPRESS)
        p.add_argument("--progress-dir", default=argparse.SUPPRESS)


#: Whether this command has printed its JSON object already (there is exactly one).
_json_printed = False


def main(argv: list[str] | None = None) -> int:
    """Run one command; return its exit status (see the module docstring)."""
    global _json_printed
    _json_printed = False
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args = build_parser().parse_args(argv)
    except ArgumentsError as exc:
        # Best effort: the arguments did not parse, so --json counts wherever it appears.
        _fail(f"error: {exc}")
        _print_error_json("usage_error", str(exc), EXIT_USAGE, wanted="--json" in argv)
        return EXIT_USAGE
    wants_json = bool(getattr(args, "json", False))
    try:
        if args.command is None:
            return _tui(args)
        return {"list": cmd_list, "show": cmd_show, "run": cmd_run, "check": cmd_check,
                "progress": cmd_progress, "audit": audit_cmd.run}[args.command](args)
    except UsageError as exc:
        _fail(str(exc))
        _print_error_json("usage_error", str(exc), EXIT_USAGE, wanted=wants_json)
        return EXIT_USAGE
    except CouldNotRun as exc:
        _fail(str(exc))
        _print_error_json("could_not_run", str(exc), EXIT_CHECK, wanted=wants_json)
        return EXIT_CHECK
    except KeyboardInterrupt:
        sentence = "interrupted; nothing half-written was saved"
        _fail(sentence)
        _print_error_json("interrupted", sentence, 130, wanted=wants_json)
        return 130


def _fail(sentence: str) -> None:
    sys.stderr.write(f"tutor: {sentence}\n")


def _print_error_json(status: str, sentence: str, code: int, wanted: bool) -> None:
    """With --json, the error as the command's one JSON object (unless one was printed)."""
    if wanted and not _json_printed:
        _print_json({"status": status, "error": sentence, "exit_code": code})


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


def _store_and_learner(args, notices: list[str] | None = None):
    """The progress store and learner name the flags and environment choose.

    A notice about the learner name (the login name could not be used) goes
    to ``notices`` when given, else to stderr.

    Raises:
        UsageError: the learner name is unsafe.
    """
    from tutor.progress import ProgressError, ProgressStore, default_folder, default_learner_and_notice, \
        validate_learner
    try:
        if args.learner is not None:
            learner, notice = validate_learner(args.learner), None
        else:
            learner, notice = default_learner_and_notice()
        store = ProgressStore(default_folder(args.progress_dir))
    except ProgressError as exc:
        raise UsageError(str(exc)) from None
    if notice is not None:
        if notices is None:
            _fail(notice)
        else:
            notices.append(notice)
    return store, learner


def _load_quietly(store, learner: str, move_aside: bool = True):
    """Load a learner's progress; a failure is a usage error, warnings are kept for the caller.

    With ``move_aside=False`` a damaged file stays where it is and is a usage error.
    """
    from tutor.progress import ProgressError
    try:
        return store.load(learner, move_aside=move_aside)
    except ProgressError as exc:
        raise UsageError(str(exc)) from None


def _load_progress(store, learner: str, move_aside: bool = True):
    """Load a learner's progress and print its warnings (e.g. a damaged file moved aside)."""
    progress = _load_quietly(store, learner, move_aside=move_aside)
    for warning in progress.warnings:
        _fail(warning)
    return progress


def _print_json(obj: Any) -> None:
    global _json_printed
    _json_printed = True
    sys.stdout.write(json.dumps(obj, indent=2) + "\n")


def _console():
    from rich.console import Console
    return Console(highlight=False)


def escape(text: str) -> str:
    """Text shown through Rich markup: square brackets are data, not tags."""
    from rich.markup import escape as rich_escape
    return rich_escape(str(text))


# --- commands ----------------------------------------------------------------

def _find_set(catalog, name: str):
    """The set whose id or title is ``name``, ignoring case.

    Raises:
        UsageError: no set has that id or title; the sentence lists the ids.
    """
    wanted = name.strip().casefold()
    for s in catalog.sets:
        if wanted in (s.id.casefold(), s.title.casefold()):
            return s
    raise UsageError(f"there is no set {name!r}; use a set id ({', '.join(s.id for s in catalog.sets)}) "
                     "or a set title, as 'tutor list' shows them")


def cmd_list(args) -> int:
    catalog = _catalog()
    sets = (_find_set(catalog, args.set_id),) if args.set_id else catalog.sets
    if args.json:
        _print_json({"sets": [{"id": s.id, "title": s.title, "summary": s.summary,
                               "exercises": [e.to_dict() for e in s.exercises]} for s in sets],
                     "count": sum(len(s.exercises) for s in sets)})
        return 0
    from rich.table import Table
    from rich.text import Text
    console = _console()
    for s in sets:
        # The set's line is printed on its own: as a table title it would wrap to the table's width.
        console.print(Text.assemble((s.title, "bold"), f"  ({s.id}) — {s.summary}"))
        table = Table(expand=False)
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
        console.print(render_diff(patch))
    return 0


def _runner(catalog, device: str):
    from tutor.runner import DeviceError, Runner
    try:
        return Runner(catalog, device=device)
    except DeviceError as exc:
        raise UsageError(str(exc)) from None


def cmd_run(args) -> int:
    from tutor.progress import Attempt, ProgressError
    from tutor.runner import DeviceError, WorkerError
    catalog = _catalog()
    ex = _exercise(catalog, args.id)
    try:
        parsed = ex.parse_answer(args.predict)
    except answers.AnswerError as exc:
        raise UsageError(f"{exc} (exercise {ex.id})") from None
    store, learner = (None, None) if args.no_save else _store_and_learner(args)
    if args.no_save and args.explain:
        print("tutor: --explain is not saved with --no-save; drop --no-save to keep the note.", file=sys.stderr)
    earlier_attempts = 0
    if store is not None:
        loaded = _load_progress(store, learner)
        if loaded.read_only:
            raise UsageError("the progress file is read-only for this tutor; use --no-save or upgrade tutor")
        try:
            store.ensure_writable()
        except ProgressError as exc:
            raise UsageError(str(exc)) from None
        earlier_attempts = len(loaded.of(ex.id).attempts)
    seed = args.seed if args.seed is not None else ex.seed_for(earlier_attempts)
    runner = _runner(catalog, args.device)
    try:
        result = runner.run(ex, args.predict, seed=seed)
    except DeviceError as exc:
        raise UsageError(str(exc)) from None
    except WorkerError as exc:
        raise CouldNotRun(str(exc)) from None
    finally:
        runner.close()
    saved = None
    if store is not None and result.status in ("pass", "fail"):
        try:
            store.record_attempt(learner, ex.id, Attempt.of(result))
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
        # Which side the prediction is graded against (the seed it ran with is result.seed).
        data["observe"] = ex.observe
        data["prediction_choice_text"] = _choice_text(ex, parsed)
        data["observed_choice_text"] = _choice_text(ex, result.observed)
        data["note"] = args.explain if saved and args.explain else None  # the explain-back note, when saved
        _print_json(data)
        return code
    _print_result(ex, result)
    if saved:
        _console().print(f"[dim]saved to {saved}[/dim]")
    return code


def _choice_text(ex, choice_id) -> str | None:
    """The text of choice ``choice_id`` of a choice exercise; None for other kinds or no choice."""
    if ex.kind != "choice":
        return None
    return dict(ex.choices).get(choice_id) if isinstance(choice_id, str) else None


def _print_result(ex, result) -> None:
    from tutor.render import render_result
    console = _console()
    for renderable in render_result(ex, result):
        console.print(renderable)


def cmd_check(args) -> int:
    from rich.text import Text
    from tutor.runner import DeviceError, WorkerError
    catalog = _catalog()
    exercises = [_exercise(catalog, i) for i in args.ids] if args.ids else catalog.exercises
    if args.set_id:
        wanted = _find_set(catalog, args.set_id).id
        exercises = [e for e in exercises if e.set == wanted]
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
                console.print(_check_line(ex, result, ok, console.width), no_wrap=True, overflow="ellipsis")
                if result.error:  # the whole error, on the lines below its result
                    console.print(Text(f"     {result.error}", style="red"))
    except WorkerError as exc:
        raise CouldNotRun(str(exc)) from None
    finally:
        runner.close()
    passed = sum(r["ok"] for r in rows)
    # An exercise without a fault (the capstone) can only show that it ran; it
    # is counted apart, never as a fault that showed.
    faulted = [r for r in rows if r["fault"]]
    shown = sum(r["ok"] for r in faulted)
    if args.json:
        _print_json({"results": rows, "passed": passed, "total": len(rows),
                     "faults_shown": shown, "faults": len(faulted)})
    else:
        summary = f"{shown} of {len(faulted)} faults show against their clean run"
        unfaulted = len(rows) - len(faulted)
        if unfaulted:
            ran = passed - shown
            summary += f"; {ran} of {unfaulted} exercise{'s' if unfaulted > 1 else ''} without a fault ran"
        console.print(summary)
    return 0 if passed == len(rows) else EXIT_CHECK


#: Columns of one ``tutor check`` line: the id, then each side's value (longer ones cut with "…").
CHECK_ID_WIDTH, CHECK_VALUE_WIDTH = 23, 13
#: Width of a check line without its two values: mark, duration, id and the labels.
_CHECK_FIXED = 4 + 10 + CHECK_ID_WIDTH + 1 + len("clean=") + 1 + len("faulted=")


def _check_line(ex, result, ok: bool, width: int = 80):
    """One ``tutor check`` result on one line of under ``width`` columns: mark, duration, id, clean, faulted.

    Each value gets half of what the terminal leaves (at least 13 columns);
    when both must be cut, they are cut around their first difference, so
    the line still shows how the fault changed the outcome.
    """
    from rich.text import Text
    line = Text()
    line.append("ok  " if ok else "FAIL", style="green" if ok else "red")
    clean = answers.show(ex.kind, result.clean) if result.clean is not None else "-"
    faulted = answers.show(ex.kind, result.faulted) if result.faulted is not None else "-"
    value_width = max(CHECK_VALUE_WIDTH, (width - 1 - _CHECK_FIXED) // 2)
    clean, faulted = _fit_pair(clean, faulted, value_width)
    line.append(f" {result.duration_s:5.2f}s  {_fit(ex.id, CHECK_ID_WIDTH):<{CHECK_ID_WIDTH}} "
                f"clean={clean:<{value_width}} faulted={faulted}")
    return line


def _fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, the last one an ellipsis when anything was cut."""
    return text if len(text) <= width else text[:width - 1] + "…"


def _fit_pair(a: str, b: str, width: int) -> tuple[str, str]:
    """Cut ``a`` and ``b`` to ``width`` characters each, keeping their first difference in view."""
    if len(a) <= width and len(b) <= width:
        return a, b
    first = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    start = max(0, first - width // 3) if first >= width - 2 else 0

    def window(text: str) -> str:
        if start == 0:
            return _fit(text, width)
        piece = "…" + text[start + 1:]
        return _fit(piece, width)
    return window(a), window(b)


def cmd_progress(args) -> int:
    if args.all:
        return _progress_of_everyone(args)
    store, learner = _store_and_learner(args)
    progress = _load_progress(store, learner, move_aside=False)  # a review never moves a file
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
    console.print(Text(f"Progress of {learner} ({store.path(learner)})", style="bold"))
    table = Table()
    table.add_column("exercise", no_wrap=True)  # an id is never broken
    for col in ("attempts", "last prediction", "observed", "ever solved", "note"):
        table.add_column(col, overflow="fold")
    catalog = _catalog_or_none()
    seeded = {e.id for e in catalog.exercises if e.seed_per_attempt} if catalog else set()
    for ex_id, p in sorted(progress.exercises.items()):
        last = p.attempts[-1] if p.attempts else None
        observed = last.observed if last else "-"
        if last and ex_id in seeded:
            observed += f" (seed {last.seed})"  # which mystery the last attempt met
        table.add_row(ex_id, str(len(p.attempts)), Text(last.prediction if last else "-"),
                      Text(observed), "yes" if p.solved else "no",
                      Text((p.note[:60] + "…") if len(p.note) > 60 else p.note))
    console.print(table)
    return 0


def _progress_of_everyone(args) -> int:
    """``tutor progress --all``: one summary line per learner file in the folder; reads only.

    A file that cannot be read gets its reason on its line; the command then
    exits 2, as a review of that learner alone would.
    """
    from tutor.progress import ProgressError, ProgressStore, default_folder, show_time
    if args.learner:
        raise UsageError("--all reviews every learner in the folder; drop --learner, or drop --all")
    store = ProgressStore(default_folder(args.progress_dir))
    catalog = _catalog_or_none()
    total = len(catalog.exercises) if catalog else None
    rows = []
    for learner in store.learners():
        row = {"learner": learner, "file": str(store.path(learner)), "error": None}
        try:
            progress = store.load(learner, move_aside=False)
        except ProgressError as exc:
            row["error"] = str(exc)
            rows.append(row)
            continue
        entries = progress.exercises.values()
        times = [a.time for e in entries for a in e.attempts]
        row.update(tried=sum(bool(e.attempts) for e in entries), solved=sum(e.solved for e in entries),
                   attempts=len(times), notes=sum(bool(e.note.strip()) for e in entries),
                   last_attempt=max(times) if times else None)
        rows.append(row)
    code = EXIT_USAGE if any(r["error"] for r in rows) else 0
    if args.json:
        _print_json({"folder": str(store.folder), "exercises": total, "learners": rows})
        return code
    from rich.table import Table
    from rich.text import Text
    console = _console()
    if not rows:
        console.print(Text(f"No progress files in {store.folder}."))
        return 0
    console.print(Text(f"Learners in {store.folder}" + (f" ({total} exercises)" if total else ""), style="bold"))
    table = Table()
    table.add_column("learner", no_wrap=True)
    for col in ("tried", "ever solved", "attempts", "notes", "last attempt"):
        table.add_column(col, overflow="fold")
    for r in rows:
        if r["error"]:
            table.add_row(r["learner"], Text("cannot be read (below)", style="red"), "", "", "", "")
        else:
            when = show_time(r["last_attempt"]) if r["last_attempt"] else "-"
            table.add_row(r["learner"], str(r["tried"]), str(r["solved"]), str(r["attempts"]), str(r["notes"]), when)
    console.print(table)
    for r in rows:
        if r["error"]:
            _fail(r["error"])
    return code


def _catalog_or_none():
    """The catalog, or None when it cannot be loaded (a review of progress still works without it)."""
    try:
        return _catalog()
    except UsageError:
        return None


def _tui(args) -> int:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("the terminal UI needs an interactive terminal; use 'tutor list', 'tutor show ID' "
                         "and 'tutor run ID --predict ANSWER' instead")
    notices: list[str] = []
    store, learner = _store_and_learner(args, notices)  # shown in the TUI, where stderr is hidden
    loaded = _load_quietly(store, learner)
    from tutor.ui.app import run_app
    run_app(catalog=_catalog(), store=store, learner=learner, device=args.device,
            warnings=notices + loaded.warnings)
    return 0


if __name__ == "__main__":
    sys.exit(main())
