"""A token-level policy loss over the response only (seed 000 §8: in a
GRPO-style loop, "does the mask include prompt tokens?").

Each row is a prompt followed by a sampled response. The prompt was given,
not chosen by the policy, so only the response's tokens carry the advantage:
the mask starts at each row's first response token. Every response token
weighs the same (a mean over the masked tokens).
"""

import torch


def response_mask(prompt_lens: torch.Tensor, T: int) -> torch.Tensor:
    """(B,) prompt lengths -> (B, T) bool, True at positions t >= the row's prompt length."""
    positions = torch.arange(T, device=prompt_lens.device)[None, :]  # (1, T)
    return positions >= prompt_lens[:, None]  # (B, T): the response tokens only


def token_policy_loss(token_logp: torch.Tensor, advantages: torch.Tensor, prompt_lens: torch.Tensor) -> torch.Tensor:
    """-(advantage · log p(token)) averaged over the response tokens.

    Args:
        token_logp: (B, T) log-probability of token t given tokens < t, for
            t = 1 … T - 1 (column 0 has no context and is never used).
        advantages: (B,) one advantage per row, fixed feedback.
        prompt_lens: (B,) int64, how many tokens of each row are the prompt.

    Returns:
        A 0-dim loss.
    """
    mask = response_mask(prompt_lens, token_logp.size(1))  # (B, T)
    weighted = advantages.detach()[:, None] * token_logp  # (B, T)
    return -torch.where(mask, weighted, torch.zeros_like(weighted)).sum() / mask.sum()
