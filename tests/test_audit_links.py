"""Each audit link on its own: a subject built from a tiny model, one link
called directly, its verdict pinned (seed 004, "Using AI on a generated
language model"). The whole chain on real GPTs is in test_audit.py."""

import dataclasses
import subprocess
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

from exercises.audit import LINKS, PIPELINE
from exercises.audit.links import data, learning, structure
from exercises.audit.pipeline import run_link
from exercises.audit.subject import prepare

V = 37


class Bigram(nn.Module):
    """The smallest causal language model: logits at t depend on token t only."""

    def __init__(self, vocab_size=V):
        super().__init__()
        self.table = nn.Embedding(vocab_size, vocab_size)
        nn.init.normal_(self.table.weight, std=0.02)

    def forward(self, idx, targets=None):
        logits = self.table(idx)  # (B, T, V)
        loss = None if targets is None else F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        return logits, loss


class PeeksAhead(Bigram):
    """Adds the mean over the whole sequence: position t sees the tokens after it."""

    def forward(self, idx, targets=None):
        emb = self.table(idx)
        return emb + emb.mean(dim=1, keepdim=True), None


class Deaf(Bigram):
    """The same logits whatever the tokens: causal, and tells the intervention nothing."""

    def forward(self, idx, targets=None):
        return self.table(torch.zeros_like(idx)), None


def subject(model, optimizer=None, overfit_steps=0):
    built = model if optimizer is None else (model, optimizer)
    return prepare(lambda: built, None, None, "cpu", 0, None, overfit_steps, lambda f, m: None)


def test_the_pipeline_lists_every_link_once_in_order():
    assert [name for name, _ in PIPELINE] == list(LINKS)
    assert LINKS[:10] == ("TOKENIZER", "ALIGNMENT", "CAUSALITY", "SHAPE", "INIT", "REGISTRATION", "GRADIENTS",
                          "OWNERSHIP", "UPDATE", "CAPABILITY")


def test_importing_the_audit_package_loads_no_torch():
    code = ("import sys, exercises.audit, exercises.audit.report, tutor.audit_cmd; "
            "from exercises.audit import LINKS, STAGE_MARKER, AuditReport; "
            "sys.exit(1 if 'torch' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_tokenizer_holds_within_v_and_fails_when_ids_reach_past_it():
    s = subject(Bigram())
    link = data.tokenizer(s)
    assert link.status == "ok" and "ids [0, 36] within V=37" in link.verdict
    narrow = data.tokenizer(dataclasses.replace(s, V=30))
    assert narrow.status == "FAIL" and narrow.verdict == "ids reach 36 but the model has only V=30 rows"


def test_alignment_holds_on_a_real_batch_and_names_unshifted_targets():
    s = subject(Bigram())
    assert data.alignment(s).status == "ok"
    unshifted = data.alignment(dataclasses.replace(s, y=s.x.clone()))
    assert unshifted.status == "FAIL" and unshifted.verdict == "y == x: the targets are the inputs (no shift)"
    rolled = data.alignment(dataclasses.replace(s, y=torch.roll(s.y, 1, dims=1)))
    assert rolled.status == "FAIL" and rolled.verdict == "x[:, 1:] != y[:, :-1]"


def test_causality_holds_for_a_causal_model_and_names_a_leak_and_an_uninformative_test():
    assert structure.causality(subject(Bigram())).status == "ok"
    leak = structure.causality(subject(PeeksAhead()))
    assert leak.status == "FAIL" and leak.verdict.startswith("the past moved: prefix max |Δ logits|")
    deaf = structure.causality(subject(Deaf()))
    assert deaf.status == "FAIL" and deaf.verdict.startswith("uninformative: the suffix did not move")


def test_shape_checks_the_contract_and_the_ledger_for_an_engine_gpt():
    from engine.config import GPTConfig
    from engine.model import GPT

    contract = structure.shape(subject(Bigram()))
    assert contract.status == "ok" and contract.verdict.startswith("contract only")
    assert ["logits", "(4, 32, 37), expected (4, 32, 37)"] in contract.evidence
    engine = structure.shape(subject(GPT(GPTConfig(vocab_size=V, block_size=32, n_layer=1, n_head=2, n_embd=16))))
    assert engine.status == "ok" and "head-split round trip included" in engine.verdict


def test_registration_notes_ties_and_names_what_is_hidden():
    class Tied(Bigram):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(V, V, bias=False)
            self.head.weight = self.table.weight

    class HiddenTensor(Bigram):
        def __init__(self):
            super().__init__()
            self.scale = torch.ones(V, requires_grad=True)

    class HiddenList(Bigram):
        def __init__(self):
            super().__init__()
            self.layers = [nn.Linear(V, V)]

    tied = structure.registration(subject(Tied()))
    assert tied.status == "ok" and tied.verdict.endswith("; tied: head.weight is table.weight")
    hidden = structure.registration(subject(HiddenTensor()))
    assert hidden.status == "FAIL" and hidden.verdict == "not registered: scale (tensor wanting grad, not a Parameter)"
    listed = structure.registration(subject(HiddenList()))
    assert listed.status == "FAIL" and listed.verdict == "not registered: layers (modules in a plain list)"


def test_registration_judges_the_model_as_built_not_what_a_forward_stored():
    class KeepsActivations(Bigram):
        def forward(self, idx, targets=None):
            logits, loss = super().forward(idx, targets)
            self.last_logits = logits  # wants grad after a train-mode forward: not part of the build
            return logits, loss

    s = subject(KeepsActivations())
    s.forward(s.xs).sum().backward()
    assert structure.registration(s).status == "ok"


def test_the_learning_links_read_one_ledger():
    s = subject(Bigram())
    links = [learning.init(s), learning.gradients(s), learning.ownership(s), learning.update(s)]
    assert [l.status for l in links] == ["ok"] * 4, [l.verdict for l in links]
    assert links[0].verdict.startswith("initial loss ") and "ratio 1.00" in links[0].verdict
    assert links[1].verdict == "present 1/1; finite 1/1 gradients"
    assert links[3].verdict == "moved 1/1"
    assert list(s.memo) == ["ledger"]


def test_init_gradients_ownership_and_update_each_name_their_fault():
    loud = Bigram()
    nn.init.normal_(loud.table.weight, std=30.0)  # confident and wrong: loss far above ln V
    init = learning.init(subject(loud))
    assert init.status == "FAIL" and init.verdict.startswith("initial loss: ") and "ratio" in init.verdict

    class Unused(Bigram):
        def __init__(self):
            super().__init__()
            self.spare = nn.Parameter(torch.zeros(3))

    assert learning.gradients(subject(Unused())).verdict == "present: 1/2 (no gradient: spare)"
    model = Bigram()
    stale = torch.optim.SGD(nn.Linear(2, 2).parameters(), lr=0.1)
    assert learning.ownership(subject(model, stale)).verdict == "owned: 0/1 (not owned: table.weight)"
    frozen = Bigram()
    assert learning.update(subject(frozen, torch.optim.SGD(frozen.parameters(), lr=0.0))).verdict == "moved: 0/1"


def test_capability_skips_without_a_budget_and_fails_a_model_that_cannot_overfit():
    assert learning.capability(subject(Bigram())).verdict == "not run (no step budget)"
    bigram = learning.capability(subject(Bigram(), overfit_steps=20))
    assert bigram.status == "FAIL" and bigram.verdict.startswith("overfit: ") and "in 20 steps" in bigram.verdict
    assert bigram.evidence[-1][0] == "loss every 25 steps"


def test_a_ledger_that_raises_fails_init_and_skips_the_rest():
    class BreaksInTraining(Bigram):
        def forward(self, idx, targets=None):
            if torch.is_grad_enabled():
                raise RuntimeError("no training today")
            return super().forward(idx, targets)

    s = subject(BreaksInTraining(), overfit_steps=5)
    assert learning.init(s).verdict == "the learning ledger raised RuntimeError: no training today"
    assert [learning.gradients(s).status, learning.capability(s).verdict] == ["skip", "not run"]


def test_a_link_that_raises_fails_with_its_first_line():
    def broken(_s):
        raise ValueError("first line\nsecond line")

    link = run_link("SHAPE", broken, subject(Bigram()))
    assert (link.name, link.status, link.verdict) == ("SHAPE", "FAIL", "raised ValueError: first line")
