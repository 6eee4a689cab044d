"""Checks for the set ``beyond``: the affine nearest-neighbour score against
rounding, and ties (seed 000 §8, "Floating-point cancellation and ties
deserve separate tests")."""

import torch

from exercises.context import Context
from exercises.outcome import Measurement, note, table


def cancellation_ties(ctx: Context) -> Measurement:
    """The snippet's ``affine_scores`` far from the origin, against the direct distance.

    Two exemplars A = (c, 0) and B = (c + 1, 0), a query (c + 0.6, 0): B is
    nearer (0.4 against 0.6). At c = 10,000 the score 2 q·x − ‖x‖² is a
    difference of two numbers near 10⁸ whose true gap is 0.2. With one
    coordinate zero, every product and sum is a single IEEE rounding, so
    the result is the same on every machine. Observed: ``[affine agrees with
    the direct nearest in float32, in float64, in float32 after subtracting
    the exemplars' mean]``. Evidence: the scores, and which index argmax
    returns when two scores are equal. Seed 000 §8.
    """
    from exercises.snippets.neighbours import affine_scores

    c = 10_000.0

    def agree(dtype, centre: bool):
        ex = torch.tensor([[c, 0.0], [c + 1.0, 0.0]], dtype=torch.float64)
        q = torch.tensor([[c + 0.6, 0.0]], dtype=torch.float64)
        if centre:
            mean = ex.mean(0)
            ex, q = ex - mean, q - mean  # distances do not change; magnitudes do
        ex, q = ex.to(dtype).to(ctx.device), q.to(dtype).to(ctx.device)
        scores = affine_scores(q, ex)[0]  # (2,)
        direct = ((q - ex) ** 2).sum(-1)  # (2,)
        return int(scores.argmax()) == int(direct.argmin()), scores.tolist(), int(scores.argmax())

    cases = [("float32", torch.float32, False), ("float64", torch.float64, False),
             ("float32, centred", torch.float32, True)]
    results = [agree(dtype, centre) for _, dtype, centre in cases]
    rows = [[name, f"{s[0]:.2f} / {s[1]:.2f}", "AB"[k], ok] for (name, _, _), (ok, s, k) in zip(cases, results)]
    tie = affine_scores(torch.tensor([[1.0, 2.0]]), torch.tensor([[1.0, 2.0], [1.0, 2.0], [0.0, 0.0]]))
    evidence = [
        table(f"A = ({c:,.0f}, 0), B = A + (1, 0), query A + (0.6, 0): B is nearer",
              ["dtype", "score A / score B", "argmax", "agrees"], rows),
        table("Two identical exemplars (a tie)", ["scores", "argmax"],
              [[", ".join(f"{v:g}" for v in tie[0].tolist()), int(tie.argmax())]]),
        note("argmax returns the first of equal maxima, so a tie is broken by the exemplars' order, not by "
             "the data: a rounding tie looks like a confident answer. Centring keeps the numbers small "
             "enough that the 0.2 gap survives float32."),
    ]
    return Measurement(observed=[r[0] for r in results], evidence=evidence)


def advantage_path(ctx: Context) -> Measurement:
    """Which parameters the snippet's ``policy_loss`` sends gradient to.

    A policy: logits (B, G) = a (B, G) parameter; its log-softmax over G
    gives each response's log-probability. A value head: ``nn.Linear(4, 1)``
    on (B, 4) prompt features gives values (B, 1). Rewards (B, G) are fixed
    numbers. B = 3, G = 4, from a generator seeded with ``ctx.seed``.
    Observed: whether the policy loss's backward leaves a nonzero gradient
    on the value head. Evidence: gradient norms on both. Seed 000 §8 ("A
    reward or advantage used as fixed policy-gradient feedback should not
    accidentally introduce a new differentiation path").
    """
    from exercises.snippets.policy_gradient import policy_loss

    g = torch.Generator().manual_seed(ctx.seed)
    B, G = 3, 4
    policy = torch.nn.Parameter(torch.randn(B, G, generator=g).to(ctx.device))
    value_head = torch.nn.Linear(4, 1).to(ctx.device)
    features = torch.randn(B, 4, generator=g).to(ctx.device)
    rewards = torch.randint(0, 2, (B, G), generator=g).float().to(ctx.device)
    logp = torch.log_softmax(policy, dim=1)  # (B, G)
    values = value_head(features)  # (B, 1)
    policy_loss(logp, rewards, values).backward()
    value_grad = torch.cat([p.grad.flatten() for p in value_head.parameters() if p.grad is not None]) \
        if any(p.grad is not None for p in value_head.parameters()) else torch.zeros(1)
    reached = bool(value_grad.abs().max() > 0)
    evidence = [
        table("After policy_loss(...).backward()", ["parameters", "gradient norm"], [
            ["policy logits (B, G)", policy.grad.norm().item()],
            ["value head (weight and bias)", value_grad.norm().item()]]),
    ]
    if reached:
        evidence.append(note("The policy's loss pushed on the value head. Each log-probability is negative, so "
                             "-(reward - value) · logp falls whenever a value rises: a step along this "
                             "gradient pushes every value upward, biased high by the policy's loss, and the values stop estimating "
                             "the expected reward."))
    return Measurement(observed=reached, evidence=evidence)


def group_spread(ctx: Context) -> Measurement:
    """Standardised group advantages from ``snippets/advantages.py`` when a group has no spread.

    Rewards (B = 3, G = 4): prompt 0 [1, 1, 1, 0], prompt 1 [0, 0, 0, 1],
    prompt 2 [1, 1, 1, 1] (every response equal: spread 0). Observed:
    ``[every advantage of prompt 2 is finite, the advantage of prompt 0's
    odd response]``. Evidence: each row under the subject, and prompt 0's
    row under the other variance convention (``unbiased=True``). Seed 000
    §8 ("Standardization needs an explicit convention for variance, an
    epsilon, and a policy for degenerate groups").
    """
    from exercises.snippets.advantages import advantages

    rewards = torch.tensor([[1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0]],
                           device=ctx.device)
    _, adv = advantages(rewards)
    finite = bool(torch.isfinite(adv[2]).all())
    odd = round(adv[0, 3].item(), 6)
    mean0 = rewards[0].mean()
    sample = (rewards[0] - mean0) / rewards[0].std(unbiased=True)
    evidence = [
        table("Advantages (B = 3 prompts, G = 4 responses)", ["prompt", "rewards", "advantages"],
              [[b, " ".join(f"{v:g}" for v in rewards[b].tolist()), " ".join(f"{v:+.4f}" for v in adv[b].tolist())]
               for b in range(3)]),
        table("Prompt 0 under two variance conventions", ["std", "spread", "odd response"], [
            ["population (unbiased=False)", round(rewards[0].std(unbiased=False).item(), 4), odd],
            ["sample (unbiased=True)", round(rewards[0].std(unbiased=True).item(), 4), round(sample[3].item(), 4)]]),
        note("Prompt 2's rewards equal their mean, so every numerator is 0 and the spread is 0: 0 / 0 is NaN, "
             "and one NaN advantage makes the policy loss, and every gradient, NaN."),
    ]
    return Measurement(observed=[finite, odd], evidence=evidence)
