"""Checks for the set ``storage``: the NumPy boundary's strides and dtypes
(seed 000 §8, "NumPy habits"; §2 on ``from_numpy``)."""

import torch

from exercises.context import Context
from exercises.outcome import Measurement, first_line, note, table


def negative_stride(ctx: Context) -> Measurement:
    """``to_tensor`` on a reversed NumPy view, and on the same values laid out forwards.

    ``a = np.arange(6.0)[::-1]`` (strides (-8,)) and ``a.copy()`` (strides
    (8,)). Observed: the exception class (or "none") from ``to_tensor`` on the
    reversed view. Evidence: strides, values, whether the result shares the
    array's memory. The NumPy boundary is on the CPU whatever the device.
    Seed 000 §8 ("A negative-stride NumPy view may need a copy before
    conversion").
    """
    import numpy as np

    from exercises.snippets.numpy_boundary import to_tensor

    base = np.arange(6.0)
    reversed_view = base[::-1]
    rows = []
    try:
        t = to_tensor(reversed_view)
        outcome = "none"
        shares = t.data_ptr() == reversed_view.ctypes.data
        rows.append(["a[::-1]", reversed_view.strides, t.tolist(), shares])
    except Exception as exc:  # the outcome to report
        outcome = type(exc).__name__
        rows.append(["a[::-1]", reversed_view.strides, first_line(exc, limit=70), False])
    forwards = reversed_view.copy()
    t2 = to_tensor(forwards)
    rows.append(["a[::-1].copy()", forwards.strides, t2.tolist(), t2.data_ptr() == forwards.ctypes.data])
    evidence = [table("to_tensor on the same six values", ["array", "strides (bytes)", "result", "shares memory"],
                      rows)]
    if outcome != "none":
        evidence.append(note("A tensor's strides count elements and may not be negative, so from_numpy cannot "
                             "wrap memory that runs backwards; a copy lays the values out forwards and "
                             "then shares fine."))
    return Measurement(observed=outcome, evidence=evidence)


def float64_default(ctx: Context) -> Measurement:
    """``features`` of a NumPy array made with NumPy's defaults, through a float32 Linear.

    ``np.random.default_rng(ctx.seed).normal(size=(4, 8))`` is float64;
    ``features`` converts it, and ``nn.Linear(8, 3)`` (float32) reads it.
    Observed: ``[the features' dtype, the exception class or "none" from the
    Linear]``. Evidence: three more dtype facts of the boundary (an integer
    sum, a mixed sum, a true division). Seed 000 §8 ("Check floating-point
    defaults, integer reductions ... and type promotion").
    """
    import numpy as np

    from exercises.snippets.numpy_boundary import features

    a = np.random.default_rng(ctx.seed).normal(size=(4, 8))  # float64, NumPy's default
    x = features(a)
    layer = torch.nn.Linear(8, 3)
    try:
        layer(x)
        outcome, message = "none", "ran: (4, 3) float32"
    except Exception as exc:  # the outcome to report
        outcome, message = type(exc).__name__, first_line(exc, limit=80)
    ints = torch.tensor([1, 2, 3], dtype=torch.int32)
    facts = [
        ["np.random...normal(size=(4, 8)).dtype", str(a.dtype)],
        ["features(a).dtype", str(x.dtype).removeprefix("torch.")],
        ["nn.Linear(8, 3)(features(a))", message],
        ["int32 tensor .sum() (integer reduction)", str(ints.sum().dtype).removeprefix("torch.")],
        ["float32 tensor + tensor from float64 NumPy", str((torch.ones(2) + torch.from_numpy(np.ones(2))).dtype)
         .removeprefix("torch.")],
        ["int64 / int64 (true division)", str((torch.tensor([1, 2]) / torch.tensor([2, 2])).dtype)
         .removeprefix("torch.")],
    ]
    evidence = [table("Dtypes at the NumPy boundary", ["expression", "result"], facts)]
    if outcome != "none":
        evidence.append(note("NumPy made float64 and from_numpy kept it; the Linear's weights are float32, and "
                             "a matrix product needs one dtype."))
    return Measurement(observed=[str(x.dtype).removeprefix("torch."), outcome], evidence=evidence)


def numpy_write_after_forward(ctx: Context) -> Measurement:
    """A NumPy refill of the loader's buffer between forward and backward.

    ``BufferedBatches(1, 3)`` hands out batch 1 (all ones); a weight w
    (3,) of ones, requiring grad, computes ``loss = (w * batch).sum()``.
    Before ``loss.backward()`` the loader refills its buffer with batch 2
    (all twos), as a prefetching loader does. Observed: ``[the exception
    class name backward raises or "none", w.grad[0]]``. Evidence: the
    batch's version counter before and after the refill, and the same
    change made by a PyTorch in-place op. Seed 000 §2 ("NumPy operations do
    not become part of PyTorch's autograd graph merely because the two
    objects share memory"; "PyTorch tracks saved tensors and their
    versions").
    """
    import numpy as np

    from exercises.snippets import batches

    loader = batches.BufferedBatches(1, 3)
    batch = loader.next_batch(np.ones((1, 3), dtype=np.float32))  # (1, 3)
    w = torch.ones(3, requires_grad=True)
    loss = (w * batch).sum()  # mul saves the batch for w's gradient
    version = batch._version
    loader.next_batch(np.full((1, 3), 2.0, dtype=np.float32))
    after = batch._version
    try:
        loss.backward()
        raised, grad = "none", float(w.grad[0])
    except RuntimeError as exc:
        raised, grad = type(exc).__name__, float("nan")
    # The same change made by PyTorch itself, for contrast.
    x = torch.ones(1, 3)
    v = torch.ones(3, requires_grad=True)
    other = (v * x).sum()
    x.fill_(2.0)
    try:
        other.backward()
        torch_side = "none"
    except RuntimeError as exc:
        torch_side = f"RuntimeError: {first_line(exc, with_type=False, limit=60)}"
    evidence = [
        table("The batch the forward saved", ["quantity", "value"], [
            ["values at the forward", "1 1 1"], ["values at backward", " ".join(f"{t:g}" for t in batch[0].tolist())],
            ["version counter before the refill", version], ["version counter after the refill", after]]),
        table("backward", ["change between forward and backward", "outcome"], [
            ["NumPy refill of the buffer", raised if raised != "none" else f"ran; w.grad = {grad:g}"],
            ["x.fill_(2.0) in PyTorch", torch_side]]),
        note("The version counter counts writes made through PyTorch. A NumPy write into shared memory is "
             "invisible to it, so backward reads whatever the memory holds by then."),
    ]
    return Measurement(observed=[raised, grad], evidence=evidence)
