"""``tutor audit`` on training recipes as real code bases write them: a factory may hand several optimizers
and schedulers as lists (modded-nanogpt's Muon for the hidden matrices and AdamW for the rest), stepped
in order; LOOP's verdict follows from what it measured, so a zero_grad placed between backward() and the
step is named as such. The recipes are in tests/audit_models/zoo_two_optimizers.py.
"""


import pytest
import torch

from audit_support import link, report_of
from exercises.audit import LINKS, audit

#: Each test on one torch thread (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_two_optimizers_and_two_schedulers_handed_as_lists_hold_at_every_link():
    report = report_of("zoo_two_optimizers")
    assert report.first_failure is None and report.exit_code == 0, report.text()
    assert {l.name: l.status for l in report.links} == {n: "skip" if n == "CAPABILITY" else "ok" for n in LINKS}
    assert report.setup["optimizer"] == "Muon + AdamW from the factory"
    loop = link("zoo_two_optimizers", "LOOP").verdict
    assert loop.startswith("optimizer.step 2 calls in one train_step; scheduler the first step used lr 0.002, "
                           "the schedule's first is 0.002; zero_grad two identical steps"), loop
    assert link("zoo_two_optimizers", "OWNERSHIP").verdict == "owned 28/28; foreign 0 optimizer tensors not in the model"


@pytest.mark.parametrize("build", ["build_zero_grad_first", "build_single_zero_grad_first"])
def test_a_zero_grad_before_the_step_is_named_as_such(build):
    report = report_of(f"zoo_two_optimizers:{build}")
    assert report.first_failure == "LOOP", report.text()
    verdict = link(f"zoo_two_optimizers:{build}", "LOOP").verdict
    assert verdict.startswith("zero_grad: optimizer.step() saw no gradient (every one zero or None), where the "
                              "batch's loss has one (norm "), verdict
    assert verdict.endswith("zero_grad() runs between backward() and optimizer.step(), so the step never moves "
                            "anything; call it before the forward or after the step"), verdict
    assert "divide each microbatch" not in verdict


def test_an_optimizer_list_holding_something_else_is_one_sentence_and_exit_3():
    def build():
        model = torch.nn.Linear(2, 2)
        return {"model": model, "optimizer": [torch.optim.SGD(model.parameters(), lr=0.1), 3]}

    report = audit(build, overfit_steps=0)
    assert report.status == "crashed" and report.exit_code == 3
    assert report.error.startswith("the factory build() returned a dict whose 'optimizer' list holds 3 (an int), "
                                   "which has no step(), but it must return"), report.error
