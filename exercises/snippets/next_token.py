"""Turning language-model logits into next-token probabilities (seed 000 §1).

Logits are (batch, time, vocabulary). At every (batch, time) position the
model chooses among vocabulary entries, so normalisation runs over the last
axis, and picking the probability of the observed token asks for one
vocabulary index per position: an index of shape (B, T, 1).
"""

import torch
from torch.nn import functional as F


def next_token_probs(logits: torch.Tensor) -> torch.Tensor:
    """Probability of each vocabulary entry at each position.

    Args:
        logits: (B, T, V) raw scores.

    Returns:
        (B, T, V) probabilities; for every (b, t) they sum to 1 over V.
    """
    return F.softmax(logits, dim=-1)  # normalise over the vocabulary axis


def token_log_probs(logits: torch.Tensor,
                    targets: torch.Tensor) -> torch.Tensor:
    """Log-probability the model gave to the token that actually came next.

    Args:
        logits: (B, T, V) raw scores.
        targets: (B, T) observed token ids (int64).

    Returns:
        (B, T) log-probabilities; ``-token_log_probs(...)`` equals the
        per-position cross-entropy.

    Raises:
        RuntimeError: from ``gather`` when the index and the log-probabilities
            do not have the same number of dimensions.
    """
    log_probs = F.log_softmax(logits, dim=-1)  # (B, T, V)
    index = targets.unsqueeze(-1)  # (B, T, 1): one vocab entry per position
    return log_probs.gather(-1, index).squeeze(-1)  # (B, T, 1) -> (B, T)
