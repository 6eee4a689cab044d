"""``tutor progress`` (and every drawn reply) into a pipe or a file: no line cut at 80 columns."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tutor.model.attempts import Attempt
from tutor.store.progress import ProgressStore


def test_progress_into_a_file_keeps_each_row_on_one_line(tmp_path):
    store = ProgressStore(tmp_path)
    long_prediction = "a prediction typed in many words so that its row runs well past eighty columns wide"
    store.record_attempt("ada", "broadcast-loss", Attempt(
        time="2026-01-05T09:30:00Z", device="cpu", engine_hash="h", correct=False, status="fail",
        prediction=long_prediction, observed="(3, 3)"))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.run([str(Path(sys.executable).with_name("tutor")), "progress", "--learner", "ada", "--progress-dir",
                           str(tmp_path)], capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert long_prediction in proc.stdout  # not split across lines


def test_a_failed_run_json_names_its_learner(capsys, tmp_path):
    import json
    from tutor.cli import main
    code = main(["run", "no-such-exercise", "--predict", "a", "--learner", "ada", "--progress-dir", str(tmp_path),
                 "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 2 and data["status"] == "usage_error" and data["learner"] == "ada"
