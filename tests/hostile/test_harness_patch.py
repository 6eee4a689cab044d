"""Harness patching inside its own side: a file that takes its side's signing key and result pipe from the
child's frame and sends a forged measurement (seed 0's clean output, which every learner is shown, and the
records of the snippet's calls there, which its own code could compute) is
*not fixed* with ``tutor fix``'s default, one hidden seed drawn now; without hidden seeds it would pass,
which this test shows too, so it can fail."""

import json

import pytest

from attack import run_fix
from tutor.app.session import Session

#: Sign a line with the key found in the frame, write it on the side's own pipe, and end before the check.
ATTACK = """
import os, sys
frame = sys._getframe()
while frame is not None and not ('key' in frame.f_locals and 'fd' in frame.f_locals):
    frame = frame.f_back
protocol = sys.modules['tutor.sandbox.protocol']
forged = protocol.Measured(observed=OBSERVED, evidence=EVIDENCE, records=RECORDS)
os.write(frame.f_locals['fd'], protocol.sign(frame.f_locals['key'], forged))
os._exit(0)
"""


@pytest.fixture(scope="module")
def forgery(runner, catalog):
    ex = catalog.get("broadcast-loss")
    session = Session(catalog, runner)
    clean = session.fix(ex, session.edit_task(ex, "fix").clean, hidden_seeds=0).result  # seed 0, as every learner
    observed, evidence, records = clean.observations["clean"], clean.evidence["clean"], clean.records["clean"]
    assert records  # the snippet's whole output, which a forgery must send too
    return ATTACK.replace("OBSERVED", repr(json.loads(json.dumps(observed)))).replace(
        "EVIDENCE", repr(json.loads(json.dumps(evidence)))).replace("RECORDS", repr(json.loads(json.dumps(records))))


def test_without_hidden_seeds_the_forgery_would_pass(forgery, tmp_path):
    outcome = run_fix(tmp_path, forgery, extra=("--hidden-seeds", "0"))
    assert outcome.data.get("fixed") is True, outcome.text[-2000:]  # the threat is real at seed 0 alone


def test_the_default_judges_a_hidden_seed_and_the_forgery_is_not_fixed(forgery, tmp_path):
    outcome = run_fix(tmp_path, forgery)
    assert "hidden seed" in outcome.data["verdict"]["sentence"], outcome.data["verdict"]
    assert len(outcome.data["verdict"]["hidden_seeds"]) == 1
    outcome.assert_not_fixed_and_no_damage()
