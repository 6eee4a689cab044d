"""``tutor audit``'s REGISTRATION on plain tensor attributes: a tensor kept outside nn.Module's registries
fails only where the model breaks without it once its parameters are on another device; one the model
carries along itself (modded-nanogpt's rotary ``inv_freq``, converted where it is used) is a warning with
its evidence. The subjects are in tests/audit_models/zoo_plain_rotary.py (modded-nanogpt's style) and
bug_buffer_plain_mask.py.
"""

import pytest

from audit_support import factory, subject_of
from exercises.audit import audit
from exercises.audit.links import structure

#: Each test on one torch thread (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("one_torch_thread")

MOVED = "forward with parameters and buffers on another device"


def registration_of(name):
    return structure.registration(subject_of(factory(name)))


def test_a_plain_attribute_the_model_converts_itself_is_a_warning_with_its_evidence():
    link = registration_of("zoo_plain_rotary")
    assert link.status == "warn", link.verdict
    assert link.verdict.endswith("; outside state_dict(): transformer.h.0.attn.rotary.inv_freq and 1 more, plain "
                                 "tensors the model carries along itself (its forward still runs with its "
                                 "parameters moved to another device)"), link.verdict
    rows = dict(link.evidence)
    assert rows[MOVED] == "runs: the model moves or converts them where it uses them"
    assert rows["after .to(torch.float64)"].startswith("parameters float64, transformer.h.0.attn.rotary.inv_freq "
                                                       "still float32"), rows
    assert link.warnings and "register_buffer(name, tensor, persistent=False)" in link.warnings[0]


def test_the_same_attribute_used_unconverted_fails_naming_the_device_mismatch():
    for name in ("zoo_plain_rotary:build_unconverted", "bug_buffer_plain_mask"):
        link = registration_of(name)
        assert link.status == "FAIL", link.verdict
        # in the user's terms: the tensor that stayed behind and where, not the fake device the move went to
        assert " not a buffer); with its parameters on another device the forward fails: " in link.verdict, link.verdict
        assert link.verdict.endswith(" stayed on cpu"), link.verdict
        moved = dict(link.evidence)[MOVED]
        assert moved.startswith("fails: ") and moved.endswith(" stayed on cpu while the weights moved "
                                                              "(FakeTensorDeviceMismatchError)"), moved
        assert "meta" not in link.verdict + moved, (link.verdict, moved)


def test_the_converted_rotary_holds_at_every_link_and_the_unconverted_fails_first_at_registration():
    clean = audit(factory("zoo_plain_rotary"), overfit_steps=0)
    assert clean.first_failure is None and clean.exit_code == 0 and clean.warned == ["REGISTRATION"], clean.text()
    assert audit(factory("zoo_plain_rotary:build_unconverted"), overfit_steps=0).first_failure == "REGISTRATION"


def test_a_set_up_table_move_that_could_not_be_measured_is_said_so_never_as_the_forward_breaking():
    """A copy that cannot be made measures nothing: the evidence says "not measured", and the warning claims
    neither that the forward breaks once moved nor that it runs after the dtype change."""
    import torch

    from exercises.audit.links import setup_tables

    unmeasured = "not measured: copying the model raised RuntimeError"
    found = setup_tables.SetupTables("setup_caches", [("freqs_cis", torch.zeros(4))], dtype_move=unmeasured,
                                     device_move=unmeasured)
    assert not found.broken and not found.device_broken
    rows = dict(setup_tables.rows(found))
    assert rows["after setup_caches, parameters and buffers moved to another device"] == unmeasured, rows
    assert rows["after .to(torch.float64) and setup_caches again"].startswith(unmeasured + ";"), rows
    assert "breaks" not in setup_tables.warning(found), setup_tables.warning(found)
    found.device_move = "fails: freqs_cis stayed on cpu while the weights moved (RuntimeError)"
    assert found.device_broken and "the forward breaks on them (freqs_cis stayed on cpu)" in \
        setup_tables.warning(found), setup_tables.warning(found)
