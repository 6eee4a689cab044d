"""GENERATE on a model that declares no length (no block_size, no position table: ALiBi tells positions):
there is no crop to test, so the link holds generate to the contract every correct GPT keeps, the prompt
followed by the new tokens, each the full forward's greedy choice, and names the first token that is not.
The subjects are in tests/audit_models/clean_no_positions.py."""

import pytest

from audit_support import factory, subject_of
from exercises.audit import LINKS, audit
from exercises.audit.links import inference

#: Each test on one torch thread (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_a_model_without_a_length_is_generated_past_the_audits_t_and_checked_token_by_token():
    report = audit(factory("clean_no_positions"), overfit_steps=0)
    assert report.first_failure is None and report.exit_code == 0, report.text()
    got = {link.name: link for link in report.links}
    # ALiBi's bias on the scores is ATTENTION's warning, as for BLOOM
    assert [name for name in LINKS if got[name].status not in ("ok", "skip")] == ["ATTENTION"], report.text()
    generate = got["GENERATE"]
    assert generate.status == "ok", generate.verdict
    assert generate.verdict.startswith("no block_size declared: generated 32 tokens after a prompt of 8, to 40, "
                                       "past T = 32"), generate.verdict
    assert "each the full forward's greedy choice" in generate.verdict
    assert dict(generate.evidence)["greedy tokens vs argmax of the full forward"].startswith("0 of 64 differ")


def test_a_generate_that_drops_the_context_fails_naming_the_first_token_it_gets_wrong():
    s = subject_of(factory("clean_no_positions:build_last_token_only"))
    assert s.block_size is None
    link = inference.generate(s)
    assert link.status == "FAIL", link.verdict
    assert link.verdict.startswith("greedy generate departs from the full forward at new token "), link.verdict
    assert "the full forward's argmax is" in link.verdict
    first = int(link.verdict.split("at new token ")[1].split(" ")[0])
    assert 0 <= first < 32


def test_a_generate_that_crops_to_a_length_the_model_does_not_have_fails_past_it_and_only_at_generate():
    """The stale crop (32 tokens) acts only past 32, beyond what CACHE generates to: GENERATE alone sees it."""
    report = audit(factory("clean_no_positions:build_stale_crop"), overfit_steps=0)
    assert report.first_failure == "GENERATE", report.text()
    link = next(link for link in report.links if link.name == "GENERATE")
    first = int(link.verdict.split("at new token ")[1].split(" ")[0])
    assert 8 + first > 32, link.verdict  # the first token chosen from a cropped context
