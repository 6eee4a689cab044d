"""``tutor audit`` on the styles real GPTs are written in: Hugging Face architectures built from tiny
random-weight configs (tests/zoo/hf_styles.py: BLOOM, Falcon-RW and Falcon-7B, GPT-Neo, Gemma 2, StableLM,
Mixtral, Qwen2-MoE, OPT-350m's post-norm, CodeGen, Phi, Qwen2, GPT-J), each clean and with one realistic
bug (tests/zoo/planted_hf.py). A clean model holds at every link, warning only where it departs from a
convention, each warning pinned here with the reason it names; every bug fails first at its own link.

Two readings the styles need are tested in the default suite on the nanoGPT-style model of
tests/audit_models/zoo_nano.py: the values a module attends over are read at its SDPA call, whatever packed
layout made them (CodeGen's model-parallel q, v, k), and a sliding window written by hand (a large
negative in the softmax's input over keys older than the window, GPT-Neo's and Gemma 2's local layers)
is read as a window, not as a scale or a bias.
"""

import contextlib
import functools
import io
import math
import os
import sys

import pytest
import torch
from torch.nn import functional as F

from audit_support import ZOO, subject_of
from exercises.audit import LINKS, OVERFIT_STEPS, audit
from exercises.audit.links import architecture

sys.path.insert(0, str(ZOO))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "zoo"))
import hf_styles  # noqa: E402  (tests/zoo: transformers is imported only when a factory runs)
import planted_hf  # noqa: E402
import zoo_nano  # noqa: E402  (tests/audit_models, put on the path above)
from bug_attention_kv_tiling import with_attention  # noqa: E402

#: Each test on one torch thread (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("one_torch_thread")


# --- the readings, on a hand-written GPT (default suite) ---------------------------

class ModelParallelPacked(zoo_nano.SelfAttention):
    """CodeGen's packed projection: four model-parallel shards, each holding q, then v, then k."""

    shards = 4
    causal = True

    def forward(self, x):
        B, T, C = x.size()
        local = C // self.shards
        q, v, k = self.c_attn(x).view(B, T, self.shards, 3 * local).split(local, dim=-1)
        q, k, v = (t.reshape(B, T, self.n_head, -1).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        return self.c_proj(y.transpose(1, 2).reshape(B, T, C))


class ModelParallelPackedNotCausal(ModelParallelPacked):
    causal = False


class Windowed(zoo_nano.SelfAttention):
    """Local attention by hand: each query reads its own key and the 3 before it (a window of 4), the
    rest filled with the dtype's minimum before the softmax, as GPT-Neo's local layers do."""

    reach = 0  # how many keys after its own each query may read: 0 in a correct model

    def attend(self, q, k, v):
        T = q.size(2)
        i = torch.arange(T, device=q.device)
        allowed = (i[None, :] <= i[:, None] + self.reach) & (i[:, None] - i[None, :] < 4)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
        return F.softmax(att.masked_fill(~allowed, torch.finfo(att.dtype).min), dim=-1) @ v


class WindowedLeaking(Windowed):
    reach = 1  # the window's mask shifted by one: each query also reads the next key


def attention_of(attention_class):
    return architecture.attention(subject_of(lambda: zoo_nano.build(model_class=with_attention(attention_class))))


def test_values_packed_in_a_model_parallel_layout_are_read_at_the_sdpa_call():
    link = attention_of(ModelParallelPacked)
    assert link.status == "ok", (link.verdict, link.evidence)
    assert "v as passed" in link.evidence[0][1]
    leaking = attention_of(ModelParallelPackedNotCausal)  # the layout read, the future still fails
    assert leaking.status == "FAIL" and "check the causal mask" in leaking.advice, (leaking.verdict, leaking.advice)


def test_a_sliding_window_written_by_hand_warns_naming_its_width_and_a_leak_in_it_fails():
    link = attention_of(Windowed)
    assert link.status == "warn", (link.verdict, link.evidence)
    assert "a sliding window of 4 positions (the softmax input hiding older keys)" in link.verdict
    assert any(w.startswith("a sliding window is right for a model trained with it") for w in link.warnings)
    leaking = attention_of(WindowedLeaking)
    assert leaking.status == "FAIL", (leaking.verdict, leaking.evidence)


# --- the Hugging Face styles (zoo tier) ---------------------------------------------

#: Each clean style's links that skip, and what the skip names.
SKIPS = {}
#: Each clean style's warnings: link -> the start of each warning, in order (every other link: none).
SCALE = "a scale other than 1/sqrt(D) is right for a model trained with it"
SOFTCAP = "soft-capped scores, c * tanh(scores / c), are right for a model trained with them"
WINDOW = "a sliding window is right for a model trained with it"
ALIBI = "ALiBi's per-head bias by distance stands in for position embeddings"
WARNINGS = {
    "bloom": {"ATTENTION": [ALIBI]},
    "falcon_rw": {"ATTENTION": [ALIBI]},
    "gpt_neo": {"ATTENTION": [SCALE, WINDOW]},
    "gemma2": {"ATTENTION": [SCALE, SOFTCAP, WINDOW]},
}


@functools.lru_cache(maxsize=None)
def report_of(factory, steps=0):
    with contextlib.redirect_stdout(io.StringIO()):
        return audit(factory, overfit_steps=steps)


@pytest.mark.zoo
@pytest.mark.parametrize("name", list(hf_styles.STYLES))
def test_each_style_holds_at_every_link_warning_only_where_it_departs_from_a_convention(name):
    """CAPABILITY included, at its default budget: each fits one batch below 0.1 nats in 150 steps."""
    pytest.importorskip("transformers")
    report = report_of(hf_styles.STYLES[name], OVERFIT_STEPS)
    assert report.first_failure is None and report.exit_code == 0, report.text()
    assert report.setup["convention"].startswith("Hugging Face style: model(input_ids=idx, labels=idx)")
    skips = {**SKIPS.get(name, {}), "LOOP": "no train_step"}
    warned = WARNINGS.get(name, {})
    for link in report.links:
        expected = "skip" if link.name in skips else "warn" if link.name in warned else "ok"
        assert link.status == expected, (link.name, link.verdict)
        if link.name in skips:
            assert skips[link.name] in link.verdict, link.verdict
        assert [w for w in link.warnings if not any(w.startswith(s) for s in warned.get(link.name, []))] == [], \
            link.warnings
        assert all(any(w.startswith(s) for w in link.warnings) for s in warned.get(link.name, [])), link.warnings
    assert [link.name for link in report.links] == list(LINKS)


@pytest.mark.zoo
@pytest.mark.parametrize("name", list(planted_hf.BUGS))
def test_each_planted_bug_fails_first_at_its_own_link(name):
    pytest.importorskip("transformers")
    factory, link = planted_hf.BUGS[name]
    report = report_of(factory)
    assert report.first_failure == link, report.text()


@pytest.mark.zoo
@pytest.mark.parametrize("name, seed", [("mixtral", 7), ("gemma2", 9)])
def test_a_correct_model_whose_greedy_text_reaches_its_end_of_sequence_id_still_generates_the_length_asked(name, seed):
    """At these seeds the clean model's greedy continuation emits its config's eos_token_id (Mixtral's 2,
    Gemma 2's 1) and transformers' generate stops there: correct, so GENERATE asks for the length it needs."""
    pytest.importorskip("transformers")
    with contextlib.redirect_stdout(io.StringIO()):
        link = audit(hf_styles.STYLES[name], overfit_steps=0, seed=seed, links=["GENERATE"]).links[0]
    assert link.status == "ok", (link.verdict, link.evidence)
    assert "'min_new_tokens': 28" in link.evidence[0][1]


@pytest.mark.zoo
def test_bloom_declares_no_length_and_its_greedy_generate_is_checked_token_by_token_past_t():
    """BLOOM has ALiBi and no position table: GENERATE holds its generate to the prompt followed by the
    new tokens, each the full forward's greedy choice, the end-of-sequence id its min_new_tokens bans
    left out of the argmax."""
    pytest.importorskip("transformers")
    with contextlib.redirect_stdout(io.StringIO()):
        link = audit(hf_styles.STYLES["bloom"], overfit_steps=0, links=["GENERATE"]).links[0]
    assert link.status == "ok", (link.verdict, link.evidence)
    assert link.verdict.startswith("no block_size declared: generated 32 tokens after a prompt of 8, to 40"), \
        link.verdict
    rows = dict(link.evidence)
    assert rows["greedy tokens vs argmax of the full forward"].startswith("0 of 64 differ"), rows
    assert rows["end-of-sequence ids"].startswith("[2]: banned by min_new_tokens"), rows
