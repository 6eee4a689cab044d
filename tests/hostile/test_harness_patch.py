"""Harness patching inside its own side: a file that takes its side's signing key and result pipe from the
child's frame and sends a forged measurement (seed 0's clean output, which every learner is shown) is
*not fixed* with ``tutor fix``'s default, one hidden seed drawn now; without hidden seeds it would pass,
which this test shows too, so it can fail."""

import json

import pytest

from attack import run_fix

#: Sign a line with the key found in the frame, write it on the side's own pipe, and end before the check.
ATTACK = """
import os, sys
frame = sys._getframe()
while frame is not None and not ('key' in frame.f_locals and 'fd' in frame.f_locals):
    frame = frame.f_back
protocol = sys.modules['tutor.sandbox.protocol']
forged = protocol.Measured(observed=OBSERVED, evidence=EVIDENCE)
os.write(frame.f_locals['fd'], protocol.sign(frame.f_locals['key'], forged))
os._exit(0)
"""


@pytest.fixture(scope="module")
def forgery(runner, catalog):
    clean = runner.run(catalog.get("broadcast-loss"))  # seed 0, the run every learner sees
    observed, evidence = clean.observations["clean"], clean.evidence["clean"]
    return ATTACK.replace("OBSERVED", repr(json.loads(json.dumps(observed)))).replace(
        "EVIDENCE", repr(json.loads(json.dumps(evidence))))


def test_without_hidden_seeds_the_forgery_would_pass(forgery, tmp_path):
    outcome = run_fix(tmp_path, forgery, extra=("--hidden-seeds", "0"))
    assert outcome.data.get("fixed") is True, outcome.text[-2000:]  # the threat is real at seed 0 alone


def test_the_default_judges_a_hidden_seed_and_the_forgery_is_not_fixed(forgery, tmp_path):
    outcome = run_fix(tmp_path, forgery)
    assert "hidden seed" in outcome.data["verdict"]["sentence"], outcome.data["verdict"]
    assert len(outcome.data["verdict"]["hidden_seeds"]) == 1
    outcome.assert_not_fixed_and_no_damage()
