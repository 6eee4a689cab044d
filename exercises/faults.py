"""Faults are diffs: a named, exact edit of real source, applied to a copy.

A fault names one file of the subject (a path relative to the source root,
such as ``engine/model.py`` or ``exercises/snippets/losses.py``), the exact
``before`` text, which must occur exactly once there, the ``after`` text, and
a one-line summary. The tutor shows the learner the unified diff and applies
the edit to a private temporary copy of the subject packages; the files on
disk are never touched, and the clean source carries no fault switches.

Faults are data: ``[[fault]]`` tables in the set files ``exercises/*.toml``,
beside the exercises that use them. Nothing in those files is executed.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import shutil
from dataclasses import asdict, dataclass, fields
from pathlib import Path

#: The packages copied into a private folder before a check runs.
SUBJECT_PACKAGES = ("engine", "exercises")


class FaultError(ValueError):
    """A fault that is malformed or does not apply to the current source."""


@dataclass(frozen=True)
class Fault:
    """One named edit of the subject's source.

    Attributes:
        id: stable kebab-case name, used by exercises and shown to learners.
        file: path relative to the source root, e.g. ``engine/model.py``.
        before: exact text that must occur exactly once in ``file``.
        after: the replacement text.
        summary: one line saying what the edit does.
    """

    id: str
    file: str
    before: str
    after: str
    summary: str

    def to_dict(self) -> dict:
        return asdict(self)


#: The keys of a [[fault]] table: Fault's fields, every one a required non-empty string.
_FIELDS = tuple(f.name for f in fields(Fault))


def source_root() -> Path:
    """The folder that holds the ``engine`` and ``exercises`` packages.

    Found without importing ``engine`` (which would import torch).
    """
    spec = importlib.util.find_spec("exercises")
    if spec is None or not spec.submodule_search_locations:
        raise FaultError("cannot locate the exercises package; reinstall tutor with pip install -e .")
    return Path(list(spec.submodule_search_locations)[0]).resolve().parent


def parse_fault(entry: object, where: str) -> Fault:
    """Validate one ``[[fault]]`` table from a set file.

    Raises:
        FaultError: unknown or missing keys, or a value that is not a
            non-empty string; the message starts with ``where``.
    """
    if not isinstance(entry, dict):
        raise FaultError(f"{where}: each [[fault]] must be a table")
    unknown = set(entry) - set(_FIELDS)
    if unknown:
        raise FaultError(f"{where}: unknown key {sorted(unknown)[0]!r}; allowed keys are {', '.join(_FIELDS)}")
    for key in _FIELDS:
        if key not in entry:
            raise FaultError(f"{where}: missing key {key!r}")
        if not isinstance(entry[key], str) or not entry[key]:
            raise FaultError(f"{where}: key {key!r} must be a non-empty string")
    if entry["before"] == entry["after"]:
        raise FaultError(f"{where}: before and after are the same text, so the fault changes nothing")
    return Fault(**{k: entry[k] for k in _FIELDS})


def add_faults(data: dict, name: str, root: Path, faults: dict) -> list[tuple[Fault, str]]:
    """Add the ``[[fault]]`` tables of one parsed set file to ``faults`` (by id), each checked against ``root``.

    The one reader of fault tables: the catalog reads each set file through
    it, and the capstone's mystery (in a check's private tree) too.

    Args:
        data: the set file's parsed TOML.
        name: the file's name, for the sentences.
        root: the source root the faults must apply to (:func:`verify`).
        faults: where they go; an id already there is a duplicate.

    Returns:
        each fault added, with the source text of its file it was checked against.

    Raises:
        FaultError: a table that is not a fault, that does not apply, or whose id is
            taken; the sentence starts with ``name`` and names the fault.
    """
    entries = data.get("fault", [])
    if not isinstance(entries, list):
        raise FaultError(f"{name}: 'fault' must be an array of tables ([[fault]])")
    added = []
    for n, entry in enumerate(entries, start=1):
        where = f"{name}: fault {entry.get('id', f'#{n}')!r}" if isinstance(entry, dict) else f"{name}: fault #{n}"
        try:
            fault = parse_fault(entry, where)
            source = verify(fault, root)
        except FaultError as exc:
            raise FaultError(str(exc) if str(exc).startswith(name) else f"{where}: {exc}") from None
        if fault.id in faults:
            raise FaultError(f"{where}: duplicate fault id {fault.id!r}")
        faults[fault.id] = fault
        added.append((fault, source))
    return added


def load_faults(root: Path | None = None) -> dict[str, Fault]:
    """Every ``[[fault]]`` table of ``exercises/*.toml`` under ``root`` (default: this source root), by id.

    Raises:
        FaultError: as :func:`add_faults`.
    """
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    root = root or source_root()
    faults: dict[str, Fault] = {}
    for path in sorted((root / "exercises").glob("*.toml")):
        add_faults(tomllib.loads(path.read_text(encoding="utf-8")), path.name, root, faults)
    return faults


def verify(fault: Fault, root: Path | None = None) -> str:
    """Check that ``fault`` applies to the current source; return that source.

    Raises:
        FaultError: the file is missing, outside the subject packages, or the
            ``before`` text does not occur exactly once.
    """
    root = root or source_root()
    parts = Path(fault.file).parts
    if not parts or parts[0] not in SUBJECT_PACKAGES or ".." in parts or Path(fault.file).is_absolute():
        raise FaultError(f"fault {fault.id!r}: file {fault.file!r} must lie inside one of {', '.join(SUBJECT_PACKAGES)}/")
    path = root / fault.file
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        raise FaultError(f"fault {fault.id!r}: file {fault.file} does not exist under {root}") from None
    count = text.count(fault.before)
    if count != 1:
        raise FaultError(f"fault {fault.id!r}: its before text occurs {count} times in {fault.file}, "
                         "but must occur exactly once; update the fault to match the source")
    return text


def applied(fault: Fault, text: str) -> str:
    """``text`` with ``fault`` applied: its ``before`` replaced by its ``after``, once.

    Raises:
        FaultError: the ``before`` text does not occur exactly once in ``text``.
    """
    count = text.count(fault.before)
    if count != 1:
        raise FaultError(f"fault {fault.id!r}: its before text occurs {count} times in {fault.file}, "
                         "but must occur exactly once; update the fault to match the source")
    return text.replace(fault.before, fault.after, 1)


def diff(fault: Fault, root: Path | None = None) -> str:
    """The unified diff the fault makes, as the learner sees it."""
    text = verify(fault, root)
    edited = applied(fault, text)
    lines = difflib.unified_diff(text.splitlines(keepends=True), edited.splitlines(keepends=True),
                                 fromfile=f"a/{fault.file}", tofile=f"b/{fault.file}", n=2)
    return "".join(lines)


def _copy_sources(src: Path, dst: Path) -> None:
    """Copy a package's files, without caches and without their metadata (modes, times).

    A confined side copies the subject too (the capstone's mystery), and its
    seccomp filter refuses every chmod and utime, which ``shutil.copytree``'s
    ``copy2`` and ``copystat`` make: the contents are all a copy needs.
    """
    for folder, dirs, files in os.walk(src):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        target = dst / os.path.relpath(folder, src)
        target.mkdir(parents=True, exist_ok=True)
        for name in files:
            if not name.endswith(".pyc"):
                shutil.copyfile(os.path.join(folder, name), target / name)


def make_private_copy(dest: Path, fault: Fault | None = None, root: Path | None = None) -> Path:
    """Copy the subject packages into ``dest`` and apply ``fault`` there.

    Args:
        dest: an empty, private folder (the runner makes and removes it).
        fault: the edit to apply, or None for the clean subject.
        root: the source root to copy from (default: :func:`source_root`).

    Returns:
        ``dest``, ready to put first on ``sys.path``.

    Raises:
        FaultError: the fault does not apply to the current source.
    """
    root = root or source_root()
    for package in SUBJECT_PACKAGES:
        _copy_sources(root / package, dest / package)
    if fault is not None:
        text = verify(fault, root)
        (dest / fault.file).write_text(applied(fault, text), encoding="utf-8")
    return dest
