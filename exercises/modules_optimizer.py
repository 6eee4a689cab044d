"""Checks for the set ``modules``: parameters the optimizer does or does not
hold (seed 000 §3, "Optimizers remember objects, not attribute names")."""

import torch

from exercises.context import Context
from exercises.outcome import Measurement, note, table


def late_parameter(ctx: Context) -> Measurement:
    """A gain registered after the optimizer: is it trained?

    ``Scorer(4)`` and ``SGD(model.parameters(), lr=0.1)`` are built; then
    ``add_gain`` registers a gain of 1.0. Three steps of mean squared error
    toward targets 2·x·w (a fixed w), on a (8, 4) batch. Observed: ``[the gain
    is in model.parameters(), the optimizer holds it, it moved]``. Evidence:
    the gain's gradient and value, the parameter counts on each side. Seed
    000 §3 ("registering a parameter after optimizer construction does not
    automatically add it to the optimizer. add_param_group is an explicit
    mechanism").
    """
    from exercises.snippets.late_param import Scorer, add_gain

    g = torch.Generator().manual_seed(ctx.seed)
    x = torch.randn(8, 4, generator=g).to(ctx.device)
    target = 2.0 * (x @ torch.randn(4, 1, generator=g).to(ctx.device))  # (8, 1)
    model = Scorer(4).to(ctx.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    add_gain(model, optimizer)
    model.to(ctx.device)
    gain = model.gain
    in_model = any(p is gain for p in model.parameters())
    held = any(p is gain for group in optimizer.param_groups for p in group["params"])
    start = gain.detach().clone()
    grads = []
    for _ in range(3):
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), target)
        loss.backward()
        grads.append(gain.grad.item() if gain.grad is not None else None)
        optimizer.step()
    moved = not torch.equal(gain.detach(), start)
    evidence = [
        table("The gain added after the optimizer", ["question", "answer"], [
            ["in model.parameters()", in_model], ["held by the optimizer", held],
            ["its .grad at each of the 3 steps", ", ".join("None" if v is None else f"{v:.4f}" for v in grads)],
            ["value: start -> after 3 steps", f"{start.item():.4f} -> {gain.item():.4f}"], ["moved", moved]]),
        table("Counting tensors", ["where", "tensors"], [
            ["model.parameters()", len(list(model.parameters()))],
            ["optimizer.param_groups", sum(len(group["params"]) for group in optimizer.param_groups)]]),
    ]
    if not held:
        evidence.append(note("The gain is registered and gets a gradient every step, but the optimizer's "
                             "lists were copied before it existed: nothing ever steps it. Nor does "
                             "optimizer.zero_grad() reset it, so its .grad keeps adding up."))
    return Measurement(observed=[in_model, held, moved], evidence=evidence)
