"""Importing the learner's file and finding its factory (``tutor audit FILE.py:FACTORY``).

``missing_factory`` reads the file's source without running it (``ast``), so ``tutor audit`` can refuse a
name the file plainly does not define before it starts the confined audit process; ``load_factory``
imports the file, inside that process.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import os
import sys
from typing import Callable

#: Prefixes of the names a factory usually goes by, listed as candidates even when they take arguments.
FACTORY_PREFIXES = ("build", "factory", "make")


def load_factory(path: str, name: str) -> Callable:
    """Import ``path`` as a module and return its attribute ``name``.

    The file's folder goes first on ``sys.path``, so the file can import its
    neighbours.

    Raises:
        FileNotFoundError: no such file. LookupError: no such attribute, or
        not callable. Anything the module raises on import propagates.
    """
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no such file: {path}")
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location("_audited_model", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["_audited_model"] = module
    spec.loader.exec_module(module)
    factory = getattr(module, name, None)
    if factory is None:
        found = [n for n, value in vars(module).items() if _candidate(n, value)]
        raise LookupError(no_such_factory(path, name, found))
    if not callable(factory):
        raise LookupError(f"{name!r} in {os.path.basename(path)} is not callable")
    return factory


def no_such_factory(path: str, name: str, candidates: list[str]) -> str:
    """The one sentence for a factory name the file does not define, naming the ones it does."""
    said = f"{os.path.basename(path)} defines no {name!r}"
    if not candidates:
        return (f"{said}, and no function that could be a factory (one taking no arguments, or named build*, "
                "factory* or make*); add def build(): return model and run tutor audit FILE.py:build")
    shown = ", ".join(candidates[:8]) + (f" and {len(candidates) - 8} more" if len(candidates) > 8 else "")
    return f"{said}; its factories could be {shown}: name one after the colon, e.g. {path}:{candidates[0]}"


def _candidate(name: str, value) -> bool:
    """Whether a module attribute could be a factory: a function of this file callable with no arguments, or
    one named build*, factory*, make* (classes left out, as ``missing_factory`` leaves them)."""
    if name.startswith("_") or not callable(value) or inspect.isclass(value) or \
            getattr(value, "__module__", None) != "_audited_model":
        return False
    if name.lower().startswith(FACTORY_PREFIXES):
        return True
    try:
        signature = inspect.signature(value)
    except (TypeError, ValueError):
        return False
    return all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
               for p in signature.parameters.values())


def missing_factory(path: str, name: str) -> str | None:
    """The sentence for ``name`` when the file's source plainly does not define it, read without running it;
    None when it does, or when the source could define it in a way only running it shows (a star import, a
    module ``__getattr__``, ``globals()``, or ``exec`` into the file's own namespace) or cannot be parsed (the
    import in the audit process then says what is wrong).

    Candidates: top-level functions whose parameters all have defaults, and any named build*, factory*,
    make*; classes are left out (a model class is rarely the factory).
    """
    try:
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), filename=path)
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None
    defined, candidates = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return None
        if isinstance(node, ast.Name) and node.id == "globals" or \
                isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "exec" and \
                len(node.args) < 2 or \
                isinstance(node, ast.FunctionDef) and node.name == "__getattr__" and node in tree.body:
            return None  # names bound as the file runs: only the import can tell
    for node in tree.body:
        for target in _bound_names(node):
            defined.add(target)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            args = node.args
            required = len(args.posonlyargs) + len(args.args) - len(args.defaults) + \
                sum(d is None for d in args.kw_defaults)
            if required == 0 or node.name.lower().startswith(FACTORY_PREFIXES):
                candidates.append(node.name)
    if name in defined or _anywhere_bound(tree, name):
        return None
    return no_such_factory(path, name, candidates)


def _bound_names(node: ast.stmt) -> list[str]:
    """The names a top-level statement binds (def, class, assignment, import, and those inside if/try/with)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in node.names]
    names = []
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            names.append(child.id)
        elif child is not node and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(child.name)
        elif child is not node and isinstance(child, (ast.Import, ast.ImportFrom)):
            names += [(a.asname or a.name).split(".")[0] for a in child.names]
    return names


def _anywhere_bound(tree: ast.Module, name: str) -> bool:
    """Whether ``name`` is declared global anywhere (a function may bind it at import time)."""
    return any(isinstance(n, ast.Global) and name in n.names for n in ast.walk(tree))
