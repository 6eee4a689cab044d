"""Checks for the set ``training`` — the training loop (seed 001; seed 004 ch. 11)."""

import torch

from exercises.context import Context
from exercises.outcome import Measurement, note, table

HAND_UPDATE = [-0.1, 0.2, -0.1]  # logits [0, 0, 0], target 1, SGD lr 0.3 (seed 001, Part 1)


def skip_zero_grad(ctx: Context) -> Measurement:
    """Observe the ratio of the second gradient to the first at unchanged weights.

    Logits [0, 0, 0] (float64), target 1, SGD lr 0.3. After the two passes one
    SGD step is taken with whatever ``.grad`` holds and compared with the hand
    update [-0.1, 0.2, -0.1] (seed 001, Part 1 and Part 2).
    """
    from exercises.snippets import accumulate

    device = torch.device(ctx.device)
    logits = torch.nn.Parameter(torch.zeros(1, 3, dtype=torch.float64, device=device))
    target = torch.tensor([1], device=device)
    optimizer = torch.optim.SGD([logits], lr=0.3)
    before = logits.detach().clone()
    first, second = accumulate.two_gradients(logits, target, optimizer)
    unchanged = torch.equal(logits.detach(), before)
    ratio = (second / first)[0]
    optimizer.step()
    after = logits.detach()[0].tolist()
    hand = torch.tensor(HAND_UPDATE, dtype=torch.float64)
    matches_hand = torch.allclose(logits.detach()[0].cpu(), hand, atol=1e-12)
    evidence = [
        table("Gradients at unchanged weights", ["pass", "logit 0", "logit 1", "logit 2"],
              [["first", *first[0].tolist()], ["second", *second[0].tolist()], ["second / first", *ratio.tolist()]]),
        table("One SGD step (lr 0.3) with what .grad holds", ["", "logit 0", "logit 1", "logit 2"],
              [["after the step", *after], ["hand update", *HAND_UPDATE]]),
        table("Facts", ["question", "answer"],
              [["weights unchanged by backward", unchanged], ["step matches the hand update", matches_hand]]),
    ]
    if ratio[1].item() != 1.0:
        evidence.append(note("Without the reset, backward adds the same gradient again: the step is twice as big."))
    return Measurement(observed=round(ratio[1].item(), 12), evidence=evidence)
