"""``tutor audit`` on standalone GPT code bases nobody here wrote, vendored unchanged with their licence
(tests/audit_models/third_party/NAME/model.py), each at a tiny size: clean, every link holds (warnings
and skips pinned, each naming its reason), and with one realistic bug planted by its factory, named first
at its link. CAPABILITY's budget is 0 here (seconds per audit)."""

import functools

import pytest

from audit_support import factory
from exercises.audit import LINKS, audit

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@functools.lru_cache(maxsize=None)
def report_of(name):
    return audit(factory(f"third_party/{name}"), overfit_steps=0)


def verdicts(report):
    return {link.name: link for link in report.links}


#: Each clean code base, and its links that skip or warn, with what the verdict must say.
CLEAN = {
    "llama2c/factory": {"LOOP": ("skip", "no train_step"), "CAPABILITY": ("skip", ""),
                        "OWNERSHIP": ("warn", "weight decay on the embedding table")},
    # its attention and MLP share one fused projection, so no module has q, k, v projections to read: its
    # attention is found by what it computes (scores by einsum, a softmax, a product with v)
    "palm/factory": {"ATTENTION": ("ok", "2 attention modules equal the SDPA reference"),
                     "CACHE": ("skip", "generate has no greedy setting"), "LOOP": ("skip", "no train_step"),
                     "CAPABILITY": ("skip", ""), "GENERATE": ("ok", "generated 70 tokens past block_size 64"),
                     "RESIDUAL": ("ok", "2 blocks carry their input forward")},
    # its rotary table and causal mask are plain tensors setup_caches makes: measured, the forward still runs
    # after .to(torch.float64) but not once its parameters move to another device after the set-up
    "gptfast/factory": {"REGISTRATION": ("warn", "outside state_dict(): freqs_cis and causal_mask, plain tensors "
                                                 "made after the build (by setup_caches(...) or the first forward; "
                                                 "the forward still runs after .to(torch.float64), not after a "
                                                 "move to another device)"),
                        # its AdamW decays every parameter: a convention departed from, so a warning counted
                        "OWNERSHIP": ("warn", "owned 17/17; foreign 0 optimizer tensors not in the model; weight "
                                              "decay on 1-D tensors and the embedding table"),
                        "GENERATE": ("skip", "no generate method"), "LOOP": ("skip", "no train_step"),
                        "CAPABILITY": ("skip", ""), "ATTENTION": ("ok", "2 attention modules equal the SDPA"),
                        "CACHE": ("ok", "cached logits equal the full forward's")},
    # its first forward makes rope_cache and mask_cache as plain tensors on the ids' device: measured likewise
    "lit_llama/factory": {"REGISTRATION": ("warn", "outside state_dict(): rope_cache and mask_cache, plain tensors "
                                                   "made after the build (by reset_cache(...) or the first forward; "
                                                   "the forward still runs after .to(torch.float64), not after a "
                                                   "move to another device)"),
                          "GENERATE": ("skip", "no generate method"), "LOOP": ("skip", "no train_step"),
                          "CAPABILITY": ("skip", ""), "CACHE": ("ok", "cached logits equal the full forward's"),
                          "OWNERSHIP": ("warn", "weight decay on 1-D tensors and the embedding table")},
    # its loss (and modded-nanogpt's) rejects targets padded with -100, and its factory names no pad_id
    "nanogpt_mup/factory": {"ATTENTION": ("warn", "0.0625 (1/D, muP's)"), "LOOP": ("skip", "no train_step"),
                            "CAPABILITY": ("skip", ""),
                            "INIT": ("warn", "; the loss rejects targets padded with -100 (ignore_index)"),
                            "OWNERSHIP": ("warn", "; weight decay on the embedding table")},
    "modded_nanogpt/factory": {"REGISTRATION": ("warn", "plain tensors the model carries along itself"),
                               "CACHE": ("skip", "no cache interface"), "GENERATE": ("skip", "no generate method"),
                               "CAPABILITY": ("skip", ""), "LOOP": ("ok", "optimizer.step 2 calls"),
                               "INIT": ("warn", "; the loss rejects targets padded with -100 (ignore_index)")},
}
#: Each planted bug: the factory, the link it must fail first, and what that link's verdict must say.
BUGS = [
    ("llama2c/factory:build_kv_tiled", "ATTENTION", "the key/value heads are shared with the wrong query heads"),
    ("palm/factory:build_mask_shifted", "CAUSALITY", "the past moved"),
    ("palm/factory:build_residual_dropped", "RESIDUAL", "the block drops its input"),
    ("palm/factory:build_softmax_over_queries", "CAUSALITY", "the past moved"),
    ("gptfast/factory:build_rotary_not_offset", "CACHE", "cached logits differ from the full forward"),
    ("lit_llama/factory:build_is_causal_with_cache", "CACHE", "cached logits differ from the full forward"),
    ("nanogpt_mup/factory:build_mask_shifted", "CAUSALITY", "the past moved"),
    ("modded_nanogpt/factory:build_unnormalised", "LOOP", "|step gradient| / |full-batch gradient| 2.000"),
]


@pytest.mark.parametrize("name", sorted(CLEAN))
def test_each_clean_code_base_holds_every_link(name):
    report = report_of(name)
    assert report.first_failure is None and report.exit_code == 0, report.text()
    got = verdicts(report)
    for link in LINKS:
        status, says = CLEAN[name].get(link, ("ok", ""))
        assert got[link].status == status, (link, got[link].verdict)
        assert says in got[link].verdict, (link, got[link].verdict)
        # a warning line is counted: a link that carries one is "warn", and a "warn" names one
        assert (got[link].status == "warn") == bool(got[link].warnings), (link, got[link].warnings)
    assert report.warned == [link for link in LINKS if CLEAN[name].get(link, ("ok",))[0] == "warn"]


@pytest.mark.parametrize("name, link, says", BUGS, ids=[b[0] for b in BUGS])
def test_each_planted_bug_is_named_first_at_its_link(name, link, says):
    report = report_of(name)
    assert report.exit_code == 1 and report.first_failure == link, report.text()
    assert says in verdicts(report)[link].verdict
    for each in report.links:  # every failure says what to change
        assert each.status != "FAIL" or each.advice, (each.name, each.verdict)


def test_a_causality_failure_says_where_the_past_moved_and_points_at_the_module_attention_found():
    """PaLM with its causal mask shifted by one: the first position that moved, what in a model does that,
    and the module ATTENTION (which runs later) found, all under CAUSALITY's verdict."""
    report = report_of("palm/factory:build_mask_shifted")
    causality = verdicts(report)["CAUSALITY"]
    assert causality.verdict.endswith(", first at position 14 of 0..15"), causality.verdict
    assert dict(causality.evidence)["first position that moved"] == "14 of 0..15"
    assert causality.advice.startswith("the change from position 16 on reached position 14 first, 2 position(s) "
                                       "back"), causality.advice
    assert "hide every key j > i from query i" in causality.advice and "is_causal off" in causality.advice
    assert "ATTENTION (link 9) found the module: net.1.fn's softmax weights are nonzero on keys after the " \
           "query's own position" in causality.advice, causality.advice
    assert f"fix: {causality.advice}" in report.text()


def test_attention_called_through_forward_directly_is_still_read():
    """llama2.c's blocks call ``self.attention.forward(...)``, which bypasses the module's hooks: its
    attention call is found between its projections and its output projection, and each module checked."""
    attention = verdicts(report_of("llama2c/factory"))["ATTENTION"]
    assert attention.verdict.startswith("2 attention modules equal the SDPA reference"), attention.verdict


def test_a_generate_behind_a_decorator_without_wraps_is_called_by_its_own_parameters():
    """PaLM-pytorch's ``generate`` is ``torch.no_grad()`` over ``eval_decorator``'s ``inner(model, *args,
    **kwargs)``: below the bound method, ``model`` is the instance, and the count goes by ``seq_len``."""
    generate = verdicts(report_of("palm/factory"))["GENERATE"]
    assert dict(generate.evidence)["call"] == "generate(idx (2, 4), seq_len=66, defaults)", generate.evidence


def test_blocks_in_a_sequential_are_found_by_their_run():
    residual = verdicts(report_of("palm/factory"))["RESIDUAL"]
    assert residual.evidence[0][0] == "net[1:3][0]" and residual.evidence[0][1].startswith("zeroed fn.ff_out.1: "), \
        residual.evidence


def test_a_model_whose_tables_stay_behind_when_it_moves_fails_registration():
    """pytorch-llama keeps its rotary table and its KV caches as plain attributes made on ``args.device``: a
    real defect (``model.to("cuda")`` leaves them behind, and the forward then mixes devices), named at
    REGISTRATION, and at no other link; CACHE has no second path to compare."""
    report = report_of("pytorch_llama/factory")
    assert report.first_failure == "REGISTRATION", report.text()
    got = verdicts(report)
    assert got["REGISTRATION"].verdict.startswith("not registered: freqs_complex"), got["REGISTRATION"].verdict
    assert [name for name, link in got.items() if link.status == "FAIL"] == ["REGISTRATION"], report.text()
    assert got["CACHE"].status == "skip" and "one token per call" in got["CACHE"].verdict


def test_attention_driven_one_token_per_call_is_joined_over_the_calls():
    """pytorch-llama's attention sees one query per call and the keys cached so far: its calls are joined
    into one over the sequence, so it is checked (and its kv heads tiled the wrong way fail)."""
    attention = verdicts(report_of("pytorch_llama/factory"))["ATTENTION"]
    assert attention.status == "ok", attention.verdict
    assert "8 calls of one position each, joined" in attention.evidence[0][1], attention.evidence
    tiled = verdicts(report_of("pytorch_llama/factory:build_kv_tiled"))["ATTENTION"]
    assert tiled.status == "FAIL" and "shared with the wrong query heads" in tiled.verdict, tiled.verdict
    unread = verdicts(report_of("pytorch_llama/factory:build_cache_not_read_back"))["ATTENTION"]
    assert unread.status == "FAIL" and unread.verdict.startswith(
        "layers.0.attention is driven one token per call, and its query at position 7 reads 1 key(s), not the 8"), \
        unread.verdict


def test_attention_written_by_hand_outside_named_modules_is_found_by_its_data_flow():
    """PaLM's attention sits in its parallel block beside the MLP, from one fused projection, multi-query,
    scores by einsum over a q scaled before the product: it is found by what it computes, its scale read
    whole from the scores (q's 0.25 included), and checked against causal SDPA."""
    attention = verdicts(report_of("palm/factory"))["ATTENTION"]
    rows = dict(attention.evidence)
    assert list(rows)[:2] == ["net.1.fn", "net.2.fn"], attention.evidence
    assert rows["net.1.fn"].startswith("by its data flow: einsum 'b h i d, b j d -> b h i j', q scaled by 0.25 "
                                       "before it; softmax input = 0.25 x q @ k^T, H=4, D=16, 1 kv heads; against "
                                       "causal SDPA at its own scale 0.25: max |Δ|"), rows["net.1.fn"]


@pytest.mark.parametrize("name, says", [
    ("palm/factory:build_mask_shifted", "net.1.fn's softmax weights are nonzero on keys after the query's own "
                                        "position (query 0 reads key 1, up to 1 position(s) ahead)"),
    ("palm/factory:build_softmax_over_queries", "net.1.fn's softmax normalises over the query positions, not over "
                                                "the keys"),
])
def test_attention_found_by_its_data_flow_names_a_broken_contract(name, says):
    """CAUSALITY fails these first (each lets a later token move an earlier position); ATTENTION names which
    step of the attention does it, read from the softmax's weights and axis."""
    attention = verdicts(report_of(name))["ATTENTION"]
    assert attention.status == "FAIL" and attention.verdict.startswith(says), attention.verdict


def test_a_scale_by_the_attention_width_read_from_the_data_flow_is_a_warning_naming_it():
    """q scaled by 1/sqrt(H x D) before the scores keeps the contract (a warning naming the scale); with
    ``--expect sdpa`` it fails ATTENTION, first."""
    report = report_of("palm/factory:build_scale_width")
    attention = verdicts(report)["ATTENTION"]
    assert report.first_failure is None and attention.status == "warn", report.text()
    assert "0.125 (1/sqrt(C), C = 64 the heads' width) in net.1.fn, net.2.fn" in attention.verdict, attention.verdict
    held = audit(factory("third_party/palm/factory:build_scale_width"), overfit_steps=0, expect=("sdpa",))
    assert held.first_failure == "ATTENTION", held.text()
