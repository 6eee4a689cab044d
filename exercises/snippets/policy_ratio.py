"""The clipped-policy surrogate's ratio (seed 000 §8, "Post-training makes the
same distinctions more consequential").

ratio = exp(new_log_prob - old_log_prob). The old log-probability is a fixed
record of the policy that sampled the responses: a number, not a function of
the weights being trained, so no gradient may flow through it.
"""

import torch


def surrogate(new_logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor) -> torch.Tensor:
    """(N,) log-probs under the current and the sampling policy, (N,) advantages -> 0-dim loss."""
    ratio = torch.exp(new_logp - old_logp.detach())  # the old side is a fixed record
    return -(ratio * advantages).mean()
