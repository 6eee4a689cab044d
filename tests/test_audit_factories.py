"""What the audit makes of the model a factory builds, when it is not a plain nanoGPT: a model that
cannot be deep-copied still gets CAPABILITY's reference (the factory runs again), and says so; the
context length is read under any common name, wherever the model keeps its config (llama2.c:
``params.max_seq_len``).

The models are written here: the zoo's nanoGPT-style GPT (tests/audit_models/zoo_nano.py) keeping its
last loss, graph and all, in an attribute, as llama2.c's ``last_loss``.
"""

import sys
import types

import pytest
import torch

from audit_support import ZOO
from exercises.audit import audit
from exercises.audit.subject import block_size_of

sys.path.insert(0, str(ZOO))
import zoo_nano  # noqa: E402  (tests/audit_models, put on the path above)

#: Each test on one torch thread (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("one_torch_thread")


class KeepsLastLoss(zoo_nano.GPT):
    """llama2.c: the forward keeps its loss in ``self.last_loss``, a non-leaf tensor once it has a graph,
    which ``copy.deepcopy`` refuses."""

    def forward(self, idx, targets=None):
        logits, loss = super().forward(idx, targets)
        self.last_loss = loss
        return logits, loss


def keeps_last_loss(lr=5e-4):
    model = KeepsLastLoss()
    return model, torch.optim.AdamW(model.parameters(), lr=lr)


def capability_of(factory):
    report = audit(factory, overfit_steps=30, links=["GRADIENTS", "CAPABILITY"])
    return next(link for link in report.links if link.name == "CAPABILITY")


def test_a_model_that_cannot_be_copied_gets_its_reference_from_the_factory_run_again_and_says_so():
    link = capability_of(keeps_last_loss)
    rows = dict(link.evidence)
    assert rows["reference model"].startswith("the model cannot be deep-copied (RuntimeError: "), rows
    assert rows["reference model"].endswith(": the factory was run again for it"), rows
    assert "reference" in rows and "reference every 25 steps" in rows, rows  # the reference ran
    assert link.verdict.endswith("(reference: " + rows["reference model"] + ")"), link.verdict


def test_when_the_factory_cannot_run_again_the_verdict_says_there_is_no_reference():
    calls = []

    def once():
        calls.append(1)
        if len(calls) > 1:
            raise RuntimeError("the checkpoint was already consumed")
        return keeps_last_loss()

    link = capability_of(once)
    assert link.verdict.endswith("(reference: the model cannot be deep-copied (RuntimeError: Only Tensors created "
                                 "explicitly by the user (graph leaves) support the deepcopy protocol at the moment), "
                                 "and built again: the factory once() raised RuntimeError: the checkpoint was already "
                                 "consumed; no reference run, so the recipe is held to the overfit bar itself)"), \
        link.verdict
    assert [row[0] for row in link.evidence][:2] == ["reference model", "overfit"], link.evidence


@pytest.mark.parametrize("owner", ["config", "params", "args", "hparams"])
@pytest.mark.parametrize("name", ["max_seq_len", "n_positions", "max_position_embeddings", "sequence_len",
                                  "block_size"])
def test_block_size_is_read_under_any_common_name_wherever_the_model_keeps_its_config(owner, name):
    model = torch.nn.Module()
    model.wpe = torch.nn.Embedding(64, 8)  # a position table longer than the model's declared context
    setattr(model, owner, types.SimpleNamespace(**{name: 48}))
    assert block_size_of(model, None) == 48
    assert block_size_of(model, 20) == 20  # --block wins
