"""Set ``capstone`` (seed 004, the final exercise): predictions a learner can reason about.

Before the hidden mysteries of ``audit``, each exercise shows a fault's diff and asks which link of the
audit fails first; the check audits the engine of its own tree (``edit_mode.hunt``), so the answer is
measured on the faulted tree, never looked up. The clean tree passes every link.
"""

from __future__ import annotations

from helpers import rows

SET = "capstone"
LINKS = ("tokenizer", "alignment", "causality", "shape", "init", "registration", "gradients", "ownership", "update",
         "capability")


def _diff_exercises(catalog):
    return [e for e in catalog.get_set(SET).exercises if not e.seed_per_attempt]


def test_the_diffs_come_first_and_the_hidden_mystery_last(catalog):
    exercises = catalog.get_set(SET).exercises
    assert exercises[-1].id == "audit" and exercises[-1].seed_per_attempt
    shown = _diff_exercises(catalog)
    assert len(shown) >= 3 and shown == list(exercises[:-1])
    for exercise in shown:  # a diff to read, graded on the faulted tree, over the same links as the audit
        assert catalog.fault_of(exercise) is not None and exercise.observe == "faulted"
        assert exercise.check == "edit_mode.hunt" and [c for c, _ in exercise.choices] == [*LINKS, "none"]


def test_the_prompts_say_causality_runs_before_shape(catalog):
    for exercise in catalog.get_set(SET).exercises:
        prompt = " ".join(exercise.prompt.replace("**", "").split())
        assert prompt.index("CAUSALITY") < prompt.index("SHAPE"), exercise.id  # the chain in its order
    for exercise_id in ("audit", "first-link-head-split"):  # where a fault both would notice is asked about
        assert "CAUSALITY runs before SHAPE" in " ".join(catalog.get(exercise_id).prompt.replace("**", "").split())


def test_each_diff_fails_its_first_link_and_the_clean_engine_none(catalog, run):
    observed = {}
    for exercise in _diff_exercises(catalog):
        result = run(exercise.id)
        assert result.status == "ok", result.errors
        assert result.clean == "none"
        table = rows(result, "faulted", "Audit of this engine")
        first = next(row[1].lower() for row in table if row[2] == "FAIL")
        assert result.faulted == first  # the graded answer is the report's first FAIL
        observed[exercise.id] = result.faulted
    # A reshape that mixes positions is caught by CAUSALITY (#3) before SHAPE's round trip (#4); a detached
    # stream by GRADIENTS; an optimizer built before the new head by OWNERSHIP (measured on CPU, seed 0).
    assert observed == {"first-link-head-split": "causality", "first-link-detach": "gradients",
                        "first-link-stale-optimizer": "ownership"}
