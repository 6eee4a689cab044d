"""Every fault applies to today's source; the catalog rejects bad data with one sentence."""

import pytest

from exercises.faults import Fault, FaultError, diff, make_private_copy, source_root, verify
from helpers import DEMO_CATALOG, demo_catalog_dir
from tutor.model.catalog import CatalogError
from tutor.store.catalog_cache import load_catalog

ROOT = source_root()


def hunks(patch: str):
    """Each hunk of a unified diff as (old text, new text): context and removed lines, context and added lines."""
    found = []
    for line in patch.splitlines(keepends=True)[2:]:
        if line.startswith("@@"):
            found.append(([], []))
        elif line[:1] in " -":
            found[-1][0].append(line[1:])
        if line[:1] in " +":
            found[-1][1].append(line[1:])
    return [("".join(old), "".join(new)) for old, new in found]


def test_every_fault_applies_and_its_diff_shows_exactly_its_edit(catalog):
    assert catalog.faults, "the catalog defines no faults"
    for fault in catalog.faults.values():
        source = (ROOT / fault.file).read_text(encoding="utf-8")
        assert verify(fault) == source, fault.id  # verify returns the file as it is on disk
        edited = source.replace(fault.before, fault.after)
        assert edited != source, fault.id
        patch = diff(fault)
        assert patch.startswith(f"--- a/{fault.file}\n+++ b/{fault.file}\n@@ "), fault.id
        for old, new in hunks(patch):  # each hunk is a slice of the file before and of the file after
            assert old != new and old in source and new in edited, fault.id


def test_a_fault_whose_text_occurs_twice_is_refused_and_the_counts_are_named(tmp_path):
    (tmp_path / "engine").mkdir()
    (tmp_path / "exercises").mkdir()
    (tmp_path / "engine" / "m.py").write_text("x = 1\nx = 1\ny = 2\n")
    twice = Fault(id="x", file="engine/m.py", before="x = 1", after="x = 0", summary="s")
    with pytest.raises(FaultError, match=r"^fault 'x': its before text occurs 2 times in engine/m\.py, but must occur "
                                         r"exactly once; update the fault to match the source$"):
        verify(twice, tmp_path)
    once = Fault(id="y", file="engine/m.py", before="y = 2", after="y = 3", summary="s")
    assert verify(once, tmp_path) == "x = 1\nx = 1\ny = 2\n"
    assert diff(once, tmp_path) == ("--- a/engine/m.py\n+++ b/engine/m.py\n@@ -1,3 +1,3 @@\n"
                                    " x = 1\n x = 1\n-y = 2\n+y = 3\n")
    copy = make_private_copy(tmp_path / "copy", once, root=tmp_path)
    assert (copy / "engine" / "m.py").read_text() == "x = 1\nx = 1\ny = 3\n"
    assert (tmp_path / "engine" / "m.py").read_text() == "x = 1\nx = 1\ny = 2\n"


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
    assert all(e.answer_items for e in catalog.exercises if e.kind.name == "list")
    for ex in catalog.exercises:
        assert len(ex.hints) >= 2 and ex.explain.strip() and ex.prompt.strip()


def test_the_keys_an_exercise_table_allows_are_the_exercise_fields_and_subject_is_gone(tmp_path):
    text = DEMO_CATALOG.replace('budget_s = 0.1', 'budget_s = 0.1\nsubject = "engine"')
    with pytest.raises(CatalogError) as err:
        load_catalog(demo_catalog_dir(tmp_path, text))
    assert str(err.value) == (
        "demo.toml: exercise 'demo-one': unknown key 'subject'; allowed keys are id, set, title, source, prompt, "
        "kind, check, explain, hints, budget_s, fault, choices, tolerance, observe, timeout_s, answer_length, "
        "answer_items, seed_per_attempt, graded")


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace('summary = "demo set"\n', ''), "demo.toml: [set]: missing key 'summary'"),
    (lambda t: t.replace('order = 1', 'order = "first"'), "demo.toml: [set]: key 'order' must be an int, found str"),
    (lambda t: t.replace('summary = "s"', 'summary = "s"\ncolour = "red"'),
     "demo.toml: fault 'demo-fault': unknown key 'colour'; allowed keys are id, file, before, after, summary"),
    (lambda t: t.replace('summary = "s"\n', ''), "demo.toml: fault 'demo-fault': missing key 'summary'"),
    (lambda t: t.replace('summary = "s"', 'summary = ""'),
     "demo.toml: fault 'demo-fault': key 'summary' must be a non-empty string"),
    (lambda t: t.replace('fault = "demo-fault"', 'fault = "demo-fault"\nseed_per_attempt = 1'),
     "demo.toml: exercise 'demo-one': key 'seed_per_attempt' must be a bool, found int"),
    (lambda t: t.replace('budget_s = 0.1', 'budget_s = true'),
     "demo.toml: exercise 'demo-one': key 'budget_s' must be a number, found bool"),
])
def test_set_and_fault_tables_are_checked_against_their_dataclasses(tmp_path, edit, message):
    with pytest.raises(CatalogError) as err:
        load_catalog(demo_catalog_dir(tmp_path, edit(DEMO_CATALOG)))
    assert str(err.value) == message


def test_an_exercise_as_data_has_every_short_field_in_plain_types(tmp_path):
    text = DEMO_CATALOG.replace('kind = "bool"', 'kind = "list"\nanswer_items = ["bool", "error"]\ntolerance = 1')
    ex = load_catalog(demo_catalog_dir(tmp_path, text)).get("demo-one")
    assert ex.to_dict() == {
        "id": "demo-one", "set": "demo", "title": "t", "source": "000 · 1", "kind": "list", "check": "demo.one",
        "budget_s": 0.1, "fault": "demo-fault", "choices": [], "tolerance": 1.0, "observe": "faulted",
        "timeout_s": 0.0, "answer_length": None, "answer_items": ["bool", "error"], "seed_per_attempt": False,
        "graded": True,
        "source_label": "From chapter 000, Shapes, storage, gradients and state: 1",
        "answer_format": "a list of 2 items, in order: yes or no; an exception name or none"}
    assert (ex.prompt, ex.explain, ex.hints) == ("p", "e", ("a", "b"))  # the long texts stay off the list
    assert type(ex.tolerance) is float and type(ex.budget_s) is float and ex.answer_items == ("bool", "error")


def test_a_fault_as_data_is_its_five_fields():
    fault = Fault(id="x", file="engine/model.py", before="a", after="b", summary="s")
    assert fault.to_dict() == {"id": "x", "file": "engine/model.py", "before": "a", "after": "b", "summary": "s"}
