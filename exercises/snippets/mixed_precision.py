"""A forward pass in bfloat16 where it is safe (seed 000 §7, "Initialization,
precision, and evaluation mode").

``torch.autocast`` leaves the weights in float32 and lets each operation
choose its dtype: matrix products run in bfloat16, while operations that
need range or precision (the cross entropy, on this CPU) run in float32.
Casting the whole model to bfloat16 instead makes every operation, the loss
included, compute in bfloat16.
"""

import torch


def bf16_forward(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor):
    """(logits, loss) of ``model(x, targets=y)`` with bfloat16 autocast on x's device type."""
    device_type = x.device.type
    with torch.autocast(device_type, dtype=torch.bfloat16):  # each op picks its dtype
        return model(x, targets=y)
