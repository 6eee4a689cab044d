"""What a side's child may read: the Python installation, the tutor's own packages, the system's folders.

:func:`policy` is the read half of a side's Landlock policy
(:mod:`tutor.sandbox.confine` has the rest, :mod:`tutor.sandbox.landlock`
applies it): computed once in the worker, before the first side forks, and
sent to each side's warden in its spec: what it may read, and the folders
it may list but not read.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import sys
import sysconfig
from dataclasses import dataclass
from typing import Iterable

#: The tutor's own packages. A side imports what it needs of them wherever they are installed; the one
#: it may read only in its own private copy is :data:`SECRET_PACKAGE`.
PRIVATE_PACKAGES = ("engine", "exercises", "tutor")
#: The package whose installed copy no side may read: the catalog (each fault's clean ``before`` text), the
#: checks, and the capstone's mysteries (which hidden fault each seed carries). A side reads its own copy,
#: from which a learner's side has these removed (:func:`tutor.sandbox.tree.build_tree`).
SECRET_PACKAGE = "exercises"

# --- what a child may read -------------------------------------------------------------------------

#: System folders a child may read: shared libraries, time zones, CPU facts.
SYSTEM_READ = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/proc", "/sys", "/etc/ld.so.cache",
               "/etc/localtime", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/hosts",
               "/dev/urandom", "/dev/random", "/dev/zero", "/dev/full")


def below(path: str, root: str) -> bool:
    """Whether ``path`` is ``root`` or lies inside it (both absolute, normalised)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def _allow_except(root: str, forbidden: list[str], out: list[str], depth: int = 0) -> None:
    """Add ``root`` to ``out``, or, when a forbidden path lies inside it, every child of it but that path."""
    if any(below(root, f) for f in forbidden):
        return
    inside = [f for f in forbidden if below(f, root)]
    if not inside:
        out.append(root)
        return
    if depth > 12 or not os.path.isdir(root):
        return
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return
    for name in names:
        _allow_except(os.path.join(root, name), forbidden, out, depth + 1)


def installed_packages(names: Iterable[str] | None = None) -> list[str]:
    """Where the tutor's packages (``names``, by default :data:`PRIVATE_PACKAGES`) are installed or checked
    out, resolved."""
    found = []
    for name in PRIVATE_PACKAGES if names is None else names:
        module = sys.modules.get(name)
        paths = list(getattr(module, "__path__", []) or []) if module else []
        if not paths:
            spec = importlib.util.find_spec(name)
            paths = list(spec.submodule_search_locations or []) if spec else []
        found += [os.path.realpath(p) for p in paths]
    return found


@dataclass(frozen=True)
class Reads:
    """What a side's child may read (``roots``) and what it may only list (``listed``)."""

    roots: tuple[str, ...]
    listed: tuple[str, ...]


def policy(forbidden: Iterable[str] = ()) -> Reads:
    """What every side's child may read, less ``forbidden`` and the installed :data:`SECRET_PACKAGE`.

    ``roots``: the Python installation (its standard library, and every
    ``sys.path`` entry inside it or named ``site-packages``: never the folder
    the tutor was started in), the folders of the tutor's own ``tutor`` and
    ``engine`` packages wherever they are imported from (a checkout's package
    folders, never the checkout around them), and :data:`SYSTEM_READ`. A
    forbidden folder inside one of them (the worker's scratch; the installed
    ``exercises`` of a regular install, in ``site-packages``) is cut out by
    allowing each of its siblings instead.

    ``listed``: each folder cut open around the installed
    :data:`SECRET_PACKAGE` (``site-packages`` in a regular install), which a
    side may list but not read. Python finds a top-level module by listing
    each ``sys.path`` folder: a side that first imports an installed package
    (pyseccomp, or sympy for ``torch.compile``) after its confinement is on
    must be able to list ``site-packages``. Listing gives names only, of that
    folder and the folders below it (Landlock grants it for a whole
    hierarchy), never a file's contents. The worker's scratch is never cut
    open this way: no side lists the names of another side's tree.

    Everything a side must not read — the other sides' trees, progress
    files, submissions, an assignment, the catalog — is outside every root
    here (and, but for the catalog, never bound into the worker's sandbox).
    """
    secret = installed_packages([SECRET_PACKAGE])
    banned = sorted({os.path.realpath(p) for p in [*forbidden, *secret]})
    roots: list[str] = []
    listed: set[str] = set()
    for path in _candidates():
        _allow_except(path, banned, roots)
        listed.update(os.path.dirname(package) for package in secret if package != path and below(package, path))
    # A root inside another is redundant; keep the outer one.
    roots = sorted(set(roots))
    return Reads(roots=tuple(r for r in roots if not any(r != o and below(r, o) for o in roots)),
                 listed=tuple(sorted(listed)))


def read_roots(forbidden: Iterable[str] = ()) -> tuple[str, ...]:
    """The folders and files :func:`policy` lets a side read."""
    return policy(forbidden).roots


def _candidates() -> list[str]:
    """Every folder and file a side may read before anything is cut out of them, resolved, existing."""
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    candidates = [sysconfig.get_paths().get(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")]
    real_prefixes = [os.path.realpath(p) for p in prefixes]
    for entry in sys.path:  # installed packages only: not the folder the tutor was started in
        real = os.path.realpath(entry) if entry else ""
        if real and os.path.isdir(real) and (any(below(real, p) for p in real_prefixes)
                                             or os.path.basename(real) in ("site-packages", "dist-packages")):
            candidates.append(real)
    candidates += [os.path.join(p, "lib") for p in prefixes]
    candidates += installed_packages([name for name in PRIVATE_PACKAGES if name != SECRET_PACKAGE])
    candidates += list(SYSTEM_READ)
    # Package metadata beside an editable checkout (importlib.metadata reads entry points there):
    # names and versions only, no source.
    for entry in sys.path:
        if entry and os.path.isdir(entry):
            candidates += glob.glob(os.path.join(entry, "*.egg-info")) + glob.glob(os.path.join(entry, "*.dist-info"))
    return [path for path in dict.fromkeys(os.path.realpath(p) for p in candidates if p) if os.path.exists(path)]
