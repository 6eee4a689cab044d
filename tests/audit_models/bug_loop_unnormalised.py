"""Bug (LOOP): gradient accumulation over k microbatches without dividing each loss
by k: the step's gradient is k times the batch's.

``build`` accumulates k = 4; ``build_two`` k = 2: a ratio of 2, which a
normalisation band widened to (0.4, 2.5) would let through while k = 4
still failed it."""

import zoo_nano


def accumulating(k):
    """A factory whose ``train_step`` sums the unscaled losses of ``k`` microbatches before one step."""

    def build():
        model, optimizer = zoo_nano.build()

        def train_step(model, optimizer, batch, micro=k):
            x, y = batch
            for xb, yb in zip(x.chunk(micro), y.chunk(micro)):
                _, loss = model(xb, yb)
                loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)

        return {"model": model, "optimizer": optimizer, "train_step": train_step}

    return build


build = accumulating(4)
build_two = accumulating(2)
