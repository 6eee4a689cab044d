"""The training step the performance ledger times (seed 004, "Performance").

One place that says what is being measured: the model's size and the batch
one optimizer step sees. The ledger splits that step into forward, loss,
backward and optimizer; which phase dominates depends on how many tokens a
step processes against how many parameters the optimizer must update.
"""

# The seed's model (4 layers, C = 128, V = 37) on a batch of 8 windows of 64 tokens.
WORKLOAD = dict(n_layer=4, n_embd=128, batch=8, block=64)

#: The optimizer's learning rate (its value does not change the cost of a step).
LR = 1e-3


def describe() -> str:
    """One line naming the workload, e.g. '4L C=128, batch 8 x 64 (512 tokens/step)'."""
    w = WORKLOAD
    return (f"{w['n_layer']}L C={w['n_embd']}, batch {w['batch']} x {w['block']} "
            f"({w['batch'] * w['block']} tokens/step)")
