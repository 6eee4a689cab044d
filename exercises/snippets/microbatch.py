"""Gradient accumulation over microbatches of unequal size (seed 001,
"Explain it back" and its helper suite; nanoGPT's accumulation loop).

A batch too big for memory is split into microbatches whose gradients are
summed in ``.grad`` before one optimizer step. Each microbatch's loss is a
mean over *its own* tokens, so to reproduce the full-batch mean each one
must be weighted by its share of all the tokens. Dividing by the number of
microbatches is only right when they are all the same size.
"""

import torch


def accumulated_gradients(model: torch.nn.Module,
                          microbatches: list[tuple[torch.Tensor, torch.Tensor]]) -> dict[str, torch.Tensor]:
    """Backward every microbatch into the same ``.grad`` buffers.

    Args:
        model: ``model(x, y)`` returns ``(logits, mean loss over y's tokens)``.
        microbatches: ``(x, y)`` pairs, each (B_i, T_i) int64; sizes may differ.

    Returns:
        Parameter name -> a copy of its accumulated gradient. With token-count
        weights it equals the gradient of one mean over every token.
    """
    total = sum(y.numel() for _, y in microbatches)
    model.zero_grad(set_to_none=True)
    for x, y in microbatches:
        _, loss = model(x, y)  # mean over this microbatch's y.numel() tokens
        weight = y.numel() / total  # this microbatch's share of all the tokens
        (loss * weight).backward()  # adds into .grad
    return {name: p.grad.detach().clone() for name, p in model.named_parameters()}
