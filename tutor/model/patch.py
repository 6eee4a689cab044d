"""The learner's text in edit mode: checked before it runs, its diff, and a unified patch applied to a file.

Pure: nothing here reads or writes a file.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

#: A learner's file (and so its diff) larger than this is refused, in bytes.
MAX_EDIT_BYTES = 64 * 1024


class EditError(ValueError):
    """A learner's edit that cannot be run: too large, not text, a patch that does not apply.

    The message is one sentence naming the problem and the fix (the CLI exits 2).
    """


class PatchError(EditError):
    """A unified diff that does not apply to the file it was written against; names the hunk."""



# --- the learner's text -------------------------------------------------------

def check_text(path: str, text: str) -> str:
    """The learner's file as it will be run; refused when it cannot be.

    Line ends are made ``\\n`` (an editor on Windows writes ``\\r\\n``).

    Raises:
        EditError: the text is larger than :data:`MAX_EDIT_BYTES` or holds a NUL byte.
    """
    if not isinstance(text, str):
        raise EditError(f"your {path} must be text")
    size = len(text.encode("utf-8", "replace"))
    if size > MAX_EDIT_BYTES:
        raise EditError(f"your {path} is {size:,} bytes; edits over {MAX_EDIT_BYTES // 1024} KiB are refused — "
                        "edit the subject file, do not paste another program into it")
    if "\x00" in text:
        raise EditError(f"your {path} holds a NUL byte; save it as plain UTF-8 text")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def syntax_problem(path: str, text: str) -> str | None:
    """One sentence naming the line of the first syntax error in ``text``, or None when it compiles.

    The run still goes ahead (the worker reports the same error as the
    learner's side's outcome); this sentence is what the learner is shown.
    Text the compiler cannot hold (nesting past its stack: a RecursionError,
    or a MemoryError) is a sentence too, never an exception.
    """
    try:
        compile(text, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        if exc.lineno is None:  # nowhere in the text: a NUL byte, where this Python raises SyntaxError for it
            return f"your {path} cannot be compiled: {exc.msg}"
        where = f"line {exc.lineno}" + (f", column {exc.offset}" if exc.offset else "")
        return f"{type(exc).__name__} in your {path} at {where}: {exc.msg}"
    except ValueError as exc:  # e.g. source code string cannot contain null bytes
        return f"your {path} cannot be compiled: {exc}"
    except (RecursionError, MemoryError):  # an expression nested past the compiler's stack (1+1+...+1)
        return (f"your {path} cannot be compiled: its expressions nest too deeply for Python's compiler; "
                "write them as shorter statements")
    return None


def unified_diff(path: str, before: str, after: str, context: int = 3) -> str:
    """The unified diff from ``before`` to ``after``, both named ``path`` (a/ and b/)."""
    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                 fromfile=f"a/{path}", tofile=f"b/{path}", n=context)
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass
class _Hunk:
    number: int
    header: str
    old_start: int
    old_len: int
    new_len: int
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return len(self.old) >= self.old_len and len(self.new) >= self.new_len


def _hunks(patch: str) -> list[_Hunk]:
    """The hunks of a one-file unified diff, each read to the line counts its header states.

    Lines outside hunks (file headers, ``diff --git``, ``index``) are skipped;
    an empty line inside a hunk is a blank context line (some editors strip
    the space); ``\\ No newline at end of file`` removes the line end of
    the line before it.

    Raises:
        PatchError: no hunk at all, a line inside a hunk that is none of
            " ", "-", "+", or a hunk that ends before its stated line counts.
    """
    hunks: list[_Hunk] = []
    current: _Hunk | None = None
    last: list[list[str]] = []  # the sides the previous line went to (for "\ No newline")
    for raw in patch.replace("\r\n", "\n").split("\n"):
        match = _HUNK.match(raw)
        if match:
            if current is not None and not current.complete:
                raise _short(current)
            old_len = int(match.group(2)) if match.group(2) is not None else 1
            new_len = int(match.group(4)) if match.group(4) is not None else 1
            current = _Hunk(len(hunks) + 1, raw.split(" @@")[0] + " @@", int(match.group(1)), old_len, new_len)
            hunks.append(current)
            continue
        if raw.startswith("\\"):  # the line before has no line end
            for side in last:
                if side and side[-1].endswith("\n"):
                    side[-1] = side[-1][:-1]
            last = []
            continue
        if current is None or current.complete:
            last = []
            continue  # between hunks: headers, git lines, trailing text
        marker, body = raw[:1], raw[1:] + "\n"
        if marker in (" ", ""):
            current.old.append(body)
            current.new.append(body)
            last = [current.old, current.new]
        elif marker == "-":
            current.old.append(body)
            current.removed.append(body)
            last = [current.old]
        elif marker == "+":
            current.new.append(body)
            last = [current.new]
        else:
            raise PatchError(f"hunk {current.number} ({current.header}) holds a line that starts with "
                             f"{marker!r}, not ' ', '-' or '+'; write the patch with 'diff -u' or 'git diff'")
    if current is not None and not current.complete:
        raise _short(current)
    if not hunks:
        raise PatchError("the patch holds no hunk (no line starting with '@@'); "
                         "make it with 'diff -u faulted.py yours.py' or 'git diff'")
    return hunks


def _short(hunk: _Hunk) -> PatchError:
    return PatchError(f"hunk {hunk.number} ({hunk.header}) ends before the {hunk.old_len} old and "
                      f"{hunk.new_len} new lines its header states; the patch was cut or edited by hand")


def apply_patch(text: str, patch: str, path: str) -> str:
    """Apply a unified diff written against ``text`` (the file named ``path``); return the result.

    Each hunk must match exactly — every context and removed line — at its
    stated line or at another place (a patch made against a slightly moved
    file still applies); hunks apply in order and never overlap.

    Raises:
        PatchError: the patch holds no hunk, or a hunk's lines are not found
            in the file (the hunk is named by its number and header).
    """
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    cursor = 0  # lines before this are already copied to out
    for hunk in _hunks(patch):
        at = _find(lines, hunk.old, hunk.old_start - 1, cursor)
        if at is None:
            first = next((line.strip() for line in hunk.removed + hunk.old if line.strip()), "")
            around = f"around {first[:60]!r}" if first else "blank lines only"
            # hunks apply in order: a later one is looked for below where the one before it ended
            where = f" below line {cursor}, where hunk {hunk.number - 1} ends" if cursor else ""
            raise PatchError(f"hunk {hunk.number} ({hunk.header}) does not apply to {path}: its lines "
                             f"({around}) are not in the file{where}; make the patch "
                             "against the file you were given to edit (the faulted file; 'tutor show ID' "
                             "shows the fault)")
        out.extend(lines[cursor:at])
        out.extend(hunk.new)
        cursor = at + len(hunk.old)
    out.extend(lines[cursor:])
    return "".join(out)


def _find(lines: list[str], old: list[str], near: int, start: int) -> int | None:
    """Where ``old`` occurs in ``lines`` at or after ``start``, the place nearest ``near`` first."""
    if not old:
        return max(start, min(near + 1, len(lines)))  # a pure insertion after line `near`
    candidates = range(start, len(lines) - len(old) + 1)
    for at in sorted(candidates, key=lambda i: abs(i - near)):
        if lines[at:at + len(old)] == old:
            return at
    return None
