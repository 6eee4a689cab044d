"""Checks for the set ``autograd`` — backward is a computation (seed 000 §5).

Each function measures the subject as it is (clean or faulted copy) and
returns a :class:`~exercises.outcome.Measurement`. Everything runs in
float64, where finite differences and exact comparisons are meaningful.
"""

import torch

from exercises.context import Context
from exercises.outcome import Measurement, note, table

F64 = torch.float64


def _gap(a: torch.Tensor, b: torch.Tensor):
    """max |a - b|, or a phrase when the shapes differ."""
    if a.shape != b.shape:
        return "shapes differ"
    return (a - b).abs().max().item()


def wrong_backward(ctx: Context) -> Measurement:
    """Run ``torch.autograd.gradcheck`` on the hand-written cube function.

    Input x = [0.5, -1.2, 2.0] (float64, away from 0, where 2x² and 3x² would
    agree). Observed: gradcheck's verdict (default tolerances, no raising).
    Evidence: per element the supplied backward, a central difference with
    h = 1e-6, and their gap. Seed 000 §5, "Why does gradcheck use numerical
    differences?".
    """
    from exercises.snippets.cube import cube

    device = torch.device(ctx.device)
    x = torch.tensor([0.5, -1.2, 2.0], dtype=F64, device=device, requires_grad=True)
    passed = torch.autograd.gradcheck(cube, (x,), raise_exception=False)
    (analytical,) = torch.autograd.grad(cube(x).sum(), x)  # the supplied backward, upstream gradient 1
    h = 1e-6
    with torch.no_grad():
        numerical = (cube(x + h) - cube(x - h)) / (2 * h)  # finite differences of forward only
    errors = (analytical - numerical).abs()
    rows = [[round(xi, 4), round(a, 6), round(n, 6), e]
            for xi, a, n, e in zip(x.tolist(), analytical.tolist(), numerical.tolist(), errors.tolist())]
    evidence = [
        table("Derivative of x³ two ways", ["x", "backward", "central diff", "|gap|"], rows),
        table("gradcheck (float64, atol 1e-5, rtol 1e-3)", ["quantity", "value"],
              [["max |backward - numerical|", errors.max().item()], ["passes", passed]]),
    ]
    if not passed:
        evidence.append(note("The numerical route only evaluates forward, so it cannot inherit the mistake "
                             "in the hand-written rule."))
    return Measurement(observed=bool(passed), evidence=evidence)


def matmul_grad(ctx: Context) -> Measurement:
    """Compare the hand-written matrix-product gradients with autograd.

    Y = A @ B with A (2, 3), B (3, 4); and Y = A @ B @ C with three (3, 3)
    matrices, where a misplaced transpose keeps every shape. The loss is
    sum(Y * G) for a seeded G, so dL/dY = G. Observed: whether all three hand
    gradients equal autograd's (1e-12). Seed 000 §5, "Backward is another
    computation worth understanding".
    """
    from exercises.snippets.matmul_grads import matmul_grads, middle_grad

    device = torch.device(ctx.device)
    g = torch.Generator().manual_seed(ctx.seed)

    def rand(*shape):
        return torch.randn(*shape, generator=g, dtype=F64).to(device).requires_grad_()

    A, B = rand(2, 3), rand(3, 4)
    G = torch.randn(2, 4, generator=g, dtype=F64).to(device)
    ((A @ B) * G).sum().backward()
    dA, dB = matmul_grads(A.detach(), B.detach(), G)

    A3, B3, C3 = rand(3, 3), rand(3, 3), rand(3, 3)
    G3 = torch.randn(3, 3, generator=g, dtype=F64).to(device)
    ((A3 @ B3 @ C3) * G3).sum().backward()
    dB3 = middle_grad(A3.detach(), B3.detach(), C3.detach(), G3)

    rows, equal = [], True
    for label, hand, auto in (("A in A@B", dA, A.grad), ("B in A@B", dB, B.grad), ("B in A@B@C", dB3, B3.grad)):
        same = hand.shape == auto.shape and torch.allclose(hand, auto, rtol=0, atol=1e-12)
        equal = equal and same
        rows.append([label, tuple(hand.shape), _gap(hand, auto), same])
    evidence = [table("Hand formula against autograd (float64)", ["gradient of", "shape", "max |gap|", "equal"], rows)]
    if not equal:
        evidence.append(note("Every shape still matches: with square matrices the shapes cannot tell one "
                             "transpose placement from another, only the values can."))
    return Measurement(observed=bool(equal), evidence=evidence)


def broadcast_grad(ctx: Context) -> Measurement:
    """Run the hand-written linear backward against autograd.

    y = x @ weight.T + bias with x (2, 5, 3), weight (4, 3), bias (4,);
    loss sum(y * G) for a seeded (2, 5, 4) G. Observed: the shape of the hand
    gradient for ``bias``. Evidence: each operand's shape, autograd's and the
    hand gradient's shapes, and their gap. Seed 000 §5.
    """
    from exercises.snippets.linear_backward import linear_backward

    device = torch.device(ctx.device)
    g = torch.Generator().manual_seed(ctx.seed)
    x = torch.randn(2, 5, 3, generator=g, dtype=F64).to(device).requires_grad_()
    weight = torch.randn(4, 3, generator=g, dtype=F64).to(device).requires_grad_()
    bias = torch.randn(4, generator=g, dtype=F64).to(device).requires_grad_()
    G = torch.randn(2, 5, 4, generator=g, dtype=F64).to(device)
    ((x @ weight.T + bias) * G).sum().backward()
    dx, dweight, dbias = linear_backward(x.detach(), weight.detach(), G)
    rows = [[name, tuple(t.shape), tuple(t.grad.shape), tuple(hand.shape)]
            for name, t, hand in (("x", x, dx), ("weight", weight, dweight), ("bias", bias, dbias))]
    evidence = [
        table("Operands and their gradients", ["operand", "shape", "autograd", "hand"], rows),
        table("max |hand - autograd|", ["operand", "gap"],
              [["x", _gap(dx, x.grad)], ["weight", _gap(dweight, weight.grad)], ["bias", _gap(dbias, bias.grad)]]),
        note("bias was added at 2 x 5 = 10 (batch, position) places; each place sends back one row of G."),
    ]
    return Measurement(observed=list(dbias.shape), evidence=evidence)


def prefix_grad(ctx: Context) -> Measurement:
    """Compare the hand-written prefix-product backward with autograd.

    x: 6 seeded float64 values with |x| in [0.5, 1.5]; G: seeded direct
    gradients; loss sum(P * G). Autograd differentiates the same forward
    ``prefix_products``. Observed: whether the hand gradient equals
    autograd's (1e-12). Seed 000 §5, "Prefix products: direct gradients
    versus total gradients".
    """
    from exercises.snippets.prefix_products import prefix_products, prefix_products_backward

    device = torch.device(ctx.device)
    g = torch.Generator().manual_seed(ctx.seed)
    magnitude = 0.5 + torch.rand(6, generator=g, dtype=F64)
    sign = torch.where(torch.rand(6, generator=g) < 0.5, -1.0, 1.0).to(F64)
    x = (magnitude * sign).to(device)
    G = torch.randn(6, generator=g, dtype=F64).to(device)

    leaf = x.clone().requires_grad_()
    (prefix_products(leaf) * G).sum().backward()
    auto = leaf.grad
    with torch.no_grad():
        P = prefix_products(x)
        hand = prefix_products_backward(x, P, G)
    equal = torch.allclose(hand, auto, rtol=0, atol=1e-12)
    rows = [[i, round(xi, 4), round(h, 6), round(a, 6)]
            for i, (xi, h, a) in enumerate(zip(x.tolist(), hand.tolist(), auto.tolist()))]
    evidence = [
        table("dL/dx[i], hand against autograd", ["i", "x[i]", "hand", "autograd"], rows),
        table("Checks", ["quantity", "value"],
              [["forward equals torch.cumprod", torch.allclose(P, torch.cumprod(x, 0), rtol=0, atol=1e-12)],
               ["max |hand - autograd|", (hand - auto).abs().max().item()], ["equal (1e-12)", equal]]),
    ]
    if not equal:
        evidence.append(note("The last position still agrees: nothing comes after it, so its total gradient "
                             "is its direct one."))
    return Measurement(observed=bool(equal), evidence=evidence)


def gradcheck_alias(ctx: Context) -> Measurement:
    """gradcheck, and one hand-made finite difference, on the snippet's ``repeated(1.5, 3)``.

    f(a) = sum(a²). Each partial derivative is 2 · 1.5 = 3. Nudging entry
    0's memory by h moves f by 2 · 1.5 · h when the entry owns its memory,
    and by 3 · 2 · 1.5 · h = 9h when all three entries are one number
    (``expand``). Observed: [gradcheck's exception class or "none", the
    slope (f(a + h) − f(a)) / h of that nudge, h = 1e-6]. Seed 000 §5 (the
    API notes warn about overlapping-memory inputs).
    """
    from exercises.snippets.gradcheck_input import repeated

    x = torch.tensor(1.5, dtype=torch.float64, device=ctx.device)
    a = repeated(x, 3)
    try:
        torch.autograd.gradcheck(lambda t: (t ** 2).sum(), (a,))
        outcome, message = "none", "passed"
    except RuntimeError as exc:  # GradcheckError is a RuntimeError too
        outcome, message = type(exc).__name__, str(exc).splitlines()[0][:90]
    h = 1e-6
    with torch.no_grad():
        f0 = (a ** 2).sum().item()
        first = a.as_strided((1,), (1,))  # entry 0's place in memory
        first += h
        slope = ((a ** 2).sum().item() - f0) / h
        first -= h
        entries = a.tolist()
    evidence = [
        table("The input and one nudge", ["quantity", "value"], [
            ["stride", str(a.stride())], ["gradcheck", f"{outcome}: {message}"],
            ["slope of a nudge of entry 0's memory", slope], ["analytical ∂f/∂a₀ = 2 · 1.5", 3.0],
            ["entries after undoing the nudge", str(entries)]]),
    ]
    if a.stride() == (0,):
        evidence.append(note("Stride 0: the three entries are one number in memory, so nudging entry 0 nudged all "
                             "three and the finite difference measured 3 · 3 = 9, the derivative along a direction "
                             "gradcheck never meant. gradcheck refuses such inputs rather than report it."))
    return Measurement(observed=[outcome, round(slope, 3)], evidence=evidence)
