"""Two passes over a model's parameters (seed 000 §3, "Why does
model.parameters() return a generator?").

``model.parameters()`` hands back a generator: it yields each registered
parameter once and is then exhausted. Code that walks the parameters more
than once keeps a list. The list holds references to the same parameter
objects, not copies of the weights; its size grows with the number of
parameter tensors, not with the number of scalars they hold.
"""

from torch import nn


def inventory(model: nn.Module) -> dict:
    """Count a model's parameters in two passes.

    Returns:
        dict with ``container`` (the type name of what was walked),
        ``first_pass`` (parameter tensors seen by the first pass),
        ``second_pass`` (tensors seen by the second pass) and ``elements``
        (scalars summed during the second pass).
    """
    params = list(model.parameters())  # a list of references: it can be walked again
    first_pass = sum(1 for _ in params)
    second_pass, elements = 0, 0
    for p in params:
        second_pass += 1
        elements += p.numel()
    return {"container": type(params).__name__, "first_pass": first_pass,
            "second_pass": second_pass, "elements": elements}
