"""Bug (LOOP): gradients are clipped after optimizer.step(), when the step has already
used them unclipped."""

import torch

import zoo_nano


def build():
    model, optimizer = zoo_nano.build()

    def train_step(model, optimizer, batch):
        x, y = batch
        optimizer.zero_grad(set_to_none=True)
        _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)

    return {"model": model, "optimizer": optimizer, "train_step": train_step}
