"""The data links: TOKENIZER and ALIGNMENT (seed 004, "Using AI on a generated
language model", links 1 and 2)."""

from __future__ import annotations

import torch

from exercises.audit.report import Link
from exercises.audit.subject import Subject
from exercises.outcome import first_line


def tokenizer(s: Subject) -> Link:
    """TOKENIZER: decode(encode(text)) == text on the corpus, and every id lies in [0, V)
    and inside the token table, before any forward pass reads them.

    The tokenizer is the factory's when it returned one, else the tutor's
    CharTokenizer. Fails when the round trip loses text, when encoding
    raises, or when an id (or the tokenizer's vocabulary) reaches past the
    model's V logits or its token table's rows.
    """
    tok = s.tokenizer
    try:
        ids = tok.encode(s.text)
        round_trip = tok.decode(ids.tolist()) == s.text
    except Exception as exc:
        return Link("TOKENIZER", "FAIL", f"{tok.source} cannot round-trip the corpus: {first_line(exc)[:160]}",
                    [["tokenizer", tok.source]])
    lo, hi = int(ids.min()), int(ids.max())
    vocab = tok.vocab_size
    rows = s.rows if s.rows is not None else s.V
    in_range = lo >= 0 and hi < min(s.V, rows)
    ok = round_trip and in_range and vocab <= min(s.V, rows)
    if ok:
        verdict = f"decode(encode(text)) == text on {len(s.text):,} chars; ids [{lo}, {hi}] within V={s.V}"
    elif not round_trip:
        verdict = "round trip fails"
    elif rows < min(vocab, s.V) or hi >= rows:
        verdict = (f"the token table has {rows} rows but the tokenizer has {vocab} ids: ids {rows}..{vocab - 1} "
                   "index past it")
    else:
        verdict = f"ids reach {max(hi, vocab - 1)} but the model has only V={s.V} rows"
    evidence = [["round trip", str(round_trip)], ["id range", f"[{lo}, {hi}]"],
                ["tokenizer vocab / model V", f"{vocab} / {s.V}"], ["dtype", str(ids.dtype)]]
    if s.rows is not None:
        evidence.append(["token table rows", str(s.rows)])
    if tok.source != "the tutor's CharTokenizer":
        evidence.append(["tokenizer", tok.source])
    return Link("TOKENIZER", "ok" if ok else "FAIL", verdict, evidence)


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
