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


def fd_jacobian(f, x, h):
    """d f / d x for an array x by central differences: one column (last axis) per element
    of x, f's shape before it."""
    x = np.asarray(x, dtype=float)
    cols = []
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = h
        e = e.reshape(x.shape)
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * h))
    return np.stack(cols, axis=-1)


def assert_close(a, b, rtol=1e-6, atol=None):
    """a equals b within rtol (relative) or atol (absolute, for entries near zero; by
    default the smaller of rtol and 1e-6, so that a tight rtol is a tight check)."""
    if atol is None:
        atol = min(rtol, 1e-6)
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


def check_complex_grads(f, *args, order=2, eps=1e-6, rtol=1e-5, atol=1e-6, seed=0):
    """`check_grads` for functions of complex (or complex and real) arrays, in the
    convention of JAX and autograd (docs/complex.md): the JVP along a random direction
    (complex for a complex argument) against central differences, and the VJP by the
    test Re <ct, J v> = Re <Jᵀct, v>, products without conjugates, for a random cotangent
    (complex for a complex output, real for a real one).  The gradients must have their
    arguments' dtypes.  Second order: the same for the map args -> Jᵀct."""
    import wengert as wg
    from wengert.tree import flatten, unflatten

    rng = np.random.default_rng(seed)

    def direction(a):
        d = rng.normal(size=np.shape(a))
        return d + 1j * rng.normal(size=np.shape(a)) if np.iscomplexobj(a) else d

    def flat(tree):
        leaves, _ = flatten(tree)
        return np.concatenate([np.ravel(np.asarray(x, dtype=complex)) for x in leaves])

    args = tuple(np.asarray(a) * 1.0 for a in args)        # (ints to floats)
    vs = tuple(direction(a) for a in args)
    plus = flat(f(*[a + eps * v for a, v in zip(args, vs)]))
    minus = flat(f(*[a - eps * v for a, v in zip(args, vs)]))
    out, t = wg.jvp(f, args, vs)
    np.testing.assert_allclose(flat(t), (plus - minus) / (2 * eps), rtol=rtol, atol=atol)
    out, back = wg.vjp(f, *args)
    out_leaves, out_tree = flatten(out)
    ct = unflatten(out_tree, [direction(o) for o in out_leaves])
    grads = back(ct)
    for g, a in zip(grads, args):
        assert np.result_type(g) == a.dtype, (np.result_type(g), a.dtype)
    lhs = sum(np.sum(np.asarray(g) * v) for g, v in zip(grads, vs)).real
    rhs = np.sum(flat(ct) * flat(t)).real
    np.testing.assert_allclose(lhs, rhs, rtol=1e-9, atol=1e-9)
    if order >= 2:
        pull = lambda *a: wg.vjp(f, *a)[1](ct)
        check_complex_grads(pull, *args, order=1, eps=eps, rtol=rtol * 10, atol=atol * 10,
                            seed=seed + 1)
