"""Checks for the set ``data``: targets sliced from a window, and how the loss
flattens them (seed 001, "Make the target unambiguous").

Slicing ``tokens[:, 1:]`` out of a (B, T + 1) window gives a (B, T) tensor
whose rows are T + 1 apart in memory: not contiguous. A loss that flattens
the targets with ``view`` needs one stride for the whole (B·T,) result, and
this layout has none; ``reshape`` copies where it must. Seed 001's GPT
flattens with ``view``, which is why its batches call ``.contiguous()``.
"""

import torch

from exercises.context import Context
from exercises.outcome import Measurement, first_line, note, table


def targets_view(ctx: Context) -> Measurement:
    """The engine GPT's loss on sliced targets, without and with ``.contiguous()``.

    The small engine GPT reads a (2, 16) input ``x = tokens[:, :-1]`` and two
    spellings of the same targets: ``tokens[:, 1:]`` as sliced (strides
    (17, 1), not contiguous) and ``tokens[:, 1:].contiguous()``. Observed:
    ``[exception class or "none" for the sliced targets, the same for the
    contiguous ones]``. Evidence: shapes, strides, the loss of each call.
    Seed 001, "Make the target unambiguous".
    """
    model = ctx.gpt("small").eval()
    g = torch.Generator().manual_seed(ctx.seed)
    tokens = torch.randint(0, model.config.vocab_size, (2, 17), generator=g).to(ctx.device)  # (B, T + 1)
    x = tokens[:, :-1].contiguous()  # (2, 16)
    sliced = tokens[:, 1:]  # (2, 16), rows 17 apart
    packed = sliced.contiguous()
    outcomes, rows = [], []
    for name, y in (("tokens[:, 1:]", sliced), ("tokens[:, 1:].contiguous()", packed)):
        try:
            with torch.no_grad():
                _, loss = model(x, targets=y)
            outcomes.append("none")
            rows.append([name, tuple(y.stride()), y.is_contiguous(), f"loss {loss.item():.5f}"])
        except Exception as exc:  # the outcome to report
            outcomes.append(type(exc).__name__)
            rows.append([name, tuple(y.stride()), y.is_contiguous(), first_line(exc, limit=90)])
    evidence = [
        table("Targets of shape (2, 16) through GPT.forward(x, targets=y)",
              ["targets", "strides", "contiguous", "result"], rows),
    ]
    if outcomes[0] != "none":
        evidence.append(note("view(-1) must give all 32 targets one stride, but the sliced rows sit 17 apart "
                             "with a gap between them: no single stride reaches them, so view refuses. "
                             ".contiguous() copies them side by side first."))
    return Measurement(observed=outcomes, evidence=evidence)


def narrow_ids(ctx: Context) -> Measurement:
    """Token ids of a 100,277-id vocabulary narrowed to uint16 by ``snippets/token_ids.py``.

    The ids [0, 50256, 65535, 65536, 70000, 100276] (all valid for V =
    100,277) go through ``narrow_ids(ids, np.uint16)``. Observed: ``[the
    exception class name it raises or "none", how many ids come back with
    another value]`` (0 when it raises: nothing came back). Evidence: each id
    and what was stored. Seed 000 §8 ("Validate token range before any
    narrowing conversion").
    """
    import numpy as np

    from exercises.snippets.token_ids import narrow_ids as narrow

    V = 100_277
    ids = np.array([0, 50_256, 65_535, 65_536, 70_000, 100_276], dtype=np.int64)
    try:
        stored = narrow(ids, np.uint16)
        raised, message = "none", "returned"
    except Exception as exc:  # the outcome to report
        stored, raised, message = None, type(exc).__name__, first_line(exc)
    changed = 0 if stored is None else int((stored.astype(np.int64) != ids).sum())
    rows = [[int(i), "-" if stored is None else int(s), "-" if stored is None else int(s) < V]
            for i, s in zip(ids, ids if stored is None else stored)]
    evidence = [
        table("narrow_ids(ids, uint16)", ["outcome"], [[message]]),
        table(f"Each id (V = {V:,}) and what was stored", ["id", "stored", "stored id < V"], rows),
        note(f"uint16 holds 0 .. {np.iinfo(np.uint16).max:,}. NumPy's astype keeps the low 16 bits of a larger "
             "id, and every wrapped value is still a valid id, so no later range check can see it."),
    ]
    return Measurement(observed=[raised, changed], evidence=evidence)
