"""Checks for the set ``shapes`` — shape is part of the algorithm (seed 000 §1).

Each function measures the subject as it is (clean or faulted copy) and
returns a :class:`~exercises.outcome.Measurement`.
"""

import torch

from exercises.context import Context
from exercises.outcome import Measurement, note, table


def broadcast_loss(ctx: Context) -> Measurement:
    """Observe the shape that the squared-error loss really compares.

    Predictions (3, 1) equal to targets (3,) value for value; the intended
    loss is exactly 0. Observed: the shape of the per-example error tensor.
    """
    from exercises.snippets import losses

    device = torch.device(ctx.device)
    predictions = torch.tensor([[1.0], [2.0], [3.0]], device=device)  # (N, 1)
    targets = torch.tensor([1.0, 2.0, 3.0], device=device)  # (N,)
    errors = losses.squared_errors(predictions, targets)
    loss = losses.mse_loss(predictions, targets).item()
    rows = [["predictions", tuple(predictions.shape)], ["targets", tuple(targets.shape)],
            ["squared errors", tuple(errors.shape)], ["loss", loss], ["loss is zero", loss == 0.0]]
    evidence = [table("What the loss compared", ["quantity", "value"], rows)]
    if errors.dim() == 2:
        evidence.append(table("Squared errors: row i = prediction i against every target",
                              ["prediction", "vs 1.0", "vs 2.0", "vs 3.0"],
                              [[predictions[i, 0].item(), *errors[i].tolist()] for i in range(errors.shape[0])]))
        evidence.append(note("(3, 1) minus (3,) broadcasts to (3, 3): the diagonal holds the intended pairs, "
                             "the rest are comparisons nobody asked for."))
    return Measurement(observed=list(errors.shape), evidence=evidence)
