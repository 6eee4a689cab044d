"""Files written so that a crash never leaves half of one: the one atomic writer of the tutor's files."""

from __future__ import annotations

import os
import stat
import tempfile
import threading
from pathlib import Path


def write_bytes_atomically(path: Path, payload: bytes) -> None:
    """Write ``payload`` to a temporary file beside ``path``, fsync it, rename it over ``path``.

    The one atomic writer of progress files and working copies: the file keeps its own mode, or
    gets 0666 less the umask when new (:func:`mode_for`).

    Raises:
        OSError: the folder is not writable (the temporary file is removed).
    """
    mode = mode_for(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)  # mkstemp makes 0600; the file gets the mode the umask asks for
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


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
