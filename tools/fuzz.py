"""Differential testing of wengert on random array programs.

Each seed makes a random program of about 35 array operations (broadcasting arithmetic,
ufuncs, strided slices, transposes, reductions, pad, concatenate, matmul, einsum, gathers,
loops, ...) and checks that the transformations agree with each other and with
independent oracles:

* ``fd``:      eager ``wg.grad`` against central differences along random directions
               (smooth programs only: no abs, maximum, clip, where or max reductions);
* ``jvp``:     ``wg.jvp`` against ``wg.vjp`` by the dot-product test u.(J v) = (J^T u).v,
               and ``wg.jacfwd`` against ``wg.jacrev`` where the Jacobian is small;
* ``hess``:    ``wg.hessian`` symmetric and equal to ``wg.hvp``; on smooth programs
               ``wg.hvp`` against central differences of the gradient;
* ``vmap``:    ``wg.vmap(wg.grad(f))`` over a batch against a Python loop of ``wg.grad(f)``;
* ``compile``: ``wg.compile(f)`` and ``wg.compile(wg.grad(f))`` with the python, numpy and
               c back-ends against eager (the value bit for bit with python and numpy, as
               docs/compile.md promises; otherwise to rounding);
* ``jax``:     the same source run with ``jax.numpy`` (float64), values and gradients.

It lives in tools/ rather than benchmarks/ (it measures correctness, not time) and is
imported by tests/test_random_programs.py, which runs a few fixed seeds of it.

Usage::

    OPENBLAS_NUM_THREADS=1 python tools/fuzz.py LO HI [check ...]

runs seeds LO..HI-1 (all checks by default) and prints each failing seed's program and
message; ``python tools/fuzz.py reduce SEED CHECK`` prints a smaller program that still
fails the check, found by deleting lines one at a time.
"""
import collections
import random
import signal
import sys
import time
import traceback

import numpy as np

import wengert as wg
import wengert.nn as wnn
import wengert.numpy as wnp

CHECKS = ("fd", "jvp", "hess", "vmap", "compile", "jax")
#: Operations whose derivative has a kink or a jump somewhere: left out of smooth programs.
KINKED = ("abs", "maximum", "minimum", "sign", "clip", "where", "max", "min")


class Mismatch(AssertionError):
    """A check found two results that should agree and do not."""


class Program:
    """A random program: its lines (``name = expression``), its outputs, the argument
    shapes, and whether it is smooth (no kinks, so finite differences apply)."""

    def __init__(self, lines, outs, dims, smooth):
        self.lines, self.outs, self.dims, self.smooth = lines, outs, dims, smooth

    def source(self):
        """Python source defining ``vec`` (the tuple of outputs) and ``f`` (a scalar)."""
        body = "\n".join(f"    {line}" for line in self.lines) or "    pass"
        terms = " + ".join(f"wnp.sum(wnp.sin(o[{k}]))" for k in range(len(self.outs)))
        return (f"def vec(x, y, z, i, labels):\n{body}\n    return ({', '.join(self.outs)},)\n"
                f"def f(x, y, z, i, labels):\n    o = vec(x, y, z, i, labels)\n"
                f"    return {terms}\n")

    def functions(self, namespace):
        """(vec, f) of the source run with the given names (wengert's or JAX's)."""
        ns = dict(namespace)
        exec(self.source(), ns)
        return ns["vec"], ns["f"]

    def args(self, seed):
        """Random arguments: x (m, n), y (n,), z (p, m, n), an int i and int labels."""
        m, n, p = self.dims
        r = np.random.default_rng(seed)
        return (r.normal(size=(m, n)), r.normal(size=n), r.normal(size=(p, m, n)),
                np.int64(r.integers(0, 1000)), r.integers(0, 1000, size=m))


def generate(seed, small=False):
    """The random `Program` of a seed; ``small`` keeps every array small (for the tests)."""
    rng = random.Random(seed)
    smooth = rng.random() < 0.5
    big = rng.random() < 0.2 and not small     # (drawn either way: same programs)
    m = rng.randint(2, 40 if big else 6)
    n = rng.randint(2, 300 if big else 7)
    p = rng.randint(2, 4)
    vals = {"x": (m, n), "y": (n,), "z": (p, m, n)}
    lines = []

    def new(expr, shape):
        name = f"v{len(lines) + 1}"
        lines.append(f"{name} = {expr}")
        vals[name] = tuple(shape)

    def pick(ranks=None):
        c = [v for v, s in vals.items() if ranks is None or len(s) in ranks]
        return rng.choice(c) if c else None

    ops = ["bin", "bin", "un", "un", "slice", "T", "red", "pad", "cat", "mm", "gather",
           "flip", "where", "reshape", "swap", "stack", "roll", "tile", "repeat", "clip",
           "var", "lse", "softmax", "take_along", "idx_cols", "ein", "split", "setat",
           "dyn", "ce", "outer", "mv", "expand", "sq", "fori", "scan", "gloop", "while",
           "cumsum", "bcast"]
    unary = ["wnp.sin({})", "wnp.tanh({})", "wnp.exp(-{}**2)", "wnp.sqrt(1 + {}**2)",
             "{} ** 3", "wnp.log1p({}**2)", "wnp.cos({})", "wnp.arctan({})", "-{}",
             "wnp.square({})", "wnp.exp(wnp.sin({}))", "wnp.sinh({}) * 0.5",
             "1.0 / (1.0 + {}**2)"]
    if not smooth:
        unary += ["wnp.abs({})", "wnp.maximum({}, 0.1)", "wnp.sign({}) * {}",
                  "wnp.minimum({}, -0.2)"]
    for _ in range(rng.randint(2, 10)):
        op = rng.choice(ops)
        a = pick()
        s = vals[a]
        nd = len(s)
        if op == "bin":
            c = [v for v, t in vals.items() if t == s or t == s[-1:] or t == () or
                 (len(t) == nd and all(u in (1, w) for u, w in zip(t, s)))]
            b = rng.choice(c)
            o = rng.choice(["+", "-", "*", "/"])
            if o == "/":
                new(f"{a} / (1.5 + {'wnp.square' if smooth else 'wnp.abs'}({b}))", s)
            else:
                new(f"{a} {o} {b}", s)
        elif op == "un":
            new(rng.choice(unary).replace("{}", a), s)
        elif op == "slice" and nd:
            ax = rng.randrange(nd)
            d = s[ax]
            start = rng.randint(0, d - 1)
            step = rng.choice([1, 1, 2, 3, -1, -2])
            if step < 0:
                idx, ln = f"::{step}", len(range(d)[::step])
            else:
                stop = rng.randint(start + 1, d)
                idx, ln = f"{start}:{stop}:{step}", len(range(start, stop, step))
            sl = [":"] * nd
            sl[ax] = idx
            sh = list(s)
            sh[ax] = ln
            new(f"{a}[{', '.join(sl)}]", sh)
        elif op == "T" and nd >= 2:
            perm = list(range(nd))
            rng.shuffle(perm)
            new(f"wnp.transpose({a}, {tuple(perm)})", [s[i] for i in perm])
        elif op == "swap" and nd >= 2:
            new(f"wnp.swapaxes({a}, 0, -1)", (s[-1],) + s[1:-1] + (s[0],))
        elif op == "red" and nd:
            r = rng.choice(["sum", "mean", "prod", "sum", "sum"] +
                           ([] if smooth else ["max", "min"]))
            if nd >= 2 and rng.random() < 0.8:
                axes = sorted(rng.sample(range(nd), rng.randint(1, nd - 1)))
                kd = rng.random() < 0.3
                sh = ([1 if i in axes else d for i, d in enumerate(s)] if kd else
                      [d for i, d in enumerate(s) if i not in axes])
                new(f"wnp.{r}({a}, axis={tuple(axes)}, keepdims={kd})", sh)
            elif r != "prod" or np.prod(s) <= 12:
                new(f"wnp.{r}({a})", ())
        elif op == "pad" and nd:
            pp = tuple((rng.randint(0, 2), rng.randint(0, 2)) for _ in s)
            new(f"wnp.pad({a}, {pp})", [d + lo + hi for d, (lo, hi) in zip(s, pp)])
        elif op == "cat" and nd:
            ax = rng.randrange(nd)
            b = rng.choice([v for v, t in vals.items() if len(t) == nd and
                            all(t[i] == s[i] for i in range(nd) if i != ax)])
            sh = list(s)
            sh[ax] += vals[b][ax]
            new(f"wnp.concatenate([{a}, {b}], axis={ax})", sh)
        elif op == "stack" and nd:
            b = rng.choice([v for v, t in vals.items() if t == s])
            new(f"wnp.stack([{a}, {b}], axis=-1)", s + (2,))
        elif op == "mm" and nd == 2:
            c = [v for v, t in vals.items() if len(t) in (1, 2) and t[0] == s[1]]
            if c:
                b = rng.choice(c)
                new(f"{a} @ {b}", (s[0],) + vals[b][1:])
        elif op == "mv" and nd == 1:
            c = [v for v, t in vals.items() if len(t) == 2 and t[0] == s[0]]
            if c:
                b = rng.choice(c)
                new(f"{a} @ {b}", vals[b][1:])
        elif op == "outer" and nd == 1:
            b = pick((1,))
            new(f"wnp.outer({a}, {b})", (s[0], vals[b][0]))
        elif op == "ein" and nd == 2:
            b = rng.choice([v for v, t in vals.items() if len(t) == 2 and t[1] == s[1]])
            new(f"wnp.einsum('ij,kj->ik', {a}, {b})", (s[0], vals[b][0]))
        elif op == "gather" and nd:
            idx = [rng.randint(-s[0], s[0] - 1) for _ in range(rng.randint(1, 8))]
            new(f"{a}[np.array({idx})]", (len(idx),) + s[1:])
        elif op == "idx_cols" and nd == 2:
            idx = [rng.randint(0, s[1] - 1) for _ in range(rng.randint(1, 6))]
            new(f"{a}[:, np.array({idx})]", (s[0], len(idx)))
        elif op == "dyn" and nd:
            new(f"{a}[i % {s[0]}]", s[1:])
        elif op == "take_along" and nd == 2:
            perm = [rng.randrange(s[1]) for _ in range(s[1])]
            new(f"wnp.take_along_axis({a}, np.array([{perm}] * {s[0]}), axis=1)", s)
        elif op == "flip" and nd:
            new(f"wnp.flip({a}, axis={rng.randrange(nd)})", s)
        elif op == "where" and nd and not smooth:
            b = rng.choice([v for v, t in vals.items() if t == s])
            new(f"wnp.where({a} > {b}, {a} * 2.0, {b} - 1.0)", s)
        elif op == "reshape" and nd >= 2:
            new(f"wnp.reshape({a}, (-1,))", (int(np.prod(s)),))
        elif op == "expand" and nd <= 2:
            new(f"wnp.expand_dims({a}, 0)", (1,) + s)
        elif op == "sq" and nd and 1 in s:
            new(f"wnp.squeeze({a})", [d for d in s if d != 1])
        elif op == "roll" and nd:
            new(f"wnp.roll({a}, {rng.randint(-3, 3)}, axis=0)", s)
        elif op == "tile" and nd == 1 and s[0] < 50:
            new(f"wnp.tile({a}, 2)", (2 * s[0],))
        elif op == "repeat" and nd == 1 and s[0] < 50:
            new(f"wnp.repeat({a}, 2)", (2 * s[0],))
        elif op == "clip" and nd and not smooth:
            new(f"wnp.clip({a}, -0.5, 0.7)", s)
        elif op == "var" and nd == 2:
            new(f"wnp.{rng.choice(['var', 'std'])}({a}, axis=1)", (s[0],))
        elif op == "lse" and nd == 2:
            new(f"wnp.log(wnp.sum(wnp.exp({a} - 1.0), axis=1)) + 1.0", (s[0],))
        elif op == "softmax" and nd == 2:
            new(f"wnn.{rng.choice(['softmax', 'log_softmax'])}({a}, axis=-1)", s)
        elif op == "ce" and nd == 2 and s[0] == m:
            new(f"wnn.cross_entropy({a}, labels % {s[1]})", ())
        elif op == "split" and nd and s[0] % 2 == 0:
            new(f"wnp.split({a}, 2)[1]", (s[0] // 2,) + s[1:])
        elif op == "fori" and nd:
            k = rng.randint(0, 4)
            new(f"wg.fori_loop(0, {k}, lambda j, c: 0.9 * c + wnp.sin(c) * 0.1, {a})", s)
        elif op == "scan" and nd:
            new(f"wg.scan(lambda c, r: (c * 0.9 + r, wnp.tanh(c * r)), {a}[0] * 0.0, {a}, "
                f"reverse={rng.random() < 0.3})[1]", s)
        elif op == "gloop" and nd:
            new(f"wg.fori_loop(0, {s[0]}, lambda j, c: c * 0.9 + "
                f"wnp.sin(wnp.take({a}, j, axis=0)), "
                f"{a}[0] * 0.0)", s[1:])
        elif op == "while" and nd:
            new(f"wg.lax.while_loop(lambda c: c[1] < 3, lambda c: (c[0] * 0.8 + 0.1, "
                f"c[1] + 1), ({a}, 0))[0]", s)
        elif op == "setat" and nd == 1 and s[0] > 1:
            i = rng.randint(0, s[0] - 1)
            new(f"wnp.at({a})[{i}].add(2.0 * {a}[{(i + 1) % s[0]}])", s)
        elif op == "cumsum" and nd:
            new(f"wnp.cumsum({a}, axis={rng.randrange(nd)})", s)
        elif op == "bcast" and nd == 1:
            b = pick((1,))
            new(f"{a}[:, None] * {b}[None, :]", (s[0], vals[b][0]))
    names = [ln.split(" = ")[0] for ln in lines]
    outs = names[-3:] or ["x"]
    return Program(lines, outs, (m, n, p), smooth)


# ---- comparisons --------------------------------------------------------------------------

def leaves(tree):
    """The arrays of a pytree, flattened, as float64 NumPy arrays."""
    from wengert.tree import flatten
    return [np.asarray(v, dtype=float) for v in flatten(tree)[0]]


def close(got, want, rtol, what, atol=0.0):
    """Raise `Mismatch` unless the pytrees agree within rtol of the largest |want| entry."""
    g, w = leaves(got), leaves(want)
    if len(g) != len(w):
        raise Mismatch(f"{what}: {len(g)} leaves against {len(w)}")
    for k, (a, b) in enumerate(zip(g, w)):
        if a.shape != b.shape:
            raise Mismatch(f"{what}: leaf {k} shape {a.shape} against {b.shape}")
        scale = max(np.max(np.abs(b), initial=0.0), 1e-300)
        if not np.allclose(a, b, rtol=rtol, atol=atol + rtol * scale, equal_nan=True):
            err = np.max(np.abs(a - b))
            raise Mismatch(f"{what}: leaf {k} differs by {err:.3g} (scale {scale:.3g})")


def identical(got, want, what):
    """Raise `Mismatch` unless the pytrees are equal bit for bit (nans equal)."""
    for k, (a, b) in enumerate(zip(leaves(got), leaves(want))):
        if a.shape != b.shape or not np.array_equal(a, b, equal_nan=True):
            raise Mismatch(f"{what}: leaf {k} not bit for bit "
                           f"(max diff {np.max(np.abs(a - b), initial=0.0):.3g})")


def dot(a, b):
    """The sum of the products of two pytrees' entries."""
    return sum(float(np.sum(u * v)) for u, v in zip(leaves(a), leaves(b)))


def size(tree):
    return sum(v.size for v in leaves(tree))


def finite(tree):
    return all(np.all(np.isfinite(v)) for v in leaves(tree))


# ---- the checks ---------------------------------------------------------------------------

def check_fd(prog, f, args, rng):
    """Eager grad against central differences along two random directions."""
    if not prog.smooth:
        return "skip"
    x = args[:3]
    rest = args[3:]
    g = wg.grad(f, argnums=(0, 1, 2))(*args)
    for _ in range(2):
        v = [rng.normal(size=np.shape(a)) for a in x]
        want = [dot(g, v)]
        for h in (1e-4, 1e-5):
            up = f(*[a + h * d for a, d in zip(x, v)], *rest)
            dn = f(*[a - h * d for a, d in zip(x, v)], *rest)
            want.append((float(up) - float(dn)) / (2 * h))
        # Two step sizes must agree with each other before they judge the gradient: where
        # they do not, the function is too curved (or too large) here for differences.
        scale = sum(np.sum(np.abs(a) * np.abs(d)) for a, d in zip(leaves(g), v)) + 1e-8
        if abs(want[1] - want[2]) > 1e-6 * scale or not np.isfinite(want[0]):
            continue
        if abs(want[0] - want[2]) > 1e-5 * scale:
            raise Mismatch(f"fd: grad.v = {want[0]!r}, differences {want[2]!r} "
                           f"(scale {scale:.3g})")
    return "ok"


def check_jvp(prog, vec, args, rng):
    """u.(J v) = (J^T u).v with wg.jvp and wg.vjp; jacfwd = jacrev where small."""
    x, rest = args[:3], args[3:]
    g = lambda x, y, z: vec(x, y, z, *rest)
    v = tuple(rng.normal(size=np.shape(a)) for a in x)
    out, t = wg.jvp(g, x, v)
    close(out, vec(*args), 1e-12, "jvp primal vs eager")
    out2, back = wg.vjp(g, *x)
    u = tuple(rng.normal(size=np.shape(o)) for o in out2)
    ct = back(u)
    lhs, rhs = dot(u, t), dot(ct, v)
    scale = (np.sqrt(dot(u, u) * dot(t, t)) + np.sqrt(dot(ct, ct) * dot(v, v)) + 1e-300)
    if abs(lhs - rhs) > 1e-9 * scale:
        raise Mismatch(f"jvp: u.(Jv) = {lhs!r}, (J^T u).v = {rhs!r}")
    if size(out) * size(x) <= 20000:
        close(wg.jacfwd(g, argnums=(0, 1, 2))(*x), wg.jacrev(g, argnums=(0, 1, 2))(*x),
              1e-9, "jacfwd vs jacrev")
    return "ok"


def check_hess(prog, f, args, rng):
    """Hessian in x: symmetric, H v = hvp; on smooth programs hvp against differences."""
    x, rest = args[0], args[1:]
    fx = lambda x: f(x, *rest)
    v = rng.normal(size=x.shape)
    hv = wg.hvp(fx)(x, v)
    if x.size <= 64:
        h = np.asarray(wg.hessian(fx)(x), dtype=float).reshape(x.size, x.size)
        close(h, h.T, 1e-9, "hessian symmetric")
        close(hv, (h @ v.ravel()).reshape(x.shape), 1e-9, "hvp vs hessian @ v")
    if prog.smooth:
        gx = wg.grad(fx)
        want = [(np.asarray(gx(x + e * v)) - np.asarray(gx(x - e * v))) / (2 * e)
                for e in (1e-4, 1e-5)]
        scale = np.max(np.abs(want[1]), initial=0.0) + 1e-8
        if np.max(np.abs(want[0] - want[1])) < 1e-6 * scale:
            close(hv, want[1], 1e-5, "hvp vs differences of grad", atol=1e-7)
    return "ok"


def check_vmap(prog, f, args, rng):
    """vmap(grad f) over a batch of some of x, y, z, i against a loop of grad f."""
    batch = 3
    mapped = [k for k in range(4) if rng.random() < 0.6] or [0]
    xs = list(args)
    for k in mapped:                # (i, the int that indexes `a[i % n]`, mapped too)
        xs[k] = (rng.integers(0, 1000, size=batch) if k == 3 else
                 rng.normal(size=(batch,) + np.shape(args[k])))
    axes = tuple(0 if k in mapped else None for k in range(len(args)))
    gf = wg.grad(f, argnums=(0, 1, 2))
    got = wg.vmap(gf, in_axes=axes)(*xs)
    for b in range(batch):
        one = [a[b] if k in mapped else a for k, a in enumerate(xs)]
        close([g[b] for g in got], gf(*one), 1e-10, f"vmap(grad) example {b}")
    return "ok"


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def check_compile(prog, f, args, rng, backends=("python", "numpy", "c"), limit=30):
    """compile(f) and compile(grad f) against eager, on each back-end.  The C compiler
    gets `limit` seconds (subprocess.run kills it when the alarm interrupts the wait)."""
    from wengert.codegen import cloops
    value = f(*args)
    gf = wg.grad(f, argnums=(0, 1, 2))
    grad = gf(*args)
    loop_elements = cloops.LOOP_ELEMENTS
    for backend in backends:
        for fun, want, name in ((f, value, "value"), (gf, grad, "grad")):
            if backend == "c":
                # Half the programs as fused loops whatever their size, half as the
                # back-end chooses (element by element below LOOP_ELEMENTS).
                cloops.LOOP_ELEMENTS = 0 if rng.random() < 0.5 else loop_elements
                old = signal.signal(signal.SIGALRM, _alarm)
                signal.alarm(limit)
            try:
                compiled = wg.compile(fun, *args, backend=backend)
                got = compiled(*args)
            except _Timeout:
                raise Mismatch(f"compile c {name}: more than {limit} s") from None
            except ValueError as e:
                if backend == "c" and ("element by element" in str(e) or
                                       "does not write" in str(e)):
                    continue       # (a clear refusal, documented)
                raise
            finally:
                if backend == "c":
                    signal.alarm(0)
                    signal.signal(signal.SIGALRM, old)
                    cloops.LOOP_ELEMENTS = loop_elements
            # Bit for bit where NumPy computes both.  Scalarised code (flavour "float", and
            # loops' bodies of small arrays in either flavour) calls math's functions,
            # whose tanh or sin can differ from NumPy's in the last bit, and sums in
            # order: within rounding of NumPy's.
            loops = any(w in prog.source() for w in ("scan(", "fori_loop(", "while_loop("))
            if compiled.entry.flavour == "numpy" and not loops and name == "value" and \
                    finite(want):
                identical(got, want, f"compile {backend} {name}")
            else:
                close(got, want, 1e-9, f"compile {backend} {name}", atol=1e-12)
    return "ok"


_JAX = None


def jax_namespace():
    """The names the programs use, bound to JAX's functions (float64)."""
    global _JAX
    if _JAX is None:
        import types
        import jax
        jax.config.update("jax_enable_x64", True)
        import jax.numpy as jnp

        def cross_entropy(a, labels):
            logp = jax.nn.log_softmax(a, axis=-1)
            return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1))
        def while_loop(cond, body, carry):
            # (JAX's lax.while_loop has no reverse mode; the programs' conditions read
            # only a Python int, so a Python loop is the same loop)
            while cond(carry):
                carry = body(carry)
            return carry
        lax = types.SimpleNamespace(while_loop=while_loop)
        wg_ = types.SimpleNamespace(fori_loop=jax.lax.fori_loop, scan=jax.lax.scan, lax=lax)
        nn = types.SimpleNamespace(softmax=jax.nn.softmax, log_softmax=jax.nn.log_softmax,
                                   cross_entropy=cross_entropy)
        numpy_ = types.SimpleNamespace(**{k: getattr(jnp, k) for k in dir(jnp)
                                          if not k.startswith("_")})
        numpy_.at = lambda x: jnp.asarray(x).at
        _JAX = jax, {"wnp": numpy_, "np": np, "wg": wg_, "wnn": nn}
    return _JAX


def check_jax(prog, f, args, rng):
    """Value and gradient against the same program run by JAX."""
    jax, ns = jax_namespace()
    _, jf = prog.functions(ns)
    value, grad = wg.value_and_grad(f, argnums=(0, 1, 2))(*args)
    jv, jg = jax.value_and_grad(jf, argnums=(0, 1, 2))(*args)
    close(value, jv, 1e-10, "value vs jax", atol=1e-12)
    close(grad, jg, 1e-9, "grad vs jax", atol=1e-12)
    return "ok"


def run(seed, checks=CHECKS, small=False, backends=("python", "numpy", "c")):
    """Run the checks on a seed's program: {check: "ok" | "skip" | "eager fails" |
    failure message}."""
    prog = generate(seed, small)
    vec, f = prog.functions({"wnp": wnp, "np": np, "wg": wg, "wnn": wnn})
    args = prog.args(seed)
    try:
        value = f(*args)
    except Exception as e:                          # (the generator's own mistake)
        return {"eager": f"eager fails: {type(e).__name__}: {e}"}
    if not np.isfinite(float(value)):
        return {"eager": "skip"}
    result = {}
    for name in checks:
        rng = np.random.default_rng([seed, CHECKS.index(name)])
        fun = vec if name == "jvp" else f
        try:
            if name == "compile":
                result[name] = check_compile(prog, fun, args, rng, backends)
            else:
                result[name] = globals()[f"check_{name}"](prog, fun, args, rng)
        except Mismatch as e:
            result[name] = str(e)
        except Exception as e:
            tb = traceback.format_exc().strip().splitlines()
            result[name] = f"{type(e).__name__}: {e} [{' | '.join(tb[-5:-1])[:600]}]"
    return result


def reduce(seed, check):
    """A smaller program failing `check` as the seed's does: lines deleted one at a time
    (and outputs trimmed) while the failure's kind stays the same."""
    prog = generate(seed)
    args = prog.args(seed)

    def fails(p):
        try:
            vec, f = p.functions({"wnp": wnp, "np": np, "wg": wg, "wnn": wnn})
            rng = np.random.default_rng([seed, CHECKS.index(check)])
            fun = vec if check == "jvp" else f
            globals()[f"check_{check}"](p, fun, args, rng)
        except Mismatch as e:
            return str(e).split(":")[0]
        except Exception as e:
            return type(e).__name__ if not isinstance(e, NameError) else None
        return None
    kind = fails(prog)
    assert kind, "the seed does not fail this check"
    for k in range(len(prog.outs)):
        trial = Program(prog.lines, prog.outs[:k] + prog.outs[k + 1:], prog.dims, prog.smooth)
        if trial.outs and fails(trial) == kind:
            prog = trial
    k = len(prog.lines) - 1
    while k >= 0:
        trial = Program(prog.lines[:k] + prog.lines[k + 1:], prog.outs, prog.dims,
                        prog.smooth)
        if prog.lines[k].split(" = ")[0] not in prog.outs and fails(trial) == kind:
            prog = trial
        k -= 1
    return prog, kind


def main(argv):
    if argv[0] == "reduce":
        prog, kind = reduce(int(argv[1]), argv[2])
        print(f"# {kind}; x, y, z shapes from dims {prog.dims}\n{prog.source()}")
        return
    lo, hi = int(argv[0]), int(argv[1])
    checks = tuple(argv[2:]) or CHECKS
    stats = collections.defaultdict(collections.Counter)
    start = time.time()
    for seed in range(lo, hi):
        result = run(seed, checks)
        for name, r in result.items():
            stats[name]["ok" if r == "ok" else "skip" if r == "skip" else "bad"] += 1
            if r not in ("ok", "skip"):
                print(f"=== seed {seed} {name}: {r}\n{generate(seed).source()}", flush=True)
        if seed % 20 == 0:
            print(f"at seed {seed}, {time.time() - start:.0f} s:",
                  {k: dict(v) for k, v in stats.items()}, flush=True)
    print(f"done {hi - lo} seeds in {time.time() - start:.0f} s:",
          {k: dict(v) for k, v in stats.items()}, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
