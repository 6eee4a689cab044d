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
    assert matches(kind, value, value, 1e-6)  # a value always matches itself
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


def test_error_answers_must_look_like_exception_names():
    for name in ("Banana", "gradient", "torch.nn"):
        with pytest.raises(AnswerError):
            parse("error", name)
    for name in ("KeyError", "MyException", "UserWarning", "KeyboardInterrupt", "StopIteration", "SystemExit"):
        assert parse("error", name) == name


@pytest.mark.parametrize("items, text, value", [
    ("number", "1 0 1", [1.0, 0.0, 1.0]),
    ("bool", "yes, no, 1", [True, False, True]),
    ("error", "none, no, torch.KeyError", ["none", "none", "KeyError"]),
    ("both|saved|neither", "Both, neither, saved", ["both", "neither", "saved"]),
    (["bool", "error", "number"], "no, ValueError, 7", [False, "ValueError", 7.0]),
])
def test_list_items_are_read_as_their_kind(items, text, value):
    assert parse("list", text, length=3, items=items) == value


@pytest.mark.parametrize("items, text, position", [
    ("number", "a b c", 1), ("bool", "yes no maybe", 3), ("error", "none Banana KeyError", 2),
    ("both|saved|neither", "both moved saved", 2), (["bool", "error", "number"], "yes 7 7", 2),
])
def test_list_items_of_the_wrong_kind_are_refused_by_position(items, text, position):
    with pytest.raises(AnswerError) as err:
        parse("list", text, length=3, items=items)
    assert f"item {position} " in str(err.value) and "expected a list of 3" in str(err.value)


def test_list_format_examples_are_generic_and_count_the_items():
    assert answer_format("list", None, 6, "number") == \
        "a list of 6 numbers separated by commas or spaces, e.g. 1, 2, …"
    assert answer_format("list", None, None, ["bool", "error"]) == \
        "a list of 2 items, in order: yes or no; an exception name or none"
    assert parse("list", "yes no", items=["bool", "error"]) == [True, "none"]
    with pytest.raises(AnswerError, match="has 3 items"):
        parse("list", "yes no no", items=["bool", "error"])


def test_nested_lists_get_a_flattening_hint():
    with pytest.raises(AnswerError, match="one flat list"):
        parse("list", "[[1, 0, 1], [0, 2, 0]]", length=6, items="number")


def test_a_choice_key_shown_in_the_tui_also_reads_headless():
    words = [("task", "TASK"), ("objective", "OBJECTIVE"), ("capability", "CAPABILITY")]
    assert parse("choice", "2", words) == "objective" and parse("choice", "capability", words) == "capability"
    letters = [("a", "x"), ("b", "y"), ("c", "z"), ("d", "w"), ("e", "v")]
    assert parse("choice", "e", letters) == "e" and parse("choice", "5", letters) == "e"


def test_refusals_name_the_full_format_echo_what_was_typed_and_count_in_english():
    with pytest.raises(AnswerError, match="empty; expected a list of 6 numbers"):
        parse("list", "  ", length=6, items="number")
    with pytest.raises(AnswerError, match=r"item 1 \(true\) should be a number"):
        parse("list", "true 0", length=2, items="number")
    with pytest.raises(AnswerError, match="has 1 item;"):
        parse("list", "7", length=2, items="number")
    assert parse("list", "yes runtimeerror none", items=["bool", "error", "error"]) == [True, "runtimeerror", "none"]


def test_a_choice_format_names_the_keys_when_they_differ_from_the_ids():
    words = [("task", "TASK"), ("none", "none of them")]
    assert answer_format("choice", words) == "one choice id or its key (task = 1, none = 2)"
    assert answer_format("choice", [("a", "x"), ("b", "y")]) == "one choice id (a, b)"


def test_a_full_stop_ends_any_answer_and_positions_pick_any_choice():
    assert parse("list", "saved, moved.", length=2, items="both|saved|moved|neither") == ["saved", "moved"]
    assert parse("shape", "(3, 3).") == [3, 3] and parse("error", "ValueError.") == "ValueError"
    assert parse("number", "0.5.") == 0.5 and parse("text", "as it is.") == "as it is."
    letters = [("a", "x"), ("b", "y"), ("c", "z"), ("d", "w")]
    assert parse("choice", "1", letters) == "a" and parse("choice", "4", letters) == "d"
    with pytest.raises(AnswerError):
        parse("choice", "5", letters)
