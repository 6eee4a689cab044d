"""Bug (EVAL): the MLP calls F.dropout(..., training=True), so dropout runs in eval mode too."""

from torch.nn import functional as F

import zoo_nano


class MLP(zoo_nano.MLP):
    def forward(self, x):
        return F.dropout(self.c_proj(self.activation(self.c_fc(x))), p=0.1, training=True)


class Block(zoo_nano.Block):
    mlp_class = MLP


class GPT(zoo_nano.GPT):
    block_class = Block


def build():
    return zoo_nano.build(model_class=GPT)
