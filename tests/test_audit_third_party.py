"""``tutor audit`` on GPTs nobody here wrote: the zoo of tests/zoo.

nanoGPT's and minGPT's own ``model.py`` (vendored, with their recipes), and,
with ``pip install -e '.[zoo]'``, Hugging Face GPT-2, GPT-NeoX and Llama,
litgpt, x-transformers (plain and ``AutoregressiveWrapper``) and
TransformerLens, all at 2 layers, 4 heads, C = 64, block 64. A clean model
must hold at every link, or skip it with a reason naming what it lacks
(pinned below: a skip is the exception); every bug planted in them
(tests/zoo/planted.py) must fail first at its own link.

The vendored models' structural audit runs in the default suite (a second or
two each); everything else is marked ``zoo`` (``pytest -m zoo``).
"""

import contextlib
import functools
import io
import os
import sys

import pytest
import torch

from exercises.audit import LINKS, audit

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "zoo"))
import planted  # noqa: E402  (tests/zoo, put on the path above)
import subjects  # noqa: E402

#: Each zoo model's links that do not apply, and what the skip must name.
SKIPS = {
    "nanogpt": {},
    "mingpt": {},
    "meta_llama_style": {"GENERATE": "no generate method", "GRADIENTS": "torch.inference_mode()",
                         "UPDATE": "torch.inference_mode()", "CAPABILITY": "torch.inference_mode()",
                         "LOOP": "no train_step"},
    "hf_gpt2": {"LOOP": "no train_step"},
    "hf_neox": {"LOOP": "no train_step"},
    "hf_llama": {"LOOP": "no train_step"},
    "litgpt": {"GENERATE": "no generate method", "LOOP": "no train_step"},
    "x_transformer": {"CACHE": "no cache interface", "GENERATE": "no generate method", "LOOP": "no train_step"},
    "x_autoregressive": {"LOOP": "no train_step"},
    "transformer_lens": {"GENERATE": "needs model.tokenizer, which is None", "TIE": "no token table found",
                         "LOOP": "no train_step"},
}
#: The links that warn on each clean model, and what the verdict must name: a warning line is counted.
WARNS = {
    # their losses reject targets padded with -100 (and no pad_id is given); nanoGPT decays its embeddings
    "nanogpt": {"INIT": "the loss rejects targets padded with -100", "OWNERSHIP": "weight decay on the embedding table"},
    "mingpt": {"INIT": "the loss rejects targets padded with -100"},
}
#: The interface line's start for each zoo model.
INTERFACE = {
    "nanogpt": "nanoGPT style: model(idx, targets=...) -> (4, 1, 37) (last position only)",
    "mingpt": "nanoGPT style: model(idx, targets=...) -> logits (4, 32, 37)",
    "meta_llama_style": "own cache style: model(idx, start_pos=0); the loss by the audit",
    "hf_gpt2": "Hugging Face style: model(input_ids=idx, labels=idx)",
    "hf_neox": "Hugging Face style: model(input_ids=idx, labels=idx)",
    "hf_llama": "Hugging Face style: model(input_ids=idx, labels=idx)",
    "litgpt": "litgpt style: model(idx); the loss by the audit",
    "x_transformer": "plain style: model(idx); the loss by the audit (the forward takes no targets)",
    "x_autoregressive": "loss wrapper style: model(idx) -> the loss alone (it shifts idx itself); model.net(idx)",
    "transformer_lens": "plain style: model(idx); the loss by the audit (the forward takes no targets)",
}


#: Each test on one torch thread (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@functools.lru_cache(maxsize=None)
def report_of(factory, steps):
    with contextlib.redirect_stdout(io.StringIO()):  # nanoGPT and minGPT print their parameter counts
        return audit(factory, overfit_steps=steps)


def _needs(package):
    if package is not None:
        pytest.importorskip(package)


def _check_clean(name, report, capability):
    assert report.first_failure is None and report.exit_code == 0, report.text()
    assert report.setup["convention"].startswith(INTERFACE[name]), report.setup["convention"]
    statuses = {link.name: link.status for link in report.links}
    expected = {n: "skip" if n in SKIPS[name] or (n == "CAPABILITY" and not capability) else
                "warn" if n in WARNS.get(name, {}) else "ok" for n in LINKS}
    assert statuses == expected, report.text()
    assert report.warned == [n for n in LINKS if n in WARNS.get(name, {})], report.text()
    for link in report.links:
        if link.name in SKIPS[name] and (capability or link.name != "CAPABILITY"):
            assert SKIPS[name][link.name] in link.verdict, (link.name, link.verdict)
        if link.name in WARNS.get(name, {}):
            assert WARNS[name][link.name] in link.verdict and link.warnings, (link.name, link.verdict)


@pytest.mark.parametrize("name", ["nanogpt", "mingpt", "meta_llama_style"])
def test_the_gpts_that_need_no_extra_hold_at_every_link_but_training(name):
    _check_clean(name, report_of(subjects.ZOO[name][0], 0), capability=False)


def test_the_interface_reads_signatures_and_never_passes_targets_by_position():
    from exercises.audit.adapter import detect

    class HandWritten(torch.nn.Module):
        """nanoGPT's names with a Hugging Face-style cache keyword: not Hugging Face style."""

        def __init__(self):
            super().__init__()
            self.wte, self.lm_head = torch.nn.Embedding(37, 8), torch.nn.Linear(8, 37)

        def forward(self, idx, targets=None, past_key_values=None, use_cache=None):
            logits = self.lm_head(self.wte(idx))
            loss = None if targets is None else torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())
            return logits, loss

    class LossOnly(HandWritten):
        """nanochat's convention: logits without targets, the loss alone with them."""

        def forward(self, idx, targets=None, kv_cache=None, loss_reduction="mean"):
            logits, loss = super().forward(idx, targets)
            return logits if targets is None else loss

    class Flag(HandWritten):
        """A second parameter that is a flag (x-transformers' return_embeddings)."""

        def forward(self, x, return_embeddings=False):
            return self.wte(x) if return_embeddings else self.lm_head(self.wte(x))

    class MetaStyle(HandWritten):
        """Meta's Llama: forward(tokens, start_pos) with start_pos required."""

        def forward(self, tokens, start_pos):
            return self.lm_head(self.wte(tokens))

    ids = torch.randint(0, 37, (2, 8))
    hand = detect(HandWritten(), ids, ids).interface
    assert (hand.style, hand.targets_kw, hand.hf, hand.cache) == ("nanoGPT", "targets", False, "past_key_values")
    loss_only = detect(LossOnly(), ids, ids)
    assert loss_only.interface.loss_only and loss_only.description.startswith(
        "nanoGPT style: model(idx) -> logits; model(idx, targets=...) -> the loss alone")
    assert float(loss_only.loss(ids, ids).detach()) > 0 and tuple(loss_only(ids).shape) == (2, 8, 37)
    flag = detect(Flag(), ids, ids).interface
    assert (flag.takes_targets, flag.targets_kw) == (False, None)
    meta = detect(MetaStyle(), ids, ids)
    assert meta.interface.fixed == (("start_pos", 0),) and meta.interface.cache == "start_pos"
    assert meta.description.startswith("own cache style: model(idx, start_pos=0); the loss by the audit")


@pytest.mark.zoo
@pytest.mark.parametrize("name", list(subjects.ZOO))
def test_each_zoo_gpt_holds_at_every_link_or_skips_with_a_reason(name):
    factory, package = subjects.ZOO[name]
    _needs(package)
    _check_clean(name, report_of(factory, 150), capability=True)


@pytest.mark.zoo
@pytest.mark.parametrize("name", list(planted.BUGS))
def test_each_planted_bug_fails_first_at_its_own_link(name):
    factory, link, package = planted.BUGS[name]
    _needs(package)
    report = report_of(factory, 0)
    assert report.first_failure == link, report.text()


@pytest.mark.zoo
@pytest.mark.parametrize("name", list(planted.TRAINING_BUGS))
def test_a_recipe_that_does_not_learn_fails_capability_and_a_learning_one_passes(name):
    factory, link = planted.TRAINING_BUGS[name]
    report = report_of(factory, 150)
    assert report.first_failure == link, report.text()
    capability = next(l for l in report.links if l.name == "CAPABILITY")
    assert capability.verdict.startswith("recipe: AdamW from the factory: ") and "of the reference's fall" in \
        capability.verdict
    assert [row[0] for row in capability.evidence][-2:] == ["eval loss every 25 steps", "reference every 25 steps"]
    clean = next(l for l in report_of(subjects.nanogpt, 150).links if l.name == "CAPABILITY")
    assert clean.status == "ok", clean.verdict  # nanoGPT's own recipe at lr 1e-3, dropout 0.2


@pytest.mark.zoo
@pytest.mark.parametrize("name", list(planted.WARNINGS))
def test_a_planted_warning_warns_and_fails_nothing(name):
    factory, link, says, package = planted.WARNINGS[name]
    _needs(package)
    report = report_of(factory, 0)
    assert report.first_failure is None, report.text()
    assert any(w.startswith(says) for w in next(l for l in report.links if l.name == link).warnings)
