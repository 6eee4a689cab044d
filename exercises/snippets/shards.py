"""A data loader for several processes reading one token stream (seed 000, §8).

Each of ``world`` processes takes batches of B windows of T tokens. Rank r
starts at token B·T·r and, after every batch, advances by B·T·world, so the
ranks interleave: disjoint windows, no token read twice in one pass.
DistributedDataParallel synchronises gradients; it does not split the data
for you — this does.
"""


class ShardedLoader:
    """Positions of the (B, T) batches one rank reads.

    Args:
        n_tokens: length of the token stream.
        B, T: batch size and window length.
        rank, world: this process's index and the number of processes.
    """

    def __init__(self, n_tokens: int, B: int, T: int, rank: int, world: int) -> None:
        self.n_tokens, self.B, self.T, self.rank, self.world = n_tokens, B, T, rank, world
        self.position = B * T * rank  # this rank's first token

    def next_span(self) -> tuple[int, int]:
        """[start, end) of the next batch's input tokens (its targets reach end + 1).

        Wraps to this rank's first token when the stream runs out.
        """
        span = self.B * self.T
        if self.position + span + 1 > self.n_tokens:
            self.position = span * self.rank
        start = self.position
        self.position += span * self.world
        return start, start + span
