"""Clean control: the vocabulary is resized after building (new tied table and head),
and the optimizer is built after the resize, so it owns the new parameters."""

import torch.nn as nn

import zoo_nano


def build():
    model = zoo_nano.GPT(zoo_nano.Config(vocab_size=30))
    table = nn.Embedding(37, model.config.n_embd)
    nn.init.normal_(table.weight, std=0.02)
    table.weight.data[:30] = model.transformer.wte.weight.data
    model.transformer.wte = table
    model.lm_head = nn.Linear(model.config.n_embd, 37, bias=False)
    model.lm_head.weight = table.weight
    model.config.vocab_size = 37
    return model, zoo_nano.configure_optimizer(model)
