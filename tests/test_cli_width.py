"""Every drawn reply (``tutor progress``, ``tutor show``) into a pipe or a file: drawn 80 columns wide, nothing cut
but wrapped; a reader that leaves early (``| head -1``) changes neither the exit status nor stderr."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tutor.model.attempts import Attempt
from tutor.store.progress import ProgressStore


TUTOR = str(Path(sys.executable).with_name("tutor"))
#: No terminal anywhere: what a script or a file sees.
NO_TERMINAL = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}


def test_progress_into_a_file_is_80_columns_wide_and_keeps_every_word(tmp_path):
    store = ProgressStore(tmp_path)
    long_prediction = "a prediction typed in many words so that its row runs well past eighty columns wide"
    store.record_attempt("ada", "broadcast-loss", Attempt(
        time="2026-01-05T09:30:00Z", device="cpu", engine_hash="h", correct=False, status="fail",
        prediction=long_prediction, observed="(3, 3)"))
    proc = subprocess.run([TUTOR, "progress", "--learner", "ada", "--progress-dir", str(tmp_path)],
                          capture_output=True, text=True, env=NO_TERMINAL, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert max(map(len, proc.stdout.splitlines())) <= 80
    cells = [line.split("│")[3].strip() for line in proc.stdout.splitlines() if line.count("│") > 3]
    assert long_prediction in " ".join(cell for cell in cells if cell)  # wrapped in its cell, not cut


def test_show_into_a_pipe_draws_its_panel_80_columns_wide():
    proc = subprocess.run([TUTOR, "show", "index-assign"], capture_output=True, text=True, env=NO_TERMINAL,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert max(map(len, proc.stdout.splitlines())) == 80  # the panel spans the width, no more


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
