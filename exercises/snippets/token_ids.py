"""Token ids loaded from a NumPy array (seed 000 §8, "Token conversion").

Token files are often stored as int32 or uint16 to save space. An
``nn.Embedding`` accepts int32 and int64 indices alike, but cross entropy's
class-index targets must be int64 ("Long"), so the loader converts once.
"""

import numpy as np
import torch


def as_token_ids(array: np.ndarray) -> torch.Tensor:
    """A NumPy integer array of token ids -> an int64 tensor of the same shape."""
    return torch.from_numpy(array).long()  # int64: what cross_entropy's targets need


def narrow_ids(ids: np.ndarray, dtype: type = np.uint16) -> np.ndarray:
    """Store token ids in a narrower integer type, refusing any id it cannot hold.

    Args:
        ids: (N,) integer ids.
        dtype: the NumPy integer type to store them in.

    Raises:
        ValueError: an id is negative or above ``dtype``'s largest value.
    """
    info = np.iinfo(dtype)
    if ids.size and (ids.min() < info.min or ids.max() > info.max):
        raise ValueError(f"token ids must lie in {info.min} .. {info.max} to fit {np.dtype(dtype).name}, "
                         f"and one is {int(ids.max())}; keep a wider type for this vocabulary")
    return ids.astype(dtype)
