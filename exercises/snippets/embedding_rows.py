"""Size an embedding table from the token ids it will look up.

Seed 004, "Data: the tokenizer": ids are row numbers. A table for ids
0 … max_id needs max_id + 1 rows; one row short and the largest id points
one past the end of the table.
"""

import torch
from torch import nn


def rows_needed(ids: torch.Tensor) -> int:
    """How many rows an embedding table needs to look up every id in ``ids``.

    Args:
        ids: integer tensor of token ids, all >= 0.

    Returns:
        V, the number of rows: ids live in [0, V).
    """
    return int(ids.max()) + 1  # ids run from 0 to max, so max + 1 rows


def embedding_for(ids: torch.Tensor, n_embd: int) -> nn.Embedding:
    """An (V, n_embd) ``nn.Embedding`` with V = ``rows_needed(ids)``."""
    return nn.Embedding(rows_needed(ids), n_embd)
