"""Count what docs/seed-coverage.md says of each seed item, and check it against the catalog.

    python scripts/seed_coverage.py          # rewrite the generated counts in the page
    python scripts/seed_coverage.py --check  # exit 1, naming each problem, if the page is stale or wrong

The page lists every seed item once: seed 000 and seed 001 as table rows
(``| # | item | … | exercise | evidence | not taught |``), seed 004 as
bullet lines holding ``**exercise**``, ``**evidence**`` or ``**not taught**``.
An item counts as taught when its exercise cell (or its ``**exercise**``
part) names an exercise that *grades* it, as evidence when only its evidence
cell does, and as not taught otherwise. The counts between the page's
``<!-- counts:begin -->`` and ``<!-- counts:end -->`` markers are written
from those rows, never typed.

The check fails when the written counts differ from the rows, when an
exercise of the catalog appears nowhere on the page (every exercise maps to
a seed item or to the "Beyond the seeds" list), when a row's exercise cell
names an id the catalog does not have, or when it credits an exercise for
what the exercise does not grade: an ungraded exercise (a warm-up), a side
the exercise does not grade (``(clean side …)`` on an exercise graded on
its faulted side), or its evidence, hints or explain-back (those belong in
the evidence cell).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "seed-coverage.md"
BEGIN, END = "<!-- counts:begin -->", "<!-- counts:end -->"
SEEDS = ("000", "001", "004")
STATUSES = ("exercise", "evidence", "not taught")
ID = re.compile(r"`([a-z0-9]+(?:-[a-z0-9]+)*)`")


@dataclass
class Item:
    """One seed item as the page states it."""

    seed: str
    text: str
    status: str  # one of STATUSES
    taught_by: list[str] = field(default_factory=list)  # ids in its exercise cell
    #: {id: the words after it in the exercise cell, up to the next id}: what the row says it grades
    notes: dict[str, str] = field(default_factory=dict)


#: Words in an exercise cell's note that credit what an exercise shows but does not grade.
UNGRADED_WORDS = ("evidence", "hint", "explain-back", "ungraded", "warm-up")
#: The side a note names, and the ``observe`` values that grade it.
SIDE_WORDS = {"clean side": ("clean", "both"), "faulted side": ("faulted", "both")}


def _notes(cell: str) -> dict[str, str]:
    """{id: the text after it up to the next id} for each id an exercise cell names."""
    parts = ID.split(cell)  # text, id, text, id, text, ...
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def parse(text: str) -> list[Item]:
    """Every item of the three seed sections, in page order.

    Raises:
        ValueError: a table row or bullet whose status cannot be read.
    """
    items: list[Item] = []
    seed = None
    for line in text.splitlines():
        heading = re.match(r"## Seed (\d{3})", line)
        if heading:
            seed = heading.group(1)
            continue
        if line.startswith("## "):
            seed = None
            continue
        if seed in ("000", "001") and re.match(r"\| \d+ \|", line):
            cells = _cells(line.replace(r"\|", "¦"))
            exercise, evidence, not_taught = cells[-3:]
            status = "exercise" if exercise else "evidence" if evidence else "not taught" if not_taught else None
            if status is None:
                raise ValueError(f"seed {seed}, row {cells[0]}: no exercise, evidence or reason is given")
            items.append(Item(seed, cells[1], status, ID.findall(exercise.split("(")[0]), _notes(exercise)))
        elif seed == "004" and line.startswith("- "):
            marks = [s for s in STATUSES if f"**{s}**" in line]
            if not marks:
                raise ValueError(f"seed 004: the line {line[:60]!r} names no **exercise**, **evidence** or **not taught**")
            status = marks[0]
            taught, notes = [], {}
            if status == "exercise":
                part = line.split("**exercise**", 1)[1].split("**evidence**")[0]
                taught, notes = ID.findall(part.split("(")[0]), _notes(part)
            items.append(Item("004", line[2:], status, taught, notes))
    return items


def counts(items: list[Item]) -> dict[str, dict[str, int]]:
    """{seed or "all": {"items": n, "exercise": n, "evidence": n, "not taught": n}}."""
    out = {}
    for seed in (*SEEDS, "all"):
        mine = [i for i in items if seed == "all" or i.seed == seed]
        out[seed] = {"items": len(mine), **{s: sum(i.status == s for i in mine) for s in STATUSES}}
    return out


def render(table: dict[str, dict[str, int]]) -> str:
    """The generated block: the summary table, one row per seed and the total."""
    lines = [BEGIN, "| seed | items | exercise | evidence only | not taught |", "|---|---|---|---|---|"]
    for seed, c in table.items():
        share = f" ({100 * c['exercise'] / c['items']:.0f} %)" if seed == "all" and c["items"] else ""
        lines.append(f"| {seed} | {c['items']} | {c['exercise']}{share} | {c['evidence']} | {c['not taught']} |")
    lines.append(END)
    return "\n".join(lines)


def refresh(text: str, items: list[Item]) -> str:
    """The page with its generated block rewritten from ``items``."""
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + render(counts(items)) + text[end:]


def problems(text: str, catalog: dict[str, str | None]) -> list[str]:
    """Each way the page disagrees with itself or with the catalog, one sentence each.

    Args:
        text: the page.
        catalog: {exercise id: the side it grades (its ``observe``: clean, faulted or both), or None
            for an exercise that grades nothing (a warm-up)}.
    """
    catalog_ids = set(catalog)
    found = []
    if BEGIN not in text or END not in text:
        return [f"the page lacks the {BEGIN} … {END} block the counts are written into"]
    items = parse(text)
    if refresh(text, items) != text:
        found.append("the counts on the page differ from its rows; run python scripts/seed_coverage.py")
    named = set(ID.findall(text))
    for missing in sorted(catalog_ids - named):
        found.append(f"exercise {missing!r} is on no row: map it to a seed item or list it under 'Beyond the seeds'")
    for item in items:
        where = f"seed {item.seed}, {item.text[:50]!r}"
        for unknown in sorted(set(item.taught_by) - catalog_ids):
            found.append(f"{where}: its exercise {unknown!r} is not in the catalog")
        for ex_id, note in item.notes.items():
            if item.status != "exercise" or ex_id not in catalog:
                continue
            graded = catalog[ex_id]
            if graded is None:
                found.append(f"{where}: {ex_id!r} is ungraded (a warm-up), so it teaches nothing by grading; "
                             "name it in the evidence cell")
                continue
            words = [w for w in UNGRADED_WORDS if w in note.lower()]
            sides = [side for side, grading in SIDE_WORDS.items() if side in note.lower() and graded not in grading]
            if words:
                found.append(f"{where}: the exercise cell credits {ex_id!r} for its {words[0]}, which is not what "
                             "it grades; move it to the evidence cell")
            elif sides:
                found.append(f"{where}: the exercise cell credits {ex_id!r} for its {sides[0]}, but it grades its "
                             f"{graded} side; move it to the evidence cell")
    return found


def catalog_ids() -> dict[str, str | None]:
    """{id: the side it grades, or None for an ungraded warm-up} for every exercise of the shipped catalog."""
    sys.path.insert(0, str(ROOT))
    from tutor.store.catalog_cache import load_catalog  # the tutor's loader, once the root is importable

    return {e.id: e.observe if e.graded else None for e in load_catalog().exercises}


def main(argv: list[str]) -> int:
    text = PAGE.read_text(encoding="utf-8")
    if "--check" in argv:
        found = problems(text, catalog_ids())
        for line in found:
            print(line)
        return 1 if found else 0
    PAGE.write_text(refresh(text, parse(text)), encoding="utf-8")
    print(render(counts(parse(text))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
