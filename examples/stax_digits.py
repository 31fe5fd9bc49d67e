"""JAX's stax and optimizers tutorial program, with its imports changed, on scikit-learn's
8x8 digits.

    python -m pip install -e '.[examples]'
    python examples/stax_digits.py

A small convolutional network, written with `stax` as JAX's examples/mnist_classifier.py
writes its network: conv 3x3 (16 channels, SAME) -> ReLU -> 2x2 max-pool -> dense 64 ->
ReLU -> dense 10 -> log-softmax, trained by `optimizers.adam` with a compiled update step,
``@jit def update(i, opt_state, batch)``.  The JAX program's lines are unchanged but for
the imports (the ones JAX's would have are in the comments).  It reaches about 98% on
the held-out digits in a few seconds.
"""
import itertools
import sys
import time

import numpy.random as npr

import wengert.numpy as jnp                                  # import jax.numpy as jnp
from wengert import jit, grad, random                        # from jax import jit, grad, random
from wengert.example_libraries import optimizers, stax       # from jax.example_libraries ...
from wengert.example_libraries.stax import (Conv, Dense, Flatten, LogSoftmax, MaxPool,
                                            Relu)            # from jax.example_libraries.stax


def digits(seed=0):
    """(train images, train labels one-hot, test images, test labels one-hot): NHWC."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        sys.exit("this example needs scikit-learn: python -m pip install -e '.[examples]'")
    data = load_digits()
    images = (data.images / 16.0)[..., None]                 # (n, 8, 8, 1)
    labels = jnp.eye(10)[data.target]
    order = npr.RandomState(seed).permutation(len(images))
    split = int(0.8 * len(images))
    train, test = order[:split], order[split:]
    return images[train], labels[train], images[test], labels[test]


def loss(params, batch):
    inputs, targets = batch
    preds = predict(params, inputs)
    return -jnp.mean(jnp.sum(preds * targets, axis=1))


def accuracy(params, batch):
    inputs, targets = batch
    target_class = jnp.argmax(targets, axis=1)
    predicted_class = jnp.argmax(predict(params, inputs), axis=1)
    return jnp.mean(predicted_class == target_class)


init_random_params, predict = stax.serial(
    Conv(16, (3, 3), padding="SAME"), Relu,
    MaxPool((2, 2), (2, 2)), Flatten,
    Dense(64), Relu,
    Dense(10), LogSoftmax)


def main(num_epochs=12, batch_size=64, step_size=3e-3, seed=0):
    rng = random.PRNGKey(seed)
    train_images, train_labels, test_images, test_labels = digits(seed)
    num_train = train_images.shape[0]
    num_complete_batches, leftover = divmod(num_train, batch_size)
    num_batches = num_complete_batches + bool(leftover)

    def data_stream():
        rng = npr.RandomState(seed)
        while True:
            perm = rng.permutation(num_train)
            for i in range(num_batches):
                batch_idx = perm[i * batch_size:(i + 1) * batch_size]
                yield train_images[batch_idx], train_labels[batch_idx]
    batches = data_stream()

    opt_init, opt_update, get_params = optimizers.adam(step_size)

    @jit
    def update(i, opt_state, batch):
        params = get_params(opt_state)
        return opt_update(i, grad(loss)(params, batch), opt_state)

    _, init_params = init_random_params(rng, (-1, 8, 8, 1))
    opt_state = opt_init(init_params)
    itercount = itertools.count()

    print("\nStarting training...")
    start = time.time()
    for epoch in range(num_epochs):
        start_time = time.time()
        for _ in range(num_batches):
            opt_state = update(next(itercount), opt_state, next(batches))
        epoch_time = time.time() - start_time

        params = get_params(opt_state)
        train_acc = accuracy(params, (train_images, train_labels))
        test_acc = accuracy(params, (test_images, test_labels))
        print(f"Epoch {epoch + 1} in {epoch_time:0.2f} sec")
        print(f"Training set accuracy {train_acc}")
        print(f"Test set accuracy {test_acc}")
    print(f"{num_epochs} epochs of {num_batches} steps in {time.time() - start:.1f} s")
    return float(test_acc)


if __name__ == "__main__":
    main()
