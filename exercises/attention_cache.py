"""Checks for the set ``attention``: what a KV cache holds per layer (seed 000 §6,
"each layer keeps its own K and V tensors").

A model's cache is one ``KVCache`` per block. The check feeds the same
tokens in full and through the cache and measures where the cached keys
went, layer by layer, so the claim is read from the cache's own lengths.
"""

import torch

from exercises.context import Context
from exercises.outcome import Measurement, note, table


def cache_per_layer(ctx: Context) -> Measurement:
    """Cached (one token at a time) against full logits, at 1 and at 2 layers.

    The seed-sized engine cut to block 16, in eval mode, reads 7 random
    tokens in full and then one token per call through a fresh cache.
    Observed: [the 1-layer model's cached logits equal the full ones within
    1e-5, the 2-layer model's do]; a forward that raises counts as not
    equal, and its first line is evidence. Evidence adds each layer's cached
    length after a prefill of 3 tokens (3 and 3 when each layer keeps its
    own K and V).
    """
    from engine.instruments.cache_check import cached_vs_full

    g = torch.Generator().manual_seed(ctx.seed)
    idx = torch.randint(0, 37, (1, 7), generator=g).to(ctx.device)
    flags, rows, lengths = [], [], []
    for n_layer in (1, 2):
        model = ctx.gpt("seed", n_layer=n_layer, block_size=16).eval()
        try:
            report = cached_vs_full(model, idx, [1] * 7)
            equal, delta, error = bool(report["equal"]), report["max_delta"], "none"
        except (RuntimeError, ValueError, IndexError) as exc:
            equal, delta, error = False, float("nan"), f"{type(exc).__name__}: {str(exc).splitlines()[0][:60]}"
        flags.append(equal)
        rows.append([n_layer, delta, equal, error])
        cache = model.new_cache(1)
        with torch.no_grad():
            try:
                model(idx[:, :3], cache=cache)
            except (RuntimeError, ValueError, IndexError):
                pass  # the lengths below still say where the keys went
        lengths.append([n_layer, [layer.seq_len for layer in cache]])
    evidence = [
        table("Cached one token at a time against the full pass (tolerance 1e-5)",
              ["layers", "max |Δ logits|", "equal", "error"], rows),
        table("Each layer's cached length after a prefill of 3 tokens", ["layers", "seq_len per layer"], lengths),
    ]
    if flags[0] and not flags[1]:
        evidence.append(note("Every layer wrote into cache[0]: layer 1's keys were appended after layer 0's, so "
                             "layer 1 attended layer 0's keys as if they were earlier tokens, and the next call's "
                             "offset (read from cache[0]) counted every token twice. One layer has nobody to share with."))
    return Measurement(observed=flags, evidence=evidence)
