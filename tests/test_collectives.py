"""Collectives under wg.vmap(axis_name=...) and wg.pmap: each one's values against a NumPy
closed form over the batch and against JAX; derivatives of the batched function against
central differences (to second order for the linear ones), per-example derivatives inside
the vmap against JAX's (psum's transpose is psum); data-parallel training with pmean,
batch norm, nested names, loops, compile, and the errors."""

import functools

import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from wengert import lax

from fd import assert_close, check_grads, fd_jacobian

RNG = np.random.default_rng(20240611)
B = 4                   # examples in a batch (none of the examples' own lengths)


def _jax():
    return pytest.importorskip("jax")      # (in float64, as tests/conftest.py runs it)


def _both(case):
    """The case run with wengert and with JAX: the same code, given (vmap module, lax,
    numpy)."""
    jax = _jax()
    import jax.numpy as jnp
    return case(wg, lax, wnp), case(jax, jax.lax, jnp)


def _same(ours, theirs, rtol=1e-12):
    leaves, tree = wg.tree_util.tree_flatten(ours)
    ref, ref_tree = wg.tree_util.tree_flatten(theirs)
    assert len(leaves) == len(ref), (tree, ref_tree)
    for a, b in zip(leaves, ref):
        assert np.shape(a) == np.shape(b)
        assert_close(a, np.asarray(b), rtol=rtol, atol=1e-12)


# --------------------------------------------------------------------------------------
# values: name -> (per-example f of (lax, np), batch arguments, in_axes, NumPy closed form
# of the whole batch's result, with the batch on axis 0)
# --------------------------------------------------------------------------------------
X = RNG.normal(size=(B, 3))
M = RNG.normal(size=(B, 2, 3))
S = RNG.normal(size=(B, B, 2))            # an axis with one entry per example
T = RNG.normal(size=(B, 2 * B))           # ... with two per example
W = RNG.normal(size=3)                    # shared by every example
RING = [(k, (k + 1) % B) for k in range(B)]
PAIRS = [(0, 2), (2, 0), (1, 3), (3, 1)]
RNG2 = np.random.default_rng(20250101)   # (the arrays above kept as they were drawn)
A0 = RNG2.normal(size=(B, B, 3))          # all_to_all: one entry per example on axis 0
A1 = RNG2.normal(size=(B, 3, B))          # ... on axis 1
AT0 = RNG2.normal(size=(B, 2 * B, 6))     # ... two per example on axis 0 (tiled)
AT1 = RNG2.normal(size=(B, 3, 2 * B))     # ... on axis 1
SHUFFLE = [2, 0, 3, 1]                    # example i receives example SHUFFLE[i]'s value


def _all_to_all(split, concat):
    """all_to_all's closed form over the batch: example p stacks every example's entry p
    along split, at concat."""
    return lambda x: np.stack([np.moveaxis(np.take(x, p, axis=1 + split), 0, concat)
                               for p in range(len(x))])


def _all_to_all_tiled(split, concat):
    """... example p joins every example's p-th block along split, along concat."""
    return lambda x: np.stack([np.concatenate([np.split(q, len(x), axis=split)[p] for q in x],
                                              axis=concat) for p in range(len(x))])


def _every(v):
    """A value that is the same for every example, as vmap returns it."""
    return np.broadcast_to(v, (B,) + np.shape(v))


VALUES = {
    "psum": (lambda l, n: lambda x: l.psum(x, "i"), (X,), 0, lambda x: _every(x.sum(0))),
    "pmean": (lambda l, n: lambda x: l.pmean(x, "i"), (X,), 0, lambda x: _every(x.mean(0))),
    "pmax": (lambda l, n: lambda x: l.pmax(x, "i"), (X,), 0, lambda x: _every(x.max(0))),
    "pmin": (lambda l, n: lambda x: l.pmin(x, "i"), (M,), 0, lambda x: _every(x.min(0))),
    "psum_shared": (lambda l, n: lambda x, w: x * l.psum(w, "i"), (X, W), (0, None),
                    lambda x, w: x * (B * w)),
    "pmean_of_expression": (lambda l, n: lambda x: n.sin(x) / l.pmean(x * x, "i"), (X,), 0,
                            lambda x: np.sin(x) / (x * x).mean(0)),
    "centred": (lambda l, n: lambda x: x - l.pmean(x, "i"), (M,), 0,
                lambda x: x - x.mean(0)),
    "all_gather": (lambda l, n: lambda x: l.all_gather(x, "i"), (X,), 0, lambda x: _every(x)),
    "all_gather_axis1": (lambda l, n: lambda x: l.all_gather(x, "i", axis=1), (M,), 0,
                         lambda x: _every(np.moveaxis(x, 0, 1))),
    "all_gather_axis_last": (lambda l, n: lambda x: l.all_gather(x, "i", axis=-1), (M,), 0,
                             lambda x: _every(np.moveaxis(x, 0, -1))),
    "all_gather_tiled": (lambda l, n: lambda x: l.all_gather(x, "i", tiled=True), (M,), 0,
                         lambda x: _every(np.concatenate(list(x), axis=0))),
    "all_gather_tiled_axis1": (lambda l, n: lambda x: l.all_gather(x, "i", axis=1, tiled=True),
                               (M,), 0, lambda x: _every(np.concatenate(list(x), axis=1))),
    "psum_scatter": (lambda l, n: lambda x: l.psum_scatter(x, "i"), (S,), 0,
                     lambda x: x.sum(0)),
    "psum_scatter_dim1": (lambda l, n: lambda x: l.psum_scatter(x, "i", scatter_dimension=1),
                          (np.moveaxis(S, 1, 2),), 0,
                          lambda x: np.moveaxis(x.sum(0), 1, 0)),
    "psum_scatter_tiled": (lambda l, n: lambda x: l.psum_scatter(x, "i", tiled=True), (T,), 0,
                           lambda x: x.sum(0).reshape(B, 2)),
    "ppermute_ring": (lambda l, n: lambda x: l.ppermute(x, "i", RING), (M,), 0,
                      lambda x: np.roll(x, 1, axis=0)),
    "ppermute_pairs": (lambda l, n: lambda x: l.ppermute(x, "i", PAIRS), (X,), 0,
                       lambda x: x[[2, 3, 0, 1]]),
    "axis_index": (lambda l, n: lambda x: x * l.axis_index("i"), (X,), 0,
                   lambda x: x * np.arange(B)[:, None]),
    "axis_size": (lambda l, n: lambda x: x / l.axis_size("i"), (X,), 0, lambda x: x / B),
    "psum_of_a_number": (lambda l, n: lambda x: x * l.psum(1, "i"), (X,), 0, lambda x: x * B),
    "pytree": (lambda l, n: lambda x: l.psum({"a": x, "b": (2 * x, 1.0)}, "i"), (X,), 0,
               lambda x: {"a": _every(x.sum(0)), "b": (_every(2 * x.sum(0)), _every(B * 1.0))}),
    "empty_tuple_of_names": (lambda l, n: lambda x: l.psum(x, ()), (X,), 0, lambda x: x),
    "in_axes_1": (lambda l, n: lambda x: l.pmax(x, "i") - x, (X.T,), 1,
                  lambda x: x.T.max(0) - x.T),
    **{f"all_to_all_{s}_{c}": ((lambda s, c: lambda l, n: lambda x: l.all_to_all(
        x, "i", s, c))(s, c), ((A0, A1)[s],), 0, _all_to_all(s, c))
       for s in (0, 1) for c in (0, 1)},
    **{f"all_to_all_tiled_{s}_{c}": ((lambda s, c: lambda l, n: lambda x: l.all_to_all(
        x, "i", s, c, tiled=True))(s, c), ((AT0, AT1)[s],), 0, _all_to_all_tiled(s, c))
       for s in (0, 1) for c in (0, 1)},
    "pswapaxes": (lambda l, n: lambda x: l.pswapaxes(x, "i", 0), (A0,), 0, _all_to_all(0, 0)),
    "pswapaxes_axis1": (lambda l, n: lambda x: l.pswapaxes(x, "i", 1), (A1,), 0,
                        _all_to_all(1, 1)),
    "pshuffle": (lambda l, n: lambda x: l.pshuffle(x, "i", SHUFFLE), (M,), 0,
                 lambda x: x[SHUFFLE]),
    "pbroadcast": (lambda l, n: lambda x: l.pbroadcast(x, "i", 2), (M,), 0,
                   lambda x: _every(x[2])),
}


@pytest.mark.parametrize("name", sorted(VALUES))
def test_values_against_numpy(name, loops):
    make, args, in_axes, closed = VALUES[name]
    out = wg.vmap(make(lax, wnp), in_axes=in_axes, axis_name="i")(*args)
    _same(out, closed(*args))
    assert not loops, loops         # (every collective computed from the whole batch)


@pytest.mark.parametrize("name", sorted(VALUES))
def test_values_against_jax(name):
    make, args, in_axes, _ = VALUES[name]
    _same(*_both(lambda J, l, n: J.vmap(make(l, n), in_axes=in_axes, axis_name="i")(*args)))


def test_shared_arguments_and_no_mapped_argument_against_jax():
    """Collectives of an argument every example shares (in_axes None: a NumPy array in
    f), and a vmap with no mapped argument (axis_size), with gradients."""
    def case(J, l, n):
        w = np.arange(8.0).reshape(4, 2)
        f = J.vmap(lambda x, w: (l.all_gather(w, "i", axis=1), l.all_gather(w, "i", tiled=True),
                                 l.psum_scatter(w, "i"), l.ppermute(w, "i", RING),
                                 l.pmax(w, "i"), l.axis_index("i") * x),
                   in_axes=(0, None), axis_name="i")
        g = J.vmap(lambda w: (l.psum(w, "i"), l.axis_index("i") + w[0, 0]), in_axes=None,
                   axis_size=3, axis_name="i")
        return f(X[:, 0], w), g(w), J.grad(lambda w: sum(n.sum(v ** 2)
                                                         for v in f(X[:, 0], w)[:5]))(w)
    _same(*_both(case))


def test_all_to_all_of_a_shared_argument():
    """Each example sends its own part of the one array they share: against NumPy, and
    against JAX given that array as every example's (its vmap of the shared array gives
    a wrong shape, (4, 4, 3, 4, 3), in JAX 0.10)."""
    w = RNG2.normal(size=(B, 3))
    ours = wg.vmap(lambda x, w: x * lax.all_to_all(w, "i", 0, 0), in_axes=(0, None),
                   axis_name="i")
    assert_close(ours(X, w), np.broadcast_to((X * w)[:, None], (B, B, 3)), rtol=1e-15)
    jax = _jax()
    theirs = jax.vmap(lambda x, w: x * jax.lax.all_to_all(w, "i", 0, 0), axis_name="i")
    _same(ours(X, w), theirs(X, np.broadcast_to(w, (B, B, 3))))
    check_grads(ours, X, w, order=2, rtol=1e-5)


def test_dtypes_follow_jax():
    ints = np.arange(B, dtype=np.int32)
    f = wg.vmap(lambda x: (lax.psum(x, "i"), lax.pmax(x, "i"), lax.all_gather(x, "i"),
                           lax.axis_index("i")), axis_name="i")
    assert [v.dtype for v in f(ints)] == [np.int32] * 4
    f32 = wg.vmap(lambda x: (lax.psum(x, "i"), lax.pmean(x, "i"), lax.pmax(x, "i")),
                  axis_name="i")(X.astype(np.float32))
    assert [v.dtype for v in f32] == [np.float32] * 3


def test_a_number_is_summed_at_once():
    """As in JAX, psum of a number inside the vmap is a number: usable in Python."""
    seen = []

    def f(x):
        seen.append((lax.psum(1, "i"), lax.pmean(2.0, "i"), lax.axis_size("i")))
        return x
    wg.vmap(f, axis_name="i")(X)
    assert seen == [(B, 2.0, B)]


# --------------------------------------------------------------------------------------
# derivatives of the batched function against central differences
# --------------------------------------------------------------------------------------
SMOOTH = ["psum", "pmean", "pmean_of_expression", "centred", "all_gather",
          "all_gather_axis1", "all_gather_tiled_axis1", "psum_scatter", "psum_scatter_dim1",
          "psum_scatter_tiled", "ppermute_ring", "ppermute_pairs", "axis_index", "psum_shared",
          "all_to_all_0_1", "all_to_all_1_0", "all_to_all_tiled_0_1", "all_to_all_tiled_1_1",
          "pswapaxes_axis1", "pshuffle", "pbroadcast"]


@pytest.mark.parametrize("name", SMOOTH)
def test_derivatives_of_the_batch_to_second_order(name):
    """jvp against central differences along a random direction, vjp by the dot-product
    test, then both again for the pullback (second order)."""
    make, args, in_axes, _ = VALUES[name]
    f = wg.vmap(make(lax, wnp), in_axes=in_axes, axis_name="i")
    check_grads(lambda *a: f(*a), *args, order=2, rtol=1e-5)


@pytest.mark.parametrize("name", ["pmax", "pmin", "in_axes_1"])
def test_extremum_derivatives(name):
    """At random points (no ties) first order against central differences; the
    derivative is the winning example's tangent, which differentiates again to zero."""
    make, args, in_axes, _ = VALUES[name]
    f = wg.vmap(make(lax, wnp), in_axes=in_axes, axis_name="i")
    check_grads(f, *args, order=2, rtol=1e-5)


@pytest.mark.parametrize("name", ["pmax", "pmin"])
def test_extremum_rules_inside_are_those_of_max_over_the_gathered_batch(name):
    """Inside the vmap pmax's own rules are used (outside, the vmap has computed it as a
    max over the batch axis, which is differentiated): they must be those of the max of
    all_gather(x), whose rules are amax's and all_gather's.  At random points and at
    ties (shared equally), first and second order, forward and reverse; and the
    gradient inside is the gradient of the sum over the examples (psum's transpose)."""
    op = getattr(lax, name)
    reduce = wnp.max if name == "pmax" else wnp.min
    per = lambda p: lambda x: wnp.sum(wnp.sin(x) * p(x ** 2 + x))
    ours, ref = per(lambda v: op(v, "i")), per(lambda v: reduce(lax.all_gather(v, "i"), 0))
    ties = np.array([[1.0, 3.0, 0.5], [3.0, 3.0, 0.5], [3.0, -0.2, 0.5], [1.0, -0.2, 0.5]])
    ties = (np.sqrt(1 + 4 * ties) - 1) / 2          # (x² + x takes those values)
    tangents = RNG.normal(size=X.shape)
    for xs in (X, ties):
        for t in (wg.grad, wg.hessian, lambda g: wg.jacfwd(wg.grad(g)),
                  lambda g: wg.jacrev(wg.jacfwd(g))):
            assert_close(wg.vmap(t(ours), axis_name="i")(xs),
                         wg.vmap(t(ref), axis_name="i")(xs), rtol=1e-13, atol=1e-13)
        tangent = lambda f: lambda x, t: wg.jvp(f, (x,), (t,))[1]
        assert_close(wg.vmap(tangent(ours), axis_name="i")(xs, tangents),
                     wg.vmap(tangent(ref), axis_name="i")(xs, tangents), rtol=1e-13)
    inside = wg.vmap(wg.grad(ours), axis_name="i")(X)
    assert_close(inside, _differences_of_the_sum(ours, X), rtol=1e-6, atol=1e-6)


def test_taylor_mode_inside():
    """wg.taylor inside the vmap (pmax's and pmin's series from their JVP) against the
    same series of max over the gathered batch, and against wg.taylor of the batched
    function: forward mode is the same inside and outside."""
    tangents = RNG.normal(size=X.shape)
    inside = lambda f: wg.vmap(lambda x, v: wg.taylor(f, x, v, order=4), axis_name="i")
    per = lambda p: lambda x: wnp.sin(x) * p(x ** 2 + x)
    for op, reduce in ((lax.pmax, wnp.max), (lax.pmin, wnp.min)):
        _same(inside(per(lambda u: op(u, "i")))(X, tangents),
              inside(per(lambda u: reduce(lax.all_gather(u, "i"), 0)))(X, tangents))
    f = lambda x: wnp.sin(x) * lax.psum(x ** 2, "i") + lax.all_gather(x, "i")[1] ** 3 + \
        lax.ppermute(x, "i", RING) * lax.pmean(wnp.exp(x), "i") + lax.pmax(x, "i") ** 2
    _same(inside(f)(X, tangents), wg.taylor(wg.vmap(f, axis_name="i"), X, tangents, order=4),
          rtol=1e-12)


def test_extremum_ties_shared_as_numpy_max():
    """pmax's derivative shares ties equally, as max over the batch axis does (JAX has no
    rule for pmax; its jnp.max shares ties so too)."""
    xs = np.array([[1.0, 3.0], [3.0, 3.0], [3.0, -1.0]])
    batched = lambda xs: wg.vmap(lambda x: lax.pmax(x, "i"), axis_name="i")(xs)[0].sum()
    whole = lambda xs: wnp.max(xs, axis=0).sum()
    assert_close(wg.grad(batched)(xs), wg.grad(whole)(xs), rtol=1e-15)
    assert_close(wg.grad(batched)(xs), [[0, 0.5], [0.5, 0.5], [0.5, 0]], rtol=1e-15)
    t = np.array([[1.0, 10.0], [100.0, 1000.0], [1e4, 1e5]])
    _, tan = wg.jvp(lambda xs: wg.vmap(lambda x: lax.pmin(x, "i"), axis_name="i")(xs),
                    (xs,), (t,))
    assert_close(tan, np.broadcast_to([1.0, 1e5], (3, 2)), rtol=1e-15)
    jax = _jax()
    assert_close(wg.grad(batched)(xs), jax.grad(lambda xs: jax.numpy.max(xs, 0).sum())(xs))


# --------------------------------------------------------------------------------------
# per-example derivatives inside the vmap: JAX's numbers
# --------------------------------------------------------------------------------------
def test_the_cases_of_jax():
    xs = np.arange(1.0, 4.0)
    assert wg.vmap(wg.grad(lambda x: lax.psum(x, "i")), axis_name="i")(xs).tolist() == \
        [3.0, 3.0, 3.0]
    assert wg.vmap(wg.grad(lambda x: lax.psum(x ** 2, "i")), axis_name="i")(xs).tolist() == \
        [6.0, 12.0, 18.0]
    assert wg.vmap(wg.grad(lambda x: x * lax.pmean(x, "i")), axis_name="i")(xs).tolist() == \
        [4.0, 4.0, 4.0]
    assert wg.grad(lambda xs: wg.vmap(lambda x: x * lax.pmean(x, "i"), axis_name="i")(xs)
                   .sum())(xs).tolist() == [4.0, 4.0, 4.0]


PER_EXAMPLE = {
    "psum_cubed": lambda l, n: lambda x: n.sum(l.psum(x ** 3, "i")),
    "pmean_product": lambda l, n: lambda x: n.sum(n.sin(x) * l.pmean(x * x, "i")),
    "all_gather": lambda l, n: lambda x: n.sum(l.all_gather(x, "i") *
                                               n.arange(1.0, B * 3 + 1).reshape(B, 3)),
    "ppermute": lambda l, n: lambda x: n.sum(n.cos(l.ppermute(x, "i", RING)) * x),
    "psum_scatter": lambda l, n: lambda x: n.sum(l.psum_scatter(
        n.outer(n.arange(1.0, B + 1), x), "i") ** 2),
    "axis_index": lambda l, n: lambda x: n.sum(x ** 2 * l.axis_index("i") +
                                               l.pmean(x, "i")),
    "pshuffle": lambda l, n: lambda x: n.sum(n.sin(l.pshuffle(x, "i", SHUFFLE)) * x),
}


def _differences_of_the_sum(f, xs, h=1e-6):
    """Central differences of the sum over the examples of vmap(f) (axis "i") in each
    entry of the batch xs."""
    total = lambda xs: float(np.sum(wg.vmap(f, axis_name="i")(xs)))
    fd = np.zeros_like(xs)
    for k in np.ndindex(xs.shape):
        e = np.zeros_like(xs)
        e[k] = h
        fd[k] = (total(xs + e) - total(xs - e)) / (2 * h)
    return fd


@pytest.mark.parametrize("name", sorted(PER_EXAMPLE))
def test_grad_inside_equals_the_gradient_of_the_sum(name):
    """With psum's transpose psum, vmap(grad(f)) is the gradient of the sum over the
    examples of f: against central differences of that sum, and against JAX."""
    f = PER_EXAMPLE[name](lax, wnp)
    inside = wg.vmap(wg.grad(f), axis_name="i")(X)
    assert_close(inside, _differences_of_the_sum(f, X), rtol=1e-6, atol=1e-6)
    _same(*_both(lambda J, l, n: J.vmap(J.grad(PER_EXAMPLE[name](l, n)), axis_name="i")(X)),
          rtol=1e-10)
    # second order inside: the rules of the rules
    _same(*_both(lambda J, l, n: J.vmap(J.hessian(PER_EXAMPLE[name](l, n)),
                                        axis_name="i")(X)), rtol=1e-10)


@pytest.mark.parametrize("transform", ["hessian", "jacfwd", "jacrev"])
def test_second_order_and_jacobians_inside_against_jax(transform):
    def case(J, l, n):
        f = lambda x: n.sin(x) * l.psum(x[0] * x ** 2, "i") + l.pmean(x ** 3, "i")
        if transform == "hessian":
            g = lambda x: n.sum(f(x))
        else:
            g = f
        return J.vmap(getattr(J, transform)(g), axis_name="i")(X)
    _same(*_both(case), rtol=1e-10)


def test_jvp_inside_against_jax():
    def case(J, l, n):
        f = lambda x, t: J.jvp(lambda x: n.tanh(x) * l.pmean(x, "i"), (x,), (t,))
        return J.vmap(f, axis_name="i")(X, M[:, 0])
    _same(*_both(case), rtol=1e-12)


def test_second_order_outside_against_jax():
    def case(J, l, n):
        g = lambda xs: (J.vmap(lambda x: x ** 2 * l.pmean(x ** 2, "i"), axis_name="i")(xs)
                        * n.arange(1.0, B + 1)).sum()
        return J.hessian(g)(X[:, 0]), J.jacrev(J.grad(g))(X[:, 0])
    _same(*_both(case), rtol=1e-10)


def test_a_closed_over_traced_value():
    """An enclosing trace's value f closes over (the weights) becomes an input of the
    vmap's trace, and its collectives' derivatives flow to it."""
    def loss(w):
        per = wg.vmap(lambda x: wnp.sum(x * lax.psum(w * x, "i")) + lax.pmax(w[0] * x[0], "i")
                      + wnp.sum(lax.psum(w, "i")), axis_name="i")(X)
        return wnp.sum(per ** 2)
    check_grads(loss, W, order=2, rtol=1e-5)


# --------------------------------------------------------------------------------------
# programs: data-parallel training, batch norm
# --------------------------------------------------------------------------------------
def _mlp(params, x):
    (w1, b1), (w2, b2) = params
    return wnp.tanh(x @ w1 + b1) @ w2 + b2


def _loss(params, x, y):
    return wnp.mean((_mlp(params, x) - y) ** 2)


def _params(rng):
    return [(rng.normal(size=(3, 5)), rng.normal(size=5)), (rng.normal(size=(5, 2)),
                                                           rng.normal(size=2))]


def test_data_parallel_training_step_is_the_full_batch_step():
    """pmap over shards, the gradients averaged with pmean: the full batch's gradient,
    and one SGD step from it, as on one device."""
    rng = np.random.default_rng(1)
    params = _params(rng)
    x, y = rng.normal(size=(12, 3)), rng.normal(size=(12, 2))
    shards = 4
    xs, ys = x.reshape(shards, 3, 3), y.reshape(shards, 3, 2)

    def step(params, x, y):
        grads = lax.pmean(wg.grad(_loss)(params, x, y), axis_name="batch")
        return wg.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads), grads

    new, grads = wg.pmap(step, axis_name="batch", in_axes=(None, 0, 0))(params, xs, ys)
    full = wg.grad(_loss)(params, x, y)
    for g, f in zip(wg.tree_util.tree_leaves(grads), wg.tree_util.tree_leaves(full)):
        for k in range(shards):                 # (each device holds the same average)
            assert_close(g[k], f, rtol=1e-12)
    for p, q, f in zip(wg.tree_util.tree_leaves(new), wg.tree_util.tree_leaves(params),
                       wg.tree_util.tree_leaves(full)):
        assert_close(p[0], q - 0.1 * f, rtol=1e-12)
    # compiled, the same
    compiled = wg.jit(wg.pmap(step, axis_name="batch", in_axes=(None, 0, 0)))
    _same(compiled(params, xs, ys), (new, grads))
    _same(compiled(params, xs + 1.0, ys), wg.pmap(step, axis_name="batch",
                                                  in_axes=(None, 0, 0))(params, xs + 1.0, ys))
    # and JAX's vmap with the same axis name (pmap there needs a device per shard)
    jax = _jax()

    def jax_step(params, x, y):
        def loss(params, x, y):
            (w1, b1), (w2, b2) = params
            return jax.numpy.mean((jax.numpy.tanh(x @ w1 + b1) @ w2 + b2 - y) ** 2)
        return jax.lax.pmean(jax.grad(loss)(params, x, y), axis_name="batch")
    _same(grads, jax.vmap(jax_step, in_axes=(None, 0, 0), axis_name="batch")(params, xs, ys))


def _batch_norm_one(x, gamma, beta):
    mean = lax.pmean(x, "batch")
    var = lax.pmean((x - mean) ** 2, "batch")
    return gamma * (x - mean) / wnp.sqrt(var + 1e-5) + beta


def _batch_norm_whole(xs, gamma, beta):
    mean = wnp.mean(xs, axis=0)
    var = wnp.mean((xs - mean) ** 2, axis=0)
    return gamma * (xs - mean) / wnp.sqrt(var + 1e-5) + beta


def test_batch_norm_by_pmean():
    gamma, beta = RNG.normal(size=3), RNG.normal(size=3)
    bn = wg.vmap(_batch_norm_one, in_axes=(0, None, None), axis_name="batch")
    assert_close(bn(X, gamma, beta), _batch_norm_whole(X, gamma, beta), rtol=1e-12)
    weights = RNG.normal(size=(B, 3))
    loss = lambda f: lambda xs, g, b: wnp.sum(wnp.tanh(f(xs, g, b)) * weights)
    for k in range(3):
        assert_close(wg.grad(loss(bn), k)(X, gamma, beta),
                     wg.grad(loss(_batch_norm_whole), k)(X, gamma, beta), rtol=1e-10)
    check_grads(lambda xs: bn(xs, gamma, beta), X, order=2, rtol=1e-5)
    # with psum and axis_size, and under jit, the same
    by_sums = wg.jit(wg.vmap(lambda x: (x - lax.psum(x, "b") / lax.axis_size("b")),
                             axis_name="b"))
    assert_close(by_sums(X), X - X.mean(0), rtol=1e-12)


# --------------------------------------------------------------------------------------
# nested names, shadowing, loops, compile
# --------------------------------------------------------------------------------------
Y = RNG.normal(size=(2, 3, 4))      # two outer examples ("i") of three inner ones ("j")


def _nested(J, l, n):
    def one(x):
        return (l.psum(x, "i"), l.pmean(x, ("i", "j")), l.axis_index(("i", "j")),
                l.pmax(x, ("j", "i")), x * l.pmean(x, "i") + l.psum(x ** 2, "j"),
                l.axis_size(("i", "j")))
    return J.vmap(J.vmap(one, axis_name="j"), axis_name="i")(Y)


def test_nested_names_against_numpy_and_jax():
    ours = _nested(wg, lax, wnp)
    assert_close(ours[0], np.broadcast_to(Y.sum(0), Y.shape), rtol=1e-12)
    assert_close(ours[1], np.broadcast_to(Y.mean((0, 1)), Y.shape), rtol=1e-12)
    assert ours[2].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert_close(ours[3], np.broadcast_to(Y.max((0, 1)), Y.shape), rtol=1e-15)
    assert_close(ours[4], Y * Y.mean(0) + (Y ** 2).sum(1, keepdims=True), rtol=1e-12)
    _same(ours, _both(_nested)[1])


def test_nested_gathers_and_permutations_over_two_names():
    """Positions over a tuple of names: the first name's most significant (as JAX's
    shard_map over a 2x3 mesh gives them)."""
    both = lambda f: wg.vmap(wg.vmap(f, axis_name="j"), axis_name="i")
    z = np.arange(6.0).reshape(2, 3)
    assert both(lambda x: lax.all_gather(x, ("i", "j")))(z)[1, 2].tolist() == \
        [0, 1, 2, 3, 4, 5]
    assert both(lambda x: lax.all_gather(x, ("j", "i")))(z)[0, 0].tolist() == \
        [0, 3, 1, 4, 2, 5]
    ring6 = [(k, (k + 1) % 6) for k in range(6)]
    assert both(lambda x: lax.ppermute(x, ("i", "j"), ring6))(z).tolist() == \
        [[5, 0, 1], [2, 3, 4]]
    blocks = np.arange(36.0).reshape(2, 3, 6)
    assert both(lambda x: lax.psum_scatter(x, ("i", "j"), tiled=True))(blocks)[..., 0] \
        .tolist() == [[90, 96, 102], [108, 114, 120]]
    f = both(lambda x: wnp.sin(lax.ppermute(x, ("i", "j"), ring6)) *
             lax.all_gather(x, ("i", "j"))[5 - lax.axis_index(("i", "j"))])
    check_grads(f, z + 0.5, order=2, rtol=1e-5)


def test_nested_derivatives():
    f = wg.vmap(wg.vmap(lambda x: wnp.sin(x) * lax.pmean(x, "i") + lax.psum(x * x, "j"),
                        axis_name="j"), axis_name="i")
    check_grads(f, Y, order=2, rtol=1e-5)
    # the outer name inside the inner vmap, differentiated inside both (the rules of
    # all_gather and psum_scatter over "i" batched by the vmap of "j")
    def case(J, l, n):
        g = lambda x: n.sum(n.sin(x) * l.pmean(x, "i") + l.psum(x * x, "j")) + \
            n.sum(l.all_gather(x, "i")[1] * x) + n.sum(l.psum_scatter(x, "i", tiled=True) ** 2)
        return J.vmap(J.vmap(J.grad(g), axis_name="j"), axis_name="i")(Y)
    _same(*_both(case), rtol=1e-10)


def test_an_inner_vmap_without_a_name_and_shadowing():
    z = np.arange(6.0).reshape(2, 3)
    inner = wg.vmap(wg.vmap(lambda x: lax.psum(x, "i")), axis_name="i")(z)
    assert inner.tolist() == [[3, 5, 7], [3, 5, 7]]
    shadow = wg.vmap(wg.vmap(lambda x: lax.psum(x, "i"), axis_name="i"), axis_name="i")(z)
    assert shadow.tolist() == [[3, 3, 3], [12, 12, 12]]     # (the innermost binding's)


def test_loops_inside():
    def case(J, l, n):
        def per(xs):
            return l.scan(lambda c, x: (c * l.pmean(x, "i") + x, c + l.psum(x, "i")), 1.0, xs)
        return J.vmap(per, axis_name="i")(X), J.grad(
            lambda xs: J.vmap(lambda r: per(r)[0], axis_name="i")(xs).sum())(X)
    _same(*_both(case), rtol=1e-12)
    f = wg.vmap(lambda xs: lax.scan(lambda c, x: (wnp.sin(c) * lax.pmean(x, "i") + x, c),
                                    0.5, xs)[0], axis_name="i")
    check_grads(f, X, order=2, rtol=1e-5)
    # a scan over constants, a fori_loop and a while_loop (its test reads a collective)
    xs = np.arange(1.0, 4.0)
    consts = wg.vmap(lambda x: x + lax.scan(lambda c, z: (c + z * lax.axis_index("i"), c),
                                            0.0, np.arange(3.0))[0], axis_name="i")(xs)
    assert consts.tolist() == [1.0, 5.0, 9.0]
    fori = wg.vmap(lambda x: lax.fori_loop(0, 3, lambda k, c: c + lax.psum(x, "i"), x),
                   axis_name="i")(xs)
    assert fori.tolist() == [19.0, 20.0, 21.0]
    loop = wg.vmap(lambda x: lax.while_loop(
        lambda c: c < 10.0, lambda c: c + lax.pmean(x, "i") + lax.axis_index("i"), 0.0),
        axis_name="i")(xs)
    assert loop.tolist() == [10.0, 12.0, 12.0]


def test_while_and_fori_loops_inside_against_jax():
    """A collective in a while loop's test and body (each example then stops at its own
    step), a ppermute in a fori_loop's carry; jvp, jacfwd and grad through them."""
    ring = [(0, 1), (1, 2), (2, 0)]
    xs, t = np.arange(1.0, 4.0), np.array([1.0, 2.0, -1.0])

    def case(J, l, n):
        test = J.vmap(lambda x: l.while_loop(lambda c: l.psum(c, "i") < 30.0,
                                             lambda c: c + x + l.axis_index("i"), x),
                      axis_name="i")(xs)
        counted = J.vmap(lambda x: l.while_loop(
            lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] + l.pmean(c[1] * x, "i")), (0, x)),
            axis_name="i")(xs)
        tangent = J.jvp(J.vmap(lambda x: l.while_loop(
            lambda c: c[0] < 3, lambda c: (c[0] + 1, n.sin(c[1]) * l.pmean(c[1] * x, "i")),
            (0, x))[1], axis_name="i"), (xs,), (t,))
        fori = J.vmap(lambda x: l.fori_loop(
            0, 3, lambda k, c: n.sin(c) * l.pmean(x, "i") + l.ppermute(c, "i", ring), x),
            axis_name="i")
        return test, counted, tangent, fori(xs), J.jacfwd(fori)(xs), \
            J.grad(lambda xs: fori(xs).sum())(xs)
    _same(*_both(case), rtol=1e-12)


def test_compile_and_jit():
    f = wg.vmap(lambda x: x * lax.pmean(x, "i") + lax.all_gather(x, "i")[0], axis_name="i")
    compiled = wg.compile(f, X)
    for xs in (X, 2 * X + 1):
        assert_close(compiled(xs), f(xs), rtol=1e-14)
    g = wg.jit(wg.grad(lambda xs: wnp.sum(f(xs) ** 2)))
    assert_close(g(X), wg.grad(lambda xs: wnp.sum(f(xs) ** 2))(X), rtol=1e-12)
    # a jitted function inside the vmap
    h = wg.vmap(wg.jit(lambda x: x * lax.psum(x, "i")), axis_name="i")
    assert_close(h(X), X * X.sum(0), rtol=1e-14)
    assert "psum" not in str(compiled.graph)        # (computed: no collective is left)
    # a jitted function of constants inside the vmap: traced through, not run compiled
    k = wg.jit(lambda c: lax.pmax(c, "i") * lax.axis_index("i"))
    assert_close(wg.vmap(lambda x: x + k(np.ones(2)), axis_name="i")(X[:, 0]),
                 np.repeat(X[:, :1] + np.arange(B)[:, None], 2, axis=1), rtol=1e-15)


def test_checkpoint_inside():
    f = lambda x: wnp.sin(x) * lax.pmean(x ** 2, "i")
    plain = wg.grad(lambda xs: wnp.sum(wg.vmap(f, axis_name="i")(xs)))(X)
    saved = wg.grad(lambda xs: wnp.sum(wg.vmap(wg.checkpoint(f), axis_name="i")(xs)))(X)
    assert_close(saved, plain, rtol=1e-14)
    assert_close(wg.vmap(wg.grad(lambda x: wnp.sum(wg.checkpoint(f)(x))), axis_name="i")(X),
                 plain, rtol=1e-14)


def test_pmap_passes_the_name():
    f = wg.pmap(lambda x, s: s * (x - lax.pmean(x, "d")), axis_name="d",
                static_broadcasted_argnums=1)
    assert_close(f(X, 2.0), 2.0 * (X - X.mean(0)), rtol=1e-14)
    jax = _jax()
    one = np.ones((1, 3))                       # (one CPU: JAX's pmap takes one example)
    _same(wg.pmap(lambda x: lax.psum(x, "d"), axis_name="d")(one),
          jax.pmap(lambda x: jax.lax.psum(x, "d"), axis_name="d")(one))


# --------------------------------------------------------------------------------------
# all_to_all, pswapaxes, pbroadcast: derivatives inside the vmap
# --------------------------------------------------------------------------------------
def _all_to_all_by_gather(x, split, concat, tiled):
    """all_to_all of one example written with all_gather and a gather at the example's
    position: an independent formula, whose rules are all_gather's and take's."""
    every = lax.all_gather(x, "i")                      # (B, x's shape), in example order
    if tiled:
        shape = every.shape
        every = wnp.reshape(every, shape[:1 + split] + (B, shape[1 + split] // B) +
                            shape[2 + split:])
    mine = wnp.moveaxis(wnp.take(every, lax.axis_index("i"), axis=1 + split), 0, concat)
    if not tiled:
        return mine
    shape = mine.shape
    return wnp.reshape(mine, shape[:concat] + (B * shape[concat + 1],) + shape[concat + 2:])


A2A_CASES = [(0, 0, False), (0, 1, False), (1, 0, False), (1, 1, False), (0, 0, True),
             (0, 1, True), (1, 0, True), (1, 1, True)]


def _a2a_input(n, x, split, tiled):
    """An array of one example with B (tiled: 2B) entries on axis `split`, built from x."""
    a = n.outer(n.arange(1.0, (2 if tiled else 1) * B + 1), x)
    return a if split == 0 else a.T


@pytest.mark.parametrize("split, concat, tiled", A2A_CASES)
def test_all_to_all_rules_inside_are_those_of_the_gathered_batch(split, concat, tiled):
    """all_to_all's own rules (its transpose all_to_all with the axes swapped, applied to
    tangents as a linear map) against those of the same exchange written with all_gather
    and take, to second order, forward and reverse; the gradient inside is the gradient
    of the sum over the examples (central differences)."""
    per = lambda a2a: lambda x: wnp.sum(wnp.sin(a2a(_a2a_input(wnp, x, split, tiled))) ** 2)
    ours = per(lambda a: lax.all_to_all(a, "i", split, concat, tiled=tiled))
    ref = per(lambda a: _all_to_all_by_gather(a, split, concat, tiled))
    for t in (wg.grad, wg.hessian, lambda g: wg.jacfwd(wg.grad(g)),
              lambda g: wg.jacrev(wg.jacfwd(g))):
        assert_close(wg.vmap(t(ours), axis_name="i")(X), wg.vmap(t(ref), axis_name="i")(X),
                     rtol=1e-12, atol=1e-12)
    tangent = lambda f: lambda x, t: wg.jvp(f, (x,), (t,))[1]
    assert_close(wg.vmap(tangent(ours), axis_name="i")(X, M[:, 0]),
                 wg.vmap(tangent(ref), axis_name="i")(X, M[:, 0]), rtol=1e-12)
    assert_close(wg.vmap(wg.grad(ours), axis_name="i")(X), _differences_of_the_sum(ours, X),
                 rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("split, concat, tiled", A2A_CASES)
def test_all_to_all_derivatives_against_jax(split, concat, tiled):
    """Where JAX 0.10 differentiates all_to_all under vmap: reverse mode inside for the
    exchanges that keep the axis in place (split == concat) or are tiled (its transpose
    of the others raises a cotangent shape error, and its forward mode under vmap fails
    for all), and grad through the vmap for every one."""
    f = lambda n, l: lambda x: l.all_to_all(_a2a_input(n, x, split, tiled), "i", split,
                                            concat, tiled=tiled)
    _same(*_both(lambda J, l, n: J.grad(lambda xs: n.sum(n.sin(J.vmap(
        f(n, l), axis_name="i")(xs)) * n.arange(1.0, B + 1)[:, None, None]))(X)), rtol=1e-12)
    if split == concat or tiled:
        _same(*_both(lambda J, l, n: (
            J.vmap(J.grad(lambda x: n.sum(n.sin(f(n, l)(x)) ** 2)), axis_name="i")(X),
            J.vmap(J.jacrev(lambda x: n.sin(f(n, l)(x))), axis_name="i")(X))), rtol=1e-12)


def test_nested_all_to_all_and_pbroadcast_over_two_names():
    """Over a tuple of names the examples of both vmaps exchange parts, positions counted
    with the first name's most significant: values against JAX, derivatives against
    central differences to second order."""
    z = RNG2.normal(size=(2, 3, 6, 2))

    def case(J, l, n):
        both = lambda f: J.vmap(J.vmap(f, axis_name="j"), axis_name="i")
        return (both(lambda x: l.all_to_all(x, ("i", "j"), 0, 1))(z),
                both(lambda x: l.all_to_all(x, ("j", "i"), 0, 0))(z),
                both(lambda x: l.all_to_all(x, ("i", "j"), 0, 1, tiled=True))(z))
    _same(*_both(case))
    flat = z.reshape(6, 6, 2)
    assert_close(case(wg, lax, wnp)[0].reshape(6, 2, 6), _all_to_all(0, 1)(flat), rtol=0)
    both = lambda f: wg.vmap(wg.vmap(f, axis_name="j"), axis_name="i")
    check_grads(both(lambda x: wnp.sin(lax.all_to_all(x, ("i", "j"), 0, 1)).T *
                     lax.pbroadcast(x, ("i", "j"), 4)), z, order=2, rtol=1e-5)
    assert_close(both(lambda x: lax.pbroadcast(x, ("i", "j"), 4))(z),
                 np.broadcast_to(flat[4], z.shape), rtol=0)
    assert_close(both(lambda x: lax.pshuffle(x, ("i", "j"), [5, 4, 3, 2, 1, 0]))(z),
                 flat[::-1].reshape(z.shape), rtol=0)


def test_pbroadcast_is_the_psum_of_the_masked_value():
    """JAX's definition, psum(where(axis_index == source, x, 0)), written out: values and
    derivatives inside the vmap to second order; JAX's grad inside for scalars (its
    vmap of pbroadcast's derivatives fails for arrays and through the vmap)."""
    ours = lambda x: wnp.sum(wnp.sin(lax.pbroadcast(x, "i", 2)) * x)
    ref = lambda x: wnp.sum(wnp.sin(lax.psum(wnp.where(lax.axis_index("i") == 2, x, 0.0),
                                             "i")) * x)
    for t in (lambda g: g, wg.grad, wg.hessian, lambda g: wg.jacfwd(wg.grad(g))):
        assert_close(wg.vmap(t(ours), axis_name="i")(X), wg.vmap(t(ref), axis_name="i")(X),
                     rtol=1e-13, atol=1e-13)
    assert_close(wg.vmap(wg.grad(ours), axis_name="i")(X), _differences_of_the_sum(ours, X),
                 rtol=1e-6, atol=1e-6)
    _same(*_both(lambda J, l, n: J.vmap(J.grad(lambda x: n.sin(l.pbroadcast(x, "i", 2)) * x),
                                        axis_name="i")(X[:, 0])), rtol=1e-13)


# --------------------------------------------------------------------------------------
# axis_index_groups
# --------------------------------------------------------------------------------------
GROUPS = [[0, 2], [3, 1]]       # (not in order: a member's position is its place in its group)


def _in_groups(per_group, groups=GROUPS):
    """A closed form over the batch: example e's value is per_group(its group's values
    stacked in the group's order, e's position in the group)."""
    def closed(x):
        out = []
        for e in range(len(x)):
            g = next(g for g in groups if e in g)
            out.append(per_group(np.asarray(x)[list(g)], g.index(e)))
        return np.stack(out)
    return closed


# name -> (source of f of one example, with l = lax, n = numpy, N = the axis name(s), G =
# the groups; the batch argument; closed form; what JAX's pmap differentiates: 0 nothing,
# 1 grad, 2 grad and second order; all_to_all's transpose with split_axis != concat_axis
# raises a cotangent shape error in JAX 0.10)
GROUPED = {
    "psum": ("lambda x: l.psum(x, N, axis_index_groups=G)", X,
             _in_groups(lambda xs, p: xs.sum(0)), 2),
    "pmean": ("lambda x: l.pmean(x * x, N, axis_index_groups=G)", X,
              _in_groups(lambda xs, p: (xs * xs).mean(0)), 2),
    "pmax": ("lambda x: l.pmax(x, N, axis_index_groups=G)", X,
             _in_groups(lambda xs, p: xs.max(0)), 0),
    "pmin": ("lambda x: l.pmin(x, N, axis_index_groups=G)", M,
             _in_groups(lambda xs, p: xs.min(0)), 0),
    "all_gather": ("lambda x: l.all_gather(x, N, axis_index_groups=G)", X,
                   _in_groups(lambda xs, p: xs), 2),
    "all_gather_axis1": ("lambda x: l.all_gather(x, N, axis_index_groups=G, axis=1)", M,
                         _in_groups(lambda xs, p: np.moveaxis(xs, 0, 1)), 2),
    "all_gather_tiled": ("lambda x: l.all_gather(x, N, axis_index_groups=G, tiled=True)", X,
                         _in_groups(lambda xs, p: np.concatenate(list(xs))), 2),
    "psum_scatter": ("lambda x: l.psum_scatter(x, N, axis_index_groups=G)", M,
                     _in_groups(lambda xs, p: xs.sum(0)[p]), 2),
    "psum_scatter_tiled": ("lambda x: l.psum_scatter(x, N, axis_index_groups=G, tiled=True)",
                           T, _in_groups(lambda xs, p: xs.sum(0).reshape(2, B)[p]), 2),
    "all_to_all": ("lambda x: l.all_to_all(x, N, 0, 1, axis_index_groups=G)", M,
                   _in_groups(lambda xs, p: np.moveaxis(xs[:, p], 0, 1)), 0),   # (see below)
    "all_to_all_tiled": ("lambda x: l.all_to_all(x, N, 1, 0, axis_index_groups=G, "
                         "tiled=True)", AT1[:, :, :4],
                         _in_groups(lambda xs, p: np.concatenate(list(xs[:, :, 2 * p:2 * p + 2]))),
                         1),
    "pswapaxes": ("lambda x: l.pswapaxes(x, N, 0, axis_index_groups=G)", M,
                  _in_groups(lambda xs, p: xs[:, p]), 1),
    "psum_of_a_number": ("lambda x: x * l.psum(1, N, axis_index_groups=G)", X,
                         lambda x: 2 * x, 2),
    "one_group_reversed": ("lambda x: l.all_gather(x, N, axis_index_groups=[[3, 2, 1, 0]])",
                           X, lambda x: _every(x[::-1]), 2),
    "groups_of_one": ("lambda x: l.psum(x, N, axis_index_groups=[[2], [0], [3], [1]]) ** 2",
                      X, lambda x: x ** 2, 2),
}


def _grouped(name, n=wnp, names="i"):
    return eval(GROUPED[name][0], {"l": lax, "n": n, "N": names, "G": GROUPS})


@pytest.mark.parametrize("name", sorted(GROUPED))
def test_groups_against_numpy(name, loops):
    """JAX's vmap refuses axis_index_groups; the meaning is pmap's (below, against JAX's
    pmap on four devices): the collective within each example's group."""
    _, x, closed, _ = GROUPED[name]
    assert_close(wg.vmap(_grouped(name), axis_name="i")(x), closed(x), rtol=1e-14, atol=1e-14)
    assert not loops, loops


@pytest.mark.parametrize("name", sorted(GROUPED))
def test_groups_over_two_names(name):
    """Groups over a tuple of names count positions over all their examples (the first
    name's most significant): the same closed form on the nested batch."""
    _, x, closed, _ = GROUPED[name]
    nested = wg.vmap(wg.vmap(_grouped(name, names=("i", "j")), axis_name="j"), axis_name="i")
    out = nested(x.reshape((2, 2) + x.shape[1:]))
    assert_close(out.reshape((B,) + out.shape[2:]), closed(x), rtol=1e-14, atol=1e-14)
    check_grads(nested, x.reshape((2, 2) + x.shape[1:]), order=2, rtol=1e-5)


@pytest.mark.parametrize("name", sorted(GROUPED))
def test_group_derivatives(name):
    """Of the batched function against central differences, to second order; inside the
    vmap, the gradient of the sum over the examples (each group's transposes are its
    collectives again, within the groups)."""
    _, x, _, _ = GROUPED[name]
    f = wg.vmap(_grouped(name), axis_name="i")
    check_grads(f, x, order=2, rtol=1e-5)
    per = lambda x: wnp.sum(wnp.sin(_grouped(name)(x)))
    assert_close(wg.vmap(wg.grad(per), axis_name="i")(x), _differences_of_the_sum(per, x),
                 rtol=1e-6, atol=1e-6)


_PMAP = r"""
import json, os, sys
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"
os.environ["JAX_PLATFORMS"] = "cpu"
import numpy as np, jax, jax.numpy as jnp
jax.config.update("jax_enable_x64", True)
cases, groups = json.loads(sys.argv[1]), json.loads(sys.argv[2])
inputs, out = np.load(sys.argv[3]), {}
for name, (source, order) in cases.items():
    f = eval(source, {"l": jax.lax, "n": jnp, "N": "i", "G": groups})
    x = inputs[name]
    out[name] = jax.pmap(f, axis_name="i")(x)
    per = lambda x: jnp.sum(jnp.sin(f(x)))
    if order >= 1:
        out[name + "/grad"] = jax.pmap(jax.grad(per), axis_name="i")(x)
        out[name + "/outside"] = jax.grad(lambda xs: jnp.sum(jnp.cos(jax.pmap(
            f, axis_name="i")(xs))))(x)
    if order >= 2:
        out[name + "/hessian"] = jax.pmap(jax.hessian(per), axis_name="i")(x)
np.savez(sys.argv[4], **out)
"""


def test_groups_against_jax_pmap_on_four_devices(tmp_path):
    """JAX's pmap computes axis_index_groups on devices: four CPU devices forced in a
    fresh process (XLA's flag must be set before JAX starts).  Values, per-example
    gradients and Hessians, and gradients through the map, where JAX has them (it
    differentiates neither pmax nor all_to_all's forward mode)."""
    _jax()
    import json
    import subprocess
    import sys
    np.savez(tmp_path / "in.npz", **{k: v[1] for k, v in GROUPED.items()})
    cases = {k: (v[0], v[3]) for k, v in GROUPED.items()}
    run = subprocess.run([sys.executable, "-c", _PMAP, json.dumps(cases), json.dumps(GROUPS),
                          str(tmp_path / "in.npz"), str(tmp_path / "out.npz")],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    theirs = np.load(tmp_path / "out.npz")
    for name, (_, x, _, order) in GROUPED.items():
        f = _grouped(name)
        per = lambda x: wnp.sum(wnp.sin(f(x)))
        _same(wg.vmap(f, axis_name="i")(x), theirs[name])
        if order >= 1:
            _same(wg.vmap(wg.grad(per), axis_name="i")(x), theirs[name + "/grad"])
            _same(wg.grad(lambda xs: wnp.sum(wnp.cos(wg.vmap(f, axis_name="i")(xs))))(x),
                  theirs[name + "/outside"])
        if order >= 2:
            _same(wg.vmap(wg.hessian(per), axis_name="i")(x), theirs[name + "/hessian"])


def test_groups_with_shared_arguments_and_dtypes():
    """A shared argument's group collective (the same for each member), a closed-over
    traced value, and dtypes as without groups."""
    w = RNG2.normal(size=3)
    f = wg.vmap(lambda x, w: (x * lax.psum(w, "i", axis_index_groups=GROUPS),
                              lax.all_gather(w, "i", axis_index_groups=GROUPS),
                              lax.psum_scatter(wnp.outer(np.arange(1.0, 3.0), w), "i",
                                               axis_index_groups=GROUPS),
                              lax.all_to_all(wnp.outer(np.arange(1.0, 3.0), w), "i", 0, 0,
                                             axis_index_groups=GROUPS)),
                in_axes=(0, None), axis_name="i")
    out = f(X, w)
    assert_close(out[0], X * 2 * w, rtol=1e-15)
    assert_close(out[1], np.broadcast_to(w, (B, 2, 3)), rtol=0)
    position = np.array([0, 1, 1, 0])              # (each example's place in its group)
    assert_close(out[2], 2 * (position[:, None] + 1) * w, rtol=1e-15)
    assert_close(out[3], (position[:, None, None] + 1) * np.broadcast_to(w, (B, 2, 3)),
                 rtol=1e-15)
    check_grads(lambda w: f(X, w), w, order=2, rtol=1e-5)
    ints = np.arange(B * 2, dtype=np.int32).reshape(B, 2)
    got = wg.vmap(lambda x: (lax.psum(x, "i", axis_index_groups=GROUPS),
                             lax.all_to_all(x, "i", 0, 0, axis_index_groups=GROUPS),
                             lax.pmax(x, "i", axis_index_groups=GROUPS)), axis_name="i")(ints)
    assert [v.dtype for v in got] == [np.int32] * 3
    assert got[0].tolist() == [[4, 6], [8, 10], [4, 6], [8, 10]]


# --------------------------------------------------------------------------------------
# collectives inside custom_jvp and custom_vjp functions
# --------------------------------------------------------------------------------------
def _custom(kind, J, l, n, names="i"):
    """f(x) = sin(x) * psum(x) with a rule of its own that holds collectives too."""
    if kind == "vjp":
        @J.custom_vjp
        def f(x):
            return n.sin(x) * l.psum(x, names)
        f.defvjp(lambda x: (f(x), x), lambda x, g: (
            n.cos(x) * g * l.psum(x, names) + l.psum(n.sin(x) * g, names),))
        return f

    @J.custom_jvp
    def f(x):
        return n.sin(x) * l.psum(x, names)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return f(x), n.cos(x) * t * l.psum(x, names) + n.sin(x) * l.psum(t, names)
    return f


@pytest.mark.parametrize("kind", ["jvp", "vjp"])
def test_custom_rules_holding_collectives_against_jax(kind):
    """As in JAX, f and its rule may call collectives over the vmap's name: the call is
    batched as one (its rule that of the batched function), so values, gradients through
    the vmap and per-example gradients inside it are JAX's."""
    def case(J, l, n):
        f = _custom(kind, J, l, n)
        batched = J.vmap(f, axis_name="i")
        out = [batched(X),
               J.grad(lambda xs: n.sum(batched(xs) * n.cos(xs)))(X),
               J.vmap(J.grad(lambda x: n.sum(f(x) ** 2)), axis_name="i")(X),
               J.jacrev(lambda xs: batched(xs)[1])(X)]
        if kind == "jvp":
            out += [J.jvp(batched, (X,), (M[:, 0],)),
                    J.vmap(J.hessian(lambda x: n.sum(f(x) ** 2)), axis_name="i")(X),
                    J.jacfwd(J.grad(lambda xs: n.sum(batched(xs) ** 2)))(X)]
        return out
    _same(*_both(case), rtol=1e-11)
    f = wg.vmap(_custom(kind, wg, lax, wnp), axis_name="i")
    assert_close(f(X), np.sin(X) * X.sum(0), rtol=1e-14)
    # the rule is used, and it is right: against central differences, to second order
    # (its rule is written with differentiable functions)
    if kind == "jvp":
        check_grads(f, X, order=2, rtol=1e-5)
    else:                           # (reverse mode only: the gradient, then its Jacobian)
        loss = lambda xs: wnp.sum(wnp.cos(f(xs)))
        assert_close(wg.grad(loss)(X), fd_jacobian(loss, X, 1e-6).reshape(X.shape),
                     rtol=1e-6, atol=1e-6)
        assert_close(wg.jacrev(wg.grad(loss))(X),
                     fd_jacobian(wg.grad(loss), X, 1e-6).reshape(X.shape * 2),
                     rtol=1e-5, atol=1e-5)


def test_a_rule_of_its_own_is_kept_when_batched():
    """The batched call differentiates by the rule, not by f's body: a custom_vjp that
    averages the gradients over the examples (the data-parallel step's pmean, written in
    the rule alone) gives that average, inside the vmap as JAX does, and through it (where
    JAX 0.10 raises "unbound axis name": it transposes the rule outside the vmap)."""
    def synced_of(J, l):
        @J.custom_vjp
        def synced(x):
            return x
        synced.defvjp(lambda x: (x, None), lambda _, g: (l.pmean(g, "i"),))
        return synced
    inside = lambda J, l, n: J.vmap(J.grad(lambda x: n.sum(n.sin(synced_of(J, l)(x)) * x)),
                                    axis_name="i")(X)
    _same(*_both(inside), rtol=1e-13)
    expected = (np.cos(X) * X).mean(0) + np.sin(X)      # (the rule's mean, and x's own)
    assert_close(inside(wg, lax, wnp), expected, rtol=1e-13)
    synced = synced_of(wg, lax)
    outside = wg.grad(lambda xs: wnp.sum(wg.vmap(lambda x: wnp.sin(synced(x)),
                                                 axis_name="i")(xs) * xs))(X)
    assert_close(outside, expected, rtol=1e-13)


def test_custom_rules_with_collectives_nested_shared_and_compiled():
    """Collectives over an outer and an inner name in one custom function; a call whose
    argument every example shares (a closed-over weight, in_axes None); nondiff_argnums;
    and wg.compile of the batched function."""
    def nested(J, l, n):
        f = _custom("jvp", J, l, n, names=("i", "j"))
        g = lambda x: f(x) * l.pmean(x, "j")
        both = J.vmap(J.vmap(g, axis_name="j"), axis_name="i")
        return both(Y), J.grad(lambda y: n.sum(n.sin(both(y))))(Y)
    _same(*_both(nested), rtol=1e-12)

    # (JAX leaves a call of shared arguments unbatched, and its rule's psum then raises
    # "unbound axis name": there the weight is given to every example, mapped)
    ours = lambda w: wnp.sum(wg.vmap(lambda x, w: x * _custom("vjp", wg, lax, wnp)(w),
                                     in_axes=(0, None), axis_name="i")(X, w) ** 2)
    jax = _jax()
    jnp = jax.numpy
    theirs = lambda w: jnp.sum(jax.vmap(lambda x, w: x * _custom("vjp", jax, jax.lax, jnp)(w),
                                        axis_name="i")(X, jnp.broadcast_to(w, X.shape)) ** 2)
    _same((ours(W), wg.grad(ours)(W)), (theirs(W), jax.grad(theirs)(W)), rtol=1e-12)
    assert_close(wg.grad(ours)(W), fd_jacobian(ours, W, 1e-6), rtol=1e-6)

    # (JAX 0.10 raises "unbound axis name" for the rule's psum with nondiff_argnums)
    @functools.partial(wg.custom_vjp, nondiff_argnums=(1,))
    def scaled(x, k):
        return k * lax.psum(x, "i")
    scaled.defvjp(lambda x, k: (scaled(x, k), None), lambda k, _, g: (k * lax.psum(g, "i"),))
    batched = wg.vmap(lambda x: wnp.sin(scaled(x, 3.0)), axis_name="i")
    assert_close(batched(X), _every(np.sin(3 * X.sum(0))), rtol=1e-14)
    loss = lambda xs: wnp.sum(batched(xs))
    assert_close(wg.grad(loss)(X), _every(3 * B * np.cos(3 * X.sum(0))), rtol=1e-13)
    assert_close(wg.grad(loss)(X), fd_jacobian(loss, X, 1e-6).reshape(X.shape), rtol=1e-6)

    f = wg.vmap(_custom("vjp", wg, lax, wnp), axis_name="i")
    compiled = wg.compile(f, X)
    assert_close(compiled(2 * X), f(2 * X), rtol=1e-14)
    g = wg.jit(wg.grad(lambda xs: wnp.sum(f(xs) ** 2)))
    assert_close(g(X), wg.grad(lambda xs: wnp.sum(f(xs) ** 2))(X), rtol=1e-12)


def test_an_inner_vmap_batches_all_to_all_and_groups():
    """A vmap without a name inside batches all_to_all (its axes one place right) for the
    outer vmap to compute, against JAX; groups so too, against one outer vmap per inner
    example."""
    z = RNG2.normal(size=(B, 2, B, 3))

    def case(J, l, n):
        f = lambda x: n.sin(l.all_to_all(x, "i", 0, 1)) * l.all_to_all(x, "i", 0, 0,
                                                                        tiled=True).T
        g = J.vmap(J.vmap(f), axis_name="i")
        return g(z), J.grad(lambda z: n.sum(g(z) ** 2))(z)
    _same(*_both(case), rtol=1e-13)
    f = lambda x: lax.psum_scatter(x, "i", axis_index_groups=GROUPS, tiled=True) + \
        lax.all_to_all(x, "i", 0, 0, axis_index_groups=GROUPS)[:2]
    y = z[:, :, :2, 0]
    assert_close(wg.vmap(wg.vmap(f), axis_name="i")(y),
                 np.stack([wg.vmap(f, axis_name="i")(y[:, k]) for k in range(2)], axis=1),
                 rtol=1e-15)


@pytest.mark.parametrize("kind", ["jvp", "vjp"])
def test_custom_rules_with_collectives_in_a_scan(kind):
    """In a scan's body: the loop batched by the vmap holds the call batched, whose
    collectives it computes itself (the loop then holds none over the vmap's name)."""
    xs = RNG2.normal(size=(B, 5))

    def case(J, l, n):
        f = _custom(kind, J, l, n)
        per = lambda xs: l.scan(lambda c, x: (n.sin(c) + f(x * c), c), 0.5, xs)[0]
        batched = J.vmap(per, axis_name="i")
        return (batched(xs), J.grad(lambda z: n.sum(batched(z) ** 2))(xs),
                J.vmap(J.grad(per), axis_name="i")(xs))
    _same(*_both(case), rtol=1e-12)


def test_compile_new_collectives_and_groups():
    f = wg.vmap(lambda x: wnp.sin(lax.all_to_all(x, "i", 0, 1)).T * lax.pbroadcast(x, "i", 1)
                + lax.pshuffle(x, "i", SHUFFLE) ** 2
                + lax.psum(x, "i", axis_index_groups=GROUPS), axis_name="i")
    compiled = wg.compile(f, A0)
    for a in (A0, 2 * A0 - 1):
        assert_close(compiled(a), f(a), rtol=1e-14)
    assert "all_to_all" not in str(compiled.graph)
    loss = lambda a: wnp.sum(f(a) ** 2)
    assert_close(wg.jit(wg.grad(loss))(A0), wg.grad(loss)(A0), rtol=1e-12)


# --------------------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------------------
def test_an_unbound_name_is_a_name_error():
    with pytest.raises(NameError, match="unbound axis name 'i'.*pass axis_name='i' to the "
                                        "vmap or pmap"):
        lax.psum(1.0, "i")
    with pytest.raises(NameError, match="unbound axis name 'j'.*the names bound here: 'i'"):
        wg.vmap(lambda x: lax.pmean(x, "j"), axis_name="i")(X)
    with pytest.raises(NameError, match="unbound axis name 'i'"):
        wg.vmap(lambda x: lax.axis_index("i"))(X)
    with pytest.raises(NameError, match="all_gather over 'i'"):
        wg.jit(lambda x: lax.all_gather(x, "i"))(X)


def test_a_callback_holding_a_collective_is_refused_clearly():
    """A callback runs a function of one example on numbers while the vmap computes its
    batch, where no collective can be computed (custom_jvp and custom_vjp functions are
    batched as one call instead, above)."""
    f = lambda x: wg.pure_callback(lambda v: lax.psum(v, "i"), wg.ShapeDtype((3,)), x,
                                   vmap_method="sequential")
    with pytest.raises(NameError, match="while the wg.vmap with axis_name='i' computes its "
                                        "batch.*callback.*pass its result in"):
        wg.vmap(f, axis_name="i")(X)


def test_bad_permutations():
    f = lambda perm: wg.vmap(lambda x: lax.ppermute(x, "i", perm), axis_name="i")(X)
    with pytest.raises(ValueError, match="source 0 more than once"):
        f([(0, 1), (0, 2)])
    with pytest.raises(ValueError, match="destination 1 more than once"):
        f([(0, 1), (2, 1)])
    with pytest.raises(ValueError, match=r"pair \(0, 4\) of perm is out of range: axis 'i' "
                                         r"has 4 examples"):
        f([(0, 4)])
    with pytest.raises(ValueError, match="pairs of ints"):
        f([(0, 1, 2)])
    with pytest.raises(ValueError, match="pairs of ints"):
        f([(0.0, 1)])


def test_a_partial_permutation_gives_zeros():
    """As JAX documents it (its vmap refuses one; pmap and shard_map give zeros)."""
    out = wg.vmap(lambda x: lax.ppermute(x, "i", [(0, 1), (3, 0)]), axis_name="i")(X)
    assert_close(out, np.stack([X[3], X[0], 0 * X[0], 0 * X[0]]), rtol=0)
    check_grads(wg.vmap(lambda x: lax.ppermute(x, "i", [(0, 1), (3, 0)]), axis_name="i"),
                X, order=1)


def test_shape_errors():
    with pytest.raises(ValueError, match=r"all_gather: axis 3 is out of range for an "
                                         r"argument with 2 dimensions \(from -3 to 2\)"):
        wg.vmap(lambda x: lax.all_gather(x, "i", axis=3), axis_name="i")(M)
    with pytest.raises(ValueError, match="tiled=True.*out of range for an argument with 0 "
                                         "dimensions"):
        wg.vmap(lambda x: lax.all_gather(x[0], "i", tiled=True), axis_name="i")(X)
    with pytest.raises(ValueError, match=r"psum_scatter: x of shape \(3,\) has 3 entries "
                                         r"along its scatter_dimension 0, for 4 examples"):
        wg.vmap(lambda x: lax.psum_scatter(x, "i"), axis_name="i")(X)
    with pytest.raises(ValueError, match="a multiple of the number of examples"):
        wg.vmap(lambda x: lax.psum_scatter(x, "i", tiled=True), axis_name="i")(X)
    with pytest.raises(ValueError, match=r"all_to_all: x of shape \(3,\) has 3 entries along "
                                         r"its split_axis 0, for 4 examples of axis 'i'"):
        wg.vmap(lambda x: lax.all_to_all(x, "i", 0, 0), axis_name="i")(X)
    with pytest.raises(ValueError, match=r"all_to_all: x of shape \(2, 3\) has 3 entries .*"
                                         r"for 2 examples in each group of axis_index_groups"
                                         r".*tiled=True"):
        wg.vmap(lambda x: lax.all_to_all(x, "i", 1, 0, axis_index_groups=GROUPS, tiled=True),
                axis_name="i")(M)
    with pytest.raises(ValueError, match=r"all_to_all: concat_axis 2 is out of range for an "
                                         r"argument with 2 dimensions \(from -2 to 1\)"):
        wg.vmap(lambda x: lax.all_to_all(x, "i", 0, 2), axis_name="i")(A0)
    with pytest.raises(ValueError, match=r"pswapaxes: x of shape \(4, 3\) has 3 entries along "
                                         r"its axis 1"):
        wg.vmap(lambda x: lax.pswapaxes(x, "i", 1), axis_name="i")(A0)
    with pytest.raises(ValueError, match=r"pswapaxes: axis -3 is out of range"):
        wg.vmap(lambda x: lax.pswapaxes(x, "i", -3), axis_name="i")(A0)


def test_bad_groups():
    f = lambda groups, op=lax.psum: wg.vmap(
        lambda x: op(x, "i", axis_index_groups=groups), axis_name="i")(X)
    with pytest.raises(ValueError, match=r"psum: axis_index_groups leaves out positions 2, 3: "
                                         r"the groups must cover every example of axis 'i' "
                                         r"\(0 to 3\)"):
        f([[0, 1]])
    with pytest.raises(ValueError, match=r"pmean: the groups of axis_index_groups must all be "
                                         r"of one size, got groups of 1 and 3 examples"):
        f([[0, 1, 2], [3]], lax.pmean)
    with pytest.raises(ValueError, match="pmax: axis_index_groups names position 1 twice"):
        f([[0, 1], [1, 2]], lax.pmax)
    with pytest.raises(ValueError, match="all_gather: axis_index_groups names position 4, out "
                                         "of range: axis 'i' has 4 examples"):
        f([[0, 4], [1, 2]], lax.all_gather)
    with pytest.raises(ValueError, match="at least one example"):
        f([[0, 1, 2, 3], []])
    with pytest.raises(TypeError, match="psum: axis_index_groups must be a list of groups, "
                                        "each a list of example positions"):
        f([[0.0, 1], [2, 3]])
    with pytest.raises(TypeError, match="a list of groups"):
        f([0, 1, 2, 3])
    with pytest.raises(ValueError, match=r"psum_scatter: x of shape \(3,\) has 3 entries .*for "
                                         r"2 examples in each group"):
        f(GROUPS, lax.psum_scatter)
    with pytest.raises(ValueError, match="leaves out positions 4, 5"):
        wg.vmap(wg.vmap(lambda x: lax.psum(x, ("i", "j"), axis_index_groups=[[0, 1], [2, 3]]),
                        axis_name="j"), axis_name="i")(Y)
    # (one group of every example in order is the collective without groups)
    assert_close(f([[0, 1, 2, 3]]), _every(X.sum(0)), rtol=1e-15)


def test_bad_shuffles_and_sources():
    with pytest.raises(ValueError, match=r"pshuffle: perm must list every example's position "
                                         r"\(0 to 3 for the 4 examples of axis 'i'\) once"):
        wg.vmap(lambda x: lax.pshuffle(x, "i", [0, 1, 2]), axis_name="i")(X)
    with pytest.raises(ValueError, match="pshuffle: perm must list"):
        wg.vmap(lambda x: lax.pshuffle(x, "i", [0, 1, 1, 2]), axis_name="i")(X)
    with pytest.raises(ValueError, match="pshuffle: perm must list"):
        wg.vmap(lambda x: lax.pshuffle(x, "i", 3), axis_name="i")(X)
    with pytest.raises(ValueError, match=r"pbroadcast: source must be an example's position, "
                                         r"an int from 0 to 3 \(axis 'i' has 4 examples\), "
                                         r"got 4"):
        wg.vmap(lambda x: lax.pbroadcast(x, "i", 4), axis_name="i")(X)
    with pytest.raises(ValueError, match="pbroadcast: source must be"):
        wg.vmap(lambda x: lax.pbroadcast(x, "i", 1.0), axis_name="i")(X)
    with pytest.raises(NameError, match="unbound axis name 'j': all_to_all over 'j'"):
        wg.vmap(lambda x: lax.all_to_all(x, "j", 0, 0), axis_name="i")(A0)


def test_bad_axis_names():
    with pytest.raises(TypeError, match="axis_name names one axis, got the tuple"):
        wg.vmap(lambda x: x, axis_name=("i", "j"))
    with pytest.raises(TypeError, match="hashable"):
        wg.vmap(lambda x: x, axis_name={"i": 0})
    with pytest.raises(TypeError, match="JAX's fourth positional argument is axis_name"):
        wg.vmap(lambda x: x, 0, 0, "i")
    with pytest.raises(TypeError, match="psum: takes numbers and arrays"):
        wg.vmap(lambda x: lax.psum("text", "i"), axis_name="i")(X)
