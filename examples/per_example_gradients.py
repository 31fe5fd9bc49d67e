"""Per-example gradients with wg.vmap: clipped training, and the examples that fit worst.

A logistic-regression classifier is trained on two Gaussian clouds in which 20 of the 400
labels were flipped on purpose.  Each step takes one gradient per example, in one batched
computation (``wg.vmap(wg.grad(loss))``), clips each to norm 1 and averages them: the
step of differentially private SGD (without its noise), which keeps any single example
from pulling the model far.  After training, the examples with the largest gradient norms
are the ones the model fits worst, and they turn out to be mostly the flipped labels.

    python examples/per_example_gradients.py
"""
import time

import numpy as np

import wengert as wg
import wengert.numpy as wnp

N, DIM, FLIPPED, CLIP, STEPS, RATE = 400, 10, 20, 1.0, 200, 0.5


def make_data(seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=N)
    centres = np.where(y[:, None] == 1, 0.8, -0.8)
    x = centres + rng.normal(size=(N, DIM))
    flipped = rng.choice(N, size=FLIPPED, replace=False)
    y[flipped] = 1 - y[flipped]
    return x, y.astype(float), set(flipped.tolist())


def loss(params, x, y):
    """Logistic loss of one example (x: (DIM,), y: 0 or 1)."""
    w, b = params
    margin = (2.0 * y - 1.0) * (x @ w + b)
    return wnp.logaddexp(0.0, -margin)


# one gradient per example: params shared (None), x and y mapped over their first axis
per_example_grads = wg.vmap(wg.grad(loss), in_axes=(None, 0, 0))


def norms(grads):
    gw, gb = grads
    return np.sqrt(np.sum(gw ** 2, axis=1) + gb ** 2)


def clipped_mean(grads):
    scale = np.minimum(1.0, CLIP / np.maximum(norms(grads), 1e-12))
    gw, gb = grads
    return (scale[:, None] * gw).mean(axis=0), (scale * gb).mean()


def main():
    x, y, flipped = make_data()
    params = (np.zeros(DIM), 0.0)

    # The mean of the per-example gradients is the gradient of the mean loss.
    mean_loss = lambda p: wnp.mean(wg.vmap(loss, in_axes=(None, 0, 0))(p, x, y))
    gw, gb = per_example_grads(params, x, y)
    full_w, full_b = wg.grad(mean_loss)(params)
    assert np.allclose(gw.mean(axis=0), full_w) and np.isclose(gb.mean(), full_b)

    # Clipping bounds what a flipped label can pull: the clean examples' loss falls while
    # the flipped ones' rises.
    per_example_loss = wg.vmap(loss, in_axes=(None, 0, 0))
    bad = np.isin(np.arange(N), list(flipped))
    start = time.perf_counter()
    for step in range(1, STEPS + 1):
        grads = per_example_grads(params, x, y)
        gw, gb = clipped_mean(grads)
        params = (params[0] - RATE * gw, params[1] - RATE * gb)
        if step % 50 == 0:
            losses = per_example_loss(params, x, y)
            clipped = np.mean(norms(grads) > CLIP)
            print(f"step {step:3d}  loss: clean labels {losses[~bad].mean():.3f}, flipped "
                  f"{losses[bad].mean():.3f}  clipped {100 * clipped:4.1f}% of the gradients")
    elapsed = time.perf_counter() - start

    w, b = params
    accuracy = np.mean(((x @ w + b) > 0) == (y == 1))
    worst = np.argsort(norms(per_example_grads(params, x, y)))[::-1][:FLIPPED]
    found = len(flipped & set(worst.tolist()))
    print(f"{STEPS} steps of {N} per-example gradients in {elapsed:.2f} s "
          f"({1e3 * elapsed / STEPS:.1f} ms a step)")
    print(f"training accuracy {100 * accuracy:.1f}% (of labels, {FLIPPED} of them flipped)")
    print(f"the {FLIPPED} largest gradient norms: {found} are flipped labels")
    return accuracy, found


if __name__ == "__main__":
    main()
