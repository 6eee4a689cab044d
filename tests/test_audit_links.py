"""Each audit link on its own: a subject built from a tiny model, one link
called directly, its verdict pinned (seed 004, "Using AI on a generated
language model"). The whole chain on real GPTs is in test_audit.py."""

import dataclasses
import subprocess
import sys

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from audit_support import factory, subject_of
from exercises.audit import LINKS, PIPELINE, SEED_LINKS, audit
from exercises.audit.links import architecture, data, inference, learning, loop, structure
from exercises.audit.pipeline import run_link

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
    return subject_of(lambda: built, overfit_steps)


def test_the_pipeline_lists_every_link_once_in_order():
    assert [name for name, _ in PIPELINE] == list(LINKS)
    # The structural links, which need no training, come before GRADIENTS; the seed's ten keep their order.
    assert LINKS == ("TOKENIZER", "ALIGNMENT", "CAUSALITY", "SHAPE", "INIT", "REGISTRATION", "TIE", "EVAL",
                     "ATTENTION", "RESIDUAL", "CACHE", "GENERATE", "GRADIENTS", "OWNERSHIP", "UPDATE", "CAPABILITY",
                     "LOOP")
    assert [n for n in LINKS if n in SEED_LINKS] == list(SEED_LINKS)


def test_importing_the_audit_package_loads_no_torch():
    code = ("import sys, exercises.audit, exercises.audit.report, tutor.cli.audit; "
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


def test_the_learning_links_hold_on_a_clean_model():
    s = subject(Bigram())
    links = [learning.init(s), learning.gradients(s), learning.ownership(s), learning.update(s)]
    assert [l.status for l in links] == ["ok"] * 4, [l.verdict for l in links]
    assert links[0].verdict.startswith("initial loss ") and "ratio 1.00" in links[0].verdict
    assert links[1].verdict == "present 1/1; finite 1/1 gradients"
    assert links[3].verdict == "moved 1/1"


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
    assert learning.update(subject(frozen, torch.optim.SGD(frozen.parameters(), lr=0.0))).verdict == "moved: 0/1 (not moved: table.weight)"


def test_capability_skips_without_a_budget_and_fails_a_model_that_cannot_overfit():
    assert learning.capability(subject(Bigram())).verdict == "not run (no step budget)"
    bigram = learning.capability(subject(Bigram(), overfit_steps=20))
    assert bigram.status == "FAIL" and bigram.verdict.startswith("overfit: ") and "in 20 steps" in bigram.verdict
    assert bigram.evidence[-1][0] == "eval loss every 25 steps"


def test_an_exception_in_training_is_named_at_the_links_that_train_and_init_still_holds():
    class BreaksInTraining(Bigram):
        def forward(self, idx, targets=None):
            if torch.is_grad_enabled():
                raise RuntimeError("no training today")
            return super().forward(idx, targets)

    s = subject(BreaksInTraining(), overfit_steps=5)
    assert learning.init(s).status == "ok"  # eval mode, no gradients: INIT's forward runs
    for name, link in (("GRADIENTS", learning.gradients), ("UPDATE", learning.update),
                       ("CAPABILITY", learning.capability)):
        assert run_link(name, link, s).verdict == "raised RuntimeError: no training today"


def test_a_link_that_raises_fails_with_its_first_line():
    def broken(_s):
        raise ValueError("first line\nsecond line")

    link = run_link("SHAPE", broken, subject(Bigram()))
    assert (link.name, link.status, link.verdict) == ("SHAPE", "FAIL", "raised ValueError: first line")


# ---------------------------------------------------------------------------
# v2: numbers that are not finite, interfaces, and the links after CAPABILITY


class Banned(Bigram):
    """Bans the last 3 of 40 ids with -inf, by design: a correct model."""

    def __init__(self):
        super().__init__(40)

    def forward(self, idx, targets=None):
        logits = self.table(idx).masked_fill(torch.arange(40) >= 37, float("-inf"))
        loss = None if targets is None else F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        return logits, loss


class DropoutInEval(Bigram):
    def forward(self, idx, targets=None):
        logits, loss = super().forward(idx, targets)
        return F.dropout(logits, 0.5, training=True), loss


class CacheTurnsNonFinite(Bigram):
    """A stateless model with Meta's cache interface (``start_pos``) whose cached steps, past the
    prefill, turn logits −inf or NaN that the full forward (``start_pos=0``) keeps finite: the
    finite entries still agree to the last bit, so only their kind tells the bug."""

    def __init__(self, value, cached_only=True):
        super().__init__()
        self.value, self.cached_only = value, cached_only

    def forward(self, idx, start_pos):
        logits = self.table(idx)
        turned = start_pos > 0 or not self.cached_only
        return logits.masked_fill(torch.arange(V) == 0, self.value) if turned else logits


@pytest.mark.parametrize("value", [float("-inf"), float("nan")], ids=["-inf", "NaN"])
def test_cache_fails_a_model_whose_cached_logits_turn_non_finite(value):
    s = subject(CacheTurnsNonFinite(value))
    assert s.forward.interface.cache == "start_pos"
    link = inference.cache(s)
    assert link.status == "FAIL", link.verdict
    T = s.xs.size(1)
    k = T // 4
    # never "by 0": the entries that differ are non-finite on one path only, counted over both decoding schemes
    assert link.verdict.startswith(f"cached logits differ from the full forward in kind: {2 * 2 * (T - k)} logits "
                                   "are NaN or infinite on one path and not on the other"), link.verdict
    # each position past the prefill changed kind at one token id, in each of the 2 rows the link feeds
    changed = f"max |Δ logits| 0.000e+00, {2 * (T - k)} changed kind"
    assert link.evidence[:2] == [[f"prefill {k}, then one token at a time", changed], [f"prefill {k}, then chunks of 3", changed]]


def test_cache_passes_a_stateless_model_that_banned_tokens_keep_banned_in_both_paths():
    assert inference.cache(subject(CacheTurnsNonFinite(float("-inf"), cached_only=False))).status == "ok"


def test_finite_delta_compares_finite_entries_by_value_and_the_rest_by_kind():
    from exercises.audit.measure import finite_delta

    inf, nan = float("inf"), float("nan")
    a = torch.tensor([1.0, -inf, 2.0, nan])
    assert finite_delta(a, torch.tensor([1.5, -inf, 2.0, nan])) == (0.5, 0)
    assert finite_delta(a, torch.tensor([1.0, 0.0, 2.0, inf])) == (0.0, 2)


def test_split_output_reads_tuples_hugging_face_tuples_mappings_and_objects():
    from types import SimpleNamespace

    from exercises.audit.adapter import split_output

    logits, loss = torch.zeros(1, 2, 3), torch.tensor(1.5)
    assert split_output((logits, loss))[:2] == (logits, loss)
    assert split_output((loss, logits, "past"))[:2] == (logits, loss)  # return_dict=False with labels
    assert split_output({"logits": logits, "past_key_values": "kv"}) == (logits, None, "kv")
    assert split_output(SimpleNamespace(logits=logits, loss=loss, past_key_values=None)) == (logits, loss, None)


def test_causality_and_shape_accept_banned_logits_and_causality_ignores_dropout_left_on():
    banned = subject(Banned())
    assert structure.causality(banned).status == "ok"
    assert structure.shape(banned).status == "ok"
    assert learning.init(banned).status == "ok"
    noisy = subject(DropoutInEval())
    assert structure.causality(noisy).status == "ok"  # both forwards draw the same masks
    assert inference.eval_mode(noisy).status == "FAIL"  # the right diagnosis, at the right link


def test_init_names_nan_logits_and_a_loss_that_rejects_padding_is_a_warning():
    class NaNLogits(Bigram):
        def forward(self, idx, targets=None):
            logits, loss = super().forward(idx, targets)
            return logits * float("nan"), loss

    nan = learning.init(subject(NaNLogits()))
    assert nan.status == "FAIL" and nan.verdict == "logits: 4736 NaN, 0 +inf among 4,736"

    class NoPadding(Bigram):
        def forward(self, idx, targets=None):
            logits = self.table(idx)
            loss = None if targets is None else -logits.log_softmax(-1).gather(-1, targets[..., None]).mean()
            return logits, loss

    link = learning.init(subject(NoPadding()))
    assert link.status == "ok" and link.warnings[0].startswith("the loss rejects targets padded with -100")
    padded = subject(NoPadding())
    padded.extras["pad_id"] = 0  # a model that declares padding must handle it
    assert learning.init(padded).verdict.startswith("padded loss: the loss rejects targets padded with -100")


def test_a_step_that_raises_fails_update_and_skips_capability():
    model = Bigram()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def step():
        raise RuntimeError("the state is on another device")

    optimizer.step = step
    s = subject(model, optimizer, overfit_steps=5)
    assert learning.update(s).verdict == "step: optimizer.step() raised RuntimeError: the state is on another device"
    assert learning.capability(s).verdict == "not run: optimizer.step() raised at UPDATE"


def test_registration_names_parameters_and_tensors_in_plain_containers():
    class ParamsInList(Bigram):
        def __init__(self):
            super().__init__()
            self.gains = [nn.Parameter(torch.ones(3))]

    class TensorsInDict(Bigram):
        def __init__(self):
            super().__init__()
            self.masks = {"causal": torch.ones(V).float()}

        def forward(self, idx, targets=None):
            logits, _ = super().forward(idx)
            logits = logits * self.masks["causal"]  # used as kept: on another device than the table
            return logits, None if targets is None else F.cross_entropy(logits.flatten(0, 1), targets.flatten())

    class UnusedTensorsInDict(Bigram):
        def __init__(self):
            super().__init__()
            self.masks = {"causal": torch.ones(4, 4).tril()}

    assert structure.registration(subject(ParamsInList())).verdict == \
        "not registered: gains (Parameters in a plain list)"
    assert structure.registration(subject(TensorsInDict())).verdict == \
        f"not registered: masks (a float32 tensor ({V},) kept as a plain attribute, not a buffer); with its " \
        "parameters on another device the forward fails: masks stayed on cpu"
    unused = structure.registration(subject(UnusedTensorsInDict()))  # the model runs without it anywhere
    assert unused.status == "warn" and unused.verdict.endswith(
        "; outside state_dict(): masks, plain tensors the model carries along itself (its forward still runs with "
        "its parameters moved to another device)"), unused.verdict


def test_tokenizer_fails_when_the_factorys_tokenizer_cannot_encode_the_corpus():
    class Letters:
        """Knows a-z only: the corpus's spaces and capitals are not in its vocabulary."""

        vocab_size = 26

        def encode(self, text):
            return [ord(c) - 97 if "a" <= c <= "z" else self.unknown(c) for c in text]

        def unknown(self, c):
            raise KeyError(c)

        def decode(self, ids):
            return "".join(chr(i + 97) for i in ids)

    s = subject_of(lambda: {"model": Bigram(), "tokenizer": Letters()})
    link = data.tokenizer(s)
    assert link.status == "FAIL" and link.verdict.startswith("the factory's tokenizer cannot round-trip the corpus")


def test_the_links_after_capability_skip_what_a_model_does_not_have():
    s = subject(Bigram())
    # each skip says what the audit looked for and what it found, in the model's own names
    assert inference.cache(s).verdict == ("no cache interface: the forward takes no cache, past_key_values or "
                                          "start_pos (it takes idx, targets), and Bigram has no generate")
    assert inference.generate(s).verdict == "Bigram has no generate method"
    assert structure.tie(s).verdict == ("no output head (a Linear to V) found to compare; no nn.Linear in Bigram "
                                        f"has {V} outputs")
    assert architecture.attention(s).verdict.startswith("no attention module found")
    assert architecture.attention(s).verdict.endswith("Bigram has no module with two or more projections")
    assert architecture.residual(s).verdict == ("no stack of blocks (a ModuleList of one class whose items hold two "
                                                "or more Linear or Conv1D projections) found; Bigram holds no "
                                                "ModuleList")
    assert loop.loop(s).verdict.startswith("no train_step: return {'model': ...")


def test_eval_names_a_module_that_eval_does_not_reach():
    class Stubborn(nn.Module):
        def train(self, mode=True):  # ignores eval(): stays in training mode
            return self

    class Holder(Bigram):
        def __init__(self):
            super().__init__()
            self.stubborn = Stubborn()

    link = inference.eval_mode(subject(Holder()))
    assert link.status == "FAIL" and link.verdict == "model.eval() leaves stubborn in training mode"


def test_a_stale_tie_flag_over_a_replaced_head_is_a_warning():
    from engine.config import GPTConfig
    from engine.model import GPT

    model = GPT(GPTConfig(vocab_size=V, block_size=32, n_layer=1, n_head=2, n_embd=16))
    model.lm_head = nn.Linear(16, V, bias=False)  # a fresh head, as fine-tuning scripts do; the flag says tied
    link = structure.tie(subject(model))
    assert link.status == "ok" and link.warnings == [
        "config.tie_weights is true but lm_head.weight is wte.weight is False and their values differ (a replaced "
        "head? then the flag is stale)"]


def test_watching_a_step_puts_every_patched_function_back():
    model = Bigram()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    clip, step = torch.nn.utils.clip_grad_norm_, optimizer.step
    watch = loop.Watch(model, optimizer, None)
    with watch.watching(lambda *a: None):
        model(torch.zeros(1, 2, dtype=torch.long), torch.zeros(1, 2, dtype=torch.long))[1].backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    assert watch.events == ["clip", "step"] and watch.lr_at_step == 0.1
    assert torch.nn.utils.clip_grad_norm_ is clip and "step" not in vars(optimizer) and optimizer.step == step


def test_audit_runs_the_links_it_is_given_in_pipeline_order():
    from exercises.audit import audit

    seen = []
    report = audit(Bigram, links=["ALIGNMENT", "TOKENIZER"], progress=lambda f, m: seen.append(f))
    assert [l.name for l in report.links] == ["TOKENIZER", "ALIGNMENT"]
    assert seen == sorted(seen) and seen[-1] == 1.0  # the bar never runs backwards
    try:
        audit(Bigram, links=["TOKENISER"])
    except ValueError as exc:
        assert str(exc).startswith("unknown links ['TOKENISER']; the links are TOKENIZER, ALIGNMENT")
    else:
        raise AssertionError("an unknown link name must raise")


class GoesNaN(Bigram):
    """Logits that are NaN everywhere (an overflow upstream, a 0/0 in a norm): nothing can be compared."""

    def forward(self, idx, targets=None):
        logits = self.table(idx) * float("nan")
        loss = None if targets is None else F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        return logits, loss


def test_causality_says_non_finite_logits_are_not_finite_never_that_the_suffix_did_not_move():
    link = structure.causality(subject(GoesNaN()))
    assert link.status == "FAIL"
    B, T = subject(GoesNaN()).xs.shape
    assert link.verdict == (f"the logits are not finite ({B * T * V} NaN and 0 +inf of {B * T * V} logits), so whether "
                            "the past moved cannot be read: a correct GPT's logits are finite, −inf only where it "
                            "bans a token"), link.verdict
    assert structure.causality(subject(Bigram())).status == "ok"  # −inf-free finite logits are read as before


def test_loop_says_non_finite_gradients_are_not_finite_never_that_they_accumulate():
    def train_step(model, optimizer, batch):
        optimizer.zero_grad()
        model(*batch)[1].backward()
        optimizer.step()

    model = GoesNaN()
    built = {"model": model, "optimizer": torch.optim.SGD(model.parameters(), lr=0.1), "train_step": train_step}
    verdict = loop.loop(subject_of(lambda: built)).verdict
    assert verdict.startswith("gradients: optimizer.step() saw gradients that are not finite ("), verdict
    assert "accumulate across steps" not in verdict and "microbatch" not in verdict


def test_alignment_and_ownership_failures_say_what_to_change_from_what_they_measured():
    from engine.data import get_batch

    def two_ahead(data, B, T, generator=None, device="cpu"):
        x, y = get_batch(data, B, T + 1, generator=generator, device=device)
        return x[:, :T], y[:, 1:]  # y is x moved by 2: one token too far

    report = audit(factory("clean_nano"), get_batch=two_ahead, overfit_steps=0, links=["ALIGNMENT"])
    alignment = report.links[0]
    assert alignment.status == "FAIL" and alignment.advice == (
        "y must be x moved one token on: x = data[i:i+T], y = data[i+1:i+T+1]; here y is x moved by 2"), alignment

    def stale():
        model = factory("clean_nano")()["model"]
        optimizer = torch.optim.AdamW(list(model.parameters())[1:], lr=1e-3)  # made without the first one
        return model, optimizer

    ownership = audit(stale, overfit_steps=0, links=["OWNERSHIP"]).links[0]
    assert ownership.status == "FAIL" and ownership.advice.startswith(
        "the optimizer never steps transformer.wte.weight: build it after the model is complete"), ownership.advice


def test_a_leak_outside_attention_is_said_to_be_outside_the_modules_attention_read():
    """Each attention module is causal, but a mean over the sequence before the head lets the future in:
    CAUSALITY's advice says ATTENTION found every module causal, so the leak is elsewhere."""

    class MeanOverT(nn.Module):
        def forward(self, x):
            return x + x.mean(dim=1, keepdim=True)

    def build():
        built = factory("clean_nano")()
        model = built["model"]
        model.transformer.ln_f = nn.Sequential(model.transformer.ln_f, MeanOverT())
        return model

    report = audit(build, overfit_steps=0, links=["CAUSALITY", "ATTENTION"])
    causality, attention = report.links
    assert causality.status == "FAIL" and attention.status == "ok", report.text()
    assert causality.verdict.endswith("first at position 0 of 0..15"), causality.verdict
    assert causality.advice.startswith("the change from position 16 on reached position 0: the whole future leaks in")
    assert causality.advice.endswith("ATTENTION (link 2) finds every attention module it read causal, so the leak is "
                                     "outside them: an op over the sequence, a mask built once and shared wrongly, "
                                     "or an attention the audit did not read"), causality.advice
