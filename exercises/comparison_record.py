"""A check for the set ``comparison``: what a run record's config hash must cover.

Seed 004, "The run record, and this model's baseline variation": before two
runs are compared, each carries its config, a hash of it, the tokenizer,
the seed and the environment. Runs are grouped by that hash; a hash that
leaves out a field that changes the run puts two different experiments in
one group.
"""

from exercises.context import Context
from exercises.outcome import Measurement, note, table

#: Each record: a short run of the small run record's model (2 layers, C = 64).
STEPS, BATCH = 5, 8


def record_hash(ctx: Context) -> Measurement:
    """Three run records from ``engine.instruments.run_record.train_run``: tied at two seeds, untied at one.

    The config is ``run_record.SMALL_RUN`` (V = 37, block 32, 2 layers,
    4 heads, C = 64), tied; the untied config differs in ``tie_weights``
    alone. Each run is 5 AdamW steps of batch 8. Observed: ``[the tied and
    the untied records carry different config hashes, the tied records of
    seeds 0 and 1 carry the same one]``. Evidence: hash, seed, parameters
    and final validation loss of each record.
    """
    from engine.config import GPTConfig
    from engine.instruments.run_record import SMALL_RUN, train_run

    tied, untied = GPTConfig(**SMALL_RUN), GPTConfig(**SMALL_RUN, tie_weights=False)
    runs = [("tied", tied, ctx.seed), ("tied", tied, ctx.seed + 1), ("untied", untied, ctx.seed)]
    records = []
    for i, (name, config, seed) in enumerate(runs):
        ctx.progress(i / len(runs), f"run {i + 1} of {len(runs)}")
        records.append((name, train_run(config, seed, steps=STEPS, batch_size=BATCH, device=ctx.device)))
    (_, a), (_, b), (_, c) = records
    rows = [[name, r["seed"], r["config_hash"], f"{r['params']:,}", f"{r['final_val_loss']:.4f}"]
            for name, r in records]
    evidence = [
        table(f"Run records ({STEPS} steps, batch {BATCH})", ["config", "seed", "config_hash", "params",
                                                            "val loss"], rows),
        table("What the hash tells apart", ["pair", "same hash"], [
            ["tied seed 0 / tied seed 1 (same experiment)", a["config_hash"] == b["config_hash"]],
            ["tied / untied (different models)", a["config_hash"] == c["config_hash"]]]),
        note("The seed is a field of the record, not of the config: two seeds of one config are one "
             "experiment measured twice, which is what a baseline's spread is made of."),
    ]
    return Measurement(observed=[a["config_hash"] != c["config_hash"], a["config_hash"] == b["config_hash"]],
                       evidence=evidence)
