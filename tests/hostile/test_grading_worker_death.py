"""A check worker that dies in the middle of a batch is the row's, never the class's.

A hand-in runs confined in a child of the worker, so the worker's death comes from outside it: the
machine's out-of-memory killer, an operator, or a kill that lands while a fresh worker starts. The
row being graded then reads ``could not run`` with its learner named in a notice, a fresh worker
grades the rows after it, results.json is written, and ``--resume`` grades that row again (the
new row counts). A worker that never started at all is still the machine's: nothing is graded.
"""

from __future__ import annotations

import csv
import json
import os
import threading
import types

import pytest

from test_grading_one_row import HONEST, assert_the_class_is_graded, batch, honest_class
from test_grading_submissions import FailsOn, clean_head_split, hand_in
from tutor.instructor import gradebook
from tutor.model.errors import CouldNotRun
from tutor.sandbox.runner import Runner, WorkerError

#: In a hand-in, this makes the stand-in runner's worker die while it grades it.
KILLS_THE_WORKER = "# the worker dies here\n"


class DiesOnce(FailsOn):
    """The stand-in runner, with a worker that said hello: for a hand-in marked so, the fresh worker it
    starts dies before its hello (as a real runner's does when it is killed while starting)."""

    marker, failure, message = KILLS_THE_WORKER, WorkerError, "the check worker did not start: Killed"

    def __init__(self, catalog, device="cpu"):
        super().__init__(catalog, device)
        self.worker = types.SimpleNamespace(hello=object())


class NeverStarts(DiesOnce):
    """A machine where no worker ever starts (no hello was ever said)."""

    def __init__(self, catalog, device="cpu"):
        super().__init__(catalog, device)
        self.worker = types.SimpleNamespace(hello=None)

    def run(self, exercise, prediction=None, on_progress=None, seed=0, sides=None, **kw):
        raise WorkerError("the check worker did not start: it said nothing")


def last_rows(out) -> dict:
    """Each learner's last row in ``out`` (the one that counts after a ``--resume``)."""
    return {r["learner"]: r for r in gradebook.read_rows(out)}


def test_a_worker_that_dies_while_one_row_is_graded_costs_that_row_alone(tmp_path, catalog):
    before = honest_class(tmp_path / "fixes", catalog)
    hand_in(tmp_path / "fixes", "mallory", clean_head_split(catalog) + KILLS_THE_WORKER)
    hand_in(tmp_path / "fixes", "zed", clean_head_split(catalog))
    reply, said = batch(tmp_path, runner=DiesOnce)
    assert reply.code == 3, reply.data  # a check could not finish: said in the exit status
    rows = assert_the_class_is_graded(tmp_path, before)
    assert rows["zed"]["status"] == "pass"  # graded after the death, on a fresh worker
    assert rows["mallory"]["status"] == "error" and rows["mallory"]["score"] == 0
    assert rows["mallory"]["reason"].startswith("could not run: the check worker died")
    assert any(n.startswith("mallory: could not run: the check worker died") for n in said.notices), said.notices
    assert DiesOnce.made[0].closed  # the dead worker was let go, so the next row starts a fresh one
    results = json.loads((tmp_path / "o" / "results.json").read_text(encoding="utf-8"))
    assert {e["extra_data"]["learner"] for e in results["learners"]} >= {*HONEST, "mallory", "zed"}

    hand_in(tmp_path / "fixes", "mallory", clean_head_split(catalog))  # the machine is quiet again
    reply, _ = batch(tmp_path, "--resume", runner=DiesOnce)
    assert reply.code == 0, reply.data
    graded = [r["learner"] for r in gradebook.read_rows(tmp_path / "o")]
    assert sorted(graded) == sorted([*HONEST, "mallory", "zed", "mallory"])  # mallory's row alone graded again
    assert last_rows(tmp_path / "o")["mallory"]["status"] == "pass"
    results = json.loads((tmp_path / "o" / "results.json").read_text(encoding="utf-8"))
    assert {e["extra_data"]["learner"]: e["score"] for e in results["learners"]}["mallory"] == 1
    assert_only_the_new_row_counts(tmp_path / "o", "mallory")


def assert_only_the_new_row_counts(out, who: str) -> None:
    """rows.jsonl and gradebook.csv keep ``who``'s old could-not-run row beside the new one (a log of every
    grading), marked as not counting; the new row alone counts, and results.json scores it alone."""
    kept = [(r["verdict"], r["counts"]) for r in gradebook.read_rows(out) if r["learner"] == who]
    assert kept == [(gradebook.COULD_NOT_RUN, False), ("fixed", True)], kept
    with open(out / gradebook.GRADEBOOK, newline="", encoding="utf-8") as fh:
        book = [(r["verdict"], r["counts"]) for r in csv.DictReader(fh) if r["learner"] == who]
    assert book == [(gradebook.COULD_NOT_RUN, "no"), ("fixed", "yes")], book
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    [entry] = [e for e in results["learners"] if e["extra_data"]["learner"] == who]
    assert entry["score"] == 1 and all("could not" not in t["output"] for t in entry["tests"]), entry
    graded = [t["extra_data"] for t in entry["tests"] if t["extra_data"]["status"] != "missing"]
    assert [t["attempts"] for t in graded] == [1], graded  # the machine's failure is not one of the learner's attempts


def test_a_worker_that_never_starts_is_the_machines_and_grades_nothing(tmp_path, catalog):
    honest_class(tmp_path / "fixes", catalog)
    with pytest.raises(CouldNotRun, match="did not start"):
        batch(tmp_path, runner=NeverStarts)


class KilledFromOutside(Runner):
    """The real runner, whose worker is killed (its pid from the hello) two seconds into a hand-in that
    sleeps: the death lands while that row is graded."""

    def __init__(self, catalog, device="cpu"):
        super().__init__(catalog, device, allow_unconfined=False)

    def run(self, exercise, prediction=None, on_progress=None, seed=0, sides=None, **kw):
        yours = [s for s in sides or () if s.name == "yours"]
        if yours and KILLS_THE_WORKER in yours[0].files[0][1]:
            threading.Timer(2.0, os.kill, (self.worker.start().pid, 9)).start()
        return super().run(exercise, prediction, on_progress, seed, sides, **kw)


def test_a_real_worker_killed_mid_batch_costs_one_row_and_resume_grades_it_again(tmp_path, catalog):
    from tutor.sandbox import bwrap
    if not bwrap.available().path:
        pytest.skip("bubblewrap is not available: grading refuses to run unconfined")
    before = honest_class(tmp_path / "fixes", catalog)
    hand_in(tmp_path / "fixes", "mallory", clean_head_split(catalog) + "import time\ntime.sleep(600)\n"
            + KILLS_THE_WORKER)
    hand_in(tmp_path / "fixes", "zed", clean_head_split(catalog))
    reply, said = batch(tmp_path, runner=KilledFromOutside)
    assert reply.code == 3, reply.data
    rows = assert_the_class_is_graded(tmp_path, before)
    assert rows["zed"]["status"] == "pass" and rows["zed"]["confined"] is True
    assert rows["mallory"]["status"] == "error" and rows["mallory"]["verdict"] == "could not run"
    assert any(n.startswith("mallory: ") and "worker" in n for n in said.notices), said.notices

    hand_in(tmp_path / "fixes", "mallory", clean_head_split(catalog))
    reply, _ = batch(tmp_path, "--resume", runner=KilledFromOutside)
    assert reply.code == 0, reply.data
    graded = [r["learner"] for r in gradebook.read_rows(tmp_path / "o")]
    assert sorted(graded) == sorted([*HONEST, "mallory", "zed", "mallory"])  # mallory alone graded again
    assert last_rows(tmp_path / "o")["mallory"]["status"] == "pass"
    assert_only_the_new_row_counts(tmp_path / "o", "mallory")
