"""All the sweeps of a numeric scalar Jacobian as one (wengert.ad.batched): the same
numbers as the sweeps one by one, and as central differences."""
import numpy as np
import pytest

import wengert as wg
import wengert.math as wm
import wengert.numpy as wnp
from fd import assert_close, fd_gradient
from wengert.ad import forward, reverse
from wengert.ad.batched import all_at_once, takes

OPS = [lambda a, b: a * b, lambda a, b: a + b, lambda a, b: a - b,
       lambda a, b: wm.sin(a) * 0.5 + b, lambda a, b: wm.exp(-a * a) / (1.5 + wm.cos(b)),
       lambda a, b: wm.tanh(a - 2 * b), lambda a, b: a / (1 + b * b)]


def program(seed, n, m, length):
    """A random scalar program of `length` steps over n inputs, with m outputs."""
    rng = np.random.default_rng(seed)
    steps = [(rng.integers(len(OPS)), rng.integers(n + t), rng.integers(n + t))
             for t in range(length)]
    picks = rng.integers(0, n + length, m)

    def f(*xs):
        v = list(xs)
        for k, a, b in steps:
            v.append(OPS[k](v[a], v[b]))
        return tuple(v[p] for p in picks)
    return f


def one_by_one(g, forward_sweeps):
    """The Jacobian of a traced graph by one sweep per input (or output), as an array."""
    plan = g.between(g.inputs, g.outputs)
    cols = []
    seeds = g.inputs if forward_sweeps else g.outputs
    for j in range(len(seeds)):
        e = [1.0 if i == j else None for i in range(len(seeds))]
        got = forward(plan, g.inputs, e, g.outputs, False) if forward_sweeps else \
            reverse(plan, g.inputs, g.outputs, e, False)
        cols.append([0.0 if v is None else v for v in got])
    J = np.array(cols, dtype=complex if g.complex else float)
    return J.T if forward_sweeps else J


@pytest.mark.parametrize("seed", range(12))
def test_random_programs_equal_the_sweeps_one_by_one_and_differences(seed):
    rng = np.random.default_rng(100 + seed)
    n, m = int(rng.integers(3, 8)), int(rng.integers(3, 8))       # (batches from 3)
    f = program(seed, n, m, int(rng.integers(1, 40)))
    x = list(rng.uniform(-1, 1, n))
    g = wg.trace(f, *x, abstract=False)
    plan = g.between(g.inputs, g.outputs)
    assert takes(plan, g.inputs, g.outputs)
    fwd = all_at_once(plan, g.inputs, g.outputs, range(n), n, True)
    rev = all_at_once(plan, g.inputs, g.outputs, range(m), m, False).T
    np.testing.assert_array_equal(fwd, one_by_one(g, True))
    np.testing.assert_array_equal(rev, one_by_one(g, False))
    fd = np.array([fd_gradient(lambda *a, i=i: f(*a)[i], x) for i in range(m)])
    assert_close(fwd, fd, rtol=1e-6, atol=1e-7)
    argnums = tuple(range(n))
    for jac in (wg.jacfwd, wg.jacrev):
        assert_close(jac(f, argnums=argnums)(*x), fd, rtol=1e-6, atol=1e-7)


def test_several_seeds_in_one_sweep_sum_their_columns():
    # the compressed (sparse) use: inputs 0 and 2 share a sweep
    g = wg.trace(lambda x, y, z, w: (x * y, z * z, w), 1.0, 2.0, 3.0, 4.0, abstract=False)
    plan = g.between(g.inputs, g.outputs)
    got = all_at_once(plan, g.inputs, g.outputs, [0, 1, 0, 2], 3, True)
    assert got.tolist() == [[2.0, 1.0, 0.0], [6.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    # (2 sweeps: one by one)
    assert all_at_once(plan, g.inputs, g.outputs, [0, 1, 0, 1], 2, True) is None


def test_an_infinite_partial_falls_back_to_the_sweeps_one_by_one():
    # sqrt'(0) = inf: in a batch it would meet y's sweep's 0 (nan); a lone sweep of y has no
    # tangent on x at all, so ∂f/∂y stays 1
    f = lambda x, y, z: (wm.sqrt(x) + y, z, y * z)
    x = (0.0, 1.0, 2.0)
    want = ((np.inf, 1.0, 0.0), (0.0, 0.0, 1.0), (0.0, 2.0, 1.0))
    with np.errstate(divide="ignore"):                 # (sqrt'(0): NumPy's warning)
        g = wg.trace(f, *x, abstract=False)
        assert all_at_once(g.between(g.inputs, g.outputs), g.inputs, g.outputs, [0, 1, 2],
                           3, True) is None
        for jac in (wg.jacfwd, wg.jacrev):
            assert jac(f, argnums=(0, 1, 2))(*x) == want, jac
        assert wg.jacobian(f, argnums=(0, 1, 2), mode="fwd")(*x) == want


def test_a_structural_zero_is_a_positive_zero():
    # cos(2)·0 is -0.0 in x's slot of y's sweep; a lone sweep has no tangent there
    J = wg.jacfwd(lambda x, y, z: wm.sin(x) * y + z, argnums=(0, 1, 2))(2.0, 0.0, 1.0)
    assert J[0] == 0.0 and np.copysign(1, J[0]) == 1


def test_outputs_that_are_inputs_constants_or_integers():
    f = lambda x, y, z: (x, 3.0, x * y, y > 0, wg.stop_gradient(x) * y + z)
    x = (0.4, -0.3, 2.0)
    for jac in (wg.jacfwd, wg.jacrev):
        J = jac(f, argnums=(0, 1, 2))(*x)
        assert J == ((1.0, 0.0, 0.0), (0.0, 0.0, 0.0), (-0.3, 0.4, 0.0), (0.0, 0.0, 0.0),
                     (0.0, 0.4, 1.0)), jac


def test_float32_and_complex_keep_their_dtypes():
    f = lambda x, y, w: (x * y, wm.sin(x), w * w)
    x32 = (np.float32(0.5), np.float32(2.0), np.float32(3.0))
    for jac in (wg.jacfwd, wg.jacrev):
        J = jac(f, argnums=(0, 1, 2))(*x32)
        assert all(type(e) is np.float32 for row in J for e in row), jac
        assert_close(J, ((2.0, 0.5, 0), (np.cos(0.5), 0, 0), (0, 0, 6.0)), rtol=1e-6)
    z = (0.5 + 1j, 2.0 - 0.5j, 1j)
    for jac in (wg.jacfwd, wg.jacrev):
        J = jac(f, argnums=(0, 1, 2), holomorphic=True)(*z)
        assert all(type(e) is complex for row in J for e in row), jac
        np.testing.assert_allclose(np.array(J), [[z[1], z[0], 0], [np.cos(z[0]), 0, 0],
                                                 [0, 0, 2 * z[2]]], rtol=1e-15)


def test_real_values_of_complex_ones_take_real_parts_as_the_sweeps_do():
    # real values computed from complex ones on the way
    f = lambda a, w, c: wnp.real(wm.exp(1j * w)) * a + w * wnp.imag(a * (c + 1j))
    x = (0.7, 0.3, 1.5)
    g = wg.trace(f, *x, abstract=False)
    plan = g.between(g.inputs, g.outputs)
    got = all_at_once(plan, g.inputs, g.outputs, [0, 1, 2], 3, True)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, one_by_one(g, True).real)
    assert_close(wg.jacrev(f, argnums=(0, 1, 2))(*x), fd_gradient(f, x), rtol=1e-7)


def test_array_graphs_are_not_taken():
    g = wg.trace(lambda x: wnp.sin(x), np.ones(3), abstract=False)
    assert not takes(g.between(g.inputs, g.outputs), g.inputs, g.outputs)


def test_float32_arguments_keep_float64_partials_digits():
    # (the batch seeded float32 vectors: d(x·0.1)/dx, a float64 block, came out as
    # float32(0.1); a lone sweep's seed 1.0 keeps 0.1)
    f = lambda x, y, z: ((x * 0.1) * np.float64(1.0), y + z, x + y)
    args = (np.float32(1.0), np.float32(2.0), np.float32(3.0))
    for jac in (wg.jacfwd, wg.jacrev):
        J = jac(f, argnums=(0, 1, 2))(*args)
        assert type(J[0][0]) is float and J[0][0] == 0.1, jac
    M = wg.sparse_jacobian(lambda x: [x[0] + x[1] + x[2], x[1] * 0.1, x[0] + x[1], 1.5])(
        list(args))
    assert M.toarray()[1, 1] == 0.1


def test_overflow_and_underflow_are_silent_as_in_a_lone_sweep():
    # Python floats overflow to inf and underflow to 0 without a word; the batch's NumPy
    # arithmetic warned, and raised under np.errstate(all="raise")
    import warnings

    def f(x, y, z):
        v = x
        for _ in range(12):
            v = v * v                       # d v/dx = 4096 x^4095: inf at 1.2
        return v * 0.0 + y, y * z, z

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        J = wg.jacfwd(f, argnums=(0, 1, 2))(1.2, 1.0, 1.0)
    assert np.isnan(J[0][0]) and J[0][1:] == (1.0, 0.0) and J[1] == (0.0, 1.0, 1.0)
    g = lambda x, y, z: (x * 1e-200 * 1e-200, y * z, z)
    with np.errstate(all="raise"):
        for jac in (wg.jacfwd, wg.jacrev):
            assert jac(g, argnums=(0, 1, 2))(1.0, 2.0, 3.0)[0] == (0.0, 0.0, 0.0)


def test_a_function_without_outputs():
    f = lambda x, y, z: ()
    for mode in ("fwd", "rev", "sparse", "auto"):
        assert wg.jacobian(f, argnums=(0, 1, 2), mode=mode)(1.0, 2.0, 3.0) == ()
    assert wg.jacfwd(f, argnums=(0, 1, 2))(1.0, 2.0, 3.0) == ()


def test_a_user_partial_of_the_wrong_shape_is_not_broadcast_into_the_batch():
    # a length-3 partial of a scalar: the batch's 3-vectors took it elementwise and gave a
    # plausible, wrong Jacobian; now the partial is refused by name, in both directions
    sq = wg.primitive(lambda x: x * x, name="sq_wrong_shape").defpartials(
        lambda x, ans: np.array([2 * x, 0.0, 5.0]))
    f = lambda x, y, z: (sq(x), sq(y), sq(z))
    for jac in (wg.jacfwd, wg.jacrev):
        with pytest.raises(ValueError, match="'sq_wrong_shape' in argument 0 has shape"):
            jac(f, argnums=(0, 1, 2))(1.0, 2.0, 3.0)
    g = wg.trace(f, 1.0, 2.0, 3.0, abstract=False)
    for fwd in (True, False):
        with pytest.raises(ValueError, match=r"shape \(3,\), which does not broadcast"):
            all_at_once(g.between(g.inputs, g.outputs), g.inputs, g.outputs, [0, 1, 2], 3,
                        fwd)


def test_many_sweeps_run_in_batches_that_bound_the_memory(monkeypatch):
    # each node holds a vector of one entry per sweep: 10,000 inputs through 20,000 nodes
    # would hold 2e8 numbers at once; the sweeps are split to hold at most ELEMENTS
    import wengert.ad.batched as batched
    f = program(5, 9, 7, 30)
    x = list(np.random.default_rng(5).uniform(-1, 1, 9))
    g = wg.trace(f, *x, abstract=False)
    plan = g.between(g.inputs, g.outputs)
    whole = [all_at_once(plan, g.inputs, g.outputs, range(n), n, fwd)
             for n, fwd in ((9, True), (7, False))]
    monkeypatch.setattr(batched, "ELEMENTS", 4 * len(plan))      # 4 sweeps per batch
    split = [all_at_once(plan, g.inputs, g.outputs, range(n), n, fwd)
             for n, fwd in ((9, True), (7, False))]
    for a, b in zip(whole, split):
        np.testing.assert_array_equal(a, b)
    # several seeds in one sweep, across batches (the compressed use)
    np.testing.assert_allclose(        # (sums in another order: to rounding)
        all_at_once(plan, g.inputs, g.outputs, [0, 1, 2, 0, 1, 2, 3, 4, 4], 5, True),
        one_by_one(g, True) @ np.eye(5)[[0, 1, 2, 0, 1, 2, 3, 4, 4]], rtol=1e-14, atol=1e-16)
