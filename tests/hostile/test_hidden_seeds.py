"""Hidden seeds stay hidden: seeds a class once learned are never all a repair is judged at, and no feedback
names a hidden seed or anything measured at one.

A hand-in that forges the clean outputs of the seeds it learned (the visible seed 0 and the assignment's
hidden 7919 and 104729, learned from earlier feedback) is fixed at those and at nothing else. Grading draws two
more seeds afresh for every run, so it is not fixed; and its row, its results.json entry and every notice
hold neither a hidden seed nor what its side observed there. An honest classmate is fixed at every seed.
"""

from __future__ import annotations

import json
import re

from test_grading_submissions import Recording, clean_head_split, digest, grade_fixes, hand_in
from tutor.instructor import gradebook
from tutor.sandbox.protocol import Answer, SideResult
from tutor.sandbox.runner import grade

#: The visible seed and the assignment's two hidden ones. The hidden ones are numbers no timestamp,
#: duration or count in the feedback holds by chance (7 and 11 did: "04:11:23" matched 11).
LEARNED = (0, 7919, 104729)
FORGED = "# forges the outputs of the seeds it learned\n"


class Forging(Recording):
    """The stand-in runner: a forging hand-in observes the clean value only at the seeds it learned, and a
    value of its own at any other (one the feedback must not carry); an honest one observes it at every seed."""

    def run(self, exercise, prediction=None, on_progress=None, seed=0, sides=None, **kw):
        super().run(exercise, prediction, on_progress, seed, sides, **kw)
        text = self.runs[-1][2] or ""
        forged = FORGED in text and seed not in LEARNED
        out = {s.name: SideResult(status="ok", duration_s=0.01, confined=True,
                                  observed="b" if s.name == "faulted" else
                                  (f"leaked{seed}" if forged and s.name == "yours" else "a"))
               for s in sides or ()}
        return grade(exercise, Answer(job=1, torch="t", device="cpu", duration_s=0.02, sides=out), prediction, seed)


def test_a_hand_in_fixed_only_at_learned_seeds_is_not_fixed_and_the_feedback_names_no_hidden_seed(tmp_path,
                                                                                                  catalog):
    honest = digest(hand_in(tmp_path / "fixes", "ada", clean_head_split(catalog)))
    hand_in(tmp_path / "fixes", "mallory", clean_head_split(catalog) + FORGED)
    plan = tmp_path / "a.toml"
    plan.write_text('[[exercises]]\nid = "head-split"\nhidden_seeds = [7919, 104729]\n')
    reply, said = grade_fixes(["grade", "--fixes", str(tmp_path / "fixes"), "--out", str(tmp_path / "o"),
                               "--assignment", str(plan)], runner=Forging)
    assert reply.code in (0, 1)
    rows = {r["learner"]: r for r in gradebook.read_rows(tmp_path / "o")}
    assert rows["ada"]["status"] == "pass" and rows["ada"]["score"] == 1
    assert digest(tmp_path / "fixes" / "ada" / "head-split.py") == honest
    assert rows["mallory"]["status"] == "fail" and rows["mallory"]["score"] == 0
    assert rows["mallory"]["reason"].startswith("not fixed at a hidden seed (fixed at seed 0, the one you could see)")
    runs = [(seed, text) for _, seed, text in Recording.made[-1].runs]
    hidden = {seed for seed, text in runs if FORGED in text} - {0}
    assert {7919, 104729} < hidden and len(hidden) >= 4  # the assignment's two, and two drawn afresh
    told = (json.dumps(rows["mallory"]) + (tmp_path / "o" / "results.json").read_text(encoding="utf-8")
            + (tmp_path / "o" / "gradebook.csv").read_text(encoding="utf-8") + "\n".join(said.notices))
    for seed in hidden:
        assert not re.search(rf"(?<![\w.]){seed}(?![\w.])", told), seed
    assert "leaked" not in told
