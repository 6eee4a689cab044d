"""``tutor audit`` on correct GPTs written as real training code writes them (tests/audit_models/field_controls.py):
a loss with label smoothing, cross entropy in bfloat16, a causal mask built in float16. Each keeps every contract,
so each passes, the convention named in a warning; a bfloat16 loss with a real bug still fails."""

import pytest

from audit_support import factory, link, report_of
from exercises.audit import audit

#: Each test on one torch thread (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize("name", ["build_label_smoothing", "build_bf16_loss", "build_fp16_mask"])
def test_a_correct_convention_holds_at_every_link(name):
    report = report_of(f"field_controls:{name}")
    assert report.first_failure is None and report.exit_code == 0, report.text()


def test_declared_label_smoothing_is_recomputed_and_named():
    init = link("field_controls:build_label_smoothing", "INIT")
    assert init.status == "warn", init.verdict  # a warning line is counted: the link is "warn"
    assert init.warnings[0].endswith("it is cross entropy with label smoothing ε = 0.1 (by hand 3.68701), as declared")


def test_undeclared_label_smoothing_fails_init_naming_the_key_that_declares_it():
    init = link("field_controls:build_label_smoothing_undeclared", "INIT")
    assert init.status == "FAIL"
    assert init.verdict.endswith("a model that smooths its labels on purpose names its ε with the factory's "
                                 "'label_smoothing' key"), init.verdict


def test_a_bfloat16_loss_is_named_as_such():
    [warning] = link("field_controls:build_bf16_loss", "INIT").warnings
    assert warning.startswith("reported loss 3.70312 is not the mean cross entropy by hand 3.69287: it is a "
                              "bfloat16 number within 8 of its units of the float64 mean"), warning


def test_a_bfloat16_loss_summed_over_positions_still_fails_init():
    init = link("field_controls:build_bf16_loss_summed", "INIT")
    assert init.status == "FAIL" and init.verdict.startswith("initial loss: 118.500 / ln 37"), init.verdict


def test_capability_reads_what_the_model_predicts_not_the_smoothed_objective():
    """Label smoothing at ε = 0.1 keeps the smoothed loss near 0.68 nats however well the model predicts; the
    cross entropy of its logits still falls below the bar."""
    report = audit(factory("field_controls:build_label_smoothing"), links=["CAPABILITY"])
    [capability] = report.links
    assert capability.status == "ok", capability.verdict
    reference = dict(capability.evidence)["reference every 25 steps"].split()
    assert float(reference[-1]) < 0.1
