"""Edit mode's pure parts: tasks, the learner's diff, patches, verdicts, progress format 2,
working copies. No worker runs here; ``test_fix_*.py`` run the real checks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from exercises.faults import source_root
from tutor.app.tasks import DEFAULT_SUBJECT, HUNT_CHECK, break_task, fix_task, task_for
from tutor.model.patch import (EditError, MAX_EDIT_BYTES, PatchError, apply_patch, check_text, syntax_problem,
                               unified_diff)
from tutor.model.verdict import Verdict, evidence_reproduces, judge, observe_break, same_observation
from tutor.store.catalog_cache import load_catalog
from tutor.model.attempts import Attempt, ProgressError
from tutor.store.migration import classify
from tutor.store.progress import ProgressStore
from tutor.sandbox.protocol import Answer, SideResult
from tutor.sandbox.runner import grade
from tutor.app.session import Session

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def faulted_exercises(cat):
    return [ex for ex in cat.exercises if ex.fault]


# --- tasks ---------------------------------------------------------------------

def test_a_fix_starts_from_the_faulted_file_and_a_break_from_the_clean_one(cat):
    ex = cat.get("head-split")
    fault = cat.fault_of(ex)
    clean = (source_root() / "engine/model.py").read_text(encoding="utf-8")
    fix = task_for(cat, ex, "fix")
    assert (fix.mode, fix.path, fix.clean, fix.fault) == ("fix", "engine/model.py", clean, fault)
    assert fix.start == clean.replace(fault.before, fault.after, 1) != clean
    assert fix.engine and fix.key == "fix"
    broken = task_for(cat, ex, "break")
    assert (broken.start, broken.fault, broken.key) == (clean, None, "break")
    assert [s.name for s in fix.sides("x")] == ["clean", "repeat", "faulted", "yours"]
    assert [s.name for s in broken.sides("x")] == ["clean", "repeat", "yours"]
    assert [s.name for s in fix.sides("x", repeat=False)] == ["clean", "faulted", "yours"]
    assert fix.sides("x")[-1].files == (("engine/model.py", "x"),)


def test_an_exercise_without_a_fault_has_nothing_to_fix_but_can_be_broken(cat):
    ex = cat.get("compile-equivalence")
    with pytest.raises(EditError, match="has no fault to fix; try 'tutor break compile-equivalence'"):
        fix_task(cat, ex)
    assert break_task(cat, ex).path == DEFAULT_SUBJECT


def test_the_capstone_hunt_hides_its_fault_and_skips_a_mystery_without_one(cat):
    from exercises.mysteries import hidden_fault
    ex = cat.get("audit")
    clean_seed = next(seed for seed in range(20) if hidden_fault(seed) == "none")
    task = task_for(cat, ex, "fix", clean_seed)
    assert task.mode == "hunt" and task.hidden and task.seed == clean_seed + 1
    assert task.fault.id == hidden_fault(clean_seed + 1) != "none"
    assert task.exercise.check == HUNT_CHECK and task.key == f"hunt-{task.seed}"
    # the learner's diff is against the file they were given, so the fault's text never shows in it
    assert task.diff(task.start) == ""
    assert task.fault.before not in task.diff(task.start + "# mine\n")
    with pytest.raises(EditError, match="only the capstone is hunted"):
        task_for(cat, cat.get("head-split"), "hunt")


# --- the learner's text, diffs and patches -----------------------------------------

def test_every_faults_reverse_diff_applies_to_the_faulted_file_and_gives_the_clean_one(cat):
    for ex in faulted_exercises(cat):
        task = fix_task(cat, ex)
        for context in (0, 3):
            patch = unified_diff(task.path, task.start, task.clean, context)
            assert apply_patch(task.start, patch, task.path) == task.clean, ex.id


def test_a_patch_applies_where_its_lines_moved_and_names_the_hunk_that_does_not():
    text = "".join(f"line {n}\n" for n in range(1, 31))
    patch = textwrap.dedent("""\
        --- a/f.py
        +++ b/f.py
        @@ -10,3 +10,3 @@
         line 12
        -line 13
        +line 13 changed
         line 14
        @@ -20,2 +20,2 @@
        -line 25
        +line 25 changed
         line 26
        """)
    out = apply_patch(text, patch, "f.py")
    assert "line 13 changed\n" in out and "line 25 changed\n" in out and out.count("\n") == 30
    with pytest.raises(PatchError, match=r"hunk 2 \(@@ -20,2 \+20,2 @@\) does not apply to f.py: .*'line 99'"):
        apply_patch(text, patch.replace("-line 25", "-line 99"), "f.py")
    with pytest.raises(PatchError, match="holds no hunk"):
        apply_patch(text, "just words\n", "f.py")
    with pytest.raises(PatchError, match="hunk 1 .* ends before"):
        apply_patch(text, "@@ -1,3 +1,3 @@\n line 1\n-line 2\n", "f.py")


def test_a_patch_that_drops_the_last_newline_round_trips():
    before, after = "a\nb\n", "a\nc"
    patch = unified_diff("f.py", before, after)
    assert "\\ No newline at end of file" in patch
    assert apply_patch(before, patch, "f.py") == after


def test_a_syntax_error_is_named_by_its_line_and_large_or_binary_edits_are_refused():
    problem = syntax_problem("engine/model.py", "x = 1\ndef f(:\n")
    assert problem.startswith("SyntaxError in your engine/model.py at line 2, column ")  # the column varies by Python
    assert problem.endswith(": invalid syntax")
    assert syntax_problem("engine/model.py", "x = 1\n") is None
    with pytest.raises(EditError, match="over 64 KiB are refused"):
        check_text("engine/model.py", "#" * (MAX_EDIT_BYTES + 1))
    with pytest.raises(EditError, match="NUL byte"):
        check_text("engine/model.py", "x = 1\x00")
    assert check_text("engine/model.py", "a\r\nb\r") == "a\nb\n"


def test_a_diff_over_64_kib_is_refused_before_anything_runs(cat):
    session = Session(cat, runner=None)
    task = fix_task(cat, cat.get("softmax-axis"))  # a small snippet file
    text = task.start + "".join(f"# {n:05d} {'x' * 50}\n" for n in range(1200))  # about 67 KB of new lines
    assert len(text.encode()) < MAX_EDIT_BYTES + 20_000
    with pytest.raises(EditError):
        session.start_edit(task, text)


# --- verdicts --------------------------------------------------------------------

def table(title, rows, columns=("quantity", "value")):
    return {"type": "table", "title": title, "columns": list(columns), "rows": rows}


def measured(observed, rows, series=None):
    evidence = [table("Facts", rows)]
    if series is not None:
        evidence.append({"type": "series", "title": "loss", "label": "", "values": series})
    return SideResult(status="ok", observed=observed, evidence=evidence)


def result_of(ex, **sides):
    return grade(ex, Answer(job=1, torch="t", device="cpu", duration_s=0.1, sides=sides))


def test_fixed_needs_the_clean_observation_and_the_evidence_behind_it(cat):
    ex = cat.get("head-split")
    clean = measured("a", [["first head", "kept"], ["max |Δ|", "0"]], [3.0, 2.0, 1.0])
    same = measured("a", [["first head", "kept"], ["max |Δ|", "1e-9"]], [3.0, 2.00001, 1.0])
    verdict = judge(ex, result_of(ex, clean=clean, repeat=clean, faulted=measured("b", []), yours=same))
    assert (verdict.status, verdict.fixed, verdict.ran, verdict.difference) == ("fixed", True, True, None)
    # the observation a constant could fake, without the behaviour behind it
    fake = measured("a", [["first head", "positions mixed"], ["max |Δ|", "0"]], [3.0, 2.0, 1.0])
    verdict = judge(ex, result_of(ex, clean=clean, repeat=clean, yours=fake))
    assert verdict.status == "not fixed" and verdict.fixed is False
    assert verdict.difference == "table 'Facts', row 1 (first head): value: yours positions mixed · clean kept"
    # a different observation names the first point that differs
    other = measured("b", [["first head", "kept"], ["max |Δ|", "0"]], [3.0, 2.5, 1.0])
    verdict = judge(ex, result_of(ex, clean=clean, repeat=clean, yours=other))
    assert verdict.sentence == ("not fixed: yours observes b, clean observes a; first difference: "
                                "series 'loss', point 2: yours 2.5 · clean 2")


def test_what_does_not_reproduce_on_the_clean_code_is_not_held_against_yours(cat):
    ex = cat.get("phase-ledger")  # a timing: the clean code's own outcome varies from run to run
    clean = measured("c", [["backward ms", "10.2"], ["loss ms", "0.16"], ["threads", "1"]])
    repeat = measured("e", [["backward ms", "7.9"], ["loss ms", "0.16"], ["threads", "1"]])
    yours = measured("e", [["backward ms", "8.4"], ["loss ms", "0.17"], ["threads", "1"]])
    result = result_of(ex, clean=clean, repeat=repeat, yours=yours)
    assert not evidence_reproduces(result)
    verdict = judge(ex, result)
    assert verdict.status == "fixed" and "varies from run to run" in verdict.sentence
    # a small timing can round alike on the clean code's two runs: it is named, not held against yours
    assert verdict.difference == "table 'Facts', row 2 (loss ms): value: yours 0.17 · clean 0.16"
    assert "only the observation counts" in verdict.sentence
    yours = measured("d", [["backward ms", "8.4"], ["threads", "2"]])
    verdict = judge(ex, result_of(ex, clean=clean, repeat=repeat, yours=yours))
    assert verdict.status == "not fixed" and "row 2: quantity: yours threads" in verdict.difference


def test_a_side_that_raised_timed_out_or_a_clean_side_that_did_not_measure(cat):
    ex = cat.get("head-split")
    clean = measured("a", [])
    raised = SideResult(status="error", error="NameError: name 'q' is not defined (model.py:40)")
    verdict = judge(ex, result_of(ex, clean=clean, yours=raised))
    assert (verdict.status, verdict.yours_status) == ("not fixed", "error") and "NameError" in verdict.sentence
    slow = SideResult(status="timeout", error="the check did not finish within 30 s and was stopped")
    assert judge(ex, result_of(ex, clean=clean, yours=slow)).yours_status == "timeout"
    verdict = judge(ex, result_of(ex, clean=raised, yours=clean))
    assert (verdict.status, verdict.fixed, verdict.ran) == ("could not run", None, False)


def test_observations_agree_within_the_exercises_tolerance_and_nan_equals_nan(cat):
    number = next(ex for ex in cat.exercises if ex.kind.name == "number" and ex.tolerance > 0)
    assert same_observation(number, 1.0, 1.0 + number.tolerance / 2)
    assert not same_observation(number, 1.0, 1.0 + number.tolerance * 3)
    assert same_observation(number, float("nan"), float("nan"))
    assert same_observation(cat.get("gather-repeat"), [1.0, float("nan")], [1.0, float("nan")])


def test_a_break_names_what_changed_and_grades_a_prediction_of_the_kind_or_an_exception(cat):
    ex = cat.get("head-split")
    clean = measured("a", [["first head", "kept"]])
    changed = measured("b", [["first head", "mixed"]])
    verdict = observe_break(ex, result_of(ex, clean=clean, repeat=clean, yours=changed), "b")
    assert (verdict.status, verdict.prediction_correct, verdict.fixed) == ("changed", True, None)
    assert "first divergence: table 'Facts', row 1 (first head)" in verdict.sentence
    verdict = observe_break(ex, result_of(ex, clean=clean, yours=clean), "a")
    assert (verdict.status, verdict.prediction_correct) == ("unchanged", True)
    raised = SideResult(status="error", error="RuntimeError: shapes cannot be multiplied (linear.py:134)")
    verdict = observe_break(ex, result_of(ex, clean=clean, yours=raised), "RuntimeError")
    assert (verdict.status, verdict.prediction_correct) == ("changed", True)
    verdict = observe_break(ex, result_of(ex, clean=clean, yours=changed), "the heads mix positions")
    assert verdict.prediction_correct is None  # free text is kept, not graded


# --- progress: format 2, the pinned migration, working copies ------------------------

FORMAT_1 = '''format_version = 1
learner = "ada"

[exercises.head-split]
note = "positions mix"
note_time = "2026-11-29T10:02:00+00:00"

[[exercises.head-split.attempts]]
time = "2026-11-29T10:01:00+00:00"
prediction = "b"
observed = "b"
correct = true
status = "pass"
device = "cpu"
engine_hash = "3f2a9c0d1b7e"
seed = 0
'''


def test_a_format_1_file_loads_as_predictions_and_is_written_as_format_2_on_the_next_save(tmp_path, cat):
    path = tmp_path / "ada.toml"
    path.write_text(FORMAT_1)
    store = ProgressStore(tmp_path)
    loaded = store.load("ada")
    [attempt] = loaded.of("head-split").attempts
    assert (attempt.mode, attempt.diff, attempt.verdict, attempt.prediction) == ("predict", "", "", "b")
    assert path.read_text() == FORMAT_1  # reading never rewrites
    assert classify(FORMAT_1.encode()).data["format_version"] == 2
    ex = cat.get("head-split")
    verdict = Verdict("fix", "fixed", "fixed", yours_status="ok", yours_observed="a")
    result = grade(ex, Answer(job=1, torch="t", device="cpu", duration_s=0.1, sides={}))
    store.record_attempt("ada", "head-split", Attempt.of_edit(result, "fix", "--- a\n+++ b\n", verdict))
    data = tomllib.loads(path.read_text())
    assert data["format_version"] == 2
    old, new = data["exercises"]["head-split"]["attempts"]
    assert old == {"time": "2026-11-29T10:01:00+00:00", "prediction": "b", "observed": "b", "correct": True,
                   "status": "pass", "device": "cpu", "engine_hash": "3f2a9c0d1b7e", "seed": 0, "mode": "predict"}
    assert (new["mode"], new["diff"], new["verdict"], new["correct"], new["observed"], new["status"]) == \
        ("fix", "--- a\n+++ b\n", "fixed", True, "a", "ok")
    assert data["exercises"]["head-split"]["note"] == "positions mix"
    progress = store.load("ada").of("head-split")
    assert [a.mode for a in progress.predictions] == ["predict"] and [a.mode for a in progress.edits()] == ["fix"]


def test_edit_attempts_neither_solve_an_exercise_nor_move_the_capstones_mystery(tmp_path, cat):
    store = ProgressStore(tmp_path)
    ex = cat.get("audit")
    result = grade(ex, Answer(job=1, torch="t", device="cpu", duration_s=0.1, sides={}))
    verdict = Verdict("hunt", "fixed", "fixed", yours_status="ok", yours_observed="none")
    store.record_attempt("ada", "audit", Attempt.of_edit(result, "hunt", "", verdict))
    session = Session(cat, runner=None, store=store, learner="ada")
    session.load()
    assert not session.progress_of("audit").solved  # a hunt's "fixed" is not a right prediction
    # The hunt showed mystery 0 before any prediction met it, so that mystery is spent: the next
    # prediction meets mystery 1 (the hunt does not count as a prediction, it only spoils one).
    assert session.seed_for(ex) == 1


def test_working_copies_live_in_the_progress_folder_and_a_fresh_start_keeps_the_old_one(tmp_path):
    store = ProgressStore(tmp_path)
    assert store.load_working_copy("ada", "head-split", "fix", "engine/model.py") is None
    path = store.save_working_copy("ada", "head-split", "fix", "engine/model.py", "x = 1\n")
    assert path == tmp_path / "work" / "ada" / "head-split" / "fix" / "model.py"
    assert store.load_working_copy("ada", "head-split", "fix", "engine/model.py") == "x = 1\n"
    store.save_working_copy("ada", "head-split", "fix", "engine/model.py", "x = 2\n")
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    assert store.discard_working_copy("ada", "head-split", "fix", "engine/model.py") == \
        path.with_name("model.py.previous")
    assert store.load_working_copy("ada", "head-split", "fix", "engine/model.py") is None
    assert path.with_name("model.py.previous").read_text() == "x = 2\n"
    for bad in ("../x", "A", "x/y"):
        with pytest.raises(ProgressError):
            store.working_copy_path("ada", bad, "fix", "engine/model.py")
    with pytest.raises(ProgressError):
        store.working_copy_path("../ada", "head-split", "fix", "engine/model.py")
    assert store.learners() == []  # working copies are not learners' files


WRITER = textwrap.dedent('''
    import sys
    from tutor.store.progress import ProgressStore
    store = ProgressStore(sys.argv[1])
    texts = [("a = %d\\n" % n) * 6000 for n in range(2)]  # 42 KB each: a write takes a while
    n = 0
    while True:
        store.save_working_copy("ada", "head-split", "fix", "engine/model.py", texts[n % 2])
        n += 1
        if n == 3:
            print("writing", flush=True)
''')


def test_the_working_copy_survives_a_sigkill_mid_save(tmp_path):
    texts = {("a = %d\n" % n) * 6000 for n in range(2)}
    path = tmp_path / "work" / "ada" / "head-split" / "fix" / "model.py"
    for delay in (0.05, 0.13, 0.31):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline() == "writing\n"  # saving in a loop now
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        assert path.read_text() in texts  # the old copy or the new one, never half of one


@pytest.mark.parametrize("module", ["tutor.model.verdict", "tutor.model.patch", "tutor.app.tasks", "tutor.app.run",
                                    "tutor.app.session", "tutor.cli"])
def test_edit_mode_domain_imports_neither_torch_nor_textual(module):
    code = (f"import sys, {module}; from tutor.store.catalog_cache import load_catalog; from tutor.app.tasks import task_for; "
            "c = load_catalog(); task_for(c, c.get('audit'), 'hunt', 0); "
            "bad = [m for m in ('torch', 'textual') if m in sys.modules]; print(','.join(bad)); "
            "sys.exit(1 if bad else 0)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, f"{module} loaded {proc.stdout.strip()} {proc.stderr[-300:]}"


def test_evidence_a_check_marks_as_varying_is_never_held_against_yours(cat):
    ex = cat.get("empty-init")
    title = "A fresh torch.empty(64, 128), unfilled (varies from run to run)"
    clean = SideResult(status="ok", observed="none", evidence=[table(title, [["values", "min -40, max 1.46e+37"]])])
    yours = SideResult(status="ok", observed="none", evidence=[table(title, [["values", "holds non-finite values"]])])
    verdict = judge(ex, result_of(ex, clean=clean, repeat=clean, yours=yours))
    assert (verdict.status, verdict.difference) == ("fixed", None)
