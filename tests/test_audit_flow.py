"""ATTENTION's data-flow path (exercises/audit/links/attention_flow.py): attention written by hand is found
by what it computes — scores, a softmax, a product with v — in whatever module and notation, and held to
the contract; where the projection path already reads a module, its attention is not checked twice."""

import math
import sys

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from audit_support import ZOO, link
from exercises.audit import audit
from exercises.audit.links.architecture import attention_reference
from exercises.audit.links.attention_flow import FlowWatch, checked_flows

pytestmark = pytest.mark.usefixtures("one_torch_thread")

B, T, H, D = 2, 8, 4, 16


class Mixer(nn.Module):
    """Attention by hand in a module named like nothing the projection path knows, in the notation
    ``style`` names; ``future`` opens that many keys after each query."""

    def __init__(self, style: str, kv: int = H, future: int = 0, scale: float = D ** -0.5) -> None:
        super().__init__()
        self.style, self.kv, self.future, self.scale = style, kv, future, scale

    def forward(self, q, k, v):  # q (B, H, T, D), k and v (B, kv, T, D)
        hidden = torch.ones(T, T, dtype=torch.bool).triu(1 + self.future)
        if self.style == "matmul":  # kv heads repeated, scores scaled after the product
            k, v = (t.repeat_interleave(H // self.kv, dim=1) for t in (k, v))
            att = (q @ k.transpose(-2, -1)) * self.scale
            att = att.masked_fill(hidden, float("-inf")).softmax(dim=-1)
            return att @ v
        if self.style == "mixed":  # q scaled by a 0-dim tensor in front, the weights folded for bmm
            att = (torch.tensor(self.scale) * q) @ k.transpose(-2, -1)
            att = att.masked_fill(hidden, float("-inf")).softmax(dim=-1).view(B * H, T, T)
            return torch.bmm(att, v.reshape(B * H, T, D)).view(B, H, T, D)
        if self.style == "bmm":  # the heads folded into the batch, q divided before the product
            qf, kf, vf = (t.reshape(B * H, T, D) for t in (q, k, v))
            att = torch.bmm(qf / (1 / self.scale), kf.transpose(1, 2))
            att = torch.softmax(att.masked_fill(hidden, -1e9), dim=-1)
            return torch.bmm(att, vf).view(B, H, T, D)
        # grouped kv heads by einsum: query head g * R + r reads kv head g
        R = H // self.kv
        qg = q.view(B, self.kv, R, T, D) * self.scale
        att = torch.einsum("b g r i d, b g j d -> b g r i j", qg, k)
        att = att.masked_fill(hidden, -torch.finfo(att.dtype).max).softmax(-1)
        return torch.einsum("b g r i j, b g j d -> b g r i d", att, v).reshape(B, H, T, D)


class Wrapper(nn.Module):
    def __init__(self, mixer: Mixer) -> None:
        super().__init__()
        self.blend = mixer

    def forward(self, q, k, v):
        return self.blend(q, k, v)


def _checked(mixer: Mixer, dtype=torch.float32):
    torch.manual_seed(0)
    q, k, v = (torch.randn(B, n, T, D).to(dtype) for n in (H, mixer.kv, mixer.kv))
    model = Wrapper(mixer)
    watch = FlowWatch(model, B, T)
    with torch.no_grad(), watch:
        model(q, k, v)
    return checked_flows(watch.flows, [], attention_reference)


@pytest.mark.parametrize("style, kv", [("matmul", 2), ("bmm", H), ("mixed", H), ("einsum", 2), ("einsum", 1)])
def test_attention_by_hand_is_found_by_its_data_flow_and_equals_causal_sdpa(style, kv):
    checked = _checked(Mixer(style, kv))
    assert [c.label for c in checked] == ["blend"], checked
    c = checked[0]
    assert c.fail is None and c.relative < 1e-5, c
    assert math.isclose(c.own, D ** -0.5, rel_tol=1e-4), c.asked
    assert (c.heads, c.D) == (H, D) and c.kv == (H if style != "einsum" else kv), c


@pytest.mark.parametrize("style", ["matmul", "bmm", "mixed", "einsum"])
def test_a_mask_that_opens_the_future_fails_at_the_softmax_weights(style):
    c = _checked(Mixer(style, 2 if style in ("matmul", "einsum") else H, future=1))[0]
    assert c.fail is not None and "nonzero on keys after the query's own position (query 0 reads key 1" in c.fail, c


@pytest.mark.parametrize("style, dtype", [("einsum", torch.float32), ("mixed", torch.float32),
                                          ("einsum", torch.bfloat16), ("mixed", torch.float16)])
def test_the_scale_is_read_from_the_scores_where_q_was_scaled_before_the_product(style, dtype):
    """In half precision too: the scores are compared with q k^T rounded to the model's own dtype."""
    c = _checked(Mixer(style, 2 if style == "einsum" else H, scale=1 / math.sqrt(H * D)), dtype)[0]
    assert c.fail is None and c.own is not None and math.isclose(c.own, 1 / math.sqrt(H * D), rel_tol=1e-2), c.asked
    assert "q scaled by 0.125 before it" in c.asked, c.asked


def test_hand_written_attention_the_projection_path_reads_is_not_checked_twice():
    """An attention module the projection path reads owns the attention computed inside it, however deep:
    its data flow adds no second record. MPT-style scores by hand (matmul, a bias, softmax, matmul with v)
    in zoo_nano's GPT give one row per module, each read by its projections."""
    torch.manual_seed(0)
    q, k, v = torch.randn(B, H, T, D), torch.randn(B, H, T, D), torch.randn(B, H, T, D)
    model = Wrapper(Mixer("matmul"))
    watch = FlowWatch(model, B, T)
    with torch.no_grad(), watch:
        model(q, k, v)
    assert len(watch.flows) == 1 and checked_flows(watch.flows, ["blend"], attention_reference) == []
    assert len(checked_flows(watch.flows, ["other"], attention_reference)) == 1
    evidence = link("zoo_scores:build_alibi", "ATTENTION").evidence
    rows = [row for row in evidence if row[0] != "tolerance"]
    assert len(rows) == 2 and not any("by its data flow" in row[1] for row in rows), evidence


def _bypassing(future: int = 0):
    """zoo_nano's GPT whose attention applies its projections' weights with ``F.linear``, past their
    modules' hooks, so the projection path reads nothing of it; ``future`` opens that many keys after each
    query."""
    sys.path.insert(0, str(ZOO))
    import zoo_nano
    from bug_attention_kv_tiling import with_attention

    class Bypassing(zoo_nano.SelfAttention):
        def forward(self, x):
            B, T, C = x.size()
            q, k, v = F.linear(x, self.c_attn.weight, self.c_attn.bias).split(C, dim=2)
            q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
            hidden = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1 + future)
            y = att.masked_fill(hidden, float("-inf")).softmax(dim=-1) @ v
            return F.linear(y.transpose(1, 2).reshape(B, T, C), self.c_proj.weight, self.c_proj.bias)

    return zoo_nano.build(model_class=with_attention(Bypassing))


def test_a_module_the_projection_path_skips_is_checked_by_its_data_flow_instead():
    """Its projections never run as modules (skipped by the projection path: they did not run in the
    forward); what it computes stands in, one record per module, and a mask that opens the future fails."""
    attention = audit(_bypassing, overfit_steps=0, links=["ATTENTION"]).links[0]
    rows = dict(attention.evidence)
    assert attention.status == "ok" and "not checked" not in rows, attention.evidence
    assert [name for name in rows if name != "tolerance"] == ["transformer.h.0.attn", "transformer.h.1.attn"], rows
    assert rows["transformer.h.0.attn"].startswith("by its data flow: matmul (2, 4, 8, 16) x (2, 4, 16, 8); "
                                                   "softmax input = 0.25 x q @ k^T"), rows
    leaky = audit(lambda: _bypassing(future=1), overfit_steps=0, links=["ATTENTION"]).links[0]
    assert leaky.status == "FAIL" and leaky.verdict.startswith(
        "transformer.h.0.attn's softmax weights are nonzero on keys after the query's own position"), leaky.verdict
