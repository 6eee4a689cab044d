"""Bug (LOOP): gradient accumulation over 4 microbatches without dividing each loss
by 4: the step's gradient is 4 times the batch's."""

import zoo_nano


def build():
    model, optimizer = zoo_nano.build()

    def train_step(model, optimizer, batch, micro=4):
        x, y = batch
        for xb, yb in zip(x.chunk(micro), y.chunk(micro)):
            _, loss = model(xb, yb)
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return {"model": model, "optimizer": optimizer, "train_step": train_step}
