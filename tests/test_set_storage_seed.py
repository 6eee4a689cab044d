"""Set ``storage``: the seed items of the NumPy boundary (seed 000 §8), through
the real worker."""

from helpers import fact, rows


def test_numpy_negative_stride_needs_a_copy(run):
    r = run("numpy-negative-stride", "ValueError")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == "none" and r.faulted == "ValueError"
    # np.arange(6.0)[::-1]: float64, 8 bytes per element, walked backwards: strides (-8,). Its copy
    # runs forwards, (8,), and from_numpy shares the copy's memory.
    faulted = {row[0]: row[1:] for row in rows(r, "faulted", "to_tensor")}
    assert faulted["a[::-1]"][0] == "(-8,)" and faulted["a[::-1].copy()"][0] == "(8,)"
    assert faulted["a[::-1].copy()"][2] == "True"
    clean = {row[0]: row[1:] for row in rows(r, "clean", "to_tensor")}
    assert clean["a[::-1]"][1] == "[5.0, 4.0, 3.0, 2.0, 1.0, 0.0]" and clean["a[::-1]"][2] == "False"


def test_numpy_float64_meets_float32_weights(run):
    r = run("numpy-float64", "float64, RuntimeError")
    assert r.status == "pass", (r.status, r.error, r.observed)
    assert r.clean == ["float32", "none"] and r.faulted == ["float64", "RuntimeError"]
    facts = fact(r, "faulted", "Dtypes at the NumPy boundary")
    assert facts["np.random...normal(size=(4, 8)).dtype"] == "float64"  # NumPy's default
    assert facts["int32 tensor .sum() (integer reduction)"] == "int64"  # integer sums widen
    assert facts["float32 tensor + tensor from float64 NumPy"] == "float64"  # promotion to the wider
    assert facts["int64 / int64 (true division)"] == "float32"  # / is true division, default float
    assert "same dtype" in facts["nn.Linear(8, 3)(features(a))"]
