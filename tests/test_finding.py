"""Finding an exercise by what a learner types: exact ids in any case, close ids suggested, the home filter.

The catalog here is made by hand, so every suggestion below follows from difflib's ratio (cutoff 0.5) and the
"contains what was typed" rule of tutor/model/finding.py.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tutor.model import finding

IDS = ("cache-offset", "cache-length", "head-split", "broadcast-loss", "causal-mask")


def catalog():
    return SimpleNamespace(exercises=[SimpleNamespace(id=i) for i in IDS])


def exercise(prompt="Predict what the masked scores hold.", title="Splitting the heads", id="head-split"):
    return SimpleNamespace(id=id, title=title, prompt=prompt), SimpleNamespace(id="gpt", title="Assembling a GPT")


@pytest.mark.parametrize("text, close", [
    ("cache-ofset", ["cache-offset", "cache-length"]), ("CACHE-OFFSET ", ["cache-offset", "cache-length"]),
    ("offset", ["cache-offset"]), ("cache", ["cache-offset", "cache-length"]), ("loss", ["broadcast-loss"]),
    ("ca", ["cache-offset", "cache-length", "broadcast-loss"]),
    ("zzzzzz", []), ("", []), ("  ", [])])
def test_suggestions_are_close_ids_then_ids_containing_the_text(text, close):
    assert finding.suggestions(catalog(), text) == close


def test_suggestions_stop_at_n():
    assert finding.suggestions(catalog(), "cache", n=1) == ["cache-offset"]
    assert finding.suggestions(catalog(), "a", n=5) == ["cache-offset", "cache-length", "head-split",
                                                        "broadcast-loss", "causal-mask"]


def test_suggestions_take_up_to_n_close_ids_from_a_ratio_of_one_half():
    near = SimpleNamespace(exercises=[SimpleNamespace(id=i) for i in ("ab1", "ab2", "ab3", "a-b-c", "zzz")])
    # "ab" is 0.8 alike each abN and 4/7 alike a-b-c (under difflib's default cutoff, 0.6, so not by default)
    assert finding.suggestions(near, "ab", n=4) == ["ab3", "ab2", "ab1", "a-b-c"]


def test_an_id_is_found_in_any_case_with_spaces_around():
    assert finding.resolve(catalog(), "  Head-Split\n").id == "head-split"


def test_an_unknown_id_names_close_ones_or_where_to_look():
    with pytest.raises(finding.UnknownExercise) as caught:
        finding.resolve(catalog(), " head-spilt ")
    assert caught.value.args[0] == "there is no exercise 'head-spilt'; did you mean head-split?"
    with pytest.raises(finding.UnknownExercise) as caught:
        finding.resolve(catalog(), "cache-ofset")
    assert caught.value.args[0] == "there is no exercise 'cache-ofset'; did you mean cache-offset, cache-length?"
    with pytest.raises(finding.UnknownExercise) as caught:
        finding.resolve(catalog(), "qqqq")
    assert caught.value.args[0] == "there is no exercise 'qqqq'; run 'tutor list' to see every id."
    assert issubclass(finding.UnknownExercise, KeyError)


@pytest.mark.parametrize("query, named", [("split", True), ("HEAD gpt", True), ("assembling heads", True),
                                          ("masked", False), ("split masked", False), ("", True),
                                          ("xx", False)])
def test_named_is_every_word_in_the_id_title_or_set(query, named):
    assert finding.named(*exercise(), query) is named


@pytest.mark.parametrize("query, found", [
    ("", True), ("   ", True), ("cache", False), ("split", True), ("HEAD-SPL", True), ("gpt", True),
    ("assembling", True), ("mask", True), ("masked scores", True), ("ask", False), ("cores", False),
    ("split mask", True), ("split ask", False), ("what_is", False)])
def test_the_filter_finds_words_anywhere_in_names_and_at_word_starts_in_the_prompt(query, found):
    assert finding.matches(*exercise(), query) is found


def test_the_prompts_words_are_letters_digits_and_underscores():
    ex, group = exercise(prompt="Use n_embd=64, then (B, T)!")
    assert [finding.matches(ex, group, q) for q in ("n_embd", "64", "b", "t", "then", "embd")] == \
        [True, True, True, True, True, False]
