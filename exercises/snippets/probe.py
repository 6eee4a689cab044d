"""Read a model's logits for analysis (seed 000 §3, "To read nn.Module from
scratch": call the model, not its forward).

``model(idx)`` goes through ``nn.Module.__call__``, which runs the forward
pre-hooks, ``forward`` and the forward hooks registered on the model.
Calling ``model.forward(idx)`` runs only ``forward``: the model's own hooks
never fire (its submodules are still called normally).
"""

import torch


def logits_of(model: torch.nn.Module, idx: torch.Tensor) -> torch.Tensor:
    """(B, T) token ids -> (B, T, V) logits from an engine GPT, without gradients."""
    with torch.no_grad():
        logits, _ = model(idx)  # through __call__: hooks run
    return logits
