"""Checks for the set ``attention`` — attention and the KV cache (seed 000 §4, §6; seed 004)."""

import torch

from exercises.context import Context
from exercises.outcome import Measurement, note, table

LEDGER_CONFIG = dict(vocab_size=37, block_size=64, n_layer=4, n_head=4, n_embd=128)


def _model(ctx: Context, **overrides):
    from engine.config import GPTConfig
    from engine.model import GPT

    config = GPTConfig(**{**LEDGER_CONFIG, **overrides})
    torch.manual_seed(ctx.seed)
    return GPT(config).to(ctx.device).eval(), config


def head_split(ctx: Context) -> Measurement:
    """Run the shape ledger and the future-token intervention on the engine.

    Batch (2, 16) of random token ids through the seed configuration (4 layers,
    4 heads, C = 128, V = 37). Observed: a choice id encoding (does the logits
    shape change?, the first ledger row that diverges) — ``a``: shape
    unchanged, no divergence; ``b``: shape unchanged, the head-split round
    trip; ``c``: shape unchanged, a block row; ``d``: the logits shape changes.
    Seed 004, "The model: attention" and "The model: MLP, block, assembly".
    """
    from engine.instruments.intervention import future_token_intervention
    from engine.instruments.shape_ledger import shape_ledger

    model, config = _model(ctx)
    g = torch.Generator().manual_seed(ctx.seed)
    idx = torch.randint(0, config.vocab_size, (2, 16), generator=g).to(ctx.device)
    ledger = shape_ledger(model, idx)
    with torch.no_grad():
        logits, _ = model(idx)
    probe = future_token_intervention(model, idx, position=7, generator=g)
    first = ledger.first_divergence
    expected_shape = (2, 16, config.vocab_size)
    if tuple(logits.shape) != expected_shape:
        observed = "d"
    elif first is None:
        observed = "a"
    elif first.startswith("head split"):
        observed = "b"
    else:
        observed = "c"
    rows = [[r.stage, r.shape, r.invariant, "ok" if r.ok else "X  <- first divergence" if r.stage == first else "X"]
            for r in ledger.rows]
    evidence = [
        table(f"Shape ledger B=2 T=16 C={config.n_embd} H={config.n_head} V={config.vocab_size}",
              ["stage", "shape", "invariant", "ok"], rows),
        table("Future-token intervention (tokens after position 7 changed, eval mode)",
              ["quantity", "value"],
              [["logits shape", tuple(logits.shape)], ["prefix max |Δ logits|", probe["prefix_max_delta"]],
               ["suffix max |Δ logits|", probe["suffix_max_delta"]], ["tolerance", probe["tolerance"]],
               ["causal", probe["causal"]]]),
        note(f"first divergence: {first or 'none'}"),
    ]
    return Measurement(observed=observed, evidence=evidence)


def cache_offset(ctx: Context) -> Measurement:
    """Compare cached logits with full-sequence logits.

    A 2-layer engine (block_size 16) reads 7 tokens once in full and once
    through a KV cache: one token at a time, and in chunks of 3, 1, 3.
    Observed: True when every chunking matches the full logits within 1e-5.
    Seed 000 §6, "A KV cache changes coordinates, not the meaning of attention".
    """
    from engine.instruments.cache_check import cached_vs_full

    model, config = _model(ctx, block_size=16, n_layer=2, n_head=4, n_embd=64)
    g = torch.Generator().manual_seed(ctx.seed)
    idx = torch.randint(0, config.vocab_size, (1, 7), generator=g).to(ctx.device)
    rows, equal = [], True
    for chunks in ([1] * 7, [3, 1, 3]):
        report = cached_vs_full(model, idx, chunks)
        equal = equal and report["equal"]
        rows.append([" ".join(str(c) for c in chunks), " ".join(f"{d:.2e}" for d in report["per_chunk_max_delta"]),
                     report["max_delta"], report["equal"]])
    evidence = [table("Cached against full logits (tolerance 1e-5)",
                      ["chunks", "max |Δ| per chunk", "max |Δ|", "equal"], rows)]
    if not equal:
        evidence.append(note("The first chunk starts at position 0, so it always agrees; every later chunk "
                             "is compared with keys and positions as if it started at 0."))
    return Measurement(observed=bool(equal), evidence=evidence)
