"""The three refusals a use case raises: each one sentence, with the context its JSON error object carries."""

from __future__ import annotations

import pytest

from tutor.model.errors import CouldNotRun, CouldNotSave, UsageError


@pytest.mark.parametrize("kind", [UsageError, CouldNotRun, CouldNotSave])
def test_a_refusal_is_its_sentence_and_a_copy_of_its_context(kind):
    context = {"id": "head-split", "learner": "ada"}
    refusal = kind("the answer does not read as a choice; type a, b, c or d", context)
    assert str(refusal) == "the answer does not read as a choice; type a, b, c or d"
    assert refusal.args == ("the answer does not read as a choice; type a, b, c or d",)
    assert refusal.context == context and refusal.context is not context
    context["id"] = "changed"
    assert refusal.context["id"] == "head-split"
    assert kind("no context").context == {} and kind("empty", {}).context == {}
    assert isinstance(refusal, Exception) and not isinstance(refusal, (ValueError, OSError))
