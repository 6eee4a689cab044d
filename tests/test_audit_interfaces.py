"""``tutor audit`` on forwards driven by token positions (tests/audit_models/zoo_positions.py): gpt-fast's
``setup_caches`` then ``forward(idx, input_pos)``, lit-llama's ``input_pos`` cache made on first use, a
model that takes one token per forward, and a forward that needs an argument the audit cannot know.

A model the audit can drive holds at every link (its cache compared with its full forward); one it
cannot drive stops with exit 3 and one sentence naming the call made, the forward's signature and the
factory key that drives it; the factory's ``forward(model, idx)`` then drives it.
"""

import sys

import pytest
import torch

from audit_support import ZOO, factory, link, report_of, subject_of
from exercises.audit import LINKS, audit

sys.path.insert(0, str(ZOO))
import zoo_positions  # noqa: E402  (tests/audit_models, put on the path above)

#: Each test on one torch thread (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("one_torch_thread")

#: Each drivable style, the interface the report names, and the links that skip with the words they say.
DRIVEN = {
    "zoo_positions:build_fast": ("gpt-fast", {"GENERATE": "no generate method"}),
    "zoo_positions:build_lit": ("lit-llama", {"GENERATE": "no generate method"}),
    "zoo_positions:build_one_token_driven": ("the factory's forward", {
        "GENERATE": "no generate method",
        "CACHE": "no cache interface the audit drives: the factory's forward gives the full logits"}),
}


@pytest.mark.parametrize("name", list(DRIVEN))
def test_a_forward_driven_by_positions_holds_at_every_link(name):
    style, skips = DRIVEN[name]
    report = report_of(name)
    assert report.first_failure is None and report.exit_code == 0, report.text()
    assert report.setup["interface"] == style
    skips = {"CAPABILITY": "no step budget", "LOOP": "no train_step", **skips}
    assert {l.name: l.status for l in report.links} == {n: "skip" if n in skips else "ok" for n in LINKS}, \
        report.text()
    for l in report.links:
        if l.status == "skip":
            assert skips[l.name] in l.verdict, (l.name, l.verdict)


def test_gpt_fast_caches_are_set_up_and_compared_with_the_full_forward():
    assert report_of("zoo_positions:build_fast").setup["convention"].startswith(
        "gpt-fast style: model.setup_caches(B, 64), then model(idx, input_pos=positions)")
    assert link("zoo_positions:build_fast", "CACHE").verdict.startswith("cached logits equal the full forward's")
    attention = link("zoo_positions:build_fast", "ATTENTION")
    assert attention.evidence[0][1].startswith("packed [q | k | v], H=4, D=16"), attention.evidence


@pytest.mark.parametrize("name", ["zoo_positions:build_fast_positions_restart", "zoo_positions:build_lit_mask_open"])
def test_a_planted_cache_bug_in_a_positions_cache_fails_at_cache(name):
    report = report_of(name)
    assert report.first_failure == "CACHE", report.text()
    assert link(name, "CACHE").verdict.startswith("cached logits differ from the full forward by ")


def test_a_model_taking_one_token_per_forward_is_driven_token_by_token():
    report = report_of("zoo_positions:build_one_token")
    assert report.first_failure is None and report.exit_code == 0, report.text()
    assert report.setup["convention"].startswith(
        "one token per forward style: model(idx[:, t:t + 1], start_pos=t) for each t in order, the logits "
        "concatenated; the loss by the audit -> logits (4, 32, 37)"), report.setup["convention"]
    assert report.setup["convention"].endswith(
        "; a whole sequence, model(idx (4, 32), start_pos=0) raised AssertionError: Only one token at a time can be "
        "processed"), report.setup["convention"]
    statuses = {l.name: l.status for l in report.links}
    assert statuses["CAUSALITY"] == statuses["EVAL"] == statuses["RESIDUAL"] == "ok", report.text()
    assert link("zoo_positions:build_one_token", "CACHE").verdict.startswith(
        "the forward takes one token per call, so its full logits already come through its cache")
    for name in ("GRADIENTS", "UPDATE", "CAPABILITY"):  # its cache is written in place: measured, said
        verdict = link("zoo_positions:build_one_token", name).verdict
        assert statuses[name] == "skip" and verdict.startswith(
            "the forward takes one token per call, and backward() through two of them raised RuntimeError: one of "
            "the variables needed for gradient computation has been modified by an inplace operation"), verdict
        assert verdict.endswith("a factory dict's 'forward' (model, idx) -> logits can drive training your way")


def test_a_one_token_forward_whose_position_the_audit_cannot_name_is_one_sentence():
    report = audit(factory("zoo_positions:build_one_token_pos"), overfit_steps=0)
    assert report.status == "crashed" and report.exit_code == 3
    assert report.error == (
        "the forward pass raised AssertionError: Only one token at a time can be processed, called as "
        "model(idx (4, 32)) on OneTokenPos.forward(tokens, pos=0); if the model is meant to be called another way, "
        "return a dict from the factory with 'forward', a function (model, idx) -> logits (B, T, V) that calls it "
        "so (it runs on one token, model(idx (4, 1)): a forward that takes one token per call is driven "
        "token by token when its position parameter is named start_pos or input_pos)"), report.error


def test_a_forward_needing_an_argument_the_audit_cannot_give_is_one_sentence():
    report = audit(factory("zoo_positions:build_needs_mask"), overfit_steps=0)
    assert report.exit_code == 3
    assert report.error.startswith("the forward pass raised TypeError: "), report.error
    assert report.error.endswith(" missing 1 required positional argument: 'attention_bias', called as "
                                 "model(idx (4, 32)) on NeedsMask.forward(idx, attention_bias); if the model is "
                                 "meant to be called another way, return a dict from the factory with 'forward', a "
                                 "function (model, idx) -> logits (B, T, V) that calls it so"), report.error


def test_the_factorys_forward_that_raises_or_is_no_function_is_one_sentence():
    def raising():
        return {"model": torch.nn.Linear(2, 2), "forward": lambda model, idx: model(idx)}

    def not_callable():
        return {"model": torch.nn.Linear(2, 2), "forward": "model(idx)"}

    report = audit(raising, overfit_steps=0)
    assert report.exit_code == 3
    assert report.error.startswith("the factory's forward(model, idx) raised RuntimeError: "), report.error
    assert report.error.endswith(", called with idx (4, 32)"), report.error
    report = audit(not_callable, overfit_steps=0)
    assert report.exit_code == 3
    assert report.error == ("the factory not_callable() returned a dict whose 'forward' is not callable; it must be "
                            "a function (model, idx) -> logits (B, T, V)")


def test_gpt_fast_caches_the_factory_never_set_up_are_set_up_by_the_audit():
    s = subject_of(zoo_positions.FastTransformer)
    assert s.forward.interface.style == "gpt-fast" and s.forward.interface.setup == "setup_caches"
    with torch.no_grad():
        assert tuple(s.forward(s.xs[:1]).shape) == (1, s.T, 37)  # one row, padded to the caches' rows and back
    assert s.model.max_batch_size == 4 and s.model.max_seq_length == 64
