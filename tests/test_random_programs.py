"""Random array programs (tools/fuzz.py) on fixed seeds: every transformation agrees with
the others and with independent checks — eager grad with central differences, jvp with
vjp (u.(J v) = (J^T u).v) and jacfwd with jacrev, the Hessian symmetric and equal to hvp,
vmap(grad f) with a loop of grad f, wg.compile on the python, numpy and c back-ends with
eager, and JAX (where installed) with both value and gradient.  The programs are small
here so that the seeds run in seconds; `python tools/fuzz.py LO HI` runs many more, of
any size."""
import importlib.util
import os
import sys

import pytest

from test_loops import HAVE_CC

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "tools"))
import fuzz  # noqa: E402

HAVE_JAX = importlib.util.find_spec("jax") is not None

# (a C compile costs a few tenths of a second, JAX's first run of a program about one:
# every third seed runs the c back-end, every tenth JAX, and so do the seeds that found
# bugs)
FOUND = (44,)        # cloops: a broadcast scalar result read before its copy was written
SEEDS = sorted(set(range(40)) | set(FOUND))


@pytest.mark.parametrize("seed", SEEDS)
def test_transformations_agree_on_a_random_program(seed):
    c = HAVE_CC and (seed % 3 == 0 or seed in FOUND)
    backends = ("python", "numpy", "c") if c else ("python", "numpy")
    checks = [k for k in fuzz.CHECKS if k != "jax" or HAVE_JAX and seed % 10 == 0]
    result = fuzz.run(seed, checks, small=True, backends=backends)
    bad = {k: v for k, v in result.items() if v not in ("ok", "skip")}
    assert not bad, f"{bad}\n{fuzz.generate(seed, small=True).source()}"


def test_the_checks_catch_a_wrong_derivative():
    # sin's cotangent one percent off: central differences (and JAX) notice
    import types
    import numpy as np
    wg, wnp = fuzz.wg, fuzz.wnp

    @wg.custom_vjp
    def sin(x):
        return wnp.sin(x)
    sin.defvjp(lambda x: (wnp.sin(x), x), lambda x, g: (1.01 * g * wnp.cos(x),))
    wrong = types.SimpleNamespace(**{k: getattr(wnp, k) for k in dir(wnp)
                                     if not k.startswith("_")})
    wrong.sin = sin
    prog = fuzz.Program(["v1 = wnp.sin(x) * y"], ["v1"], (2, 3, 2), smooth=True)
    vec, f = prog.functions({"wnp": wrong, "np": np, "wg": wg, "wnn": fuzz.wnn})
    args = prog.args(0)
    rng = np.random.default_rng(0)
    with pytest.raises(fuzz.Mismatch, match="fd"):
        fuzz.check_fd(prog, f, args, rng)
    if HAVE_JAX:
        with pytest.raises(fuzz.Mismatch, match="grad vs jax"):
            fuzz.check_jax(prog, f, args, rng)
