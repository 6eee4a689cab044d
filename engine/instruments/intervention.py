"""Causality by intervention.

Seed 004, "The model: attention", Level 4: a triangular mask is a claim; the
evidence is behavioural. Change only the tokens after a position, rerun, and
require the logits up to that position to stay put (within a tolerance)
while some later logit moves (otherwise the test proved nothing).

A NaN compares false with every tolerance, and inf - inf is NaN: logits that
are not finite say neither that the past moved nor that it stayed, so the
probe counts them and leaves its verdicts unset (:func:`require_finite`
turns that into one sentence for a check whose answer rests on them).
"""

from __future__ import annotations

import torch


def future_token_intervention(model, idx: torch.Tensor, position: int,
                              generator: torch.Generator | None = None,
                              tol: float = 1e-5) -> dict:
    """Replace every token after ``position`` and measure how the logits move.

    Runs in eval mode under no_grad; the caller's mode is restored.

    Args:
        model: a ``GPT``.
        idx: (B, T) int64 token ids.
        position: last position that keeps its token, 0 <= position < T - 1.
        generator: CPU torch.Generator for the replacement ids.
        tol: largest prefix change (in logits) still counted as "did not move".

    Returns:
        {"position", "prefix_max_delta", "suffix_max_delta", "tolerance",
        "prefix_ok", "informative", "causal", "nan", "inf", "logits"}: deltas
        are max |delta logits| over positions 0..position and
        position+1..T-1; prefix_ok is prefix <= tol, informative is
        suffix > tol, causal is both; nan and inf count the non-finite
        entries of the two forwards' logits (of ``logits`` in all). When
        either count is nonzero, prefix_ok, informative and causal are None:
        no comparison of such logits says whether anything moved.

    Raises:
        ValueError: if position leaves no suffix to change.
    """
    B, T = idx.shape
    if not 0 <= position < T - 1:
        raise ValueError(f"position must be in [0, {T - 1}) for a sequence of length {T}, got {position}.")
    V = model.config.vocab_size

    # Shift each suffix id by a random nonzero amount mod V: always a different id.
    shift = torch.randint(1, V, (B, T - position - 1), generator=generator).to(idx.device)
    changed = idx.clone()
    changed[:, position + 1:] = (idx[:, position + 1:] + shift) % V

    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            before, _ = model(idx)  # (B, T, V)
            after, _ = model(changed)  # (B, T, V)
    finally:
        model.train(was_training)

    both = torch.stack([before, after])  # (2, B, T, V)
    nan = int(torch.isnan(both).sum().item())
    inf = int(torch.isinf(both).sum().item())
    delta = (after - before).abs()  # (B, T, V)
    prefix = delta[:, : position + 1].max().item()
    suffix = delta[:, position + 1:].max().item()
    finite = nan == 0 and inf == 0
    return {
        "position": position,
        "prefix_max_delta": prefix,
        "suffix_max_delta": suffix,
        "tolerance": tol,
        "prefix_ok": prefix <= tol if finite else None,
        "informative": suffix > tol if finite else None,
        "causal": (prefix <= tol and suffix > tol) if finite else None,
        "nan": nan,
        "inf": inf,
        "logits": both.numel(),
    }


def not_finite(probe: dict) -> str | None:
    """``probe``'s logits counted when some are not finite (``"3 NaN and 0 inf of 1184"``), else None."""
    if not probe["nan"] and not probe["inf"]:
        return None
    return f"{probe['nan']} NaN and {probe['inf']} inf of {probe['logits']}"


def require_finite(probe: dict) -> None:
    """Raise when ``probe``'s logits are not all finite: whether the past moved cannot then be said.

    Raises:
        FloatingPointError: one sentence with the counts, for a check whose answer rests on the probe.
    """
    counted = not_finite(probe)
    if counted is not None:
        raise FloatingPointError(f"the future-token test's logits are not finite ({counted} logits, both "
                                 "forwards), so it cannot say whether the past moved: a NaN compares false "
                                 "with every tolerance")
