"""A shared trunk with one output head per task, looked up by name (seed 000 §3,
"Containers are part of model structure").

Modules held in a container are children of the model only if the container
is one ``nn.Module`` knows: ``nn.ModuleDict`` registers each entry under its
key (``heads.next.weight``), so everything that walks the children —
``parameters()``, the ``state_dict``, ``.to()``, ``.double()``, ``.train()`` —
reaches it; a plain Python dict attached to the module is just an attribute.
"""

import torch
from torch import nn


class TaskHeads(nn.Module):
    """(B, C) features -> {task: (B, n_out)} logits, one ``nn.Linear`` per task after a shared trunk."""

    def __init__(self, n_embd: int, outputs: dict[str, int]) -> None:
        super().__init__()
        self.trunk = nn.Linear(n_embd, n_embd)
        self.heads = nn.ModuleDict({task: nn.Linear(n_embd, n) for task, n in outputs.items()})

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        h = torch.relu(self.trunk(x))  # (B, C)
        return {task: head(h) for task, head in self.heads.items()}
