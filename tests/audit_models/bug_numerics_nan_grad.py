"""Bug (GRADIENTS): a square-root activation guarded by torch.where. The forward is
finite (where picks 0 for negative inputs), but the backward multiplies the NaN
gradient of sqrt at a negative input by 0, which is NaN."""

import torch

import zoo_nano


class SqrtMLP(zoo_nano.MLP):
    def activation(self, h):
        return torch.where(h > 0, h.sqrt(), torch.zeros_like(h))


class Block(zoo_nano.Block):
    mlp_class = SqrtMLP


class GPT(zoo_nano.GPT):
    block_class = Block


def build():
    return zoo_nano.build(model_class=GPT)
