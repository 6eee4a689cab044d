"""modded-nanogpt's 2024-10-14 record (``train_gpt2.py``, vendored beside this file) at a tiny size, with its
recipe: AdamW on the head (tied to the token table) and Muon on the blocks, each with its own LambdaLR
schedule, stepped in order, gradients summed over microbatches and divided by their count.

The script trains on 8 GPUs when imported, so only its definitions (everything before its data loader) are
run, with ``torch.compile`` (which Muon's Newton-Schulz step is wrapped in) standing aside: the CPU here has
no compiler. Its rotary ``inv_freq`` is a plain attribute the model carries itself.
"""

import os
import sys
import warnings

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
#: The recipe's learning rate and its linear warmdown over the last steps, as the record sets them, shortened.
LEARNING_RATE, ITERATIONS, WARMDOWN = 0.0036, 150, 40


def _definitions() -> dict:
    path = os.path.join(HERE, "train_gpt2.py")
    with open(path) as f:
        source = f.read()
    namespace = {"__name__": "modded_nanogpt"}
    compile_, argv = torch.compile, sys.argv
    torch.compile = lambda fn=None, **kwargs: fn if fn is not None else (lambda f: f)
    sys.argv = [path]  # the script reads its own source from argv[0] to log it (a test worker's is '-c')
    try:
        with warnings.catch_warnings():  # its Newton-Schulz docstring holds a LaTeX-style backslash
            warnings.simplefilter("ignore", (DeprecationWarning, SyntaxWarning))
            code = compile(source[:source.index("def _peek_data_shard")], path, "exec")
        exec(code, namespace)
    finally:
        torch.compile, sys.argv = compile_, argv
    return namespace


def _schedule(it: int) -> float:
    return 1.0 if it < ITERATIONS - WARMDOWN else max(0.0, (ITERATIONS - it) / WARMDOWN)


def build(normalise: bool = True):
    ns = _definitions()
    torch.manual_seed(0)
    model = ns["GPT"](ns["GPTConfig"](vocab_size=64, n_layer=2, n_head=4, n_embd=64))
    optimizers = [torch.optim.AdamW(model.lm_head.parameters(), lr=LEARNING_RATE, betas=(0.9, 0.95), weight_decay=0),
                  ns["Muon"](model.transformer.h.parameters(), lr=0.1 * LEARNING_RATE, momentum=0.95)]
    schedulers = [torch.optim.lr_scheduler.LambdaLR(opt, _schedule) for opt in optimizers]

    def train_step(model, optimizers, batch, accumulation=2):
        """The record's training section: microbatches, gradients averaged, each optimizer and its
        scheduler stepped in order, then the gradients nulled."""
        x, y = batch
        model.train()
        for xs, ys in zip(x.chunk(accumulation), y.chunk(accumulation)):
            _, loss = model(xs, ys, return_logits=False)
            loss.backward()
        if normalise:
            for p in model.parameters():
                p.grad /= accumulation
        for opt, sched in zip(optimizers, schedulers):
            opt.step()
            sched.step()
        model.zero_grad(set_to_none=True)
        return loss

    return {"model": model, "optimizer": optimizers, "scheduler": schedulers, "train_step": train_step}


def build_unnormalised():
    """The planted bug: the microbatches' gradients summed and never divided by their count."""
    return build(normalise=False)
