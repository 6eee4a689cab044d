"""A check for the set ``modern``: a statically compiled model meeting prompts of many widths.

``torch.compile(model, dynamic=False)`` specialises every graph on the exact
shapes it was traced with; a batch of another width fails the graph's guards
and is traced again. Serving batches padded to their longest prompt then
compile once per length. The check counts the graphs with a backend of its
own that runs each traced graph as it is (no code generation, no C++
compiler), so it measures Dynamo's tracing on any CPU in a few seconds.
"""

import torch

from exercises.context import Context
from exercises.outcome import Measurement, note, table

#: The first prompt grows by one character per batch (5, 6, 7, 8); the second stays 2 long.
GROWING, SHORT = "The planet", "A "
LENGTHS = (5, 6, 7, 8)
#: The bucket width the engine's left_pad rounds up to.
BUCKET = 8


def _prefill(model, idx: torch.Tensor, pads: torch.Tensor) -> torch.Tensor:
    """The batched prompts through a fresh KV cache told where the padding ends: last logits (B, V)."""
    cache = model.new_cache(idx.size(0))
    for layer in cache:
        layer.pads = pads  # (B,)
    logits, _ = model(idx, cache=cache)  # (B, T, V)
    return logits[:, -1]


def _graphs_per_batch(model, batches, dynamic: bool):
    """Compile ``model`` afresh and feed it every batch: graphs traced by each call, and its logits."""
    import torch._dynamo as dynamo

    traced = []

    def counting_backend(graph_module, example_inputs):
        traced.append(len(example_inputs))
        return graph_module.forward  # run the traced graph as it is

    dynamo.reset()  # no graph from an earlier check or route is reused
    compiled = torch.compile(model, backend=counting_backend, dynamic=dynamic)
    per_call, outputs = [], []
    for idx, pads in batches:
        before = len(traced)
        with torch.no_grad():
            outputs.append(_prefill(compiled, idx, pads))
        per_call.append(len(traced) - before)
    dynamo.reset()
    return per_call, outputs


def compile_padded_lengths(ctx: Context) -> Measurement:
    """Graphs ``torch.compile(dynamic=False)`` traces for four batches whose longest prompt grows.

    The small engine (2 layers, C = 64, block 32, eval mode) reads four
    batches of two prompts: the first 5, 6, 7 and 8 characters of
    ``'The planet'``, each beside ``'A '``. ``engine.generate.left_pad(...,
    multiple=8)`` puts them flush right in a batch of width 8 (the bucket)
    and the batch is prefilled through a KV cache that hides the padding,
    as ``generate_batch`` does. The model is compiled with ``dynamic=False``
    and a counting backend (each traced graph runs as traced), after
    ``torch._dynamo.reset()``. Observed: for each of the four calls in
    order, whether it traced any graph. Evidence: widths, graphs per call,
    the compiled logits against eager ones, and the same four prompts
    unbucketed under ``dynamic=True``.

    Raises:
        RuntimeError: if torch.compile cannot run here; the message says so.

    Seed 004, "Compilation" (recompilation belongs to the compiler's
    assumptions; a padded batch's width is one).
    """
    import logging

    from engine.corpus import make_corpus
    from engine.generate import left_pad
    from engine.tokenizer import CharTokenizer
    from exercises.outcome import first_line

    tokenizer = CharTokenizer(make_corpus(50_000, seed=0))
    model = ctx.gpt("small").eval()
    prompts = [[tokenizer.encode(GROWING[:n]), tokenizer.encode(SHORT)] for n in LENGTHS]
    bucketed = [left_pad(p, 0, ctx.device, multiple=BUCKET) for p in prompts]
    unbucketed = [left_pad(p, 0, ctx.device) for p in prompts]
    dynamo_log = logging.getLogger("torch._dynamo")
    level = dynamo_log.level
    dynamo_log.setLevel(logging.ERROR)  # the graph break at the id check is evidence here, not console noise
    try:
        ctx.progress(0.1, "compiling with dynamic=False")
        static, outputs = _graphs_per_batch(model, bucketed, dynamic=False)
        ctx.progress(0.6, "compiling with dynamic=True")
        dynamic, _ = _graphs_per_batch(model, unbucketed, dynamic=True)
    except Exception as exc:
        raise RuntimeError(f"torch.compile is unavailable here ({first_line(exc, limit=120)}); "
                           "this exercise needs it, so it cannot run on this machine.") from None
    finally:
        dynamo_log.setLevel(level)
    with torch.no_grad():
        eager = [_prefill(model, idx, pads) for idx, pads in bucketed]
        alone = [_prefill(model, *left_pad([p], 0, ctx.device)) for p in prompts[-1]]
    delta = max((c - e).abs().max().item() for c, e in zip(outputs, eager))
    # the last batch's rows against each prompt alone: the padding is hidden, whatever the width
    padded_vs_alone = max((eager[-1][b] - alone[b][0]).abs().max().item() for b in range(2))
    rows = [[f"{n} and {len(SHORT)}", idx.size(1), graphs, bool(graphs)]
            for n, (idx, _), graphs in zip(LENGTHS, bucketed, static)]
    evidence = [
        table("dynamic=False, batches from left_pad(..., multiple=8)",
              ["prompt lengths", "width T", "graphs traced", "traced?"], rows),
        table("Unbucketed widths (5, 6, 7, 8) with dynamic=True",
              ["call", "graphs traced"], [[i + 1, g] for i, g in enumerate(dynamic)]),
        table("Same answers", ["quantity", "value"], [
            ["max |Δ last logits|, compiled vs eager", delta],
            ["max |Δ last logits|, batch of width T vs each prompt alone", padded_vs_alone]]),
        note("Each compilation traces more than one graph: the engine reads the smallest and largest id "
             "into Python to check their range, a graph break, and the graph after it is specialised on "
             "those two numbers too (every batch here holds the same two: the pad id 0 and 'p')."),
        note("Public reports: pytorch/pytorch#188150 (a training loop that pads each batch to its longest "
             "sequence recompiles on every new length; padding to a fixed length is the workaround) and "
             "PyTorch's 'Dynamic Shapes' guide (with dynamic=False it always recompiles for each "
             "distinct size)."),
    ]
    return Measurement(observed=[bool(g) for g in static], evidence=evidence)
