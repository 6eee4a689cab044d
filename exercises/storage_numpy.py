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
