"""Byte-level token ids (seed 000 §8, "the GPT-2 encoder also explains why a
Unicode character need not correspond to one token").

A byte-level tokenizer starts from the UTF-8 bytes of the text: 256 base ids,
enough for every string in every script, with no table of characters at
all. A character outside ASCII is several bytes, so several ids; merges
(the BPE part) are learned on top and are not needed for the ids to exist.
"""


def byte_ids(text: str) -> list[int]:
    """The text's UTF-8 bytes as ids in [0, 256): 'é' is 2 ids, '€' 3, 'a' 1."""
    return list(text.encode("utf-8"))  # one id per byte, whatever the script


def from_byte_ids(ids: list[int]) -> str:
    """The inverse of ``byte_ids``; raises UnicodeDecodeError on ids that are not UTF-8."""
    return bytes(ids).decode("utf-8")
