"""A training recipe with two optimizers and two schedulers, for LOOP's test zoo: modded-nanogpt's split
(Muon for the hidden 2-D matrices, AdamW for the embeddings, the head and every 1-D tensor, each with its
own warmup schedule), written here in that style around zoo_nano.py's GPT, with ``torch.optim.Muon``. The
factory hands both as lists; train_step steps them in order, as modded-nanogpt's loop does
(``for opt, sched in zip(optimizers, schedulers): opt.step(); sched.step()``), then zeroes the gradients.

``build`` is clean; ``build_zero_grad_first`` zeroes the gradients between backward() and the steps, so no
step ever sees a gradient; ``build_single_zero_grad_first`` makes the same mistake with one AdamW.
"""

import torch

import zoo_nano


def recipe(zero_grad_first=False, single=False):
    model, optimizer = zoo_nano.build()
    if single:  # one AdamW, handed as one object, its train_step as nanoGPT's with the zero_grad misplaced
        def train_step(model, optimizer, batch):
            _, loss = model(*batch)
            loss.backward()
            optimizer.zero_grad(set_to_none=True)
            optimizer.step()

        return {"model": model, "optimizer": optimizer, "train_step": train_step}
    tables = {id(model.transformer.wte.weight), id(model.transformer.wpe.weight), id(model.lm_head.weight)}
    params = list({id(p): p for p in model.parameters()}.values())
    hidden = [p for p in params if p.dim() == 2 and id(p) not in tables]
    rest = [p for p in params if p.dim() != 2 or id(p) in tables]
    optimizers = [torch.optim.Muon(hidden, lr=0.02, momentum=0.95),
                  torch.optim.AdamW(rest, lr=3e-3, betas=(0.9, 0.95), weight_decay=0.0)]
    schedulers = [torch.optim.lr_scheduler.LambdaLR(opt, lambda step: min(1.0, (step + 1) / 10)) for opt in optimizers]

    def train_step(model, optimizers, batch):
        x, y = batch
        _, loss = model(x, y)
        loss.backward()
        if zero_grad_first:
            model.zero_grad(set_to_none=True)
        for opt, sched in zip(optimizers, schedulers):
            opt.step()
            sched.step()
        model.zero_grad(set_to_none=True)

    return {"model": model, "optimizer": optimizers, "scheduler": schedulers, "train_step": train_step}


def build():
    return recipe()


def build_zero_grad_first():
    return recipe(zero_grad_first=True)


def build_single_zero_grad_first():
    return recipe(zero_grad_first=True, single=True)
