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
