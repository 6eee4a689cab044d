"""The command line through subprocess: JSON contracts, exit codes, one-sentence errors."""

import json
import os
import subprocess
import sys

import pytest

FOUR = ["broadcast-loss", "head-split", "cache-offset", "skip-zero-grad"]


def tutor(*args, env=None, timeout=300):
    full_env = dict(os.environ, **(env or {}))
    return subprocess.run([sys.executable, "-m", "tutor.cli", *args], capture_output=True, text=True,
                          env=full_env, timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.fixture()
def progress_dir(tmp_path):
    return str(tmp_path / "progress")


def test_list_json_holds_every_set_and_the_foundation_four():
    proc = tutor("list", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    ids = [e["id"] for s in data["sets"] for e in s["exercises"]]
    assert set(FOUR) <= set(ids)
    assert data["count"] == len(ids)
    assert {"shapes", "attention", "training"} <= {s["id"] for s in data["sets"]}


def test_list_unknown_set_exits_2():
    proc = tutor("list", "--set", "nope")
    assert proc.returncode == 2 and "there is no set 'nope'" in proc.stderr


def test_show_json_has_the_diff_and_answer_format():
    data = json.loads(tutor("show", "head-split", "--json").stdout)
    assert data["kind"] == "choice" and [c["id"] for c in data["choices"]] == ["a", "b", "c", "d"]
    assert "-    return x.view(B, T, n_head, C // n_head).transpose(1, 2)" in data["diff"]
    assert "+    return x.reshape(B, n_head, T, C // n_head)" in data["diff"]
    assert "one choice id" in data["answer_format"]


def test_run_json_passes_and_saves(progress_dir):
    proc = tutor("run", "head-split", "--predict", "b", "--json", "--device", "cpu",
                 "--learner", "ada", "--progress-dir", progress_dir, "--explain", "positions mix")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    for key in ("id", "prediction", "observed", "correct", "status", "evidence", "device", "duration_s",
                "fault", "torch"):
        assert key in data
    assert data["observed"] == "b" and data["clean"] == "a" and data["correct"] is True
    assert data["status"] == "pass" and data["fault"] == "head-split-reshape"
    progress = json.loads(tutor("progress", "--json", "--learner", "ada", "--progress-dir", progress_dir).stdout)
    entry = progress["exercises"]["head-split"]
    assert entry["attempts"][0]["prediction"] == "b" and entry["note"] == "positions mix"


def test_run_wrong_prediction_exits_1(progress_dir):
    proc = tutor("run", "broadcast-loss", "--predict", "(3,)", "--json", "--progress-dir", progress_dir,
                 "--learner", "ada")
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["status"] == "fail" and data["observed"] == [3, 3] and data["clean"] == [3]


def test_unknown_id_lists_close_matches():
    proc = tutor("run", "head-splt", "--predict", "b")
    assert proc.returncode == 2
    assert "there is no exercise 'head-splt'" in proc.stderr and "head-split" in proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stdout == ""


def test_unparseable_answer_names_the_format():
    proc = tutor("run", "skip-zero-grad", "--predict", "twice", "--no-save")
    assert proc.returncode == 2 and "expected a number such as" in proc.stderr


def test_unsafe_learner_is_refused(progress_dir):
    proc = tutor("run", "skip-zero-grad", "--predict", "2", "--learner", "../x", "--progress-dir", progress_dir)
    assert proc.returncode == 2 and "learner name" in proc.stderr
    assert not os.path.exists(progress_dir)


def test_cuda_without_cuda_is_one_sentence():
    proc = tutor("run", "skip-zero-grad", "--predict", "2", "--no-save", "--device", "cuda")
    if proc.returncode in (0, 1):
        pytest.skip("this machine has CUDA")
    assert proc.returncode == 2 and "no CUDA device" in proc.stderr


def test_no_terminal_for_the_tui_is_one_sentence():
    proc = tutor()
    assert proc.returncode == 2 and "interactive terminal" in proc.stderr


def test_check_json_shows_every_fault_differing():
    proc = tutor("check", *FOUR, "--json", "--device", "cpu")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(proc.stdout)
    assert data["passed"] == data["total"] == 4
    by_id = {r["id"]: r for r in data["results"]}
    assert by_id["broadcast-loss"]["clean"] == [3] and by_id["broadcast-loss"]["faulted"] == [3, 3]
    assert by_id["skip-zero-grad"]["clean"] == 1.0 and by_id["skip-zero-grad"]["faulted"] == 2.0
    assert by_id["cache-offset"]["clean"] is True and by_id["cache-offset"]["faulted"] is False
    assert by_id["head-split"]["clean"] == "a" and by_id["head-split"]["faulted"] == "b"


def test_help_screen():
    proc = tutor("--help")
    assert proc.returncode == 0
    for word in ("list", "show", "run", "check", "progress"):
        assert word in proc.stdout


def test_missing_home_and_no_color_still_work(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "HOME"}
    env.update(NO_COLOR="1", TUTOR_PROGRESS_DIR=str(tmp_path), TUTOR_LEARNER="ada")
    proc = subprocess.run([sys.executable, "-m", "tutor.cli", "progress"], capture_output=True, text=True,
                          env=env, timeout=60, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b[" not in proc.stdout and "No attempts saved yet" in proc.stdout


def test_an_unwritable_progress_folder_is_reported_not_a_traceback(tmp_path):
    target = "/proc/tutor-cannot-write-here" if os.geteuid() == 0 else str(tmp_path / "ro")
    if os.geteuid() != 0:
        os.mkdir(target, 0o500)
    proc = tutor("run", "skip-zero-grad", "--predict", "2", "--progress-dir", target, "--learner", "ada")
    assert "Traceback" not in proc.stderr
    assert "cannot write progress" in proc.stderr and "--progress-dir" in proc.stderr
    assert proc.returncode == 2 and proc.stdout == ""  # refused before any work, so nothing is lost


def test_check_with_cuda_missing_is_one_sentence():
    proc = tutor("check", "broadcast-loss", "--device", "cuda")
    if proc.returncode == 0:
        pytest.skip("this machine has CUDA")
    assert proc.returncode == 2 and "no CUDA device" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_tutor_check_is_deterministic_three_times(tmp_path):
    """Every observation repeats exactly across three full runs on CPU (timings are evidence only)."""
    runs = []
    for _ in range(3):
        proc = tutor("check", "--json", "--device", "cpu", timeout=1800)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
        runs.append({r["id"]: (r["clean"], r["faulted"]) for r in json.loads(proc.stdout)["results"]})
    assert runs[0] == runs[1] == runs[2]
    print(f"{len(runs[0])} exercises, identical observations in 3 runs")


def test_a_list_answer_of_the_wrong_length_is_a_usage_error():
    proc = tutor("run", "clone-detach", "--predict", "yes yes no yes", "--no-save")
    assert proc.returncode == 2
    assert "the answer has 4 items; expected a list of 10 items" in proc.stderr
