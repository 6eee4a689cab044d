"""A learner folder swapped while the batch reads it is refused by name; the instructor's solution it points
at is never read nor graded as that learner's work.

In a drop box students may write while grading runs (a lab server's usual setup), mallory renames her folder
away and puts in its place a link to the instructor's solutions, just after the grader has looked at her
folder and before it opens her file. (Before, the grader checked for a link once, when it listed the
folders, and later opened ``mallory/head-split.py`` by its path: through the link. Its check that the file
lay inside DIR compared two real paths of the same swapped folder, so it graded the instructor's solution
as mallory's.) Each learner folder is now opened once, without following a link, and every file of it is
opened relative to that descriptor; the folder's path is compared with DIR's own real path before and after.

The runner is the stand-in of :mod:`test_grading_submissions`, which records the text of every side it runs.
"""

from __future__ import annotations

import os

import pytest

from test_grading_submissions import Recording, clean_head_split, digest, grade_head_split, hand_in
from tutor.instructor import gradebook

HONEST = ("ada", "bob")


@pytest.fixture
def swap_on_open(monkeypatch):
    """Make the swap happen the moment the grader opens mallory's file (by path or by name beside a folder)."""
    real_open, done = os.open, []

    def opening(path, flags, mode=0o777, *, dir_fd=None):
        swap = swap_on_open.swap
        if swap and not done and os.fsdecode(path).endswith("head-split.py") and (
                "mallory" in os.fsdecode(path) or dir_fd is not None and _names(dir_fd).endswith("/mallory")):
            done.append(True)
            swap()
        return real_open(path, flags, mode, dir_fd=dir_fd)

    swap_on_open.swap = None
    monkeypatch.setattr(os, "open", opening)
    yield swap_on_open
    assert done, "the grader never opened mallory's file"


def _names(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return ""


def test_a_folder_swapped_for_a_link_while_it_is_read_is_refused_and_the_solution_never_graded(
        tmp_path, catalog, swap_on_open):
    fixes, key = tmp_path / "fixes", tmp_path / "instructor"
    before = {who: digest(hand_in(fixes, who, clean_head_split(catalog))) for who in HONEST}
    solution = clean_head_split(catalog) + "# the instructor's own solution\n"
    hand_in(key, "solutions", solution)
    key_before = digest(key / "solutions" / "head-split.py")
    hand_in(fixes, "mallory", "# mallory's file: no repair at all\n")

    def swap():
        os.rename(fixes / "mallory", fixes / ".mallory-away")
        os.symlink(key / "solutions", fixes / "mallory")

    swap_on_open.swap = swap
    reply, said = grade_head_split(tmp_path)
    rows = {r["learner"]: r for r in gradebook.read_rows(tmp_path / "o")}
    assert [run for run in Recording.made[0].runs if run[2] == solution] == []  # the solution never ran
    assert rows["mallory"]["status"] != "pass" and rows["mallory"]["score"] == 0, rows["mallory"]
    assert "mallory" in rows["mallory"]["reason"] and "not graded" in rows["mallory"]["reason"], rows["mallory"]
    assert any(n.startswith("mallory: ") for n in said.notices), said.notices
    for who in HONEST:
        assert rows[who]["status"] == "pass", rows[who]
        assert digest(fixes / who / "head-split.py") == before[who]
    assert digest(key / "solutions" / "head-split.py") == key_before
    assert reply.code in (0, 1)
