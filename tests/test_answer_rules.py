"""The answer kinds' smaller rules, each pinned where it lives: the registry, the readers of numbers, yes/no
and exception names, choices, shapes and ranges (tutor/model/answers/). Values follow from the rules by hand."""

from __future__ import annotations

import pytest

from tutor.model.answers import kinds, lists, range as ranges
from tutor.model.answers.base import (KINDS, AnswerError, KindError, kind_class, make, read_bool, read_error,
                                      read_number, show_observed)


def test_every_kind_is_registered_under_its_name_and_made_with_no_tolerance_by_default():
    assert set(KINDS) >= {"choice", "shape", "number", "bool", "list", "range"}
    assert all(KINDS[name].name == name for name in KINDS)
    assert kind_class("list") is lists.List and kind_class("range") is ranges.Range
    assert make("number").tolerance == 0.0 and make("choice", choices=[("a", "x"), ("b", "y")]).tolerance == 0.0
    assert kinds.Number.configured().tolerance == 0.0 and kinds.Choice.configured().tolerance == 0.0
    assert make("list", items=["number", "bool"]).length == 2
    with pytest.raises(KindError, match="^key 'kind' must be one of choice, "):
        kind_class("essay")


def test_an_observation_is_shown_as_its_kind_writes_it():
    assert show_observed("shape", [2, 3]) == "(2, 3)"
    assert show_observed("bool", True) == "yes"


@pytest.mark.parametrize("raw, number", [("1__024", 1024.0), ("1_024", 1024.0), ("1 024", 1024.0),
                                         ("1,024", 1024.0), ("1/4", 0.25), ("1/0", None), ("1/2/4", None)])
def test_a_number_reads_as_typed_with_separators_and_fractions(raw, number):
    assert read_number(raw) == number


@pytest.mark.parametrize("raw, value", [("Yes.", True), ("no!", False), ("nox", None), ("x", None), ("T", True)])
def test_yes_and_no_read_in_any_case_without_a_final_stop(raw, value):
    assert read_bool(raw) is value


@pytest.mark.parametrize("raw, name", [("ValueError:", "ValueError"), ("ValueErrorX", None), ("torch.a.b.OutOfMemoryError",
                                                                                              "OutOfMemoryError"),
                                       ("no error", "none"), ("Oops", None)])
def test_an_exception_is_read_by_its_class_name(raw, name):
    assert read_error(raw) == name


# --- choices ------------------------------------------------------------------------------------------------

CHOICE = kinds.Choice(choices=(("a", "one"), ("b", "two")))


def test_a_choice_entry_needs_two_choices():
    for entry in ({}, {"choices": [["a", "x"]]}):
        with pytest.raises(KindError) as caught:
            kinds.Choice.validate(entry)
        assert str(caught.value) == "key 'choices' needs at least two choices for kind choice"
    kinds.Choice.validate({"choices": [["a", "x"], ["b", "y"]]})


def test_a_choices_text_is_found_by_its_id():
    assert (CHOICE.choice_text("b"), CHOICE.choice_text("z"), CHOICE.choice_text(1), CHOICE.choice_text(None),
            CHOICE.choice_text([1])) == ("two", None, None, None, None)


def test_a_choice_reads_with_a_closing_bracket_or_full_stop_and_nothing_else():
    assert (CHOICE.parse("b)"), CHOICE.parse("B."), CHOICE.parse("b ."), CHOICE.parse("2")) == ("b", "b", "b", "b")
    with pytest.raises(AnswerError):
        CHOICE.parse("bx")


# --- shapes and yes/no --------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw, shape", [("(5,)", [5]), ("2x3", [2, 3]), ("2x", None), ("(2, 3,)", [2, 3]),
                                        ("()", []), ("(,)", None)])
def test_a_shape_takes_the_trailing_comma_of_a_one_axis_shape_only(raw, shape):
    assert kinds.Shape().read(raw) == shape


def test_shapes_and_yes_no_show_anything_else_as_text():
    assert kinds.Shape().show_observation("no shape") == "no shape"
    assert kinds.Bool().show_observation("maybe") == "maybe"


# --- ranges -------------------------------------------------------------------------------------------------

RANGE = ranges.Range(tolerance=0.25)  # at most 0.5 wide


def test_a_range_wider_than_twice_the_tolerance_is_no_prediction():
    assert RANGE.parse("1 to 1.5") == (1.0, 1.5)
    with pytest.raises(AnswerError) as caught:
        RANGE.parse("0 to 0.6")
    assert str(caught.value) == ("the range 0 to 0.6 is 0.6 wide; expected a range of numbers such as 0.2 to 0.3, low "
                                 "end first, at most 0.5 wide (both ends included)")
    with pytest.raises(AnswerError, match="^the range 0.1 to 0.8 is 0.7 wide;"):
        RANGE.parse("0.1 to 0.8")


@pytest.mark.parametrize("raw, value", [("[10, 10.25]", (10.0, 10.25)), ("(0.2, 0.3)", (0.2, 0.3)),
                                        ("0.2 to 0.2", (0.2, 0.2)), ("between 1 and 1.5", (1.0, 1.5))])
def test_a_range_reads_in_brackets_or_words_both_ends_included(raw, value):
    assert RANGE.parse(raw) == value


@pytest.mark.parametrize("raw", ["(0.2 to 0.3", "X0.2, 0.3]", "[0.2, 0.3X", "[1, 2, 3]"])
def test_a_range_with_one_bracket_or_three_ends_does_not_read(raw):
    with pytest.raises(AnswerError) as caught:
        RANGE.parse(raw)
    assert str(caught.value).startswith(f"cannot read {raw!r} as a range;")


def test_a_range_from_high_to_low_says_to_write_the_low_end_first():
    raw = "between 900000000000000000000000000000000000000 and 1.000000000000000000000"
    with pytest.raises(AnswerError) as caught:
        ranges.Range(tolerance=1e40).parse(raw)
    assert str(caught.value) == (f"the range {raw[:60]!r} runs from high to low; write the low end first, e.g. 1 "
                                 "to 9e+38")
