"""Results in Gradescope's format, from graded rows (the ``to_dict`` of ``tutor.instructor.grade.RowResult``).

One learner's result is what Gradescope's autograder reads from
(the assignment's total is Gradescope's own setting: ``max_score`` is kept in ``extra_data``)
``/autograder/results/results.json``: ``score``, ``output``,
``execution_time``, ``visibility``, ``stdout_visibility`` and one test per
exercise of the assignment, each with ``name``, ``score``, ``max_score``,
``status`` (``passed``/``failed``), ``output`` and ``visibility``. A test's
output says what was observed only when the assignment allows it now
(``observations = "after_due_date"`` keeps it back until the due time);
until then it says whether the answer matched, and nothing that would give
the answer away.

Which of a learner's rows for one exercise counts: :func:`tutor.model.attempts.counting`.

Pure: rows in, dictionaries out (``now`` is passed in).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from tutor.instructor import gradebook
from tutor.model.attempts import GRADED, WARMUP, counting  # GRADED: row statuses whose check ran to a verdict


def utc_now() -> dt.datetime:
    """Now, in UTC: when a grading's results are stamped (``graded_at``) and what the due time is held against."""
    return dt.datetime.now(dt.timezone.utc)


@dataclass
class Learner:
    """What one learner's result needs of their rows, kept small: a grading streams its rows past it.

    Rows may come in any order (the tail meets them in the order the workers finished): each is taken
    with its place, ``(line, position)``, and the name is the lowest place's that gives one, each identity
    field the highest place's that gives it.

    Attributes:
        name: the learner's name (the first row's that gives one, in line order).
        identity: ``sis_id``, ``student_id``, ``section`` (the last row's that gives each).
        elapsed: seconds of the checks their rows ran (a reused measurement took none).
        ran: how many rows ran a check; confined: how many of those ran confined.
        counted: assigned exercise id -> the row that counts (:func:`counted`).
        attempts: assigned exercise id -> how many of the learner's attempts answered it (:func:`gradebook.an_attempt`).
    """

    name: str = ""
    identity: dict = field(default_factory=lambda: {"sis_id": None, "student_id": None, "section": None})
    elapsed: float = 0.0
    ran: int = 0
    confined: int = 0
    counted: dict = field(default_factory=dict)
    attempts: dict = field(default_factory=dict)
    _named_at: tuple = field(default=(), repr=False)
    _given_at: dict = field(default_factory=dict, repr=False)

    def take(self, place: tuple, row: dict) -> None:
        """Take one more row of this learner's, at ``place`` (all but ``counted``, which the caller picks)."""
        if row.get("learner") and (not self.name or place < self._named_at):
            self.name, self._named_at = row["learner"], place
        for k in self.identity:
            if row.get(k) and (k not in self._given_at or place > self._given_at[k]):
                self.identity[k], self._given_at[k] = row[k], place
        if not row.get("reused"):
            self.elapsed += row.get("duration_s") or 0.0
        if row.get("confined") is not None:
            self.ran += 1
            self.confined += bool(row["confined"])

    @property
    def all_confined(self) -> bool | None:
        return self.confined == self.ran if self.ran else None


def learner_result(rows: list[dict], assignment, titles: dict, now: dt.datetime | None = None,
                   name: str | None = None) -> dict:
    """One learner's Gradescope result over their rows (every row is this learner's)."""
    summary = Learner()
    for position, r in enumerate(rows):
        summary.take((r.get("line") or 0, position), r)
    for assigned in assignment.exercises:
        mine = [r for r in rows if r.get("exercise") == assigned.id and r.get("status") != "not_assigned"]
        summary.attempts[assigned.id] = sum(map(gradebook.an_attempt, mine))
        summary.counted[assigned.id] = counted(mine)
    return result_of(summary, assignment, titles, now, name)


def result_of(summary: Learner, assignment, titles: dict, now: dt.datetime | None = None,
              name: str | None = None) -> dict:
    """One learner's Gradescope result from the summary of their rows (:class:`Learner`)."""
    now = now or utc_now()
    show = assignment.shows_observations(now)
    tests = []
    for n, assigned in enumerate(assignment.exercises, 1):
        row = summary.counted.get(assigned.id)
        # passed by its verdict, not its score: a practice exercise (0 points) that matched scores 0 and passed
        passed = row is not None and row.get("status") == "pass"
        score = float(assigned.points) if passed else 0.0
        title = titles.get(assigned.id)
        status = row.get("status") if row else "missing"
        tests.append({"name": f"{assigned.id} · {title}" if title else assigned.id, "number": str(n),
                      "score": score, "max_score": float(assigned.points),
                      "status": "passed" if passed else "failed",
                      "output": output_for(row, show, assignment), "visibility": _visibility(assigned.visibility, show),
                      "extra_data": {"exercise": assigned.id,
                                     "status": status if show or status not in GRADED else "recorded",
                                     "line": row.get("line") if row else None,
                                     "submission": row.get("submission") if row else None,
                                     "confined": row.get("confined") if row else None,
                                     "attempts": summary.attempts.get(assigned.id, 0)}})
    score = sum(t["score"] for t in tests)
    who = name or summary.name or ""
    answered = sum(t["extra_data"]["status"] != "missing" for t in tests)
    output = (f"{who + ': ' if who else ''}{score:g} of {assignment.max_score:g} points: "
              f"{sum(t['status'] == 'passed' for t in tests)} of {len(tests)} exercises matched what their checks observed.")
    if not show:
        output = (f"{who + ': ' if who else ''}{answered} of {len(tests)} exercises answered and recorded; the "
                  "scores and what the checks observed are shown after the due time.")
    return {"score": score, "execution_time": round(summary.elapsed, 3), "output": output,
            "visibility": "visible" if show else "after_due_date", "stdout_visibility": "hidden",
            "extra_data": {"learner": who, **summary.identity, "max_score": assignment.max_score,
                           "assignment": assignment.name, "inferred_assignment": assignment.inferred,
                           "confined": summary.all_confined}, "tests": tests}


def _visibility(asked: str, show: bool) -> str:
    """A test's Gradescope visibility: the assignment's, held back to the due date while observations are."""
    return asked if show or asked != "visible" else "after_due_date"


def counted(rows: list[dict]) -> dict | None:
    """Of one learner's rows for one assigned exercise, the one that counts (:func:`tutor.model.attempts.counting`:
    the latest ``submitted_at``, the later line at a tie, an untimed row older than every timed one)."""
    return counting(sorted(rows, key=lambda r: r.get("line") or 0), lambda r: r.get("submitted_at"))


def _confined(rows: list[dict]) -> bool | None:
    """Whether every check behind these rows ran confined: True, False (one did not), None (none ran)."""
    ran = [r.get("confined") for r in rows if r.get("confined") is not None]
    return all(ran) if ran else None


def output_for(row: dict | None, show_observed: bool, assignment=None) -> str:
    """A test's output: the answer, what was observed (when it may be shown), and the verdict."""
    if row is None:
        return "No answer was submitted for this exercise."
    status = row.get("status")
    if status == "unreadable":
        shown = (row.get("answer") or "").strip().replace("\n", " ")[:80]
        return f"Your answer {shown!r} could not be graded: {row.get('reason')}."
    if status not in GRADED:
        return f"The check could not finish ({status}): {row.get('reason')}. This is not your mistake."
    if not show_observed:  # before the due time: only that it was recorded, nothing that tells the answer
        due = f" ({assignment.due.isoformat(timespec='minutes')})" if assignment is not None and assignment.due else ""
        what = "Your repair was" if row.get("mode") == "fix" else f"Your prediction {row.get('prediction_text')} was"
        return (f"{what} recorded. Whether it is right, and what the check observed, are shown after the due "
                f"time{due}.")
    if row.get("mode") == "fix":
        verdict = row.get("verdict") or ("fixed" if status == "pass" else "not fixed")
        said = row.get("reason") if status == "fail" and row.get("reason") else verdict
        observed = f" Your version observed {row.get('observed_text')}." if row.get("observed_text") else ""
        return f"Your repair: {said}.{observed}"
    verdict = "matched" if status == "pass" else "did not match"
    if row.get("mode") == WARMUP:  # a bet that scores nothing either way, and says so
        return (f"You bet {row.get('prediction_text')}. The check observed {row.get('observed_text')}. "
                f"Your bet {verdict}: a warm-up, never graded.")
    return (f"You predicted {row.get('prediction_text')}. The check observed {row.get('observed_text')}. "
            f"Your prediction {verdict}.")


def envelope(assignment, answers: str, now: dt.datetime, confined: bool | None, unattributed: list) -> dict:
    """results.json without its learners (``learners`` is None, for the caller to fill): what
    :func:`class_results` and the streaming tail (:mod:`tutor.instructor.tail`) both write around them."""
    return {"schema_version": 2, "answers": answers, "graded_at": now.isoformat(timespec="seconds"),
            "assignment": assignment.to_dict(), "exercises": assignment.ids, "max_score": assignment.max_score,
            "inferred_assignment": assignment.inferred, "confined": confined, "learners": None,
            "unattributed_rows": unattributed}


def class_results(rows: list[dict], assignment, titles: dict, answers: str, now: dt.datetime | None = None) -> dict:
    """Every learner's result (``learners``, sorted by learner key), the assignment, and the rows that
    are no learner's or no assigned exercise's (``unattributed_rows``)."""
    now = now or utc_now()
    by_key: dict[str, list[dict]] = {}
    for r in rows:
        if r.get("key"):
            by_key.setdefault(r["key"], []).append(r)
    ids = set(assignment.ids)
    unattributed = [{"line": r.get("line"), "status": r.get("status"), "reason": r.get("reason")} for r in rows
                    if not r.get("key") or r.get("exercise") not in ids]
    data = envelope(assignment, answers, now, _confined(rows), unattributed)
    data["learners"] = [learner_result(by_key[k], assignment, titles, now) for k in sorted(by_key)]
    return data
