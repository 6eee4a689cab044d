"""What a hand-in chose never acts on the grader's terminal: every notice, row and sentence of a grading holds
its control characters escaped.

A side's error and its refusals, and a file's own name, are the learner's text: an escape sequence in them
could set the terminal's title, erase lines, or draw a fake summary when the grader reads the notices or
``cat``s the gradebook. After a batch with such a hand-in, no notice and no byte of ``rows.jsonl``,
``gradebook.csv`` or ``results.json`` holds ESC, BEL, a C1 control or a bidirectional override (a cell keeps
its line ends and tabs), and the honest classmates' rows are right.
"""

from __future__ import annotations

import re

from test_grading_submissions import Recording, clean_head_split, digest, grade_fixes, hand_in
from tutor.instructor import gradebook
from tutor.sandbox.protocol import Answer, SideResult
from tutor.sandbox.runner import grade

TITLE = "\x1b]0;graded: all pass\x07"
ERASE = "\x1b[2K\r\x1b[1A\x9b2J\u202eevil"
#: What no terminal line of a grading may hold: C0 controls but tab, LF and CR in a cell, DEL, C1, bidi.
ACTING = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


class Shouting(Recording):
    """The stand-in runner: mallory's side ends in an error and a refusal that hold escape sequences."""

    def run(self, exercise, prediction=None, on_progress=None, seed=0, sides=None, **kw):
        super().run(exercise, prediction, on_progress, seed, sides, **kw)
        text = self.runs[-1][2] or ""
        out = {s.name: SideResult(status="ok", observed="b" if s.name == "faulted" else "a", duration_s=0.01,
                                  confined=True) for s in sides or ()}
        if "mallory" in text and "yours" in out:
            out["yours"] = SideResult(status="error", error=f"RuntimeError: {TITLE}{ERASE}", duration_s=0.01,
                                      confined=True, exception="RuntimeError")
        result = grade(exercise, Answer(job=1, torch="t", device="cpu", duration_s=0.02, sides=out), prediction, seed)
        if "mallory" in text:
            result.refused["yours"] = [f"tried to write /tmp/{TITLE}: refused"]
        return result


def test_escape_sequences_of_a_hand_in_reach_no_notice_row_or_file(tmp_path, catalog):
    fixes = tmp_path / "fixes"
    before = {who: digest(hand_in(fixes, who, clean_head_split(catalog))) for who in ("ada", "bob", "cy")}
    hand_in(fixes, "mallory", clean_head_split(catalog) + "# mallory\n")
    (fixes / "mallory" / f"{ERASE}.py").write_text("x = 1\n", encoding="utf-8")
    (fixes / f"{TITLE}x").mkdir()
    (fixes / f"{TITLE}x" / "head-split.py").write_text("x = 1\n", encoding="utf-8")
    reply, said = grade_fixes(["grade", "--fixes", str(fixes), "--out", str(tmp_path / "o"), "--exercises",
                               "head-split", "--hidden-seeds", "0"], runner=Shouting)
    assert reply.code in (0, 1)
    rows = gradebook.read_rows(tmp_path / "o")
    by = {(r["learner"], r["exercise"]): r for r in rows}
    for who in ("ada", "bob", "cy"):
        assert by[(who, "head-split")]["status"] == "pass"
        assert digest(fixes / who / "head-split.py") == before[who]
    assert by[("mallory", "head-split")]["status"] == "fail" and "\\x1b]0;" in by[("mallory", "head-split")]["reason"]
    assert len(rows) == 6 and any("\\x1b" in n for n in said.notices)
    for notice in said.notices:
        assert not ACTING.search(notice) and "\n" not in notice and "\r" not in notice, repr(notice)
    for name in ("rows.jsonl", "gradebook.csv", "results.json"):
        text = (tmp_path / "o" / name).read_text(encoding="utf-8")
        assert not ACTING.search(text), (name, ACTING.search(text))
