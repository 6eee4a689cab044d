"""Edit mode through the real worker: repairs judged by measurement, never by their text.

Different-but-correct repairs pass; "repairs" that fake the observation without the behaviour
behind it (a constant, a deleted computation) do not; a learner's file that hangs, floods its
output or does not compile is an outcome; the capstone's hunt; Break it; the engine's
instruments; and ``tutor fix`` / ``tutor break`` through subprocess (JSON and exit codes).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace

import pytest

from tutor.app.tasks import break_task, fix_task
from tutor.model.patch import unified_diff
from tutor.model.verdict import Verdict, first_instrument_divergence, instruments_holding
from tutor.cli.learner import edit_exit_code
from tutor.app.outcome import EditOutcome
from tutor.app.session import Session


@pytest.fixture(scope="module")
def session(catalog, runner):
    return Session(catalog, runner)


def edited(session, exercise_id: str, old: str, new: str, mode: str = "fix") -> str:
    """The file the learner starts ``mode`` from, with ``old`` (which must occur once) replaced by ``new``."""
    task = session.edit_task(session.catalog.get(exercise_id), mode)
    assert task.start.count(old) == 1, f"{old!r} is not in {task.path} exactly once"
    return task.start.replace(old, new)


# --- repairs are judged by what they do --------------------------------------------

#: (exercise, the faulted line, a different repair that is just as correct)
DIFFERENT_BUT_CORRECT = [
    # the example: reshape instead of view + contiguous for head-merge
    ("head-merge", "    return x.reshape(B, T, H * D)  # (B, T, C)",
     "    return x.transpose(1, 2).reshape(B, T, H * D)  # (B, T, C)"),
    ("head-split", "    return x.reshape(B, n_head, T, C // n_head)  # (B, H, T, D)",
     "    return x.reshape(B, T, n_head, C // n_head).permute(0, 2, 1, 3)  # (B, H, T, D)"),
    ("misaligned-targets", "    y = torch.stack([data[i : i + block_size] for i in starts])",
     "    y = torch.stack([data[i : i + block_size + 1][1:] for i in starts])"),
    # a softmax written out by hand: the same probabilities up to float rounding
    ("softmax-axis", "    return F.softmax(logits, dim=1)  # normalise",
     "    shifted = (logits - logits.amax(dim=-1, keepdim=True)).exp()\n"
     "    return shifted / shifted.sum(dim=-1, keepdim=True)"),
]


@pytest.mark.parametrize("exercise_id, old, new", DIFFERENT_BUT_CORRECT, ids=[c[0] for c in DIFFERENT_BUT_CORRECT])
def test_a_different_but_correct_repair_is_fixed(session, catalog, exercise_id, old, new):
    text = edited(session, exercise_id, old, new)
    task = session.edit_task(catalog.get(exercise_id), "fix")
    assert text != task.clean  # not the reverse edit
    outcome = session.fix(catalog.get(exercise_id), text)
    assert outcome.verdict.status == "fixed", outcome.verdict.sentence
    assert new.splitlines()[0] in outcome.diff  # the diff against clean shows the learner's own line


#: (exercise, text in the faulted file, a "repair" that fakes the observation, what gives it away)
FAKES = [
    # every row sums to 1 — the observation — but it is not the softmax of these logits
    ("softmax-axis", "    return F.softmax(logits, dim=1)  # normalise",
     "    return torch.full_like(logits, 1.0 / logits.size(-1))", "Sums of probs"),
    # nothing raises — the observation — because the computation under test is gone
    ("token-logprob", "    return log_probs.gather(-1, index).squeeze(-1)  # (B, T, 1) -> (B, T)",
     "    return torch.zeros(targets.shape, dtype=logits.dtype)", "Batch 0"),
    # the banned pairs become -inf — the observation — but so does token 4 in every row: a new bug
    ("index-assign", "    banned = logits[rows, cols]  # the entries to forbid\n    banned.fill_(float(\"-inf\"))",
     "    logits[rows, cols] = float(\"-inf\")\n    logits[:, 4] = float(\"-inf\")", "The logits after ban_tokens"),
]


@pytest.mark.parametrize("exercise_id, old, new, table", FAKES, ids=[c[0] for c in FAKES])
def test_a_repair_that_fakes_the_observation_is_caught_by_the_evidence(session, catalog, exercise_id, old, new,
                                                                       table):
    outcome = session.fix(catalog.get(exercise_id), edited(session, exercise_id, old, new))
    verdict = outcome.verdict
    assert outcome.result.observations["yours"] == outcome.result.observations["clean"]  # the fake observation
    assert verdict.status == "not fixed", verdict.sentence
    assert "as the clean code does, but the evidence behind it differs" in verdict.sentence
    assert verdict.difference.startswith(f"table {table!r}")


def test_a_repair_that_bans_more_than_asked_names_the_entry_and_one_that_copies_seed_0_fails_unseen(session,
                                                                                                      catalog):
    ex = catalog.get("index-assign")
    faulted = "    banned = logits[rows, cols]  # the entries to forbid\n    banned.fill_(float(\"-inf\"))"
    over = session.fix(ex, edited(session, "index-assign", faulted,
                                  "    logits[rows, cols] = float(\"-inf\")\n    logits[:, 4] = float(\"-inf\")"))
    assert over.verdict.difference == \
        "table 'The logits after ban_tokens', row 1 (logits[0]): token 4: yours -inf · clean 0"
    # seed 0's pairs written in by hand: the clean code's own output there, but not ban_tokens at another seed
    copied = edited(session, "index-assign", faulted,
                    "    logits[0, 3] = float(\"-inf\")\n    logits[1, 0] = float(\"-inf\")")
    verdict = session.fix(ex, copied, seeds=(1,), hidden_seeds=1).verdict
    assert verdict.status == "not fixed" and verdict.sentence.startswith("not fixed at a hidden seed"), verdict.sentence


def test_a_repair_with_the_right_shape_and_scrambled_entries_differs_in_the_whole_output(session, catalog):
    """batched-transpose observes the keys' shape: a reshape to (B, H, D, T) has it, with every entry in the
    wrong place. The check records keys_for_scores' whole output, so the repair is not fixed, the slice named."""
    ex = catalog.get("batched-transpose")
    text = edited(session, "batched-transpose", "    return k.T  # the transpose",
                  "    return k.reshape(*k.shape[:-2], k.shape[-1], k.shape[-2])  # the transposed shape")
    verdict = session.fix(ex, text).verdict
    assert verdict.yours_observed == [2, 3, 4, 5]  # the graded shape, as the clean code's
    assert verdict.status == "not fixed", verdict.sentence
    assert verdict.difference.startswith("table 'What keys_for_scores(k) returns, all of it', row 1 "
                                         "(keys_for_scores(k)[0]): position-weighted sum: yours "), verdict.difference
    right = edited(session, "batched-transpose", "    return k.T  # the transpose", "    return k.mT  # the transpose")
    assert session.fix(ex, right).verdict.status == "fixed"  # a different but correct repair still is


# --- what a learner's file can do wrong is an outcome ----------------------------------

def test_a_file_with_a_syntax_error_names_the_line_and_runs_nothing(session, catalog):
    outcome = session.fix(catalog.get("softmax-axis"), "def next_token_probs(logits:\n    return logits\n")
    assert outcome.verdict.status == "syntax error" and outcome.verdict.fixed is False
    assert outcome.result.status == "error" and "at line 1" in outcome.result.errors["yours"]
    assert edit_exit_code(outcome) == 1
    from tutor.render.edit import render_edit
    shown = [part.plain for part in render_edit(catalog.get("softmax-axis"), outcome) if hasattr(part, "plain")]
    assert not any(line.startswith("device ") for line in shown), shown  # nothing ran: no device line


def test_a_wrong_repair_that_raises_in_torch_names_the_learners_line(session, catalog):
    old = "    return F.softmax(logits, dim=1)  # normalise"
    text = edited(session, "softmax-axis", old, "    return F.softmax(logits, dim=5)  # normalise")
    task = session.edit_task(catalog.get("softmax-axis"), "fix")
    line = text.splitlines().index("    return F.softmax(logits, dim=5)  # normalise") + 1
    outcome = session.fix(catalog.get("softmax-axis"), text)
    assert outcome.verdict.status == "not fixed"
    error = outcome.result.errors["yours"]
    # the learner's file and line first; torch's frame (functional.py) only as where it was raised
    assert f"({task.path}:{line} in your file; raised in functional.py:" in error, error
    assert "in your file" not in outcome.result.errors.get("clean", "")


def test_a_file_that_hangs_times_out_and_is_not_fixed(session, catalog):
    ex = replace(catalog.get("softmax-axis"), timeout_s=3.0)
    outcome = session.fix(ex, "while True:\n    pass\n")
    assert outcome.verdict.status == "not fixed" and outcome.verdict.yours_status == "timeout"
    # the limit is the exercise's 3 s, scaled by the machine's measured speed
    assert "did not finish within" in outcome.verdict.yours_error
    assert "this exercise's 3 s" in outcome.verdict.yours_error
    assert "clean" in outcome.result.observations  # the other sides measured meanwhile


def test_a_file_that_floods_its_output_gives_an_excerpt_and_still_a_verdict(session, catalog):
    task = session.edit_task(catalog.get("softmax-axis"), "fix")
    outcome = session.fix(catalog.get("softmax-axis"), "print('x' * 300_000)\n" + task.clean)
    assert outcome.verdict.status == "fixed"
    printed = outcome.result.output["yours"]
    assert len(printed) < 3000 and "more bytes of output not shown" in printed


# --- the capstone's hunt, Break it, the instruments --------------------------------------

def test_the_hunt_is_fixed_when_the_hidden_fault_is_undone_and_not_before(session, catalog):
    ex = catalog.get("audit")
    task = session.edit_task(ex, "hunt", seed=1)
    assert task.hidden and task.fault is not None
    outcome = session.hunt(ex, task.start, seed=1)
    assert outcome.verdict.status == "not fixed"
    assert outcome.result.observations["yours"] == outcome.result.observations["faulted"] != "none"
    outcome = session.hunt(ex, task.clean, seed=1)
    assert outcome.verdict.status == "fixed", outcome.verdict.sentence
    assert "every audit link holds" in outcome.verdict.sentence


def test_break_it_shows_what_the_learners_own_fault_does_and_grades_the_prediction(session, catalog):
    ex = catalog.get("head-split")
    fault = catalog.fault_of(ex)
    text = edited(session, "head-split", fault.before, fault.after, mode="break")
    outcome = session.break_it(ex, text, "b", instruments=True)
    verdict = outcome.verdict
    assert (verdict.status, verdict.prediction_correct, outcome.prediction) == ("changed", True, "b")
    assert verdict.difference is not None and "head split" in verdict.difference
    rows = {row["link"]: row for row in instruments_holding(outcome.instruments)}
    assert (rows["CAUSALITY"]["clean"], rows["CAUSALITY"]["yours"]) == ("holds", "fails")
    assert rows["ALIGNMENT"]["yours"] == "holds"
    assert first_instrument_divergence(outcome.instruments).startswith(
        "CAUSALITY: holds on clean, fails on yours — future-token intervention: the past moved")


def test_the_instruments_hold_on_a_repaired_engine_and_fail_where_the_fault_shows(session, catalog):
    ex = catalog.get("cache-offset")
    task = session.edit_task(ex, "fix")
    outcome = session.fix(ex, task.clean, instruments=True)
    rows = {row["link"]: row for row in instruments_holding(outcome.instruments)}
    assert rows["CACHE"]["faulted"] == "fails" and rows["CACHE"]["yours"] == "holds"
    assert all(row["clean"] == "holds" and row["yours"] == "holds" for row in rows.values()), rows
    assert set(rows) == set(__import__("exercises.edit_mode", fromlist=["x"]).INSTRUMENT_LINKS)


def test_a_run_that_could_not_measure_the_clean_side_exits_3(catalog):
    verdict = Verdict("fix", "could not run", "the clean side did not measure")
    task = fix_task(catalog, catalog.get("head-split"))
    assert edit_exit_code(EditOutcome(result=None, task=task, verdict=verdict)) == 3


# --- the command line ----------------------------------------------------------------------

def tutor(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "tutor.cli", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, env=dict(os.environ))


def test_tutor_fix_with_a_patch_prints_the_run_json_plus_the_verdict_and_saves(tmp_path, catalog):
    task = fix_task(catalog, catalog.get("head-split"))
    patch = tmp_path / "repair.diff"
    patch.write_text(unified_diff(task.path, task.start, task.clean))
    progress = tmp_path / "progress"
    proc = tutor("fix", "head-split", "--patch", str(patch), "--json", "--device", "cpu", "--learner", "ada",
                 "--progress-dir", str(progress))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    for key in ("id", "status", "clean", "faulted", "evidence", "device", "torch", "duration_s", "seed"):
        assert key in data  # tutor run's fields
    assert (data["mode"], data["diff"], data["fixed"], data["file"]) == ("fix", "", True, "engine/model.py")
    assert data["yours"]["status"] == "ok" and data["yours"]["observed"] == data["clean"] == "a"
    assert data["yours"]["evidence"] and data["verdict"]["status"] == "fixed"
    assert {row["link"] for row in data["instruments"]["rows"]} >= {"SHAPE", "CAUSALITY", "CACHE", "GRADIENTS"}
    assert data["working_copy"] == str(progress / "work" / "ada" / "head-split" / "fix" / "model.py")
    saved = json.loads(tutor("progress", "--json", "--learner", "ada", "--progress-dir", str(progress)).stdout)
    [attempt] = saved["exercises"]["head-split"]["attempts"]
    assert (attempt["mode"], attempt["verdict"], attempt["diff"]) == ("fix", "fixed", "")


def test_tutor_fix_exits_1_not_fixed_and_2_for_a_missing_file_or_a_patch_that_does_not_apply(tmp_path, catalog):
    task = fix_task(catalog, catalog.get("softmax-axis"))
    faulted = tmp_path / "next_token.py"
    faulted.write_text(task.start)
    proc = tutor("fix", "softmax-axis", "--file", str(faulted), "--json", "--device", "cpu", "--no-save",
                 "--no-instruments")
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    assert data["fixed"] is False and data["verdict"]["status"] == "not fixed" and data["instruments"] is None
    assert "+    return F.softmax(logits, dim=1)  # normalise" in data["diff"]

    proc = tutor("fix", "softmax-axis", "--file", str(tmp_path / "nope.py"), "--no-save")
    assert proc.returncode == 2 and "there is no file" in proc.stderr and "nope.py" in proc.stderr
    wrong = tmp_path / "wrong.diff"
    wrong.write_text(unified_diff(task.path, task.clean, task.start))  # made against clean, not faulted
    proc = tutor("fix", "softmax-axis", "--patch", str(wrong), "--json", "--no-save")
    assert proc.returncode == 2 and json.loads(proc.stdout)["status"] == "usage_error"
    assert "hunk 1 (@@ -" in proc.stderr and "does not apply" in proc.stderr


def test_tutor_break_runs_the_learners_fault_against_the_prediction(tmp_path, catalog):
    ex = catalog.get("softmax-axis")
    fault = catalog.fault_of(ex)
    task = break_task(catalog, ex)
    mine = tmp_path / "next_token.py"
    mine.write_text(task.start.replace(fault.before, fault.after, 1))
    # the question: does every vocabulary entry's column sum to 1 over time? With the fault's axis, yes
    proc = tutor("break", "softmax-axis", "--file", str(mine), "--predict", "yes", "--json", "--device", "cpu",
                 "--no-save")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert (data["mode"], data["prediction"], data["prediction_correct"]) == ("break", "yes", True)
    assert data["verdict"]["status"] == "changed" and data["yours"]["observed"] is True
    proc = tutor("break", "softmax-axis", "--file", str(mine), "--predict", "no", "--no-save", "--device", "cpu")
    assert proc.returncode == 1 and "your prediction did not match" in proc.stdout


def test_a_break_whose_logits_go_nan_is_said_not_finite_never_the_past_moving(tmp_path, catalog):
    """non-causal under a learner's fault that makes every logit NaN: the future-token test cannot compare
    such logits, and the learner is told so, with the counts (NaN read as "the past moved" before)."""
    task = break_task(catalog, catalog.get("non-causal"))
    line = "logits = self.lm_head(x)  # (B, T, V)"
    assert task.start.count(line) == 1
    mine = tmp_path / "model.py"
    mine.write_text(task.start.replace(line, 'logits = self.lm_head(x) * float("nan")  # (B, T, V)'))
    proc = tutor("break", "non-causal", "--file", str(mine), "--predict", "c", "--json", "--device", "cpu",
                 "--no-save", "--no-instruments")
    data = json.loads(proc.stdout)
    assert data["yours"]["status"] == "error" and data["verdict"]["status"] == "changed", proc.stdout
    sentence = data["verdict"]["sentence"]
    assert "your fault stops the check" in sentence and "cannot say whether the past moved" in sentence
    assert "logits are not finite (" in sentence and " NaN and 0 inf of " in sentence
