"""Handing a tensor to NumPy (seed 000 §8, "a CPU NumPy array and a CUDA
tensor are not interchangeable").

NumPy reads host memory only. A tensor elsewhere (a CUDA device, or the
``meta`` device, which holds shapes and no data at all) must be copied to
the CPU first; ``.numpy()`` refuses anything else with a TypeError that says
so.
"""

import numpy as np
import torch


def to_numpy(t: torch.Tensor) -> np.ndarray:
    """A NumPy copy of ``t``: detached, then moved to host memory, then converted.

    Raises:
        NotImplementedError: for a ``meta`` tensor (there is no data to copy).
    """
    return t.detach().cpu().numpy()  # NumPy reads host memory only
