"""``tutor audit`` judges what a model asked for, not one convention: ATTENTION compares each attention
call with causal SDPA at the scale the module applies itself (SDPA's ``scale=``, or the factor between a
hand-written q @ k^T and its softmax), so a muP model (1/D) and GPT-Neo's unscaled scores keep the
contract and warn; so do ALiBi's bias by distance and Gemma 2's soft-capped scores, read at the call
(tests/audit_models/zoo_scores.py); a causality or heads-mixing fault still fails.

The models are written here: nanoGPT-style GPTs (tests/audit_models/zoo_nano.py) whose attention is
replaced, one convention each.
"""

import json
import math
import re
import sys

import pytest
import torch
from torch.nn import functional as F

from audit_support import ZOO, subject_of
from exercises.audit import audit, format_report
from exercises.audit.links import architecture

sys.path.insert(0, str(ZOO))
import zoo_nano  # noqa: E402  (tests/audit_models, put on the path above)
from bug_attention_kv_tiling import GroupedQuery, TiledWrong, with_attention  # noqa: E402

#: Each test on one torch thread (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("one_torch_thread")


def causal_mask(T, device):
    return torch.ones(T, T, dtype=torch.bool, device=device).tril()


class MupScale(zoo_nano.SelfAttention):
    """nanoGPT-mup: SDPA asked for scale 1/D."""

    def attend(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=1.0 / q.size(-1))


class Unscaled(zoo_nano.SelfAttention):
    """GPT-Neo: the scores q @ k^T are not scaled; the mask fills the future with the dtype's minimum."""

    def attend(self, q, k, v):
        att = q @ k.transpose(-2, -1)
        att = att.masked_fill(~causal_mask(q.size(2), q.device), torch.finfo(att.dtype).min)
        return F.softmax(att, dim=-1) @ v


class ByHand(zoo_nano.SelfAttention):
    """minGPT: softmax(q k^T / sqrt(D)) v written by hand."""

    def attend(self, q, k, v):
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        return F.softmax(att.masked_fill(~causal_mask(q.size(2), q.device), float("-inf")), dim=-1) @ v


class MupNotCausal(zoo_nano.SelfAttention):
    """muP's scale, and the SDPA call asks for no mask: every position reads the future."""

    def attend(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, scale=1.0 / q.size(-1))


def build_with(attention_class):
    """A factory: the zoo's nanoGPT-style GPT with ``attention_class`` in every block."""
    return lambda: zoo_nano.build(model_class=with_attention(attention_class))


def attention_of(attention_class):
    return architecture.attention(subject_of(build_with(attention_class)))


@pytest.mark.parametrize("attention_class, scale, named", [
    (MupScale, 0.0625, "1/D, muP's"),
    (Unscaled, 1.0, "1, unscaled scores"),
])
def test_a_scale_the_model_asks_for_keeps_the_contract_and_warns_with_its_evidence(attention_class, scale, named):
    link = attention_of(attention_class)
    assert link.status == "warn", link.verdict
    assert link.verdict.startswith("2 attention modules equal causal SDPA at their own scale"), link.verdict
    assert f"{scale:.4g} ({named}) in transformer.h.0.attn, transformer.h.1.attn" in link.verdict, link.verdict
    rows = [v for _, v in link.evidence if "relative" in v]
    assert len(rows) == 2 and all(f"against causal SDPA at its own scale {scale:.4g} ({named})" in v for v in rows)
    assert all(float(v.rsplit("relative ", 1)[1]) < 1e-6 for v in rows), rows
    assert link.warnings and link.warnings[0].startswith("a scale other than 1/sqrt(D) is right for a model trained")


def test_the_scale_is_read_from_the_call_itself():
    mup = dict(attention_of(MupScale).evidence)["transformer.h.0.attn"]
    assert "asked: SDPA scale=0.0625, is_causal=True" in mup, mup
    by_hand = attention_of(ByHand)
    assert by_hand.status == "ok", by_hand.verdict
    assert "asked: softmax input = 0.25 x q @ k^T" in dict(by_hand.evidence)["transformer.h.0.attn"]
    unscaled = dict(attention_of(Unscaled).evidence)["transformer.h.0.attn"]
    assert "asked: softmax input = 1 x q @ k^T" in unscaled, unscaled


def test_grouped_query_attention_holds_and_kv_heads_read_by_the_wrong_query_heads_fail():
    clean = attention_of(GroupedQuery)
    assert clean.status == "ok", clean.verdict
    tiled = attention_of(TiledWrong)
    assert tiled.status == "FAIL", tiled.verdict
    assert re.match(r"transformer\.h\.[01]\.attn differs from causal attention over its own scores by [0-9.]+ "
                    r"\(relative, tolerance 1\.0e-04 for float32\) on unit-scale scores, and equals it with the kv heads "
                    r"tiled \(relative 0\.0e\+00\): ", tiled.verdict), tiled.verdict
    assert tiled.verdict.endswith("the key/value heads are shared with the wrong query heads"), tiled.verdict
    assert "repeat_interleave" in tiled.advice and "check the causal mask" not in tiled.advice, tiled.advice
    assert "check the scale" not in tiled.verdict and "check the causal mask" not in tiled.verdict
    assert dict(tiled.evidence)["kv heads tiled, not grouped"].endswith(
        ": query head h reading kv head h mod Hkv (what repeat gives) matches its output, relative 0.000e+00")


def test_an_unmasked_call_fails_at_its_own_scale_and_says_it_asked_for_no_mask():
    link = attention_of(MupNotCausal)
    assert link.status == "FAIL", link.verdict
    assert "differs from causal softmax(q k^T x 0.0625) v" in link.verdict
    assert link.verdict.endswith("its SDPA call passed neither is_causal=True nor an attn_mask"), link.verdict


def test_a_warning_is_shown_in_the_text_report_and_the_json_and_fails_nothing():
    report = audit(build_with(MupScale), overfit_steps=0, links=["CAUSALITY", "ATTENTION"])
    assert report.first_failure is None and report.exit_code == 0 and report.status == "ok", report.text()
    data = json.loads(json.dumps(report.to_dict()))
    assert data["warned"] == ["ATTENTION"]
    assert [link["status"] for link in data["links"]] == ["ok", "warn"]
    lines = format_report(data).splitlines()
    assert any(line.startswith(" 2 ATTENTION    warn  2 attention modules equal causal SDPA") for line in lines), lines
    assert lines[-1] == "first failure: none — every link holds (warnings: ATTENTION)"


sys.path.insert(0, str(ZOO))
import zoo_scores  # noqa: E402  (tests/audit_models: ALiBi and soft-capped scores, clean and leaking)


@pytest.mark.parametrize("build, convention, asked", [
    ("build_alibi", "ALiBi (a per-head bias linear in the distance, slopes 0.25 .. 0.003906)",
     "softmax input = 0.25 x q @ k^T + ALiBi"),
    ("build_soft_capped", "soft-capped at 50 (tanh)", "softmax input = 50 x tanh(0.005 x q @ k^T)"),
])
def test_scores_with_alibi_or_a_soft_cap_keep_the_contract_and_warn_naming_the_convention(build, convention, asked):
    link = architecture.attention(subject_of(getattr(zoo_scores, build)))
    assert link.status == "warn", link.verdict
    assert link.verdict.startswith("2 attention modules equal causal attention over the scores they apply"), \
        link.verdict
    assert link.verdict.endswith(f"apply their own scores, not q @ k^T / sqrt(D): {convention} in "
                                 "transformer.h.0.attn, transformer.h.1.attn"), link.verdict
    rows = [v for _, v in link.evidence if "relative" in v]
    assert len(rows) == 2 and all(f"asked: {asked}" in v for v in rows), rows
    assert all(float(v.rsplit("relative ", 1)[1]) < 1e-6 for v in rows), rows
    assert len(link.warnings) == 1 and convention.split(" ")[0].lower() in link.warnings[0].lower(), link.warnings


@pytest.mark.parametrize("build, scores", [
    ("build_alibi_mask_shifted", "q k^T x 0.25, ALiBi (a per-head bias linear in the distance"),
    ("build_soft_capped_unmasked", "q k^T x 0.25, soft-capped at 50 (tanh)"),
])
def test_a_causality_leak_in_the_same_scores_still_fails(build, scores):
    link = architecture.attention(subject_of(getattr(zoo_scores, build)))
    assert link.status == "FAIL", link.verdict
    assert f"differs from causal softmax({scores}" in link.verdict, link.verdict
    assert "not a matter of scale" in link.verdict, link.verdict
    assert link.advice.startswith("check the causal mask"), link.advice
    assert audit(getattr(zoo_scores, build), overfit_steps=0, links=["CAUSALITY", "ATTENTION"]).first_failure \
        == "CAUSALITY"


@pytest.mark.parametrize("build", ["build_alibi", "build_soft_capped"])
def test_the_clean_scores_hold_at_every_link_warning_only_at_attention(build):
    report = audit(getattr(zoo_scores, build), overfit_steps=0)
    assert report.first_failure is None and report.exit_code == 0 and report.warned == ["ATTENTION"], report.text()


@pytest.mark.parametrize("build, status", [("build_alibi", "warn"), ("build_soft_capped", "warn"),
                                           ("build_alibi_mask_shifted", "FAIL"), ("build_soft_capped_unmasked", "FAIL")])
def test_the_scores_are_read_in_bfloat16_to_its_rounding(build, status):
    link = architecture.attention(subject_of(lambda: getattr(zoo_scores, build)()[0].to(torch.bfloat16)))
    assert link.status == status, link.verdict
    convention = "ALiBi (a per-head bias linear in the distance" if "alibi" in build else "soft-capped at 50 (tanh)"
    assert convention in link.verdict, link.verdict


def test_a_query_pre_attn_scalar_and_a_soft_cap_are_named_together():
    link = architecture.attention(subject_of(zoo_scores.build_soft_capped_scalar))
    assert link.status == "warn", link.verdict
    assert link.verdict.endswith("apply their own scores, not q @ k^T / sqrt(D): 0.125 (1/sqrt(C), C = 64 the heads' "
                                 "width) and soft-capped at 50 (tanh) in transformer.h.0.attn, "
                                 "transformer.h.1.attn"), link.verdict
    assert len(link.warnings) == 2 and link.warnings[0].startswith("a scale other than 1/sqrt(D)"), link.warnings


@pytest.mark.parametrize("build, departure", [
    (build_with(MupScale), "scale the scores by other than 1/sqrt(D), where --expect sdpa holds them to causal SDPA "
                           "at 1/sqrt(D): 0.0625 (1/D, muP's) in transformer.h.0.attn, transformer.h.1.attn"),
    (zoo_scores.build_alibi, "apply their own scores, not q @ k^T / sqrt(D), where --expect sdpa holds them to causal "
                             "SDPA at 1/sqrt(D): ALiBi (a per-head bias linear in the distance"),
    (zoo_scores.build_soft_capped, "apply their own scores, not q @ k^T / sqrt(D), where --expect sdpa holds them "
                                   "to causal SDPA at 1/sqrt(D): soft-capped at 50 (tanh) in transformer.h.0.attn"),
])
def test_expecting_sdpa_turns_a_departure_from_it_into_attentions_failure(build, departure):
    warned = audit(build, overfit_steps=0, links=["ATTENTION"])
    assert warned.exit_code == 0 and warned.links[0].status == "warn", warned.text()
    report = audit(build, overfit_steps=0, links=["ATTENTION"], expect=["sdpa"])
    assert report.first_failure == "ATTENTION" and report.exit_code == 1, report.text()
    verdict = report.links[0].verdict
    assert verdict.startswith(f"2 of 2 attention modules {departure}"), verdict
    assert "(each equals causal attention over its own scores, max " in verdict, verdict
    assert report.setup["expect"].startswith("every attention module computes causal SDPA at 1/sqrt(D)")
    assert "expected: every attention module computes causal SDPA at 1/sqrt(D)" in report.text()


def test_expecting_sdpa_passes_a_model_that_computes_it():
    report = audit(lambda: zoo_nano.build(), overfit_steps=0, links=["ATTENTION"], expect=["sdpa"])
    assert report.exit_code == 0 and report.links[0].status == "ok", report.text()


def test_an_unknown_convention_to_expect_is_refused():
    with pytest.raises(ValueError, match=r"unknown conventions \['flash'\] to expect; the conventions are sdpa"):
        audit(lambda: zoo_nano.build(), overfit_steps=0, expect=["flash"])


#: Scores whose bias reaches the attention call another way, each clean: ALiBi as SDPA's float attn_mask
#: (MPT's, BLOOM's SDPA path), BLOOM's alibi.baddbmm over heads folded into the batch, a bool sliding window.
BIAS_AT_THE_CALL = {
    "build_alibi_mask": "ALiBi (a per-head bias linear in the distance, slopes 0.25 .. 0.003906) as an SDPA attn_mask",
    "build_bloom_baddbmm": "ALiBi (a per-head bias linear in the distance, slopes 0.25 .. 0.003906)",
    "build_sliding_window": "a sliding window of 4 positions (an attn_mask hiding older keys)",
}


@pytest.mark.parametrize("build", list(BIAS_AT_THE_CALL))
def test_a_bias_read_from_the_call_keeps_the_contract_and_warns_naming_it(build):
    link = architecture.attention(subject_of(getattr(zoo_scores, build)))
    assert link.status == "warn", link.verdict
    assert link.verdict.endswith(f"apply their own scores, not q @ k^T / sqrt(D): {BIAS_AT_THE_CALL[build]} in "
                                 "transformer.h.0.attn, transformer.h.1.attn"), link.verdict
    rows = [v for _, v in link.evidence if "relative" in v]
    assert len(rows) == 2 and all(float(v.rsplit("relative ", 1)[1]) < 1e-6 for v in rows), rows
    assert len(link.warnings) == 1, link.warnings
    report = audit(getattr(zoo_scores, build), overfit_steps=0)
    assert report.first_failure is None and report.warned == ["ATTENTION"], report.text()


def test_an_alibi_mask_that_lets_the_next_position_in_fails_at_its_own_bias():
    link = architecture.attention(subject_of(zoo_scores.build_alibi_mask_leaks))
    assert link.status == "FAIL", link.verdict
    assert "differs from causal softmax(q k^T x 0.25, ALiBi (a per-head bias linear in the distance, slopes 0.25 .. " \
           "0.003906) as an SDPA attn_mask) v" in link.verdict, link.verdict
    assert audit(zoo_scores.build_alibi_mask_leaks, overfit_steps=0, links=["CAUSALITY", "ATTENTION"]).first_failure \
        == "CAUSALITY"


@pytest.mark.parametrize("build", ["build_alibi_mask_sign_flipped", "build_bloom_baddbmm_sign_flipped"])
def test_alibi_slopes_of_the_wrong_sign_fail_attention_saying_so(build):
    report = audit(getattr(zoo_scores, build), overfit_steps=0)
    assert report.first_failure == "ATTENTION", report.text()
    link = next(l for l in report.links if l.name == "ATTENTION")
    verdict = link.verdict
    assert verdict.startswith("transformer.h.0.attn, transformer.h.1.attn add ALiBi with slopes of the wrong sign "
                              "(slopes -0.25 .. -0.003906: the bias grows with the distance)"), verdict
    assert verdict.endswith("so each query favours the keys furthest in its past: ALiBi subtracts slope x distance, "
                            "every slope positive"), verdict
    assert link.advice.startswith("check the sign of the slopes or of the distance"), link.advice
