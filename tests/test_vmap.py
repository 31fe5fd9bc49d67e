"""wg.vmap: every batching rule against a Python loop over the examples, derivatives
through vmap against central differences (to second order), per-example gradients against
a loop of gradients, closures over traced values, in_axes / out_axes and the errors."""

import functools

import numpy as np
import pytest

import wengert as wg
import wengert.nn as nn
import wengert.numpy as wnp
from wengert.primitives.registry import REGISTRY

from fd import assert_close, check_grads

B = 3                 # batch size of the tests (none of the examples' lengths)


def _spd(a):
    return a @ wnp.swapaxes(a, -1, -2) + 4.0 * wnp.eye(a.shape[-1])


def _hpd(a):
    """A complex Hermitian positive definite matrix made from a real one."""
    z = a + 1j * a[::-1]
    return z @ wnp.conj(wnp.swapaxes(z, -1, -2)) + 4.0 * wnp.eye(a.shape[-1])


# name -> (f, one example's argument shapes); an int dtype is asked for by ("int", shape, n)
CASES = {
    # elementwise, with broadcasting between the arguments
    "add": (lambda x, y: x + y, [(2, 4), (4,)]),
    "mul_scalar": (lambda x, y: x * y, [(), (3,)]),
    "sin": (lambda x: wnp.sin(x), [(3,)]),
    "tanh_scalar": (lambda x: wnp.tanh(x), [()]),
    "power": (lambda x: wnp.abs(x) ** 1.5 + x ** 2, [(2, 3)]),
    "where": (lambda x, y: wnp.where(x > 0, x, y), [(2, 3), (3,)]),
    "maximum": (lambda x, y: wnp.maximum(x, y), [(3,), (2, 3)]),
    "divide": (lambda x, y: x / (1.0 + y * y), [(4,), ()]),
    "compare": (lambda x, y: (x < y).astype(float), [(3,), (3,)]),
    # reductions and scans
    "sum_all": (lambda x: wnp.sum(x), [(2, 3)]),
    "sum_axis": (lambda x: wnp.sum(x, axis=-1, keepdims=True), [(2, 3)]),
    "mean_var": (lambda x: wnp.mean(x, axis=0) + wnp.var(x), [(4, 2)]),
    "max_min": (lambda x: wnp.max(x, axis=1) - wnp.min(x), [(2, 3)]),
    "prod": (lambda x: wnp.prod(x, axis=0), [(3, 2)]),
    "logsumexp": (lambda x: wnp.logaddexp.reduce(x, axis=0) if False else
                  wg.numpy.logaddexp(x[0], x[1]), [(2, 3)]),
    "logsumexp_axis": (lambda x: wnp.logsumexp(x, axis=-1) + wnp.logsumexp(x), [(2, 3)]),
    "logsumexp_b": (lambda x, b: wnp.logsumexp(x, axis=0, b=b * b), [(3, 2), (2,)]),
    "logsumexp_sign": (lambda x, b: wnp.logsumexp(x, b=b, return_sign=True)[1], [(4,), (4,)]),
    "argmax_all": (lambda x: wnp.argmax(x), [(2, 3)]),
    "argmin_axis": (lambda x: wnp.argmin(x, axis=0), [(2, 3)]),
    "cumsum": (lambda x: wnp.cumsum(x, axis=1), [(2, 3)]),
    "cumprod": (lambda x: wnp.cumprod(x), [(2, 3)]),
    "sort": (lambda x: wnp.sort(x, axis=-1), [(2, 4)]),
    "argsort": (lambda x: wnp.argsort(x, axis=0), [(4, 2)]),
    "partition": (lambda x: wnp.partition(x, 2), [(5,)]),
    # shapes
    "transpose": (lambda x: wnp.transpose(x), [(2, 3, 4)]),
    "swap_move": (lambda x: wnp.moveaxis(wnp.swapaxes(x, 0, 1), 0, -1), [(2, 3, 4)]),
    "reshape": (lambda x: wnp.reshape(x, (3, -1)), [(2, 3)]),
    "ravel_squeeze": (lambda x: wnp.ravel(wnp.squeeze(x, 1)), [(2, 1, 3)]),
    "expand_dims": (lambda x: wnp.expand_dims(x, -1), [(2,)]),
    "broadcast_to": (lambda x: wnp.broadcast_to(x, (4, 2, 3)), [(3,)]),
    "concatenate": (lambda x, y: wnp.concatenate([x, y, x], axis=-1), [(2, 3), (2, 1)]),
    "stack_split": (lambda x, y: wnp.split(wnp.stack([x, y]), 2, axis=1)[1], [(4,), (4,)]),
    "tile_repeat": (lambda x: wnp.tile(x, 2) + wnp.repeat(x, 2), [(3,)]),
    "flip_roll": (lambda x: wnp.flip(x, -1) * wnp.roll(x, 1, axis=0), [(3, 2)]),
    "pad": (lambda x: wnp.pad(x, ((1, 0), (0, 2))), [(2, 3)]),
    "tril_triu": (lambda x: wnp.tril(x) - wnp.triu(x, 1), [(3, 3)]),
    "tril_vector": (lambda x: wnp.tril(x), [(3,)]),
    # indexing
    "slice": (lambda x: x[1:, ::-1], [(3, 4)]),
    "int_index": (lambda x: x[None, 0] * x[-1], [(3, 4)]),
    "array_index": (lambda x: x[np.array([0, 2, 2])], [(3, 4)]),
    "two_arrays": (lambda x: x[np.array([0, 1]), np.array([2, 3])], [(3, 4)]),
    "apart_arrays": (lambda x: x[np.array([0, 1]), :, np.array([1, 1])], [(2, 3, 4)]),
    "int_then_array": (lambda x: x[0, :, np.array([2, 0, 1])], [(2, 3, 4)]),
    "ellipsis": (lambda x: x[..., np.array([1, 0])], [(2, 3, 2)]),
    "mask": (lambda x: x[np.array([True, False, True])], [(3, 2)]),
    "take_along": (lambda x, i: wnp.take_along_axis(x, i, axis=0), [(4, 2), ("int", (3, 2), 4)]),
    # products
    "matmul_mv": (lambda a, v: a @ v, [(2, 3), (3,)]),
    "matmul_vm": (lambda v, a: v @ a, [(3,), (3, 2)]),
    "matmul_vv": (lambda u, v: u @ v, [(3,), (3,)]),
    "matmul_stack": (lambda a, b: a @ b, [(2, 2, 3), (3, 4)]),
    "matmul_stack2": (lambda a, b: a @ b, [(2, 3), (4, 3, 2)]),
    "dot_outer_inner": (lambda u, v: wnp.outer(u, v) * wnp.inner(u, u) + wnp.dot(u, v), [(3,), (3,)]),
    "tensordot": (lambda a, b: wnp.tensordot(a, b, axes=([1], [0])), [(2, 3), (3, 2)]),
    "einsum": (lambda a, b: wnp.einsum("ij,jk->ik", a, b), [(2, 3), (3, 2)]),
    "einsum_trace": (lambda a: wnp.einsum("ii", a), [(3, 3)]),
    "einsum_ellipsis": (lambda a, b: wnp.einsum("...i,i->...", a, b), [(2, 3), (3,)]),
    # linear algebra
    "inv": (lambda a: wnp.linalg.inv(_spd(a)), [(3, 3)]),
    "det": (lambda a: wnp.linalg.det(_spd(a)), [(3, 3)]),
    "slogdet": (lambda a: wnp.linalg.slogdet(_spd(a))[1], [(2, 2)]),
    "solve_vec": (lambda a, b: wnp.linalg.solve(_spd(a), b), [(3, 3), (3,)]),
    "solve_mat": (lambda a, b: wnp.linalg.solve(_spd(a), b), [(3, 3), (3, 2)]),
    "solve_stack": (lambda a, b: wnp.linalg.solve(_spd(a), b), [(2, 3, 3), (3,)]),
    "cholesky": (lambda a: wnp.linalg.cholesky(_spd(a)), [(3, 3)]),
    "eigvalsh": (lambda a: wnp.linalg.eigvalsh(_spd(a)), [(3, 3)]),
    "eigh_vectors": (lambda a: wnp.abs(wnp.linalg.eigh(_spd(a))[1]), [(3, 3)]),
    "svdvals": (lambda a: wnp.linalg.svd(a, compute_uv=False), [(3, 2)]),
    "svd_vectors": (lambda a: wnp.abs(wnp.linalg.svd(a)[0]) + wnp.abs(wnp.linalg.svd(
        a, full_matrices=False)[2][0, 0]), [(3, 2)]),
    "qr_q": (lambda a: wnp.abs(wnp.linalg.qr(a)[0]), [(3, 2)]),
    "complex_slogdet": (lambda a: (lambda s, l: s * wnp.exp(l))(
        *wnp.linalg.slogdet(a + 1j * a.T + 3 * wnp.eye(3))), [(3, 3)]),
    "complex_factors": (lambda a: wnp.linalg.cholesky(_hpd(a)) + wnp.linalg.eigvalsh(_hpd(a))
                        + wnp.linalg.qr(_hpd(a))[1], [(3, 3)]),
    "eig": (lambda a: wnp.abs(wnp.linalg.eig(a)[1]) + wnp.linalg.eigvals(a), [(3, 3)]),
    "qr": (lambda a: wnp.linalg.qr(a)[1], [(3, 2)]),
    "norm": (lambda a: wnp.linalg.norm(a) + wnp.linalg.norm(a, axis=0), [(3, 2)]),
    # neural networks
    "relu_softmax": (lambda x: nn.softmax(nn.relu(x)) + nn.log_softmax(x, axis=0), [(2, 3)]),
    "cross_entropy": (lambda z, y: nn.cross_entropy(z, y), [(4, 3), ("int", (4,), 3)]),
    "conv2d": (lambda x, k, b: nn.conv2d(x, k, b, padding=1), [(2, 1, 4, 4), (3, 1, 3, 3), (3,)]),
    "conv2d_stride": (lambda x, k: nn.conv2d(x, k, stride=2), [(1, 2, 5, 5), (2, 2, 3, 3)]),
    "conv2d_groups": (lambda x, k: nn.conv2d(x, k, stride=(2, 1), padding=(1, 0),
                                             dilation=(1, 2), groups=2),
                      [(2, 4, 5, 6), (4, 2, 2, 2)]),
    "max_pool": (lambda x: nn.max_pool2d(x, 2), [(2, 1, 4, 4)]),
    # fft (complex results)
    "fft": (lambda x: wnp.fft.fft(x), [(4,)]),
    "rfft_irfft": (lambda x: wnp.fft.irfft(wnp.fft.rfft(x, axis=0), n=4, axis=0), [(4, 2)]),
    "fft2": (lambda x: wnp.fft.fft2(x), [(2, 3)]),
}

# Cases where the batch of some argument takes one call per example (no rule covers it)
LOOPS = {"tril_vector": {"tril"}}


def _example(shape, rng):
    if shape and shape[0] == "int":
        return rng.integers(0, shape[2], size=shape[1])
    return rng.normal(size=shape)


def _batch(shape, axis, rng):
    ex = [_example(shape, rng) for _ in range(B)]
    return np.stack(ex, axis=axis % (len(np.shape(ex[0])) + 1)), ex


def _patterns(n):
    """Which arguments are mapped: all of them, and each one alone."""
    out = [(True,) * n]
    if n > 1:
        out += [tuple(k == j for k in range(n)) for j in range(n)]
    return out


@pytest.mark.parametrize("name", CASES)
def test_vmap_matches_a_loop(name, loops):
    f, shapes = CASES[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    for mapped in _patterns(len(shapes)):
        for axis in (0, -1):
            args, examples = [], []
            for shape, m in zip(shapes, mapped):
                if m:
                    batch, ex = _batch(shape, axis, rng)
                    args.append(batch)
                    examples.append(ex)
                else:
                    v = _example(shape, rng)
                    args.append(v)
                    examples.append([v] * B)
            in_axes = tuple(axis if m else None for m in mapped)
            got = wg.vmap(f, in_axes=in_axes)(*args)
            want = np.stack([np.asarray(f(*ex)) for ex in zip(*examples)])
            assert np.shape(got) == want.shape, (mapped, axis)
            assert np.asarray(got).dtype == want.dtype, (mapped, axis)
            got = np.asarray(got)
            assert_close(got.real, want.real, rtol=1e-10, atol=1e-12)
            assert_close(got.imag, want.imag, rtol=1e-10, atol=1e-12)
    assert loops <= LOOPS.get(name, set()), f"called once per example: {loops}"


SMOOTH = ["add", "sin", "divide", "sum_axis", "mean_var", "prod", "cumprod", "transpose",
          "concatenate", "pad", "slice", "apart_arrays", "int_then_array", "take_along",
          "matmul_mv", "matmul_stack2", "einsum", "inv", "solve_vec", "cholesky", "eigvalsh",
          "relu_softmax", "cross_entropy", "conv2d", "conv2d_groups", "max_pool", "rfft_irfft"]


@pytest.mark.parametrize("name", SMOOTH)
def test_derivatives_through_vmap(name):
    """jvp and vjp (and second order) of the batched function, by central differences."""
    f, shapes = CASES[name]
    rng = np.random.default_rng(1 + sum(map(ord, name)))
    floats = [k for k, s in enumerate(shapes) if not (s and s[0] == "int")]
    fixed = [_batch(s, 0, rng)[0] for s in shapes]

    def batched(*xs):
        args = list(fixed)
        for k, x in zip(floats, xs):
            args[k] = x
        return wg.vmap(f)(*args)
    check_grads(batched, *[fixed[k] for k in floats], order=2)


@pytest.mark.parametrize("name", ["sum_axis", "matmul_mv", "solve_vec", "cross_entropy",
                                  "conv2d", "conv2d_stride", "conv2d_groups", "max_pool",
                                  "apart_arrays", "einsum"])
def test_per_example_gradients(name, loops):
    """vmap(grad(loss)) against one gradient per example, without a loop."""
    f, shapes = CASES[name]
    rng = np.random.default_rng(2 + sum(map(ord, name)))
    loss = lambda *a: wnp.sum(wnp.sin(f(*a)))
    args = [_batch(s, 0, rng)[0] for s in shapes]
    in_axes = (0,) * len(args)
    got = wg.vmap(wg.grad(loss), in_axes=in_axes)(*args)
    assert not loops, loops
    want = np.stack([wg.grad(loss)(*[a[b] for a in args]) for b in range(B)])
    assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_per_example_gradients_of_shared_weights():
    """The usual form: weights shared (in_axes None), one gradient per example."""
    rng = np.random.default_rng(3)
    w, b = rng.normal(size=(4, 3)), rng.normal(size=3)
    xs, ys = rng.normal(size=(5, 4)), rng.integers(0, 3, size=5)

    def loss(params, x, y):
        w, b = params
        return nn.cross_entropy((wnp.tanh(x) @ w + b)[None], y[None])
    grads = wg.vmap(wg.grad(loss), in_axes=(None, 0, 0))((w, b), xs, ys)
    for k in range(5):
        gw, gb = wg.grad(loss)((w, b), xs[k], ys[k])
        assert_close(grads[0][k], gw, rtol=1e-12, atol=1e-14)
        assert_close(grads[1][k], gb, rtol=1e-12, atol=1e-14)


def test_closure_over_a_traced_value():
    """A per-example loss closing over the weights: the gradient flows to them."""
    rng = np.random.default_rng(4)
    xs = rng.normal(size=(6, 3))

    def total(w):
        per_example = wg.vmap(lambda x: wnp.tanh(x @ w) ** 2)(xs)
        return wnp.sum(per_example * wnp.arange(1.0, 7.0))

    def loop(w):
        return sum((k + 1) * wnp.tanh(xs[k] @ w) ** 2 for k in range(6))
    w = rng.normal(size=3)
    assert_close(wg.grad(total)(w), wg.grad(loop)(w), rtol=1e-12, atol=1e-14)
    check_grads(total, w, order=2)
    assert_close(wg.hessian(total)(w), wg.hessian(loop)(w), rtol=1e-10, atol=1e-12)


def test_shared_argument_passed_as_it_is():
    """An unmapped argument reaches f unchanged: Python can branch on it."""
    def f(x, n, mode):
        out = x
        for _ in range(n):
            out = wnp.sin(out) if mode == "sin" else wnp.cos(out)
        return out
    xs = np.linspace(0.0, 1.0, 4)
    assert_close(wg.vmap(f, in_axes=(0, None, None))(xs, 3, "sin"), np.sin(np.sin(np.sin(xs))))


def test_in_axes_pytrees_and_kwargs():
    rng = np.random.default_rng(5)
    params = {"w": rng.normal(size=(3, 2)), "b": rng.normal(size=(4, 2))}
    x = rng.normal(size=(3, 4))

    def f(p, x, scale=1.0):
        return (x @ p["w"] + p["b"]) * scale
    got = wg.vmap(f, in_axes=({"w": None, "b": 0}, 1))(params, x, scale=np.arange(4.0))
    want = np.stack([(x[:, k] @ params["w"] + params["b"][k]) * k for k in range(4)])
    assert_close(got, want)


def test_out_axes():
    xs = np.arange(6.0).reshape(3, 2)
    got = wg.vmap(lambda x: (x * 2, wnp.sum(x), 7.0), out_axes=(1, 0, None))(xs)
    assert_close(got[0], (xs * 2).T)
    assert_close(got[1], xs.sum(axis=1))
    assert got[2] == 7.0
    ones = wg.vmap(lambda x: 1.0)(xs)              # an output the same for all: broadcast
    assert_close(ones, np.ones(3))


def test_nested_vmap():
    a = np.random.default_rng(6).normal(size=(3, 4, 5))
    got = wg.vmap(wg.vmap(lambda v: wnp.sum(v * v)))(a)
    assert_close(got, np.sum(a * a, axis=2))
    outer = wg.vmap(wg.vmap(lambda u, v: u @ v, in_axes=(None, 0)), in_axes=(0, None))
    u, v = a[:, 0, :], a[0]
    assert_close(outer(u, v), u @ v.T)


def test_compile_of_vmap():
    f = wg.vmap(wg.grad(lambda w, x: wnp.sum(wnp.tanh(x * w))), in_axes=(None, 0))
    w, xs = np.array([0.5, -1.0]), np.random.default_rng(7).normal(size=(4, 2))
    fast = wg.compile(f, w, xs)
    assert_close(fast(w, xs), f(w, xs), rtol=1e-13, atol=1e-15)


def test_vmap_inside_jacobian_and_jvp():
    xs = np.random.default_rng(8).normal(size=(3, 2))
    f = lambda w: wg.vmap(lambda x: wnp.exp(x @ w))(xs)
    w = np.array([0.3, -0.2])
    jac = wg.jacrev(f)(w)
    assert_close(jac, np.exp(xs @ w)[:, None] * xs)
    assert_close(wg.jacfwd(f)(w), jac)


def test_value_dependent_branch_is_refused():
    def f(x):
        return x if x > 0 else -x
    with pytest.raises(wg.ConcretizationError):
        wg.vmap(f)(np.array([1.0, -2.0]))
    # written with where, it works
    assert_close(wg.vmap(lambda x: wnp.where(x > 0, x, -x))(np.array([1.0, -2.0])), [1.0, 2.0])


def test_axis_size_when_nothing_is_mapped_as_in_jax():
    w = np.array([0.5, -1.0])
    got = wg.vmap(lambda w: wnp.sin(w) * 2, in_axes=None, axis_size=3)(w)
    assert got.shape == (3, 2)
    assert_close(got, np.broadcast_to(np.sin(w) * 2, (3, 2)), rtol=1e-15)
    assert_close(wg.vmap(lambda: 1.5, axis_size=2)(), [1.5, 1.5])
    # differentiated through: each of the 3 copies contributes
    g = wg.grad(lambda w: wnp.sum(wg.vmap(lambda w: w ** 2, in_axes=None, axis_size=3)(w)))(w)
    assert_close(g, 3 * 2 * w, rtol=1e-15)
    # with mapped arguments it must agree with them
    assert_close(wg.vmap(lambda x: x * 2, axis_size=3)(np.ones((3, 2))), np.full((3, 2), 2.0))
    with pytest.raises(ValueError, match=r"axis_size=4, but argument 'x' of shape \(3, 2\) "
                                         "has 3 along its mapped axis 0"):
        wg.vmap(lambda x: x, axis_size=4)(np.ones((3, 2)))
    for bad in (-1, 2.0, True):
        with pytest.raises(TypeError, match="axis_size must be a non-negative int"):
            wg.vmap(lambda x: x, axis_size=bad)


def test_errors():
    x, y = np.ones((3, 2)), np.ones((4, 2))
    with pytest.raises(ValueError, match=r"'x' of shape \(3, 2\) has 3 along axis 0.*'y' of "
                                         r"shape \(4, 2\) has 4"):
        wg.vmap(lambda x, y: x + y)(x, y)
    with pytest.raises(ValueError, match="no argument is mapped"):
        wg.vmap(lambda x: x, in_axes=None)(x)
    with pytest.raises(ValueError, match="in_axes 2 for argument 'x' of shape"):
        wg.vmap(lambda x: x, in_axes=2)(x)
    with pytest.raises(ValueError, match="2 entries for 1 positional"):
        wg.vmap(lambda x: x, in_axes=(0, 0))(x)
    with pytest.raises(TypeError, match="in_axes holds 'a'"):
        wg.vmap(lambda x: x, in_axes="a")
    with pytest.raises(ValueError, match="out_axes is None for output 0"):
        wg.vmap(lambda x: x, out_axes=None)(x)
    with pytest.raises(TypeError, match="argument 's' is a str.*give it in_axes None"):
        wg.vmap(lambda x, s: x)(x, "abc")
    with pytest.raises(TypeError, match="argument 'mode' is a str.*pass it positionally"):
        wg.vmap(lambda x, mode="a": x)(x, mode="b")
    with pytest.raises(ValueError, match="does not match the structure"):
        wg.vmap(lambda p: p["a"], in_axes=({"b": 0},))({"a": x})
    with pytest.raises(TypeError, match=r"got dict; for a single argument write "
                                        r"in_axes=\(\{'a': 0\},\)"):   # (JAX's rule)
        wg.vmap(lambda p: p["a"], in_axes={"a": 0})
    with pytest.raises(ValueError, match=r"out_axes \(0,\) .* output \(one array or number\)"):
        wg.vmap(lambda x: x * 2, out_axes=(0,))(x)       # (it named an internal class)
    with pytest.raises(TypeError):
        wg.vmap(3)


def test_a_keyword_setting_is_refused_with_how_to_pass_it():
    # keyword arguments are always mapped (as in JAX); the error blamed an "in_axes 0" the
    # caller never wrote, and told nothing of functools.partial or in_axes None
    xs, w = np.ones((3, 2, 4, 5, 5)), np.ones((3, 4, 3, 3))
    conv = wg.vmap(nn.conv2d, in_axes=(0, None))
    hint = (r"keyword arguments are always mapped over axis 0, as in JAX: to pass 'padding' "
            r"to f as it is, close over it \(functools.partial\(f, padding=\.\.\.\), or a "
            r"lambda\) or pass it positionally with in_axes None")
    with pytest.raises(ValueError, match=r"vmap: keyword argument 'padding' of shape \(\) "
                                         r"has no axis 0 to map over; " + hint):
        conv(xs, w, padding=1)
    with pytest.raises(ValueError, match=r"keyword argument 'padding_0' of shape \(\) .*"
                                         + hint):
        conv(xs, w, padding=(1, 2))
    with pytest.raises(ValueError, match=r"'bias' of shape \(4,\) has 4 along axis 0; "
                                         + hint.replace("padding", "bias")):
        conv(xs, w, bias=np.ones(4))
    # and the ways it names work
    want = np.stack([nn.conv2d(x, w, padding=1) for x in xs])
    assert_close(wg.vmap(functools.partial(nn.conv2d, padding=1), in_axes=(0, None))(xs, w),
                 want, rtol=0, atol=0)
    assert_close(wg.vmap(nn.conv2d, in_axes=(0, None, None, None, None))(xs, w, None, 1, 1),
                 want, rtol=0, atol=0)


def test_user_primitive_without_rule_is_looped(loops):
    sq = wg.primitive(lambda x: np.asarray(x) ** 2, name="vmap_test_sq")
    sq.defvjp(lambda g, x, ans: (2 * x * g,))
    xs = np.arange(4.0).reshape(2, 2)
    assert_close(wg.vmap(sq)(xs), xs ** 2)
    assert loops == {"vmap_test_sq"}
    assert_close(wg.grad(lambda x: wnp.sum(wg.vmap(sq)(x)))(xs), 2 * xs)


@pytest.mark.parametrize("in_axes", [(0, None), (0, 0), (None, 0)])
def test_vmap_of_a_checkpoint_is_one_checkpoint(in_axes, loops):
    """A checkpointed function under vmap: one checkpoint of the batched function (no
    call per example), with the values and derivatives of the plain function."""
    def two(x, w):
        return wnp.sin(x) * w, wnp.sum(x * w)
    ck = wg.checkpoint(two)
    rng = np.random.default_rng(13)
    x = rng.normal(size=(4, 3)) if in_axes[0] == 0 else rng.normal(size=3)
    w = rng.normal(size=(4, 3)) if in_axes[1] == 0 else rng.normal(size=3)

    def loss(f):
        return lambda x, w: wnp.sum(wg.vmap(f, in_axes=in_axes)(x, w)[0] ** 2) + \
            wnp.sum(wnp.cos(wg.vmap(f, in_axes=in_axes)(x, w)[1]))
    assert_close(loss(ck)(x, w), loss(two)(x, w), rtol=1e-13)
    got = wg.grad(loss(ck), argnums=(0, 1))(x, w)
    want = wg.grad(loss(two), argnums=(0, 1))(x, w)
    for g, h in zip(got, want):
        assert_close(g, h, rtol=1e-12, atol=1e-14)
    check_grads(loss(ck), x, w, order=2)
    assert not loops, loops


def test_every_builtin_primitive_is_batched():
    """Each built-in primitive has a batching rule or a decomposition to be batched by."""
    # (axis_index takes no argument: no vmap has anything of it to batch)
    missing = sorted(p.name for p in REGISTRY.values()
                     if p.builtin and p.batch is None and p.decomposition is None
                     and p.name not in ("const", "input", "axis_index"))
    assert not missing, missing


def test_axes_counted_from_the_end_stay_put_under_vmap(loops):
    """Rules may name axes from the end (solve_banded's flip the band's rows): a batch axis
    in front must not move them."""
    from wengert.primitives import array as A
    x = np.arange(24.0).reshape(2, 3, 4)
    for axes in ((-2,), (-1, 0)):
        f = lambda x: A.flip(x, axes=axes)
        assert_close(wg.vmap(f)(x), np.stack([np.flip(e, axis=axes) for e in x]))
    assert_close(wg.vmap(lambda x: A.cumsum(x, axis=-1))(x), np.cumsum(x, axis=-1))
    assert not loops, loops


def test_empty_batch():
    out = wg.vmap(lambda x: wnp.sum(wnp.sin(x)))(np.zeros((0, 3)))
    assert out.shape == (0,)


def test_derivative_of_per_example_gradients():
    """grad of a function of per-example gradients (a gradient-norm penalty): the shared
    weights reach the inner grad as an enclosing trace's value."""
    rng = np.random.default_rng(9)
    xs = rng.normal(size=(4, 3))
    loss = lambda w, x: wnp.tanh(x @ w) ** 2

    def penalty(w):
        g = wg.vmap(wg.grad(loss), in_axes=(None, 0))(w, xs)
        return wnp.sum(g * g)

    def loop(w):
        return sum(wnp.sum(wg.grad(loss)(w, xs[k]) ** 2) for k in range(4))
    w = rng.normal(size=3)
    assert_close(penalty(w), loop(w), rtol=1e-12)
    assert_close(wg.grad(penalty)(w), wg.grad(loop)(w), rtol=1e-10, atol=1e-12)
    check_grads(penalty, w, order=1)


# --- Jacobians by batched sweeps ----------------------------------------------------------
def _jacobian_cases():
    rng = np.random.default_rng(10)
    a = rng.normal(size=(3, 4))

    def pytree_f(p, x):
        return {"y": wnp.tanh(p["w"] @ x) * p["s"], "n": wnp.sum(x ** 2), "i": wnp.argmax(x)}
    p = {"w": a, "s": np.float64(1.5)}
    x = rng.normal(size=4)
    return [
        (lambda x: wnp.sin(x) * wnp.sum(x ** 2), (rng.normal(size=9),), 0),
        (lambda m: wnp.linalg.inv(m) @ m[:, 0], (rng.normal(size=(3, 3)) + 3 * np.eye(3),), 0),
        (pytree_f, (p, x), (0, 1)),
        (lambda x: wnp.cumprod(x.astype(np.float32)), (rng.normal(size=8).astype(np.float32),), 0),
        (wg.checkpoint(lambda x: wnp.exp(wnp.sin(x)) * x[::-1]), (rng.normal(size=8),), 0),
    ]


@pytest.mark.parametrize("k", range(5))
def test_batched_jacobians_equal_one_sweep_per_direction(k, monkeypatch):
    import wengert.api as api
    f, args, argnums = _jacobian_cases()[k]
    results = {}
    real = api._batched_sweeps
    for start, most in ((10 ** 9, None), (1, None), (1, 3)):     # loop, batched, batched in
        monkeypatch.setattr(api, "BATCHED_SWEEPS_FROM", start)  # chunks of 3 directions
        monkeypatch.setattr(api, "_batched_sweeps", lambda sweep, node, chunk, most=most:
                            real(sweep, node, min(chunk, most or chunk)))
        results[start, most] = [flatten_all(j(f, argnums)(*args))
                                for j in (wg.jacfwd, wg.jacrev)]
    loop = results[10 ** 9, None]
    for key, res in results.items():
        for got, want in zip(res, loop):
            for g, w in zip(got, want):
                assert np.shape(g) == np.shape(w) and np.asarray(g).dtype == np.asarray(w).dtype
                assert_close(g, w, rtol=1e-12, atol=1e-14)


def flatten_all(tree):
    from wengert.tree import flatten
    return [np.asarray(v) for v in flatten(tree)[0]]


def test_batched_hessian_against_differences(monkeypatch):
    """A Hessian large enough for batched sweeps (both levels), against differences of
    the gradient, and equal to the one by a sweep per direction."""
    import wengert.api as api
    rng = np.random.default_rng(11)
    a = rng.normal(size=(12, 12))
    f = lambda x: wnp.sum(wnp.tanh(a @ x) ** 2) + wnp.prod(wnp.cos(x))
    x = rng.normal(size=12)
    h = wg.hessian(f)(x)
    eps, g = 1e-6, wg.grad(f)
    fd = np.stack([(g(x + eps * e) - g(x - eps * e)) / (2 * eps) for e in np.eye(12)])
    assert_close(h, fd, rtol=1e-6, atol=1e-7)
    monkeypatch.setattr(api, "BATCHED_SWEEPS_FROM", 10 ** 9)
    assert_close(h, wg.hessian(f)(x), rtol=1e-12, atol=1e-13)


def test_jacobian_sweeps_batched_only_in_batches_worth_their_trace(monkeypatch):
    """Where the memory bound would leave fewer directions per batch than pay for a
    trace (a long chain: many intermediate values), the sweeps run one by one."""
    import wengert.api as api
    calls = []
    real = api._batched_sweeps
    monkeypatch.setattr(api, "_batched_sweeps", lambda *a: calls.append(a[2]) or real(*a))
    f = lambda x: wnp.sin(x) * 2.0
    x = np.linspace(0.0, 1.0, 16)
    wg.jacrev(f)(x)
    assert calls == [16]
    monkeypatch.setattr(api, "BATCHED_SWEEP_ELEMENTS", 16 * 3)   # room for ~3 directions
    assert_close(wg.jacrev(f)(x), np.diag(2 * np.cos(x)))
    assert calls == [16]


def test_jacobian_of_a_rule_that_reads_numbers():
    """A user's rules written with np.asarray cannot be traced: the Jacobian falls back
    to one sweep per direction."""
    sq = wg.primitive(lambda x: np.asarray(x) ** 2, name="vmap_test_numpy_rules")
    sq.defvjp(lambda g, x, ans: (2 * np.asarray(x) * np.asarray(g),))
    sq.defjvp(lambda ts, x, ans: 2 * np.asarray(x) * np.asarray(ts[0]))
    x = np.arange(10.0)
    assert_close(wg.jacrev(sq)(x), np.diag(2 * x))
    assert_close(wg.jacfwd(sq)(x), np.diag(2 * x))


def test_jacobians_through_an_fft_times_a_python_int():
    """fft(v) * 2: forward mode multiplies a complex constant tangent by the int 2, which
    once went to the integer-only ufunc node and was refused as complex."""
    x = np.random.default_rng(0).normal(size=(2, 3))

    def f(v):
        return wnp.real(wnp.fft.fft(v) * 2)
    for jac in (wg.jacfwd, wg.jacrev):
        mapped = wg.vmap(jac(f))(x)
        for row, got in zip(x, mapped):
            np.testing.assert_allclose(got, jac(f)(row), rtol=1e-14, atol=1e-14)
            # f is linear: its Jacobian is 2 Re(DFT matrix)
            np.testing.assert_allclose(got, 2 * np.real(np.fft.fft(np.eye(3), axis=0)),
                                       rtol=1e-14, atol=1e-14)


def test_a_traced_index_is_a_gather_and_a_numpy_table_names_take():
    """-log_softmax(z)[y] per example: y mapped is a traced index, a gather (as in JAX),
    whose per-example values and gradients are the loop's and take_along_axis's; a NumPy
    array indexed by it cannot dispatch, and the error names np.take, which gathers."""
    rng = np.random.default_rng(1)
    logits, labels = rng.normal(size=(4, 3)), np.array([0, 2, 1, 2])
    indexed = lambda z, y: -nn.log_softmax(z)[y]                            # noqa: E731
    np.testing.assert_allclose(wg.vmap(indexed)(logits, labels),
                               [indexed(z, y) for z, y in zip(logits, labels)], rtol=1e-14)
    np.testing.assert_allclose(wg.vmap(wg.grad(indexed))(logits, labels),
                               [wg.grad(indexed)(z, y) for z, y in zip(logits, labels)],
                               rtol=1e-14)
    table = rng.normal(size=(3, 2))
    with pytest.raises(wg.ConcretizationError, match=r"wengert\.numpy\.take\(table, i"):
        wg.vmap(lambda y: table[y])(labels)
    np.testing.assert_array_equal(wg.vmap(lambda y: wnp.take(table, y, axis=0))(labels),
                                  table[labels])

    # a write at a traced index: x.at[i] is the select that does it
    xs = np.arange(6.0).reshape(2, 3)
    written = wg.vmap(lambda v, i: v.at[i].set(9.0))(xs, np.array([2, 0]))
    select = wg.vmap(lambda v, i: wnp.where(wnp.arange(len(v)) == i, 9.0, v))
    assert written.tolist() == select(xs, np.array([2, 0])).tolist() == \
        [[0.0, 1.0, 9.0], [9.0, 4.0, 5.0]]

    def loss(z, y):
        return -wnp.take_along_axis(nn.log_softmax(z), y[None], axis=0)[0]
    values = wg.vmap(loss)(logits, labels)
    grads = wg.vmap(wg.grad(loss))(logits, labels)
    for z, y, v, g in zip(logits, labels, values, grads):
        assert_close(v, -nn.log_softmax(z)[y], rtol=1e-14, atol=0)
        assert_close(g, wg.grad(lambda z: -nn.log_softmax(z)[y])(z), rtol=1e-14, atol=1e-16)


def test_a_batching_rule_of_the_wrong_shape_is_refused():
    # a user's rule returning (1, 4) for a batch of 3 broadcast into wrong numbers, or
    # gave a result of shape (1,) for (3,), silently (QA)
    q = wg.primitive(lambda x: x * 2.0, name="dbl_bad_batch")
    q.defbatch(lambda args, mapped, node: q(args[0][:1]))
    X = np.arange(12.0).reshape(3, 4)
    with pytest.raises(ValueError, match=r"batching rule of primitive 'dbl_bad_batch' "
                                         r"returned shape \(1, 4\) for a batch of 3 results "
                                         r"of shape \(4,\): it must be \(3, 4\)"):
        wg.vmap(lambda x: q(x) + x)(X)
    q.defbatch(lambda args, mapped, node: q(args[0]))          # the right rule
    np.testing.assert_array_equal(wg.vmap(lambda x: q(x) + x)(X), 3 * X)


def test_an_empty_batch_of_packed_results():
    # A loop's or a checkpoint's several results are packed; a batch of none used to meet
    # NumPy's "cannot reshape array of size 0 into shape (0,newaxis)"
    loop = lambda xs: wg.scan(lambda c, x: (c + x, c), 0.0, xs)
    both = wg.checkpoint(lambda x: (wnp.sin(x), wnp.sum(x)))
    for f, want in ((loop, [(0,), (0, 3)]), (both, [(0, 3), (0,)])):
        for run in (wg.vmap(f), wg.compile(wg.vmap(f))):
            got = run(np.zeros((0, 3)))
            assert [np.shape(v) for v in got] == want
        full = wg.vmap(f)(np.arange(6.0).reshape(2, 3))       # and a batch of two still
        for k, x in enumerate(np.arange(6.0).reshape(2, 3)):
            for a, b in zip(full, f(x)):
                assert_close(a[k], b)


def test_dict_axes_follow_flattens_order_for_ordered_and_mixed_key_dicts():
    # in_axes of an OrderedDict were matched in sorted key order while its leaves come in
    # insertion order (a silently wrong batch), and keys that do not compare raised
    import collections
    r = np.random.default_rng(5)
    b, a = r.normal(size=(3, 2)), r.normal(size=2)
    d = collections.OrderedDict([("b", b), ("a", a)])
    axes = collections.OrderedDict([("b", 0), ("a", None)])
    got = wg.vmap(lambda d: wnp.sin(d["b"]) * d["a"], in_axes=(axes,))(d)
    assert_close(got, np.stack([np.sin(row) * a for row in b]))
    mixed = {1: b, "a": a}
    got = wg.vmap(lambda d: d[1] * d["a"], in_axes=({1: 0, "a": None},))(mixed)
    assert_close(got, b * a)
    out = wg.vmap(lambda x: collections.OrderedDict([("z", x), ("y", 2 * x)]),
                  out_axes=collections.OrderedDict([("z", 0), ("y", 1)]))(b)
    assert out["z"].shape == (3, 2) and out["y"].shape == (2, 3)
    assert_close(out["y"], 2 * b.T)
