"""x.at[index].set(v) and its relatives (JAX's functional index updates): values against a
loop that applies the updates one by one, derivatives against finite differences to second
order, under wg.compile and wg.vmap, and the errors."""
import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from fd import check_grads, fd_derivative, fd_jacobian

rng = np.random.default_rng(20261123)

OPS = {
    "set": lambda a, b: b,
    "add": lambda a, b: a + b,
    "subtract": lambda a, b: a - b,
    "multiply": lambda a, b: a * b,
    "divide": lambda a, b: a / b,
    "power": lambda a, b: a ** b,
    "min": min,
    "max": max,
}

# (shape of x, index, shape of the values): basic indices, slices, masks, integer arrays
# with and without repeats, negative indices, and values that broadcast
CASES = [
    ((5,), 2, ()),
    ((5,), -1, ()),
    ((5,), slice(1, 4), (3,)),
    ((5,), slice(None, None, 2), ()),
    ((4, 3), (1, slice(None)), (3,)),
    ((4, 3), (slice(None), 0), (4,)),
    ((4, 3), (Ellipsis, 1), (1,)),
    ((4, 3), np.array([True, False, True, True]), (3,)),
    ((6,), np.array([4, 0, 2]), (3,)),
    ((6,), np.array([1, 3, 1, 1, 5]), (5,)),                      # repeats
    ((4, 3), (np.array([0, 2, 0]), np.array([1, 1, 1])), (3,)),   # a repeated element
    ((4, 3), (np.array([[3], [0]]), slice(0, 2)), (2, 1, 2)),
    ((3, 4, 2), (slice(None), np.array([0, 3, 3]), 1), (3, 3)),   # repeats, a slice first
    # rows, and elements by a multi-index, repeated and negative (added up by bincount)
    ((5, 3), np.array([4, -1, 0, 4]), (3,)),
    ((3, 4, 2), (np.array([0, -3, 0]), np.array([1, 3, 1])), (3, 1)),
    ((4, 3, 2), (np.array([[0], [-1]]), np.array([[1, 2, 1]])), (2, 3, 2)),
]
IDS = [f"{shape}-{index!r}"[:60] for shape, index, _ in CASES]


def reference(x, index, v, op):
    """The updates applied one at a time, in index order, to a copy of x."""
    out = np.array(x, dtype=float)
    targets = np.arange(out.size).reshape(out.shape)[index]
    values = np.broadcast_to(v, targets.shape)
    flat = out.reshape(-1)
    for t, value in zip(targets.reshape(-1), values.reshape(-1)):
        flat[t] = OPS[op](flat[t], value)
    return out


def update(x, index, op, v):
    return getattr(x.at[index] if type(x) is wg.Node else wnp.at(x)[index], op)(v)


@pytest.mark.parametrize("shape, index, vshape", CASES, ids=IDS)
@pytest.mark.parametrize("op", sorted(OPS))
def test_values_follow_the_updates_applied_one_by_one(shape, index, vshape, op):
    x = rng.uniform(0.5, 2.0, size=shape)
    v = rng.uniform(0.5, 2.0, size=vshape)
    want = reference(x, index, v, op)
    got = update(x, index, op, v)                 # plain arrays
    assert type(got) is np.ndarray and got.shape == shape
    np.testing.assert_allclose(got, want, rtol=1e-14)
    traced = wg.jvp(lambda x, v: update(x, index, op, v), (x, v), (x, v))[0]
    np.testing.assert_allclose(traced, want, rtol=1e-14)


@pytest.mark.parametrize("shape, index, vshape", CASES, ids=IDS)
@pytest.mark.parametrize("op", sorted(OPS))
def test_derivatives_in_x_and_v_to_second_order(shape, index, vshape, op):
    # values apart, so that min and max are differentiable at them
    x = rng.permutation(np.linspace(0.6, 1.9, int(np.prod(shape)))).reshape(shape)
    v = rng.uniform(0.5, 2.0, size=vshape) + 0.013
    check_grads(lambda x, v: update(x, index, op, v) ** 2, x, v, order=2)


def test_set_with_repeated_indices_keeps_numpys_value_and_its_derivative():
    x = np.zeros(4)
    index = np.array([1, 1, 3, 1])
    v = np.array([10.0, 20.0, 30.0, 40.0])
    plain = x.copy()
    plain[index] = v                              # NumPy's choice among the repeats
    np.testing.assert_array_equal(wnp.at(x)[index].set(v), plain)
    kept = [i for i in range(4) if plain[index[i]] == v[i]]
    g = wg.grad(lambda v: wnp.sum(wnp.at(x)[index].set(v) * np.arange(1.0, 5.0)))(v)
    want = np.zeros(4)
    want[kept] = np.arange(1.0, 5.0)[index[kept]]
    np.testing.assert_array_equal(g, want)
    # the overwritten elements of x get no cotangent
    gx = wg.grad(lambda x: wnp.sum(x.at[index].set(v) * np.arange(1.0, 5.0)))(np.ones(4))
    np.testing.assert_array_equal(gx, [1.0, 0.0, 3.0, 0.0])


@pytest.mark.parametrize("op", ["min", "max"])
def test_min_and_max_with_many_repeats_and_ties_are_numpys_fold(op):
    # min and max reduce repeated values in pairs (log2 of the repeats steps, not one per
    # repeat): the value must still be NumPy's left fold, bit for bit (signed zeros: the
    # last of the tied values), and the derivative go where the fold's rule sends it
    # (the first of the tied values, x before v)
    ufunc = {"min": np.minimum, "max": np.maximum}[op]
    index = np.where(rng.random(300) < 0.5, 2, rng.integers(0, 6, 300))   # a hub: 2
    v = rng.choice([-1.0, -0.0, 0.0, 1.0, 2.0], size=300)
    x = np.array([0.0, -0.0, 1.0, -1.0, 2.0, 0.0])
    want = x.copy()
    ufunc.at(want, index, v)
    got = getattr(wnp.at(x)[index], op)(v)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    # who holds the derivative, as the rule of maximum (minimum) passes it on one by one
    holder = {t: ("x", t) for t in range(6)}
    fold = x.copy()
    keeps = (lambda a, b: a >= b) if op == "max" else (lambda a, b: a <= b)
    for k, t in enumerate(index):
        if not keeps(fold[t], v[k]):
            holder[t] = ("v", k)
        fold[t] = ufunc(fold[t], v[k])
    weights = rng.uniform(1.0, 2.0, 6)
    gx, gv = wg.grad(lambda x, v: wnp.sum(getattr(wnp.at(x)[index], op)(v) * weights),
                     argnums=(0, 1))(x, v)
    want_x, want_v = np.zeros(6), np.zeros(300)
    for t, (which, k) in holder.items():
        (want_x if which == "x" else want_v)[k] = weights[t]
    np.testing.assert_array_equal(gx, want_x)
    np.testing.assert_array_equal(gv, want_v)
    # a hub named 1,000 times takes a graph of tens of nodes, not thousands
    graph = wg.trace(lambda v: getattr(wnp.at(np.zeros(3))[np.zeros(1000, int)], op)(v),
                     np.ones(1000))
    assert len(graph.live_nodes()) < 60


def test_a_model_filled_in_from_zeros_as_in_jax():
    def loss(w):
        m = wnp.zeros((2, 2))          # a NumPy array, which has no .at: wnp.at(m) works
        m = wnp.at(m)[0, 0].set(w[0])  # on both, so loss runs on plain numbers too
        m = wnp.at(m)[1, :].set(w[1:])
        m = wnp.at(m)[np.diag_indices(2)].add(1.0)
        return wnp.linalg.det(m)
    w = np.array([0.5, 2.0, 3.0])
    # det [[w0+1, 0], [w1, w2+1]] = (w0+1)(w2+1)
    assert loss(w) == pytest.approx(1.5 * 4.0)
    np.testing.assert_allclose(wg.grad(loss)(w), [4.0, 0.0, 1.5], rtol=1e-14)
    check_grads(loss, w, order=2)


def test_dtypes_follow_x_as_in_jax():
    x = np.arange(4)
    out = wnp.at(x)[1].add(2.7)                    # 2.7 cast to x's int dtype first
    assert out.dtype == x.dtype and out.tolist() == [0, 3, 2, 3]
    x32 = np.ones(3, dtype=np.float32)
    got = wg.grad(lambda v: wnp.sum(wnp.at(x32)[1].set(v) * 2.0))(1.5)
    assert got == 2.0
    assert wg.jvp(lambda x: x.at[0].multiply(3.0), (x32,), (x32,))[0].dtype == np.float32


def test_under_compile_and_vmap():
    index = np.array([0, 2, 0])

    def f(x, v):
        return wnp.sum(wnp.sin(x.at[index].add(v).at[1:3].max(v[:2])) ** 2)
    x, v = rng.normal(size=4), rng.normal(size=3)
    want = wg.grad(f, argnums=(0, 1))(x, v)
    compiled = wg.compile(wg.grad(f, argnums=(0, 1)))
    for got, w in zip(compiled(x, v), want):
        np.testing.assert_allclose(got, w, rtol=1e-13)
    xs, vs = rng.normal(size=(5, 4)), rng.normal(size=(5, 3))
    batched = wg.vmap(wg.grad(f, argnums=(0, 1)))(xs, vs)
    for k in range(5):
        for got, w in zip(batched, wg.grad(f, argnums=(0, 1))(xs[k], vs[k])):
            np.testing.assert_allclose(got[k], w, rtol=1e-13)
    # shared values, mapped x: the batch axis of set's values is broadcast
    out = wg.vmap(lambda x: x.at[1:].set(v[:3]))(xs)
    np.testing.assert_array_equal(out[:, 1:], np.broadcast_to(v[:3], (5, 3)))


def test_traced_values_cannot_be_assigned_to_in_place():
    def f(x):
        x[0] = 1.0
        return x
    with pytest.raises(TypeError, match=r"cannot be assigned to in place .* x = "
                                        r"x\.at\[index\]\.set\(v\)"):
        wg.grad(lambda x: wnp.sum(f(x * 2.0)))(np.ones(3))


def test_errors():
    x = np.ones(3)
    with pytest.raises(IndexError):
        wnp.at(x)[5].set(0.0)
    with pytest.raises(NotImplementedError, match=r"mode='drop'.*follows NumPy"):
        wnp.at(x)[1].set(0.0, mode="drop")
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        wnp.at(x)[1].add(0.0, bogus=1)
    with pytest.raises(ValueError):
        wnp.at(x)[0:2].set(np.ones(3))            # does not broadcast
    wnp.at(x)[1].set(0.0, indices_are_sorted=True, unique_indices=True)   # JAX's hints


@pytest.mark.parametrize("shape, index, vshape", CASES, ids=IDS)
@pytest.mark.parametrize("mapped", [(True, True), (True, False), (False, True)],
                         ids=["both", "x", "v"])
def test_vmap_batches_set_in_one_operation(shape, index, vshape, mapped, monkeypatch):
    import wengert.vectorize as vectorize
    xs = rng.normal(size=(3,) + shape)
    vs = rng.normal(size=(3,) + vshape)
    args = (xs if mapped[0] else xs[0], vs if mapped[1] else vs[0])
    in_axes = tuple(0 if m else None for m in mapped)
    want = [wnp.at(args[0][k] if mapped[0] else args[0])[index].set(
        args[1][k] if mapped[1] else args[1]) for k in range(3)]
    calls = []
    real = vectorize._one_per_example
    monkeypatch.setattr(vectorize, "_one_per_example",
                        lambda *a, **k: calls.append(a) or real(*a, **k))
    got = wg.vmap(lambda x, v: x.at[index].set(v) if type(x) is wg.Node
                  else wnp.at(x)[index].set(v), in_axes=in_axes)(*args)
    np.testing.assert_array_equal(got, np.stack(want))
    assert not calls


# x.at[...] with integers traced without values ("T": a compiled argument here; a loop's
# counter or a vmapped label alike): (shape of x, index, the integers' values)
TRACED = [
    ((5,), ("T",), (2,)),
    ((5,), ("T",), (-1,)),
    ((4, 3), ("T", slice(None)), (2,)),
    ((4, 3), (slice(None), "T"), (-2,)),
    ((4, 3), (Ellipsis, "T"), (1,)),
    ((4, 3), ("T", 1), (3,)),
    ((4, 3), ("T", "T"), (2, -1)),
    ((3, 4, 2), (slice(1, 3), "T", None, 1), (0,)),
]
TRACED_IDS = [f"{shape}-{index!r}-{ints}"[:60] for shape, index, ints in TRACED]


def _filled(index, ints):
    it = iter(ints)
    return tuple(next(it) if i == "T" else i for i in index)


@pytest.mark.parametrize("shape, index, ints", TRACED, ids=TRACED_IDS)
@pytest.mark.parametrize("op", sorted(OPS))
def test_integers_traced_without_values_index_an_update(shape, index, ints, op):
    x = rng.uniform(0.5, 2.0, size=shape)
    concrete = _filled(index, ints)
    v = rng.uniform(0.5, 2.0, size=x[concrete].shape)
    ints = [np.int64(i) for i in ints]

    def f(x, v, *ii):
        return update(x, _filled(index, ii), op, v)
    compiled = wg.compile(f)
    np.testing.assert_allclose(compiled(x, v, *ints), reference(x, concrete, v, op),
                               rtol=1e-14)
    other = tuple(np.int64(0) for _ in ints)      # (the same code: the index is traced)
    np.testing.assert_allclose(compiled(x, v, *other),
                               reference(x, _filled(index, (0,) * len(ints)), v, op),
                               rtol=1e-14)
    # the derivatives: of the compiled update against central differences of its values
    w = rng.normal(size=shape)
    loss = wg.compile(lambda x, v, *ii: wnp.sum(wnp.sin(f(x, v, *ii) * w)))
    gx, gv = wg.compile(wg.grad(lambda x, v, *ii: wnp.sum(wnp.sin(f(x, v, *ii) * w)),
                                argnums=(0, 1)))(x, v, *ints)
    np.testing.assert_allclose(
        gx, fd_jacobian(lambda x: loss(x, v, *ints), x, 1e-6).reshape(shape),
        rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(
        gv, fd_jacobian(lambda v: loss(x, v, *ints), v, 1e-6).reshape(np.shape(v)),
        rtol=1e-6, atol=1e-8)
    assert np.shape(gv) == np.shape(v)


def test_a_traced_loop_counter_and_a_vmapped_label_index_updates():
    def fill(w):                    # JAX's most common loop: fill an array in place
        return wg.fori_loop(0, 5, lambda i, a: wnp.at(a)[i].set(w * i ** 2), np.zeros(5))
    loss = lambda w: wnp.sum(wnp.sin(fill(w)))                      # noqa: E731
    w = 0.37
    np.testing.assert_allclose(wg.compile(fill)(w), w * np.arange(5.0) ** 2, rtol=1e-15)
    np.testing.assert_allclose(wg.compile(wg.grad(loss))(w), fd_derivative(loss, w),
                               rtol=1e-7)
    labels = np.array([3, 0, 2, 3])
    one_hot = wg.vmap(lambda y: wnp.at(wnp.zeros(4))[y].set(1.0))(labels)
    np.testing.assert_array_equal(one_hot, np.eye(4)[labels])
    z = rng.normal(size=(4, 4))
    bumped = wg.vmap(lambda z, y: z.at[y].add(-1.0))
    np.testing.assert_allclose(bumped(z, labels), z - np.eye(4)[labels], rtol=1e-15)
    g = wg.grad(lambda z: wnp.sum(bumped(z, labels) ** 3))(z)
    np.testing.assert_allclose(g, 3 * (z - np.eye(4)[labels]) ** 2, rtol=1e-13)


def test_a_traced_index_out_of_bounds_raises_as_numpy_does():
    # (set, which reads nothing at the index, dropped the update, as JAX does)
    for op in sorted(OPS):
        f = wg.compile(lambda x, i: update(x, i, op, 1.0))
        with pytest.raises(IndexError):
            f(np.ones(3), np.int64(3))
        with pytest.raises(IndexError):
            f(np.ones(3), np.int64(-4))
        assert f(np.ones(3), np.int64(-3)).tolist() == reference(np.ones(3), -3, 1.0, op).tolist()
    with pytest.raises(wg.ConcretizationError, match=r"x\.at\[i\], x\.at\[:, i\]"):
        wg.vmap(lambda i: wnp.at(wnp.zeros(4))[i].set(1.0))(np.array([[0, 2], [1, 3]]))


def test_an_index_array_out_of_bounds_raises_as_numpy_does_when_adding_rows():
    # x.at[rows].add(v) on a table is added up by bincount, whose bounds check is its own
    def added(index, v):
        return wg.grad(lambda x: wnp.sum(x.at[index].add(v) ** 2))(np.zeros((3, 2)))

    for rows in ([0, 3], [0, -4]):
        with pytest.raises(IndexError, match="out of bounds for axis 0 with size 3"):
            added(np.array(rows), np.ones((2, 2)))
    with pytest.raises(IndexError, match="out of bounds for axis 1 with size 2"):
        added((np.array([0, 1]), np.array([0, 2])), 1.0)
    np.testing.assert_array_equal(added(np.array([0, -1, 0]), np.ones((3, 2))),
                                  [[4, 4], [0, 0], [2, 2]])


def test_rows_added_up_keep_the_cotangents_precision():
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    g = wg.grad(lambda x: wnp.sum(x[np.array([0, 2, 0, -1])] ** 2))(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, 2 * x * np.array([[2], [0], [2]]), rtol=1e-6)
