"""The list answer kind, rule by rule: what a set file may say of it, how a learner's list reads, how it agrees.

Every expected value is worked out from the rules in tutor/model/answers/lists.py and base.py: items split on
commas, semicolons or spaces inside one pair of brackets; yes/no words, numbers and names; a per-position
``answer_items`` fixes the count.
"""

from __future__ import annotations

import pytest

from tutor.model.answers.base import AnswerError, KindError, validate
from tutor.model.answers.lists import List, _item_equal, _list_format, _list_parts, _read_list, _typed_item


# --- what a set file may say ------------------------------------------------------------------------------

@pytest.mark.parametrize("entry", [
    {"kind": "list"}, {"kind": "list", "answer_length": 1}, {"kind": "list", "answer_items": "number"},
    {"kind": "list", "answer_items": ["number", "bool", "error", "both|saved|neither"], "answer_length": 4},
    {"kind": "list", "answer_items": "a|b", "answer_length": 7}, {"kind": "list", "answer_items": ["bool"]}])
def test_a_list_entry_may_give_a_length_and_item_kinds(entry):
    validate(entry)


@pytest.mark.parametrize("entry, sentence", [
    ({"answer_length": 0}, "key 'answer_length' is for kind list only and must be at least 1"),
    ({"answer_length": -3, "answer_items": "number"}, "key 'answer_length' is for kind list only and must be at least 1"),
    ({"answer_items": []}, "key 'answer_items' is for kind list only and cannot be empty"),
    ({"answer_items": ""}, "answer_items entry '' must be number, bool, error or words written like "
                           "'both|saved|neither'"),
    ({"answer_items": "word"}, "answer_items entry 'word' must be number, bool, error or words written like "
                               "'both|saved|neither'"),
    ({"answer_items": ["number", 3]}, "answer_items entry 3 must be number, bool, error or words written like "
                                      "'both|saved|neither'"),
    ({"answer_items": ["number", "NUMBER"]}, "answer_items entry 'NUMBER' must be number, bool, error or words "
                                             "written like 'both|saved|neither'"),
    ({"answer_items": ["number", "bool"], "answer_length": 3}, "answer_items lists 2 kinds but answer_length is 3")])
def test_a_wrong_list_entry_is_one_sentence_naming_the_key(entry, sentence):
    with pytest.raises(KindError) as caught:
        List.validate(entry)
    assert str(caught.value) == sentence


def test_list_keys_in_an_entry_of_another_kind_are_refused_with_the_lists_sentence():
    with pytest.raises(KindError, match="^key 'answer_items' is for kind list only and cannot be empty$"):
        validate({"kind": "number", "answer_items": "number"})


def test_a_list_is_configured_with_one_item_kind_or_one_per_position_which_fixes_the_count():
    assert List.configured(items=["number", "bool"]) == List(length=2, items=("number", "bool"))
    assert List.configured(items=("number",), length=1) == List(length=1, items=("number",))
    assert List.configured(items="number") == List(items="number")
    assert List.configured(length=3, tolerance=1) == List(tolerance=1.0, length=3)
    assert List.configured().items is None and isinstance(List.configured().tolerance, float)


# --- how a list reads ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw, value", [
    ("[1, 2, 3]", [1.0, 2.0, 3.0]), ("(yes; no)", [True, False]), ("1 2", [1.0, 2.0]), ("[]", []), ("", []),
    ("[true, f, y, n]", [True, False, True, False]), ("[1, 0]", [1.0, 0.0]), ("[Yes., no!]", [True, False]),
    ("[TypeError, a.b-c, x_1]", ["TypeError", "a.b-c", "x_1"]), ("torch.Size([2, 3])", [2.0, 3.0]),
    ("[1,,2]", None), ("[1, 2,]", None), ("[1, 2", None), ("[a b, #]", None), ("[1/4, 1,5]", [0.25, 1.0, 5.0])])
def test_a_list_reads_items_inside_one_pair_of_brackets(raw, value):
    assert _read_list(raw) == value


@pytest.mark.parametrize("raw, parts", [("[1, 2;3  4]", ["1", "2", "3", "4"]), ("()", []), ("x", ["x"])])
def test_a_lists_items_as_typed_are_split_on_commas_semicolons_and_spaces(raw, parts):
    assert _list_parts(raw) == parts


def test_a_list_answer_with_a_full_stop_reads_without_it():
    assert List().parse("[1, 2].") == [1.0, 2.0]
    assert List(items="error").parse("TypeError, none.") == ["TypeError", "none"]
    assert List(items="number").parse("1, 2 .") == [1.0, 2.0]
    for typed, shown in (("2.", "2"), ("12.", "12"), ("[12] .", "12")):  # the item is named as typed, less the stop
        with pytest.raises(AnswerError) as caught:
            List(items="bool").parse(typed)
        assert str(caught.value).startswith(f"item 1 ({shown}) should be yes or no;")


def test_nested_brackets_are_refused_with_how_to_write_the_list():
    with pytest.raises(AnswerError) as caught:
        List(length=4).parse("[[1, 2], [3, 4]]")
    assert str(caught.value) == ("cannot read '[[1, 2], [3, 4]]': write the items as one flat list without inner "
                                 "brackets, row by row; expected a list of 4 items separated by commas or spaces")
    for unbalanced in ("[1, 2", "[X, 1"):  # one bracket: unbalanced, not nested
        with pytest.raises(AnswerError) as caught:
            List().parse(unbalanced)
        assert str(caught.value) == f"cannot read {unbalanced!r} as list; expected a list of items separated by " \
                                    "commas or spaces"


def test_a_list_of_the_wrong_length_says_how_many_items_it_has():
    with pytest.raises(AnswerError, match="^the answer has 1 item; expected a list of 2 numbers"):
        List(length=2, items="number").parse("[1]")
    with pytest.raises(AnswerError, match="^the answer has 3 items; expected a list of 2 numbers"):
        List(length=2, items="number").parse("[1, 2, 3]")


@pytest.mark.parametrize("value, kind, item", [
    (1.0, "number", 1.0), (True, "number", None), ("x", "number", None), (True, "bool", True), (1.0, "bool", True),
    (0.0, "bool", False), (2.0, "bool", None), ("yes", "bool", None), (False, "error", "none"),
    ("torch.OutOfMemoryError", "error", "OutOfMemoryError"), ("oops", "error", None), (1.0, "error", None),
    ("Saved", "both|saved", "saved"), ("moved", "both|saved", None), (1.0, "both|saved", None)])
def test_each_item_is_read_as_its_kind(value, kind, item):
    assert _typed_item(value, kind) == item


def test_an_item_of_the_wrong_kind_names_its_position_and_what_it_should_be():
    with pytest.raises(AnswerError) as caught:
        List(items=("number", "bool")).parse("[1, maybe]")
    assert str(caught.value) == ("item 2 (maybe) should be yes or no; expected a list of 2 items, in order: a number; "
                                 "yes or no")


# --- how a list is described ------------------------------------------------------------------------------

@pytest.mark.parametrize("length, items, phrase", [
    (None, None, "a list of items separated by commas or spaces"),
    (3, None, "a list of 3 items separated by commas or spaces"),
    (None, "number", "a list of numbers separated by commas or spaces, e.g. 1, 2, …"),
    (2, "bool", "a list of 2 yes/no answers separated by commas or spaces, e.g. yes, no"),
    (3, "error", "a list of 3 exception names or none separated by commas or spaces, e.g. none, TypeError, …"),
    (None, ("number", "number"), "a list of 2 numbers separated by commas or spaces, e.g. 1, 2"),
    (None, ("bool", "error"), "a list of 2 items, in order: yes or no; an exception name or none"),
    (None, ("a|b", "a|b", "a|b"), "a list of 3 words, each one of a, b"),
    (4, "x|y", "a list of 4 words, each one of x, y"),
    (None, ("number", "number", "bool"), "a list of 3 items, in order: a number; a number; yes or no"),
    (None, ("number",), "a list of 1 number, e.g. 1"), (1, "bool", "a list of 1 yes/no answer, e.g. yes"),
    (1, "error", "a list of 1 exception name or none, e.g. none"), (None, ("a|b",), "a list of 1 word, one of a, b")])
def test_a_list_is_described_by_its_count_and_item_kinds(length, items, phrase):
    assert _list_format(length, items) == phrase


def test_the_hint_without_length_or_items_is_the_plain_one():
    assert List().format_hint() == "a list of items separated by commas or spaces"
    assert List(length=2).format_hint() == "a list of 2 items separated by commas or spaces"


# --- how a list agrees ------------------------------------------------------------------------------------

@pytest.mark.parametrize("p, o, equal", [
    (True, True, True), (True, False, False), (True, 1.0, False), (1.0, True, False), (1, 1.0, True),
    (1.0, 1.05, True), (1.0, 1.2, False), ("TypeError", "typeerror", True), ("a", "b", False), (False, 0, False)])
def test_items_agree_as_numbers_within_the_tolerance_bools_only_with_bools_and_words_in_any_case(p, o, equal):
    assert _item_equal(p, o, 0.1) is equal


def test_a_list_agrees_only_with_a_list_of_the_same_length_item_by_item():
    kind = List(tolerance=0.0)
    assert kind.agrees([1.0, True], [1.0, True]) is True
    assert kind.agrees([1.0, True], [1.0, False]) is False
    assert kind.agrees([1.0], [1.0, 2.0]) is False
    assert kind.agrees([1.0], (1.0,)) is False
    assert kind.show_observation([1.0, 0.5, True, False, "x", 3]) == "[1, 0.5, yes, no, x, 3]"
    assert kind.show_observation("oops") == "oops"
