"""Bug (LOOP): the training step never zeroes the gradients, so each step's gradient
is added to the last one's."""

import zoo_nano


def build():
    model, optimizer = zoo_nano.build()

    def train_step(model, optimizer, batch):
        x, y = batch
        _, loss = model(x, y)
        loss.backward()
        optimizer.step()

    return {"model": model, "optimizer": optimizer, "train_step": train_step}
