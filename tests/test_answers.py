"""Answers: lenient in form, strict in meaning; a bad answer names the format."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tutor.model.answers import KINDS as REGISTERED
from tutor.model.answers import AnswerError, KindError, make
from tutor.model.answers.lists import item_kinds

CHOICES = [("a", "first"), ("b", "second")]
KINDS = list(REGISTERED)


# The kinds as these tests read them: by name, configured as an exercise configures them.
def parse(name, text, choices=None, length=None, items=None):
    return make(name, choices=choices or (), length=length, items=items).parse(text)


def answer_format(name, choices=None, length=None, items=None):
    return make(name, choices=choices or (), length=length, items=items).format_hint()


def matches(name, prediction, observation, tolerance=0.0):
    return make(name, tolerance=tolerance).agrees(prediction, observation)


def show(name, value):
    return make(name).show_observation(value)


def choice_keys(name, ids):
    return make(name, choices=[(i, i) for i in ids]).keys()


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
    if kind == "range":  # a range holds its own ends
        assert matches(kind, value, value[0]) and matches(kind, value, value[1])
    else:
        assert matches(kind, value, value, 1e-6)  # a value always matches itself
    assert isinstance(show(kind, value), str)
    assert isinstance(make(kind, choices=CHOICES).show_prediction(value), str)


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


def test_a_shape_matches_only_with_the_same_sizes_in_the_same_order():
    assert matches("shape", [128, 512], [128, 512]) and matches("shape", [128, 512], (128, 512))
    assert not matches("shape", [128, 512], [512, 128])  # a transpose is another shape
    assert not matches("shape", [128, 512], [128, 512, 1]) and not matches("shape", [], [1])
    assert not matches("shape", [128, 512], "(128, 512)")  # an observation that is not a shape matches nothing
    assert not matches("shape", [128, 512], None)


def test_number_tolerance_is_absolute_not_relative():
    assert not matches("number", 1000.75, 1000.0, 0.5)  # 0.75 off; relative to 1000 it would pass
    assert matches("number", 1000.5, 1000.0, 0.5) and matches("number", 999.5, 1000.0, 0.5)  # the bound is inclusive
    assert not matches("number", 0.0, 1e-6, 0.0) and matches("number", 3.0, 3.0, 0.0)
    assert not matches("number", 1.0, True, 1.0)  # a yes/no observation is not a number


# --- known values for each phrase, reader, comparer and display ----------------
# Each pins a behaviour that a mutation (scripts/mutation.sh) could change unseen.

@pytest.mark.parametrize("kind, phrase", [
    ("shape", "a shape such as (2, 7), 2x7, (7,) or () for a scalar"),
    ("number", "a number such as 7, 0.25, 1,024 or 1/4"),
    ("bool", "yes or no"),
    ("error", "an exception class name as Python prints it (SomethingError), or none if nothing is raised"),
    ("list", "a list of items separated by commas or spaces"),
    ("text", "any non-empty text"),
])
def test_each_kind_names_its_format_in_one_phrase(kind, phrase):
    assert answer_format(kind) == phrase


@pytest.mark.parametrize("length, items, phrase", [
    (2, "number", "a list of 2 numbers separated by commas or spaces, e.g. 1, 2"),
    (3, "bool", "a list of 3 yes/no answers separated by commas or spaces, e.g. yes, no, …"),
    (None, "error", "a list of exception names or none separated by commas or spaces, e.g. none, TypeError, …"),
    (None, ["bool", "bool"], "a list of 2 yes/no answers separated by commas or spaces, e.g. yes, no"),
    (2, "saved|moved", "a list of 2 words, each one of saved, moved"),
    (None, ["number", "saved|moved"], "a list of 2 items, in order: a number; one of saved, moved"),
    (4, None, "a list of 4 items separated by commas or spaces"),
])
def test_a_list_format_counts_and_names_its_items(length, items, phrase):
    assert answer_format("list", None, length, items) == phrase


def test_choice_keys_are_letters_numbers_or_free_first_letters():
    assert choice_keys("bool", []) == ["y", "n"]
    assert choice_keys("choice", ["A", "b"]) == ["a", "b"]
    assert choice_keys("choice", ["a", "e"]) == ["1", "2"]  # e is the explain key, so both get numbers
    assert choice_keys("choice", ["ab", "cd"]) == ["1", "2"]
    ids = [f"c{i}" for i in range(10)] + ["apple", "avocado", "quit", "1x", "Kiwi"]
    # after ten numbers: a free first letter (lowercased), else no key (taken, an action key, a digit)
    assert choice_keys("choice", ids) == list("1234567890") + ["a", None, None, None, "k"]
    assert parse("choice", "k", [(i, i) for i in ids]) == "Kiwi" and parse("choice", "a", [(i, i) for i in ids]) == "apple"
    # a choice without a key is named alone in the format
    assert answer_format("choice", [(i, i) for i in ids]).endswith("c9 = 0, apple = a, avocado, quit, 1x, Kiwi = k)")


@pytest.mark.parametrize("text, value", [("b)", "b"), ("B.", "b"), ("(b", None)])
def test_a_choice_may_end_with_a_bracket_or_full_stop(text, value):
    if value is None:
        with pytest.raises(AnswerError):
            parse("choice", text, CHOICES)
    else:
        assert parse("choice", text, CHOICES) == value


def test_refusals_of_bad_input_name_the_exercise_format():
    words = [("task", "t"), ("none", "n")]
    expected = "expected one choice id or its key (task = 1, none = 2)"
    with pytest.raises(AnswerError, match=r"^the answer must be text; " + re.escape(expected) + "$"):
        parse("choice", 7, words)
    with pytest.raises(AnswerError, match=r"^the answer is empty; " + re.escape(expected) + "$"):
        parse("choice", " ", words)
    with pytest.raises(AnswerError, match=r"^the answer is too long or holds a NUL byte; " + re.escape(expected)):
        parse("choice", "task\x00", words)
    with pytest.raises(KindError, match=r"^key 'kind' must be one of choice, shape, number, "
                                        r"bool, error, text, list, range$"):
        parse("colour", "red")


def test_refusals_of_a_list_answer_give_its_count_and_item_kinds():
    expected = "expected a list of 2 numbers separated by commas or spaces, e.g. 1, 2"
    for text in (7, "1 \x00", "[1, @]"):
        with pytest.raises(AnswerError) as err:
            parse("list", text, length=2, items="number")
        assert str(err.value).endswith(expected)
    assert answer_format("number", None, 2, "number") == "a number such as 7, 0.25, 1,024 or 1/4"  # lists only
    with pytest.raises(ValueError, match="^1 item kinds for a list of 2 items$"):
        item_kinds(["bool"], 2)


def test_an_answer_may_be_2000_characters_long_but_not_longer():
    assert parse("text", "x" * 2000) == "x" * 2000
    with pytest.raises(AnswerError, match="too long"):
        parse("text", "x" * 2001)


def test_only_a_full_stop_after_an_answer_is_dropped():
    assert parse("text", ".") == "." and parse("list", "1 2 .", length=2) == [1.0, 2.0]
    assert parse("shape", "5.") == [5] and parse("text", "5.") == "5."
    with pytest.raises(AnswerError, match=r"cannot read '\.' as number"):
        parse("number", ".")


def test_the_echo_of_an_unreadable_answer_stops_at_60_characters():
    with pytest.raises(AnswerError) as err:
        parse("number", "z" * 70)
    assert f"cannot read {'z' * 60!r} as number" in str(err.value)


def test_the_flat_list_hint_is_for_nested_brackets_only():
    with pytest.raises(AnswerError, match="cannot read '\\[1, @\\]' as list"):
        parse("list", "[1, @]")
    with pytest.raises(AnswerError, match="one flat list"):
        parse("list", "(1 2) (3 4)")
    with pytest.raises(AnswerError) as err:
        parse("list", "[[" + "1, " * 30 + "]]")
    assert str(err.value).startswith(f"cannot read {('[[' + '1, ' * 30)[:60]!r}: write the items as one flat list")


@pytest.mark.parametrize("text, value", [
    ("1_000", 1000.0), ("1 000", 1000.0), ("-3/4", -0.75), ("2e3", 2000.0), ("1,000.5", 1000.5),
])
def test_number_spellings(text, value):
    assert parse("number", text) == value


@pytest.mark.parametrize("text", ["x/2", "2/x", "1/2/4", "1,00", "nan"])
def test_numbers_that_do_not_read_are_refused(text):
    with pytest.raises(AnswerError, match="as number"):
        parse("number", text)


@pytest.mark.parametrize("text, value", [("yes!", True), ("No!", False), ("f", False), ("t", True)])
def test_bool_spellings(text, value):
    assert parse("bool", text) is value


@pytest.mark.parametrize("text, value", [
    ("KeyError:", "KeyError"), ("no error", "none"), ("Nothing", "none"), ("No", "none"),
    ("torch.cuda.OutOfMemoryError", "OutOfMemoryError"),
])
def test_error_spellings(text, value):
    assert parse("error", text) == value


def test_list_items_keep_their_kind_and_words_lose_a_bang():
    assert parse("list", "yes! no 1 0 KeyError") == [True, False, 1.0, 0.0, "KeyError"]
    assert parse("list", "[]") == [] and parse("list", "1; 2") == [1.0, 2.0]
    assert parse("list", "1 0 1", items="bool") == [True, False, True]
    with pytest.raises(AnswerError, match=r"item 1 \(2\) should be yes or no"):
        parse("list", "2 0", items="bool")
    with pytest.raises(AnswerError, match=r"item 2 \(3\) should be an exception name or none"):
        parse("list", "none 3", items="error")


@pytest.mark.parametrize("text", ["5,", "(5, )", "[5,]"])
def test_a_one_axis_shape_keeps_its_one_size(text):
    assert parse("shape", text) == [5]


def test_a_trailing_comma_ends_a_shape_of_any_length_but_an_empty_size_is_refused():
    assert parse("shape", "2,3,") == [2, 3] and parse("shape", "(2, 3, 4)") == [2, 3, 4]
    assert parse("shape", "2X3") == [2, 3] and parse("shape", "[2 X 3]") == [2, 3]
    for text in ("(2,,)", "(,)", "(2,,3)", ","):
        with pytest.raises(AnswerError):
            parse("shape", text)


@pytest.mark.parametrize("kind, predicted, observed, agree", [
    ("list", [1.0], 1.0, False),                       # an observation that is not a list
    ("list", [1.0, 2.0], [1.0], False),
    ("list", [True], [True], True), ("list", [False], [True], False),
    ("list", [True], [1.0], False), ("list", [1.0], [True], False),  # a yes/no item is not a number
    ("list", ["keyerror"], ["KeyError"], True), ("list", ["x"], [1.0], False),
    ("list", [1.0], ["1"], False),
    ("error", "KeyError", None, False), ("error", "KeyError", "ValueError", False),
    ("text", " As It Is ", "as it is", True), ("text", "as it is", None, False), ("text", "a", "b", False),
    ("choice", "a", "a", True), ("choice", "a", "b", False),
    ("bool", True, True, True), ("bool", True, False, False),
])
def test_matching_by_kind(kind, predicted, observed, agree):
    assert matches(kind, predicted, observed, 0.0) is agree


def test_numbers_within_float_rounding_of_the_observation_agree():
    # the floor is 1e-12 of the observation (at least 1e-12): printing and reading a float loses no more
    assert matches("number", 1e15 + 100, 1e15) and not matches("number", 1e15 + 2000, 1e15)
    assert not matches("number", 1 + 1.5e-12, 1.0) and matches("number", 1 + 0.5e-12, 1.0)


@pytest.mark.parametrize("kind, value, shown", [
    ("shape", [5], "(5,)"), ("shape", [], "()"), ("shape", (2, 3), "(2, 3)"),
    ("bool", True, "yes"), ("bool", False, "no"),
    ("number", 1 / 3, "0.333333333333"), ("number", 7, "7"), ("number", 804224.0, "804224"), ("number", True, "True"),
    ("number", 1234567, "1234567"), ("number", 1234567.0, "1234567"), ("text", 1 / 3, "0.3333333333333333"),
    ("list", [True, False, 1.0, 0.5, "none"], "[yes, no, 1, 0.5, none]"),
    ("error", "KeyError", "KeyError"), ("text", "as it is", "as it is"), ("choice", "b", "b"),
    ("shape", None, "None"), ("list", "text", "text"),
])
def test_values_are_shown_as_a_learner_would_write_them(kind, value, shown):
    assert show(kind, value) == shown


# --- one class per kind: nothing outside tutor/model/answers switches on a kind's name ----------

def test_no_module_outside_the_answer_kinds_compares_a_kind_with_its_name():
    from pathlib import Path
    names = "|".join(REGISTERED)
    compared = re.compile(rf"""kind(\.name)?\s*(==|!=|\bin\b|\bnot in\b)\s*[(\[{{]?\s*["']({names})["']"""
                          rf"""|["']({names})["']\s*(==|!=)\s*\w*\.?kind\b""")
    root = Path(__file__).resolve().parents[1] / "tutor"
    found = [f"{path.relative_to(root.parent)}:{n}: {line.strip()}"
             for path in sorted(root.rglob("*.py")) if "answers" not in path.relative_to(root).parts
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
             if compared.search(line)]
    assert found == [], "ask the kind's methods instead:\n" + "\n".join(found)


def test_the_grep_above_sees_a_comparison():
    names = "|".join(REGISTERED)
    compared = re.compile(rf"""kind(\.name)?\s*(==|!=|\bin\b|\bnot in\b)\s*[(\[{{]?\s*["']({names})["']""")
    assert compared.search('if exercise.kind == "choice":') and compared.search('ex.kind not in ("choice", "bool")')
    assert not compared.search('if kind == "table":')  # an evidence item's kind is no answer kind


def test_every_kind_is_registered_under_its_set_file_name_and_configured_from_an_exercise():
    assert list(REGISTERED) == ["choice", "shape", "number", "bool", "error", "text", "list", "range"]
    for name, cls in REGISTERED.items():
        kind = make(name, choices=CHOICES, length=2, items="number", tolerance=0.5)
        assert type(kind) is cls and kind.name == name and kind.tolerance == 0.5 and kind.words
        assert isinstance(kind.format_hint(), str) and kind.format_hint()
    assert make("choice", choices=CHOICES).options == tuple(CHOICES) and make("bool").keys() == ["y", "n"]
    assert make("number").options == () and make("number").picking is None


def test_two_observations_are_the_same_by_the_kind_not_by_the_prediction_rule():
    number = make("number", tolerance=0.01)
    nan = float("nan")
    assert number.same(nan, nan) and not number.agrees(nan, nan)  # NaN never meets a prediction
    assert number.same(1.0, 1.005) and not number.same(1.0, 1.02)
    assert make("list").same([1.0, nan], [1.0, nan])
    assert not make("shape").same([2, 3], [3, 2])
