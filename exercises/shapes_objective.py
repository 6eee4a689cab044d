"""Checks for the set ``shapes``: a loss that falls while it optimises the wrong
objective (seed 000 §1 and §7).

The broadcast loss of ``broadcast-loss`` runs without an error; trained, it
even goes down. What it drives the predictions to is another matter.
"""

import torch

from exercises.context import Context
from exercises.outcome import Measurement, note, series, table

#: Plain gradient descent on the three free predictions.
LR, STEPS = 0.5, 60


def broadcast_trains(ctx: Context) -> Measurement:
    """Fit three free predictions, a (3, 1) column, to targets [1, 2, 3] with ``snippets/losses.py``.

    The predictions start at 0 and take ``STEPS`` steps of SGD (lr ``LR``)
    on ``mse_loss``. Observed: ``[the loss fell, the final prediction for
    the third example]`` (rounded to 1e-6). Evidence: the loss curve, the
    final predictions, and the squared error each has against its own
    target. Seed 000 §7 ("A falling loss is useful evidence, but the earlier
    broadcasting example shows why it is not sufficient evidence of the
    right objective").
    """
    from exercises.snippets import losses

    targets = torch.tensor([1.0, 2.0, 3.0], device=ctx.device)  # (N,)
    predictions = torch.zeros(3, 1, device=ctx.device, requires_grad=True)  # (N, 1)
    optimizer = torch.optim.SGD([predictions], lr=LR)
    curve = []
    for _ in range(STEPS):
        optimizer.zero_grad(set_to_none=True)
        loss = losses.mse_loss(predictions, targets)
        loss.backward()
        optimizer.step()
        curve.append(loss.item())
    final = losses.mse_loss(predictions, targets).item()
    p = predictions.detach().squeeze(-1)
    fell = final < curve[0]
    evidence = [
        series("mse_loss during training", curve, label="loss"),
        table("After training", ["example", "target", "prediction", "(prediction - target)^2"],
              [[i, targets[i].item(), round(p[i].item(), 6), round((p[i] - targets[i]).pow(2).item(), 6)]
               for i in range(3)]),
        table("The loss", ["quantity", "value"], [["first", curve[0]], ["final", round(final, 6)],
                                                  ["fell", fell]]),
        note("Each prediction minimises what the loss compares it with. Against all three targets at once, "
             "that is their mean."),
    ]
    return Measurement(observed=[bool(fell), round(p[2].item(), 6)], evidence=evidence)
