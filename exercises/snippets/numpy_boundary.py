"""Crossing from NumPy into PyTorch (seed 000 §8, "NumPy habits").

Two habits of NumPy do not carry over. Its arrays may run backwards in
memory (a reversed view has a negative stride), which ``torch.from_numpy``
cannot wrap; and its floating-point default is float64, while a PyTorch
model's weights are float32. Both conversions below handle that at the
boundary, where the message is clearest.
"""

import numpy as np
import torch


def to_tensor(a: np.ndarray) -> torch.Tensor:
    """Share ``a``'s memory when PyTorch can; copy it first when it runs backwards.

    Args:
        a: any NumPy array, possibly a view with negative strides (``a[::-1]``).

    Returns:
        A CPU tensor with a's values (sharing a's memory unless a copy was needed).
    """
    if any(stride < 0 for stride in a.strides):
        a = a.copy()  # a fresh array, laid out forwards
    return torch.from_numpy(a)


def features(a: np.ndarray) -> torch.Tensor:
    """Token features from NumPy as float32, the dtype of the model's weights.

    Args:
        a: a (N, C) float array; NumPy makes float64 unless told otherwise.

    Returns:
        A (N, C) float32 tensor.
    """
    return torch.from_numpy(a).float()  # float64 -> float32
