"""Bug (UPDATE): the model and its optimizer are restored from a float32 checkpoint,
then the model is moved to float64 with .double(): the optimizer's state
(exp_avg, exp_avg_sq) stays float32."""

import torch

import zoo_nano


def build():
    model, optimizer = zoo_nano.build()
    idx = torch.zeros(2, 8, dtype=torch.long)
    _, loss = model(idx, idx)
    loss.backward()
    optimizer.step()  # the state a checkpoint would carry
    optimizer.zero_grad(set_to_none=True)
    model.double()
    return model, optimizer
