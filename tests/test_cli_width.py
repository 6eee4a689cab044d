"""Every drawn reply into a pipe or a file: no line of prose or path broken (the reader's pager or terminal wraps
it), a panel 80 columns wide, a table as wide as its content up to TABLE_WIDTH; ``COLUMNS`` still sets the width;
a reader that leaves early (``| head -1``) changes neither the exit status nor stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from test_grade_batch import subject
from tutor.cli.piped import TABLE_WIDTH
from tutor.model.attempts import Attempt
from tutor.store.progress import ProgressStore


TUTOR = str(Path(sys.executable).with_name("tutor"))
#: No terminal anywhere: what a script or a file sees.
NO_TERMINAL = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}


def test_progress_into_a_file_draws_its_table_as_wide_as_its_content(tmp_path):
    store = ProgressStore(tmp_path)
    long_prediction = "a prediction typed in many words so that its row runs well past eighty columns wide"
    store.record_attempt("ada", "broadcast-loss", Attempt(
        time="2026-01-05T09:30:00Z", device="cpu", engine_hash="h", correct=False, status="fail",
        prediction=long_prediction, observed="(3, 3)"))
    proc = subprocess.run([TUTOR, "progress", "--learner", "ada", "--progress-dir", str(tmp_path)],
                          capture_output=True, text=True, env=NO_TERMINAL, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert max(map(len, proc.stdout.splitlines())) <= TABLE_WIDTH
    [row] = [line for line in proc.stdout.splitlines() if "broadcast-loss" in line and "│" in line]
    assert long_prediction in row  # the whole cell on its row: no wrapping inside the table either


def test_show_into_a_pipe_draws_its_panel_80_columns_wide_and_its_sentences_whole(catalog):
    proc = subprocess.run([TUTOR, "show", "index-assign"], capture_output=True, text=True, env=NO_TERMINAL,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert {len(line) for line in lines if line[:1] and line[0] in "╭│╰"} == {80}  # the panel spans the width, no more
    assert catalog.get("index-assign").source_label in lines  # a sentence out of the panel: one line, whole


def test_a_fix_into_a_pipe_writes_each_path_and_sentence_on_one_line(tmp_path, catalog):
    """A path is copied from the output: into a pipe it is never broken, however long."""
    folder = tmp_path / "a-progress-folder-whose-name-is-long-enough-that-paths-under-it-run-past-eighty-columns"
    mine = tmp_path / "faulted.py"
    mine.write_text(subject(catalog, "index-assign", fixed=False), encoding="utf-8")
    proc = subprocess.run([TUTOR, "fix", "index-assign", "--file", str(mine), "--progress-dir", str(folder)],
                          capture_output=True, text=True, env=NO_TERMINAL, stdin=subprocess.DEVNULL)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # not fixed
    lines = proc.stdout.splitlines()
    [copy] = [line.removeprefix("your working copy: ") for line in lines if line.startswith("your working copy:")]
    assert len(copy) > 80 and os.path.isfile(copy)
    [verdict] = [line for line in lines if line.startswith("not fixed: ")]
    assert verdict.endswith("probability: yours 0.2 · clean 0")  # the sentence whole on its line


def _class(folder):
    """Three learners' progress with every column of the class report filled: fix, break, hints."""
    store = ProgressStore(folder)
    facts = dict(time="2026-01-05T09:30:00Z", device="cpu", engine_hash="h", observed="(3, 3)")
    for learner, prediction in (("ada", "(3,)"), ("bob", "(3, 1)"), ("cy", "(3, 3)")):
        for ex in ("broadcast-loss", "squeeze-batch"):
            right = prediction == "(3, 3)"
            store.record_attempt(learner, ex, Attempt(**facts, correct=right, status="pass" if right else "fail",
                                                      prediction=prediction, confidence=50, hints=1))
            store.record_attempt(learner, ex, Attempt(**facts, correct=False, status="fail", prediction="",
                                                      mode="fix", verdict="not fixed"))
            store.record_attempt(learner, ex, Attempt(**facts, correct=False, status="fail", prediction="",
                                                      mode="break", verdict="changed"))
    return folder


def _header_words(stdout: str) -> set[str]:
    """The words of the first table's header cells, each header read down its column."""
    header = []
    for line in stdout.splitlines():
        if line.startswith("┡"):
            break
        if line.startswith("┃"):
            header.append(line.strip("┃").split("┃"))
    return {word for column in zip(*header) for word in " ".join(cell.strip() for cell in column).split()}


def test_a_class_report_into_a_pipe_keeps_each_header_word_whole(tmp_path):
    proc = subprocess.run([TUTOR, "report", str(_class(tmp_path / "class"))], capture_output=True, text=True,
                          env=NO_TERMINAL, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert {"tried", "1st", "try", "solved", "median", "tries", "notes", "fixed", "after", "hint", "wrong",
            "predictions", "(learners)", "edits", "(fix,", "break,", "hunt)"} <= _header_words(proc.stdout)
    assert max(map(len, proc.stdout.splitlines())) <= TABLE_WIDTH


def test_columns_is_still_the_width_into_a_pipe(tmp_path):
    proc = subprocess.run([TUTOR, "report", str(_class(tmp_path / "class"))], capture_output=True, text=True,
                          env={**NO_TERMINAL, "COLUMNS": "60"}, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert max(map(len, proc.stdout.splitlines())) <= 60  # as a terminal 60 columns wide would show it


@pytest.mark.parametrize("command, code", [(["show", "index-assign"], 0),
                                           (["run", "index-assign", "--predict", "yes"], 0),
                                           (["run", "index-assign", "--predict", "no"], 1)])
def test_a_reader_that_leaves_before_the_output_changes_neither_the_exit_status_nor_stderr(tmp_path, command, code):
    proc = subprocess.Popen([TUTOR, *command, "--progress-dir", str(tmp_path)] if command[0] == "run" else
                            [TUTOR, *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=NO_TERMINAL,
                            stdin=subprocess.DEVNULL)
    proc.stdout.close()  # gone before the first line is written, as `| head -0` would be
    stderr = proc.stderr.read()
    assert (proc.wait(), stderr) == (code, b"")


def test_a_failed_run_json_names_its_learner(capsys, tmp_path):
    import json
    from tutor.cli import main
    code = main(["run", "no-such-exercise", "--predict", "a", "--learner", "ada", "--progress-dir", str(tmp_path),
                 "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 2 and data["status"] == "usage_error" and data["learner"] == "ada"
