"""Break it's head names what the learner's fault runs in: their engine only where the file is the engine's.

On a snippet exercise (exercises/snippets/scoring.py) "what your engine does" names something the
learner is not editing; the head says "your code" there and keeps "your engine" for engine/ files.
"""

from __future__ import annotations

from tutor.app.tasks import task_for
from tutor.store.catalog_cache import load_catalog
from tutor.ui.widgets.edit_head import edit_head


def head_of(exercise_id: str) -> str:
    catalog = load_catalog()
    ex = catalog.get(exercise_id)
    return edit_head(task_for(catalog, ex, "break"), ex, has_editor=False).plain


def test_break_on_a_snippet_says_your_code():
    head = head_of("squeeze-batch")
    assert "exercises/snippets/scoring.py" in head
    assert "what your code does" in head and "engine" not in head


def test_break_on_the_engine_says_your_engine():
    head = head_of("head-split")
    assert "engine/model.py" in head and "what your engine does" in head
