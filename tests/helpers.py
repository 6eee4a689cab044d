"""Small helpers shared by the tests."""

import textwrap

from tutor.store.catalog_cache import load_catalog


def graded(catalog, result, text):
    """Grade another typed answer against an observation already made (no second run)."""
    ex = catalog.get(result.id)
    return ex.kind.agrees(ex.kind.parse(text), result.observed)


def rows(result, side, title_start):
    """The rows of the first evidence table on ``side`` whose title starts with ``title_start``."""
    for item in result.evidence[side]:
        if item["type"] == "table" and item["title"].startswith(title_start):
            return item["rows"]
    raise AssertionError(f"no table {title_start!r} on the {side} side")


def facts(result, side, title_start):
    """That table's rows as {first cell: the other cells}."""
    return {row[0]: row[1:] for row in rows(result, side, title_start)}


def fact(result, side, title_start):
    """That table's rows as {first cell: second cell}."""
    return {row[0]: row[1] for row in rows(result, side, title_start)}


#: A one-exercise set with a fault: valid as it stands; tests break it on purpose.
DEMO_CATALOG = textwrap.dedent('''
    format_version = 1
    [set]
    id = "demo"
    title = "Demo"
    order = 1
    summary = "demo set"

    [[exercise]]
    id = "demo-one"
    set = "demo"
    title = "t"
    source = "000 · 1"
    prompt = "p"
    kind = "bool"
    check = "demo.one"
    explain = "e"
    hints = ["a", "b"]
    budget_s = 0.1
    fault = "demo-fault"

    [[fault]]
    id = "demo-fault"
    file = "exercises/demo.py"
    summary = "s"
    before = "return True"
    after = "return False"
''')


def demo_catalog_dir(root, text):
    """Write ``text`` as exercises/demo.toml under ``root`` (with its check module); return the folder."""
    directory = root / "exercises"
    directory.mkdir()
    (directory / "demo.toml").write_text(text, encoding="utf-8", errors="replace")
    (directory / "demo.py").write_text("def one(ctx):\n    return True\n")
    load_catalog.cache_clear()
    return directory
