"""The factory behind the capstone's mystery GPT (seed 004, the final exercise).

It builds a small engine GPT the way a fine-tuning script would: a model,
a fresh untied output head, then its optimizer (``finetune.with_fresh_head``).
The capstone passes in the engine package and the fine-tuning module, so a
hidden fault in either one travels into the model under audit.
"""

#: Small enough to audit in a couple of seconds on two CPU cores.
MYSTERY_CONFIG = dict(vocab_size=37, block_size=32, n_layer=2, n_head=4, n_embd=64)


def build(engine_model, engine_config, finetune):
    """Return (model, optimizer): a GPT with its own output head and its AdamW.

    Args:
        engine_model, engine_config: the ``engine.model`` and ``engine.config``
            modules to build from.
        finetune: the ``exercises.snippets.finetune`` module.
    """
    model = engine_model.GPT(engine_config.GPTConfig(**MYSTERY_CONFIG))
    optimizer = finetune.with_fresh_head(model)
    return model, optimizer
