"""Bug (LOOP): with a GradScaler, gradients are clipped before scaler.unscale_(), so the
clip threshold is compared with gradients still multiplied by the loss scale."""

import torch
from torch.nn.utils import clip_grad_norm_

import zoo_nano


def build():
    model, optimizer = zoo_nano.build()
    scaler = torch.amp.GradScaler("cpu")

    def train_step(model, optimizer, batch):
        x, y = batch
        optimizer.zero_grad(set_to_none=True)
        _, loss = model(x, y)
        scaler.scale(loss).backward()
        clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()

    return {"model": model, "optimizer": optimizer, "train_step": train_step, "scaler": scaler}
