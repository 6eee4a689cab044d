"""``tutor grade --answers`` over a warm-up's rows (the capstone's blind bet, ``audit``: ``graded = false``).

A warm-up's row is a bet that scores nothing: its line says ``warm-up``, the summary counts it apart
from the passes and fails, the gradebook's mode column says ``warmup``, and its results.json test says
it was a warm-up. The runner is a stand-in: every check observes what :data:`OBSERVED` gives, graded by
the real ``grade``, so each count below follows from the answers by hand.
"""

from __future__ import annotations

import csv
import json

from tutor.cli import main
from tutor.sandbox.protocol import Answer, SideResult
from tutor.sandbox.runner import grade

#: What each check observes, per side: the warm-up's mystery fails at alignment; head-split's fault gives b.
OBSERVED = {"audit": {"clean": "alignment"}, "head-split": {"clean": "a", "faulted": "b"}}
# ada: a missed bet, a right prediction; bob: a right bet, a wrong prediction
ANSWERS = """learner,exercise,answer
ada,audit,causality
ada,head-split,b
bob,audit,alignment
bob,head-split,a
"""


class _Observing:
    def __init__(self, catalog, device="cpu") -> None:
        pass

    def warm_up(self) -> dict:
        return {}

    def run(self, exercise, prediction=None, on_progress=None, seed=0, sides=None):
        sides_ = {name: SideResult(status="ok", observed=value, duration_s=0.1)
                  for name, value in OBSERVED[exercise.id].items()}
        return grade(exercise, Answer(job=1, torch="t", device="cpu", duration_s=0.2, sides=sides_), prediction, seed)

    def cancel(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_a_warm_up_row_is_graded_as_a_warm_up_never_a_pass_or_a_fail(tmp_path, capsys, monkeypatch):
    import tutor.instructor.grade
    monkeypatch.setattr(tutor.instructor.grade, "runner_factory_for", lambda *args: _Observing)
    monkeypatch.setenv("COLUMNS", "160")
    answers = tmp_path / "week.csv"
    answers.write_text(ANSWERS, encoding="utf-8")
    out = tmp_path / "graded"
    assert main(["grade", "--answers", str(answers), "--out", str(out), "--exercises", "head-split,audit"]) == 0
    printed = capsys.readouterr().out
    lines = {tuple(line.split()[1:3]): line.split()[0] for line in printed.splitlines()
             if len(line.split()) > 3 and line.split()[2] in OBSERVED}
    assert lines == {("ada", "audit"): "warm-up", ("ada", "head-split"): "pass",
                     ("bob", "audit"): "warm-up", ("bob", "head-split"): "fail"}
    summary = " ".join(printed.split())
    assert "1 pass, 1 fail, 2 warm-up." in summary
    with open(out / "gradebook.csv", newline="", encoding="utf-8") as fh:
        book = {(r["learner"], r["exercise"]): r for r in csv.DictReader(fh)}
    assert [book[("ada", "audit")][k] for k in ("mode", "status", "score", "points", "prediction", "observed")] \
        == ["warmup", "fail", "0", "0", "causality", "alignment"]
    assert (book[("bob", "audit")]["mode"], book[("bob", "head-split")]["mode"]) == ("warmup", "predict")
    results = {r["extra_data"]["learner"]: r for r in json.loads((out / "results.json").read_text())["learners"]}
    tests = {t["extra_data"]["exercise"]: t for t in results["ada"]["tests"]}
    assert (tests["audit"]["score"], tests["audit"]["max_score"]) == (0.0, 0.0)
    assert tests["audit"]["output"] == ("You bet causality. The check observed alignment. "
                                        "Your bet did not match: a warm-up, never graded.")
    assert tests["head-split"]["output"].endswith("Your prediction matched.")
    assert results["ada"]["score"] == 1.0 and results["bob"]["score"] == 0.0


def test_grade_json_counts_warm_ups_apart(tmp_path, capsys, monkeypatch):
    import tutor.instructor.grade
    monkeypatch.setattr(tutor.instructor.grade, "runner_factory_for", lambda *args: _Observing)
    answers = tmp_path / "week.csv"
    answers.write_text(ANSWERS, encoding="utf-8")
    assert main(["grade", "--answers", str(answers), "--out", str(tmp_path / "g"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["counts"] == {"pass": 1, "fail": 1, "warm-up": 2}
    modes = {(r["learner"], r["exercise"]): (r["mode"], r["status"]) for r in data["rows"]}
    assert modes[("ada", "audit")] == ("warmup", "fail") and modes[("bob", "audit")] == ("warmup", "pass")
