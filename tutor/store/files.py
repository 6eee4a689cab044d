"""Files the tutor writes: never half of one, and never a cell a spreadsheet would run.

:func:`write_bytes_atomically` (and :func:`write_text_atomically`) is the one
writer of progress files, working copies, the gradebook and the graded
results: a temporary file beside the target, fsynced, renamed over it, with
the permissions the umask asks for. :func:`spreadsheet_safe` is the one rule
for a CSV cell a learner's text fills.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
import threading
from pathlib import Path
from contextlib import contextmanager
from typing import Any, BinaryIO, Iterator


def write_bytes_atomically(path: Path, payload: bytes) -> None:
    """Write ``payload`` to a temporary file beside ``path``, fsync it, rename it over ``path``.

    A process killed at any moment (SIGKILL included) leaves the old file or the new one. The file
    keeps its own mode, or gets 0666 less the umask when new (:func:`mode_for`).

    Raises:
        OSError: the folder is not writable (the temporary file is removed).
    """
    with open_atomically(path) as fh:
        fh.write(payload)


@contextmanager
def open_atomically(path: Path) -> Iterator[BinaryIO]:
    """A binary file written in pieces that becomes ``path`` (fsynced, renamed over it) only when the block
    ends without an error, as :func:`write_bytes_atomically` writes it: a file of any size, never held whole.

    Raises:
        OSError: the folder is not writable (the temporary file is removed, ``path`` is as it was).
    """
    path = Path(path)
    mode = mode_for(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)  # mkstemp makes 0600; the file gets the mode the umask asks for
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_text_atomically(path: Path, text: str) -> None:
    """:func:`write_bytes_atomically` of ``text`` as UTF-8, its line ends as they are.

    Raises:
        OSError: the folder is not writable.
    """
    write_bytes_atomically(path, text.encode("utf-8"))


#: A cell that is one number and nothing else (``-0.25``, ``+5``, ``-1e-3``): a spreadsheet reads it as that number.
NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def spreadsheet_safe(value: Any) -> Any:
    """A CSV cell that a spreadsheet will show, never run: text starting like a formula (``=``, ``+``,
    ``-``, ``@``, tab, CR) gets a leading ``'`` unless the whole text is one number (``-0.25``,
    ``-1e-3``); ``-1+3`` and ``-1/4`` are formulas to a spreadsheet, so they are neutralised. Other
    values pass as they are."""
    if not isinstance(value, str) or not value or value[0] not in "=+-@\t\r":
        return value
    if value[0] in "+-" and NUMBER.fullmatch(value):
        return value
    return "'" + value


_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process's umask, read without changing it where the system allows (Linux), else read
    and restored at once under a lock."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    with _UMASK_LOCK:
        mask = os.umask(0o077)
        os.umask(mask)
    return mask


def mode_for(path: Path) -> int:
    """The permission bits a progress file is written with: the file's own when it exists (a
    group-readable file stays so), else 0666 less the umask, as any new file would get."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return 0o666 & ~current_umask()
