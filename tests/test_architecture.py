"""The shape of tutor/ (docs/architecture.md), checked: the import contracts, and why an import waits.

The contracts live in pyproject.toml ([tool.importlinter]); ``lint-imports``
checks them here as in a terminal.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_the_import_contracts_hold():
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if lint is None:
        pytest.fail("lint-imports is missing: pip install -e '.[test]' installs import-linter")
    proc = subprocess.run([lint, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


def inner_imports_without_a_reason(source: str) -> list[int]:
    """Lines of imports inside a function that no comment explains.

    A comment on the import's line, or on the line just above a run of
    imports (blank lines between them allowed), explains the whole run.
    """
    lines = source.splitlines()
    spans = sorted({(sub.lineno, sub.end_lineno)
                    for node in ast.walk(ast.parse(source)) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                    for sub in ast.walk(node) if isinstance(sub, (ast.Import, ast.ImportFrom))})
    bad, explained, previous_end = [], False, None
    for start, end in spans:
        joins = previous_end is not None and all(not lines[i - 1].strip() for i in range(previous_end + 1, start))
        if not joins:
            above = lines[start - 2].strip() if start >= 2 else ""
            explained = above.startswith("#")
        if not (explained or "#" in lines[start - 1]):
            bad.append(start)
        previous_end = end
    return bad


def test_every_import_kept_inside_a_function_says_why():
    unexplained = [f"{path.relative_to(ROOT)}:{line}" for path in sorted((ROOT / "tutor").rglob("*.py"))
                   for line in inner_imports_without_a_reason(path.read_text(encoding="utf-8"))]
    assert unexplained == [], ("an import inside a function needs a one-line comment saying why it waits "
                               f"(or move it to the top of its module): {unexplained}")


def test_the_checker_tells_an_explained_import_from_a_bare_one():
    source = ("def f():\n    # deferred: heavy\n    import json\n\n    import csv\n    x = 1\n    import io\n"
              "def g():\n    import os  # Unix only\n")
    assert inner_imports_without_a_reason(source) == [7]


def test_vulture_finds_no_dead_code():
    vulture = shutil.which("vulture", path=str(Path(sys.executable).parent)) or shutil.which("vulture")
    if vulture is None:
        pytest.fail("vulture is missing: pip install -e '.[test]' installs it")
    proc = subprocess.run([vulture], cwd=ROOT, capture_output=True, text=True, timeout=300)  # [tool.vulture]
    assert proc.returncode == 0, ("dead code (remove it, or name it in tests/vulture_whitelist.py with the reason "
                                  f"it stays):\n{proc.stdout[-3000:]}{proc.stderr[-1000:]}")


#: The longest a module of tutor/ may be, in lines.
MAX_LINES = 500
#: Modules over the limit, each with the line count it may not grow past until it is split.
TOO_LONG_FOR_NOW = {
}


def test_no_module_of_tutor_is_over_500_lines():
    long = {str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines())
            for p in (ROOT / "tutor").rglob("*.py")}
    over = {name: n for name, n in long.items() if n > TOO_LONG_FOR_NOW.get(name, MAX_LINES)}
    assert over == {}, f"split these modules (at most {MAX_LINES} lines each): {over}"
