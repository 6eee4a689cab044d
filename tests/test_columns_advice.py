"""An ambiguous column is refused with advice that works when followed.

``id`` may be the exercise or a student number. When it is the only candidate for a field every row
needs (learner, exercise, answer), "--columns exercise=-" (the file has no exercise column) cannot be
the way out: the next run stops on the missing column. The advice names the column form instead;
for an optional field (``time`` as submitted_at) "=-" stays a real choice.
"""

from __future__ import annotations

import pytest

from tutor.instructor import columns
from tutor.model.errors import UsageError


def refusal(header: list[str], named: dict | None = None) -> str:
    with pytest.raises(UsageError) as refused:
        columns.resolve(header, named)
    return str(refused.value)


def test_a_required_fields_ambiguous_column_is_refused_with_advice_that_works():
    said = refusal(["Email", "Question", "Response", "id"], {"learner": "Email", "answer": "Response"})
    assert "--columns exercise=id" in said and "--columns exercise=COLUMN" in said
    assert "exercise=-" not in said
    # followed: either way the file now reads
    assert columns.resolve(["Email", "Question", "Response", "id"],
                           {"learner": "Email", "answer": "Response", "exercise": "Question"}).columns == \
        {"learner": 0, "answer": 2, "exercise": 1}


def test_an_optional_fields_ambiguous_column_may_still_be_said_absent():
    said = refusal(["learner", "exercise", "answer", "time"])
    assert "--columns submitted_at=time" in said and "--columns submitted_at=-" in said
