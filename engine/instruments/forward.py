"""The forward contract that every instrument relies on.

Seed 004, "The final checklist": logits are (B, T, V). Models in the wild
return them in a few ways; :func:`logits_of` accepts the common ones.
"""

from typing import Any

import torch


def logits_of(output: Any) -> torch.Tensor:
    """Logits from a forward's output: the tensor, a tuple's first element, or ``.logits``.

    Raises:
        TypeError: the output holds no logits tensor in any of those places.
    """
    if isinstance(output, torch.Tensor):
        return output
    if isinstance(output, (tuple, list)) and output and isinstance(output[0], torch.Tensor):
        return output[0]
    found = getattr(output, "logits", None)
    if isinstance(found, torch.Tensor):
        return found
    raise TypeError(f"the forward returned {type(output).__name__}; expected logits or a tuple starting with them")
