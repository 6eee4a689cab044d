"""Features from a frozen encoder, computed once and then trained on (seed
000 §7, "Initialization, precision, and evaluation mode").

``torch.no_grad()`` records no graph, and the tensors it makes are ordinary
tensors: a trainable head may use them later and autograd saves them for its
backward. ``torch.inference_mode()`` goes further, and the tensors it makes
are marked as inference tensors, which autograd refuses to save.
"""

import torch


def features(encoder: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The encoder's output for x, without a graph back into the encoder.

    Args:
        encoder: any module; x: its input, e.g. (N, C).

    Returns:
        The encoder's output, e.g. (N, C), not requiring grad.
    """
    with torch.no_grad():  # no graph; the result is an ordinary tensor
        return encoder(x)
