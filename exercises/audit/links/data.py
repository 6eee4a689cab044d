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
                    [["tokenizer", tok.source]],
                    advice="the tokenizer raised on the audit's corpus: give it a vocabulary that covers every "
                           "character it may meet (or an unknown-token id), or return the tokenizer the model was "
                           "trained with from the factory")
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
    if ok:
        advice = ""
    elif not round_trip:
        lost = next((i for i, (a, b) in enumerate(zip(s.text, tok.decode(ids.tolist()))) if a != b), None)
        advice = ("decode(encode(text)) loses text" + (f" from character {lost} ({s.text[lost]!r})"
                                                       if lost is not None else " at its end")
                  + ": encode and decode must be inverse maps (one table for both, no characters dropped or "
                    "merged, no special tokens added on decode)")
    elif rows < min(vocab, s.V) or hi >= rows:
        advice = f"make the token table at least {vocab} rows (nn.Embedding(vocab_size, n_embd) from the tokenizer's " \
                 "vocab_size), or use a tokenizer with as many ids as the table has rows"
    else:
        advice = f"build the model with V = the tokenizer's vocab_size ({vocab}) or more (--vocab says which V to audit)"
    return Link("TOKENIZER", "ok" if ok else "FAIL", verdict, evidence, advice=advice)


def alignment(s: Subject) -> Link:
    """ALIGNMENT: on the real batch, ``x[:, 1:] == y[:, :-1]`` (the targets are the inputs shifted by one)."""
    x, y = s.x, s.y
    ok = x.shape == y.shape and torch.equal(x[:, 1:], y[:, :-1])
    same = torch.equal(x, y)
    verdict = "x[:, 1:] == y[:, :-1] on a real batch" if ok else (
        "y == x: the targets are the inputs (no shift)" if same else "x[:, 1:] != y[:, :-1]")
    if ok:
        advice = ""
    elif x.shape != y.shape:
        advice = f"x and y must have the same shape (B, T), got {tuple(x.shape)} and {tuple(y.shape)}: take both " \
                 "windows of block_size tokens, y starting one token after x"
    else:
        shift = next((k for k in range(-3, 4) if k and torch.equal(x[:, max(k, 0):x.size(1) + min(k, 0)],
                                                                     y[:, max(-k, 0):y.size(1) + min(-k, 0)])), None)
        advice = ("y must be x moved one token on: x = data[i:i+T], y = data[i+1:i+T+1]"
                  + ("; here y is x itself" if same else
                     f"; here y is x moved by {shift}" if shift is not None else ""))
    return Link("ALIGNMENT", "ok" if ok else "FAIL", verdict,
                [["x, y shapes", f"{tuple(x.shape)}, {tuple(y.shape)}"], ["x[0, :8]", str(x[0, :8].tolist())],
                 ["y[0, :8]", str(y[0, :8].tolist())]], advice=advice)
