"""Checks for the set ``data`` — the tokenizer and batching (seed 004, "Data").

Two boundaries sit before the model: text -> ids (the tokenizer's alphabet,
the embedding's rows) and ids -> (x, y) windows (the next-token shift). Each
check here feeds real corpus data across one of them and reports what held.
"""

import torch

from exercises.context import Context
from exercises.outcome import Measurement, first_line, note, table

SAMPLE_CHARS = 2_000


def tokenizer_sample(ctx: Context) -> Measurement:
    """Prepare the full corpus with ``prepare_text.prepare`` and see whether it encodes.

    The corpus is ``make_corpus()`` (200,000 characters). The evidence
    compares the corpus's alphabet with that of its first 2,000 characters
    and lists where each character missing from that sample first appears.
    Observed: the exception class ``prepare`` raises, or ``"none"``.
    Seed 004, "Data: the tokenizer" and Exercises, "Tokenizer forensics".
    """
    from engine.corpus import make_corpus
    from exercises.snippets import prepare_text

    text = make_corpus(seed=ctx.seed)
    try:
        tok, ids = prepare_text.prepare(text)
        round_trip = tok.decode(ids.tolist()) == text
        observed = "none"
        outcome = f"{len(ids):,} ids, V = {tok.vocab_size}, ids in [{int(ids.min())}, {int(ids.max())}], round trip {round_trip}"
    except Exception as exc:  # the observation is the exception itself
        observed = type(exc).__name__
        outcome = first_line(exc, limit=160)
    sample = set(text[:SAMPLE_CHARS])
    missing = sorted(set(text) - sample)
    evidence = [
        table("Alphabets", ["text", "characters", "distinct"],
              [["whole corpus", f"{len(text):,}", len(set(text))],
               [f"first {SAMPLE_CHARS:,} characters", f"{SAMPLE_CHARS:,}", len(sample)]]),
        table(f"Characters missing from the first {SAMPLE_CHARS:,}", ["character", "first position in the corpus"],
              [[repr(c), f"{text.index(c):,}"] for c in missing] or [["none", "-"]]),
        table("prepare(corpus)", ["outcome"], [[outcome]]),
    ]
    return Measurement(observed=observed, evidence=evidence)


def id_out_of_range(ctx: Context) -> Measurement:
    """Look every corpus id up in an embedding sized by ``embedding_rows``.

    The corpus (50,000 characters) is encoded with a tokenizer fit on all of
    it; ``embedding_rows.embedding_for(ids, 8)`` builds the table and every
    id is looked up. That plain ``nn.Embedding`` lookup runs on the CPU: on
    CUDA an out-of-range index is a device-side assert that poisons the
    whole context. For contrast the engine GPT, sized with the same row
    count, is fed a window holding the largest id on ``ctx.device`` (it
    checks ids itself before its embedding). Observed: the exception class
    of the plain lookup, or ``"none"``.
    Seed 004, "Data: the tokenizer" (an out-of-range id reaching the table).
    """
    from engine.corpus import make_corpus
    from engine.tokenizer import CharTokenizer
    from exercises.snippets import embedding_rows

    text = make_corpus(50_000, seed=ctx.seed)
    tok = CharTokenizer(text)
    ids = tok.encode_tensor(text)  # (N,)
    rows = embedding_rows.rows_needed(ids)
    table_ = embedding_rows.embedding_for(ids, 8)
    try:
        table_(ids[None])  # (1, N, 8)
        observed, plain = "none", f"looked up {len(ids):,} ids"
    except Exception as exc:  # the observation is the exception itself
        observed, plain = type(exc).__name__, first_line(exc, limit=160)

    largest = int(ids.max())
    rowless, counts = torch.unique(ids[ids >= rows], return_counts=True)  # ids the table has no row for
    without_row = ", ".join(f"{i} ({tok.itos[i]!r}): {n:,} of {len(ids):,} ids"
                            for i, n in zip(rowless.tolist(), counts.tolist())) or "none"
    model = ctx.gpt("small", vocab_size=rows, block_size=16, n_layer=1, n_embd=16).eval()
    config = model.config
    at = int((ids == largest).nonzero()[0])
    start = max(0, min(at - 8, len(ids) - config.block_size))
    window = ids[start:start + config.block_size][None].to(ctx.device)  # (1, 16), holds the largest id
    try:
        with torch.no_grad():
            model(window)
        engine = "ran"
    except Exception as exc:
        engine = first_line(exc, limit=160)
    evidence = [
        table("Ids against rows", ["quantity", "value"],
              [["tokenizer vocab_size", tok.vocab_size], ["largest id in the data", f"{largest} ({tok.itos[largest]!r})"],
               ["rows_needed(ids)", rows], ["valid ids for the table", f"0 .. {rows - 1}"],
               ["ids with no row, and how often", without_row]]),
        table("The same ids, two lookups", ["lookup", "outcome"],
              [["nn.Embedding (CPU)", plain], ["engine GPT", engine]]),
        note("nn.Embedding's message says only 'index out of range in self'; the engine checks the range "
             "first and names the id and the table size."),
    ]
    return Measurement(observed=observed, evidence=evidence)


def alignment_contract(ctx: Context) -> Measurement:
    """Draw a real batch with ``engine.data.get_batch`` and try three one-line shift checks on it.

    Batch (4, 32) from the encoded corpus (50,000 characters). The checks,
    each a ``torch.equal`` over the whole batch: the contract
    ``check_alignment(x, y)``, i.e. ``x[:, 1:] == y[:, :-1]`` (y is x one
    step ahead); ``x[:, 2:] == y[:, :-2]`` (two steps ahead); and
    ``x[:, :-1] == y[:, 1:]`` (y one step behind). Observed: the three
    verdicts in that order. Evidence: row 0 of x and y as text, the fraction
    of positions where the contract's pair agrees, and the contract on
    hand-built targets shifted by 0, 1 and 2.
    Seed 004, "Data: batching and the alignment contract".
    """
    from engine.corpus import make_corpus
    from engine.data import check_alignment, get_batch
    from engine.tokenizer import CharTokenizer

    text = make_corpus(50_000, seed=ctx.seed)
    tok = CharTokenizer(text)
    data = tok.encode_tensor(text)
    T = 32
    g = torch.Generator().manual_seed(ctx.seed)
    x, y = get_batch(data, 4, T, generator=g, device=ctx.device)
    verdicts = [bool(check_alignment(x, y)), torch.equal(x[:, 2:], y[:, :-2]), torch.equal(x[:, :-1], y[:, 1:])]
    agree = (x[:, 1:] == y[:, :-1]).float().mean().item()

    starts = torch.randint(0, len(data) - T - 2, (4,), generator=g)
    x_hand = torch.stack([data[i:i + T] for i in starts])
    hand = []
    for shift, name in ((0, "no shift (y = x)"), (1, "shift by one"), (2, "shift by two")):
        y_hand = torch.stack([data[i + shift:i + shift + T] for i in starts])
        hand.append([name, bool(check_alignment(x_hand, y_hand))])
    evidence = [
        table("get_batch: row 0, first 24 tokens as text", ["tensor", "text"],
              [["x", repr(tok.decode(x[0, :24].tolist()))], ["y", repr(tok.decode(y[0, :24].tolist()))]]),
        table("Three checks on get_batch's (x, y)", ["check", "passes"], [
            ["torch.equal(x[:, 1:], y[:, :-1])", verdicts[0]], ["torch.equal(x[:, 2:], y[:, :-2])", verdicts[1]],
            ["torch.equal(x[:, :-1], y[:, 1:])", verdicts[2]]]),
        table("torch.equal(x[:, 1:], y[:, :-1]) on hand-built targets", ["targets", "passes"], hand),
        note(f"x[:, 1:] and y[:, :-1] agree at {agree:.1%} of positions in the get_batch pair."),
    ]
    return Measurement(observed=verdicts, evidence=evidence)


def int32_ids(ctx: Context) -> Measurement:
    """Feed the small engine GPT ids loaded by ``token_ids.as_token_ids`` from an int32 array.

    The corpus (20,000 characters) is encoded into a NumPy int32 array; a
    window (2, 16) and its shifted targets are loaded with the snippet. The
    model runs twice: without targets (the embedding lookups) and with
    targets (cross entropy). Observed: ``[exception class of each call, or
    "none"]``. Seed 000 §8, "Token conversion" (Embedding accepts IntTensor;
    class-index targets must be int64).
    """
    import numpy as np

    from engine.corpus import make_corpus
    from engine.tokenizer import CharTokenizer
    from exercises.snippets.token_ids import as_token_ids

    text = make_corpus(20_000, seed=ctx.seed)
    tok = CharTokenizer(text)
    array = np.asarray(tok.encode(text), dtype=np.int32)
    ids = as_token_ids(array)
    x = torch.stack([ids[i:i + 16] for i in (0, 100)]).to(ctx.device)  # (2, 16)
    y = torch.stack([ids[i + 1:i + 17] for i in (0, 100)]).to(ctx.device)
    model = ctx.gpt("small", vocab_size=tok.vocab_size).eval()
    outcomes, rows = [], []
    for label, call in (("model(x)", lambda: model(x)), ("model(x, targets=y)", lambda: model(x, targets=y))):
        try:
            with torch.no_grad():
                call()
            outcomes.append("none")
            rows.append([label, "ran"])
        except Exception as exc:  # the dtype contract is the observation
            outcomes.append(type(exc).__name__)
            rows.append([label, first_line(exc, limit=90)])
    evidence = [
        table("Loaded ids", ["quantity", "value"], [
            ["NumPy array dtype", str(array.dtype)], ["tensor dtype", str(ids.dtype).removeprefix("torch.")],
            ["largest id", int(ids.max())]]),
        table("The engine GPT (V = 37)", ["call", "outcome"], rows),
    ]
    return Measurement(observed=outcomes, evidence=evidence)


def float_ids(ctx: Context) -> Measurement:
    """Feed the engine token ids stored as floats: ``[[3., 7., 12., 5.]]``.

    The small engine (eval mode) gets a float32 (1, 4) tensor of whole
    numbers. Observed: the class name of the exception, or ``"none"``.
    Evidence: the dtype, the exception's first line and the function that
    raised it, and what a silent cast would have done to a fractional id.
    Seed 004, "Data: the tokenizer" (IDs are indices, not continuous values;
    diagnose them at the boundary).
    """
    import traceback
    from pathlib import Path

    model = ctx.gpt("small").eval()
    ids = torch.tensor([[3.0, 7.0, 12.0, 5.0]], device=ctx.device)
    raised, line, where = "none", "the forward pass returned logits", "-"
    try:
        with torch.no_grad():
            model(ids)
    except Exception as exc:  # the observation is the exception itself
        raised, line = type(exc).__name__, first_line(exc, limit=120)
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        where = f"{Path(frame.filename).name}, in {frame.name}"
    evidence = [
        table("model(ids) with float ids", ["quantity", "value"],
              [["ids dtype", str(ids.dtype).replace("torch.", "")], ["raised", raised], ["raised in", where]]),
        note(line),
        note(f"A silent cast would read an id of 2.7 as {torch.tensor([2.7]).long().item()}: a different token, "
             "with no error."),
    ]
    return Measurement(observed=raised, evidence=evidence)
