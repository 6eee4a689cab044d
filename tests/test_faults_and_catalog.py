"""Every fault applies to today's source; the catalog rejects bad data with one sentence."""

import pytest

from exercises.faults import Fault, FaultError, diff, make_private_copy, source_root, verify
from helpers import DEMO_CATALOG, demo_catalog_dir
from tutor.catalog import CatalogError, load_catalog

ROOT = source_root()


def test_every_fault_applies_exactly_once(catalog):
    assert catalog.faults, "the catalog defines no faults"
    for fault in catalog.faults.values():
        text = verify(fault)
        assert text.count(fault.before) == 1, fault.id
        patch = diff(fault)
        assert patch.startswith(f"--- a/{fault.file}"), fault.id
        changed = [line for line in patch.splitlines()
                   if line[:1] in "+-" and not line.startswith(("---", "+++"))]
        assert changed, fault.id


def test_every_faulted_exercise_names_a_known_fault(catalog):
    for ex in catalog.exercises:
        if ex.fault:
            assert ex.fault in catalog.faults


def test_private_copy_is_edited_and_the_tree_is_not(tmp_path, catalog):
    fault = catalog.faults["head-split-reshape"]
    original = (ROOT / fault.file).read_text()
    make_private_copy(tmp_path, fault)
    copied = (tmp_path / fault.file).read_text()
    assert fault.after in copied and fault.before not in copied
    assert (ROOT / fault.file).read_text() == original


def test_a_fault_whose_text_drifted_is_refused():
    fault = Fault(id="x", file="engine/model.py", before="this text is not in the engine", after="y", summary="s")
    with pytest.raises(FaultError, match="occurs 0 times"):
        verify(fault)


def test_a_fault_outside_the_subject_is_refused():
    fault = Fault(id="x", file="../etc/passwd", before="a", after="b", summary="s")
    with pytest.raises(FaultError, match="must lie inside"):
        verify(fault)


# --- catalog validation: build a small exercises folder and break it ----------

def test_a_good_catalog_loads(tmp_path):
    cat = load_catalog(demo_catalog_dir(tmp_path, DEMO_CATALOG))
    assert [e.id for e in cat.exercises] == ["demo-one"]
    assert cat.fault_of(cat.exercises[0]).id == "demo-fault"


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace('budget_s = 0.1', 'budget_s = 0.1\ncolour = "red"'), "unknown key 'colour'"),
    (lambda t: t.replace('explain = "e"\n', ''), "missing key 'explain'"),
    (lambda t: t.replace('budget_s = 0.1', 'budget_s = "fast"'), "'budget_s' must be a number"),
    (lambda t: t.replace('check = "demo.one"', 'check = "demo.two"'), "defines no function 'two'"),
    (lambda t: t.replace('check = "demo.one"', 'check = "nowhere.one"'), "nowhere.py does not exist"),
    (lambda t: t.replace('fault = "demo-fault"', 'fault = "ghost"'), "'ghost'"),
    (lambda t: t.replace('before = "return True"', 'before = "return Maybe"'), "occurs 0 times"),
    (lambda t: t.replace('kind = "bool"', 'kind = "colour"'), "'kind' must be one of"),
    (lambda t: t.replace('hints = ["a", "b"]', 'hints = ["a"]'), "at least two"),
    (lambda t: t + t[t.index("[[exercise]]"):t.index("[[fault]]")], "duplicate id"),
    (lambda t: t.replace("format_version = 1", "format_version = 7"), "format_version must be 1"),
    (lambda t: t.replace('budget_s = 0.1', 'budget_s = 0.1\nanswer_length = 3'), "for kind list only"),
    (lambda t: t.replace('budget_s = 0.1', 'budget_s = 0.1\nanswer_items = "number"'), "for kind list only"),
    (lambda t: t.replace('kind = "bool"', 'kind = "list"\nanswer_items = "colour"'), "entry 'colour' must be"),
    (lambda t: t.replace('kind = "bool"', 'kind = "list"\nanswer_length = 3\nanswer_items = ["bool", "error"]'),
     "lists 2 kinds but answer_length is 3"),
    (lambda t: t.replace('title = "t"', 'title = '), "does not parse"),
])
def test_a_broken_catalog_is_named_in_one_sentence(tmp_path, edit, message):
    directory = demo_catalog_dir(tmp_path, edit(DEMO_CATALOG))
    with pytest.raises(CatalogError) as err:
        load_catalog(directory)
    text = str(err.value)
    assert message in text
    assert "demo.toml" in text
    assert "\n" not in text


def test_the_shipped_catalog_is_valid_and_ids_are_unique(catalog):
    ids = [e.id for e in catalog.exercises]
    assert len(ids) == len(set(ids))
    # every source names a seed chapter, so the label a learner sees can say which
    assert all(e.source_label.startswith("From chapter 00") for e in catalog.exercises)
    assert catalog.get("broadcast-loss").source_label == (
        "From chapter 000, Shapes, storage, gradients and state: 1. Shape is part of the algorithm")
    # every list answer says what its items are, so a wrong kind is refused, not graded
    assert all(e.answer_items for e in catalog.exercises if e.kind == "list")
    for ex in catalog.exercises:
        assert len(ex.hints) >= 2 and ex.explain.strip() and ex.prompt.strip()
