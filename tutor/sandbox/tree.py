"""A side's private tree: the subject packages copied, the side's fault applied and its files put in place
(:func:`build_tree`), and the whole tree removed when the side ends (:func:`remove_tree`), however a
subject left it.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
import sys
from pathlib import Path

from exercises.faults import SUBJECT_PACKAGES, make_private_copy
from tutor.sandbox.protocol import Side


class TreeError(ValueError):
    """A side's file cannot be put in its private tree; the message says why."""


#: The capstone's table of hidden faults by seed, kept out of a learner's tree.
MYSTERIES = "exercises/mysteries.py"


def build_tree(folder: Path, side: Side) -> Path:
    """Copy the subject packages into ``folder``, apply the side's fault, put its files in place.

    A side that carries files of its own (a learner's) gets no catalog data
    (``exercises/*.toml``): the faults' ``before`` texts would rebuild the
    clean subject next to the learner's file. Nor does it get
    ``exercises/mysteries.py``, which names the capstone's hidden fault for
    every seed: a hunt's file would read its own mystery there.

    Raises:
        FaultError: the fault does not apply to the current source.
        OSError: the copy could not be made.
        TreeError: a file of the side lies outside the subject packages,
            replaces no file there, or cannot be written.
    """
    make_private_copy(folder, side.fault)
    for path, text in side.files:
        parts = Path(path).parts
        if not parts or parts[0] not in SUBJECT_PACKAGES or ".." in parts or Path(path).is_absolute():
            raise TreeError(f"{path!r} must lie inside one of {', '.join(p + '/' for p in SUBJECT_PACKAGES)}")
        target = folder / path
        if not target.is_file():
            raise TreeError(f"{path!r} names no file of the subject to replace")
        try:
            target.write_text(text, encoding="utf-8")
        except (OSError, UnicodeError) as exc:
            raise TreeError(f"{path!r} could not be written ({exc})") from None
    if side.files:
        for data in [*(folder / "exercises").glob("*.toml"), folder / MYSTERIES]:
            data.unlink(missing_ok=True)
    return folder


def remove_tree(folder: str) -> str:
    """Remove a side's private tree; "" when it is gone, else one sentence (after "the yours side") naming
    what was left and why: a tree that cannot be removed is said, never kept silently."""
    failed: list[tuple[str, BaseException]] = []

    def note(_func, path, exc) -> None:  # exc: the exception (onexc, 3.12+) or sys.exc_info() (onerror)
        failed.append((path, exc[1] if isinstance(exc, tuple) else exc))

    try:
        shutil.rmtree(folder, **({"onexc": note} if sys.version_info >= (3, 12) else {"onerror": note}))
    except RecursionError:  # a tree deeper than shutil recurses (one a side made on purpose)
        failed.clear()
        try:
            remove_deep_tree(folder)
        except OSError as exc:
            failed.append((exc.filename or folder, exc))
    if not os.path.lexists(folder):
        return ""
    # a folder that could not be removed because something in it could not is no failure of its own
    failed = [(path, exc) for path, exc in failed
              if not any(other.startswith(path.rstrip(os.sep) + os.sep) for other, _ in failed)]
    path, exc = failed[0] if failed else (folder, None)
    why = f" ({getattr(exc, 'strerror', None) or exc})" if exc is not None else ""
    more = f" and {len(failed) - 1} more" if len(failed) > 1 else ""
    return f"left its tree, which could not be removed: {path}{why}{more}"


def remove_deep_tree(folder: str) -> None:
    """Remove ``folder`` however deep its tree, without recursion and with two descriptors at most: each
    folder below the top is emptied by moving its own folders up to the top and removing its other entries,
    then removed itself, until the top is empty. Nothing is followed through a link.

    Raises:
        OSError: something in the tree could not be moved or removed (``filename``: where).
    """
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    top = os.open(folder, flags)
    moved = 0
    try:
        while names := os.listdir(top):
            for name in names:
                if not stat.S_ISDIR(os.stat(name, dir_fd=top, follow_symlinks=False).st_mode):
                    os.unlink(name, dir_fd=top)
                    continue
                inner = os.open(name, flags, dir_fd=top)
                try:
                    for entry in os.listdir(inner):
                        if not stat.S_ISDIR(os.stat(entry, dir_fd=inner, follow_symlinks=False).st_mode):
                            os.unlink(entry, dir_fd=inner)
                            continue
                        while True:  # up to the top, under a name no entry there has
                            moved += 1
                            try:
                                os.rename(entry, f".up-{moved}", src_dir_fd=inner, dst_dir_fd=top)
                                break
                            except OSError as exc:
                                if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                                    raise
                finally:
                    os.close(inner)
                os.rmdir(name, dir_fd=top)
    finally:
        os.close(top)
    os.rmdir(folder)
