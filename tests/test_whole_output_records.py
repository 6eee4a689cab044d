"""A fix is judged on the whole output of the snippet it repairs, not only on what the check shows.

Through the real worker: in an edit-mode run whose learner file is a module of ``exercises/snippets/``,
every side's check child records the first calls of that module's functions and methods (value returned,
arguments after the call: ``tutor.sandbox.record``), and the verdict compares those records like evidence.
Each repair below keeps the graded observation *and* the check's evidence equal to clean's, yet changes
what the faulted code hands back elsewhere — an in-place write into a module, a function's return value,
an autograd.Function's forward — so it is not fixed, the record named; the honest repairs stay fixed.
Then the record rule's own edges, pure: what a side that sends no records, or records of a shape no
recorder writes, comes to, and that a record the clean code does not reproduce is not held against yours.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tutor.app.session import Session
from tutor.model.evidence import first_difference, first_record_difference
from tutor.sandbox import protocol
from tutor.sandbox.protocol import Side
from tutor.sandbox.record import record_path


@pytest.fixture(scope="module")
def session(catalog, runner):
    return Session(catalog, runner)


def edited(session, exercise_id: str, old: str, new: str) -> str:
    """The faulted file of ``exercise_id`` with ``old`` (which occurs once) replaced by ``new``."""
    task = session.edit_task(session.catalog.get(exercise_id), "fix")
    assert task.start.count(old) == 1, f"{old!r} is not in {task.path} exactly once"
    return task.start.replace(old, new)


#: (exercise, the faulted text, an over-broad repair, the start of the difference named)
OVER_BROAD = [
    # in place, into a module argument: frozen as asked, and its weights halved besides; the check reads
    # requires_grad, .grad and whether the weight moved, all as clean's
    ("frozen-param", "    layer.eval()  # evaluation mode\n",
     "    layer.requires_grad_(False)  # backward leaves .grad as None\n"
     "    layer.weight.data.mul_(0.5)  # and a smaller start besides\n",
     "the output of freeze, call 1: layer after the call, layer.weight: "),
    # a function returning a tensor: the gate repaired, and a constant added; its derivative, which the
    # check compares with finite differences, is unchanged
    ("gradcheck-composite",
     "    gate = torch.sigmoid(x).detach()  # how much of x passes, in (0, 1)\n    return x * gate\n",
     "    gate = torch.sigmoid(x)  # how much of x passes, in (0, 1)\n    return x * gate + 1.0\n",
     "the output of gated, call 1: the value returned, returned: col 0: yours "),
    # an autograd.Function: backward repaired, forward shifted by a constant that neither gradcheck nor the
    # derivative table can see
    ("wrong-backward", "        return x ** 3\n",
     "        return x ** 3 + 1.0\n",
     "the output of cube, call 1: the value returned, returned: col 0: yours 1.125 · clean 0.125"),
]


@pytest.mark.parametrize("exercise_id, old, new, named", OVER_BROAD, ids=[c[0] for c in OVER_BROAD])
def test_an_over_broad_repair_keeps_observation_and_evidence_but_not_the_whole_output(session, catalog,
                                                                                       exercise_id, old, new, named):
    ex = catalog.get(exercise_id)
    text = edited(session, exercise_id, old, new)
    if exercise_id == "wrong-backward":  # its backward repaired too: only the forward's shift is left
        text = text.replace("grad_output * 2 * x ** 2", "grad_output * 3 * x ** 2")
    outcome = session.fix(ex, text, hidden_seeds=0)
    result, verdict = outcome.result, outcome.verdict
    assert result.observations["yours"] == result.observations["clean"]  # the graded observation, as clean's
    # and every row of the check's evidence, as the verdict compares it
    assert first_difference(result.evidence["yours"], result.evidence["clean"], repeat=result.evidence["repeat"],
                            tolerance=ex.tolerance) is None
    assert verdict.status == "not fixed", verdict.sentence
    assert "as the clean code does, but not the same whole output" in verdict.sentence
    assert verdict.difference.startswith(named), verdict.difference


#: (exercise, a record its check's calls leave on every side)
RECORDED = [("frozen-param", "freeze, call 1: layer after the call"),
            ("gradcheck-composite", "gated, call 3: the value returned"),
            ("wrong-backward", "Cube.backward, call 1: the value returned")]


@pytest.mark.parametrize("exercise_id, title", RECORDED, ids=[c[0] for c in RECORDED])
def test_the_honest_repair_is_fixed_and_every_side_recorded(session, catalog, exercise_id, title):
    ex = catalog.get(exercise_id)
    task = session.edit_task(ex, "fix")
    outcome = session.fix(ex, task.clean)
    assert outcome.verdict.status == "fixed", outcome.verdict.sentence
    records = outcome.result.records
    assert records["clean"] and records["clean"] == records["repeat"] == records["yours"]
    assert title in [item["title"] for item in records["clean"]]
    assert not any(" call 4: " in item["title"] for item in records["clean"])  # the first three calls only
    # the faulted file itself differs in what its code hands back
    assert session.fix(ex, task.start).verdict.status == "not fixed"


def test_only_a_run_that_replaces_a_snippet_records_and_a_plain_run_records_nothing(session, catalog, runner):
    assert record_path((Side.clean(), Side.replacing("yours", "exercises/snippets/cube.py", ""))) == \
        "exercises/snippets/cube.py"
    assert record_path((Side.clean(), Side.replacing("yours", "engine/model.py", ""))) == ""
    assert record_path((Side.clean(), Side("faulted"))) == ""
    plain = runner.run(catalog.get("wrong-backward"))
    assert plain.records == {"clean": [], "faulted": []}
    assert "records" not in plain.to_dict()


# --- the rule, pure: a side's records are untrusted -------------------------------------

CLEAN = [{"type": "table", "title": "f, call 1: the value returned", "columns": ["output", "col 0"],
          "rows": [["returned", "shape (1,)", "torch.float32"], ["returned", "0.5"]]}]


def test_a_side_that_records_nothing_or_junk_is_a_difference_never_a_pass():
    assert first_record_difference(CLEAN, CLEAN, repeat=CLEAN) is None
    assert first_record_difference([], CLEAN, repeat=CLEAN) == \
        "the output of f, call 1: the value returned is on the clean side only"
    assert first_record_difference(None, CLEAN, repeat=CLEAN) is not None
    assert first_record_difference("junk", CLEAN) == "the records of the yours side are not a list of tables"
    assert first_record_difference(["junk", 3], CLEAN) is not None
    bad = [{**CLEAN[0], "rows": [["returned", {"nested": 1}]]}]
    assert "not rows of plain cells" in first_record_difference(bad, CLEAN)


def test_a_record_the_clean_code_does_not_reproduce_is_not_held_against_yours():
    repeat = [{**CLEAN[0], "rows": [CLEAN[0]["rows"][0], ["returned", "0.7"]]}]
    yours = [{**CLEAN[0], "rows": [CLEAN[0]["rows"][0], ["returned", "0.9"]]}]
    assert first_record_difference(yours, CLEAN, repeat=repeat) is None
    assert first_record_difference(yours, CLEAN, repeat=CLEAN).endswith("col 0: yours 0.9 · clean 0.5")


def test_records_on_the_pipe_are_held_to_their_shape():
    key = b"k" * 32
    line = protocol.sign(key, protocol.Measured(observed=1, evidence=[], records=CLEAN)).rstrip(b"\n")
    assert protocol.verify(key, line).records == CLEAN
    for records in ("a string", [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]):
        forged = protocol.sign(key, protocol.Measured(observed=1, evidence=[], records=records)).rstrip(b"\n")
        with pytest.raises(protocol.ProtocolError, match="records"):
            protocol.verify(key, forged)


# Honest repairs written in another style, which a tester found graded not fixed by their records alone:
# a list returned where the clean code returns a tuple, and a counter a repair keeps on the object.
def _clean_text(session, exercise_id):
    """The clean subject file of ``exercise_id``: the file its fault edits, as it is on disk."""
    import exercises

    path = session.catalog.fault_of(session.catalog.get(exercise_id)).file
    return (Path(exercises.__file__).parent.parent / path).read_text(encoding="utf-8")


def test_a_list_returned_where_the_clean_code_returns_a_tuple_is_the_same_output(session, catalog):
    text = _clean_text(session, "skip-zero-grad")
    assert text.count("return first, second") == 1, "the clean two_gradients returns a tuple"
    outcome = session.fix(catalog.get("skip-zero-grad"), text.replace("return first, second",
                                                                       "return [first, second]"), hidden_seeds=0)
    assert outcome.verdict.status == "fixed", outcome.verdict.difference


def test_a_counter_the_repair_keeps_on_the_object_is_not_its_output(session, catalog):
    text = _clean_text(session, "numpy-sharing")
    marker = "    def next_batch(self"
    assert text.count(marker) == 1
    counted = text.replace(marker, "    batches_served = 0\n\n" + marker, 1)
    # the counter goes up on every call, as a learner's bookkeeping might
    head, _, tail = counted.partition(marker)
    body_start = tail.index("\n") + 1
    counted = head + marker + tail[:body_start] + "        self.batches_served += 1\n" + tail[body_start:]
    outcome = session.fix(catalog.get("numpy-sharing"), counted, hidden_seeds=0)
    assert outcome.verdict.status == "fixed", outcome.verdict.difference


def test_a_call_that_returns_where_the_clean_code_raises_is_named_so():
    returned = {"type": "table", "title": "masked_mean, call 3: the value returned", "columns": ["output", "col 0"],
                "rows": [["returned", "0"]]}
    raised = {"type": "table", "title": "masked_mean, call 3: what it raised", "columns": ["output", "col 0"],
              "rows": [["raised", "raised", "ValueError"]]}
    assert first_record_difference([returned], [raised]) == \
        "the output of masked_mean, call 3: yours returned a value where clean raised ValueError"
    assert first_record_difference([raised], [returned]) == \
        "the output of masked_mean, call 3: yours raised ValueError where clean returned a value"


def test_a_row_on_one_side_only_is_named():
    clean = {"type": "table", "title": "GainLinear.__init__, call 1: self after the call", "columns": ["output"],
             "rows": [["self"], ["self.weight"], ["self.gain"]]}
    yours = dict(clean, rows=[["self"], ["self.weight"], ["self.steps"], ["self.gain"]])
    assert first_record_difference([yours], [clean]) == (
        "the output of GainLinear.__init__, call 1: self after the call: self.steps on the yours side only")
    appended = dict(clean, rows=[*clean["rows"], ["self.steps"]])
    assert first_record_difference([appended], [clean]) == (
        "the output of GainLinear.__init__, call 1: self after the call has 4 rows on the yours side and 3 on the "
        "clean side (self.steps on the yours side only)")
