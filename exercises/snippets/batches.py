"""Handing out batches filled into one reused NumPy buffer (seed 000 §2,
"Copying and detaching are independent operations": the NumPy boundary).

``torch.from_numpy(a)`` wraps the array's memory without copying, so the
tensor sees every later write to the array. ``torch.tensor(a)`` copies. A
loader that refills one buffer for every batch must copy, or every batch it
ever returned becomes the latest one.
"""

import numpy as np
import torch


class BufferedBatches:
    """Fills a preallocated float32 buffer of shape (B, T) for every batch."""

    def __init__(self, batch_size: int, length: int) -> None:
        self.buffer = np.zeros((batch_size, length), dtype=np.float32)

    def next_batch(self, values: np.ndarray) -> torch.Tensor:
        """Copy ``values`` (B, T) into the buffer; return it as a tensor.

        The returned tensor is independent of the buffer: the next call does
        not change it.
        """
        self.buffer[...] = values
        return torch.tensor(self.buffer)  # a copy: refills cannot reach it
