"""The command line: ``tutor`` opens the TUI; the subcommands work headless.

Three parts: :mod:`tutor.cli.parser` reads the arguments, the commands
(:mod:`tutor.cli.learner`, :mod:`tutor.cli.author`, :mod:`tutor.cli.instructor`,
:mod:`tutor.cli.audit`, :mod:`tutor.cli.doctor`) do the work and return data (:mod:`tutor.cli.replies`),
:mod:`tutor.cli.output` shows it — and ``main`` joins them, picking one output
per command: Rich, or with ``--json`` exactly one JSON object.

Exit codes (``tutor run``): 0 the prediction matched, 1 it did not, 2 a usage
or input error (unknown id, unparseable answer, unsafe learner name, missing
device, unreadable progress file), 3 the check itself could not run (the
subject raised, crashed or timed out, or the check worker would not start).
Errors go to stderr as one sentence naming the problem and the fix. With
``--json`` every command prints exactly one JSON object on stdout, errors
included: ``{"status": "usage_error", "error": SENTENCE, "exit_code": 2}``, or
``"could_not_run"`` with exit code 3 (``tutor audit`` has its own statuses),
each inside the envelope every JSON object shares (``schema_version``,
``learner``, ``exit_code``, ``error``; see :mod:`tutor.cli.output`).

Output that the terminal's encoding cannot show (``PYTHONIOENCODING=latin-1``
and a ✓) is written with replacement characters, and output nobody reads any
more (``tutor run ... | head -1``: the reader has left) is dropped quietly:
printing never changes the exit status of work already done and saved.
"""

from __future__ import annotations

import importlib
import os
import sys

from tutor.cli import browse, learner
from tutor.cli.output import JsonOutput, RichOutput
from tutor.cli.parser import ArgumentsError, build_parser
from tutor.cli.replies import (EXIT_CHECK, EXIT_MATCH, EXIT_MISMATCH, EXIT_SAVE, EXIT_USAGE, CouldNotRun, CouldNotSave,
                               UsageError)

__all__ = ["main", "build_parser", "EXIT_MATCH", "EXIT_MISMATCH", "EXIT_USAGE", "EXIT_CHECK"]


def _imported_when_run(module: str, name: str):
    """The command ``tutor.cli.<module>.<name>``, its module imported when it runs: ``tutor list``
    does not load the grader, the report or the author's checks (nor the runner they import)."""
    def command(args, events):
        return getattr(importlib.import_module(f"tutor.cli.{module}"), name)(args, events)
    command.__name__ = command.__qualname__ = name
    return command


#: The headless commands by name (``tutor audit`` and the TUI are dispatched apart).
COMMANDS = {"list": browse.list_, "show": browse.show, "run": learner.run,
            "check": _imported_when_run("author", "check"), "progress": learner.progress,
            "grade": _imported_when_run("instructor", "grade"), "report": _imported_when_run("instructor", "report"),
            "gradescope": _imported_when_run("instructor", "gradescope"),
            "fix": learner.fix, "break": learner.break_, "review": learner.review,
            "doctor": _imported_when_run("doctor", "doctor")}


def main(argv: list[str] | None = None) -> int:
    """Run one command; return its exit status (see the module docstring)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    degrade_unencodable_output()
    stdout = sys.stdout
    sys.stdout = QuietWhenUnread(stdout)
    try:
        return _main(argv)
    finally:
        sys.stdout.flush()  # what is still buffered, while a reader that left is still handled
        sys.stdout = stdout


def _main(argv: list[str]) -> int:
    try:
        args = build_parser().parse_args(argv)
    except ArgumentsError as exc:
        # Best effort: the arguments did not parse, so --json counts wherever it appears.
        output = JsonOutput() if "--json" in argv else RichOutput()
        return output.error("usage_error", str(exc), EXIT_USAGE)
    output = JsonOutput() if getattr(args, "json", False) else RichOutput()
    try:
        if args.version:
            reply = learner.version(args, output)
            output.show(reply)
            return reply.code
        if args.command is None:
            return learner.tui(args)
        if args.command == "audit":
            from tutor.cli import audit  # the sandbox and the speed probe, only for the audit
            return audit.run(args)
        reply = COMMANDS[args.command](args, output)
        output.show(reply)
        return reply.code
    except UsageError as exc:
        return output.error("usage_error", str(exc), EXIT_USAGE, context=exc.context)
    except CouldNotRun as exc:
        return output.error("could_not_run", str(exc), EXIT_CHECK, context=exc.context)
    except CouldNotSave as exc:
        return output.error("could_not_save", str(exc), EXIT_SAVE, context=exc.context)
    except KeyboardInterrupt:
        return output.error("interrupted", "interrupted; nothing half-written was saved", 130)


def degrade_unencodable_output() -> None:
    """Make stdout and stderr write a character their encoding lacks as a replacement ("?"), not raise."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="replace")
        except (AttributeError, ValueError, OSError):
            pass  # not a text stream that can be reconfigured (a test's StringIO): nothing to degrade


class QuietWhenUnread:
    """Standard output that goes quiet once the program reading it has left (``| head -1``).

    Writing into a pipe whose reader has closed raises ``BrokenPipeError``;
    raised through a command it would end the command with a traceback and
    exit status 1, which a script reads as "wrong" or "not fixed". Here the
    file descriptor is pointed at ``os.devnull`` instead: the command finishes
    its work and exits with its own status, and nothing more is written (the
    interpreter's own flush at exit included).
    """

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._reader_left()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._reader_left()

    def _reader_left(self) -> None:
        """Point the stream's file descriptor at ``os.devnull``: what it still buffers, and all that follows,
        is dropped."""
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())
        finally:
            os.close(devnull)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)
