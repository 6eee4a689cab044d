"""A folder named like a classmate cannot take their place: two learner folders that are one learner are
refused, and a hand-in's time is never its file's.

``ADA/`` beside ``ada/`` (names that differ only by case are one learner) with a file dated 2030 would have
replaced ada's real repair as her latest, and rewritten her progress file. Both folders are refused, each
row's sentence naming both; neither is graded nor saved; the classmates are graded as ever. No row takes
its time from a file's mtime, which the learner sets.
"""

from __future__ import annotations

import hashlib
import os

from test_grading_submissions import Recording, clean_head_split, digest, grade_fixes, hand_in
from tutor.instructor import gradebook

FUTURE = 1_900_000_000  # 2030-03-17, as a learner can set with touch -d


def test_two_folders_of_one_learner_are_refused_naming_both_and_nothing_of_ada_changes(tmp_path, catalog):
    fixes = tmp_path / "fixes"
    before = {who: digest(hand_in(fixes, who, clean_head_split(catalog))) for who in ("ada", "bob", "cy")}
    taker = hand_in(fixes, "ADA", "raise SystemExit('not a repair')\n")
    os.utime(taker, (FUTURE, FUTURE))
    progress = tmp_path / "progress"
    progress.mkdir()
    reply, said = grade_fixes(["grade", "--fixes", str(fixes), "--out", str(tmp_path / "o"), "--exercises",
                               "head-split", "--hidden-seeds", "0", "--save", "--progress-dir", str(progress)])
    assert reply.code in (0, 1)
    rows = gradebook.read_rows(tmp_path / "o")
    by = {r["learner"]: r for r in rows}
    for who in ("ada", "ADA"):
        row = by[who]
        assert row["status"] == "unreadable" and row["score"] == 0, row
        assert "'ada'" in row["reason"] and "'ADA'" in row["reason"] and row["reason"].count(". ") == 0
        assert any(n.startswith(f"{who}: ") and "'ADA'" in n and "'ada'" in n for n in said.notices), said.notices
    for who in ("bob", "cy"):
        assert by[who]["status"] == "pass" and by[who]["saved"] is True
    for who, was in before.items():
        assert digest(fixes / who / "head-split.py") == was
    assert not (progress / "ada.toml").exists()  # nothing saved in ada's name
    assert [text for _, _, text in Recording.made[-1].runs if "SystemExit" in text] == []  # ADA's never ran
    assert all(not (r.get("submitted_at") or "").startswith("2030") for r in rows)


def test_a_files_mtime_is_not_its_submission_time(tmp_path, catalog):
    path = hand_in(tmp_path / "fixes", "ada", clean_head_split(catalog))
    os.utime(path, (FUTURE, FUTURE))
    reply, _ = grade_fixes(["grade", "--fixes", str(tmp_path / "fixes"), "--out", str(tmp_path / "o"),
                            "--exercises", "head-split", "--hidden-seeds", "0"])
    [row] = gradebook.read_rows(tmp_path / "o")
    assert row["status"] == "pass" and not (row["submitted_at"] or "").startswith("2030")
    os.utime(path, (FUTURE + 86400, FUTURE + 86400))  # touched again: the same submission for --resume
    reply, _ = grade_fixes(["grade", "--fixes", str(tmp_path / "fixes"), "--out", str(tmp_path / "o"),
                            "--exercises", "head-split", "--hidden-seeds", "0", "--resume"])
    assert Recording.made[-1].runs == [] and len(gradebook.read_rows(tmp_path / "o")) == 1
