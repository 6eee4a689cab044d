"""A character-level tokenizer.

Seed 004, "Data: the tokenizer": a character tokenizer is two dictionaries.
What matters is that it round-trips (decode(encode(s)) == s) and that every
id it produces lies in [0, vocab_size). Both failures are raised here, at the
text -> ids boundary, with a message naming the offending character or id.

This module imports torch only inside ``encode_tensor``.
"""

from __future__ import annotations

from typing import Iterable


class CharTokenizer:
    """Maps each distinct character of a text to an integer id.

    Ids are assigned in sorted character order, so the same text always
    gives the same vocabulary.

    Args:
        text: the text to fit the vocabulary on.

    Attributes:
        chars: the sorted distinct characters.
        stoi: character -> id.
        itos: id -> character.
        vocab_size: V, the number of distinct characters.

    Raises:
        ValueError: if ``text`` is empty.
    """

    def __init__(self, text: str) -> None:
        if not text:
            raise ValueError("cannot fit a tokenizer on empty text; pass the corpus.")
        self.chars: list[str] = sorted(set(text))
        self.stoi: dict[str, int] = {c: i for i, c in enumerate(self.chars)}
        self.itos: dict[int, str] = {i: c for c, i in self.stoi.items()}
        self.vocab_size: int = len(self.chars)

    def encode(self, s: str) -> list[int]:
        """Text -> list of ids, one per character.

        Raises:
            KeyError: if ``s`` contains a character the tokenizer was not fit
                on; the message names the character.
        """
        ids = []
        for position, c in enumerate(s):
            try:
                ids.append(self.stoi[c])
            except KeyError:
                raise KeyError(
                    f"character {c!r} (at position {position}) is not in the "
                    f"tokenizer's vocabulary (fit on {self.vocab_size} characters); "
                    "fit the tokenizer on text that contains it."
                ) from None
        return ids

    def decode(self, ids: Iterable[int]) -> str:
        """Ids (ints or a 1-D integer tensor) -> text.

        Raises:
            IndexError: if an id is outside [0, vocab_size); the message names it.
        """
        out = []
        for i in ids:
            i = int(i)
            if not 0 <= i < self.vocab_size:
                raise IndexError(
                    f"token id {i} is outside [0, {self.vocab_size}): the tokenizer "
                    f"has only {self.vocab_size} ids."
                )
            out.append(self.itos[i])
        return "".join(out)

    def encode_tensor(self, s: str):
        """Text -> 1-D int64 tensor of ids, shape (len(s),).

        Raises:
            KeyError: as ``encode``.
        """
        import torch

        return torch.tensor(self.encode(s), dtype=torch.long)
