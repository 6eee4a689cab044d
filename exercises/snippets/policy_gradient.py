"""A policy-gradient loss with a learned baseline (seed 000 §8, "Post-training
makes the same distinctions more consequential").

The advantage says how much better a response did than expected:
reward − value, where the value comes from a learned head. In the policy's
loss it is fixed feedback, a weight on each response's log-probability: it
must not open a gradient path back into the value head (which has its own
loss) or into whatever produced the reward.
"""

import torch


def policy_loss(logp: torch.Tensor, rewards: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """-(advantage · log-probability), averaged over the (B, G) responses.

    Args:
        logp: (B, G) log-probabilities of the sampled responses (carry the policy's graph).
        rewards: (B, G) scores of those responses.
        values: (B, 1) the value head's expected reward per prompt (carry its graph).

    Returns:
        A scalar loss whose gradient reaches the policy only.
    """
    advantages = (rewards - values).detach()  # (B, G): fixed feedback, no gradient path
    return -(advantages * logp).mean()
