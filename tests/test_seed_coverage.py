"""docs/seed-coverage.md is exact: its counts come from its rows, and every exercise is on a row."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("seed_coverage", ROOT / "scripts" / "seed_coverage.py")
seed_coverage = importlib.util.module_from_spec(_spec)
sys.modules["seed_coverage"] = seed_coverage  # dataclasses look their module up there
_spec.loader.exec_module(seed_coverage)


@pytest.fixture(scope="module")
def page():
    return seed_coverage.PAGE.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def ids(catalog):
    """{id: the side it grades, or None for a warm-up}, as the script reads the catalog."""
    return {e.id: e.observe if e.graded else None for e in catalog.exercises}


def test_the_page_agrees_with_its_rows_and_the_catalog(page, ids):
    assert seed_coverage.problems(page, ids) == []


def test_the_counts_add_up_per_seed(page):
    table = seed_coverage.counts(seed_coverage.parse(page))
    for seed, c in table.items():
        assert c["items"] == c["exercise"] + c["evidence"] + c["not taught"], seed
    assert table["all"]["items"] == sum(table[s]["items"] for s in seed_coverage.SEEDS)
    assert table["000"]["items"] >= 123 and table["001"]["items"] >= 75 and table["004"]["items"] >= 67


def test_an_unmapped_exercise_fails(page, ids):
    found = seed_coverage.problems(page, {**ids, "a-new-exercise": "faulted"})
    assert found == ["exercise 'a-new-exercise' is on no row: map it to a seed item or list it under 'Beyond the seeds'"]


def test_a_typed_count_that_disagrees_fails(page, ids):
    start = page.index(seed_coverage.BEGIN)
    line_start = page.index("| 000 |", start)
    line_end = page.index("\n", line_start)
    tampered = page[:line_start] + "| 000 | 1 | 1 | 0 | 0 |" + page[line_end:]
    assert seed_coverage.problems(tampered, ids)[0].startswith("the counts on the page differ from its rows")


def test_a_row_naming_a_missing_exercise_fails(page, ids):
    tampered = page.replace("| `broadcast-loss` |", "| `broadcast-lost` |", 1)
    assert any("'broadcast-lost' is not in the catalog" in p for p in seed_coverage.problems(tampered, ids))


def test_a_row_without_a_status_is_refused():
    with pytest.raises(ValueError, match="no exercise, evidence or reason"):
        seed_coverage.parse("## Seed 000 — x\n| 1 | an item · §1 | | | |\n")


ROW = "## Seed 001 — x\n| 1 | an item | {cell} | | |\n"


def _page(page, row):
    """The page with ``row`` as one more seed 001 row (its counts rewritten to agree)."""
    text = page.replace("## Seed 004", row.split("\n", 1)[1] + "\n## Seed 004", 1)
    return seed_coverage.refresh(text, seed_coverage.parse(text))


def test_a_credit_for_a_side_the_exercise_does_not_grade_fails(page, ids):
    # part6-without-attention grades its faulted side (the loss without attention)
    tampered = _page(page, ROW.format(cell="`part6-without-attention` (clean side, 1.23 → 0.0023)"))
    assert any("credits 'part6-without-attention' for its clean side, but it grades its faulted side" in p
               for p in seed_coverage.problems(tampered, ids))
    graded = _page(page, ROW.format(cell="`part6-without-attention` (faulted side: the loss without attention)"))
    assert seed_coverage.problems(graded, ids) == []


def test_a_credit_for_evidence_or_a_warm_up_fails(page, ids):
    tampered = _page(page, ROW.format(cell="`view-vs-reshape` (its evidence shows the storage)"))
    assert any("credits 'view-vs-reshape' for its evidence, which is not what it grades" in p
               for p in seed_coverage.problems(tampered, ids))
    warm_up = {**ids, "view-vs-reshape": None}
    credited = _page(page, ROW.format(cell="`view-vs-reshape`"))
    assert any("'view-vs-reshape' is ungraded (a warm-up)" in p for p in seed_coverage.problems(credited, warm_up))
