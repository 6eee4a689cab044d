"""``tutor audit`` v2 on its test zoo.

The zoo (tests/audit_models/) holds small GPTs written for these tests and
independent of engine/: V = 37, block 64, 2 layers, C = 64. Three base
families — nanoGPT style (zoo_nano), Hugging Face style (zoo_hf), a model
keeping its own KV cache (zoo_llama) — give one clean control per
interface, and each bug file changes one thing taken from a public bug
report. Every bug must fail at exactly its link, first; every clean model
must hold at every link that applies to it.

The default suite audits with CAPABILITY's budget at 0 (seconds for the
zoo); the ``slow`` test repeats the zoo at the audit's default budget.
"""

import functools
import re

import pytest
import torch

from audit_support import factory, subject_of
from exercises.audit import LINKS, OVERFIT_STEPS, audit
from exercises.audit.adapter import detect
from exercises.audit.links import architecture, inference

#: Each bug, the link it must fail first, and what that link's verdict must say.
BUGS = [
    ("bug_tokenizer_small_table", "TOKENIZER", "the token table has 32 rows but the tokenizer has 37 ids"),
    ("bug_padding_broadcast", "INIT", "padded loss: model 2.83638 vs mean over the 112 real tokens 3.70466"),
    ("bug_numerics_nan_loss", "INIT", "initial loss: nan reported, 3.641 by hand from the same logits"),
    ("bug_buffer_plain_mask", "REGISTRATION", "not registered: transformer.h.0.attn.mask (a float32 tensor (64, 64) "
                                              "kept as a plain attribute, not a buffer)"),
    ("bug_numerics_nan_grad", "GRADIENTS", "finite: 4/28 gradients (NaN or inf in 24, the last in module order "
                                           "transformer.h.1.mlp.c_fc.bias"),
    ("bug_optimizer_state_double", "UPDATE", "state: 56 of 56 state tensors differ from their parameters: "
                                             "transformer.wte.weight exp_avg float32 on cpu, the parameter float64"),
    ("bug_eval_functional_dropout", "EVAL", "two eval-mode forwards on the same input differ by"),
    ("bug_eval_sdpa_dropout", "EVAL", "two eval-mode forwards on the same input differ by"),
    ("bug_eval_dropout_in_list", "EVAL", "two eval-mode forwards on the same input differ by"),
    ("bug_cache_is_causal", "CACHE", "cached logits differ from the full forward by"),
    ("bug_cache_prefill_no_mask", "CACHE", "then chunks of 3; tolerance 1.0e-04 for float32)"),
    ("bug_cache_positions_reset", "CACHE", "cached logits differ from the full forward by"),
    ("bug_generate_cache_positions", "CACHE", "greedy generate departs from the full forward"),
    ("bug_generate_no_crop", "GENERATE", "generate to 70 tokens raised IndexError: index out of range in self; it "
                                         "works up to block_size 64 tokens and fails past it"),
    ("bug_tie_copy", "TIE", "lm_head.weight is wte.weight is False: the head starts equal to the table but is a copy"),
    ("bug_tie_assign", "TIE", "two Parameters over one storage (load_state_dict(..., assign=True)"),
    ("bug_attention_kv_tiling", "ATTENTION", "the key/value heads are shared with the wrong query heads"),
    ("bug_residual_from_norm", "RESIDUAL", "the residual was built from norm(x)"),
    ("bug_residual_lost", "RESIDUAL", "the residual connection is lost"),
    ("bug_loop_no_zero_grad", "LOOP", "zero_grad: two identical steps: relative |Δ grad| 1.00e+00; the second saw "
                                      "2.00x the first"),
    ("bug_loop_unnormalised", "LOOP", "normalisation: |step gradient| / |full-batch gradient| 4.000"),
    ("bug_loop_unnormalised:build_two", "LOOP", "normalisation: |step gradient| / |full-batch gradient| 2.000"),
    ("bug_loop_clip_after_step", "LOOP", "clipping: step -> clip: clip_grad_norm_ runs after optimizer.step()"),
    ("bug_loop_clip_before_unscale", "LOOP", "clipping: clip -> unscale -> step: clip_grad_norm_ runs before "
                                             "scaler.unscale_(optimizer)"),
    ("bug_loop_scheduler_first", "LOOP", "scheduler: the first step used lr 0.0006, the schedule's first is 0.0003"),
    ("bug_loop_evaluate_stays_eval", "LOOP", "evaluate: leaves GPT in eval mode: call model.train() after evaluating"),
]

#: Each clean control, the interface the audit must detect, and the links that do not apply to it.
CLEAN = [
    ("clean_nano", "nanoGPT", set()),
    ("clean_hf", "Hugging Face", {"GENERATE", "LOOP"}),
    ("clean_llama", "own cache", {"GENERATE", "LOOP"}),
    ("clean_banned", "nanoGPT", {"LOOP"}),
    ("clean_resized", "nanoGPT", {"LOOP"}),
    ("warn_decay_everything", "nanoGPT", {"LOOP"}),
]


#: Each test on one torch thread (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@functools.lru_cache(maxsize=None)
def report_of(name, steps=0):
    """The audit of one zoo model, made once per test session."""
    return audit(factory(name), overfit_steps=steps)


def statuses(report):
    return {link.name: link.status for link in report.links}


@pytest.mark.parametrize("name, link, says", BUGS, ids=[b[0] for b in BUGS])
def test_each_bug_fails_first_at_its_link(name, link, says):
    report = report_of(name)
    assert report.status == "failed" and report.exit_code == 1, report.text()
    assert report.first_failure == link, report.text()
    failed = next(l for l in report.links if l.name == link)
    assert says in failed.verdict, failed.verdict
    assert [l.name for l in report.links] == list(LINKS)
    # every failure says what to change, under its verdict in the text report
    for each in report.links:
        assert each.status != "FAIL" or each.advice, (each.name, each.verdict)
    assert f"fix: {failed.advice}" in report.text()


def test_the_advice_follows_from_what_was_measured():
    tiled = next(l for l in report_of("bug_attention_kv_tiling").links if l.name == "ATTENTION")
    assert "repeat_interleave" in tiled.advice and "not repeat" in tiled.advice, tiled.advice
    chunks = next(l for l in report_of("bug_cache_prefill_no_mask").links if l.name == "CACHE")
    assert chunks.advice.startswith("one token at a time agrees but chunks of 3 depart"), chunks.advice
    reset = next(l for l in report_of("bug_cache_positions_reset").links if l.name == "CACHE")
    assert reset.advice.startswith("one token at a time departs: offset positions"), reset.advice
    unnormalised = next(l for l in report_of("bug_loop_unnormalised").links if l.name == "LOOP")
    assert unnormalised.advice.startswith("divide each microbatch's loss"), unnormalised.advice
    nan = next(l for l in report_of("bug_numerics_nan_grad").links if l.name == "GRADIENTS")
    assert "transformer.h.1.mlp.c_fc.bias" in nan.advice, nan.advice


@pytest.mark.parametrize("name, style, not_applicable", CLEAN, ids=[c[0] for c in CLEAN])
def test_each_clean_model_passes_every_link(name, style, not_applicable):
    report = report_of(name)
    assert report.first_failure is None and report.exit_code == 0, report.text()
    assert report.setup["interface"] == style
    warned = {"OWNERSHIP"} if name == "warn_decay_everything" else set()  # weight decay on 1-D tensors
    expected = {n: "skip" if n in not_applicable | {"CAPABILITY"} else "warn" if n in warned else "ok"
                for n in LINKS}
    assert statuses(report) == expected, report.text()
    assert report.warned == sorted(warned, key=list(LINKS).index), report.text()


def test_the_zoo_covers_every_link_after_alignment_and_each_interface():
    assert {link for _, link, _ in BUGS} == set(LINKS) - {"ALIGNMENT", "CAUSALITY", "SHAPE", "OWNERSHIP",
                                                          "CAPABILITY"}
    assert {style for _, style, _ in CLEAN} == {"nanoGPT", "Hugging Face", "own cache"}


def test_weight_decay_on_gains_biases_and_embeddings_is_a_warning_not_a_failure():
    report = report_of("warn_decay_everything")
    ownership = next(l for l in report.links if l.name == "OWNERSHIP")
    # a link that carries a warning is counted as warned: its status, the summary line and --json's warned
    assert ownership.status == "warn" and report.warned == ["OWNERSHIP"], report.text()
    assert ownership.verdict.endswith("; weight decay on 1-D tensors and the embedding table"), ownership.verdict
    assert report.text().endswith("first failure: none — every link holds (warnings: OWNERSHIP)"), report.text()
    assert report.to_dict()["warned"] == ["OWNERSHIP"] and report.exit_code == 0
    assert ownership.warnings == [
        "weight decay 0.1 on 18 1-D tensors (transformer.h.0.ln_1.weight, transformer.h.0.ln_1.bias, "
        "transformer.h.0.ln_2.weight and 15 more): LayerNorm gains and biases are usually left undecayed (nanoGPT "
        "decays only 2-D weights)",
        "weight decay on the embedding table transformer.wte.weight, transformer.wpe.weight (minGPT leaves "
        "embeddings undecayed; nanoGPT decays them)"]
    assert "warning: weight decay 0.1 on 18 1-D tensors" in report_of("warn_decay_everything").text(evidence=False)
    clean = next(l for l in report_of("clean_nano").links if l.name == "OWNERSHIP")
    assert clean.warnings == []  # nanoGPT's split: decay on 2-D matmul weights only


def test_the_report_names_the_interface_and_what_the_factory_returned():
    hf = report_of("clean_hf")
    assert hf.setup["convention"].startswith("Hugging Face style: model(input_ids=idx, labels=idx) -> .logits, "
                                             ".loss; labels shifted inside")
    assert hf.setup["factory"] == "a dict with model, optimizer, tokenizer, pad_id"
    assert hf.setup["tokenizer"] == "the factory's tokenizer"
    nano = report_of("clean_nano").setup["convention"]
    assert "(4, 1, 37) (last position only); called with targets -> (4, 32, 37)" in nano
    assert nano.endswith("generate(idx, max_new_tokens=n, ...) only")
    assert report_of("clean_llama").setup["convention"].endswith("cache kept inside the model, model(idx, "
                                                                 "start_pos=n)")
    assert report_of("clean_nano").text().splitlines()[1].startswith("forward: nanoGPT style")


# ---------------------------------------------------------------------------
# The probes' signals, measured (thresholds and margins: the links' docstrings)


def _subject(name):
    return subject_of(factory(name))


def _deltas(link):
    return [float(m.group(1)) for m in (re.search(r"max \|Δ logits\| ([0-9.e+-]+)", v) for _, v in link.evidence) if m]


def test_cached_and_full_logits_agree_to_rounding_in_clean_models_and_differ_by_tenths_in_buggy_ones():
    for name in ("clean_hf", "clean_llama"):
        assert max(_deltas(inference.cache(_subject(name)))) < 1e-6  # measured 1.2e-7 to 3.0e-7
    for name, low, high in (("bug_cache_is_causal", 0.1, 1.0), ("bug_cache_positions_reset", 0.1, 1.0),
                            ("bug_cache_prefill_no_mask", 0.01, 0.5)):  # measured 0.32, 0.38, 0.053
        assert low < max(_deltas(inference.cache(_subject(name)))) < high, name
    one_at_a_time, chunks = _deltas(inference.cache(_subject("bug_cache_prefill_no_mask")))
    assert one_at_a_time < 1e-6 < 1e-2 < chunks  # a single new token needs no mask; a chunk of 3 does


def test_eval_forwards_agree_exactly_without_dropout_and_differ_by_a_tenth_with_it():
    assert _deltas(inference.eval_mode(_subject("clean_nano"))) == [0.0]
    for name in ("bug_eval_functional_dropout", "bug_eval_sdpa_dropout", "bug_eval_dropout_in_list"):
        assert 0.05 < _deltas(inference.eval_mode(_subject(name)))[0] < 1.0, name  # measured 0.10 to 0.16


def _attention_deltas(name):
    rows = [v for _, v in architecture.attention(_subject(name)).evidence if "relative" in v]
    return [(float(re.search(r"max \|Δ\| ([0-9.e+-]+)", v).group(1)), float(re.search(r"relative ([0-9.e+-]+)", v).group(1)))
            for v in rows]


def test_a_scale_other_than_one_over_sqrt_d_keeps_the_contract_and_warns_naming_it():
    assert _attention_deltas("clean_nano") == [(0.0, 0.0), (0.0, 0.0)]  # SDPA against SDPA
    for name, named in (("bug_attention_scale_c", "0.125 (1/sqrt(C), C = 64 the heads' width)"),
                        ("bug_attention_scale_inverted", "4 (sqrt(D), inverted)")):
        report = report_of(name)
        assert report.first_failure is None and report.warned == ["ATTENTION"], report.text()
        link = next(l for l in report.links if l.name == "ATTENTION")
        assert f"other than 1/sqrt(D): {named} in transformer.h.0.attn, transformer.h.1.attn" in link.verdict
        assert all(r < 1e-6 for _, r in _attention_deltas(name))  # measured 0.0 and 8.8e-8 at their own scale


def test_the_greedy_generate_probe_needs_a_brief_overfit_to_see_a_broken_cache():
    s = _subject("bug_generate_cache_positions")
    strong = inference.cache(s)
    wrong = int(strong.evidence[0][1].split(" of ")[0])
    assert strong.status == "FAIL" and wrong >= 12  # measured 31 of 48 after 40 steps (1 of 48 at random init)
    assert inference.cache(_subject("clean_nano")).evidence[0][1] == "0 of 48 tokens differ"


def test_detect_reads_each_interface():
    for name, style, cache, shifted in (("clean_nano", "nanoGPT", "generate", False),
                                        ("clean_hf", "Hugging Face", "past_key_values", True),
                                        ("clean_llama", "own cache", "start_pos", False)):
        s = _subject(name)
        it = s.forward.interface
        assert (it.style, it.cache, it.labels_shifted) == (style, cache, shifted), name
    ids = torch.zeros(2, 8, dtype=torch.long)
    hf = factory("clean_hf")()["model"]
    assert detect(hf, ids, ids).interface.targets_kw == "labels"


@pytest.mark.slow
@pytest.mark.parametrize("name, link, says", BUGS, ids=[b[0] for b in BUGS])
def test_with_the_default_overfit_budget_each_bug_still_fails_first_at_its_link(name, link, says):
    report = report_of(name, OVERFIT_STEPS)
    # A lost residual cripples training too, but RESIDUAL runs before the training links and names it.
    assert report.first_failure == link, report.text()


@pytest.mark.slow
@pytest.mark.parametrize("name, style, not_applicable", CLEAN, ids=[c[0] for c in CLEAN])
def test_with_the_default_overfit_budget_each_clean_model_overfits(name, style, not_applicable):
    report = report_of(name, OVERFIT_STEPS)
    assert report.first_failure is None and statuses(report)["CAPABILITY"] == "ok", report.text()
