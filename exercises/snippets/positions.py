"""A learned position table allocated with ``torch.empty`` (seed 000 §7,
"Initialization, precision, and evaluation mode").

``torch.empty`` allocates storage and fills nothing: the values are whatever
the memory held. The table must be filled before use, here from
N(0, 0.02²) with ``nn.init.normal_``.
"""

import torch
from torch import nn


class PositionTable(nn.Module):
    """One learned C-vector per position: (T,) positions -> (T, C)."""

    def __init__(self, block_size: int, n_embd: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(block_size, n_embd))  # allocated, not yet filled
        nn.init.normal_(self.weight, mean=0.0, std=0.02)

    def forward(self, positions: torch.Tensor) -> torch.Tensor:
        return self.weight[positions]
