"""Gradescope for real, fix-mode batches on one warm worker, and a class across machines (shards, merge).

The fake runner below answers as the real worker would for head-split (clean observes a, the fault b)
and skip-zero-grad (clean 1, faulted 2): a learner's side observes the clean value when the learner's
file is the clean subject file — except at seed 7 when the file carries the marker ``# only seed 0``,
which stands for a repair that is right at the check's own seed but not at a hidden one.
"""

from __future__ import annotations

import datetime as dt
import io
import json
from pathlib import Path

import pytest

from test_grade import Events
from tutor.instructor import assignment as assignments
from tutor.instructor import gradebook, shard
from tutor.cli.parser import build_parser
from tutor.sandbox.protocol import Answer, SideResult
from tutor.sandbox.runner import grade

OBSERVED = {"head-split": {"clean": "a", "faulted": "b"}, "skip-zero-grad": {"clean": 1.0, "faulted": 2.0},
            "broadcast-loss": {"clean": [3], "faulted": [3, 3]}, "cache-offset": {"clean": True, "faulted": False}}
MARKER = "# only seed 0"


class FixRunner:
    made = []

    def __init__(self, catalog, device="cpu"):
        from exercises.faults import source_root
        self.catalog, self.runs, self.closed = catalog, [], False
        self.clean = {}
        self.root = source_root()
        FixRunner.made.append(self)

    def warm_up(self):
        return {}

    def _clean_text(self, path):
        if path not in self.clean:
            self.clean[path] = (self.root / path).read_text(encoding="utf-8")
        return self.clean[path]

    def run(self, exercise, prediction=None, on_progress=None, seed=0, sides=None, **kw):
        self.runs.append((exercise.id, seed, tuple(s.name for s in sides or ())))
        values = OBSERVED[exercise.id]
        out = {}
        for side in sides or ():
            if side.name == "yours":
                [(path, text)] = side.files
                right = text.replace(MARKER + "\n", "") == self._clean_text(path) and not (seed == 7 and MARKER in text)
                value = values["clean"] if right else values["faulted"]
            else:
                value = values["faulted" if side.name == "faulted" else "clean"]
            out[side.name] = SideResult(status="ok", observed=value, duration_s=0.05)
        return grade(exercise, Answer(job=1, torch="t", device="cpu", duration_s=0.1, sides=out), prediction, seed)

    def cancel(self):
        pass

    def close(self):
        self.closed = True


@pytest.fixture(autouse=True)
def _fresh():
    FixRunner.made = []


def subject(catalog, ex_id, fixed=True, marker=False):
    from exercises.faults import source_root
    fault = catalog.fault_of(catalog.get(ex_id))
    clean = (source_root() / fault.file).read_text(encoding="utf-8")
    text = clean if fixed else clean.replace(fault.before, fault.after, 1)
    return (MARKER + "\n" + text) if marker else text


def run_command(argv):
    args = build_parser().parse_args(argv)
    args.runner_factory = lambda cat, dev: FixRunner(cat, dev)
    events = Events()
    from tutor.cli import COMMANDS
    return COMMANDS[args.command](args, events), events


# --- fix-mode batches ------------------------------------------------------------------------------

@pytest.fixture()
def fixes(tmp_path, catalog):
    folder = tmp_path / "fixes"
    for name, fixed in (("ada@uni.edu", True), ("García, José", False), ("zoë", True)):
        (folder / name).mkdir(parents=True)
        (folder / name / "head-split.py").write_text(subject(catalog, "head-split", fixed), encoding="utf-8")
    from tutor.app.tasks import task_for
    task = task_for(catalog, catalog.get("skip-zero-grad"), "fix")
    (folder / "zoë" / "skip-zero-grad.diff").write_text(
        _diff(task.start, subject(catalog, "skip-zero-grad"), task.path), encoding="utf-8")
    (folder / "zoë" / "notes.txt").write_text("hello")
    return folder


def _diff(a, b, path):
    import difflib
    return "".join(difflib.unified_diff(a.splitlines(True), b.splitlines(True), f"a/{path}", f"b/{path}"))


def test_a_batch_of_repairs_runs_on_one_warm_worker_into_the_gradebook_and_results(fixes, tmp_path):
    reply, events = run_command(["grade", "--fixes", str(fixes), "--out", str(tmp_path / "o"), "--exercises",
                                 "head-split,skip-zero-grad", "--save", "--progress-dir", str(tmp_path / "p")])
    assert len(FixRunner.made) == 1 and FixRunner.made[0].closed  # one worker for every submission
    rows = {(r["learner"], r["exercise"]): r for r in reply.data["rows"]}
    assert rows[("ada@uni.edu", "head-split")]["status"] == "pass"
    assert rows[("García, José", "head-split")]["status"] == "fail"
    assert rows[("zoë", "skip-zero-grad")]["status"] == "pass"  # a patch against the faulted file
    assert rows[("zoë", "notes")]["status"] == "unreadable"
    assert all(r["mode"] == "fix" for r in reply.data["rows"])
    assert rows[("García, José", "head-split")]["answer"].startswith("--- ")  # the learner's diff is the answer
    book = gradebook.read_rows(tmp_path / "o")
    assert len(book) == 5
    results = json.loads((tmp_path / "o" / "results.json").read_text())
    by = {e["extra_data"]["learner"]: e for e in results["learners"]}
    assert (by["zoë"]["score"], by["zoë"]["extra_data"]["max_score"]) == (2.0, 2.0)
    assert by["García, José"]["tests"][0]["output"].startswith("Your repair: not fixed")
    from tutor.instructor.report import build_report
    report = {e.id: e for e in build_report(tmp_path / "p").exercises}
    assert (report["head-split"].fix_tried, report["head-split"].fix_fixed) == (3, 2)
    assert reply.code == 0


def test_hidden_seeds_check_a_repair_at_more_than_its_own_seed(tmp_path, catalog):
    folder = tmp_path / "fixes" / "ada"
    folder.mkdir(parents=True)
    (folder / "head-split.py").write_text(subject(catalog, "head-split", marker=True), encoding="utf-8")
    plan = tmp_path / "a.toml"
    plan.write_text('[[exercises]]\nid = "head-split"\nhidden_seeds = [3, 7]\n')
    reply, _ = run_command(["grade", "--fixes", str(tmp_path / "fixes"), "--out", str(tmp_path / "o"),
                            "--assignment", str(plan)])
    [row] = reply.data["rows"]
    assert (row["status"], row["verdict"]) == ("fail", "not fixed")
    assert row["reason"].startswith("not fixed at a hidden seed (fixed at seed 0") and "7" not in row["reason"]
    runs = FixRunner.made[0].runs
    seeds = [seed for _, seed, _ in runs]
    assert seeds[:3] == [0, 3, 7] and len(set(seeds[3:]) - {0, 3, 7}) == 2  # the assignment's, then two drawn
    assert all("yours" in names and "faulted" not in names for _, _, names in runs[1:])  # clean against yours only


def test_grading_judges_every_repair_at_two_hidden_seeds_at_the_least(tmp_path, catalog):
    folder = tmp_path / "fixes" / "ada"
    folder.mkdir(parents=True)
    (folder / "head-split.py").write_text(subject(catalog, "head-split"), encoding="utf-8")
    plan = tmp_path / "a.toml"
    plan.write_text('[[exercises]]\nid = "head-split"\nhidden_seeds = [7]\n')
    reply, _ = run_command(["grade", "--fixes", str(tmp_path / "fixes"), "--out", str(tmp_path / "o")])
    seeds = [seed for _, seed, _ in FixRunner.made[-1].runs]
    assert seeds[0] == 0 and len(set(seeds[1:])) == 2 and 0 not in seeds[1:]  # two drawn now
    FixRunner.made.clear()
    run_command(["grade", "--fixes", str(tmp_path / "fixes"), "--out", str(tmp_path / "o2"), "--assignment",
                 str(plan), "--hidden-seeds", "3"])
    seeds = [seed for _, seed, _ in FixRunner.made[-1].runs]
    assert seeds[:2] == [0, 7] and len(set(seeds[2:]) - {0, 7}) == 3  # the assignment's first, then three drawn
    assert reply.data["rows"][0]["verdict"] == "fixed"


# --- Gradescope --------------------------------------------------------------------------------------

def validate(result):
    import jsonschema
    schema = json.loads((Path(__file__).parent / "schemas" / "gradescope_results.json").read_text())
    jsonschema.validate(result, schema)


def autograder(tmp_path, files: dict, assignment: str, meta: dict | None = None):
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "source").mkdir()
    for name, text in files.items():
        (root / "submission" / name).write_text(text, encoding="utf-8")
    (root / "source" / "assignment.toml").write_text(assignment)
    (root / "submission_metadata.json").write_text(json.dumps(meta or {
        "users": [{"email": "ada@uni.edu", "name": "Ada", "id": 1}], "created_at": "2026-11-30T10:00:00Z",
        "assignment": {"due_date": "2026-12-05T23:59:00Z", "title": "Week 1"}}))
    return root


def test_one_submission_gives_one_gradescope_results_json(tmp_path, catalog):
    root = autograder(tmp_path, {"answers.toml": 'head-split = "b"\nbroadcast-loss = "(3,)"\nnope = "1"\n',
                                 "skip-zero-grad.py": subject(catalog, "skip-zero-grad")},
                      '[[exercises]]\nid = "head-split"\npoints = 2\n[[exercises]]\nid = "broadcast-loss"\n'
                      '[[exercises]]\nid = "skip-zero-grad"\nvisibility = "after_published"\n')
    reply, _ = run_command(["gradescope", "--root", str(root)])
    result = json.loads((root / "results" / "results.json").read_text())
    validate(result)
    assert reply.code == 0 and result == reply.data["result"]
    assert (result["score"], [t["score"] for t in result["tests"]]) == (3.0, [2.0, 0.0, 1.0])
    assert [t["max_score"] for t in result["tests"]] == [2.0, 1.0, 1.0]
    assert [t["status"] for t in result["tests"]] == ["passed", "failed", "passed"]
    assert [t["visibility"] for t in result["tests"]] == ["visible", "visible", "after_published"]
    assert result["extra_data"]["learner"] == "ada@uni.edu" and "'nope'" in result["output"]
    assert result["tests"][0]["output"] == "You predicted b. The check observed b. Your prediction matched."


def test_observations_stay_hidden_until_the_due_date(tmp_path, catalog):
    from tutor.instructor.results import learner_result
    plan = assignments.parse({"due": "2026-12-05T23:59:00Z", "observations": "after_due_date",
                              "exercises": ["head-split"]}, catalog)
    row = {"exercise": "head-split", "status": "fail", "prediction_text": "a", "observed_text": "b", "mode": "predict",
           "learner": "ada", "line": 1}
    before = learner_result([row], plan, {}, dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc))
    after = learner_result([row], plan, {}, dt.datetime(2026, 12, 6, tzinfo=dt.timezone.utc))
    validate(before)
    assert before["tests"][0]["output"] == ("Your prediction a was recorded. Whether it is right, and what the check "
                                            "observed, are shown after the due time (2026-12-05T23:59+00:00).")
    assert "did not match" not in json.dumps(before) and "observed b" not in json.dumps(before)
    assert before["tests"][0]["extra_data"]["status"] == "recorded"
    assert (before["visibility"], before["tests"][0]["visibility"]) == ("after_due_date", "after_due_date")
    assert "0 of 1 exercises matched" not in before["output"] and "1 of 1 exercises answered" in before["output"]
    assert "The check observed b." in after["tests"][0]["output"] and after["visibility"] == "visible"
    fix = {**row, "mode": "fix", "verdict": "not fixed", "reason": "not fixed: clean observes 1, yours observes 2",
           "observed_text": "2"}
    hidden = learner_result([fix], plan, {}, dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc))
    assert "observes" not in json.dumps(hidden) and "not fixed" not in json.dumps(hidden)
    assert hidden["tests"][0]["output"].startswith("Your repair was recorded.")


def test_a_submission_that_cannot_be_graded_still_writes_results_json(tmp_path):
    root = autograder(tmp_path, {}, 'exercises = ["head-split"]\n')
    reply, _ = run_command(["gradescope", "--root", str(root)])
    result = json.loads((root / "results" / "results.json").read_text())
    validate(result)
    assert reply.code == 2 and result["score"] == 0.0 and "nothing to grade" in result["output"]
    [test] = result["tests"]  # the assignment's exercises are listed, each at 0 with the reason
    assert (test["name"], test["score"], test["max_score"]) == ("head-split", 0.0, 1.0)
    assert "nothing to grade" in test["output"]


@pytest.mark.parametrize("files, said", [
    ({"answers.toml": 'head-split = "b"\n'}, "Gradescope result: 2 of 3 points over 2 tests"),
    ({}, "Gradescope result: 0 of 3 points over 2 tests"),  # not graded: the assignment's points still
])
def test_the_gradescope_log_says_the_assignments_points(tmp_path, files, said):
    from rich.console import Console
    from tutor.cli.output import RichOutput
    root = autograder(tmp_path, files, '[[exercises]]\nid = "head-split"\npoints = 2\n[[exercises]]\nid = "cache-offset"\n')
    reply, _ = run_command(["gradescope", "--root", str(root)])
    shown = RichOutput()
    shown._console = Console(record=True, width=200, file=io.StringIO())
    shown.show(reply)
    assert said in shown._console.export_text()


def test_the_autograder_scripts_call_tutor_gradescope():
    docs = Path(__file__).resolve().parent.parent / "docs" / "gradescope"
    assert "tutor gradescope" in (docs / "run_autograder").read_text()
    assert "torch==2.13.0" in (docs / "setup.sh").read_text()


# --- a class across machines -----------------------------------------------------------------------

def test_shards_split_learners_stably_and_merge_joins_them(tmp_path):
    from test_grade import FakeRunner, command
    lines = ["learner,exercise,answer"] + [f"learner{n}@x.org,head-split,{'b' if n % 3 else 'a'}" for n in range(30)]
    answers = tmp_path / "class.csv"
    answers.write_text("\n".join(lines) + "\n")
    outs = []
    for k in (1, 2, 3):
        out = tmp_path / f"shard{k}"
        command(["grade", "--answers", str(answers), "--shard", f"{k}/3", "--out", str(out), "--exercises",
                 "head-split"])
        outs.append(out)
    parts = [{r["learner"] for r in gradebook.read_rows(o)} for o in outs]
    assert sum(len(p) for p in parts) == 30 and not (parts[0] & parts[1]) and all(parts)
    # Pinned, worked out apart from the code (1 + the first 8 bytes of SHA-256, big-endian, mod N): a learner's
    # shard is the same on every machine and every run.
    assert shard.number("learner1@x.org", 3) == 1
    assert shard.number("ada", 4) == 3
    reply, _ = command(["grade", "merge", *map(str, outs), "--out", str(tmp_path / "all"), "--exercises", "head-split"])
    merged = json.loads((tmp_path / "all" / "results.json").read_text())
    assert len(merged["learners"]) == 30 and sum(e["score"] for e in merged["learners"]) == 20.0
    assert [r["line"] for r in gradebook.read_rows(tmp_path / "all")] == list(range(2, 32))


def test_a_bad_shard_is_one_sentence():
    from tutor.cli.replies import UsageError
    for text in ("0/3", "4/3", "a/b", "1"):
        with pytest.raises(UsageError, match="--shard takes K/N"):
            shard.parse(text)


def test_a_report_read_by_several_processes_counts_what_one_process_counts(tmp_path, catalog):
    from tutor.instructor.report import build_report
    from tutor.model.attempts import Attempt
    from tutor.store.progress import ProgressStore
    store = ProgressStore(tmp_path)
    for n in range(12):
        for k, (prediction, right) in enumerate((("a", False), ("b", True))[: 1 + n % 2]):
            store.record_attempt(f"learner{n}@x.org", "head-split", Attempt(
                time=f"2026-11-29T10:0{k}:00+00:00", prediction=prediction, observed="b", correct=right,
                status="pass" if right else "fail", device="cpu", engine_hash="x", confidence=60 + n))
    (tmp_path / "broken.toml").write_text("not = [toml")
    one = build_report(tmp_path, catalog, jobs=1).to_dict()
    three = build_report(tmp_path, catalog, jobs=3).to_dict()
    assert one == three
    [hs] = one["exercises"]
    assert (hs["tried"], hs["solved_first"], hs["solved_latest"], hs["median_attempts"]) == (12, 0, 6, 1.5)
    assert len(one["damaged"]) == 1 and one["learner_count"] == 12 and len(one["calibration"]) == 12
