"""The data links: TOKENIZER and ALIGNMENT (seed 004, "Using AI on a generated
language model", links 1 and 2)."""

from __future__ import annotations

import torch

from exercises.audit.report import Link
from exercises.audit.subject import Subject


def tokenizer(s: Subject) -> Link:
    """TOKENIZER: decode(encode(text)) == text on the corpus, and every id lies in [0, V).

    Fails when the round trip loses text, or when an id (or the tokenizer's
    vocabulary) reaches past the model's V rows.
    """
    ids = s.tokenizer.encode_tensor(s.text)
    round_trip = s.tokenizer.decode(ids.tolist()) == s.text
    lo, hi = int(ids.min()), int(ids.max())
    in_range = lo >= 0 and hi < s.V
    ok = round_trip and in_range and s.tokenizer.vocab_size <= s.V
    verdict = (f"decode(encode(text)) == text on {len(s.text):,} chars; ids [{lo}, {hi}] within V={s.V}" if ok else
               "round trip fails" if not round_trip else
               f"ids reach {hi} but the model has only V={s.V} rows")
    return Link("TOKENIZER", "ok" if ok else "FAIL", verdict,
                [["round trip", str(round_trip)], ["id range", f"[{lo}, {hi}]"],
                 ["tokenizer vocab / model V", f"{s.tokenizer.vocab_size} / {s.V}"], ["dtype", str(ids.dtype)]])


def alignment(s: Subject) -> Link:
    """ALIGNMENT: on the real batch, ``x[:, 1:] == y[:, :-1]`` (the targets are the inputs shifted by one)."""
    x, y = s.x, s.y
    ok = x.shape == y.shape and torch.equal(x[:, 1:], y[:, :-1])
    same = torch.equal(x, y)
    verdict = "x[:, 1:] == y[:, :-1] on a real batch" if ok else (
        "y == x: the targets are the inputs (no shift)" if same else "x[:, 1:] != y[:, :-1]")
    return Link("ALIGNMENT", "ok" if ok else "FAIL", verdict,
                [["x, y shapes", f"{tuple(x.shape)}, {tuple(y.shape)}"], ["x[0, :8]", str(x[0, :8].tolist())],
                 ["y[0, :8]", str(y[0, :8].tolist())]])
