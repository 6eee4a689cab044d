"""Answers: lenient in form, strict in meaning; a bad answer names the format."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exercises.answers import KINDS, AnswerError, answer_format, matches, parse, show

CHOICES = [("a", "first"), ("b", "second")]


@pytest.mark.parametrize("text", ["(3, 3)", "3,3", "3x3", "[3, 3]", "torch.Size([3, 3])", " 3 × 3 "])
def test_shape_spellings(text):
    assert parse("shape", text) == [3, 3]


def test_shape_scalar_and_one_axis():
    assert parse("shape", "()") == []
    assert parse("shape", "(5,)") == [5]
    assert show("shape", [5]) == "(5,)"
    assert show("shape", [3, 3]) == "(3, 3)"


@pytest.mark.parametrize("text, value", [("2", 2.0), ("0.908918", 0.908918), ("804,224", 804224.0),
                                         ("804_224", 804224.0), ("1/3", 1 / 3), ("-0.1", -0.1), ("1e-3", 1e-3)])
def test_numbers(text, value):
    assert parse("number", text) == pytest.approx(value)


def test_number_tolerance():
    assert matches("number", 2.0000001, 2.0, 1e-6)
    assert not matches("number", 2.1, 2.0, 1e-6)
    assert not matches("number", 2.0, float("nan"), 1.0)


@pytest.mark.parametrize("text, value", [("yes", True), ("No", False), ("TRUE", True), ("n", False), ("y", True)])
def test_bools(text, value):
    assert parse("bool", text) is value


def test_errors_and_lists_and_choices():
    assert parse("error", "RuntimeError") == "RuntimeError"
    assert parse("error", "torch.OutOfMemoryError") == "OutOfMemoryError"
    assert parse("error", "none") == "none"
    assert matches("error", "runtimeerror", "RuntimeError")
    assert parse("list", "[0, 3, 1, 4, 2, 5]") == [0, 3, 1, 4, 2, 5]
    assert parse("list", "yes no yes") == [True, False, True]
    assert matches("list", [1 / 3, -2 / 3], [0.333333, -0.666667], 1e-5)
    assert not matches("list", [True, False], [True, True])
    assert not matches("list", [1.0], [True])
    assert parse("choice", "B", CHOICES) == "b"


@pytest.mark.parametrize("kind, text", [("shape", "three by three"), ("number", "lots"), ("bool", "maybe"),
                                        ("error", "it breaks!"), ("choice", "z"), ("list", "[1, @]"),
                                        ("number", ""), ("bool", "   "), ("number", "inf"), ("number", "1/0")])
def test_unreadable_answers_name_the_format(kind, text):
    with pytest.raises(AnswerError) as err:
        parse(kind, text, CHOICES)
    assert answer_format(kind, CHOICES) in str(err.value)


def _fuzz_one(kind, text):
    try:
        value = parse(kind, text, CHOICES)
    except AnswerError as exc:
        message = str(exc)
        assert message and "\n" not in message and "expected" in message
        return
    # whatever parses must compare and show without raising
    matches(kind, value, value, 1e-6)
    assert isinstance(show(kind, value), str)


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(KINDS), text=st.text(max_size=60))
def test_fuzz_parser_small(kind, text):
    _fuzz_one(kind, text)


@pytest.mark.slow
@settings(max_examples=10_000, deadline=None)
@given(text=st.text(max_size=80))
@pytest.mark.parametrize("kind", KINDS)
def test_fuzz_parser_long(kind, text):
    _fuzz_one(kind, text)


def test_fuzz_found_superscript_digits_are_not_a_shape():
    with pytest.raises(AnswerError):
        parse("shape", "¹")


@pytest.mark.parametrize("text", ["x3", "5)", "(3,3", "(", "[3, 3)", "3,,3", ",3", "(3)(3)"])
def test_malformed_shapes_are_refused(text):
    with pytest.raises(AnswerError):
        parse("shape", text)


@pytest.mark.parametrize("text", ["[1, 2", "1,,2", "(1, 2]", ",1"])
def test_malformed_lists_are_refused(text):
    with pytest.raises(AnswerError):
        parse("list", text)


def test_one_axis_shapes_and_trailing_commas():
    assert parse("shape", "5,") == [5] and parse("shape", "(5, )") == [5] and parse("shape", "[]") == []
