"""Bug (LOOP): gradient accumulation over 2 microbatches without dividing each loss
by 2: the step's gradient is twice the batch's (a ratio of 2, inside a band that
only k = 4 would have caught)."""

import zoo_nano


def build():
    model, optimizer = zoo_nano.build()

    def train_step(model, optimizer, batch, micro=2):
        x, y = batch
        for xb, yb in zip(x.chunk(micro), y.chunk(micro)):
            _, loss = model(xb, yb)
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return {"model": model, "optimizer": optimizer, "train_step": train_step}
