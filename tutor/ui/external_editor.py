"""The learner's own editor (``$VISUAL`` / ``$EDITOR``), run with the terminal handed over.

Whatever the editor does — missing, not executable, exiting non-zero,
killed by a signal, interrupted — the app gets its terminal back: nothing
may escape ``App.suspend()``, which resumes the app only when its block ends
normally. Each failure comes back as one sentence naming it.
"""

from __future__ import annotations

import difflib
import os
import shlex
import signal
import subprocess

from textual.app import SuspendNotSupported

#: How long an editor started without a terminal (one the driver cannot suspend for) may run, seconds.
DETACHED_EDITOR_TIMEOUT_S = 600


def editor_command() -> list[str] | None:
    """The learner's editor as a command line (``$VISUAL``, else ``$EDITOR``), or None when neither is set."""
    for name in ("VISUAL", "EDITOR"):
        value = os.environ.get(name, "").strip()
        if value:
            try:
                return shlex.split(value)
            except ValueError:
                return None
    return None


#: Editors that open a file at line N when ``+N`` comes before it (vi's convention, which these share).
_PLUS_LINE = frozenset({"vi", "vim", "nvim", "gvim", "mvim", "view", "nano", "pico", "emacs", "emacsclient",
                        "micro", "joe", "jstar", "mg", "ne", "kak", "mcedit"})
#: Editors that open ``FILE:N`` at line N.
_COLON_LINE = frozenset({"subl", "hx", "helix", "zed"})
#: Editors that open ``--goto FILE:N`` at line N (VS Code and its builds).
_GOTO_LINE = frozenset({"code", "code-insiders", "codium", "cursor"})


def at_line(command: list[str], path: str, line: int) -> list[str]:
    """The editor's command line that opens ``path`` at ``line`` (1-based) where the editor is one
    known to take a line (``vim +12 FILE``, ``code --goto FILE:12``); else ``command`` and ``path``,
    opened where the editor opens files (no argument an unknown editor could misread)."""
    name = os.path.basename(command[0]) if command else ""
    if line > 1:
        if name in _PLUS_LINE:
            return [*command, f"+{line}", path]
        if name in _COLON_LINE:
            return [*command, f"{path}:{line}"]
        if name in _GOTO_LINE:
            return [*command, "--goto", f"{path}:{line}"]
    return [*command, path]


def changed_lines(start: str, text: str) -> int:
    """How many lines ``text`` changes against ``start`` (the file the learner was given).

    A line edited in place is one changed line, not a line removed and one
    added: a block of ``a`` lines replaced by ``b`` counts ``max(a, b)``; lines
    only added or only removed count one each.
    """
    opcodes = difflib.SequenceMatcher(None, start.splitlines(), text.splitlines(), autojunk=False).get_opcodes()
    return sum(max(i2 - i1, j2 - j1) for tag, i1, i2, j1, j2 in opcodes if tag != "equal")


def _call(argv: list[str], **options) -> tuple[int | None, str | None]:
    """Run ``argv`` to its end: (exit code, None), or (None, the sentence saying why it did not run).

    Never raises: an editor that is missing, not executable, runs past the
    timeout or is interrupted with Ctrl+C is a sentence, so the caller always
    gets its terminal back.
    """
    try:
        return subprocess.call(argv, **options), None
    except FileNotFoundError:
        return None, f"Your editor {argv[0]!r} was not found"
    except PermissionError:
        return None, f"Your editor {argv[0]!r} is not executable"
    except subprocess.TimeoutExpired:
        return None, f"Your editor {argv[0]!r} ran for more than {DETACHED_EDITOR_TIMEOUT_S} s without a terminal"
    except OSError as exc:
        return None, f"Your editor {argv[0]!r} did not start ({exc.strerror or exc})"
    except KeyboardInterrupt:
        return None, f"Your editor {argv[0]!r} was interrupted"


def _exit_problem(program: str, code: int | None) -> str | None:
    """None for a clean exit; else the sentence naming a non-zero status or the signal that stopped the editor."""
    if not code:
        return None
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"Your editor {program!r} was stopped by {name}"
    return f"Your editor {program!r} exited with status {code}"


def run_editor(app, argv: list[str]) -> str | None:
    """Run the editor ``argv`` until it exits, the terminal handed over; None, or what went wrong (a sentence).

    Args:
        app: the running Textual app (suspended while the editor runs).
        argv: the editor's command line, the file last.
    """
    try:
        with app.suspend():
            code, failure = _call(argv)
    except SuspendNotSupported:
        # No terminal to hand over (a test's headless driver, a web driver): run it detached.
        code, failure = _call(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=DETACHED_EDITOR_TIMEOUT_S)
    if failure is not None:
        return failure
    return _exit_problem(argv[0], code)
