"""A neural bigram: one row of next-token logits per current token (seed 001,
"Make the target unambiguous" and Parts 3-4 of its lab).

Its whole decision rule is a (V, V) table, so the best it can ever do is
known in advance: the counting floor, the loss of the empirical conditional
probabilities count(a -> b) / count(a -> anything). Training with AdamW
should approach that floor from above; nothing honest goes below it.
"""

import torch
import torch.nn as nn
from torch.nn import functional as F

TEXT = "a cat sat. a cat ran. a rat ran. a rat sat."
LEARNING_RATE = 0.1


class Bigram(nn.Module):
    """Logits for the next token from the current token alone.

    The table starts at zero, so every row is uniform and the first loss is
    exactly ln V.
    """

    def __init__(self, vocab_size: int) -> None:
        super().__init__()
        self.table = nn.Embedding(vocab_size, vocab_size)  # (V, V): row = current token
        nn.init.zeros_(self.table.weight)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        """(B, T) ids -> ((B, T, V) logits, mean loss or None)."""
        logits = self.table(idx)  # (B, T, V)
        loss = None
        if targets is not None:  # cross entropy on the raw logits, averaged over all B * T targets
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
        return logits, loss


def encode(text: str = TEXT) -> tuple[str, torch.Tensor]:
    """Characters in sorted order, and the text as a (1, N) tensor of their ids."""
    vocab = "".join(sorted(set(text)))
    ids = torch.tensor([[vocab.index(c) for c in text]], dtype=torch.long)
    return vocab, ids


def shifted_pairs(tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, N) ids -> inputs and targets, each (B, N - 1): y[:, t] is the token after x[:, t]."""
    x = tokens[:, :-1].contiguous()  # every token except the last
    y = tokens[:, 1:].contiguous()  # every token except the first
    return x, y


def make_optimizer(model: nn.Module) -> torch.optim.Optimizer:
    """AdamW at LEARNING_RATE, no weight decay (decay would pull the table toward uniform)."""
    return torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, weight_decay=0.0)


def counting_floor(x: torch.Tensor, y: torch.Tensor, vocab_size: int) -> tuple[torch.Tensor, float]:
    """The empirical bigram table of pairs x -> y and its loss, the floor no bigram goes below.

    Seed 001, Part 3 of its lab: each row is normalised by the number of
    pairs that *leave* its character, so row a holds the frequencies of what
    follows a; the floor is the mean of -ln(frequency) over the N pairs,
    which weights every (current, next) cell by how often it occurs. A cell
    that never occurs contributes nothing, so only observed cells enter the
    logarithm (0 · ln 0 would be 0 · -inf = NaN in floating point).

    Args:
        x, y: (B, T) int64 current and next ids, N = B · T pairs.
        vocab_size: V.

    Returns:
        ``(probs, floor)``: the (V, V) float64 table, each row summing to 1
        (or 0 for a character nothing follows), and the floor in nats per
        target.
    """
    V = vocab_size
    counts = torch.bincount((x * V + y).flatten(), minlength=V * V).reshape(V, V).double()  # (V, V)
    probs = counts / counts.sum(1, keepdim=True).clamp_min(1)  # each row over what follows its character
    seen = counts > 0  # only pairs that occur enter the logarithm
    floor = -(counts[seen] * probs[seen].log()).sum() / y.numel()
    return probs, floor.item()
