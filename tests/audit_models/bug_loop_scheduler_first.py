"""Bug (LOOP): the scheduler steps before the optimizer, so the first update already
uses the schedule's second learning rate (and the warmup's first step is skipped)."""

import torch

import zoo_nano


def build():
    model, optimizer = zoo_nano.build()
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / 10))

    def train_step(model, optimizer, batch):
        x, y = batch
        optimizer.zero_grad(set_to_none=True)
        _, loss = model(x, y)
        loss.backward()
        scheduler.step()
        optimizer.step()

    return {"model": model, "optimizer": optimizer, "train_step": train_step, "scheduler": scheduler}
