"""A deterministic synthetic corpus of English-like sentences.

Seed 004, "The environment": the model trains on a small corpus generated
from a fixed word list and five sentence templates. It needs no download,
carries no copyrighted text, is rebuilt exactly from a seed, and still has
structure worth learning: word boundaries, template grammar, frequent
bigrams, capitals and punctuation.

This module imports only the standard library.
"""

from __future__ import annotations

import random

NOUNS = (
    "garden", "river", "shadow", "window", "market", "planet",
    "machine", "forest", "signal", "bridge", "lantern", "harbor",
)
ADJECTIVES = (
    "small", "hidden", "golden", "quiet", "sudden", "ancient",
    "gentle", "restless", "narrow", "silent", "bright", "jagged",
)
VERBS = (
    "holds", "carries", "repeats", "builds", "counts", "crosses",
    "watches", "answers", "measures", "remembers", "follows", "explores",
)
ADVERBIALS = (
    "by the door", "near the water", "at dawn", "without warning",
    "again", "slowly", "for years", "quietly",
)
DETERMINERS = ("the", "a", "that", "this", "one")

# Five templates. Fields: {det}, {det2} determiners; {adj}; {noun}, {noun2};
# {verb}; {adv} an adverbial phrase.
TEMPLATES = (
    "{det} {noun} {verb} {det2} {adj} {noun} because {verb} it {adv}.",
    "{adv}, {det} {adj} {noun} {verb} {det2} {noun}.",
    "when {det} {noun} {verb} {adv}, {det2} {adj} {noun} {verb}.",
    "{det} {adj} {noun} {verb} {det2} {adj} {noun2} {adv}.",
    "{det} {noun} {verb} {det2} {noun}, because {det} {adj} {noun} {verb} {adv}.",
)


def _with_article(text: str) -> str:
    """Turn 'a' into 'an' before a word that starts with a vowel."""
    words = text.split(" ")
    for i in range(len(words) - 1):
        if words[i].lower() == "a" and words[i + 1][:1] in "aeiou":
            words[i] = words[i] + "n"
    return " ".join(words)


def make_sentence(rng: random.Random) -> str:
    """One sentence drawn from the templates with ``rng``.

    Args:
        rng: the random source; the same state gives the same sentence.

    Returns:
        A capitalised sentence ending in a full stop, e.g.
        ``"Near the water, that hidden shadow carries that shadow."``
    """
    template = rng.choice(TEMPLATES)
    noun = rng.choice(NOUNS)
    fields = {
        "det": rng.choice(DETERMINERS),
        "det2": rng.choice(DETERMINERS),
        "adj": rng.choice(ADJECTIVES),
        "noun": noun,
        "noun2": rng.choice(NOUNS),
        "verb": rng.choice(VERBS),
        "adv": rng.choice(ADVERBIALS),
    }
    sentence = _with_article(template.format(**fields))
    return sentence[0].upper() + sentence[1:]


def make_corpus(n_chars: int = 200_000, seed: int = 0) -> str:
    """Generate ``n_chars`` characters of English-like text, deterministically.

    Seed 004, "The environment". Sentences are joined by single spaces and the
    text is cut at exactly ``n_chars`` characters. With the defaults the text
    uses 37 distinct characters (lower-case letters, a few capitals, space,
    comma and full stop), the vocabulary the GPT in ``engine.model`` is sized
    for.

    Args:
        n_chars: length of the returned text, in characters.
        seed: seed for ``random.Random``; the same seed gives the same text.

    Returns:
        A string of length ``n_chars``.

    Raises:
        ValueError: if ``n_chars`` is negative.
    """
    if n_chars < 0:
        raise ValueError(f"n_chars must be zero or more, got {n_chars}.")
    rng = random.Random(seed)
    parts: list[str] = []
    length = 0
    while length < n_chars:
        sentence = make_sentence(rng)
        parts.append(sentence)
        length += len(sentence) + 1  # +1 for the joining space
    return " ".join(parts)[:n_chars]
