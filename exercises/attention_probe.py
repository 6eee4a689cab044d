"""A check for the set ``attention``: a causality probe that must change something to prove anything.

Seed 004, "The model: attention", Level 4: change only the tokens after a
position, and require the logits up to it to stay put *and* some later logit
to move. The second half is what tells a causal model from a probe that
changed nothing.
"""

import torch

from exercises.context import Context
from exercises.outcome import Measurement, note, table

#: The probe keeps positions 0..7 of a (2, 16) batch and changes 8..15.
POSITION, T = 7, 16


class ReadsAhead(torch.nn.Module):
    """The engine GPT fed its ids shifted left by one: position t reads token t + 1.

    A leak built on purpose, the kind the probe exists to catch: the logits
    at position 7 depend on token 8. Same ``config`` and modes as the GPT.
    """

    def __init__(self, gpt) -> None:
        super().__init__()
        self.gpt = gpt
        self.config = gpt.config

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        """(B, T) ids -> the GPT's (logits (B, T, V), loss) on ids rolled one step left."""
        return self.gpt(torch.roll(idx, shifts=-1, dims=1), targets)


def probe_changes_nothing(ctx: Context) -> Measurement:
    """``future_token_intervention`` on the engine GPT and on a model that reads one token ahead.

    The small engine (2 layers, C = 64, V = 37, eval mode) and the same GPT
    behind ``ReadsAhead`` are each probed at position 7 of a random (2, 16)
    batch. Observed, for the model that reads ahead: ``[prefix unchanged
    (max |Δ| <= tol), suffix changed (max |Δ| > tol), the caller's batch
    still holds its ids after the probe]``. Evidence: both models' deltas and
    verdicts.
    """
    from engine.instruments.intervention import future_token_intervention, require_finite

    gpt = ctx.gpt("small").eval()
    V = gpt.config.vocab_size
    g = torch.Generator().manual_seed(ctx.seed)
    batch = torch.randint(0, V, (2, T), generator=g).to(ctx.device)
    results, intact = {}, {}
    for name, model in (("engine GPT", gpt), ("reads one token ahead", ReadsAhead(gpt))):
        idx = batch.clone()
        results[name] = future_token_intervention(model, idx, position=POSITION,
                                                  generator=torch.Generator().manual_seed(ctx.seed))
        intact[name] = torch.equal(idx, batch)
        require_finite(results[name])  # the answer is the probe's flags: NaN logits set none of them
    rows = [[name, f"{p['prefix_max_delta']:.3g}", f"{p['suffix_max_delta']:.3g}", p["causal"]]
            for name, p in results.items()]
    leaky = results["reads one token ahead"]
    evidence = [
        table(f"Tokens after position {POSITION} changed (tolerance {leaky['tolerance']:g})",
              ["model", "prefix max |Δ|", "suffix max |Δ|", "causal"], rows),
        table("The probe's own flags, model that reads ahead", ["flag", "value"], [
            ["prefix_ok (past did not move)", leaky["prefix_ok"]],
            ["informative (future moved)", leaky["informative"]],
            ["caller's batch unchanged afterwards", intact["reads one token ahead"]]]),
        note("A probe that reported only the prefix would call a leaky model causal whenever it failed "
             "to change the input: the suffix row is what says the intervention happened."),
    ]
    return Measurement(observed=[bool(leaky["prefix_ok"]), bool(leaky["informative"]),
                                 intact["reads one token ahead"]], evidence=evidence)
