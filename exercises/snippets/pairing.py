"""Which seeds the B side of a comparison runs (seed 004, "Weight tying";
the book's Chapter 14, paired comparison).

A paired comparison runs configuration B at the *same* seeds as A: each
seed fixes the initialisation and the batches, so B − A at one seed holds
everything but the change fixed, and the seed-to-seed noise cancels in the
difference.
"""


def seeds_for_b(seeds: list[int]) -> list[int]:
    """The seeds configuration B runs, given A's seeds."""
    return list(seeds)  # the same seeds: each pair shares initialisation and batches
