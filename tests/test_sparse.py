"""Sparse Jacobians and Hessians: the pattern from the graph, greedy colouring, compressed
sweeps; results equal the dense ones."""
import sys

import numpy as np
import pytest

import wengert as wg
import wengert.math as wm
import wengert.numpy as wnp
from fd import assert_close
from wengert.ad.sparse import (color_columns, color_rows, compressed, fewest_sweeps, sparsity,
                               transpose)


def broyden(x):
    """The Broyden tridiagonal function: a tridiagonal Jacobian."""
    n = len(x)
    return [(3 - 2 * x[i]) * x[i] - (x[i - 1] if i else 0) - 2 * (x[i + 1] if i < n - 1 else 0)
            + 1 for i in range(n)]


def rosenbrock(x):
    """The extended Rosenbrock function: a block-diagonal Hessian."""
    return sum(100 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2 for i in range(0, len(x), 2))


@pytest.mark.parametrize("n", [3, 10, 50])
def test_broyden_needs_exactly_three_colours(n):
    g = wg.trace(broyden, [0.5] * n)
    rows = sparsity(g, g.inputs, g.outputs)
    assert rows == [[j for j in (i - 1, i, i + 1) if 0 <= j < n] for i in range(n)]
    assert max(color_columns(rows, n)) + 1 == 3
    assert max(color_rows(rows, n)) + 1 == 3


def test_broyden_sparse_equals_dense():
    x = list(np.random.default_rng(0).uniform(-1, 1, 30))
    dense = np.array(wg.jacfwd(broyden)(x))
    J = wg.sparse_jacobian(broyden)(x)
    assert J.format == "csr" and J.nnz == 3 * 30 - 2
    assert_close(J.toarray(), dense, rtol=1e-14)
    assert_close(wg.jacobian(broyden, mode="sparse")(x), dense, rtol=1e-14)


def test_sparse_hessian_of_extended_rosenbrock():
    x = list(np.random.default_rng(1).uniform(-1, 1, 10))
    H = wg.sparse_hessian(rosenbrock)(x)
    assert H.nnz == 4 * 5
    assert_close(H.toarray(), np.array(wg.hessian(rosenbrock)(x)), rtol=1e-13)
    assert_close(wg.jacobian(wg.grad(rosenbrock), mode="sparse")(x), H.toarray(), rtol=1e-13)


def test_colourings_never_put_two_overlapping_lines_together():
    rng = np.random.default_rng(2)
    for _ in range(50):
        m, n = rng.integers(1, 12, 2)
        rows = [sorted(set(rng.integers(0, n, rng.integers(0, 4)).tolist())) for _ in range(m)]
        cols = color_columns(rows, n)
        for r in rows:
            assert len({cols[j] for j in r}) == len(r)
        by_row = color_rows(rows, n)
        for c in transpose(rows, n):
            assert len({by_row[i] for i in c}) == len(c)


def test_fewest_sweeps_is_the_better_colouring_and_skips_what_cannot_win(monkeypatch):
    """The colouring with fewer colours (columns on a tie), whichever order it is found
    in; a full row gives each column its colour without the greedy search."""
    import wengert.ad.sparse as S
    rng = np.random.default_rng(3)
    greedy = S.color_columns
    for _ in range(200):
        m, n = rng.integers(1, 10, 2)
        density = rng.uniform(0.05, 1.0)
        rows = [[j for j in range(n) if rng.uniform() < density] for _ in range(m)]
        by_cols, by_rows = color_columns(rows, n), color_rows(rows, n)
        want = ("rows", by_rows) if max(by_rows, default=-1) < max(by_cols, default=-1) \
            else ("columns", by_cols)
        assert fewest_sweeps(rows, n) == want
    # a dense 300 x 300 pattern: one colouring, in time linear in its entries
    calls = []
    monkeypatch.setattr(S, "transpose", lambda *a: calls.append(1) or transpose(*a))
    assert fewest_sweeps([list(range(300))] * 300, 300) == ("columns", list(range(300)))
    assert len(calls) == 1                  # the bound's, not a greedy search's
    assert greedy([[0, 1, 2], [1]], 3) == [0, 1, 2]


def test_a_dense_row_is_compressed_by_rows():
    f = lambda x: [sum(x)] + [wm.sin(v) for v in x]       # an arrow: dense first row
    x = [0.1, 0.2, 0.3, 0.4, 0.5]
    g = wg.trace(f, x)
    rows = sparsity(g, g.inputs, g.outputs)
    assert max(color_columns(rows, 5)) + 1 == 5 and max(color_rows(rows, 5)) + 1 == 2
    assert_close(wg.sparse_jacobian(f)(x).toarray(), np.array(wg.jacfwd(f)(x)))


UNARY = [wm.sin, wm.exp, lambda v: v * v, lambda v: -v, wm.tanh]
BINARY = [lambda a, b: a * b, lambda a, b: a + b, lambda a, b: a - b, lambda a, b: a / (1 + b * b)]


def random_sparse_function(seed, n, m, steps=10):
    rng = np.random.default_rng(seed)
    prog = []
    for k in range(steps):
        a, b = rng.integers(n + k, size=2)
        if rng.random() < 0.5:
            prog.append((UNARY[rng.integers(len(UNARY))], int(a)))
        else:
            prog.append((BINARY[rng.integers(len(BINARY))], int(a), int(b)))
    outs = rng.integers(0, n + steps, m).tolist()

    def f(x):
        vals = list(x)
        for op, *args in prog:
            vals.append(op(*[vals[a] for a in args]))
        return [vals[i] for i in outs]
    return f


def test_sparse_equals_dense_and_pattern_covers_the_nonzeros():
    rng = np.random.default_rng(3)
    for seed in range(40):
        n, m = 1 + seed % 6, 1 + seed % 5
        f = random_sparse_function(seed, n, m)
        x = list(rng.uniform(-1, 1, n))
        dense = np.array(wg.jacfwd(f)(x), dtype=float).reshape(m, n)
        g = wg.trace(f, x)
        pattern = np.zeros((m, n), bool)
        for i, r in enumerate(sparsity(g, g.inputs, g.outputs)):
            pattern[i, r] = True
        assert not np.any(dense[~pattern])
        assert_close(wg.sparse_jacobian(f)(x).toarray(), dense, rtol=1e-13, atol=1e-15)
        assert_close(wg.jacobian_graph(f, x, mode="sparse")(x), dense, rtol=1e-13, atol=1e-15)


def test_array_leaves_broadcasting_and_sums():
    def f(v, w, s):
        return wm.sin(v) * s + w, v * s           # w is broadcast along the rows of v
    v = np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
    w = np.array([1.0, -1.0, 2.0])
    args = (v, w, 0.7)
    g = wg.trace(f, *args)
    rows = sparsity(g, g.inputs, g.outputs)
    assert rows[4] == [4, 6 + 1, 9]               # out[1, 1]: v[1, 1], w[1] and s
    for argnums in (0, (0, 1, 2)):
        expected = wg.jacfwd(f, argnums=argnums)(*args)
        got = wg.jacobian(f, argnums=argnums, mode="sparse")(*args)
        for a, b in zip(wg.tree.flatten(got)[0], wg.tree.flatten(expected)[0]):
            assert_close(a, b, rtol=1e-14)
    assert wg.sparse_jacobian(f, argnums=(0, 1, 2))(*args).shape == (12, 10)

    # a reverse sweep through broadcasting sums back with sum_to: column sums of v
    def colsum(v, w):
        return wg.vjp(lambda a, b: a * b, v, w)[1](np.ones((2, 3)))[1]
    g = wg.trace(colsum, v, w)
    assert any(n.op.name == "sum_to" for n in g.nodes)
    assert sparsity(g, g.inputs, g.outputs) == [[0, 3], [1, 4], [2, 5]]
    expected = wg.jacfwd(colsum, argnums=(0, 1))(v, w)
    got = wg.jacobian(colsum, argnums=(0, 1), mode="sparse")(v, w)
    assert_close(got[0], expected[0]) and assert_close(got[1], expected[1])


def test_compressed_by_hand_and_symbolic():
    g = wg.trace(lambda x, y, z: (x * y, z * z), 1.0, 2.0, 3.0, abstract=False)
    rows = sparsity(g, g.inputs, g.outputs)
    I, J, V = compressed(g, g.inputs, g.outputs, rows, color_columns(rows, 3))
    assert list(zip(I.tolist(), J.tolist(), V.tolist())) == [(0, 0, 2.0), (0, 1, 1.0),
                                                             (1, 2, 6.0)]
    Ir, Jr, Vr = compressed(g, g.inputs, g.outputs, rows, color_rows(rows, 3), by="rows")
    assert (Ir.tolist(), Jr.tolist(), Vr.tolist()) == (I.tolist(), J.tolist(), V.tolist())
    Is, Js, Vs = compressed(g, g.inputs, g.outputs, rows, color_columns(rows, 3), symbolic=True)
    assert [v.value for v in Vs] == [2.0, 1.0, 6.0]


def test_sparse_jacobian_inside_a_transformation_says_what_to_use():
    with pytest.raises(NotImplementedError, match="mode='sparse'"):
        wg.grad(lambda x: wg.sparse_jacobian(lambda y: y * x)(x).sum())(1.0)


def test_sparse_matrices_have_the_dtype_of_dense_jacobians():
    # (they were float64 or complex128 whatever the code's precision)
    x = np.array([1.0, 2.0, 3.0], np.float32)
    for sparse, dense, f in ((wg.sparse_jacobian, wg.jacfwd, lambda x: x * x),
                             (wg.sparse_hessian, wg.hessian, lambda x: (x ** 3).sum())):
        got, want = sparse(f)(x), dense(f)(x)
        assert got.dtype == want.dtype == np.float32
        np.testing.assert_array_equal(got.toarray(), want)
    assert wg.sparse_jacobian(lambda x: x * np.float64(2.0))(x).dtype == np.float64
    z = x.astype(np.complex64)
    assert wg.sparse_jacobian(lambda z: z * z, holomorphic=True)(z).dtype == np.complex64


def test_missing_scipy_is_explained(monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.sparse", None)
    with pytest.raises(ImportError, match="wengert\\[sparse\\]"):
        wg.sparse_jacobian(broyden)


# ---- wengert.numpy code: structural primitives map elements exactly --------------------------------
def broyden_array(x):
    z = wnp.zeros(1)
    return (3 - 2 * x) * x - wnp.concatenate([z, x[:-1]]) - 2 * wnp.concatenate([x[1:], z]) + 1


def test_array_broyden_pattern_through_slices_and_concatenate():
    x = np.linspace(-1, 1, 40)
    g = wg.trace(broyden_array, x)
    rows = sparsity(g, g.inputs, g.outputs)
    assert rows == [[j for j in (i - 1, i, i + 1) if 0 <= j < 40] for i in range(40)]
    assert max(color_columns(rows, 40)) + 1 == 3
    assert_close(wg.sparse_jacobian(broyden_array)(x).toarray(), wg.jacfwd(broyden_array)(x),
                 rtol=1e-14)


def test_array_rosenbrock_hessian_and_matmul_patterns():
    def rosen(x):
        a, b = x[::2], x[1::2]
        return wnp.sum(100 * (b - a ** 2) ** 2 + (1 - a) ** 2)
    x = np.linspace(-1, 1, 10)
    H = wg.sparse_hessian(rosen)(x)
    assert H.nnz == 20
    assert_close(H.toarray(), wg.hessian(rosen)(x), rtol=1e-13)

    A = np.diag(np.arange(1.0, 6.0)) + np.diag(np.ones(4), 1)     # bidiagonal constant
    v = np.linspace(0.1, 0.5, 5)
    g = wg.trace(lambda v: wnp.tanh(A @ v), v)
    assert sparsity(g, g.inputs, g.outputs) == [[0, 1], [1, 2], [2, 3], [3, 4], [4]]
    # a primitive the pattern does not know (max) mixes everything: safe, and still right
    mixed = lambda v: wnp.tanh(A @ v) + wnp.max(v)
    g = wg.trace(mixed, v)
    assert sparsity(g, g.inputs, g.outputs) == [[0, 1, 2, 3, 4]] * 5
    assert_close(wg.sparse_jacobian(mixed)(v).toarray(), wg.jacfwd(mixed)(v), rtol=1e-14)


@pytest.mark.parametrize("mode", ["fwd", "rev", "sparse", "auto"])
def test_jacobian_of_arrays_inside_another_transformation(mode):
    import wengert.numpy as wnp
    f = lambda x: wnp.sum(wg.jacobian(lambda y: y * y * x[0], mode=mode)(x))
    x = np.array([1.0, 2.0])
    expected = wg.grad(lambda x: wnp.sum(wg.jacfwd(lambda y: y * y * x[0])(x)))(x)
    np.testing.assert_allclose(wg.grad(f)(x), expected, rtol=1e-14)
    np.testing.assert_allclose(expected, [4 * 1 + 2 * 2, 2 * 1], rtol=1e-14)   # d 2x0(x0+x1)


def test_outputs_that_do_not_depend_on_the_inputs_keep_their_rows():
    # an output array independent of the inputs has one (empty) row per element: it was
    # counted as one row, and every row after it was shifted onto the wrong output
    x = np.array([0.7, 1.3])
    for f in (lambda x: (np.array([1.0, 2.0]), x * x),
              lambda x: (x > 1.0, x * x, wnp.astype(x, np.int32), x[0] * x)):
        g = wg.trace(f, x)
        assert len(sparsity(g, g.inputs, g.outputs)) == sum(o.size for o in g.outputs)
        for got, want in zip(wg.jacobian(f, mode="sparse")(x), wg.jacfwd(f)(x)):
            assert got.shape == want.shape
            assert_close(got, want)


@pytest.mark.parametrize("mode", ["fwd", "rev", "sparse", "auto"])
def test_every_mode_on_array_pytrees_against_central_differences(mode):
    """wg.jacobian's modes on array arguments and results (a pytree out, two arrays in)
    agree with central differences; fwd and rev run jacfwd's batched sweeps, sparse the
    coloured ones, so each path is checked on its own."""
    import wengert.numpy as wnp
    from fd import fd_jacobian
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(3, 4)), rng.normal(size=4)

    def f(a, b):
        return {"y": wnp.tanh(a @ b) * b[:3], "z": wnp.sum(wnp.sin(a) * b, axis=0)}

    J = wg.jacobian(f, argnums=(0, 1), mode=mode)(a, b)
    for key in ("y", "z"):
        for k, g in enumerate((lambda a: f(a, b)[key], lambda b: f(a, b)[key])):
            x = (a, b)[k]
            fd = fd_jacobian(g, x, 1e-6).reshape(J[key][k].shape)
            assert_close(J[key][k], fd, rtol=1e-7, atol=1e-9)


def _broyden_array(x):
    z = wnp.zeros(1)
    return (3 - 2 * x) * x - wnp.concatenate([z, x[:-1]]) - 2 * wnp.concatenate([x[1:], z]) + 1


def test_pattern_memory_follows_the_entries_not_n_squared():
    # each input element's set was a Python int bitset as wide as its number, so the
    # input array alone held n²/2 bits and every array node copied such sets: 223 MB
    # here, 5 GB at n = 10^5.  Sets of their own members take a few MB.
    import tracemalloc
    n = 20_000
    g = wg.trace(_broyden_array, np.full(n, 0.5))
    tracemalloc.start()
    try:
        rows = sparsity(g, g.inputs, g.outputs)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert rows[:2] == [[0, 1], [0, 1, 2]] and rows[-1] == [n - 2, n - 1]
    assert sum(map(len, rows)) == 3 * n - 2
    assert peak < 60e6, peak


def test_a_long_sum_and_a_deep_chain_unite_sets_without_copying_or_recursion():
    # a running sum of n terms, or a chain of n steps, unites sets lazily: copying them
    # at every step cost n² (a sum of 20,000 products took 30 s), and the union is taken
    # by a walk, not by recursion over a chain 300,000 deep
    from wengert.ad.sparse import _Deps
    n = 300_000
    d = _Deps(frozenset((0,)))
    for k in range(1, n):
        d = d + _Deps(frozenset((k % 7,))) * 2.0
    assert d.members() == frozenset(range(7))
    x = [0.5] * 2000
    g = wg.trace(lambda x: sum(x[i] * x[i + 1] for i in range(len(x) - 1)), x)
    assert sparsity(g, g.inputs, g.outputs) == [list(range(2000))]


def _dense_nonzeros(f, x):
    J = np.asarray(wg.jacfwd(f)(x)).reshape(-1, x.size)
    return [np.flatnonzero(row).tolist() for row in J]


def _lap(x):
    return wnp.concatenate([x[:1], x[:-2] - 2 * x[1:-1] + x[2:], x[-1:]])


KEEP_SPARSE = {
    # a JAX-style boundary row, x.at[i].set(v)
    "index_set": lambda x: _lap(x).at[0].set(x[0] - 1.0),
    "index_set into constants": lambda x: wnp.at(np.zeros(x.shape))[1:].set(x[:-1] * x[1:]),
    "astype": lambda x: _lap(x.astype(np.float32)).astype(np.float64),
    "conj": lambda x: wnp.conj(_lap(x)),
    # diag's off-diagonal is an exact zero: a product with it is no dependence
    "diag matmul": lambda x: wnp.diag(x) @ _lap(x),
    "take_along_axis": lambda x: wnp.take_along_axis(x, np.arange(x.size)[::-1], axis=0)
    * x,
    "cumprod": lambda x: wnp.cumprod(x.reshape(-1, 2), axis=1).ravel(),
    # interp: each value its own x's; in fp, its two neighbours' where x and xp are known
    "interp in x": lambda x: wnp.interp(2 * x, [0.0, 1.0, 2.5, 3.5], [1.0, -1.0, 2.0, 0.0]) * x,
    "interp in fp": lambda x: wnp.interp(np.linspace(-0.5, 10.5, 12), np.arange(1.0, 13.0),
                                         x ** 2, right=x[3]),
    # (a maximum depends on every element it compares, though only one has a derivative)
    "max along an axis": lambda x: wnp.max(x.reshape(-1, 2), axis=1),
    "min along an axis": lambda x: wnp.min(x.reshape(-1, 2) ** 2, axis=1),
}
COMPARED = {"max along an axis", "min along an axis"}


@pytest.mark.parametrize("name", list(KEEP_SPARSE))
def test_patterns_stay_sparse_through_casts_sets_gathers_and_structural_zeros(name):
    # these ops were taken to mix every element of their arguments (or met diag's zeros as
    # unknown constants), so the pattern went dense: 2,000 sweeps instead of 3
    f = KEEP_SPARSE[name]
    x = np.linspace(0.3, 1.7, 12)
    g = wg.trace(f, x, abstract=False)
    rows = sparsity(g, g.inputs, g.outputs)
    if name in COMPARED:
        assert rows == [[k, k + 1] for k in range(0, x.size, 2)]
    else:
        assert rows == _dense_nonzeros(f, x)
    got = wg.sparse_jacobian(f)(x).toarray()
    assert_close(got, np.asarray(wg.jacfwd(f)(x)).reshape(got.shape))


def test_a_laplacian_with_a_boundary_row_needs_three_sweeps():
    n = 2000
    f = KEEP_SPARSE["index_set"]
    for abstract in (False, True):
        g = wg.trace(f, np.linspace(0, 1, n), abstract=abstract)
        rows = sparsity(g, g.inputs, g.outputs)
        assert sum(map(len, rows)) == 3 * n - 4
        assert max(fewest_sweeps(rows, n)[1]) + 1 == 3
    g = wg.trace(KEEP_SPARSE["diag matmul"], np.linspace(0, 1, 50))     # zeros without
    assert max(map(len, sparsity(g, g.inputs, g.outputs))) == 3         # values: known too


@pytest.mark.parametrize("mode", ["fwd", "rev", "eliminate", "sparse", "auto"])
def test_jacobian_has_aux_as_jacfwd(mode):
    # jacobian took no has_aux, though jacfwd and jacrev do and the docs present it as the
    # entry point in jacfwd's layout
    def f(x, y):
        return (x * wm.sin(y), x * y), {"value": x * y, "tag": "kept"}

    J, aux = wg.jacobian(f, argnums=(0, 1), mode=mode, has_aux=True)(0.7, 1.3)
    J0, aux0 = wg.jacfwd(f, argnums=(0, 1), has_aux=True)(0.7, 1.3)
    assert_close(np.array(J), np.array(J0))
    assert aux == aux0 == {"value": 0.7 * 1.3, "tag": "kept"}
    x = np.array([0.5, -1.0, 2.0])
    J, aux = wg.jacobian(lambda x: (wnp.sin(x) * x[0], wnp.sum(x)), mode=mode if
                         mode != "eliminate" else "auto", has_aux=True)(x)
    assert_close(J, np.diag(np.cos(x) * x[0]) + np.outer(np.sin(x), [1, 0, 0]))
    assert aux == pytest.approx(1.5)


def test_sparse_jacobian_and_hessian_have_aux():
    x = list(np.random.default_rng(5).uniform(-1, 1, 8))
    J, aux = wg.sparse_jacobian(lambda x: (broyden(x), len(x)), has_aux=True)(x)
    assert_close(J.toarray(), np.array(wg.jacfwd(broyden)(x)))
    assert aux == 8
    H, aux = wg.sparse_hessian(lambda x: (rosenbrock(x), [rosenbrock(x), 1]),
                               has_aux=True)(x)
    assert_close(H.toarray(), np.array(wg.hessian(rosenbrock)(x)))
    assert aux == [pytest.approx(rosenbrock(x)), 1]
    assert type(wg.sparse_hessian(rosenbrock)(x)).__name__ == "csr_matrix"
