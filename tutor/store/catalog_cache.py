"""A disposable cache of something built from text files: the parsed, validated catalog.

:func:`load_catalog` is how the tutor loads its catalog: built by
:func:`tutor.model.catalog.build_catalog` (the pure parser and validator)
once per process and folder, and across processes kept here.

Reading the catalog means parsing every set file and checking every check and
fault against the source it names; that work grows with the catalog and sits
on the path to the first screen and to ``tutor list``. The result is kept as a
pickle, beside a record of every file the build read and the BLAKE2 digest of
the text it read there. A later load lists the folder again and compares each
file; any difference — a set file edited, added or removed, a check module or
a fault's target changed, another scope (the validating code, the tutor or
Python version) — and the build runs again, raising its errors as the first
build would.

A file is compared by reading it again and digesting its text, unless its
size, times and inode are those recorded *and* it had not changed for a
second before the build began: a change after that moment always changes its
ctime, which no one can set back, so the shortcut cannot hide an edit (the
rule git uses for "racily clean" files).

The cache is never the truth. An entry that is missing, unreadable,
truncated, of another format, not owned by this user or writable by others,
or written for other inputs is ignored (and replaced); a folder that cannot
be written leaves the cache off, silently. Writers write a temporary file
beside the entry and rename it over, so two processes that build at once each
leave a whole entry and a reader never sees half of one.

The folder: ``$TUTOR_CACHE_DIR`` when set (``off`` turns the cache off); else
``__pycache__`` beside the files cached when they are a checkout's and this
user may write there, as Python keeps its bytecode; else (a regular install,
whose ``site-packages`` holds only what pip put there) the platform's user
cache folder (``platformdirs``), ``…/tutor/catalog``.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import time
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterable, Mapping, TypeVar

from exercises import faults
from tutor import __version__
from tutor.model import answers
from tutor.model import catalog as rules
from tutor.model.catalog import Catalog, text_digest

T = TypeVar("T")

#: The layout of an entry; raised when the entry's own keys change.
ENTRY_FORMAT = 2
#: ``TUTOR_CACHE_DIR`` set to this turns the cache off.
OFF = "off"
#: A file changed less than this long before a build is always compared by its digest.
RACY_NS = 1_000_000_000


def cache_folder(beside: Path | None = None) -> Path | None:
    """The folder the entries live in (see the module docstring), or None when the cache is off."""
    chosen = os.environ.get("TUTOR_CACHE_DIR")
    if chosen == OFF:
        return None
    if chosen:
        return Path(chosen)
    if beside is not None and not installed(beside):
        pycache = beside / "__pycache__"
        if os.access(pycache if pycache.is_dir() else beside, os.W_OK):
            return pycache
    # deferred: needed only when a cache file is found or written
    from platformdirs import user_cache_dir
    return Path(user_cache_dir("tutor", appauthor=False)) / "catalog"


def installed(folder: Path) -> bool:
    """Whether ``folder`` lies in an installation's ``site-packages`` (a regular install, not a checkout):
    nothing but what pip put there goes in it, so that uninstalling leaves nothing behind."""
    return any(part in ("site-packages", "dist-packages") for part in folder.resolve().parts)


def _file_digest(path: str) -> str | None:
    try:
        return text_digest(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None


def _signature(path: str) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def entry_path(folder: Path, scope: tuple[str, ...]) -> Path:
    """Where the entry for ``scope`` lives: one file per scope (a catalog folder and its versions)."""
    name = hashlib.blake2b("\0".join(scope).encode("utf-8", "surrogateescape"), digest_size=12).hexdigest()
    return folder / f"catalog-{name}.pickle"


def load_or_build(scope: Iterable[str], listing: list[Path], build: Callable[[], tuple[T, Mapping[Path, str]]],
                  beside: Path | None = None) -> T:
    """The value ``build`` makes, from the cache when every input is as it was.

    Args:
        scope: what the value is of (a folder's path, versions, the rules' digest); compared as it is.
        listing: the files that make up the input (the set files), in a stable order; a file
            added or removed changes it.
        build: makes the value; returns it with ``{path: text_digest(text)}`` of every file it
            read, digested from the very text it read. Its exceptions pass through, and nothing
            is cached for them.
        beside: the folder of the files cached (for its ``__pycache__``).

    Returns:
        the cached value, or the one ``build`` returned (then cached).
    """
    scope = (f"entry {ENTRY_FORMAT}", f"python {sys.version}", *scope)
    folder = cache_folder(beside)
    names = [str(p) for p in listing]
    path = entry_path(folder, scope) if folder is not None else None
    if path is not None:
        found = _read(path, scope, names)
        if found is not None:
            return found[0]
    started = time.time_ns()
    value, read = build()
    if path is not None:
        files = {}
        for name, digest in read.items():
            sig = _signature(str(name))
            # the stat shortcut only for a file that had not changed for a while before the build
            settled = sig is not None and sig[2] < started - RACY_NS
            files[str(name)] = (digest, sig if settled else None)
        if set(names) <= set(files):  # every listed file was read (else nothing trustworthy to key on)
            _write(path, {"format": ENTRY_FORMAT, "scope": list(scope), "listing": names,
                          "files": files, "value": value})
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
            and entry.get("listing") == names and isinstance(entry.get("files"), dict) and "value" in entry):
        return None
    try:
        for name, (digest, sig) in entry["files"].items():
            if sig is not None and _signature(name) == sig:
                continue
            if _file_digest(name) != digest:
                return None
    except (TypeError, ValueError):  # an entry of the right keys but the wrong shapes
        return None
    return (entry["value"],)


#: Entries of other folders (a benchmark's, a test's) unused this long are removed when one is written.
STALE_ENTRY_S = 7 * 24 * 3600
#: A temporary file this old was left by a writer that died; removed when an entry is written.
STALE_TEMP_S = 3600


def _prune(kept: Path) -> None:
    """Remove other entries not used for :data:`STALE_ENTRY_S`, and dead writers' temporary files."""
    now = time.time()
    for other in kept.parent.iterdir():
        if other == kept or not other.name.startswith(("catalog-", ".catalog-")):
            continue
        try:
            st = other.stat()
            if now - max(st.st_mtime, st.st_atime) > (STALE_TEMP_S if other.name.endswith(".tmp") else STALE_ENTRY_S):
                other.unlink()
        except OSError:
            pass


def _write(path: Path, entry: dict) -> None:
    """Write the entry to a temporary file beside ``path`` and rename it over; any failure leaves no cache.

    Not :func:`tutor.store.files.write_bytes_atomically`: that one follows the umask (0664 for
    many users), and an entry others may write is never unpickled; this one keeps mkstemp's 0600,
    and skips the fsync a disposable file does not need.
    """
    # deferred: needed only when a cache file is found or written
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
    except Exception:  # a folder that is not writable, a full disk, an unpicklable value: no cache this time
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


# --- the catalog -----------------------------------------------------------------------------------

def load_catalog(directory: Path | None = None) -> Catalog:
    """Load and validate every set file in ``directory`` (default :func:`tutor.model.catalog.catalog_dir`).

    Built once per process and folder; across processes the validated catalog
    comes from this cache, keyed by the digests of every file the validation
    read, so a changed file is validated again.

    Raises:
        tutor.model.catalog.CatalogError: one sentence naming the file, the exercise and the key.
    """
    return _load_catalog(rules.catalog_dir() if directory is None else Path(directory))


load_catalog.cache_clear = lambda: _load_catalog.cache_clear()  # forget the catalogs this process built


@lru_cache(maxsize=4)
def _load_catalog(directory: Path) -> Catalog:
    root = faults.source_root() if directory == rules.EXERCISES_DIR else directory.parent
    listing = sorted(directory.glob("*.toml"))

    def build() -> tuple[Catalog, dict[Path, str]]:
        reads: dict[Path, str] = {}
        return rules.build_catalog(directory, root, listing, reads), reads

    scope = (f"tutor {__version__}", f"rules {_rules_digest()}", f"catalog {directory.resolve()}",
             f"source {root.resolve()}")
    return load_or_build(scope, listing, build, beside=directory)


@lru_cache(maxsize=1)
def _rules_digest() -> str:
    """The digest of the modules whose rules validation applies (the catalog's, the answer kinds', the faults')."""
    kinds = sorted(Path(answers.__file__).parent.glob("*.py"))
    modules = (rules.__file__, *kinds, faults.__file__)
    return text_digest("\0".join(Path(m).read_text(encoding="utf-8") for m in modules))
