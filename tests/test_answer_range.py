"""The range kind: one class in tutor/model/answers/range.py, a number predicted as two ends."""

import math

import pytest

from tutor.model.answers import AnswerError, KindError, Range, make, validate


@pytest.mark.parametrize("text", ["0.2 to 0.3", "between 0.2 and 0.3", "0.2..0.3", "[0.2, 0.3]", "(0.2, 0.3)",
                                  "0.2 – 0.3", " 0.2 to 0.3. ", "2/10 to 3/10"])
def test_a_range_reads_in_the_spellings_people_use(text):
    assert make("range", tolerance=0.05).parse(text) == pytest.approx((0.2, 0.3))


def test_a_range_is_shown_low_to_high_and_its_observation_as_a_number():
    kind = make("range", tolerance=0.1)
    assert kind.show_prediction(kind.parse("3.5 to 3.7")) == "3.5 to 3.7"
    assert kind.show_observation(3.6109179) == "3.6109179"
    assert kind.parse(kind.show_prediction((1e-3, 0.1))) == (1e-3, 0.1)  # what progress keeps reads again


def test_a_range_holds_its_ends_and_nothing_outside():
    kind = make("range", tolerance=0.05)
    low_high = kind.parse("0.2 to 0.3")
    assert kind.agrees(low_high, 0.2) and kind.agrees(low_high, 0.25) and kind.agrees(low_high, 0.3)
    assert not kind.agrees(low_high, 0.1999) and not kind.agrees(low_high, 0.3001)
    assert not kind.agrees(low_high, math.nan) and not kind.agrees(low_high, True) and not kind.agrees(low_high, "0.25")


def test_a_range_may_commit_to_no_less_than_a_number_within_the_tolerance():
    kind = make("range", tolerance=0.1)  # a number within 0.1 commits to 0.2; so must a range
    assert kind.parse("3.5 to 3.7") == pytest.approx((3.5, 3.7))
    with pytest.raises(AnswerError, match=r"^the range 0 to 100 is 100 wide; expected a range of numbers such as "
                                          r"0\.2 to 0\.3, low end first, at most 0\.2 wide \(both ends included\)$"):
        kind.parse("0 to 100")


@pytest.mark.parametrize("text, message", [
    ("0.3 to 0.2", "runs from high to low; write the low end first, e.g. 0.2 to 0.3"),
    ("0.25", "cannot read '0.25' as a range; expected a range of numbers"),
    ("low to high", "cannot read 'low to high' as a range"),
    ("0.2 to inf", "cannot read '0.2 to inf' as a range"),
])
def test_an_unreadable_range_says_why_in_one_sentence(text, message):
    with pytest.raises(AnswerError, match=message):
        make("range", tolerance=0.05).parse(text)


def test_two_observations_of_a_range_exercise_compare_as_numbers():
    kind = make("range", tolerance=0.01)
    assert kind.same(0.25, 0.255) and not kind.same(0.25, 0.27)
    assert kind.same(math.nan, math.nan) and not kind.same(0.25, math.nan) and not kind.same(True, 1.0)


def test_a_range_exercise_needs_a_tolerance_and_is_registered_by_name():
    assert isinstance(make("range", tolerance=0.1), Range)
    entry = {"kind": "range", "tolerance": 0.1}
    validate(entry)
    with pytest.raises(KindError, match="^key 'tolerance' must be positive for kind range"):
        validate({"kind": "range"})
    with pytest.raises(KindError, match="^key 'answer_length' is for kind list only"):
        validate({**entry, "answer_length": 2})
