"""Central finite differences, the independent check of every derivative in the tests."""
import numpy as np


def fd_derivative(f, x, h=1e-6):
    """d f / d x at a float x, central difference (error O(h^2))."""
    return (f(x + h) - f(x - h)) / (2 * h)


def fd_gradient(f, xs, h=1e-6):
    """Gradient of f(*xs) (floats) by central differences, one entry per argument."""
    xs = [float(x) for x in xs]
    out = []
    for i in range(len(xs)):
        up, dn = list(xs), list(xs)
        up[i] += h
        dn[i] -= h
        out.append((f(*up) - f(*dn)) / (2 * h))
    return out


def assert_close(a, b, rtol=1e-6, atol=1e-6):
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float),
                               rtol=rtol, atol=atol)
