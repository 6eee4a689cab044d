"""Checks for the set ``autograd``: gradcheck on an ordinary composite function
(seed 000 §5)."""

import torch

from exercises.context import Context
from exercises.outcome import Measurement, note, table


def gradcheck_composite(ctx: Context) -> Measurement:
    """``torch.autograd.gradcheck`` on the snippet's ``gated``, in float64.

    Inputs: 6 values from a generator seeded with ``ctx.seed``, float64,
    ``requires_grad``. Observed: whether gradcheck passes (default
    tolerances, ``raise_exception=False``). Evidence: the analytical and the
    central-difference gradient of the sum at each point, and gradcheck on
    the same values in float32 (where its default tolerances are too tight
    for finite differences). Seed 000 §5 ("You can also give gradcheck an
    ordinary function composed of PyTorch operations").
    """
    from exercises.snippets.gated import gated

    g = torch.Generator().manual_seed(ctx.seed)
    x = torch.randn(6, generator=g, dtype=torch.float64).to(ctx.device).requires_grad_()
    passes = torch.autograd.gradcheck(gated, (x,), raise_exception=False)
    analytic = torch.autograd.grad(gated(x).sum(), x)[0]
    eps = 1e-6
    with torch.no_grad():
        numeric = (gated(x + eps) - gated(x - eps)) / (2 * eps)  # elementwise: d gated_i / d x_i
    x32 = x.detach().float().requires_grad_()
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gradcheck warns about float32 inputs; the verdict is the evidence
        passes32 = torch.autograd.gradcheck(gated, (x32,), raise_exception=False)
    rows = [[f"{v:+.6f}", f"{a:+.6f}", f"{n:+.6f}"] for v, a, n in
            zip(x.detach().tolist(), analytic.tolist(), numeric.tolist())]
    evidence = [
        table("d/dx of sum(gated(x)): autograd against central differences (eps 1e-6)",
              ["x", "autograd", "finite difference"], rows),
        table("gradcheck", ["inputs", "passes"], [["float64 (the check)", passes], ["float32, same values", passes32]]),
    ]
    if not passes:
        evidence.append(note("The autograd column disagrees with the finite differences: the function's "
                             "forward depends on x in a way the graph does not record."))
    return Measurement(observed=bool(passes), evidence=evidence)
