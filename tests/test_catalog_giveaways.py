"""No exercise shows its answer before the prediction: not in its title, its example format,
the unchanged lines of its diff, or its first hint.

The answer is measured, so the slow test runs each exercise's check (through
the real worker) and looks for the graded answer's text, as the result
shows it, in those places. A yes, a no or a choice's letter says nothing by
itself, so those are left out; a choice's answer is its text. Short texts
(under three characters, such as 5 or 0) occur everywhere in code and
titles and are left out too. The default suite tests the search on texts
built here.
"""

import re

import pytest

from exercises.faults import diff
from tutor.store.catalog_cache import load_catalog

#: Every exercise, by id: the slow test runs each one's check.
EXERCISE_IDS = [e.id for e in load_catalog().exercises]


def answer_texts(exercise, observed) -> list[str]:
    """The graded answer as a learner would read it, one text per item, leaving out what says nothing."""
    values = observed if exercise.kind.name == "list" or exercise.observe == "both" else [observed]
    texts = []
    for value in values:
        if isinstance(value, bool) or value is None or value == "none":
            continue
        if exercise.kind.name == "choice":
            texts.append(exercise.kind.choice_text(value) or "")
        elif isinstance(value, (int, float)):
            texts.append(exercise.kind.show_observation(value) if exercise.kind.name != "list" else f"{value:g}")
        else:
            texts.append(exercise.kind.show_observation(value) if exercise.kind.name != "list" else str(value))
    return [t for t in texts if len(t) >= 3]


def example_format(exercise) -> str:
    """The examples of an answer a learner reads: the prompt's (``e.g. `…` ``, ``Example format: `…` ``)
    and the answer format's, without the lists of options it names (every option is named there,
    the answer among them, so naming it says nothing)."""
    examples = re.findall(r"(?:e\.g\.|[Ee]xample format:)\s*`([^`]*)`", exercise.prompt)
    shown = exercise.answer_format
    items = exercise.answer_items if isinstance(exercise.answer_items, tuple) else (exercise.answer_items or "",)
    for options in {item for item in items if "|" in item}:
        shown = shown.replace(", ".join(options.split("|")), "")
    return "\n".join([shown, *examples])


def places(exercise, fault) -> dict[str, str]:
    """Where a learner meets text before predicting: the title, the example format, hint 1, the diff's context."""
    shown = {"title": exercise.title, "example format": example_format(exercise), "first hint": exercise.hints[0]}
    if fault is not None:
        shown["diff context"] = "\n".join(line[1:] for line in diff(fault).splitlines()
                                          if line.startswith(" "))
    return shown


def giveaways(texts: list[str], shown: dict[str, str]) -> list[str]:
    """``"place: text"`` for each answer text found as a whole word (or number) in a place."""
    def plain(s: str) -> str:  # 808,960 and 808960 are one number
        return re.sub(r"(?<=\d),(?=\d{3})", "", s)

    found = []
    for text in texts:
        for place, where in shown.items():
            if re.search(rf"(?<![\w.]){re.escape(plain(text))}(?![\w]|\.\d)", plain(where)):
                found.append(f"{place}: {text}")
    return found


def test_a_giveaway_is_found_as_a_whole_word_in_any_place():
    shown = {"title": "An initializer that does not exist", "first hint": "Try 808,960 parameters",
             "diff context": "    KeyError: if text holds a character outside the alphabet"}
    assert giveaways(["KeyError", "808960", "exist"], shown) == [
        "diff context: KeyError", "first hint: 808960", "title: exist"]
    assert giveaways(["12.5", "Error"], {"title": "12.55 and KeyError"}) == []  # a part of a word or number is not


def test_the_example_format_holds_the_prompts_examples_but_not_the_options_it_lists(catalog):
    listed = catalog.get("numpy-float64")  # a list of a dtype, one of four named, and an exception name
    assert "float64" in listed.answer_format and "float64" not in example_format(listed)
    assert "float32, none" in example_format(listed)  # the prompt's "e.g. `float32, none`"
    assert "example format: float32" in giveaways(["float32"], places(listed, None))


def test_yes_no_letters_and_short_answers_say_nothing(catalog):
    kinds = {e.kind.name: e for e in catalog.exercises}
    assert answer_texts(kinds["bool"], True) == []
    lettered = next(e for e in catalog.exercises if e.kind.name == "choice" and len(e.choices[0][1]) >= 3)
    assert answer_texts(lettered, lettered.choices[0][0]) == [lettered.choices[0][1]]  # the text, not the letter
    assert answer_texts(kinds["error"], "none") == [] and answer_texts(kinds["error"], "KeyError") == ["KeyError"]


@pytest.mark.slow
@pytest.mark.parametrize("exercise_id", EXERCISE_IDS)
def test_no_exercise_shows_its_measured_answer_before_the_prediction(exercise_id, runner, catalog):
    exercise = catalog.get(exercise_id)
    result = runner.run(exercise, None)
    assert result.status == "ok", (exercise_id, result.status, result.error)
    found = giveaways(answer_texts(exercise, result.observed), places(exercise, catalog.fault_of(exercise)))
    assert not found, (exercise_id, found)
