"""The held-out string the bigram is scored on (seed 001, "Separate fitting,
validation and stress testing").

Training pairs come from ``bigram.TEXT``; validation pairs from a separate
string, ``VAL_TEXT``, encoded with the same vocabulary. It shares phrases
with the training text, so it is an interface demonstration, not evidence
of generalisation; scoring on the training text itself is not validation
at all.
"""

import torch

from exercises.snippets import bigram

VAL_TEXT = "a rat sat. a cat ran."


def validation_pairs(vocab: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(x, y), each (1, len(VAL_TEXT) - 1): the held-out string's shifted pairs in ``vocab``'s ids."""
    ids = torch.tensor([[vocab.index(c) for c in VAL_TEXT]], dtype=torch.long)  # (1, N)
    return bigram.shifted_pairs(ids)
