"""JAX's ``jax.example_libraries.stax``: a small neural-network library of layers as pairs
of functions.

A layer is ``(init_fun, apply_fun)``: ``init_fun(rng, input_shape)`` draws the layer's
parameters from a `wengert.random` key and returns ``(output_shape, params)``, and
``apply_fun(params, inputs, rng=None)`` computes the layer.  Layers compose with `serial`
(and `parallel`, `FanOut`, `FanInSum`, `FanInConcat`) into layers, so a network is one
pair too; its parameters are a pytree (lists and tuples of arrays) for `wengert.grad`,
``wg.jit`` and the `optimizers`.

The layers compute what JAX's do, in JAX's layouts (images NHWC, kernels HWIO), with
JAX's conventions at the kinks (`Relu`'s derivative 0 at 0, `LeakyRelu`'s 1) and JAX's
defaults (`Gelu` is the tanh form), so applied to the same parameters they give JAX's
numbers; the initial parameters have JAX's shapes and distributions, drawn from
wengert's random bits (not JAX's).  Each is written with ``wengert.numpy``,
``wengert.lax`` and ``wengert.nn``, so its derivatives come from their rules.

Two quirks are JAX's and kept: `Dropout`'s ``rate`` is the probability of *keeping* an
element, and a batch size of -1 in ``input_shape`` (JAX's tutorials write ``(-1, 28,
28, 1)``) passes through `Dense` and the convolutions but is 0 after a pooling layer.

Example:
    >>> import numpy as np, wengert as jax
    >>> from wengert.example_libraries import stax
    >>> init_fun, apply_fun = stax.serial(stax.Dense(16), stax.Relu, stax.Dense(3),
    ...                                   stax.LogSoftmax)
    >>> out_shape, params = init_fun(jax.random.PRNGKey(0), (-1, 5))
    >>> out_shape
    (-1, 3)
    >>> apply_fun(params, np.ones((4, 5))).shape
    (4, 3)
"""
from __future__ import annotations

import math
import operator

import numpy as _np

from .. import lax, nn, random
from .. import numpy as wnp
from ..nn import (log_softmax, softmax, softplus, sigmoid, elu, selu)
from ..initializers import glorot_normal, normal, ones, zeros

__all__ = ["Dense", "GeneralConv", "Conv", "GeneralConvTranspose", "Conv1DTranspose",
           "ConvTranspose", "BatchNorm", "elementwise", "Tanh", "Relu", "Exp", "LogSoftmax",
           "Softmax", "Softplus", "Sigmoid", "Elu", "LeakyRelu", "Selu", "Gelu", "MaxPool",
           "SumPool", "AvgPool", "Flatten", "Identity", "FanOut", "FanInSum", "FanInConcat",
           "Dropout", "serial", "parallel", "shape_dependent", "relu", "log_softmax",
           "logsoftmax", "softmax", "softplus", "sigmoid", "elu", "leaky_relu", "selu",
           "gelu", "standardize", "glorot", "glorot_normal", "normal", "randn", "ones",
           "zeros"]

# JAX's stax names jax.nn's functions and initializers; the older names are aliases
glorot = glorot_normal
randn = normal
logsoftmax = log_softmax


# ---- jax.nn's functions where wengert.nn's conventions are PyTorch's ------------------------

def relu(x):
    """``max(x, 0)`` with JAX's derivative at 0, which is 0 (``wengert.nn.relu``'s is 1).

    Example:
        >>> import wengert as wg
        >>> from wengert.example_libraries import stax
        >>> float(stax.relu(-2.0)), wg.grad(stax.relu)(0.0), wg.grad(stax.relu)(3.0)
        (0.0, 0.0, 1.0)
    """
    return wnp.where(wnp.greater(x, 0), x, wnp.zeros_like(x))


def leaky_relu(x, negative_slope=0.01):
    """x for x >= 0 and ``negative_slope * x`` below, as ``jax.nn.leaky_relu``: the
    derivative at 0 is 1 (``wengert.nn.leaky_relu``'s is the slope, PyTorch's).

    Example:
        >>> import wengert as wg
        >>> from wengert.example_libraries import stax
        >>> float(stax.leaky_relu(-2.0)), wg.grad(stax.leaky_relu)(0.0)
        (-0.02, 1.0)
    """
    return wnp.where(wnp.greater_equal(x, 0), x, wnp.multiply(x, negative_slope))


def gelu(x, approximate=True):
    """``jax.nn.gelu``, whose default is the tanh form (``wengert.nn.gelu``'s is the exact
    one, PyTorch's); ``approximate=False`` is ``x Φ(x)``.

    Example:
        >>> from wengert.example_libraries import stax
        >>> round(float(stax.gelu(1.0)), 6), round(float(stax.gelu(1.0, approximate=False)), 6)
        (0.841192, 0.841345)
    """
    return nn.gelu(x, approximate=bool(approximate))


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None):
    """``(x - mean) / sqrt(variance + epsilon)`` over `axis`, as ``jax.nn.standardize``
    (`wengert.nn.standardize`).

    Example:
        >>> import numpy as np
        >>> from wengert.example_libraries import stax
        >>> stax.standardize(np.array([1.0, 3.0]), epsilon=0.0).tolist()
        [-1.0, 1.0]
    """
    return nn.standardize(x, axis, mean, variance, epsilon, where)


# ---- checks -------------------------------------------------------------------------------

def _count(v, who, name):
    try:
        n = operator.index(v)
    except TypeError:
        raise TypeError(f"{who}: {name} must be a positive integer, got {v!r}") from None
    if n < 1:
        raise ValueError(f"{who}: {name} must be a positive integer, got {n}")
    return n


def _counts(v, who, name):
    try:
        dims = tuple(operator.index(d) for d in v)
    except TypeError:
        raise TypeError(f"{who}: {name} must be a tuple of positive integers, got "
                        f"{v!r}") from None
    if not dims or any(d < 1 for d in dims):
        raise ValueError(f"{who}: {name} must be a non-empty tuple of positive integers, "
                         f"got {dims}")
    return dims


def _shape(input_shape, who, rank=None, what=""):
    try:
        shape = tuple(operator.index(d) for d in input_shape)
    except TypeError:
        raise TypeError(f"{who}: input_shape must be a tuple of integers, got "
                        f"{input_shape!r}") from None
    if rank is not None and len(shape) != rank:
        raise ValueError(f"{who}: input_shape {shape} must have {rank} axes{what}")
    return shape


def _check_inputs(inputs, rank, who, what):
    if wnp.ndim(inputs) != rank:
        raise ValueError(f"{who}: inputs of shape {wnp.shape(inputs)} must have {rank} "
                         f"axes{what}")


# ---- dense and convolutional layers ---------------------------------------------------------

def Dense(out_dim, W_init=glorot_normal(), b_init=normal()):
    """A fully connected layer, ``inputs @ W + b`` (JAX's ``stax.Dense``): W of shape
    ``(input_shape[-1], out_dim)`` from `W_init` (Glorot normal), b of ``(out_dim,)``
    from `b_init` (normal, standard deviation 0.01).

    Example:
        >>> import numpy as np, wengert as jax
        >>> from wengert.example_libraries import stax
        >>> init_fun, apply_fun = stax.Dense(4)
        >>> out_shape, (W, b) = init_fun(jax.random.PRNGKey(0), (-1, 3))
        >>> out_shape, W.shape, b.shape
        ((-1, 4), (3, 4), (4,))
        >>> apply_fun((W, b), np.ones((2, 3))).shape
        (2, 4)
    """
    out_dim = _count(out_dim, "Dense", "out_dim")

    def init_fun(rng, input_shape):
        shape = _shape(input_shape, "Dense")
        if not shape:
            raise ValueError("Dense: input_shape must have at least one axis (the features)")
        k1, k2 = random.split(rng)
        W, b = W_init(k1, (shape[-1], out_dim)), b_init(k2, (out_dim,))
        return shape[:-1] + (out_dim,), (W, b)

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        if wnp.ndim(inputs) < 1 or wnp.shape(inputs)[-1] != wnp.shape(W)[0]:
            raise ValueError(f"Dense: inputs of shape {wnp.shape(inputs)} do not fit W of "
                             f"shape {wnp.shape(W)} (the last axis of the inputs is W's "
                             f"first)")
        return wnp.dot(inputs, W) + b

    return init_fun, apply_fun


def _conv_layout(dimension_numbers, n_spatial, who):
    """The three layout strings, checked: N and C in lhs and out, O and I in rhs, and the
    spatial letters of the filter in all three."""
    try:
        lhs_spec, rhs_spec, out_spec = dimension_numbers
    except (TypeError, ValueError):
        raise TypeError(f"{who}: dimension_numbers must be three strings such as ('NHWC', "
                        f"'HWIO', 'NHWC'), got {dimension_numbers!r}") from None
    specs = (lhs_spec, rhs_spec, out_spec)
    if not all(isinstance(s, str) and len(s) == n_spatial + 2 for s in specs):
        raise ValueError(f"{who}: dimension_numbers {dimension_numbers!r} must be three "
                         f"strings of {n_spatial + 2} letters, for a filter of {n_spatial} "
                         "spatial axes")
    spatial = [c for c in rhs_spec if c not in "OI"]
    if sorted(rhs_spec) != sorted("OI" + "".join(spatial)) or len(set(rhs_spec)) != len(
            rhs_spec) or any(sorted(s) != sorted("NC" + "".join(spatial))
                             for s in (lhs_spec, out_spec)):
        raise ValueError(f"{who}: dimension_numbers {dimension_numbers!r} must name N and C "
                         "in lhs and out, O and I in rhs, and the same spatial letters, "
                         "once each, in all three")
    return lhs_spec, rhs_spec, out_spec, spatial


def _general_conv(who, transpose, dimension_numbers, out_chan, filter_shape, strides,
                  padding, W_init, b_init):
    filter_shape = _counts(filter_shape, who, "filter_shape")
    out_chan = _count(out_chan, who, "out_chan")
    lhs_spec, rhs_spec, out_spec, spatial = _conv_layout(dimension_numbers,
                                                         len(filter_shape), who)
    one = (1,) * len(filter_shape)
    strides = _counts(strides, who, "strides") if strides else one
    if len(strides) != len(filter_shape):
        raise ValueError(f"{who}: strides {strides} must have one entry per axis of "
                         f"filter_shape {filter_shape}")
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def init_fun(rng, input_shape):
        shape = _shape(input_shape, who, len(lhs_spec), f" (the layout {lhs_spec})")
        sizes = iter(filter_shape)
        kernel_shape = tuple(out_chan if c == "O" else shape[lhs_spec.index("C")] if c == "I"
                             else next(sizes) for c in rhs_spec)
        space = {}          # each spatial letter's output size
        pads = _pads(shape, kernel_shape, lhs_spec, rhs_spec, spatial, strides, padding,
                     transpose, who)
        for c, s, (lo, hi) in zip(spatial, strides, pads):
            n, k = shape[lhs_spec.index(c)], kernel_shape[rhs_spec.index(c)]
            if transpose:       # the input spread `s` apart, then a stride-1 convolution
                space[c] = (n - 1) * s + 1 + lo + hi - k + 1
            else:
                space[c] = max((n + lo + hi - k) // s + 1, 0)
        out_shape = tuple(shape[lhs_spec.index("N")] if c == "N" else out_chan if c == "C"
                          else space[c] for c in out_spec)
        bias_shape = tuple(out_chan if c == "C" else 1 for c in out_spec)
        k1, k2 = random.split(rng)
        return out_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        _check_inputs(inputs, len(lhs_spec), who, f" (the layout {lhs_spec})")
        if transpose:
            out = lax.conv_transpose(inputs, W, strides, padding,
                                     dimension_numbers=dimension_numbers)
        else:
            out = lax.conv_general_dilated(inputs, W, strides, padding, one, one,
                                           dimension_numbers=dimension_numbers)
        return out + b

    return init_fun, apply_fun


def _pads(shape, kernel_shape, lhs_spec, rhs_spec, spatial, strides, padding, transpose,
          who):
    """The (low, high) padding of each spatial axis, in the filter's order, that the
    convolution (or the stride-1 convolution of a transposed one) applies."""
    sizes = [shape[lhs_spec.index(c)] for c in spatial]
    kernel = [kernel_shape[rhs_spec.index(c)] for c in spatial]
    if not isinstance(padding, str):
        try:
            pads = [tuple(operator.index(v) for v in p) for p in padding]
        except TypeError:
            pads = []
        if len(pads) != len(spatial) or any(len(p) != 2 for p in pads):
            raise ValueError(f"{who}: padding {padding!r} must be 'SAME', 'VALID' or one "
                             f"(low, high) pair for each of the {len(spatial)} spatial axes")
        return pads
    kind = padding.upper()
    if transpose:
        if kind not in ("SAME", "VALID"):
            raise ValueError(f"{who}: padding {padding!r} is not 'SAME', 'VALID' or (low, "
                             "high) pairs")
        # in all: SAME makes the output n * s long, VALID n * s + max(k - s, 0)
        totals = [k + s - 2 + (max(k - s, 0) if kind == "VALID" else 0)
                  for k, s in zip(kernel, strides)]
        return [(0, t) for t in totals]
    return lax.padtype_to_pads(sizes, kernel, strides, padding)


def GeneralConv(dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID",
                W_init=None, b_init=normal(1e-6)):
    """A convolution layer in any layout (JAX's ``stax.GeneralConv``): `dimension_numbers`
    three strings such as ``("NCHW", "OIHW", "NCHW")`` (inputs, kernel, outputs),
    `out_chan` output channels, a kernel of spatial shape `filter_shape` moved by
    `strides`, `padding` ``"VALID"``, ``"SAME"`` or ``(low, high)`` pairs.  The kernel
    is drawn Glorot normal (fans from its I and O axes), the bias (shaped to broadcast
    over the outputs) normal with standard deviation 1e-6.  1-D and 2-D.

    Example:
        >>> import numpy as np, wengert as jax
        >>> from wengert.example_libraries import stax
        >>> init_fun, apply_fun = stax.GeneralConv(("NCHW", "OIHW", "NCHW"), 8, (3, 3),
        ...                                        padding="SAME")
        >>> out_shape, (W, b) = init_fun(jax.random.PRNGKey(0), (2, 3, 10, 10))
        >>> out_shape, W.shape, b.shape
        ((2, 8, 10, 10), (8, 3, 3, 3), (1, 8, 1, 1))
        >>> apply_fun((W, b), np.ones((2, 3, 10, 10))).shape
        (2, 8, 10, 10)
    """
    return _general_conv("GeneralConv", False, dimension_numbers, out_chan, filter_shape,
                         strides, padding, W_init, b_init)


def Conv(out_chan, filter_shape, strides=None, padding="VALID", W_init=None,
         b_init=normal(1e-6)):
    """A 2-D convolution layer of images NHWC and kernels HWIO (JAX's ``stax.Conv``, which
    is `GeneralConv` with ``("NHWC", "HWIO", "NHWC")``).

    Example:
        >>> import wengert as jax
        >>> from wengert.example_libraries import stax
        >>> init_fun, apply_fun = stax.Conv(16, (3, 3), (2, 2), padding="SAME")
        >>> init_fun(jax.random.PRNGKey(0), (-1, 28, 28, 1))[0]
        (-1, 14, 14, 16)
    """
    return _general_conv("Conv", False, ("NHWC", "HWIO", "NHWC"), out_chan, filter_shape,
                         strides, padding, W_init, b_init)


def GeneralConvTranspose(dimension_numbers, out_chan, filter_shape, strides=None,
                         padding="VALID", W_init=None, b_init=normal(1e-6)):
    """A transposed convolution layer in any layout (JAX's ``stax.GeneralConvTranspose``,
    `wengert.lax.conv_transpose`): the inputs spread `strides` apart and convolved;
    ``"SAME"`` makes the output `strides` times larger.  Arguments as `GeneralConv`'s.

    Example:
        >>> import wengert as jax
        >>> from wengert.example_libraries import stax
        >>> init_fun, apply_fun = stax.GeneralConvTranspose(("NCHW", "OIHW", "NCHW"), 4,
        ...                                                 (3, 3), (2, 2), "SAME")
        >>> init_fun(jax.random.PRNGKey(0), (1, 2, 5, 5))[0]
        (1, 4, 10, 10)
    """
    return _general_conv("GeneralConvTranspose", True, dimension_numbers, out_chan,
                         filter_shape, strides, padding, W_init, b_init)


def Conv1DTranspose(out_chan, filter_shape, strides=None, padding="VALID", W_init=None,
                    b_init=normal(1e-6)):
    """A 1-D transposed convolution layer, NHC and HIO (JAX's ``stax.Conv1DTranspose``).

    Example:
        >>> import wengert as jax
        >>> from wengert.example_libraries import stax
        >>> init_fun, apply_fun = stax.Conv1DTranspose(3, (4,), (2,), "VALID")
        >>> init_fun(jax.random.PRNGKey(0), (2, 10, 5))[0]
        (2, 22, 3)
    """
    return _general_conv("Conv1DTranspose", True, ("NHC", "HIO", "NHC"), out_chan,
                         filter_shape, strides, padding, W_init, b_init)


def ConvTranspose(out_chan, filter_shape, strides=None, padding="VALID", W_init=None,
                  b_init=normal(1e-6)):
    """A 2-D transposed convolution layer, NHWC and HWIO (JAX's ``stax.ConvTranspose``).

    Example:
        >>> import wengert as jax
        >>> from wengert.example_libraries import stax
        >>> init_fun, apply_fun = stax.ConvTranspose(8, (3, 3), (2, 2), "SAME")
        >>> init_fun(jax.random.PRNGKey(0), (-1, 7, 7, 16))[0]
        (-1, 14, 14, 8)
    """
    return _general_conv("ConvTranspose", True, ("NHWC", "HWIO", "NHWC"), out_chan,
                         filter_shape, strides, padding, W_init, b_init)


# ---- normalisation ------------------------------------------------------------------------

def BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True, beta_init=zeros,
              gamma_init=ones):
    """Batch normalisation (JAX's ``stax.BatchNorm``): the inputs standardised over `axis`
    (by default batch and space of NHWC images) with the statistics of the batch, then
    ``gamma * z + beta``, gamma and beta of the shape of the other axes (left out, and
    ``()`` in the parameters, with ``scale=False`` or ``center=False``).  There are no
    running averages: apply_fun always uses the batch's statistics, as JAX's does.

    Example:
        >>> import numpy as np, wengert as jax
        >>> from wengert.example_libraries import stax
        >>> init_fun, apply_fun = stax.BatchNorm(axis=0)
        >>> out_shape, (beta, gamma) = init_fun(jax.random.PRNGKey(0), (10, 3))
        >>> beta.tolist(), gamma.tolist()
        ([0.0, 0.0, 0.0], [1.0, 1.0, 1.0])
        >>> x = np.random.default_rng(0).normal(5.0, 2.0, size=(10, 3))
        >>> z = apply_fun((beta, gamma), x)
        >>> bool(abs(z.mean(axis=0)).max() < 1e-12), z.std(axis=0).round(4).tolist()
        (True, [1.0, 1.0, 1.0])
    """
    if wnp.ndim(axis) == 0:
        axis = (axis,)
    axis = tuple(operator.index(a) for a in axis)

    def axes(ndim, who):
        own = sorted({a % ndim if -ndim <= a < ndim else None for a in axis} - {None})
        if len(own) != len(axis):
            raise ValueError(f"BatchNorm: axis {axis} must name distinct axes of the "
                             f"{ndim}-axis {who}")
        return own

    def init_fun(rng, input_shape):
        shape = _shape(input_shape, "BatchNorm")
        own = axes(len(shape), f"input_shape {shape}")
        kept = tuple(d for i, d in enumerate(shape) if i not in own)
        k1, k2 = random.split(rng)
        beta = beta_init(k1, kept) if center else ()
        gamma = gamma_init(k2, kept) if scale else ()
        return shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        shape = wnp.shape(x)
        own = axes(len(shape), f"inputs of shape {shape}")
        mean = wnp.mean(x, axis=tuple(own), keepdims=True)
        # (JAX's "fast" variance, mean(x²) - mean², made 0 where it cancels below 0)
        variance = wnp.maximum(wnp.mean(wnp.square(x), axis=tuple(own), keepdims=True)
                               - wnp.square(mean), 0.0)
        z = (x - mean) * (1.0 / wnp.sqrt(variance + epsilon))
        broadcast = tuple(1 if i in own else d for i, d in enumerate(shape))
        if scale:
            z = wnp.reshape(gamma, broadcast) * z
        if center:
            z = z + wnp.reshape(beta, broadcast)
        return z

    return init_fun, apply_fun


# ---- elementwise layers -------------------------------------------------------------------

def elementwise(fun, **fun_kwargs):
    """A layer without parameters that applies ``fun(inputs, **fun_kwargs)`` (JAX's
    ``stax.elementwise``); `Relu`, `Tanh`, `Softmax` and the rest are such layers.

    Example:
        >>> import numpy as np, wengert as jax
        >>> from wengert.example_libraries import stax
        >>> init_fun, apply_fun = stax.elementwise(np.clip, a_min=-1.0, a_max=1.0)
        >>> init_fun(jax.random.PRNGKey(0), (3,))
        ((3,), ())
        >>> apply_fun((), np.array([-3.0, 0.5, 2.0])).tolist()
        [-1.0, 0.5, 1.0]
    """
    if not callable(fun):
        raise TypeError(f"elementwise: fun must be a function, got {fun!r}")

    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return fun(inputs, **fun_kwargs)

    return init_fun, apply_fun


Tanh = elementwise(wnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(wnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


# ---- pooling ------------------------------------------------------------------------------

def _pooling(name, reducer, init_value, average=False):
    def layer(window_shape, strides=None, padding="VALID", spec=None):
        who = name
        window = _counts(window_shape, who, "window_shape")
        steps = _counts(strides, who, "strides") if strides else (1,) * len(window)
        if len(steps) != len(window):
            raise ValueError(f"{who}: strides {steps} must have one entry per axis of "
                             f"window_shape {window}")
        rank = len(window) + 2
        if spec is None:
            others = (0, rank - 1)          # batch first, channels last
        else:
            if not (isinstance(spec, str) and len(spec) == rank and "N" in spec
                    and "C" in spec):
                raise ValueError(f"{who}: spec {spec!r} must be a string of {rank} letters "
                                 f"naming N and C, such as 'NHWC', for window_shape {window}")
            others = (spec.index("N"), spec.index("C"))
        full_window, full_steps = list(window), list(steps)
        for k in sorted(others):            # (a window of 1 over batch and channels)
            full_window.insert(k, 1)
            full_steps.insert(k, 1)
        full_window, full_steps = tuple(full_window), tuple(full_steps)
        what = f" (batch, {len(window)} spatial and channel axes)"

        def init_fun(rng, input_shape):
            shape = _shape(input_shape, who, rank, what)
            pads = lax.padtype_to_pads(shape, full_window, full_steps, padding) \
                if isinstance(padding, str) else padding
            return lax.reduce_window_shape_tuple(shape, full_window, full_steps, pads), ()

        def apply_fun(params, inputs, **kwargs):
            _check_inputs(inputs, rank, who, what)
            out = lax.reduce_window(inputs, init_value, reducer, full_window, full_steps,
                                    padding)
            if not average:
                return out
            # each window's count of elements inside the input (fewer at a SAME edge)
            spatial = tuple(d for k, d in enumerate(wnp.shape(inputs)) if k not in others)
            counts = lax.reduce_window(_np.ones(spatial, wnp.result_type(inputs)), 0.0,
                                       lax.add, window, steps, padding)
            return out / _np.expand_dims(counts, tuple(sorted(others)))

        return init_fun, apply_fun

    layer.__name__ = layer.__qualname__ = name
    return layer


MaxPool = _pooling("MaxPool", lax.max, -_np.inf)
MaxPool.__doc__ = """Max pooling (JAX's ``stax.MaxPool``): the largest element of each
window of `window_shape` moved by `strides` (by default 1) over the spatial axes, with
`padding` ``"VALID"``, ``"SAME"`` or ``(low, high)`` pairs (over all axes); inputs NHWC,
or the layout `spec` (such as ``"NCHW"``).  The derivative goes to each window's largest
element (to the first of them at a tie).

Example:
    >>> import numpy as np, wengert as jax
    >>> from wengert.example_libraries import stax
    >>> init_fun, apply_fun = stax.MaxPool((2, 2), (2, 2))
    >>> init_fun(jax.random.PRNGKey(0), (5, 8, 8, 3))[0]
    (5, 4, 4, 3)
    >>> x = np.arange(16.0).reshape(1, 4, 4, 1)
    >>> apply_fun((), x)[0, :, :, 0].tolist()
    [[5.0, 7.0], [13.0, 15.0]]
"""
SumPool = _pooling("SumPool", lax.add, 0.0)
SumPool.__doc__ = """Sum pooling (JAX's ``stax.SumPool``): the sum of each window;
arguments as `MaxPool`'s.

Example:
    >>> import numpy as np
    >>> from wengert.example_libraries import stax
    >>> init_fun, apply_fun = stax.SumPool((2, 2), (2, 2))
    >>> apply_fun((), np.ones((1, 4, 4, 1)))[0, :, :, 0].tolist()
    [[4.0, 4.0], [4.0, 4.0]]
"""
AvgPool = _pooling("AvgPool", lax.add, 0.0, average=True)
AvgPool.__doc__ = """Average pooling (JAX's ``stax.AvgPool``): the mean of each window,
divided by the number of its elements inside the input (so with ``"SAME"`` padding an
edge window's mean is of fewer); arguments as `MaxPool`'s.

Example:
    >>> import numpy as np
    >>> from wengert.example_libraries import stax
    >>> init_fun, apply_fun = stax.AvgPool((2, 2), (2, 2), "SAME")
    >>> apply_fun((), np.arange(9.0).reshape(1, 3, 3, 1))[0, :, :, 0].tolist()
    [[2.0, 3.5], [6.5, 8.0]]
"""


# ---- shape and structure ------------------------------------------------------------------

def _flatten():
    def init_fun(rng, input_shape):
        shape = _shape(input_shape, "Flatten")
        if not shape:
            raise ValueError("Flatten: input_shape must have a batch axis, got ()")
        return (shape[0], math.prod(shape[1:])), ()

    def apply_fun(params, inputs, **kwargs):
        if wnp.ndim(inputs) < 1:
            raise ValueError("Flatten: inputs must have a batch axis, got a scalar")
        return wnp.reshape(inputs, (wnp.shape(inputs)[0], -1))

    return init_fun, apply_fun


Flatten = _flatten()        # (a layer, as JAX's: all but the leading axis flattened)


def _identity():
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        return inputs

    return init_fun, apply_fun


Identity = _identity()


def FanOut(num):
    """The layer that hands its input on `num` times, as a list (JAX's ``stax.FanOut``):
    the start of `parallel` branches.

    Example:
        >>> import wengert as jax
        >>> from wengert.example_libraries import stax
        >>> init_fun, apply_fun = stax.FanOut(2)
        >>> init_fun(jax.random.PRNGKey(0), (4, 3))
        ([(4, 3), (4, 3)], ())
    """
    num = _count(num, "FanOut", "num")

    def init_fun(rng, input_shape):
        return [input_shape] * num, ()

    def apply_fun(params, inputs, **kwargs):
        return [inputs] * num

    return init_fun, apply_fun


def _fan_in_sum():
    def init_fun(rng, input_shape):
        return input_shape[0], ()

    def apply_fun(params, inputs, **kwargs):
        shapes = [wnp.shape(x) for x in inputs]
        if len(set(shapes)) > 1:
            raise ValueError(f"FanInSum: the inputs must have one shape, got {shapes}")
        return sum(inputs)

    return init_fun, apply_fun


FanInSum = _fan_in_sum()


def FanInConcat(axis=-1):
    """The layer that joins a list of inputs along `axis` (JAX's ``stax.FanInConcat``).

    Example:
        >>> import numpy as np, wengert as jax
        >>> from wengert.example_libraries import stax
        >>> init_fun, apply_fun = stax.FanInConcat()
        >>> init_fun(jax.random.PRNGKey(0), [(4, 3), (4, 2)])[0]
        (4, 5)
        >>> apply_fun((), [np.ones((4, 3)), np.zeros((4, 2))]).shape
        (4, 5)
    """
    axis = operator.index(axis)

    def init_fun(rng, input_shape):
        shapes = [tuple(s) for s in input_shape]
        n = len(shapes[0])
        ax = axis % n
        if any(len(s) != n or s[:ax] + s[ax + 1:] != shapes[0][:ax] + shapes[0][ax + 1:]
               for s in shapes):
            raise ValueError(f"FanInConcat: the input shapes {shapes} must agree but for "
                             f"axis {axis}")
        size = sum(s[ax] for s in shapes)
        return shapes[0][:ax] + (size,) + shapes[0][ax + 1:], ()

    def apply_fun(params, inputs, **kwargs):
        return wnp.concatenate(inputs, axis)

    return init_fun, apply_fun


def Dropout(rate, mode="train"):
    """Dropout (JAX's ``stax.Dropout``), where, as in JAX's, `rate` is the probability of
    *keeping* an element: in ``mode="train"`` each element is kept with probability
    `rate` and divided by it, the others are 0; any other mode passes the inputs on.
    apply_fun needs a key, ``apply_fun(params, inputs, rng=key)``, as JAX's does.

    Example:
        >>> import numpy as np, wengert as jax
        >>> from wengert.example_libraries import stax
        >>> init_fun, apply_fun = stax.Dropout(0.8)
        >>> y = apply_fun((), np.ones(10000), rng=jax.random.PRNGKey(0))
        >>> sorted(set(y.tolist())), round(float((y > 0).mean()), 1)
        ([0.0, 1.25], 0.8)
    """
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng", None)
        if rng is None:
            raise ValueError("Dropout: apply_fun needs a key to draw which elements to keep: "
                             "call apply_fun(params, inputs, rng=key) with a key from "
                             "wengert.random.PRNGKey")
        if mode != "train":
            return inputs
        keep = random.bernoulli(rng, rate, wnp.shape(inputs))
        return wnp.where(keep, inputs / rate, 0)

    return init_fun, apply_fun


# ---- combinators --------------------------------------------------------------------------

def _layers(layers, who):
    if not layers:
        raise ValueError(f"{who}: needs at least one layer")
    for k, layer in enumerate(layers):
        ok = isinstance(layer, (tuple, list)) and len(layer) == 2 and all(
            callable(f) for f in layer)
        if not ok:
            hint = (f" (a layer constructor: call it, {layer.__name__}(...))"
                    if callable(layer) and hasattr(layer, "__name__") else "")
            raise TypeError(f"{who}: layer {k} must be an (init_fun, apply_fun) pair, got "
                            f"{layer!r:.80}{hint}")
    return tuple(zip(*layers))


def _keys(rng, n):
    return random.split(rng, n) if rng is not None else (None,) * n


def serial(*layers):
    """The layers one after another (JAX's ``stax.serial``): init_fun threads the shape
    through them and returns a list of their parameters; apply_fun the inputs, each layer
    given its own key split from `rng` (where there is one).

    Example:
        >>> import numpy as np, wengert as jax
        >>> from wengert.example_libraries import stax
        >>> init_fun, apply_fun = stax.serial(stax.Conv(4, (3, 3)), stax.Relu,
        ...                                   stax.MaxPool((2, 2), (2, 2)), stax.Flatten,
        ...                                   stax.Dense(10))
        >>> out_shape, params = init_fun(jax.random.PRNGKey(0), (2, 10, 10, 1))
        >>> out_shape, len(params)
        ((2, 10), 5)
        >>> apply_fun(params, np.ones((2, 10, 10, 1))).shape
        (2, 10)
    """
    init_funs, apply_funs = _layers(layers, "serial")
    n = len(layers)

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        if len(params) != n:
            raise ValueError(f"serial: {n} layers take {n} parameters, got {len(params)}")
        for fun, param, key in zip(apply_funs, params, _keys(rng, n)):
            inputs = fun(param, inputs, rng=key, **kwargs)
        return inputs

    return init_fun, apply_fun


def parallel(*layers):
    """The layers side by side (JAX's ``stax.parallel``): a list of inputs in, the k-th to
    the k-th layer, and the list of their outputs out; between `FanOut` and `FanInSum`
    or `FanInConcat` it makes branches (a residual block).

    Example:
        >>> import numpy as np, wengert as jax
        >>> from wengert.example_libraries import stax
        >>> init_fun, apply_fun = stax.serial(
        ...     stax.FanOut(2), stax.parallel(stax.Dense(3), stax.Identity), stax.FanInSum)
        >>> out_shape, params = init_fun(jax.random.PRNGKey(0), (4, 3))
        >>> out_shape, apply_fun(params, np.ones((4, 3))).shape
        ((4, 3), (4, 3))
    """
    init_funs, apply_funs = _layers(layers, "parallel")
    n = len(layers)

    def init_fun(rng, input_shape):
        if len(input_shape) != n:
            raise ValueError(f"parallel: {n} layers take a list of {n} input shapes, got "
                             f"{input_shape!r}")
        pairs = [init(key, shape)
                 for init, key, shape in zip(init_funs, random.split(rng, n), input_shape)]
        return tuple(zip(*pairs))

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        if len(inputs) != n or len(params) != n:
            raise ValueError(f"parallel: {n} layers take {n} inputs and {n} parameters, "
                             f"got {len(inputs)} and {len(params)}")
        return [f(p, x, rng=key, **kwargs)
                for f, p, x, key in zip(apply_funs, params, inputs, _keys(rng, n))]

    return init_fun, apply_fun


def shape_dependent(make_layer):
    """A layer made when its input shape is known (JAX's ``stax.shape_dependent``):
    ``make_layer(input_shape)`` returns the ``(init_fun, apply_fun)`` pair, called by
    init_fun with the input shape and by apply_fun with the inputs' shape.

    Example:
        >>> import numpy as np, wengert as jax
        >>> from wengert.example_libraries import stax
        >>> init_fun, apply_fun = stax.shape_dependent(lambda shape: stax.Dense(shape[-1]))
        >>> out_shape, params = init_fun(jax.random.PRNGKey(0), (2, 7))
        >>> out_shape, apply_fun(params, np.ones((2, 7))).shape
        ((2, 7), (2, 7))
    """
    if not callable(make_layer):
        raise TypeError(f"shape_dependent: make_layer must be a function of the input "
                        f"shape, got {make_layer!r}")

    def init_fun(rng, input_shape):
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(wnp.shape(inputs))[1](params, inputs, **kwargs)

    return init_fun, apply_fun
