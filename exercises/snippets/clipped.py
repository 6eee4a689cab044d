"""Log-probabilities with a floor, written without in-place edits (seed 000
§2, "In-place operations are about old values, not aesthetics").

``softmax`` saves its output for backward. Editing that output in place
bumps its version counter, and backward refuses to use a saved tensor whose
version changed. The floor therefore makes a new tensor.
"""

import torch
from torch.nn import functional as F


def floored_log_probs(logits: torch.Tensor,
                      floor: float = 1e-6) -> torch.Tensor:
    """``log(max(softmax(logits), floor))`` over the last axis.

    Args:
        logits: (B, V) raw scores.
        floor: smallest probability kept, so ``log`` never sees 0.

    Returns:
        (B, V) log-probabilities, differentiable in ``logits``.
    """
    probs = F.softmax(logits, dim=-1)  # autograd saves this for backward
    probs = probs.clamp(min=floor)  # a new tensor: the saved one stays
    return probs.log()
