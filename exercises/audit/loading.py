"""Importing the learner's file and finding its factory (``tutor audit FILE.py:FACTORY``)."""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Callable


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
        raise LookupError(f"{os.path.basename(path)} defines no {name!r}")
    if not callable(factory):
        raise LookupError(f"{name!r} in {os.path.basename(path)} is not callable")
    return factory
