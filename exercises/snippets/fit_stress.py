"""Fit is not generalisation: a controlled mismatch (seed 001, "The idea in
plain words" and Part 5 of its lab).

A two-token bigram is trained on the alternating sequence 0 1 0 1 ... and
also scored on a stress sequence of repeated zeros, a pattern it never saw.
Training rewards "after 0 comes 1", which is exactly wrong on the stress
sequence. Scoring only on the training sequence would hide that.
"""

import torch

from engine.train import evaluate, train_step
from exercises.snippets.bigram import Bigram, shifted_pairs

TRAIN_IDS = [0, 1, 0, 1, 0, 1, 0, 1, 0]
STRESS_IDS = [0, 0, 0, 0, 0, 0, 0, 0, 0]


def experiment(steps: int = 40, lr: float = 1.0) -> dict[str, list[float]]:
    """Train Bigram(2) in float64 with SGD on TRAIN_IDS; score both sets after every step.

    The update is the engine's ``train_step``, the loop seed 001 uses for
    its bigram and its GPT alike.

    Returns:
        ``{"train": [...], "stress": [...]}``: ``steps + 1`` losses each (nats
        per token), before training and after each update.
    """
    model = Bigram(2).double()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    train = shifted_pairs(torch.tensor([TRAIN_IDS]))
    stress = shifted_pairs(torch.tensor([STRESS_IDS]))
    curves = {"train": [evaluate(model, *train)], "stress": [evaluate(model, *stress)]}
    for _ in range(steps):
        train_step(model, optimizer, *train)
        curves["train"].append(evaluate(model, *train))
        curves["stress"].append(evaluate(model, *stress))
    return curves
