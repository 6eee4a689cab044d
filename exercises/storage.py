"""Checks for the set ``storage`` — storage, views and identity (seed 000 §2).

Storage questions are answered by pointers, not by names: two tensors share
values when ``untyped_storage().data_ptr()`` agrees, and a tensor is on the
autograd graph when it has a ``grad_fn``.
"""

import torch

from exercises.context import Context
from exercises.outcome import Measurement, first_line, note, table


def _ptr(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


def view_vs_reshape(ctx: Context) -> Measurement:
    """Observe whether ``column_major`` raises on x = arange(6).reshape(2, 3).

    Observed: the exception's class name, or ``"none"``. The evidence always
    shows the strides of ``x.T`` and the reference ``x.T.reshape(-1)``
    (``[0, 3, 1, 4, 2, 5]``), and whether each spelling shares storage with
    ``x``. Seed 000 §2, "A new tensor object does not necessarily mean new
    storage".
    """
    from exercises.snippets import layout

    device = torch.device(ctx.device)
    x = torch.arange(6, device=device).reshape(2, 3)
    y = x.T
    reference = y.reshape(-1)
    layout_rows = [["x", tuple(x.shape), tuple(x.stride()), x.is_contiguous()],
                   ["x.T", tuple(y.shape), tuple(y.stride()), y.is_contiguous()]]
    spellings = [["x.reshape(-1)", x.reshape(-1).tolist(), _ptr(x.reshape(-1)) == _ptr(x)],
                 ["x.T.reshape(-1)", reference.tolist(), _ptr(reference) == _ptr(x)],
                 ["x.T.contiguous().view(-1)", y.contiguous().view(-1).tolist(),
                  _ptr(y.contiguous().view(-1)) == _ptr(x)]]
    evidence = [table("Layout", ["tensor", "shape", "stride", "contiguous"], layout_rows)]
    try:
        flat = layout.column_major(x)
    except Exception as exc:  # noqa: BLE001 - the exception is the observation
        evidence += [table("Reference spellings", ["expression", "values", "shares x"], spellings),
                     note(first_line(exc)),
                     note("Reading x.T in order means jumping back in memory (0, 3, then 1): no single stride "
                          "does that, so no view exists, and view refuses to copy.")]
        return Measurement(observed=type(exc).__name__, evidence=evidence)
    spellings.insert(0, ["column_major(x)", flat.tolist(), _ptr(flat) == _ptr(x)])
    evidence.append(table("Reference spellings", ["expression", "values", "shares x"], spellings))
    return Measurement(observed="none", evidence=evidence)


def clone_detach(ctx: Context) -> Measurement:
    """Measure storage sharing and the gradient path for five ways to copy.

    ``x`` is a (2, 3) float leaf with ``requires_grad``. For ``x.view(-1)``,
    ``x.clone()``, ``x.detach()``, ``x.detach().clone()`` and the subject's
    ``snapshot(x)``: does the result share ``x``'s storage (pointer
    equality), and does it keep a differentiation path to ``x`` (it has a
    ``grad_fn`` and a backward through it reaches ``x.grad``)? Observed: the
    10 answers in that order, (shares, path) per row. The evidence also
    updates ``x`` in place, as an optimizer step does, and shows whether the
    snapshot moved. Seed 000 §2, "Copying and detaching are independent
    operations".
    """
    from exercises.snippets import snapshot as subject

    device = torch.device(ctx.device)
    x = torch.arange(6.0, device=device).reshape(2, 3).requires_grad_()
    results = [("x.view(-1)", x.view(-1)), ("x.clone()", x.clone()), ("x.detach()", x.detach()),
               ("x.detach().clone()", x.detach().clone()), ("snapshot(x)", subject.snapshot(x))]
    observed, rows = [], []
    for name, r in results:
        shares = _ptr(r) == _ptr(x)
        reaches = False
        if r.requires_grad:
            x.grad = None
            (2.0 * r).sum().backward()
            reaches = x.grad is not None and bool((x.grad != 0).any())
        observed += [shares, reaches]
        rows.append([name, "yes" if shares else "no", "yes" if reaches else "no",
                     type(r.grad_fn).__name__ if r.grad_fn is not None else "None"])
    snap = results[-1][1]
    before = snap[0, 0].item()
    with torch.no_grad():
        x.add_(100.0)  # an in-place update, as optimizer.step() makes
    after = snap[0, 0].item()
    evidence = [
        table("x: (2, 3) leaf, requires_grad", ["operation", "shares storage", "grad path", "grad_fn"], rows),
        table("After x.add_(100) under no_grad", ["tensor", "[0, 0] before", "[0, 0] after"],
              [["snapshot(x)", before, after]]),
    ]
    if after != before:
        evidence.append(note("detach() alone shares x's storage: the in-place update reached the snapshot."))
    return Measurement(observed=observed, evidence=evidence)


def numpy_sharing(ctx: Context) -> Measurement:
    """Observe whether a batch changes when the loader refills its buffer.

    ``BufferedBatches(2, 3)`` hands out batch 1 (all ones), then refills its
    NumPy buffer for batch 2 (all twos). Observed: True when batch 1 changed.
    The evidence compares pointers (tensor storage against the array's
    ``ctypes.data``). The NumPy boundary is on the CPU whatever the device.
    Seed 000 §2, "Copying and detaching are independent operations".
    """
    import numpy as np

    from exercises.snippets import batches

    loader = batches.BufferedBatches(2, 3)
    first = loader.next_batch(np.ones((2, 3), dtype=np.float32))
    kept = first.clone()
    second = loader.next_batch(np.full((2, 3), 2.0, dtype=np.float32))
    changed = not torch.equal(first, kept)
    buffer_ptr = loader.buffer.ctypes.data
    evidence = [
        table("Batch 1, row 0", ["when", "values"],
              [["when handed out", kept[0].tolist()], ["after the refill", first[0].tolist()]]),
        table("Buffer sharing", ["tensor", "shares the buffer"],
              [["batch 1", _ptr(first) == buffer_ptr], ["batch 2", _ptr(second) == buffer_ptr]]),
        table("Facts", ["question", "answer"],
              [["batch 1 changed", changed], ["batch 1 requires grad", first.requires_grad]]),
    ]
    if changed:
        evidence.append(note("Both batches are views of one buffer: every batch handed out so far now holds "
                             "the latest values."))
    return Measurement(observed=changed, evidence=evidence)


def inplace_saved(ctx: Context) -> Measurement:
    """Observe what backward through ``floored_log_probs`` raises.

    Logits (B, V) = (2, 5) from a seeded generator, leaf with
    ``requires_grad``; the loss is the mean negative log-probability of
    token 0. Observed: the class name of the exception, or ``"none"``. The
    evidence names the stage that raised (forward or backward) and the first
    line. Seed 000 §2, "In-place operations are about old values".
    """
    from exercises.snippets import clipped

    device = torch.device(ctx.device)
    g = torch.Generator().manual_seed(ctx.seed)
    logits = torch.randn(2, 5, generator=g).to(device).requires_grad_()
    stage = "forward"
    try:
        log_probs = clipped.floored_log_probs(logits)
        loss = -log_probs[:, 0].mean()
        stage = "backward"
        loss.backward()
    except Exception as exc:  # noqa: BLE001 - the exception is the observation
        evidence = [table("Run", ["stage", "outcome"],
                          [["forward", "ran" if stage == "backward" else "raised"],
                           ["backward", "raised" if stage == "backward" else "not reached"]]),
                    note(first_line(exc)),
                    note("softmax saved its output (version 0) for backward; the in-place clamp made it "
                         "version 1, so backward refuses to use it.")]
        return Measurement(observed=type(exc).__name__, evidence=evidence)
    grad = logits.grad.cpu()
    evidence = [table("Run", ["stage", "outcome"], [["forward", "ran"], ["backward", "ran"]]),
                table("logits.grad", ["row", "gradient", "row sum"],
                      [[i, [round(v, 4) for v in grad[i].tolist()], round(grad[i].sum().item(), 6) + 0.0]
                       for i in range(grad.shape[0])])]
    return Measurement(observed="none", evidence=evidence)


def view_noncontig(ctx: Context) -> Measurement:
    """Regroup the rows of a non-contiguous tensor with ``regroup.split_rows``.

    x = arange(24).reshape(4, 6)[:, :3]: (4, 3), strides (6, 1), not
    contiguous. ``split_rows(x, 2)`` asks for (2, 2, 3). Observed: the
    exception class, or ``"none"``. Evidence: the strides, whether the result
    shares x's storage, and a flattening ``x.view(12)`` that strides cannot
    express. Seed 000 §2 ("A tensor does not have to be globally contiguous
    for every possible view to work").
    """
    from exercises.snippets.regroup import split_rows

    x = torch.arange(24, device=ctx.device).reshape(4, 6)[:, :3]  # (4, 3), strides (6, 1)
    try:
        y = split_rows(x, 2)
        observed = "none"
        outcome = f"(2, 2, 3), strides {y.stride()}, shares storage {y.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()}"
    except Exception as exc:  # the refusal is the observation
        observed, outcome = type(exc).__name__, first_line(exc, limit=100)
    try:
        x.view(12)
        flat = "ran"
    except Exception as exc:
        flat = first_line(exc, limit=100)
    evidence = [
        table("x = arange(24).reshape(4, 6)[:, :3]", ["quantity", "value"], [
            ["shape", str(tuple(x.shape))], ["strides", str(x.stride())], ["is_contiguous()", x.is_contiguous()]]),
        table("Views of x", ["call", "outcome"], [["split_rows(x, 2)", outcome], ["x.view(12)", flat]]),
        note("Splitting axis 0 into (2, 2) only needs strides (12, 6, 1); flattening would need one stride "
             "for 12 elements that sit 1 apart within a row and 6 apart across rows, which no stride gives."),
    ]
    return Measurement(observed=observed, evidence=evidence)
