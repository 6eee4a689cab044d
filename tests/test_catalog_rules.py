"""The set-file rules, one sentence each: what build_catalog accepts of a set file and how it refuses the rest.

Each case writes one small set file (and a check module) under a temporary root, changes one thing, and pins the
sentence the author is shown (tutor/model/catalog.py). Nothing here reads the shipped catalog.
"""

from __future__ import annotations

import dataclasses
import hashlib

import pytest
import tomli_w

from tutor.model import catalog as cat
from tutor.model.catalog import CatalogError, build_catalog


def exercise(**changes) -> dict:
    entry = {"id": "ex-one", "set": "s", "title": "T", "source": "000 · 1. Shape", "prompt": "p", "kind": "choice",
             "check": "mod.check_one", "explain": "e", "hints": ["h1", "h2"], "budget_s": 1,
             "choices": [{"id": "a", "text": "A"}, {"id": "b", "text": "B"}]}
    entry.update(changes)
    return {k: v for k, v in entry.items() if v is not None}


def set_file(*exercises, **top) -> dict:
    data = {"format_version": 1, "set": {"id": "s", "title": "Set S", "order": 3, "summary": "what it is"},
            "exercise": list(exercises) or [exercise()]}
    data.update(top)
    return {k: v for k, v in data.items() if v is not None}


def build(tmp_path, *files, reads=None):
    """build_catalog over set files given as dicts (or bytes), named s.toml, t.toml, ..."""
    directory = tmp_path / "exercises"
    directory.mkdir(exist_ok=True)
    (directory / "mod.py").write_text("def check_one(ctx):\n    return None\n")
    paths = []
    for name, data in zip("stuv", files):
        path = directory / f"{name}.toml"
        path.write_bytes(data if isinstance(data, bytes) else tomli_w.dumps(data).encode())
        paths.append(path)
    return build_catalog(directory, tmp_path, paths, reads)


def refusal(tmp_path, *files) -> str:
    with pytest.raises(CatalogError) as caught:
        build(tmp_path, *files)
    return str(caught.value)


def test_a_good_set_file_builds_its_set_and_exercise(tmp_path):
    reads = {}
    built = build(tmp_path, set_file(), reads=reads)
    [group] = built.sets
    assert (group.id, group.title, group.order, group.summary, [e.id for e in group.exercises]) == \
        ("s", "Set S", 3, "what it is", ["ex-one"])
    ex = built.get("ex-one")
    assert (ex.fault, ex.observe, ex.tolerance, ex.timeout_s, ex.time_limit_s, ex.budget_s) == \
        (None, "clean", 0.0, 0.0, 30.0, 1.0)
    module = tmp_path / "exercises" / "mod.py"
    assert reads[module] == cat.text_digest(module.read_text())
    assert reads[tmp_path / "exercises" / "s.toml"] == cat.text_digest((tmp_path / "exercises" / "s.toml").read_text())


@pytest.mark.parametrize("top, sentence", [
    ({"zeta": 1, "alpha": 2}, "s.toml: unknown top-level key 'alpha'; allowed: format_version, [set], [[exercise]], "
                              "[[fault]]"),
    ({"format_version": 2}, "s.toml: format_version must be 1, found 2"),
    ({"format_version": None}, "s.toml: format_version must be 1, found None"),
    ({"set": None}, "s.toml: missing the [set] table (id, title, order, summary)"),
    ({"exercise": {"id": "x"}}, "s.toml: 'exercise' must be an array of tables ([[exercise]])"),
    ({"exercise": [1, 2]}, "s.toml: exercise #1 must be a table"),
    ({"exercise": [{"title": "no id"}]}, "s.toml: exercise '#1': missing key 'id'")])
def test_a_wrong_set_file_is_one_sentence_naming_the_file(tmp_path, top, sentence):
    data = set_file(**{k: v for k, v in top.items() if v is not None})
    for k, v in top.items():
        if v is None:
            data.pop(k)
    assert refusal(tmp_path, data) == sentence


def test_a_set_without_exercises_is_an_empty_set(tmp_path):
    data = set_file()
    data.pop("exercise")
    assert build(tmp_path, data).sets[0].exercises == ()


def test_a_set_file_too_large_or_not_utf8_is_refused(tmp_path, monkeypatch):
    text = tomli_w.dumps(set_file()).encode()
    monkeypatch.setattr(cat, "MAX_CATALOG_BYTES", len(text))
    build(tmp_path, text)  # exactly the cap: read
    monkeypatch.setattr(cat, "MAX_CATALOG_BYTES", len(text) - 1)
    assert refusal(tmp_path, text) == f"s.toml: the file is larger than {len(text) - 1} bytes; split it"
    monkeypatch.undo()
    assert refusal(tmp_path, text.replace(b'"T"', b'"\xff"')) == \
        "s.toml: cannot read the file (UnicodeDecodeError); check it is UTF-8 text"


def test_an_id_seen_in_an_earlier_file_names_that_file(tmp_path):
    other = set_file(exercise(set="t"))
    other["set"] = {**other["set"], "id": "t"}
    assert refusal(tmp_path, set_file(), other) == "t.toml: exercise 'ex-one': duplicate id, already defined in s.toml"


def test_a_set_id_that_is_also_an_exercise_id_is_refused(tmp_path):
    assert refusal(tmp_path, set_file(exercise(id="s"))) == \
        "s.toml: exercise 's': its id is also a set's id; rename one of them"


def test_a_sets_primer_is_read_stripped_and_may_be_left_out(tmp_path):
    with_primer = set_file()
    with_primer["set"] = {**with_primer["set"], "primer": "\nWhat idea, which section, what to predict.\n"}
    assert build(tmp_path, with_primer).get_set("s").primer == "What idea, which section, what to predict."
    assert build(tmp_path, set_file()).get_set("s").primer == ""


@pytest.mark.parametrize("changes, sentence", [
    ({"id": "Ex_One"}, "key 'id' must be kebab-case (a-z, 0-9, single hyphens)"),
    ({"set": "other"}, "key 'set' is 'other' but the file's [set] id is 's'"),
    ({"choices": [{"id": "a"}, {"id": "b", "text": "B"}]}, "key 'choices' must hold tables with exactly id and text "
                                                           "strings"),
    ({"choices": [{"id": "a", "text": "A", "more": "x"}, {"id": "b", "text": "B"}]},
     "key 'choices' must hold tables with exactly id and text strings"),
    ({"choices": [{"id": "a", "text": ""}, {"id": "b", "text": "B"}]},
     "key 'choices' must hold tables with exactly id and text strings"),
    ({"hints": ["h1", " "]}, "key 'hints' must hold at least two non-empty strings (a nudge, then the mechanism)"),
    ({"hints": ["h1"]}, "key 'hints' must hold at least two non-empty strings (a nudge, then the mechanism)"),
    ({"observe": "sometimes"}, "key 'observe' must be faulted, clean or both"),
    ({"observe": "faulted"}, "key 'observe' is 'faulted' but the exercise has no fault"),
    ({"budget_s": 0}, "key 'budget_s' must be positive"),
    ({"check": "mod.1x"}, "key 'check' must look like set.function, found 'mod.1x'"),
    ({"check": "1x.fn"}, "key 'check' must look like set.function, found '1x.fn'"),
    ({"check": "nomod.fn"}, "key 'check' names module 'nomod', but exercises/nomod.py does not exist"),
    ({"check": "mod.other"}, "key 'check' names 'mod.other', but exercises/mod.py defines no function 'other'"),
    ({"fault": "missing"}, "key 'fault' names 'missing', which no [[fault]] table defines")])
def test_a_wrong_exercise_is_one_sentence_naming_the_file_the_exercise_and_the_key(tmp_path, changes, sentence):
    ex_id = changes.get("id", "ex-one")
    assert refusal(tmp_path, set_file(exercise(**changes))) == f"s.toml: exercise {ex_id!r}: {sentence}"


@pytest.mark.parametrize("fault", ["", "none"])
def test_an_empty_or_none_fault_is_no_fault(tmp_path, fault):
    ex = build(tmp_path, set_file(exercise(fault=fault))).get("ex-one")
    assert (ex.fault, ex.observe) == (None, "clean")


def test_read_values_take_the_dataclasss_types_and_the_kind_its_keys(tmp_path):
    entry = exercise(kind="list", choices=None, answer_length=3, answer_items="number", timeout_s=5, tolerance=1)
    ex = build(tmp_path, set_file(entry)).get("ex-one")
    assert (ex.timeout_s, ex.time_limit_s, ex.tolerance, ex.kind.length, ex.kind.items, ex.kind.tolerance) == \
        (5.0, 5.0, 1.0, 3, "number", 1.0)
    assert ex.parse_answer("1 2 3") == [1.0, 2.0, 3.0]
    changed = dataclasses.replace(ex, tolerance=0.5)  # a kind already made is made again with the new keys
    assert (changed.kind.tolerance, changed.kind.length) == (0.5, 3)


def test_an_exercise_gives_its_seed_its_choices_and_its_fault(tmp_path):
    built = build(tmp_path, set_file(exercise(), exercise(id="ex-two", seed_per_attempt=True)))
    one, two = built.get("ex-one"), built.get("ex-two")
    assert (one.seed_for(4), two.seed_for(4), two.seed_for(0)) == (0, 4, 0)
    assert one.to_dict()["choices"] == [{"id": "a", "text": "A"}, {"id": "b", "text": "B"}]
    assert one.parse_answer("b") == "b" and built.fault_of(one) is None


def test_an_unknown_id_or_set_names_close_ones_or_the_sets(tmp_path):
    ids = ("ex-one", "ex-two", "ex-three", "ex-four", "ex-onf", "ex-ond")
    other = set_file(exercise(id="ex-t", set="t"))
    other["set"] = {**other["set"], "id": "t", "order": 4}
    built = build(tmp_path, set_file(*(exercise(id=i) for i in ids)), other)
    with pytest.raises(KeyError) as caught:
        built.get("ex-on")
    assert caught.value.args[0] == "there is no exercise 'ex-on'; did you mean ex-onf, ex-one, ex-ond?"  # three at most
    with pytest.raises(KeyError) as caught:
        built.get("tw")  # half alike ex-two: close enough to name
    assert caught.value.args[0] == "there is no exercise 'tw'; did you mean ex-two?"
    with pytest.raises(KeyError) as caught:
        built.get("zzz")
    assert caught.value.args[0] == "there is no exercise 'zzz'; run 'tutor list' to see every id."
    assert built.get_set("s").id == "s"
    with pytest.raises(KeyError) as caught:
        built.get_set("q")
    assert caught.value.args[0] == "there is no set 'q'; the sets are s, t."


def test_a_text_digest_is_blake2b_of_20_bytes_of_its_utf8_surrogates_kept():
    assert cat.text_digest("a\udcff") == hashlib.blake2b(b"a\xed\xb3\xbf", digest_size=20).hexdigest()
    assert len(cat.text_digest("")) == 40


def test_a_check_module_that_is_not_utf8_is_named(tmp_path):
    (tmp_path / "exercises").mkdir()
    (tmp_path / "exercises" / "mod.py").write_bytes(b"def check_one(ctx):\n    return '\xff'\n")
    path = tmp_path / "exercises" / "s.toml"
    path.write_text(tomli_w.dumps(set_file()))
    with pytest.raises(CatalogError) as caught:
        build_catalog(tmp_path / "exercises", tmp_path, [path])
    assert str(caught.value) == "s.toml: exercise 'ex-one': exercises/mod.py cannot be read as UTF-8 text"
