"""The sets form a path: each set opens with a primer, and each exercise comes after those it relies on.

A learner meets the exercises in the catalog's order (sets by ``order``,
exercises in file order). These tests read what each exercise's own text
relies on (another exercise named in it, AdamW's first step, the counting
floor) and check that the order keeps it earlier.
"""

from __future__ import annotations

import re

from tutor.model.catalog import CHAPTERS

TRAINING = "training-"  # the training sets' ids start with it


def _text(exercise) -> str:
    return " ".join((exercise.prompt, exercise.explain, *exercise.hints))


def test_every_set_opens_with_a_primer_naming_its_chapter_and_what_is_predicted(catalog):
    for exercise_set in catalog.sets:
        primer = exercise_set.primer
        assert primer, f"set {exercise_set.id} has no primer"
        chapters = re.findall(r"chapters?\s+(\d{3})", primer)
        assert chapters and set(chapters) <= set(CHAPTERS), (exercise_set.id, "names no seed chapter")
        assert "predict" in primer, (exercise_set.id, "does not say what the learner will predict")
        assert len(primer) < 700, (exercise_set.id, "a primer is read before the first exercise: keep it short")


def test_an_exercise_named_in_another_exercise_comes_before_it(catalog):
    exercises = catalog.exercises
    place = {e.id: n for n, e in enumerate(exercises)}
    later = []
    for exercise in exercises:
        text = _text(exercise)
        for other in place:
            named = other != exercise.id and "-" in other and re.search(rf"(?<![\w-]){re.escape(other)}(?![\w-])", text)
            if named and place[other] > place[exercise.id]:
                later.append((exercise.id, other))
    assert later == []


def test_data_comes_before_the_training_sets_and_the_training_sets_are_several(catalog):
    order = {s.id: s.order for s in catalog.sets}
    training = [s for s in catalog.sets if s.id.startswith(TRAINING)]
    assert len(training) >= 4
    assert all(order["data"] < s.order for s in training)
    assert sum(len(s.exercises) for s in training) == 56  # the split keeps every exercise (evaluate-mixed-modes added)


def test_the_first_training_set_opens_with_the_seeds_first_worked_example(catalog):
    first = next(s for s in catalog.sets if s.id.startswith(TRAINING))
    assert first.exercises[0].id == "hand-update"


def test_adamws_first_step_comes_before_every_training_exercise_that_relies_on_it(catalog):
    training = [e for s in catalog.sets if s.id.startswith(TRAINING) for e in s.exercises]
    ids = [e.id for e in training]
    first_step = ids.index("adamw-first-step")
    relying = [e.id for e in training if "AdamW" in " ".join(e.hints) and e.id != "adamw-first-step"]
    assert relying  # the rule is about something
    assert [i for i in relying if ids.index(i) < first_step] == []


def test_the_floor_faults_sit_beside_the_counting_floor(catalog):
    floor_set = next(s for s in catalog.sets if any(e.id == "bigram-floor" for e in s.exercises))
    ids = [e.id for e in floor_set.exercises]
    start = ids.index("bigram-floor")
    floors = [e.id for e in floor_set.exercises if e.check == "training_claims.counting_floor"]
    assert len(floors) == 2
    assert sorted(ids[start + 1:start + 3]) == sorted(floors)


def test_no_text_cites_a_document_the_learner_never_sees(catalog):
    """'The catalog' is the authors' word for the set files; a learner reads prompts, hints and evidence."""
    citing = [e.id for e in catalog.exercises if re.search(r"\bthe catalog\b|\bcatalog's\b", _text(e), re.I)]
    assert citing == []
