"""The worked examples of the seed documents, against their closed forms."""
import math

import numpy as np
import pytest

import wengert as wg
import wengert.math as wm
from fd import fd_gradient, assert_close

rng = np.random.default_rng(4)


# ---- seed 000: f(x1, x2) = x1*x2 + sin(x1) at (2, 3), both modes ------------------------
def f000(x1, x2):
    return x1 * x2 + wm.sin(x1)


def test_seed_000_forward_mode():
    value, d1 = wg.jvp(f000, (2.0, 3.0), (1.0, 0.0))       # seeds ẇ1 = 1, ẇ2 = 0
    _, d2 = wg.jvp(f000, (2.0, 3.0), (0.0, 1.0))
    assert value == 6.0 + math.sin(2.0)
    assert d1 == 3.0 + math.cos(2.0)                          # x2 + cos x1
    assert d2 == 2.0                                          # x1


def test_seed_000_reverse_mode():
    value, (d1, d2) = wg.value_and_grad(f000, argnums=(0, 1))(2.0, 3.0)
    assert value == 6.0 + math.sin(2.0)
    assert d1 == 3.0 + math.cos(2.0) and d2 == 2.0
    out, back = wg.vjp(f000, 2.0, 3.0)
    assert back(1.0) == (3.0 + math.cos(2.0), 2.0)


# ---- seed 004: Zygote's examples -----------------------------------------------------------
def test_seed_004_polynomial():
    df = wg.grad(lambda x: 3 * x ** 2 + 2 * x + 1)
    for x in rng.uniform(-5, 5, 10):
        assert df(x) == pytest.approx(6 * x + 2, rel=1e-14)


def test_seed_004_sin_of_square():
    df = wg.grad(lambda x: wm.sin(x ** 2))
    for x in rng.uniform(-3, 3, 10):
        assert df(x) == pytest.approx(2 * x * math.cos(x ** 2), rel=1e-13)


def test_seed_004_pullback_composes():
    y, back = wg.vjp(lambda x: wm.sin(x ** 2), 1.5)
    assert y == math.sin(2.25)
    assert back(2.0) == (pytest.approx(2.0 * 2 * 1.5 * math.cos(2.25), rel=1e-14),)


# ---- seed 002, Example 2: Powell's function --------------------------------------------------
def powell(x):
    x1, x2, x3, x4 = x
    return (x1 + 10 * x2) ** 2 + 5 * (x3 - x4) ** 2 + (x2 - 2 * x3) ** 4 + 10 * (x1 - x4) ** 4


def powell_grad(x):
    x1, x2, x3, x4 = x
    a, b, c, d = x1 + 10 * x2, x3 - x4, x2 - 2 * x3, x1 - x4
    return [2 * a + 40 * d ** 3,
            20 * a + 4 * c ** 3,
            10 * b - 8 * c ** 3,
            -10 * b - 40 * d ** 3]


def powell_hessian(x):
    x1, x2, x3, x4 = x
    c, d = x2 - 2 * x3, x1 - x4
    C, D = 12 * c ** 2, 120 * d ** 2
    return [[2 + D, 20, 0, -D],
            [20, 200 + C, -2 * C, 0],
            [0, -2 * C, 10 + 4 * C, -10],
            [-D, 0, -10, 10 + D]]


@pytest.mark.parametrize("seed", range(5))
def test_powell_gradient_hessian_hvp(seed):
    x = tuple(np.random.default_rng(seed).uniform(-2, 2, 4))
    assert_close(wg.grad(powell)(x), powell_grad(x), rtol=1e-13, atol=1e-12)
    assert_close(wg.jacfwd(powell)(x), powell_grad(x), rtol=1e-13, atol=1e-12)
    H = np.array(powell_hessian(x))
    assert_close(wg.hessian(powell)(x), H, rtol=1e-13, atol=1e-11)
    assert_close(wg.jacrev(wg.grad(powell))(x), H, rtol=1e-13, atol=1e-11)
    p = tuple(np.random.default_rng(seed + 100).uniform(-1, 1, 4))
    assert_close(wg.hvp(powell)(x, p), H @ np.array(p), rtol=1e-12, atol=1e-11)
    # and the closed forms themselves against finite differences
    assert_close(fd_gradient(lambda *a: powell(a), x), powell_grad(x), rtol=1e-6, atol=1e-5)


def test_powell_f_g_and_php_as_adds_computes_them():
    """g := dfd(f, x); php := p*dfuv(g, x, p) — the quantities of Example 2."""
    x = (3.0, -1.0, 0.0, 1.0)
    p = (0.5, -0.25, 1.0, 2.0)
    php = np.dot(p, wg.hvp(powell)(x, p))
    H = np.array(powell_hessian(x))
    assert php == pytest.approx(np.array(p) @ H @ np.array(p), rel=1e-14)
