"""Bug (INIT): the loss masks padded targets with a (N, 1) mask against an (N,) loss:
the product broadcasts to (N, N), whose mean is the real tokens' mean times (n / N)^2
for n real tokens of N. Without padding that is the mean; with padding it is not."""

from torch.nn import functional as F

import zoo_nano


class BroadcastLoss(zoo_nano.GPT):
    def loss(self, logits, targets):
        per_token = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), reduction="none")  # (N,)
        mask = (targets.view(-1, 1) != -100).float()  # (N, 1)
        return (per_token * mask).mean()  # (N, N) before the mean


def build():
    return zoo_nano.build(model_class=BroadcastLoss)
