"""wengert.scipy.cluster.vq.vq: codes and distances against SciPy's and JAX's, the
distances' derivatives in the observations and the code book against central differences
to second order and against JAX's, the gradient where an observation sits on its code,
dtypes, vmap and compile, and the errors."""
import numpy
import pytest
import scipy.cluster.vq as svq

import wengert as wg
import wengert.numpy as wnp
from wengert.scipy.cluster.vq import vq
from fd import check_grads

rng = numpy.random.default_rng(20261203)


def traced(f, *args):
    return wg.vjp(f, *args)[0]


@pytest.mark.parametrize("shapes", [((20, 3), (4, 3)), ((15,), (3,)), ((1, 2), (1, 2)),
                                    ((0, 2), (3, 2))])
def test_values_are_scipys(shapes):
    obs, book = rng.normal(size=shapes[0]), rng.normal(size=shapes[1])
    expected = svq.vq(obs, book)
    for codes, dists in (traced(lambda o, b: vq(o, b), obs, book),
                         wg.compile(lambda o, b: vq(o, b))(obs, book)):
        assert codes.dtype == expected[0].dtype and numpy.array_equal(codes, expected[0])
        assert dists.dtype == expected[1].dtype
        numpy.testing.assert_allclose(dists, expected[1], rtol=1e-14)


def test_ties_go_to_the_first_code_and_dtypes_are_scipys():
    book = numpy.array([[0.0, 0.0], [2.0, 0.0], [2.0, 0.0]])
    obs = numpy.array([[1.0, 0.0], [3.0, 0.0]])
    codes, dists = traced(lambda b: vq(obs, b), book)
    assert codes.tolist() == [0, 1] and dists.tolist() == [1.0, 1.0]
    for o, b in ((obs.astype(numpy.float32), book.astype(numpy.float32)),
                 (obs.astype(numpy.float32), book),
                 (numpy.array([1, 2, 5]), numpy.array([0, 4]))):
        expected = svq.vq(o, b)
        got = wg.compile(lambda o, b: vq(o, b))(o, b)         # (traced, integers too)
        assert got[0].dtype == expected[0].dtype and got[1].dtype == expected[1].dtype
        numpy.testing.assert_allclose(got[1], expected[1], rtol=1e-6)


def test_plain_calls_are_scipys_own():
    obs, book = rng.normal(size=(6, 2)), rng.normal(size=(3, 2))
    for a, b in zip(vq(obs, book), svq.vq(obs, book)):
        assert numpy.array_equal(a, b)


def test_distances_against_central_differences():
    obs, book = rng.normal(size=(12, 3)), rng.normal(size=(4, 3))
    check_grads(lambda o, b: vq(o, b)[1] ** 2 + vq(o, b)[1], obs, book, order=2)
    check_grads(lambda o, b: vq(o, b)[1], obs[:, 0], book[:, 0], order=2)


def test_values_and_gradients_match_jax(jax):
    import jax.numpy as jnp
    import jax.scipy.cluster.vq as jvq
    obs, book = rng.normal(size=(30, 2)), rng.normal(size=(5, 2))
    w = rng.normal(size=30)
    codes, dists = vq(obs, book)
    jcodes, jdists = jvq.vq(obs, book)
    assert numpy.array_equal(codes, jcodes)
    numpy.testing.assert_allclose(dists, jdists, rtol=1e-14)
    loss = lambda m, f, o, b: m.sum(f(o, b)[1] * w)
    ours = wg.grad(lambda o, b: loss(wnp, vq, o, b), argnums=(0, 1))(obs, book)
    theirs = jax.jit(jax.grad(lambda o, b: loss(jnp, jvq.vq, o, b), argnums=(0, 1)))(obs, book)
    for a, b in zip(ours, theirs):
        numpy.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-14)


def test_gradient_is_zero_where_an_observation_is_its_code():
    obs = numpy.array([[1.0, 2.0], [4.0, 6.0]])
    book = obs[:1].copy()                       # k-means started from an observation
    g_obs, g_book = wg.grad(lambda o, b: wnp.sum(vq(o, b)[1]), argnums=(0, 1))(obs, book)
    numpy.testing.assert_allclose(g_obs, [[0.0, 0.0], [0.6, 0.8]])
    numpy.testing.assert_allclose(g_book, [[-0.6, -0.8]])


def test_vmap_and_compile_of_a_kmeans_step():
    obs = numpy.concatenate([rng.normal(size=(10, 2)) + 4, rng.normal(size=(10, 2)) - 4])
    distortion = lambda b: wnp.mean(vq(obs, b)[1] ** 2)
    book = numpy.array([[1.0, 1.0], [-1.0, -1.0]])
    grad = wg.grad(distortion)
    compiled = wg.compile(grad, book)
    numpy.testing.assert_allclose(compiled(book), grad(book), rtol=1e-14)
    for _ in range(50):
        book = book - 0.4 * compiled(book)      # gradient descent on the distortion
    numpy.testing.assert_allclose(book, [obs[:10].mean(0), obs[10:].mean(0)], atol=1e-6)
    books = numpy.stack([book, book[::-1]])
    numpy.testing.assert_allclose(wg.vmap(lambda b: vq(obs, b)[1])(books),
                                  numpy.stack([svq.vq(obs, b)[1] for b in books]), rtol=1e-14)
    assert numpy.array_equal(wg.vmap(lambda b: vq(obs, b)[0])(books),
                             numpy.stack([svq.vq(obs, b)[0] for b in books]))


def test_bad_arguments_raise_clear_errors():
    obs, book = numpy.ones((4, 3)), numpy.ones((2, 3))
    call = lambda o, b: wg.grad(lambda o: wnp.sum(vq(o, b)[1]))(o)
    with pytest.raises(ValueError, match=r"same number of features.*\(4, 3\) and \(2, 2\)"):
        call(obs, book[:, :2])
    with pytest.raises(ValueError, match=r"same number of dimensions.*\(4, 3\) and \(3,\)"):
        call(obs, book[0])
    with pytest.raises(ValueError, match="1 or 2 dimensions"):
        call(obs[None], book[None])
    with pytest.raises(ValueError, match="code book is empty"):
        call(obs, book[:0])
    with pytest.raises(ValueError, match="must not contain infs or NaNs"):
        call(obs * numpy.nan, book)
    with pytest.raises(TypeError, match="real numbers"):
        wg.grad(lambda o: wnp.sum(vq(o * 1j, book)[1]))(obs)
