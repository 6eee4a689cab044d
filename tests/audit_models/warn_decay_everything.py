"""Clean but for taste: AdamW with weight decay 0.1 on every parameter, LayerNorm gains,
biases and the embedding tables included. OWNERSHIP warns; nothing fails."""

import torch

import zoo_nano


def build():
    model = zoo_nano.GPT()
    return model, torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
