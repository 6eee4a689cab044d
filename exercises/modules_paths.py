"""Checks for the set ``modules``, part 4: which paths reach a parameter
(seed 000 §2, §3 and §4).

A registered parameter is not necessarily on the path from the loss; a tied
matrix sits on two paths at once; and filling a weight in place is fine
exactly when no graph is being recorded and nothing saved its old value.
"""

import torch

from exercises.context import Context
from exercises.outcome import Measurement, first_line, note, table

#: The only ids the tied-gradient batch uses (inputs and targets): 6 of V = 37.
USED_IDS = [0, 4, 9, 15, 22, 30]


def tied_gradient_rows(ctx: Context) -> Measurement:
    """How many rows of the token table ``wte`` receive a gradient from one backward.

    The small engine GPT (V = 37, C = 64, 2 layers, tied). A batch (2, 16)
    whose inputs and targets use only the 6 ids of ``USED_IDS``; one
    ``loss.backward()``. Observed: the number of rows of ``wte.weight.grad``
    (V, C) with any nonzero entry. Evidence: the same count for ``lm_head``,
    whether the two are one object, and (untied) whether the sum of the two
    gradients is what one shared matrix would receive. Seed 000 §4 ("Weight
    tying connects lookup and prediction": gradients from both paths
    accumulate into the shared parameter).
    """
    model = ctx.gpt("small")
    V = model.config.vocab_size
    g = torch.Generator().manual_seed(ctx.seed)
    ids = torch.tensor(USED_IDS)
    picks = torch.randint(0, len(USED_IDS), (2, 17), generator=g)
    picks[0, :len(USED_IDS)] = torch.arange(len(USED_IDS))  # every one of the 6 ids occurs
    stream = ids[picks].to(ctx.device)  # (2, 17)
    x, y = stream[:, :-1], stream[:, 1:]  # (2, 16) each
    _, loss = model(x, targets=y)
    loss.backward()
    wte, head = model.wte.weight, model.lm_head.weight
    rows_of = lambda grad: int(grad.ne(0).any(dim=1).sum()) if grad is not None else 0  # noqa: E731
    observed = rows_of(wte.grad)
    shared = wte is head
    rows = [["lm_head.weight is wte.weight", shared],
            ["distinct ids in the inputs", int(x.unique().numel())],
            ["wte.weight.grad rows that are nonzero", f"{observed} of {V}"],
            ["lm_head.weight.grad rows that are nonzero", f"{rows_of(head.grad)} of {V}"]]
    evidence = [table("Rows of the (V, C) matrices that backward reached", ["quantity", "value"], rows)]
    if shared:
        evidence.append(note("One Parameter in two roles: the lookup sends gradient to the rows of the ids "
                             "read, the prediction sends it to every row (softmax scores every id), and both "
                             "add into the one .grad."))
    else:
        total = wte.grad + head.grad
        evidence.append(table("Two matrices that started equal", ["quantity", "value"], [
            ["rows nonzero in wte.grad + lm_head.grad", f"{rows_of(total)} of {V}"],
            ["max |wte.grad| outside the 6 ids", wte.grad[[i for i in range(V) if i not in USED_IDS]].abs().max().item()]]))
        evidence.append(note("The lookup alone reaches only the rows it read; the prediction path now fills a "
                             "second matrix, so the next step moves the two copies apart."))
    return Measurement(observed=observed, evidence=evidence)


def unused_parameter(ctx: Context) -> Measurement:
    """A registered parameter off the loss's path: its grad, and whether AdamW moves it.

    The small engine GPT, ``engine.train.make_optimizer`` (AdamW, lr 0.01,
    weight decay 0.1 on every tensor), one ``train_step`` on a (4, 16)
    batch. Observed, for the position table ``wpe.weight``: ``[held by the
    optimizer, .grad is None after the step, moved during the step]``.
    Seed 000 §3 ("A registered parameter may also be unused in a particular
    forward pass ... Registration alone does not establish a live path").
    """
    from engine.train import make_optimizer, train_step

    model = ctx.gpt("small")
    optimizer = make_optimizer(model, lr=0.01, weight_decay=0.1)
    g = torch.Generator().manual_seed(ctx.seed)
    x = torch.randint(0, model.config.vocab_size, (4, 17), generator=g).to(ctx.device)
    wpe = model.wpe.weight
    before = wpe.detach().clone()
    loss = train_step(model, optimizer, x[:, :-1], x[:, 1:])
    held = any(p is wpe for group in optimizer.param_groups for p in group["params"])
    grad_none = wpe.grad is None
    change = (wpe.detach() - before).abs().max().item()
    moved = change > 0
    evidence = [
        table("The position table wpe (block_size, C) after one step", ["question", "answer"], [
            ["registered (in model.parameters())", any(p is wpe for p in model.parameters())],
            ["in state_dict()", "wpe.weight" in model.state_dict()],
            ["held by the optimizer", held], [".grad is None", grad_none],
            ["moved during the step", moved], ["max |change|", change]]),
        table("For comparison, the token table wte", ["question", "answer"], [
            [".grad is None", model.wte.weight.grad is None], ["loss of the step", float(loss)]]),
    ]
    if grad_none:
        evidence.append(note("Nothing on the path from the loss reads wpe, so backward never reaches it; "
                             "AdamW skips a parameter whose .grad is None, weight decay included."))
    return Measurement(observed=[bool(held), bool(grad_none), bool(moved)], evidence=evidence)


def inplace_init(ctx: Context) -> Measurement:
    """Build the small engine GPT, whose ``_init_weights`` fills every weight in place.

    Observed: the exception class name construction raises, or ``"none"``.
    Evidence: the same in-place fill inside ``torch.no_grad()`` (it works and
    keeps the Parameter's identity and storage), and an in-place change of a
    tensor that backward saved (it fails at backward). Seed 000 §2
    ("Initializing a parameter before its first forward pass and changing a
    saved intermediate after forward are very different situations") and §3
    ("prefer filling the existing parameter").
    """
    try:
        model = ctx.gpt("small")
        raised, message = "none", "built"
    except Exception as exc:  # the outcome to report
        model, raised, message = None, type(exc).__name__, first_line(exc)
    layer = torch.nn.Linear(4, 3).to(ctx.device)
    weight, ptr = layer.weight, layer.weight.data_ptr()
    with torch.no_grad():
        layer.weight.normal_(mean=0.0, std=0.02)
    same = layer.weight is weight and layer.weight.data_ptr() == ptr
    x = torch.randn(2, 4, generator=torch.Generator().manual_seed(ctx.seed)).to(ctx.device)
    h = layer(x).sigmoid()  # sigmoid saves its output for backward
    h.mul_(2.0)
    try:
        h.sum().backward()
        saved = "none"
    except RuntimeError as exc:
        saved = f"RuntimeError at backward: {first_line(exc, with_type=False, limit=70)}"
    evidence = [
        table("Building the engine GPT", ["step", "outcome"], [["GPT(config)", message]]),
        table("Two other in-place writes", ["write", "outcome"], [
            ["weight.normal_() inside torch.no_grad()", "ran; same object, same storage" if same else "changed identity"],
            ["sigmoid output *= 2, then backward", saved]]),
        note("nn.init.normal_ runs its fill under torch.no_grad(): nothing is recorded and nothing saved the old "
             "values. Outside no_grad, autograd refuses an in-place write into a leaf that requires grad."),
    ]
    if model is not None:
        evidence.append(table("The built model", ["quantity", "value"], [
            ["wte.weight std (init 0.02)", round(model.wte.weight.std().item(), 3)]]))
    return Measurement(observed=raised, evidence=evidence)
