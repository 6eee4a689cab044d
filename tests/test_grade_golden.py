"""Golden files for what a grading leaves: gradebook.csv, rows.jsonl, the class's results.json and one
Gradescope submission's results.json. A column or key that is new, dropped or moved changes the text and
fails here; so does any changed value. Volatile values (durations, the time of grading, paths under the
test's folder) are normalised before comparing.

To accept a deliberate change: ``TUTOR_UPDATE_GOLDEN=1 pytest tests/test_grade_golden.py``, then read the diff.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from test_grade import FakeRunner, command
from tutor.cli.parser import build_parser

GOLDEN = Path(__file__).parent / "golden"
ANSWERS = ("learner,exercise,answer,note,submitted_at,SIS User ID,Section\n"
           "ada,head-split,b,the reshape mixes positions,2026-11-29T10:00:00Z,S-1,A\n"
           "ada,head-split,a,,2026-11-29T09:00:00Z,S-1,A\n"
           "bob,broadcast-loss,\"(3, 3)\",,yesterday,,B\n"
           "bob,cache-offset,maybe,,,,B\n"
           "bob,skip-zero-grad,2,,,,B\n"
           "\"=cmd\",head-split,b,,,,\n")
ASSIGNMENT = ('name = "Week 1"\ndue = 2026-12-05T23:59:00Z\n[[exercises]]\nid = "head-split"\npoints = 2\n'
              '[[exercises]]\nid = "broadcast-loss"\n[[exercises]]\nid = "cache-offset"\n')


@pytest.fixture(autouse=True)
def _fresh():
    FakeRunner.made = []


def normalised(text: str, tmp_path: Path) -> str:
    text = text.replace(str(tmp_path), "<tmp>")
    text = re.sub(r'"(duration_s|execution_time)": [0-9.]+', r'"\1": 0.0', text)
    text = re.sub(r'"graded_at": "[^"]+"', '"graded_at": "<now>"', text)
    text = re.sub(r'"(duration_s)","[0-9.]+"', r'"\1","0.000"', text)
    return text


def golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("TUTOR_UPDATE_GOLDEN"):
        path.write_bytes(text.encode("utf-8"))
    assert text == path.read_bytes().decode("utf-8"), f"{name} differs from tests/golden/{name}"


def csv_normalised(text: str) -> str:
    lines = text.split("\r\n")
    header = lines[0].split(",")
    where = header.index('"duration_s"')
    out = [lines[0]]
    for line in lines[1:]:
        cells = line.split('","')
        if len(cells) == len(header) and cells[where]:
            cells[where] = "0.000"
        out.append('","'.join(cells))
    return "\r\n".join(out)


def test_the_class_files_match_their_golden_files(tmp_path):
    answers = tmp_path / "week1.csv"
    answers.write_text(ANSWERS, encoding="utf-8")
    plan = tmp_path / "week1.toml"
    plan.write_text(ASSIGNMENT, encoding="utf-8")
    reply, _ = command(["grade", "--answers", str(answers), "--assignment", str(plan), "--out", str(tmp_path / "o")])
    out = tmp_path / "o"
    golden("gradebook.csv", csv_normalised(normalised((out / "gradebook.csv").read_bytes().decode("utf-8"),
                                                      tmp_path)))
    golden("rows.jsonl", normalised((out / "rows.jsonl").read_text(encoding="utf-8"), tmp_path))
    golden("results.json", normalised((out / "results.json").read_text(encoding="utf-8"), tmp_path))


def test_one_gradescope_submission_matches_its_golden_file(tmp_path):
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "source").mkdir()
    (root / "submission" / "answers.toml").write_text('head-split = "b"\nbroadcast-loss = "(3,)"\n')
    (root / "source" / "assignment.toml").write_text('[[exercises]]\nid = "head-split"\npoints = 2\n'
                                                      '[[exercises]]\nid = "broadcast-loss"\n')
    (root / "submission_metadata.json").write_text(json.dumps({
        "users": [{"email": "ada@uni.edu", "name": "Ada", "id": 1}], "created_at": "2026-11-30T10:00:00Z"}))
    args = build_parser().parse_args(["gradescope", "--root", str(root)])
    args.runner_factory = lambda cat, dev: FakeRunner(cat, dev)
    from test_grade import Events
    from tutor.cli import COMMANDS
    assert COMMANDS["gradescope"](args, Events()).code == 0
    golden("results_submission.json", normalised((root / "results" / "results.json").read_text(encoding="utf-8"),
                                                 tmp_path))
