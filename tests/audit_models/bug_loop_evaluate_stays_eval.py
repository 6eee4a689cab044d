"""Bug (LOOP): evaluate() switches the model to eval mode and never back, so dropout
stays off for the rest of training."""

import torch

import zoo_nano


def build():
    parts = zoo_nano.with_loop(*zoo_nano.build())

    def evaluate(model):
        model.eval()
        with torch.no_grad():
            idx = torch.zeros(1, 8, dtype=torch.long)
            return model(idx, idx)[1].item()

    parts["evaluate"] = evaluate
    return parts
