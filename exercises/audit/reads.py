"""Which reads of the audited code the confinement refused, named in the report.

``tutor audit`` confines the audit process (Landlock: the model's folder,
the tutor, Python and what ``--allow-read PATH`` grants are readable, nothing
else). A factory that reads its model code or a checkpoint from elsewhere —
a git mirror, ``~/.cache/huggingface``, a dataset — then fails in its own
words (``CalledProcessError … exit status 128`` from a ``git`` it started),
which say nothing of a refusal. So the audit process notes, through a
Python audit hook (PEP 578), every path the audited code names to
``open``, ``os.listdir``, ``os.scandir``, ``os.chdir`` and ``subprocess``
(its executable, arguments and ``cwd``); at the end it tries to read each
absolute one, and those that raise ``PermissionError`` are the refused
reads. A subprocess's own reads are seen through the paths in its command
line. Standard library only.
"""

from __future__ import annotations

import os
import sys

#: The audit events whose first argument, or (subprocess) whose arguments, may name a path.
PATH_EVENTS = ("open", "os.listdir", "os.scandir", "os.chdir")
#: At most this many distinct paths are kept and tried (torch alone opens hundreds on import).
MAX_PATHS = 4000


class ReadWatch:
    """Notes the absolute paths the process names while ``on`` is true (``install`` once per process)."""

    def __init__(self) -> None:
        self.paths: dict[str, None] = {}
        self.on = False

    def install(self) -> "ReadWatch":
        sys.addaudithook(self._hook)
        return self

    def _note(self, value) -> None:
        if isinstance(value, bytes):
            value = os.fsdecode(value)
        if isinstance(value, os.PathLike):
            value = os.fspath(value)
        if isinstance(value, str) and value.startswith(os.sep) and len(self.paths) < MAX_PATHS:
            self.paths.setdefault(os.path.normpath(value), None)

    def _hook(self, event: str, args: tuple) -> None:
        if not self.on:
            return
        if event in PATH_EVENTS and args:
            self._note(args[0])
        elif event == "subprocess.Popen" and len(args) >= 4:
            executable, argv, cwd = args[0], args[1], args[2]
            self._note(executable)
            self._note(cwd)
            for item in ([argv] if isinstance(argv, (str, bytes, os.PathLike)) else list(argv or ())):
                self._note(item)

    def refused(self) -> list[str]:
        """The noted paths that exist and cannot be read now (``PermissionError``), in the order first noted;
        a path inside a refused folder is left out."""
        was, self.on = self.on, False
        found: list[str] = []
        try:
            for path in self.paths:
                if any(path == r or path.startswith(r + os.sep) for r in found):
                    continue
                if _refused(path):
                    found.append(path)
        finally:
            self.on = was
        return found


def _refused(path: str) -> bool:
    try:
        if os.path.isdir(path):
            with os.scandir(path):
                pass
        elif os.path.exists(path):
            with open(path, "rb"):
                pass
        else:
            return False
    except PermissionError:
        return True
    except OSError:
        return False
    return False


def sentence(refused: list[str]) -> str:
    """One sentence naming refused reads and the flag that grants them ("" when there are none)."""
    if not refused:
        return ""
    shown = ", ".join(refused[:3]) + (f" and {len(refused) - 3} more" if len(refused) > 3 else "")
    first = refused[0] if os.path.isdir(refused[0]) else os.path.dirname(refused[0])
    return (f"the audit's confinement refused reads of {shown} (only the model's folder, the tutor and Python "
            f"are readable); grant them with --allow-read {first}")
