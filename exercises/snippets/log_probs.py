"""Log-probabilities of every token, the numerically safe way (seed 000 §7,
"The training loop connects the four views").

``F.log_softmax`` computes z - logsumexp(z) with the largest logit
subtracted first, so no exponential overflows and no probability has to be
represented before its logarithm is taken. Taking ``softmax`` first and then
``log`` rounds every probability below float32's smallest value to 0, whose
logarithm is -inf.
"""

import torch
from torch.nn import functional as F


def token_log_probs(logits: torch.Tensor) -> torch.Tensor:
    """(..., V) logits -> (..., V) log-probabilities over the last axis."""
    return F.log_softmax(logits, dim=-1)  # z - logsumexp(z), computed stably
