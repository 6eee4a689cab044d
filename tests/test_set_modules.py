"""Set ``modules``: every check observes the known value on both sides
(CATALOG.md; seed 000 §3, §4), through the real worker."""

from helpers import fact, rows


def test_plain_list_counts_only_the_parameters_outside_the_list(run):
    r = run("plain-list", "13,184")
    assert r.status == "pass", r.error
    # wte 37*128 + wpe 64*128 + ln_f 2*128; the four blocks (197,760 each) vanish.
    assert r.clean == 804_224 and r.faulted == 13_184
    # everything outside the blocks is one row: a LayerNorm's own count is layernorm-params' answer
    assert [row[2] for row in rows(r, "clean", "Parameters the model's children")] == ["13184", "791040"]
    assert [row[2] for row in rows(r, "faulted", "Parameters the model's children")] == ["13184", "-"]
    step = fact(r, "faulted", "One AdamW step")
    assert step["blocks[0].attn.qkv.weight has a grad"] == "True"
    assert step["blocks[0].attn.qkv.weight moved"] == "False"
    assert fact(r, "clean", "One AdamW step")["blocks[0].attn.qkv.weight moved"] == "True"


def test_unregistered_tensor_gets_a_grad_but_does_not_move(run):
    r = run("unregistered-tensor", "yes, no")
    assert r.status == "pass", r.error
    assert r.clean == [True, True] and r.faulted == [True, False]
    assert run("unregistered-tensor", "yes, yes").status == "fail"


def test_replace_after_optimizer_leaves_the_new_weight_still(run):
    r = run("replace-after-optimizer", "yes")
    assert r.status == "pass", r.error
    assert r.clean is False and r.faulted is True
    owners = fact(r, "faulted", "Who holds")
    assert owners["optimizer holds model.head.weight"] == "False"
    assert owners["optimizer holds the original object"] == "True"


def test_parameters_generator_second_pass_is_empty(run):
    r = run("parameters-generator", "0")
    assert r.status == "pass", r.error
    assert r.clean == 4 and r.faulted == 0
    assert fact(r, "clean", "inventory")["second pass: scalars"] == "58"


def test_buffer_is_saved_and_moved_attribute_neither(run):
    r = run("buffer-vs-attribute", "both, neither")
    assert r.status == "pass", r.error
    assert r.observed == ["both", "neither"]
    assert fact(r, "clean", "What nn.Module")["after"] == "float64 on cpu"
    assert fact(r, "faulted", "What nn.Module")["after"] == "float32 on cpu"


def test_assign_tensor_to_param_raises_type_error(run):
    r = run("assign-tensor-to-param", "TypeError")
    assert r.status == "pass", r.error
    assert r.clean == "none" and r.faulted == "TypeError"
    assert "cannot assign" in fact(r, "faulted", "reinitialise_head")["raised"]


def test_tie_weights_counts_the_copy_twice(run):
    r = run("tie-weights", "808960")
    assert r.status == "pass", r.error
    assert r.clean == 804_224 and r.faulted == 808_960   # difference V*C = 37*128
    assert fact(r, "clean", "The token table")["same object"] == "True"
    gaps = fact(r, "faulted", "max |lm_head")
    assert gaps["after init"] == "0" and float(gaps["after one AdamW step"]) > 0


def test_layernorm_params_2c_then_c(run):
    r = run("layernorm-params", "256, 128")
    assert r.status == "pass", r.error
    assert r.observed == [256, 128]
    variants = fact(r, "clean", "LayerNorm variants")
    assert [variants[k] for k in ("LayerNorm(C)", "LayerNorm(C, bias=False)",
                                  "LayerNorm(C, elementwise_affine=False)")] == ["256", "128", "0"]


def test_linear_weight_is_out_by_in(run):
    r = run("linear-weight", "(512, 128)")
    assert r.status == "pass", r.error
    assert r.clean == [512, 128] and r.faulted == [128, 512]
    assert fact(r, "faulted", "Checks")["model forward on (2, 16)"].startswith("RuntimeError")



# Seed gaps (CATALOG-3.md)

def test_parameter_list_plain_list_registers_nothing(run):
    r = run("parameter-list", "0")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == 3 and r.faulted == 0
    assert fact(r, "clean", "GainBank")["state_dict keys"] == "gains.0, gains.1, gains.2"
    assert fact(r, "faulted", "Training")["optimizer"] == "ValueError: optimizer got an empty parameter list"


def test_module_dict_plain_dict_is_not_converted(run):
    # model.double() walks the registered children: heads in a plain dict keep float32 weights, and the
    # trunk's float64 output meets them in the first head's matrix product.
    r = run("module-dict", "RuntimeError")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == "none" and r.faulted == "RuntimeError"
    assert fact(r, "faulted", "model.double()")["forward"].startswith("RuntimeError: mat1 and mat2 must have the same dtype")
    assert fact(r, "faulted", "model.double()")["state_dict keys"] == "trunk.weight, trunk.bias"
    assert fact(r, "clean", "model.double()")["parameter tensors in parameters()"] == "6"
    assert fact(r, "faulted", "Weight dtypes")["heads['next'].weight"] == "float32"
    assert fact(r, "clean", "Weight dtypes")["heads['next'].weight"] == "float64"
    assert run("module-dict", "none").status == "fail"


def test_sequential_vs_modulelist_has_no_forward(run):
    r = run("sequential-vs-modulelist", "NotImplementedError")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == "none" and r.faulted == "NotImplementedError"
    # The subject is the engine GPT's loop over its blocks. The ModuleList registers the
    # same 2 blocks either way (2 x 49,728 = 99,456 scalars at C = 64); only the call changes.
    clean, faulted = fact(r, "clean", "The small engine GPT"), fact(r, "faulted", "The small engine GPT")
    assert clean["type(model.blocks)"] == faulted["type(model.blocks)"] == "ModuleList"
    assert clean["parameter scalars in the blocks"] == faulted["parameter scalars in the blocks"] == "99,456"
    assert clean["model(idx)"] == "ran: logits (4, 8, 37)"
    assert 'missing the required "forward" function' in faulted["model(idx)"]


def test_frozen_param_grad_none_and_adamw_skips_it(run):
    # CATALOG-3: grad None; the weight does not move (AdamW skips None grads, decay included).
    r = run("frozen-param", "yes no")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == [True, False] and r.faulted == [False, True]
    assert fact(r, "clean", "The optimizer")["parameters with state after the step"] == "2"


def test_forward_bypasses_hooks(run):
    r = run("forward-bypasses-hooks", "0")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == 1 and r.faulted == 0
    assert fact(r, "faulted", "Forward hooks")["blocks[0]"] == "1"  # the blocks are still called normally


def test_empty_init_misspelt_initializer(run):
    r = run("empty-init", "AttributeError")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == "none" and r.faulted == "AttributeError"
    assert fact(r, "faulted", "PositionTable")["construction"] == (
        "AttributeError: module 'torch.nn.init' has no attribute 'normalize_'")
    assert fact(r, "clean", "PositionTable")["construction"].endswith("std 0.0200")
