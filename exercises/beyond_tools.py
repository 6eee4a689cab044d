"""Checks for the set ``beyond``: the tools around a model (seed 000 §8,
"A few nanoGPT details that should remain implementation-specific"): byte-
level token ids, and NumPy's refusal of memory that is not the host's.

Both run on any CPU: a byte-level tokenizer needs no GPT-2 tables to show
how many ids a character is, and the ``meta`` device (shapes, no data) is
refused by NumPy with the same TypeError a CUDA tensor gets.
"""

import torch

from exercises.context import Context
from exercises.outcome import Measurement, note, table

TEXT = "é€a"  # 2, 3 and 1 UTF-8 bytes


def byte_tokens(ctx: Context) -> Measurement:
    """The snippet's ``byte_ids`` on 'é€a'.

    UTF-8 writes 'é' (U+00E9) in 2 bytes, '€' (U+20AC) in 3, 'a' in 1: 6
    ids, all below 256, and they decode back. Observed: [how many ids, do
    all fit a 256-row embedding table]. Seed 000 §8 ("a Unicode character
    need not correspond to one token: bytes and vocabulary entries are
    different levels of representation").
    """
    from exercises.snippets.byte_tokens import byte_ids, from_byte_ids

    ids = byte_ids(TEXT)
    fits = all(0 <= i < 256 for i in ids)
    try:
        back = from_byte_ids(ids) if fits else "(ids above 255 are not bytes)"
    except (UnicodeDecodeError, ValueError) as exc:
        back = f"{type(exc).__name__}"
    table_rows = [[c, f"U+{ord(c):04X}", len(c.encode("utf-8")), str(byte_ids(c))] for c in TEXT]
    evidence = [
        table("Each character", ["char", "code point", "UTF-8 bytes", "ids"], table_rows),
        table("The whole text", ["quantity", "value"], [["ids", str(ids)], ["count", len(ids)],
                                                         ["largest id", max(ids)], ["decoded", back]]),
    ]
    if not fits:
        evidence.append(note("Code points are not bytes: '€' is 8364, far past the 256 rows a byte-level model "
                             "has, so a table of every character would be needed after all."))
    return Measurement(observed=[float(len(ids)), fits], evidence=evidence)


def numpy_off_host(ctx: Context) -> Measurement:
    """The snippet's ``to_numpy`` on a tensor of the ``meta`` device (and on CUDA when present).

    Observed: the exception class the meta tensor raises, or "none". A
    meta tensor has a shape and a dtype and no data: ``.numpy()`` refuses
    it as it refuses a CUDA tensor (TypeError, "use Tensor.cpu()"), and
    ``.cpu()`` has nothing to copy (NotImplementedError). Seed 000 §8 ("a
    CPU NumPy array and a CUDA tensor are not interchangeable").
    """
    from exercises.snippets.host_copy import to_numpy

    def attempt(t: torch.Tensor) -> tuple[str, str]:
        try:
            array = to_numpy(t)
        except (TypeError, NotImplementedError, RuntimeError) as exc:
            return type(exc).__name__, str(exc).splitlines()[0][:90]
        return "none", f"an array of shape {tuple(array.shape)}"

    meta = attempt(torch.ones(3, device="meta"))
    rows = [["meta", *meta], ["cpu", *attempt(torch.ones(3))]]
    if torch.cuda.is_available():
        rows.append(["cuda", *attempt(torch.ones(3, device="cuda"))])
    evidence = [table("to_numpy on each device", ["device", "raises", "first line"], rows)]
    if meta[0] == "TypeError":
        evidence.append(note("NumPy refused memory that is not the host's before anything was copied: the message "
                             "a CUDA tensor gets. With .cpu() first a CUDA tensor converts; a meta tensor then "
                             "fails one step later, because it has no data to copy."))
    return Measurement(observed=meta[0], evidence=evidence)
