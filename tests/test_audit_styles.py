"""``tutor audit`` on GPTs written in the styles met in the field (tests/audit_models/zoo_modern.py and
the controls beside it): rotary kept as a module, a cache only inside ``generate``, bfloat16 and
float16, zero-initialised projections, a generator ``generate``, no head-count attribute, a subclass
with no readable source, a factory reading outside its folder.

Every correct model holds at every link or skips it with a sentence naming what it looked for and what
it found; every planted bug fails first at its link. One audit per model (CAPABILITY's budget 0); the
sweep over dtypes and thread counts is ``slow``.
"""

import json
import sys

import pytest
import torch

from audit_support import ZOO, link, report_of
from exercises.audit import LINKS, audit


#: Each correct control and the links that do not apply to it (CAPABILITY: no budget here), with the
#: words their skip must say.
CLEAN = {
    "clean_rope_module": {},
    "clean_rope_tables": {},
    "clean_zero_init": {},
    "clean_bf16": {},
    "clean_bf16:build_fp16": {},
    "clean_cache_in_generate": {},
    "clean_cache_in_generate:build_no_generate": {
        "CACHE": "the forward takes past_key_values but, called with past_key_values=None and use_cache=True, "
                 "returned a tuple of 2 items (logits (2, 1, 37), None): no cache to continue from, and the model "
                 "has no generate",
        "GENERATE": "no generate method"},
    "clean_subclass_unreadable": {"GENERATE": "no generate method", "GRADIENTS": "torch.inference_mode()",
                                  "UPDATE": "torch.inference_mode()", "CAPABILITY": "torch.inference_mode()"},
}
#: Each planted bug and the link that must fail first.
BUGS = {"bug_rope_cache_offset": "CACHE"}
#: Each departure from a convention that keeps every contract, the link that warns, and what it says.
WARNED = {"bug_no_heads_scale": ("ATTENTION", "0.125 (1/sqrt(C), C = 64 the heads' width)"),
          "bug_no_heads_scale:build_bf16": ("ATTENTION", "0.125 (1/sqrt(C), C = 64 the heads' width)")}


#: Each test on one torch thread (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize("name", list(CLEAN))
def test_each_correct_style_holds_at_every_link_or_skips_with_a_sentence(name):
    report = report_of(name)
    assert report.first_failure is None and report.exit_code == 0, report.text()
    skips = {"CAPABILITY": "no step budget", "LOOP": "no train_step", **CLEAN[name]}
    assert {l.name: l.status for l in report.links} == {n: "skip" if n in skips else "ok" for n in LINKS}, \
        report.text()
    for l in report.links:
        if l.status == "skip":
            assert skips[l.name] in l.verdict, (l.name, l.verdict)


@pytest.mark.parametrize("name", list(BUGS))
def test_each_planted_bug_of_the_styles_fails_first_at_its_link(name):
    assert report_of(name).first_failure == BUGS[name], report_of(name).text()


def test_attention_reads_rotary_kept_as_a_module_and_the_heads_at_the_sdpa_call():
    for name in ("clean_rope_module", "clean_rope_tables"):
        rows = [v for _, v in link(name, "ATTENTION").evidence if "relative" in v]
        assert len(rows) == 2 and all("H=4, D=16" in v and "H read from its SDPA call" in v for v in rows), rows
        assert all(v.endswith("relative 0.000e+00") for v in rows), rows  # the module's own q, k: SDPA vs SDPA
    # qk-norm changes each vector's norm: q and k are taken as the module attends with them
    assert "q normalised or transformed after its projection, as passed" in link("clean_rope_tables", "ATTENTION").evidence[0][1]



@pytest.mark.parametrize("name", list(WARNED))
def test_a_scale_passed_to_sdpa_is_read_and_warns_without_failing(name):
    which, scale = WARNED[name]
    assert report_of(name).first_failure is None and report_of(name).warned == [which], report_of(name).text()
    warned = link(name, which)
    assert warned.status == "warn" and f"other than 1/sqrt(D): {scale} in transformer.h.0.attn" in warned.verdict
    assert all("asked: SDPA scale=0.125, attn_mask (8, 8) bool" in v for _, v in warned.evidence[:2])


def test_a_cache_offset_bug_in_a_rotary_model_is_named_at_cache_not_attention():
    report = report_of("bug_rope_cache_offset")
    assert link("bug_rope_cache_offset", "ATTENTION").status == "ok"
    cache = link("bug_rope_cache_offset", "CACHE")
    assert cache.verdict.startswith("greedy generate departs from the full forward at new token 1"), cache.verdict
    assert report.first_failure == "CACHE"


def test_a_cache_keyword_that_returns_no_cache_falls_back_to_generate():
    cache = link("clean_cache_in_generate", "CACHE")
    assert cache.status == "ok" and cache.verdict.startswith("greedy generate equals the argmax of the full forward")
    assert cache.evidence[0] == ["cache keyword", "the forward takes past_key_values but, called with "
                                 "past_key_values=None and use_cache=True, returned a tuple of 2 items (logits (2, 1, "
                                 "37), None): no cache to continue from; compared through generate instead"]


def test_tolerances_follow_the_dtype_and_say_which():
    assert report_of("clean_bf16").setup["dtype"] == "bfloat16"
    assert report_of("clean_bf16:build_fp16").setup["dtype"] == "float16"
    assert link("clean_bf16", "ATTENTION").evidence[-1] == ["tolerance", "3.1e-02 of the reference's scale (bfloat16)"]
    assert link("clean_bf16:build_fp16", "ATTENTION").evidence[-1] == ["tolerance",
                                                                       "3.9e-03 of the reference's scale (float16)"]
    assert "device cpu bfloat16" in report_of("clean_bf16").text().splitlines()[0]


def test_zero_initialised_projections_get_their_gradient_a_few_steps_later():
    gradients = link("clean_zero_init", "GRADIENTS")
    later = dict(gradients.evidence)["a step later"]
    assert later.startswith("13 start with a zero gradient and get one within a few steps"), later
    assert "(no gradient" not in gradients.verdict
    moved = dict(link("clean_zero_init", "UPDATE").evidence)["moved"]
    assert moved.startswith("1/14 (13 more have no gradient yet and get one a step later"), moved
    causality = link("clean_zero_init", "CAUSALITY").verdict
    assert "read at the stream into lm_head: its logits do not depend on the input yet" in causality


def test_a_generator_generate_is_drained():
    assert link("clean_zero_init", "GENERATE").verdict == "generated 70 tokens past block_size 64; ids within [0, 37)"


def test_registration_measures_which_plain_attributes_the_forward_moves_itself():
    registration = link("clean_subclass_unreadable", "REGISTRATION")
    accepted = dict(registration.evidence)["kept outside nn.Module's registries, deliberately"]
    assert "freqs_cis (kept out of state_dict() on purpose: the forward moves it itself)" in accepted
    assert link("clean_bf16", "REGISTRATION").status == "ok"


def test_the_sequence_len_config_name_is_read():
    assert report_of("clean_rope_module").setup["T"] == 32
    assert "past block_size 64" in link("clean_rope_module", "GENERATE").verdict


# ---------------------------------------------------------------------------
# --allow-read


def _cli(argv, capsys):
    import argparse

    from tutor.cli import audit as audit_cmd

    parser = argparse.ArgumentParser(prog="tutor")
    parser.add_argument("--device", default="cpu")
    audit_cmd.add_parser(parser.add_subparsers(dest="command"))
    code = audit_cmd.run(parser.parse_args(argv))
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Landlock confines the audit on Linux only")
def test_a_refused_read_is_named_and_allow_read_grants_it(tmp_path, capsys):
    from tutor.sandbox import confine, landlock

    if not confine.enabled() or landlock.landlock_abi() < 1:
        pytest.skip("no Landlock here: nothing is refused")
    outside, model = tmp_path / "checkpoints", tmp_path / "model"
    outside.mkdir()
    model.mkdir()
    (outside / "weights.txt").write_text("hello")
    (model / "reader.py").write_text(f"def build():\n    text = open({str(outside / 'weights.txt')!r}).read()\n"
                                     "    raise RuntimeError('read ' + text)\n")
    code, refused = _cli(["audit", f"{model / 'reader.py'}:build", "--json"], capsys)
    assert code == 3
    assert refused["error"] == (f"the factory build() raised PermissionError: [Errno 13] Permission denied: "
                                f"'{outside / 'weights.txt'}'; the audit's confinement refused reads of "
                                f"{outside / 'weights.txt'} (only the model's folder, the tutor and Python are "
                                f"readable); grant them with --allow-read {outside}")
    code, granted = _cli(["audit", f"{model / 'reader.py'}:build", "--allow-read", str(outside), "--json"], capsys)
    assert code == 3 and granted["error"] == "the factory build() raised RuntimeError: read hello"
    code, missing = _cli(["audit", f"{model / 'reader.py'}:build", "--allow-read", str(tmp_path / "nope"), "--json"],
                         capsys)
    assert code == 2 and missing["error"].startswith(f"--allow-read {tmp_path / 'nope'}: no such file or folder")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Landlock confines the audit on Linux only")
def test_a_model_under_audit_reads_the_tutors_packages_but_nothing_else_beside_them(tmp_path, capsys):
    """In a checkout the folder that holds the tutor's packages also holds the learner's progress and the
    owner's files: the audited code may import the packages (the audit's instruments) but read nothing else
    there."""
    from exercises.faults import source_root
    from tutor.sandbox import confine, landlock

    if not confine.enabled() or landlock.landlock_abi() < 1:
        pytest.skip("no Landlock here: nothing is refused")
    beside = source_root() / "pyproject.toml"
    if not beside.is_file():
        pytest.skip("the tutor is installed, not checked out: no owner's file sits beside its packages")
    model = tmp_path / "model"
    model.mkdir()
    (model / "reader.py").write_text(
        "import os\nimport engine, exercises, tutor\n"
        f"def build():\n    listed = 'pyproject.toml' in os.listdir({str(source_root())!r})\n"
        f"    text = open({str(beside)!r}).read()\n"
        "    raise RuntimeError(f'listed {listed}, read {len(text)} characters')\n")
    code, refused = _cli(["audit", f"{model / 'reader.py'}:build", "--json"], capsys)
    assert code == 3
    assert refused["error"].startswith(f"the factory build() raised PermissionError: [Errno 13] Permission denied: "
                                       f"'{beside}'"), refused


# ---------------------------------------------------------------------------
# The same verdict across dtypes and machines


@pytest.mark.slow
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
def test_the_first_failing_link_is_the_same_at_each_dtype_and_thread_count(threads, dtype):
    sys.path.insert(0, str(ZOO))
    import zoo_modern

    torch.set_num_threads(threads)
    # each style: (the first failing link, the links that warn); 1/sqrt(C) keeps ATTENTION's contract and warns
    cases = {(): (None, []), (("zero_init", True),): (None, []), (("rotary", "tables"), ("qk_norm", True)): (None, []),
             (("scale", "1/sqrt(C)"),): (None, ["ATTENTION"]), (("cache_offset", False),): ("CACHE", [])}
    for style, (first, warned) in cases.items():
        report = audit(lambda: zoo_modern.build(dtype, **dict(style)), overfit_steps=0)
        assert (report.first_failure, report.warned) == (first, warned), (style, report.text())


# ---------------------------------------------------------------------------
# Attention written by hand, q scaled in advance; a generator that yields tensors


def _prescaled(divide_by):
    sys.path.insert(0, str(ZOO))
    import zoo_nano

    class PreScaled(zoo_nano.SelfAttention):
        def attend(self, q, k, v):
            T, width = q.size(2), {"D": q.size(-1), "C": q.size(1) * q.size(-1)}[divide_by]
            att = (q * width ** -0.5) @ k.transpose(-2, -1)
            att = att.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
            return torch.softmax(att, dim=-1) @ v

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(C, dim=2)
            q, k, v = (t.view(B, T, 4, C // 4).transpose(1, 2) for t in (q, k, v))
            return self.c_proj(self.attend(q, k, v).transpose(1, 2).contiguous().view(B, T, C))

    class Block(zoo_nano.Block):
        attention_class = PreScaled

    class GPT(zoo_nano.GPT):
        block_class = Block

    return audit(lambda: zoo_nano.build(model_class=GPT), overfit_steps=0, links=["ATTENTION"]).links[0]


def test_a_q_scaled_in_advance_is_judged_whole_at_q_at_k_transposed():
    right, wrong = _prescaled("D"), _prescaled("C")
    assert right.status == "ok", right.evidence
    assert "q pre-scaled by 0.25, taken off and k norm-preserving at the attention call" in right.evidence[0][1]
    # the pre-scale times the call's own factor (softmax input = 1 x q @ k^T) is the scale the module applies
    assert wrong.status == "warn" and "0.125 (1/sqrt(C), C = 64 the heads' width)" in wrong.verdict, wrong.verdict
    assert "asked: softmax input = 1 x q @ k^T" in wrong.evidence[0][1], wrong.evidence


def test_a_generator_generate_that_yields_a_tensor_per_step_is_drained_batched():
    from exercises.audit.links.inference import call_generate

    def generate(idx, max_new_tokens, top_k=None):
        for step in range(max_new_tokens):
            yield torch.full((idx.size(0), 1), step)

    out = call_generate(generate, torch.zeros(2, 3, dtype=torch.long), 4, {"top_k": 1})
    assert out.tolist() == [[0, 0, 0, 0, 1, 2, 3]] * 2
