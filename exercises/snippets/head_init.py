"""Re-initialising a layer of a model that already has an optimizer (seed 000
§3, "Optimizers remember objects, not attribute names").

An optimizer keeps references to parameter *objects*, not to attribute
names. To change a parameter's values, fill the existing object in place
(``nn.init.normal_(layer.weight, ...)``): the module, the optimizer and any
tied partner keep pointing at the same tensor. Assigning a new object to the
attribute changes identity; assigning a plain tensor to a registered
parameter slot is refused by ``nn.Module``.
"""

import torch
from torch import nn


class Classifier(nn.Module):
    """A two-layer classifier: (N, C) -> (N, K) logits.

    Args:
        c: input and hidden features.
        k: number of classes.
    """

    def __init__(self, c: int = 4, k: int = 3) -> None:
        super().__init__()
        self.body = nn.Linear(c, c)
        self.head = nn.Linear(c, k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.body(x)))  # (N, K)


def reinitialise_head(model: Classifier, std: float = 0.02) -> None:
    """Give ``model.head`` a fresh N(0, std) weight and a zero bias.

    Safe to call after the optimizer was built: the values change, the
    parameter objects do not.
    """
    nn.init.normal_(model.head.weight, mean=0.0, std=std)  # fill the existing Parameter in place
    nn.init.zeros_(model.head.bias)
