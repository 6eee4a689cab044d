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


def parallel_scan(ctx: Context) -> Measurement:
    """The snippet's Hillis–Steele scan against the serial prefix products, values and gradients.

    n = 8 random 2 x 2 matrices (float64, generator seeded with ctx.seed),
    which do not commute. Observed: ``[the scan equals the serial prefixes
    within 1e-10, the number of stages]``. Evidence: the work both ways, and
    whether autograd's gradient of sum(P) through the scan equals the one
    through the serial loop. Seed 000 §5 ("A Hillis–Steele implementation
    uses logarithmically many dependent stages but more total work").
    """
    from exercises.snippets.scan import scan_prefix, serial_prefix

    g = torch.Generator().manual_seed(ctx.seed)
    n = 8
    mats = torch.randn(n, 2, 2, generator=g, dtype=torch.float64).to(ctx.device)
    serial = serial_prefix(mats)
    scanned, stages, products = scan_prefix(mats)
    gap = (scanned - serial).abs().max().item()
    equal = gap <= 1e-10
    a = mats.clone().requires_grad_()
    (grad_serial,) = torch.autograd.grad(serial_prefix(a).sum(), a)
    b = mats.clone().requires_grad_()
    (grad_scan,) = torch.autograd.grad(scan_prefix(b)[0].sum(), b)
    commute = (mats[0] @ mats[1] - mats[1] @ mats[0]).abs().max().item()
    # Affine maps X -> X R + S on row vectors are the matrices [[R, 0], [S, 1]] acting on [X, 1]:
    # composing maps is multiplying those matrices, so the same scan runs the recurrence
    # X_i = X_{i-1} R_i + S_i.
    R = torch.randn(n, 2, 2, generator=g, dtype=torch.float64).to(ctx.device) * 0.5
    S = torch.randn(n, 1, 2, generator=g, dtype=torch.float64).to(ctx.device)
    blocks = torch.zeros(n, 3, 3, dtype=torch.float64, device=mats.device)
    blocks[:, :2, :2], blocks[:, 2:, :2], blocks[:, 2, 2] = R, S, 1.0
    start = torch.randn(1, 2, generator=g, dtype=torch.float64).to(ctx.device)  # X_{-1}
    X, serial_states = start, []
    for i in range(n):
        X = X @ R[i] + S[i]  # (1, 2)
        serial_states.append(X)
    lifted = torch.cat([start, torch.ones(1, 1, dtype=torch.float64, device=mats.device)], 1)  # [X, 1]
    scanned_states = lifted @ scan_prefix(blocks)[0]  # (n, 1, 3): [X_i, 1]
    affine_gap = max((scanned_states[i, :, :2] - serial_states[i]).abs().max().item() for i in range(n))
    evidence = [
        table(f"Prefix products of {n} random 2 x 2 matrices", ["quantity", "serial", "scan"], [
            ["dependent stages", n - 1, stages], ["matrix products in all", n - 1, products],
            ["max |P_scan - P_serial|", "", gap], ["gradients of sum(P) agree (1e-10)", "",
                                                   bool((grad_scan - grad_serial).abs().max() <= 1e-10)]]),
        table("Why the order matters", ["quantity", "value"], [["max |M0 M1 - M1 M0|", commute]]),
        table("The same scan on affine maps X -> X R + S, as 3 x 3 matrices", ["quantity", "value"], [
            ["max |X_i by scan - X_i by the recurrence|", affine_gap],
            ["agree (1e-10)", affine_gap <= 1e-10]]),
    ]
    if not equal:
        evidence.append(note("Every stage multiplied in the wrong order: associativity lets a scan regroup "
                             "the products, never reorder them, and these matrices do not commute."))
    return Measurement(observed=[equal, stages], evidence=evidence)


def gradcheck_kink(ctx: Context) -> Measurement:
    """gradcheck of ``snippets/hinge.py``'s hinge loss at the subject's test margins.

    ``hinge(m) = relu(1 - m)``, elementwise, float64; its derivative jumps
    from -1 to 0 at m = 1. Observed: whether ``torch.autograd.gradcheck``
    passes at ``test_margins()``. Evidence: for each margin, autograd's
    derivative beside the central difference (eps = 1e-6), and the same
    check on ``abs`` at its own kink. Seed 000 §5 ("The numerical result is
    an approximation, not an oracle ... warn about non-differentiable
    points ... Start with small deterministic inputs away from kinks").
    """
    from exercises.snippets.hinge import hinge, test_margins

    margins = test_margins().to(ctx.device).requires_grad_(True)  # (N,) float64
    passed = bool(torch.autograd.gradcheck(hinge, (margins,), raise_exception=False))
    eps = 1e-6
    rows = []
    for m in margins.detach().tolist():
        point = torch.tensor(m, dtype=torch.float64, requires_grad=True)
        (analytical,) = torch.autograd.grad(hinge(point), point)
        numerical = (hinge(torch.tensor(m + eps, dtype=torch.float64))
                     - hinge(torch.tensor(m - eps, dtype=torch.float64))) / (2 * eps)
        rows.append([f"{m:g}", f"{analytical.item():g}", f"{numerical.item():.6g}"])
    zero = torch.zeros(1, dtype=torch.float64, requires_grad=True)
    abs_passes = bool(torch.autograd.gradcheck(torch.abs, (zero,), raise_exception=False))
    evidence = [
        table("hinge(m) = relu(1 - m): the two routes at each test margin",
              ["margin", "autograd", "central difference"], rows),
        table("gradcheck", ["input", "passes"], [["hinge at the test margins", passed], ["abs at 0", abs_passes]]),
        note("At a kink the derivative does not exist: autograd returns its convention (relu'(0) = 0) and the "
             "central difference averages the two sides. abs at 0 passes only because both give 0 there."),
    ]
    return Measurement(observed=passed, evidence=evidence)
