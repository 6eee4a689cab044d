"""``tutor audit``'s RESIDUAL on every correct block layout: the contract is that the stream carries each
block's input forward, so pre-norm, post-norm (OPT-350m), sandwich norms (Gemma 2), parallel attention
and MLP (GPT-J), a mixture of experts whose experts are not ``nn.Linear`` (Mixtral) and per-head qk-norm
(StableLM, whose D-wide LayerNorms are not the block's width) all hold; the realistic residual mistake of
each style fails first at RESIDUAL, with what was measured.

The blocks are written in tests/audit_models/zoo_layouts.py in the style of the code named there; their
bugs are in bug_residual_layouts.py.
"""

import sys

import pytest
import torch

from audit_support import ZOO, report_of, subject_of
from exercises.audit import LINKS
from exercises.audit.links import architecture

sys.path.insert(0, str(ZOO))
import bug_residual_layouts  # noqa: E402  (tests/audit_models, put on the path above)
import zoo_layouts  # noqa: E402

#: Each test on one torch thread (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("one_torch_thread")

#: Each correct layout, and how RESIDUAL's verdict says its blocks carry their input.
CLEAN = {
    "build_post_norm": "normalise the sum of their input and their branches (post-norm)",
    "build_sandwich": "2 return their input with their output projections zeroed",
    "build_sandwich_layernorm": "2 add their input to their branches' outputs (d added to it, with the "
                                "branches held, adds d)",
    "build_parallel": "2 return their input with their output projections zeroed",
    "build_moe": "2 add their input to their branches' outputs (d added to it, with the branches held, adds d)",
    "build_qk_norm": "2 return their input with their output projections zeroed",
}
#: Each layout's planted bug and the reason RESIDUAL's verdict gives, from what it measured.
BUGS = {
    "build_post_norm": "it ends in a norm that does not see its input: the residual connection is lost",
    "build_sandwich": "the output is normalised (rms 1 per position): the residual was built from norm(x)",
    "build_parallel": "adding d to its input, with its branches held, adds 2 d to its output, not d: the stream "
                      "carries its input more than once",
    "build_moe": "adding d to its input, with its branches held, adds 0 d to its output: the block drops its input",
    "build_qk_norm": "the output is zero: the residual connection is lost",
}


def residual_of(name):
    return next(l for l in report_of(name).links if l.name == "RESIDUAL")


@pytest.mark.parametrize("build", list(CLEAN))
def test_each_correct_layout_holds_at_every_link(build):
    report = report_of(f"zoo_layouts:{build}")
    assert report.first_failure is None and report.exit_code == 0, report.text()
    skips = {"CAPABILITY", "LOOP"}  # no step budget here, no train_step
    assert {l.name: l.status for l in report.links} == {n: "skip" if n in skips else "ok" for n in LINKS}, \
        report.text()
    verdict = residual_of(f"zoo_layouts:{build}").verdict
    assert verdict.startswith("2 blocks carry their input forward: ") and CLEAN[build] in verdict, verdict


@pytest.mark.parametrize("build", list(BUGS))
def test_each_layouts_residual_bug_fails_first_at_residual_saying_what_was_measured(build):
    report = report_of(f"bug_residual_layouts:{build}")
    assert report.first_failure == "RESIDUAL", report.text()
    link = residual_of(f"bug_residual_layouts:{build}")
    assert BUGS[build] in link.verdict, link.verdict


def test_post_norm_is_told_apart_by_its_own_final_norm_and_how_its_output_moves():
    rows = dict(residual_of("zoo_layouts:build_post_norm").evidence)
    held = [v for v in rows.values() if "held at fixed values" in v]
    assert held and all(v.startswith("outputs of self_attn, fc2 held at fixed values") for v in held), held  # fc1: 4C
    assert all("the output is final_layer_norm's and moves by" in v for v in held), rows
    dropped = [v for v in dict(residual_of("bug_residual_layouts:build_post_norm").evidence).values()
               if "held at fixed values" in v]
    assert dropped and all(v.endswith("and moves by 0 of its scale") for v in dropped), dropped


def test_the_block_width_is_the_streams_not_a_per_head_qk_norms():
    rows = dict(residual_of("zoo_layouts:build_qk_norm").evidence)
    assert rows["transformer.h[0]"].startswith("zeroed self_attn.o_proj, mlp.down_proj: max |block(x) - x| "), rows


def test_experts_that_are_not_linear_are_held_as_one_branch():
    rows = [v for k, v in residual_of("zoo_layouts:build_moe").evidence if k == "transformer.h[0]"]
    assert rows[0].startswith("zeroed self_attn.o_proj: max |block(x) - x| "), rows  # no Linear back to C in the MoE
    held = [v for v in rows if "held at fixed values" in v]
    assert held and all(v.startswith("outputs of self_attn, block_sparse_moe held at fixed values") for v in held)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_the_layouts_are_told_apart_in_low_precision(dtype):
    """In bfloat16 the nudge d is at the output's scale, so rounding cannot hide what the block does with it."""
    for build in ("build_moe", "build_post_norm", "build_sandwich_layernorm"):
        link = architecture.residual(subject_of(lambda: getattr(zoo_layouts, build)()[0].to(dtype)))
        assert link.status == "ok", (build, link.verdict)
    for build in BUGS:
        link = architecture.residual(subject_of(lambda: getattr(bug_residual_layouts, build)()[0].to(dtype)))
        assert link.status == "FAIL" and BUGS[build] in link.verdict, (build, link.verdict)
