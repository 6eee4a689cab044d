"""``tutor list`` for people: one line per exercise, in columns, under its set's line."""

import os
import subprocess
import sys

from tutor.store.catalog_cache import load_catalog
from tutor.cli.output import list_rows


def test_every_exercise_is_one_row_with_its_id_answer_and_title_in_columns():
    catalog = load_catalog()
    rows = [row.plain for row in list_rows(catalog.sets)]
    header = rows[0]
    assert header.split() == ["id", "answer", "title"]
    answer_at, title_at = header.index("answer"), header.index("title")
    exercise_rows = [r for r in rows[1:] if r.startswith("  ")]
    assert len(exercise_rows) == len(catalog.exercises)
    for row, ex in zip(exercise_rows, catalog.exercises):
        assert row[2:answer_at].rstrip() == ex.id
        assert row[answer_at:title_at].rstrip() == ex.kind.words
        assert row[title_at:] == ex.title
    set_rows = [r for r in rows[1:] if not r.startswith("  ")]
    assert set_rows == [f"{s.title}  ({s.id}) — {s.summary}" for s in catalog.sets]


def test_a_narrow_terminal_keeps_each_row_on_one_line():
    env = {**os.environ, "COLUMNS": "60"}
    proc = subprocess.run([sys.executable, "-m", "tutor.cli", "list", "--set", "shapes"], capture_output=True,
                          text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    shapes = load_catalog().get_set("shapes")
    lines = proc.stdout.splitlines()
    for ex in shapes.exercises:
        assert sum(line.startswith(f"  {ex.id} ") and line.endswith(ex.title) for line in lines) == 1, ex.id
