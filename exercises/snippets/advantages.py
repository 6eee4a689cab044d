"""Group-relative advantages for rewards of shape (B, G) (seed 000, §8).

B prompts, G sampled responses per prompt. Each response is judged against
the other responses *to the same prompt*: the baseline is a per-prompt mean
over the group axis G, so every prompt's advantages are centred, and a
prompt whose responses all earn the same reward teaches nothing.
"""

import torch


def advantages(rewards: torch.Tensor, eps: float = 1e-6) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, G) rewards -> (baseline, advantages).

    The baseline broadcasts against the rewards; advantages are the rewards
    minus the baseline, divided by the group's standard deviation plus eps
    (population convention, unbiased=False), shape (B, G).
    """
    baseline = rewards.mean(dim=1, keepdim=True)  # (B, 1): one mean per prompt, over its G responses
    spread = rewards.std(dim=1, keepdim=True, unbiased=False)  # (B, 1)
    return baseline, (rewards - baseline) / (spread + eps)  # (B, G)
