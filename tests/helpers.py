"""Small helpers shared by the per-set tests."""

from exercises import answers


def graded(catalog, result, text):
    """Grade another typed answer against an observation already made (no second run)."""
    ex = catalog.get(result.id)
    return answers.matches(ex.kind, answers.parse(ex.kind, text, list(ex.choices)), result.observed, ex.tolerance)


def rows(result, side, title_start):
    """The rows of the first evidence table on ``side`` whose title starts with ``title_start``."""
    for item in result.evidence[side]:
        if item["type"] == "table" and item["title"].startswith(title_start):
            return item["rows"]
    raise AssertionError(f"no table {title_start!r} on the {side} side")
