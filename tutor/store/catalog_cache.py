"""A disposable cache of something built from files: the parsed, validated catalog.

Reading the catalog means parsing every set file and checking every check and
fault against the source it names; that work grows with the catalog and sits
on the path to the first screen and to ``tutor list``. The result is kept as a
pickle in the user's cache folder, beside a record of every file the build
read and each file's BLAKE2 digest at that moment. A later load re-hashes
those files, and lists the folder again; any difference — a set file edited,
added or removed, a check module or a fault's target changed, the validating
code itself changed, another tutor or Python version — and the build runs
again, its errors raised as the first build would raise them.

The cache is never the truth. A cache file that is missing, unreadable,
truncated, of another format, not owned by this user or written for other
inputs is ignored (and replaced); a folder that cannot be written leaves the
cache off, silently. Writers write a temporary file beside the entry and
rename it over, so two processes that build at once each leave a whole entry
and a reader never sees half of one.

The folder is ``$TUTOR_CACHE_DIR`` when set, else the platform's user cache
folder (``platformdirs``), ``…/tutor/catalog``. ``TUTOR_CACHE_DIR=off``
turns the cache off.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
from pathlib import Path
from typing import Callable, Iterable, TypeVar

T = TypeVar("T")

#: The layout of an entry; raised when the entry's own keys change.
ENTRY_FORMAT = 1
#: ``TUTOR_CACHE_DIR`` set to this turns the cache off.
OFF = "off"


def cache_folder() -> Path | None:
    """The folder the entries live in, or None when the cache is off."""
    chosen = os.environ.get("TUTOR_CACHE_DIR")
    if chosen == OFF:
        return None
    if chosen:
        return Path(chosen)
    from platformdirs import user_cache_dir
    return Path(user_cache_dir("tutor", appauthor=False)) / "catalog"


def digest(path: Path) -> str | None:
    """The BLAKE2b digest of a file's bytes (hex), or None when it cannot be read."""
    try:
        return hashlib.blake2b(path.read_bytes(), digest_size=20).hexdigest()
    except OSError:
        return None


def entry_path(folder: Path, scope: tuple[str, ...]) -> Path:
    """Where the entry for ``scope`` lives: one file per scope (a catalog folder and its versions)."""
    name = hashlib.blake2b("\0".join(scope).encode("utf-8", "surrogateescape"), digest_size=12).hexdigest()
    return folder / f"{name}.pickle"


def load_or_build(scope: Iterable[str], listing: list[Path], build: Callable[[], tuple[T, Iterable[Path]]],
                  folder: Path | None = None) -> T:
    """The value ``build`` makes, from the cache when every input is as it was.

    Args:
        scope: what the value is of (a folder's path, versions); part of the key, compared as it is.
        listing: the files that make up the input (the set files), in a stable order; a file
            added or removed changes it.
        build: makes the value; returns it with every file it read (their digests are the key).
            Its exceptions pass through, and nothing is cached for them.
        folder: the cache folder; :func:`cache_folder` by default.

    Returns:
        the cached value, or the one ``build`` returned (then cached).
    """
    scope = (f"entry {ENTRY_FORMAT}", f"python {sys.version}", *scope)
    folder = cache_folder() if folder is None else folder
    names = [str(p) for p in listing]
    path = entry_path(folder, scope) if folder is not None else None
    if path is not None:
        found = _read(path, scope, names)
        if found is not None:
            return found[0]
    value, read = build()
    if path is not None:
        digests = {str(p): digest(Path(p)) for p in dict.fromkeys([*listing, *read])}
        if None not in digests.values():  # a file that vanished mid-build: nothing to key on
            _write(path, {"format": ENTRY_FORMAT, "scope": list(scope), "listing": names,
                          "digests": digests, "value": value})
    return value


def _read(path: Path, scope: tuple[str, ...], names: list[str]) -> tuple[object] | None:
    """``(value,)`` when the entry at ``path`` is whole, ours and for exactly these inputs; else None."""
    try:
        with open(path, "rb") as fh:
            info = os.fstat(fh.fileno())
            if hasattr(os, "getuid") and (info.st_uid != os.getuid() or info.st_mode & 0o022):
                return None  # only a file this user wrote, and no one else can write, is unpickled
            entry = pickle.load(fh)
    except Exception:  # missing, unreadable, truncated, of another Python: rebuilt
        return None
    if not (isinstance(entry, dict) and entry.get("format") == ENTRY_FORMAT and entry.get("scope") == list(scope)
            and entry.get("listing") == names and isinstance(entry.get("digests"), dict) and "value" in entry):
        return None
    for name, recorded in entry["digests"].items():
        if digest(Path(name)) != recorded:
            return None
    return (entry["value"],)


#: Entries of other folders (a benchmark's, a test's) unused this long are removed when one is written.
STALE_ENTRY_S = 7 * 24 * 3600
#: A temporary file this old was left by a writer that died; removed when an entry is written.
STALE_TEMP_S = 3600


def _prune(kept: Path) -> None:
    """Remove entries of other scopes not used for :data:`STALE_ENTRY_S`, and dead writers' temporary files."""
    import time
    now = time.time()
    for other in kept.parent.iterdir():
        if other == kept or not other.name.endswith((".pickle", ".tmp")):
            continue
        try:
            age = now - max(other.stat().st_mtime, other.stat().st_atime)
            if age > (STALE_TEMP_S if other.name.endswith(".tmp") else STALE_ENTRY_S):
                other.unlink()
        except OSError:
            pass


def _write(path: Path, entry: dict) -> None:
    """Write the entry to a temporary file beside ``path`` and rename it over; any failure leaves no cache."""
    import tempfile
    tmp = None
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(entry, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
        tmp = None
        _prune(path)
    except Exception:  # a folder that is not writable, a full disk: no cache this time
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
