"""Checks for the set ``modern``: the two pieces of the Llama-style block that
replace the seed's, RMSNorm for LayerNorm and SwiGLU for the GELU MLP.

Each check feeds the engine's own module an input whose answer can be
worked out by hand (a constant vector, a parameter count, a definition
written out) and measures what the module gives. Seed 004, "The model:
MLP, block, assembly" and "Parameter accounting", is the GPT these replace
parts of; the modules are the engine's ``RMSNorm`` and ``SwiGLU``.
"""

import torch
import torch.nn.functional as F

from exercises.context import Context
from exercises.outcome import Measurement, note, series, table

C = 128  # the seed's n_embd


def rmsnorm_constant(ctx: Context) -> Measurement:
    """The engine's ``RMSNorm(128)`` on the constant vector x = -2·1.

    RMSNorm divides by sqrt(mean(x²) + eps) = sqrt(4 + 1e-6) ≈ 2, so every
    entry comes out ≈ -1; a norm that centres first (LayerNorm's step)
    gives 0 / sqrt(eps) = 0. Observed: the output's first entry (a float).
    Evidence: ``nn.LayerNorm(128)`` on the same input and both modules'
    parameter counts (C against 2C).
    """
    from engine.model import RMSNorm

    device = torch.device(ctx.device)
    x = torch.full((1, C), -2.0, device=device)  # (1, C)
    norm = RMSNorm(C).to(device)
    layer_norm = torch.nn.LayerNorm(C).to(device)
    with torch.no_grad():
        out = norm(x)
        ln_out = layer_norm(x)
    value = out[0, 0].item()
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    evidence = [
        table("x = -2·1 with C = 128", ["module", "output[0]", "distinct outputs", "parameters"], [
            ["engine RMSNorm", value, len(set(out.flatten().tolist())), count(norm)],
            ["nn.LayerNorm", ln_out[0, 0].item(), len(set(ln_out.flatten().tolist())), count(layer_norm)]]),
        note("RMSNorm keeps the mean and the sign: it only rescales to a root mean square of 1, with one "
             "gain per channel (C = 128). LayerNorm subtracts the mean first, so a constant vector becomes 0, "
             "and it owns a gain and a shift per channel (2C = 256)."),
    ]
    return Measurement(observed=value, evidence=evidence)


def rmsnorm_bf16(ctx: Context) -> Measurement:
    """The engine's ``RMSNorm(128)`` in bfloat16 against the exact value rounded once.

    64 positions of 128 normal activations (scale 3), already in bfloat16,
    with the gain at its initial 1. The reference is the same formula in
    float64, rounded to bfloat16 once: the best a bfloat16 output can be.
    Observed: a choice id, from the fraction of the 8,192 outputs equal to
    that reference: "a" every one, "b" a fifth or fewer, "c" more than a
    fifth but not all. Seed 000 §7 ("BF16's wider exponent range does not
    make every computation numerically safe").
    """
    from engine.model import RMSNorm

    device = torch.device(ctx.device)
    g = torch.Generator().manual_seed(ctx.seed)
    x = (3 * torch.randn(64, C, generator=g, dtype=torch.float64)).to(torch.bfloat16).to(device)  # (64, C)
    norm = RMSNorm(C).to(device=device, dtype=torch.bfloat16)
    with torch.no_grad():
        out = norm(x)  # (64, C) bfloat16
    exact = x.double() / (x.double().pow(2).mean(dim=-1, keepdim=True) + norm.eps).sqrt()  # (64, C)
    best = exact.to(torch.bfloat16)
    share = (out == best).double().mean().item()
    rel = ((out.double() - exact).abs() / exact.abs().clamp_min(1e-12)).max().item()
    choice = "a" if share == 1.0 else "c" if share > 0.2 else "b"
    evidence = [
        table("RMSNorm in bfloat16 against float64 rounded once", ["quantity", "value"], [
            ["output dtype", str(out.dtype).replace("torch.", "")],
            ["outputs equal to the rounded exact value", f"{int(round(share * out.numel()))} of {out.numel()}"],
            ["max relative error", rel], ["bfloat16 unit roundoff, 2^-8", 2.0 ** -8]]),
    ]
    if share < 1.0:
        evidence.append(note("Without the float32 step every intermediate (the squares, their mean, the root, the "
                             "quotient) is rounded to bfloat16's 8 significant bits, so errors of several roundings "
                             "add up and the output is often one spacing off the best bfloat16 value."))
    return Measurement(observed=choice, evidence=evidence)


def _count(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def swiglu_params(ctx: Context) -> Measurement:
    """Parameters of the seed's GPT with a SwiGLU MLP of hidden width 352.

    The seed preset (4 layers, C = 128, biases, 804,224 parameters with the
    GELU MLP) built with ``mlp="swiglu", mlp_hidden=352``, on ``meta`` (no
    memory). A SwiGLU layer with biases holds 2·(C·F + F) + F·C + C =
    386·F + 128 at C = 128: 136,000 at F = 352 (821,376 in all), 197,760 at
    F = 4C = 512 (1,068,416). Observed: the total (an int). Seed 004,
    "Parameter accounting".
    """
    from engine.config import preset
    from engine.model import GPT

    with torch.device("meta"):
        gelu = GPT(preset("seed"))
        model = GPT(preset("seed", mlp="swiglu", mlp_hidden=352))
    mlp = model.blocks[0].mlp
    evidence = [
        table("The seed's GPT with each MLP", ["model", "MLP hidden", "one MLP", "total"], [
            ["GELU (the seed's)", gelu.blocks[0].mlp.fc.out_features, _count(gelu.blocks[0].mlp), _count(gelu)],
            ["SwiGLU, mlp_hidden=352", mlp.gate.out_features, _count(mlp), _count(model)]]),
        note("SwiGLU has three matrices (gate, up, proj) where the GELU MLP has two, so it keeps the budget only "
             "with a hidden width near 8C/3 = 341.3 (352 rounds it up to a multiple of 32)."),
    ]
    return Measurement(observed=float(_count(model)), evidence=evidence)


def swiglu_gate_up(ctx: Context) -> Measurement:
    """The engine's SwiGLU against its definition, and whether it trains.

    A 1-layer ``llama-tiny`` (C = 128, hidden 352). First, its MLP on 16
    random positions against the written-out definition on the same
    weights, proj(silu(gate(x)) * up(x)), the layout a Llama checkpoint's
    ``gate_proj`` and ``up_proj`` assume. Second, 30 AdamW updates (lr 3e-3)
    on one fixed batch of 4 × 16 random tokens. Observed: [equal to the
    definition within 1e-5, the loss falls below half its first value].
    """
    from engine.train import make_optimizer, train_step

    device = torch.device(ctx.device)
    model = ctx.gpt("llama-tiny", n_layer=1, block_size=16)
    mlp = model.blocks[0].mlp
    g = torch.Generator().manual_seed(ctx.seed)
    x = torch.randn(16, C, generator=g).to(device)  # (16, C)
    with torch.no_grad():
        definition = F.linear(F.silu(F.linear(x, mlp.gate.weight)) * F.linear(x, mlp.up.weight), mlp.proj.weight)
        delta = (mlp(x) - definition).abs().max().item()
    V = model.config.vocab_size
    idx = torch.randint(0, V, (4, 17), generator=g).to(device)
    xb, yb = idx[:, :-1], idx[:, 1:]
    optimizer = make_optimizer(model, lr=3e-3, weight_decay=0.0)
    losses = [train_step(model, optimizer, xb, yb) for _ in range(30)]
    ctx.progress(1.0, "trained")
    equal, trains = delta <= 1e-5, losses[-1] < losses[0] / 2
    evidence = [
        table("The MLP against proj(silu(gate(x)) * up(x))", ["quantity", "value"], [
            ["max |Δ| on 16 positions", delta], ["first loss", losses[0]], ["loss after 30 updates", losses[-1]]]),
        series("Training loss on one fixed batch", losses, "nats"),
    ]
    if not equal and trains:
        evidence.append(note("Swapping gate and up is another function of the same weights (silu is applied to the "
                             "other projection), yet the family of functions is the same, so a model trained from "
                             "scratch learns as well. Only weights trained in the other layout, such as a Llama "
                             "checkpoint's gate_proj and up_proj, give away the swap."))
    return Measurement(observed=[equal, trains], evidence=evidence)
