"""Checks for the set ``attention``: what a head reads (seed 000 §4, "Read a
transformer as a sequence of shape contracts")."""

import torch

from exercises.context import Context
from exercises.outcome import Measurement, note, table


def head_channels(ctx: Context) -> Measurement:
    """How many of the C input channels head 0's query depends on.

    The seed engine GPT (C = 128, H = 4, D = 32), its first block's
    attention. One position x (1, 1, C) ~ N(0, 1) requires grad; head 0's
    query is the first D values of ``split_heads`` of the query projection.
    The gradient of each of those D values with respect to x (a Jacobian of
    (D, C)) shows which input channels it reads. Observed: the number of
    input channels with a nonzero column. Evidence: the same count for every
    head, and for the raw channel chunk a head would get if the *embedding*
    were split before projecting. Seed 000 §4 ("The split happens after
    learned projection").
    """
    from engine.model import split_heads

    model = ctx.gpt("seed")
    attn = model.blocks[0].attn
    C, H = model.config.n_embd, model.config.n_head
    D = C // H
    g = torch.Generator().manual_seed(ctx.seed)
    x = torch.randn(1, 1, C, generator=g).to(ctx.device)

    def head_query(inp: torch.Tensor, h: int) -> torch.Tensor:
        q = attn.qkv(inp)[..., :C]  # (1, 1, C): the query block comes first
        return split_heads(q, H)[0, h, 0]  # (D,)

    rows = []
    counts = []
    for h in range(H):
        jac = torch.autograd.functional.jacobian(lambda inp: head_query(inp, h), x)  # (D, 1, 1, C)
        reads = int((jac.reshape(D, C).abs().sum(0) > 0).sum())
        counts.append(reads)
        rows.append([f"head {h}", reads, f"channels {h * D}..{h * D + D - 1}"])
    evidence = [
        table(f"Input channels each head's query reads (C = {C}, D = {D})",
              ["head", "channels read", "its slice of the projected q"], rows),
        note(f"split_heads cuts the *projected* q into {H} slices of {D}. Each projected value is a learned "
             f"combination of all {C} input channels (a row of W_q), so no head is confined to a chunk of "
             "the token's raw embedding."),
    ]
    return Measurement(observed=counts[0], evidence=evidence)


def heads_no_parameters(ctx: Context) -> Measurement:
    """Parameters of the seed engine GPT at n_head = 1, 2, 4, 8 and 16 (C = 128 fixed).

    Each model is built on the ``meta`` device (shapes only, no values).
    Observed: ``[unique parameters at n_head = 8, head size D at n_head = 8]``.
    Evidence: the count, D and the packed qkv weight's shape at every H.
    Seed 000 §4 ("With fixed C, increasing H makes each head narrower. The
    reshape creates no extra information").
    """
    from engine.config import preset
    from engine.model import GPT

    base = preset("seed")
    rows, at_eight = [], None
    for H in (1, 2, 4, 8, 16):
        config = preset("seed", n_head=H)
        with torch.device("meta"):
            model = GPT(config)
        count, D = model.num_params(), config.n_embd // H
        rows.append([H, D, f"{count:,}", tuple(model.blocks[0].attn.qkv.weight.shape)])
        if H == 8:
            at_eight = [count, D]
    evidence = [
        table(f"The seed GPT (C = {base.n_embd}) at five head counts", ["n_head", "D", "parameters", "qkv weight"], rows),
        note("split_heads is a view of the projected (B, T, C) tensor as (B, H, T, D): the projections are "
             "C x C whatever H is, so only how the C features are grouped changes, and H x D stays C."),
    ]
    return Measurement(observed=at_eight, evidence=evidence)
