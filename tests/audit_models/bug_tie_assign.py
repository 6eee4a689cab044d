"""Bug (TIE): a tied model restored with load_state_dict(..., assign=True): each entry
becomes a Parameter of its own, so lm_head.weight is no longer transformer.wte.weight
(they still share storage, and get separate gradients)."""

import zoo_nano


def build():
    checkpoint = zoo_nano.GPT().state_dict()
    model = zoo_nano.GPT()
    model.load_state_dict(checkpoint, assign=True)
    return model, zoo_nano.configure_optimizer(model)
