"""A small convolutional network trained with wengert.grad on scikit-learn's 8x8 digits.

    python -m pip install -e '.[examples]'
    python examples/digits_cnn.py

conv 3x3 (16 channels, padding 1) -> ReLU -> 2x2 max-pool -> dense 256 -> 10, softmax
cross-entropy, Adam.  The whole gradient is wg.grad of an ordinary NumPy-style loss.
"""
import sys
import time

import numpy

import wengert as wg
import wengert.nn as nn
import wengert.numpy as np


def load_digits():
    try:
        from sklearn.datasets import load_digits as sk_load
    except ImportError:
        sys.exit("this example needs scikit-learn: python -m pip install -e '.[examples]'")
    data = sk_load()
    x = (data.images / 16.0).astype(numpy.float64)[:, None, :, :]      # (n, 1, 8, 8)
    return x, data.target


def init(rng):
    return {
        "conv_w": rng.normal(scale=(2 / 9) ** 0.5, size=(16, 1, 3, 3)),
        "conv_b": numpy.zeros(16),
        "dense_w": rng.normal(scale=(1 / 256) ** 0.5, size=(256, 10)),
        "dense_b": numpy.zeros(10),
    }


def logits(params, x):
    h = nn.relu(nn.conv2d(x, params["conv_w"], params["conv_b"], padding=1))   # (n,16,8,8)
    h = nn.max_pool2d(h, 2)                                                    # (n,16,4,4)
    return np.reshape(h, (h.shape[0], -1)) @ params["dense_w"] + params["dense_b"]


def loss(params, x, y):
    return nn.cross_entropy(logits(params, x), y)


def accuracy(params, x, y):
    return float((numpy.argmax(logits(params, x), axis=1) == y).mean())


def progress(epoch, epochs, value, width=30):
    done = int(width * epoch / epochs)
    sys.stdout.write(f"\rtraining [{'#' * done}{'.' * (width - done)}] epoch {epoch:2d}/"
                     f"{epochs}  loss {value:.4f}")
    sys.stdout.flush()


def main(epochs=25, batch=64, lr=3e-3, seed=0):
    x, y = load_digits()
    rng = numpy.random.default_rng(seed)
    order = rng.permutation(len(y))
    split = int(0.8 * len(y))
    train, test = order[:split], order[split:]
    params = init(rng)
    m = {k: numpy.zeros_like(v) for k, v in params.items()}
    v = {k: numpy.zeros_like(v) for k, v in params.items()}
    value_and_grad = wg.value_and_grad(loss)
    start, step = time.perf_counter(), 0
    for epoch in range(1, epochs + 1):
        rng.shuffle(train)
        for i in range(0, len(train), batch):
            idx = train[i:i + batch]
            value, grads = value_and_grad(params, x[idx], y[idx])
            step += 1
            for k in params:                      # Adam
                m[k] = 0.9 * m[k] + 0.1 * grads[k]
                v[k] = 0.999 * v[k] + 0.001 * grads[k] ** 2
                mhat, vhat = m[k] / (1 - 0.9 ** step), v[k] / (1 - 0.999 ** step)
                params[k] = params[k] - lr * mhat / (numpy.sqrt(vhat) + 1e-8)
        progress(epoch, epochs, value)
    print()
    acc = accuracy(params, x[test], y[test])
    print(f"test accuracy {acc:.4f} on {len(test)} digits after {epochs} epochs "
          f"({time.perf_counter() - start:.1f} s)")
    return acc


if __name__ == "__main__":
    main()
