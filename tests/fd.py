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


def check_grads(f, *args, order=2, eps=1e-6, rtol=1e-5, atol=1e-6, seed=0):
    """Check f's derivatives at args (float arrays) against central differences.

    First order: the JVP along a random direction v against (f(x+εv) - f(x-εv))/2ε, and
    the VJP by the dot-product test <ct, J v> = <Jᵀct, v>.  Second order: the same two
    checks applied to the map x -> Jᵀct (forward over reverse, and reverse over reverse).
    """
    import wengert as wg
    from wengert.tree import flatten

    rng = np.random.default_rng(seed)
    args = tuple(np.asarray(a, dtype=float) for a in args)
    vs = tuple(rng.normal(size=np.shape(a)) for a in args)

    def flat(tree):
        leaves, _ = flatten(tree)
        return np.concatenate([np.ravel(np.asarray(x, dtype=float)) for x in leaves])

    plus = flat(f(*[a + eps * v for a, v in zip(args, vs)]))
    minus = flat(f(*[a - eps * v for a, v in zip(args, vs)]))
    fd = (plus - minus) / (2 * eps)
    out, t = wg.jvp(f, args, vs)
    assert_close(flat(t), fd, rtol=rtol, atol=atol)
    out, back = wg.vjp(f, *args)
    out_leaves, out_tree = flatten(out)
    cts = [rng.normal(size=np.shape(o)) for o in out_leaves]
    from wengert.tree import unflatten
    ct = unflatten(out_tree, cts)
    grads = back(ct)
    lhs = sum(np.sum(np.asarray(g) * v) for g, v in zip(grads, vs))
    rhs = np.sum(flat(ct) * flat(t))
    assert_close(lhs, rhs, rtol=1e-9, atol=1e-9)
    if order >= 2:
        pull = lambda *a: wg.vjp(f, *a)[1](ct)
        check_grads(pull, *args, order=1, eps=eps, rtol=rtol * 10, atol=atol * 10,
                    seed=seed + 1)
