"""What the audit's tests share: a zoo model's factory by name, and a subject built without a command line.

``one_torch_thread`` (tests/conftest.py) keeps each audit test on one torch
thread; the audit test modules ask for it with ``pytestmark``.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Callable

from exercises.audit import audit, load_factory
from exercises.audit.subject import prepare

#: The planted models and the clean ones the audit must tell apart (tests/audit_models/).
ZOO = Path(__file__).parent / "audit_models"


def factory(name: str) -> Callable:
    """The factory ``name`` names: a zoo file, and after a colon its factory when that is not ``build``."""
    file, _, function = name.partition(":")
    return load_factory(str(ZOO / f"{file}.py"), function or "build")


def subject_of(build: Callable, overfit_steps: int = 0):
    """The audit's subject of what ``build()`` returns (a model, ``(model, optimizer)`` or a dict with a
    tokenizer), on the CPU at seed 0, with no corpus, no device override and no progress said."""
    return prepare(build, None, None, "cpu", 0, None, overfit_steps, lambda f, m: None)


@functools.lru_cache(maxsize=None)
def report_of(name: str):
    """The audit's report on the zoo model ``name`` (no overfit run), made once per test process."""
    return audit(factory(name), overfit_steps=0)


def link(name: str, which: str):
    """The verdict of link ``which`` in :func:`report_of` ``name``."""
    return next(l for l in report_of(name).links if l.name == which)
