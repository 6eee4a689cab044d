"""What the CLI and the TUI draw from a result and a fault's diff (no torch needed)."""

from __future__ import annotations

from rich.console import Console

from tutor.store.catalog_cache import load_catalog
from tutor.render import render_diff, render_result
from tutor.sandbox.runner import RunResult


def plain(renderables, width: int = 60) -> str:
    console = Console(width=width, record=True, color_system=None)
    for r in renderables:
        console.print(r)
    return console.export_text()


def test_a_wrapped_diff_line_keeps_its_marker_and_reads_as_a_continuation():
    long = "x = " + " + ".join(f"term_{i}" for i in range(20))
    text = plain([render_diff(f"--- a\n+++ b\n@@ -1 +1 @@\n-{long}\n+y = 1\n context\n")], width=40)
    lines = text.splitlines()
    removed = [line for line in lines if line.startswith("-")]
    assert removed[0].startswith("- x = ") and len(removed) > 2
    assert all(line.startswith("-↳") for line in removed[1:])  # continuations, not new lines
    assert [line for line in lines if line.startswith("+")] == ["+ y = 1"]
    assert "  context" in lines


def _result(**fields):
    base = dict(id="audit", status="ok", device="cpu", torch="2.13.0", fault=None, kind="choice",
                observed="gradients", clean="gradients", duration_s=0.4,
                evidence={"clean": [{"type": "table", "title": "Audit of the mystery GPT, link by link",
                                     "columns": ["link", "verdict"], "rows": [["INIT", "ok"]]},
                                    {"type": "note", "text": "First failure: GRADIENTS."}]})
    base.update(fields)
    return RunResult(**base)


def test_an_exercise_without_a_fault_has_no_side_labels_and_full_titles():
    ex = load_catalog().get("audit")
    text = plain(render_result(ex, _result()), width=30)
    assert "[clean]" not in text and "First failure: GRADIENTS." in text
    assert "seed 0" in text  # which mystery it was, so it can be rebuilt
    # the title sits on its own lines, not folded into the narrow table's width
    assert "Audit of the mystery GPT," in text.replace("\n", " ")


def test_a_faulted_exercise_labels_each_side():
    ex = load_catalog().get("broadcast-loss")
    result = _result(id=ex.id, fault=ex.fault, kind=ex.kind.name, observed=[3, 3], clean=[3], faulted=[3, 3],
                     evidence={"faulted": [{"type": "note", "text": "loss per row"}]})
    assert "[faulted] loss per row" in plain(render_result(ex, result))


def test_a_cancelled_run_shows_no_made_up_duration():
    ex = load_catalog().get("audit")
    text = plain(render_result(ex, _result(status="cancelled", observed=None, clean=None, duration_s=0.0,
                                           evidence={})))
    assert "the run was cancelled" in text and "0.00 s" not in text


def test_the_prediction_is_shown_as_it_was_read_and_saved():
    ex = load_catalog().get("lr-10x")
    result = _result(id=ex.id, fault=ex.fault, prediction="6", prediction_text="capability",
                     observed="capability", faulted="capability", status="pass", evidence={})
    table_text = plain(render_result(ex, result), width=80)
    line = next(line for line in table_text.splitlines() if "your prediction" in line and "│" in line)
    assert "capability" in line and " 6 " not in line


def test_a_narrow_table_folds_a_long_cell_word_before_it_breaks_a_header_word():
    """80 columns of piped output, seven columns and long words in the cells: every header reads whole."""
    import io
    from rich.text import Text
    from tutor.render.tables import WordTable
    headers = ["exercise", "predictions", "last answer", "observed", "ever solved", "edits", "note"]
    table = WordTable(headers)
    table.add_row("temperature-after-topp", "1 (reset)", Text("0.123456789012"), Text("RuntimeError:something"),
                  "yes", Text("fix: pass · break: fail-to-show"), Text("a note with supercalifragilisticwords"))
    console = Console(width=80, file=io.StringIO(), color_system=None, record=True)
    console.print(table)
    lines = console.export_text().splitlines()
    header_lines = lines[1:next(i for i, line in enumerate(lines) if line.startswith("┡"))]
    columns = zip(*[[c.strip() for c in line.strip("┃").split("┃")] for line in header_lines])
    assert [" ".join(part for part in column if part) for column in columns] == headers
