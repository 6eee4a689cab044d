"""A check for the set ``data``: the round trip, the contract that sees a silent tokenizer.

Seed 004, "Data: the tokenizer": a tokenizer must round-trip
(``decode(encode(s)) == s``) and produce ids in ``[0, V)``. The range check
alone passes a tokenizer that maps what it does not know to a real id; only
the round trip sees the text that was lost.
"""

import torch

from exercises.context import Context
from exercises.outcome import Measurement, first_line, note, table

SAMPLE_CHARS = 2_000


def unknown_characters(ctx: Context) -> Measurement:
    """Encode the whole corpus with ``engine.tokenizer.CharTokenizer`` fit on its first 2,000 characters.

    The corpus is ``make_corpus()`` (200,000 characters). Observed, a choice:
    ``a`` encoding raises KeyError; ``b`` it encodes, every id lies in
    [0, V) and the round trip holds; ``c`` it encodes, every id lies in
    [0, V), the round trip fails; ``d`` it encodes and some id is outside
    [0, V). Evidence: the sample's V, the characters it lacks, how many
    positions come back different, and where the first one is.
    """
    from engine.corpus import make_corpus
    from engine.tokenizer import CharTokenizer

    text = make_corpus(seed=ctx.seed)
    tok = CharTokenizer(text[:SAMPLE_CHARS])
    missing = sorted(set(text) - set(tok.chars))
    try:
        ids = tok.encode_tensor(text)  # (N,)
    except KeyError as exc:
        observed = "a"
        rows = [["encode(corpus)", first_line(exc, limit=120)]]
    else:
        in_range = bool(int(ids.min()) >= 0 and int(ids.max()) < tok.vocab_size)
        back = tok.decode(ids.tolist()) if in_range else ""
        lost = [i for i, (a, b) in enumerate(zip(text, back)) if a != b]
        observed = "d" if not in_range else ("b" if back == text else "c")
        first = lost[0] if lost else None
        rows = [["ids", f"{len(ids):,}, in [{int(ids.min())}, {int(ids.max())}] of V = {tok.vocab_size}"],
                ["every id in [0, V)", in_range],
                ["decode(encode(corpus)) == corpus", back == text],
                ["positions that came back different", f"{len(lost):,}"]]
        if first is not None:
            rows.append([f"first, at {first:,}", f"{text[first:first + 12]!r} came back {back[first:first + 12]!r}"])
    evidence = [
        table(f"A tokenizer fit on the first {SAMPLE_CHARS:,} characters", ["quantity", "value"],
              [["V (its vocabulary)", tok.vocab_size], ["corpus characters it lacks", " ".join(missing) or "none"]]
              + rows),
    ]
    if observed == "c":
        evidence.append(note("An embedding with V rows accepts every id this tokenizer produced: nothing "
                             "downstream raises, and a model would train on text whose unseen characters "
                             f"became {tok.itos[0]!r}."))
    return Measurement(observed=observed, evidence=evidence)
