"""The examples run and do what they say."""
import importlib.util
import os

import pytest

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "examples")


def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(EXAMPLES, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_digits_cnn_reaches_97_percent(capsys):
    pytest.importorskip("sklearn")
    acc = load("digits_cnn").main()
    assert acc >= 0.97
    out = capsys.readouterr().out
    assert "epoch 25/25" in out and "test accuracy" in out


def test_stax_digits_trains_to_97_percent(capsys):
    pytest.importorskip("sklearn")
    example = load("stax_digits")
    acc = example.main()
    assert acc >= 0.97, acc
    out = capsys.readouterr().out
    assert "Epoch 12 in" in out and "Test set accuracy" in out
    # the gradient the training stood on, against central differences: a few entries of
    # each layer's weights, on a batch, at initial weights with biases well away from 0
    # (the initial conv bias, about 1e-6, is the pre-activation of every blank patch, so a
    # difference of 1e-6 would step across ReLU's kink)
    import numpy as np
    import wengert as wg
    from wengert.tree import flatten, unflatten
    images, labels = example.digits()[:2]
    batch = (images[:32], labels[:32])
    _, params = example.init_random_params(wg.random.PRNGKey(1), (-1, 8, 8, 1))
    leaves, tree = flatten(params)
    rng = np.random.default_rng(0)
    leaves = [rng.normal(scale=0.1, size=v.shape) if k % 2 else v for k, v in enumerate(leaves)]
    params = unflatten(tree, leaves)
    grads = flatten(wg.grad(example.loss)(params, batch))[0]
    eps = 1e-6
    for k, leaf in enumerate(leaves):
        for _ in range(3):
            i = tuple(int(rng.integers(n)) for n in leaf.shape)
            moved = []
            for sign in (1, -1):
                bumped = [v.copy() for v in leaves]
                bumped[k][i] += sign * eps
                moved.append(example.loss(unflatten(tree, bumped), batch))
            fd = (moved[0] - moved[1]) / (2 * eps)
            assert abs(grads[k][i] - fd) < 1e-7 + 1e-6 * abs(fd), (k, i, grads[k][i], fd)


def test_impedance_fit_recovers_the_circuit(capsys):
    example = load("impedance_fit")
    fitted = example.main()
    for name, true in example.TRUE.items():
        assert abs(fitted[name] / true - 1) < 0.02, (name, fitted[name], true)
    assert "Newton steps" in capsys.readouterr().out
    # the derivatives the fit stood on: through the complex model, against differences
    import numpy as np
    import wengert as wg
    measured, theta = example.measure(), np.log([10.0, 70.0, 3e-5])
    args = (example.OMEGA, measured)
    eps, eye = 1e-6, np.eye(3)
    fd_grad = [(example.loss(theta + eps * e, *args) - example.loss(theta - eps * e, *args))
               / (2 * eps) for e in eye]
    grad = wg.grad(example.loss)
    fd_hess = [(grad(theta + eps * e, *args) - grad(theta - eps * e, *args)) / (2 * eps)
               for e in eye]
    np.testing.assert_allclose(grad(theta, *args), fd_grad, rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(wg.hessian(example.loss)(theta, *args), fd_hess, rtol=1e-5,
                               atol=1e-9)


def test_per_example_gradients_find_the_flipped_labels(capsys):
    example = load("per_example_gradients")
    accuracy, found = example.main()
    assert accuracy > 0.9 and found >= 15, (accuracy, found)
    assert "largest gradient norms" in capsys.readouterr().out
    # the per-example gradients it stood on: each against central differences
    import numpy as np
    x, y, _ = example.make_data()
    rng = np.random.default_rng(1)
    params = (rng.normal(size=example.DIM), 0.3)
    gw, gb = example.per_example_grads(params, x[:5], y[:5])
    eps = 1e-6
    for k in range(5):
        for i in range(example.DIM):
            e = np.eye(example.DIM)[i] * eps
            fd = (example.loss((params[0] + e, 0.3), x[k], y[k])
                  - example.loss((params[0] - e, 0.3), x[k], y[k])) / (2 * eps)
            assert abs(gw[k, i] - fd) < 1e-7
        fd = (example.loss((params[0], 0.3 + eps), x[k], y[k])
              - example.loss((params[0], 0.3 - eps), x[k], y[k])) / (2 * eps)
        assert abs(gb[k] - fd) < 1e-7


def test_lotka_volterra_fit_recovers_the_rates(capsys):
    pytest.importorskip("scipy")
    example = load("lotka_volterra_fit")
    fitted = example.main()
    for name, true in example.TRUE.items():
        assert abs(fitted[name] / true - 1) < 0.05, (name, fitted[name], true)
    out = capsys.readouterr().out
    assert "iteration  1:" in out and "BFGS iterations" in out and "(true 1.0000" in out
    # the adjoint gradient the fit stood on, against central differences, at the first
    # guess and at the truth (the solver's tolerance, 1e-8, bounds both)
    import numpy as np
    import wengert as wg
    observed, eps, eye = example.observe(), 1e-5, np.eye(4)
    for theta in (np.log([1.5, 0.15, 1.0, 0.05]), np.log(list(example.TRUE.values()))):
        fd = [(example.loss(theta + eps * e, observed) - example.loss(theta - eps * e, observed))
              / (2 * eps) for e in eye]
        np.testing.assert_allclose(wg.grad(example.loss)(theta, observed), fd, rtol=1e-5,
                                   atol=1e-7)


def test_tuned_penalties_beat_one_shared_penalty(capsys):
    pytest.importorskip("scipy")
    result = load("tune_penalties").main()
    assert result["tuned"] < 0.5 * result["shared"], result
    # the gradient through the fit that the tuning stood on, against central differences
    assert abs(result["implicit"] - result["differences"]) < 1e-6 * (1 + abs(result["implicit"]))
    out = capsys.readouterr().out
    assert "penalties tuned by gradient" in out and "step  60" in out


def test_heat_inverse_maps_the_conductivity(capsys):
    pytest.importorskip("scipy")
    from wengert.codegen import c
    try:
        c.compiler()
    except c.CompilerNotFound:
        pytest.skip("no C compiler: the example is about its C loops")
    example = load("heat_inverse")
    result = example.main()
    assert result["backend"] == "c" and result["agreement"] < 1e-10, result
    assert result["error"] < 0.03 and result["first_guess_error"] > 0.25, result
    out = capsys.readouterr().out
    assert "backend='python'" in out and "eager value_and_grad" in out
    assert "alpha = 1.0: " in out and "relative error of k" in out
    # the gradient the fit stood on, at a rough field away from the first guess (where k
    # = 1 makes every face's mean the same): the C loops against the NumPy code, and
    # against central differences along a random direction
    import numpy as np
    import wengert as wg
    u0, observed = example.experiments(seed=1)
    rng = np.random.default_rng(2)
    log_k = 0.3 * rng.normal(size=(example.N, example.N))
    args = (log_k, u0, observed, 0.1)
    value, grad = wg.compile(wg.value_and_grad(example.loss), *args, backend="c")(*args)
    want = wg.compile(wg.value_and_grad(example.loss), *args, backend="python")(*args)
    assert example.disagreement((value, grad), want) < 1e-10
    direction, eps = rng.normal(size=log_k.shape), 1e-6
    moved = [example.loss(log_k + s * eps * direction, *args[1:]) for s in (1, -1)]
    fd = (moved[0] - moved[1]) / (2 * eps)
    assert abs(np.sum(grad * direction) - fd) < 1e-6 * abs(fd), (np.sum(grad * direction), fd)


def test_heat_inverse_runs_the_numpy_code_without_a_compiler(monkeypatch, capsys):
    pytest.importorskip("scipy")
    import numpy as np
    import wengert as wg
    from wengert.codegen import c

    def missing(*args, **kwargs):
        raise c.CompilerNotFound("backend='c' needs a C compiler, and none was found")
    # (library too: it compiles a source once per process, and main may have compiled it)
    monkeypatch.setattr(c, "compiler", missing)
    monkeypatch.setattr(c, "library", missing)
    example = load("heat_inverse")
    u0, observed = example.experiments()
    args = (np.zeros((example.N, example.N)), u0, observed, 1.0)
    gradient, backend, _ = example.compiled_gradient(*args)
    assert backend == "python" and "no C compiler found" in capsys.readouterr().out
    assert example.disagreement(gradient(*args), wg.value_and_grad(example.loss)(*args)) < 1e-10
