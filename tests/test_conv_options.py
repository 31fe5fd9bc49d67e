"""wengert.nn.conv2d with PyTorch's options (stride and dilation pairs, integer, pair,
'same' and 'valid' padding, groups up to depthwise) and the pools' rectangular windows,
padding, dilation, ceil_mode, count_include_pad and divisor_override: values against a
direct NumPy loop and against PyTorch, derivatives against central differences and
torch.autograd, batching against Python loops, and the errors."""
import warnings

import numpy
import pytest

import wengert as wg
import wengert.nn as nn
import wengert.numpy as np
from fd import assert_close, check_grads

rng = numpy.random.default_rng(2024)


# ---- the references ---------------------------------------------------------------------------
def as_pair(v):
    return (v, v) if isinstance(v, int) else tuple(v)


def explicit_padding(padding, kernel, dilation):
    """((top, bottom), (left, right)) as PyTorch reads `padding`: 'same' puts the odd
    zero of an odd total at the bottom and right."""
    if padding == "valid":
        return ((0, 0), (0, 0))
    if padding == "same":
        out = []
        for k, d in zip(kernel, dilation):
            total = d * (k - 1)
            out.append((total // 2, total - total // 2))
        return tuple(out)
    ph, pw = as_pair(padding)
    return ((ph, ph), (pw, pw))


def conv2d_loops(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """The definition, one output element at a time."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    (sh, sw), (dh, dw) = as_pair(stride), as_pair(dilation)
    (pt, pb), (pl, pr) = explicit_padding(padding, (kh, kw), (dh, dw))
    xp = numpy.zeros((n, c, h + pt + pb, wd + pl + pr))
    xp[:, :, pt:pt + h, pl:pl + wd] = x
    ho = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    wo = (wd + pl + pr - dw * (kw - 1) - 1) // sw + 1
    og = o // groups
    y = numpy.zeros((n, o, ho, wo))
    for i in range(n):
        for k in range(o):
            first = (k // og) * cg                        # this kernel's group's channels
            for p in range(ho):
                for q in range(wo):
                    total = 0.0 if b is None else b[k]
                    for ch in range(cg):
                        for u in range(kh):
                            for v in range(kw):
                                total += (w[k, ch, u, v]
                                          * xp[i, first + ch, p * sh + u * dh, q * sw + v * dw])
                    y[i, k, p, q] = total
    return y


def pool_loops(x, kernel, stride, padding, reduce, fill):
    """Max (fill -inf) or mean (fill 0, counted) over windows of the padded images."""
    (kh, kw), (sh, sw), (ph, pw) = as_pair(kernel), as_pair(stride), as_pair(padding)
    n, c, h, w = x.shape
    xp = numpy.full((n, c, h + 2 * ph, w + 2 * pw), fill)
    xp[:, :, ph:ph + h, pw:pw + w] = x
    ho, wo = (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1
    y = numpy.zeros((n, c, ho, wo))
    for p in range(ho):
        for q in range(wo):
            y[:, :, p, q] = reduce(xp[:, :, p * sh:p * sh + kh, q * sw:q * sw + kw], axis=(2, 3))
    return y


def torch_conv(x, w, b, stride, padding, dilation, groups):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    t = lambda a: None if a is None else torch.tensor(a)
    return F.conv2d(t(x), t(w), t(b), stride, padding, dilation, groups).numpy()


def problem(c, o, groups, kernel=(3, 2), side=(7, 6), n=2, bias=True):
    x = rng.normal(size=(n, c) + side)
    w = rng.normal(size=(o, c // groups) + kernel)
    return x, w, (rng.normal(size=o) if bias else None)


# channels, out channels, groups: plain, grouped, depthwise (groups = C, 2 kernels each)
GROUPINGS = [(3, 4, 1), (4, 6, 2), (3, 6, 3)]
STRIDES = [1, 2, (2, 1), (1, 3)]
DILATIONS = [1, 2, (1, 3)]
PADDINGS = [0, 1, (2, 0), "same", "valid"]


# ---- values -----------------------------------------------------------------------------------
@pytest.mark.parametrize("grouping", GROUPINGS)
@pytest.mark.parametrize("stride", STRIDES)
@pytest.mark.parametrize("dilation", DILATIONS)
def test_conv2d_matches_loops_and_torch(grouping, stride, dilation):
    c, o, groups = grouping
    for padding in PADDINGS:
        if padding == "same" and stride != 1:
            continue                                      # (refused: see the errors)
        for bias in (True, False):
            x, w, b = problem(c, o, groups, bias=bias)
            y = nn.conv2d(x, w, b, stride, padding, dilation, groups)
            want = conv2d_loops(x, w, b, stride, padding, dilation, groups)
            assert y.shape == want.shape, (padding, bias)
            assert_close(y, want, rtol=1e-12, atol=1e-12)
            if padding == "same":
                assert y.shape[2:] == x.shape[2:]
    for padding in PADDINGS:                              # (skipped without PyTorch)
        if padding == "same" and stride != 1:
            continue
        x, w, b = problem(c, o, groups)
        with warnings.catch_warnings():                  # ('same' with an even kernel)
            warnings.simplefilter("ignore", UserWarning)
            want = torch_conv(x, w, b, stride, padding, dilation, groups)
        assert_close(nn.conv2d(x, w, b, stride=stride, padding=padding, dilation=dilation,
                               groups=groups), want, rtol=1e-12, atol=1e-12)


def test_same_padding_puts_the_odd_zero_at_the_bottom_and_right():
    # a 2x2 kernel needs one zero per axis: after the image, so y[p, q] sees x[p:p+2, q:q+2]
    x = rng.normal(size=(1, 1, 4, 5))
    w = rng.normal(size=(1, 1, 2, 2))
    y = nn.conv2d(x, w, padding="same")
    xp = numpy.zeros((6, 7))
    xp[:4, :5] = x[0, 0]
    assert_close(y[0, 0, 3, 4], x[0, 0, 3, 4] * w[0, 0, 0, 0], rtol=1e-14, atol=0)
    assert_close(y[0, 0, 1, 2], (xp[1:3, 2:4] * w[0, 0]).sum(), rtol=1e-14, atol=0)
    # dilation 3 with a kernel of 2: a total of 3 zeros, 1 above and 2 below
    y = nn.conv2d(x, w, padding="same", dilation=(3, 1))
    assert_close(y[0, 0, 0, 0], x[0, 0, 2, 0] * w[0, 0, 1, 0] + x[0, 0, 2, 1] * w[0, 0, 1, 1],
                 rtol=1e-14, atol=0)


def test_depthwise_convolution_is_one_convolution_per_channel():
    x, w, b = problem(3, 3, 3)
    y = nn.conv2d(x, w, b, stride=(1, 2), padding=1, groups=3)
    for ch in range(3):
        alone = nn.conv2d(x[:, ch:ch + 1], w[ch:ch + 1], b[ch:ch + 1], stride=(1, 2),
                          padding=1)
        assert_close(y[:, ch:ch + 1], alone, rtol=1e-13, atol=1e-13)


def test_groups_are_independent_convolutions_stacked():
    x, w, b = problem(4, 6, 2)
    y = nn.conv2d(x, w, b, padding=(1, 0), dilation=(2, 1), groups=2)
    halves = [nn.conv2d(x[:, 2 * g:2 * g + 2], w[3 * g:3 * g + 3], b[3 * g:3 * g + 3],
                        padding=(1, 0), dilation=(2, 1)) for g in range(2)]
    assert_close(y, numpy.concatenate(halves, axis=1), rtol=1e-13, atol=1e-13)


# ---- derivatives ------------------------------------------------------------------------------
CASES = [  # (C, O, groups), stride, padding, dilation
    ((3, 4, 1), (2, 1), (1, 2), 1),
    ((3, 4, 1), 1, "same", (2, 1)),
    ((4, 6, 2), 2, 1, 2),
    ((4, 6, 2), (1, 3), "valid", (1, 2)),
    ((3, 6, 3), 1, "same", 1),
    ((3, 3, 3), (2, 2), (0, 1), (2, 2)),
]


@pytest.mark.parametrize("grouping, stride, padding, dilation", CASES)
def test_first_and_second_derivatives_by_central_differences(grouping, stride, padding,
                                                             dilation):
    c, o, groups = grouping
    x, w, b = problem(c, o, groups, side=(6, 7))
    conv = lambda x, w, b: nn.conv2d(x, w, b, stride, padding, dilation, groups)
    # first order: JVP along a random direction in (x, w, b) against central differences,
    # the VJP by <ct, J v> = <Jᵀ ct, v>; second order: the same for (x, w, b) -> Jᵀ ct
    check_grads(conv, x, w, b, order=2)


@pytest.mark.parametrize("grouping, stride, padding, dilation", CASES[::2])
def test_gradient_of_each_argument_by_central_differences(grouping, stride, padding,
                                                          dilation):
    """Each argument's gradient, entry by entry, of a scalar loss."""
    c, o, groups = grouping
    x, w, b = problem(c, o, groups, kernel=(2, 3), side=(5, 6), n=1)
    loss = lambda x, w, b: np.sum(np.sin(nn.conv2d(x, w, b, stride, padding, dilation,
                                                   groups)))
    grads = wg.grad(loss, argnums=(0, 1, 2))(x, w, b)
    args, h = [x, w, b], 1e-6
    for k, g in enumerate(grads):
        fd = numpy.zeros_like(args[k])
        for idx in numpy.ndindex(args[k].shape):
            up = [a.copy() for a in args]
            dn = [a.copy() for a in args]
            up[k][idx] += h
            dn[k][idx] -= h
            fd[idx] = (loss(*up) - loss(*dn)) / (2 * h)
        assert_close(g, fd, rtol=1e-6, atol=1e-7)


def test_hessian_vector_products_by_differences_of_gradients():
    x, w, b = problem(4, 6, 2, side=(6, 5))

    def loss(w):
        y = nn.conv2d(x, w, b, stride=(2, 1), padding="valid", dilation=(1, 2), groups=2)
        return np.sum(np.tanh(y) ** 2)
    v = rng.normal(size=w.shape)
    hv = wg.hvp(loss)(w, v)                                 # forward over reverse
    g = wg.grad(loss)
    fd = (g(w + 1e-5 * v) - g(w - 1e-5 * v)) / 2e-5
    assert_close(hv, fd, rtol=1e-6, atol=1e-8)
    gg = wg.grad(lambda w: np.sum(g(w) * v))(w)             # reverse over reverse
    assert_close(gg, hv, rtol=1e-10, atol=1e-12)
    # Taylor mode: twice the second coefficient of t -> loss(w + t v) is vᵀ H v
    coeffs = wg.taylor(loss, w, v, order=2)
    assert_close(2 * coeffs[2], numpy.sum(hv * v), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("grouping, stride, padding, dilation", [
    ((4, 6, 2), (2, 1), (1, 0), (1, 2)), ((3, 3, 3), 1, "same", 2)])
def test_gradients_and_hessian_vector_products_match_torch(grouping, stride, padding,
                                                           dilation):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    c, o, groups = grouping
    x, w, b = problem(c, o, groups)
    g = rng.normal(size=nn.conv2d(x, w, b, stride, padding, dilation, groups).shape)

    def loss(x, w, b):
        return np.sum(np.tanh(nn.conv2d(x, w, b, stride, padding, dilation, groups)) * g)
    ours = wg.grad(loss, argnums=(0, 1, 2))(x, w, b)
    X, W, B = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    out = (torch.tanh(F.conv2d(X, W, B, stride, padding, dilation, groups))
           * torch.tensor(g)).sum()
    theirs = torch.autograd.grad(out, (X, W, B), create_graph=True)
    for a, t in zip(ours, theirs):
        assert_close(a, t.detach().numpy(), rtol=1e-11, atol=1e-12)
    # second order: the Hessian (in x and w together) times a direction
    vx, vw = rng.normal(size=x.shape), rng.normal(size=w.shape)
    dot = (theirs[0] * torch.tensor(vx)).sum() + (theirs[1] * torch.tensor(vw)).sum()
    hx, hw = torch.autograd.grad(dot, (X, W))
    ours = wg.grad(lambda x, w: sum(np.sum(d * v) for d, v in zip(
        wg.grad(loss, argnums=(0, 1))(x, w, b), (vx, vw))), argnums=(0, 1))(x, w)
    assert_close(ours[0], hx.numpy(), rtol=1e-10, atol=1e-12)
    assert_close(ours[1], hw.numpy(), rtol=1e-10, atol=1e-12)


def test_compiled_gradient_of_a_grouped_dilated_network_equals_the_eager_one():
    x, w, b = problem(4, 6, 2)

    def loss(w, b):
        h = nn.max_pool2d(nn.relu(nn.conv2d(x, w, b, stride=(1, 2), padding="valid",
                                            dilation=(2, 1), groups=2)), (2, 1),
                          padding=(1, 0))
        return np.sum(h ** 2)
    eager = wg.grad(loss, argnums=(0, 1))(w, b)
    compiled = wg.compile(wg.grad(loss, argnums=(0, 1)), w, b)(w, b)
    for e, c in zip(eager, compiled):
        assert_close(c, e, rtol=1e-12, atol=1e-12)


# ---- vmap -------------------------------------------------------------------------------------
B = 3
VMAP_CASES = [((4, 6, 2), (2, 1), (1, 0), (1, 2)), ((3, 6, 3), 1, "same", 2),
              ((2, 3, 1), (1, 2), 1, 1)]


@pytest.mark.parametrize("grouping, stride, padding, dilation", VMAP_CASES)
@pytest.mark.parametrize("in_axes", [(0, 0), (None, 0), (0, None)])
def test_vmap_of_conv2d_and_of_its_gradients_equals_a_loop(grouping, stride, padding,
                                                           dilation, in_axes, loops):
    """Per-example kernels (in_axes (·, 0)) and shared ones, the values and the
    per-example gradients in each argument, without one call per example."""
    c, o, groups = grouping
    xs = rng.normal(size=(B, 2, c, 6, 7))
    ws = rng.normal(size=(B, o, c // groups, 3, 2))
    args = [xs if in_axes[0] == 0 else xs[0], ws if in_axes[1] == 0 else ws[0]]

    def example(k):
        return [a[k] if ax == 0 else a for a, ax in zip(args, in_axes)]
    conv = lambda x, w: nn.conv2d(x, w, None, stride, padding, dilation, groups)
    got = wg.vmap(conv, in_axes=in_axes)(*args)
    assert_close(got, numpy.stack([conv(*example(k)) for k in range(B)]), rtol=1e-12,
                 atol=1e-12)
    loss = lambda x, w: np.sum(np.sin(conv(x, w)))
    for argnum in (0, 1):
        got = wg.vmap(wg.grad(loss, argnums=argnum), in_axes=in_axes)(*args)
        want = numpy.stack([wg.grad(loss, argnums=argnum)(*example(k)) for k in range(B)])
        assert_close(got, want, rtol=1e-11, atol=1e-12)
    assert not loops, loops


@pytest.mark.parametrize("grouping, stride, padding, dilation", VMAP_CASES[:2])
def test_derivatives_through_vmap_with_per_example_kernels(grouping, stride, padding,
                                                           dilation):
    """The batched graph (grouped convolutions over the batch) differentiated again."""
    c, o, groups = grouping
    xs = rng.normal(size=(B, 1, c, 5, 6))
    ws = rng.normal(size=(B, o, c // groups, 2, 2))
    batched = wg.vmap(lambda x, w: nn.conv2d(x, w, None, stride, padding, dilation, groups))
    check_grads(batched, xs, ws, order=2)


def test_per_example_gradients_of_shared_grouped_weights(loops):
    """The usual form: one depthwise-then-pointwise network, weights shared, a gradient
    per example."""
    xs = rng.normal(size=(5, 3, 6, 6))
    dw, pw = rng.normal(size=(3, 1, 3, 3)), rng.normal(size=(4, 3, 1, 1))

    def loss(params, x):
        dw, pw = params
        h = nn.relu(nn.conv2d(x[None], dw, padding="same", dilation=2, groups=3))
        return np.sum(np.tanh(nn.conv2d(h, pw, stride=(2, 1))))
    got = wg.vmap(wg.grad(loss), in_axes=((None, None), 0))((dw, pw), xs)
    for k in range(5):
        want = wg.grad(loss)((dw, pw), xs[k])
        assert_close(got[0][k], want[0], rtol=1e-11, atol=1e-12)
        assert_close(got[1][k], want[1], rtol=1e-11, atol=1e-12)
    assert not loops, loops


@pytest.mark.parametrize("groups", [1, 2])
@pytest.mark.parametrize("in_axes", [(0, 0), (None, 0), (0, None)])
def test_vmap_of_conv2d_over_no_examples_is_empty(groups, in_axes):
    """jax.vmap's (and the loop's) empty results: a kernel per example once made zero
    groups, and a per-example weight gradient reshaped an empty array with -1."""
    xs, ws = numpy.zeros((0, 2, 4, 5, 5)), numpy.zeros((0, 6, 4 // groups, 3, 3))
    args = [xs if in_axes[0] == 0 else xs[:1].sum(0) + 1.0,
            ws if in_axes[1] == 0 else ws[:1].sum(0) + 1.0]
    conv = lambda x, w: nn.conv2d(x, w, padding=1, groups=groups)
    assert wg.vmap(conv, in_axes=in_axes)(*args).shape == (0, 2, 6, 5, 5)
    loss = lambda x, w: np.sum(np.sin(conv(x, w)))
    assert wg.vmap(wg.grad(loss, argnums=0), in_axes=in_axes)(*args).shape == (0, 2, 4, 5, 5)
    assert wg.vmap(wg.grad(loss, argnums=1), in_axes=in_axes)(*args).shape == \
        (0, 6, 4 // groups, 3, 3)


def test_conv2d_weight_gradient_of_no_kernels_or_no_images():
    x, w = rng.normal(size=(2, 2, 4, 4)), numpy.zeros((0, 2, 3, 3))
    assert wg.grad(lambda w: np.sum(nn.conv2d(x, w)))(w).shape == (0, 2, 3, 3)
    got = wg.grad(lambda w: np.sum(nn.conv2d(numpy.zeros((0, 2, 4, 4)), w)))(
        numpy.ones((4, 2, 3, 3)))
    assert_close(got, numpy.zeros((4, 2, 3, 3)), rtol=0, atol=0)


# ---- pools ------------------------------------------------------------------------------------
POOLS = [((2, 3), None, 0), ((3, 2), (1, 2), (1, 0)), (3, (2, 1), 1), ((1, 2), 1, (0, 1))]


@pytest.mark.parametrize("kernel, stride, padding", POOLS)
def test_pools_with_rectangular_windows_and_padding(kernel, stride, padding):
    x = rng.normal(size=(2, 3, 7, 6))
    s = kernel if stride is None else stride
    ym = nn.max_pool2d(x, kernel, stride, padding)
    ya = nn.avg_pool2d(x, kernel, stride, padding)
    assert_close(ym, pool_loops(x, kernel, s, padding, numpy.max, -numpy.inf), rtol=0, atol=0)
    assert_close(ya, pool_loops(x, kernel, s, padding, numpy.mean, 0.0), rtol=1e-13,
                 atol=1e-14)
    check_grads(lambda x: nn.max_pool2d(x, kernel, stride, padding) ** 2, x, order=2)
    check_grads(lambda x: nn.avg_pool2d(x, kernel, stride, padding) ** 2, x, order=2)
    for pool, y in ((nn.max_pool2d, ym), (nn.avg_pool2d, ya)):
        got = wg.vmap(lambda x: pool(x, kernel, stride, padding))(x[:, None])
        assert_close(got, y[:, None], rtol=1e-13, atol=1e-14)
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    T = torch.tensor(x)
    assert_close(ym, F.max_pool2d(T, kernel, stride, padding).numpy(), rtol=0, atol=0)
    assert_close(ya, F.avg_pool2d(T, kernel, stride, padding).numpy(), rtol=1e-13,
                 atol=1e-14)


def test_padded_max_pool_gradient_stays_in_the_image():
    # every window holds an image value: the -inf border never receives a cotangent
    x = -numpy.abs(rng.normal(size=(1, 1, 3, 3))) - 1.0       # all below the zeros of 0-padding
    y, back = wg.vjp(lambda x: nn.max_pool2d(x, 2, 1, padding=1), x)
    assert numpy.isfinite(y).all() and y.max() < -1.0
    (xbar,) = back(numpy.ones(y.shape))
    assert xbar.sum() == y.size                              # every window's 1 went into x


# ---- dilation, ceil_mode, count_include_pad, divisor_override ---------------------------------
def pooled_size(size, kernel, stride, padding, dilation, ceil_mode):
    """PyTorch's documented output size: floor (or ceil) of (size + 2 padding - dilation
    (kernel - 1) - 1) / stride, plus 1; in ceil mode a last window that would start in
    the end's padding is dropped."""
    span = dilation * (kernel - 1) + 1
    room = size + 2 * padding - span
    out = (-(-room // stride) if ceil_mode else room // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


def pool_windows(x, kernel, stride, padding, dilation=1, ceil_mode=False):
    """For each output position (p, q), the taps of its window as (row, column) pairs
    of the unpadded image (padding at negative or too large indices), one at a time."""
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = (as_pair(v) for v in (kernel, stride, padding,
                                                                     dilation))
    h, w = x.shape[2:]
    ho = pooled_size(h, kh, sh, ph, dh, ceil_mode)
    wo = pooled_size(w, kw, sw, pw, dw, ceil_mode)
    for p in range(ho):
        for q in range(wo):
            yield p, q, [(p * sh - ph + i * dh, q * sw - pw + j * dw)
                         for i in range(kh) for j in range(kw)]


def max_pool_ref(x, kernel, stride, padding, dilation=1, ceil_mode=False):
    """The largest tap in the image, -inf padding; taps beyond the padding (ceil mode's
    overhang) are no part of the window."""
    h, w = x.shape[2:]
    windows = list(pool_windows(x, kernel, stride, padding, dilation, ceil_mode))
    y = numpy.full(x.shape[:2] + (windows[-1][0] + 1, windows[-1][1] + 1), -numpy.inf)
    for p, q, taps in windows:
        for r, c in taps:
            if 0 <= r < h and 0 <= c < w:
                y[:, :, p, q] = numpy.maximum(y[:, :, p, q], x[:, :, r, c])
    return y


def avg_pool_ref(x, kernel, stride, padding, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
    """The sum of the taps in the image over divisor_override, or over the number of taps
    inside the padded image (count_include_pad) or inside the image."""
    (ph, pw), (h, w) = as_pair(padding), x.shape[2:]
    windows = list(pool_windows(x, kernel, stride, padding, 1, ceil_mode))
    y = numpy.zeros(x.shape[:2] + (windows[-1][0] + 1, windows[-1][1] + 1))
    for p, q, taps in windows:
        inside = [(r, c) for r, c in taps if 0 <= r < h and 0 <= c < w]
        padded = [(r, c) for r, c in taps if -ph <= r < h + ph and -pw <= c < w + pw]
        total = sum(x[:, :, r, c] for r, c in inside)
        count = divisor_override or len(padded if count_include_pad else inside)
        y[:, :, p, q] = total / count
    return y


# (kernel, stride, padding, dilation, ceil_mode) on images of 7 x 6: floor and ceil sizes
# apart, ceil windows hanging over the padding or dropped for starting in it, dilations
DILATED_POOLS = [(3, 2, 0, 1, True), (2, 2, 1, 1, True), ((3, 2), (2, 4), (1, 1), 1, True),
                 (3, 3, 1, 1, True), (2, 1, 0, 2, False), ((2, 3), 2, (1, 0), (3, 2), False),
                 (3, 2, 1, 2, True), ((1, 3), (1, 2), 0, (1, 2), True)]


@pytest.mark.parametrize("kernel, stride, padding, dilation, ceil_mode", DILATED_POOLS)
def test_max_pool_dilation_and_ceil_mode_match_the_definition(kernel, stride, padding,
                                                              dilation, ceil_mode):
    x = rng.normal(size=(2, 3, 7, 6))
    f = lambda x: nn.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode)
    y = f(x)
    assert_close(y, max_pool_ref(x, kernel, stride, padding, dilation, ceil_mode), 0, 0)
    check_grads(lambda x: f(x) ** 2, x, order=2)
    ybar = rng.normal(size=y.shape)
    (xbar,) = wg.vjp(f, x)[1](ybar)
    assert_close(xbar.sum(), ybar.sum(), rtol=1e-12, atol=1e-12)   # each window's, once
    assert_close(wg.vmap(f)(x[:, None]), y[:, None], rtol=0, atol=0)
    per_image = wg.vmap(wg.grad(lambda x: np.sum(f(x) ** 2)))(x[:, None])
    assert_close(per_image[:, 0], wg.grad(lambda x: np.sum(f(x) ** 2))(x), rtol=1e-14,
                 atol=0)
    assert_close(wg.compile(f, x)(x), y, rtol=0, atol=0)
    ints = rng.integers(-50, 50, size=(1, 2, 7, 6))              # (padded with the least int)
    assert_close(f(ints), max_pool_ref(ints, kernel, stride, padding, dilation, ceil_mode),
                 0, 0)
    assert f(ints).dtype == ints.dtype


AVERAGED_POOLS = [(3, 2, 0, True), (2, 2, 1, True), ((3, 2), (2, 4), (1, 1), True),
                  (3, 3, 1, True), (3, 2, 1, False), ((2, 3), 2, (1, 0), True),
                  (2, None, 0, True), (2, None, 0, False)]


@pytest.mark.parametrize("divisor_override", [None, 5])
@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("kernel, stride, padding, ceil_mode", AVERAGED_POOLS)
def test_avg_pool_ceil_mode_and_divisors_match_the_definition(kernel, stride, padding,
                                                              ceil_mode, count_include_pad,
                                                              divisor_override):
    x = rng.normal(size=(2, 3, 7, 6))
    s = kernel if stride is None else stride
    f = lambda x: nn.avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad,
                                divisor_override)
    y = f(x)
    assert_close(y, avg_pool_ref(x, kernel, s, padding, ceil_mode, count_include_pad,
                                 divisor_override), rtol=1e-13, atol=1e-14)
    check_grads(lambda x: f(x) ** 2, x, order=2)
    assert_close(wg.vmap(f)(x[:, None]), y[:, None], rtol=1e-14, atol=1e-15)
    assert_close(wg.compile(f, x)(x), y, rtol=1e-14, atol=1e-15)
    assert f(x.astype(numpy.float32)).dtype == numpy.float32


def test_ceil_mode_windows_by_hand():
    """One row [1, 2, 3, 4], windows of 3 at stride 2 with one padding on each side: the
    windows start at -1, 1 and 3 (ceil mode; floor mode stops after two), the last one
    holding 4, a padding and a place beyond the padding, which never counts."""
    x = numpy.array([[[[1.0, 2.0, 3.0, 4.0]]]])
    args = ((1, 3), (1, 2), (0, 1))
    assert nn.max_pool2d(x, *args).tolist() == [[[[2.0, 4.0]]]]
    assert nn.max_pool2d(x, *args, ceil_mode=True).tolist() == [[[[2.0, 4.0, 4.0]]]]
    assert nn.avg_pool2d(x, *args).tolist() == [[[[1.0, 3.0]]]]
    pooled = lambda **kw: nn.avg_pool2d(x, *args, ceil_mode=True, **kw).tolist()[0][0][0]
    assert pooled() == [1.0, 3.0, 2.0]                         # (4 + 0) / 2
    assert pooled(count_include_pad=False) == [1.5, 3.0, 4.0]  # (1 + 2) / 2, 4 / 1
    assert pooled(divisor_override=2) == [1.5, 4.5, 2.0]
    assert pooled(count_include_pad=False, divisor_override=2) == [1.5, 4.5, 2.0]
    g = wg.grad(lambda x: np.sum(nn.avg_pool2d(x, *args, ceil_mode=True)))(x)
    assert g.tolist() == [[[[1 / 3, 2 / 3, 1 / 3, 1 / 3 + 1 / 2]]]]
    # a window that would start in the end's padding is dropped: 5 rows, windows of 2 at
    # stride 2 with one padding start at -1, 1, 3 (and not 5)
    five = numpy.ones((1, 1, 5, 5))
    assert nn.max_pool2d(five, 2, 2, 1, ceil_mode=True).shape == (1, 1, 3, 3)
    # a window larger than the image, started inside it
    nine = numpy.arange(9.0).reshape(1, 1, 3, 3)
    assert nn.max_pool2d(nine, 4, 2, ceil_mode=True).tolist() == [[[[8.0]]]]
    assert nn.avg_pool2d(nine, 4, 2, ceil_mode=True).tolist() == [[[[4.0]]]]


def test_defaults_keep_their_graphs():
    """Without the new options the pools trace as before: one max_pool2d without a
    dilation parameter, and avg_pool2d's mean or constant convolution without a division."""
    x = rng.normal(size=(1, 2, 6, 6))
    graph = wg.trace(lambda x: nn.max_pool2d(x, 2), x)
    (pool,) = [n for n in graph.live_nodes() if n.op.name == "max_pool2d"]
    assert set(pool.params) == {"kernel", "stride"}
    for call in (lambda x: nn.avg_pool2d(x, 2), lambda x: nn.avg_pool2d(x, 3, 1, 1),
                 lambda x: nn.avg_pool2d(x, 3, 2, ceil_mode=True)):   # (no window hangs over)
        ops = [n.op.name for n in wg.trace(call, x).live_nodes()]
        assert "divide" not in ops, ops


def test_a_dilated_window_of_padding_only_is_minus_infinity_without_derivative():
    # one row, windows of 2 rows 2 apart padded by 1: taps at rows -1 and 1, padding both
    x = rng.normal(size=(1, 2, 1, 4))
    f = lambda x: nn.max_pool2d(x, (2, 1), 1, (1, 0), dilation=(2, 1))
    y, back = wg.vjp(f, x)
    assert y.shape == (1, 2, 1, 4) and numpy.isneginf(y).all()
    assert not back(numpy.ones(y.shape))[0].any()
    # PyTorch's value (not its gradient: its backward writes outside the image there)
    torch = pytest.importorskip("torch")
    assert_close(y, torch.nn.functional.max_pool2d(torch.tensor(x), (2, 1), 1, (1, 0),
                                                   dilation=(2, 1)).numpy(), 0, 0)


POOLS_AGAINST_TORCH = [  # (pool, kernel, stride, padding, options)
    ("max", 3, 2, 1, {"ceil_mode": True}), ("max", (2, 3), (2, 1), (1, 0), {"dilation": 2}),
    ("max", 2, 3, 1, {"dilation": (2, 1), "ceil_mode": True}), ("max", 3, 2, 0,
                                                                 {"ceil_mode": True}),
    ("avg", 3, 2, 1, {"ceil_mode": True}),
    ("avg", 3, 2, 1, {"ceil_mode": True, "count_include_pad": False}),
    ("avg", (2, 3), (2, 2), (1, 1), {"ceil_mode": True, "divisor_override": 4}),
    ("avg", 2, 2, 0, {"ceil_mode": True}), ("avg", 2, 1, 1, {"count_include_pad": False}),
    ("avg", 2, None, 0, {"divisor_override": 3})]


@pytest.mark.parametrize("pool, kernel, stride, padding, options", POOLS_AGAINST_TORCH)
def test_pool_options_against_torch(pool, kernel, stride, padding, options):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    ours = {"max": nn.max_pool2d, "avg": nn.avg_pool2d}[pool]
    theirs = {"max": F.max_pool2d, "avg": F.avg_pool2d}[pool]
    for side in [(7, 6), (8, 5), (6, 7)]:
        x = rng.normal(size=(2, 3) + side)
        t = torch.tensor(x, requires_grad=True)
        want = theirs(t, kernel, stride, padding, **options)
        y, back = wg.vjp(lambda x: ours(x, kernel, stride, padding, **options), x)
        assert y.shape == tuple(want.shape)
        assert_close(y, want.detach().numpy(), rtol=1e-14, atol=1e-15)
        ybar = rng.normal(size=y.shape)
        (want * torch.tensor(ybar)).sum().backward()
        assert_close(back(ybar)[0], t.grad.numpy(), rtol=1e-14, atol=1e-15)


# ---- return_indices and max_unpool2d ------------------------------------------------------------
def argmax_ref(x, kernel, stride, padding, dilation=1, ceil_mode=False):
    """The flat index (row * W + column, in the unpadded plane) of each window's first
    largest tap, one window at a time."""
    w = x.shape[3]
    windows = list(pool_windows(x, kernel, stride, padding, dilation, ceil_mode))
    out = numpy.zeros(x.shape[:2] + (windows[-1][0] + 1, windows[-1][1] + 1), numpy.int64)
    for n in range(x.shape[0]):
        for c in range(x.shape[1]):
            for p, q, taps in windows:
                inside = [(r, col) for r, col in taps if 0 <= r < x.shape[2] and 0 <= col < w]
                r, col = max(inside, key=lambda t: (x[n, c, t[0], t[1]], -taps.index(t)))
                out[n, c, p, q] = r * w + col
    return out


@pytest.mark.parametrize("kernel, stride, padding, dilation, ceil_mode", DILATED_POOLS)
def test_return_indices_match_the_definition(kernel, stride, padding, dilation, ceil_mode):
    x = rng.normal(size=(2, 3, 7, 6))
    x[0, 0, :2, :2] = 1.0                       # a tie: the first tap wins
    y, where = nn.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode,
                             return_indices=True)
    assert where.dtype == numpy.int64
    assert_close(y, nn.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode), 0, 0)
    numpy.testing.assert_array_equal(where, argmax_ref(x, kernel, stride, padding, dilation,
                                                       ceil_mode))
    assert_close(numpy.take_along_axis(x.reshape(2, 3, -1), where.reshape(2, 3, -1), 2),
                 y.reshape(2, 3, -1), 0, 0)  # they point at the maxima
    pool = lambda x: nn.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode,  # noqa
                                   return_indices=True)[1]
    numpy.testing.assert_array_equal(wg.compile(pool, x)(x), where)
    numpy.testing.assert_array_equal(wg.vmap(pool)(x[:, None])[:, 0], where)


# (kernel, stride, padding): apart, overlapping (one place named twice), padded
UNPOOLS = [(2, 2, 0), ((2, 3), (2, 1), 0), (3, 1, 1), (3, 2, 1)]


@pytest.mark.parametrize("kernel, stride, padding", UNPOOLS)
def test_max_unpool_puts_the_maxima_back_and_differentiates(kernel, stride, padding):
    x = rng.normal(size=(2, 3, 7, 6))
    y, where = nn.max_pool2d(x, kernel, stride, padding, return_indices=True)
    out = nn.max_unpool2d(y, where, kernel, stride, padding, output_size=x.shape)
    picked = numpy.zeros(x.size, bool)
    picked[(numpy.asarray(where) + numpy.arange(6)[:, None, None].reshape(2, 3, 1, 1)
            * 42).ravel()] = True
    assert_close(out, numpy.where(picked.reshape(x.shape), x, 0.0), 0, 0)
    check_grads(lambda y: nn.max_unpool2d(y, where, kernel, stride, padding,
                                          output_size=x.shape) ** 2, y, order=2)
    # pool, then unpool: the identity on the maxima, so d sum(out²)/dx = 2x there, once
    # (of overlapping windows that picked one element, the first carries its cotangent)
    roundtrip = lambda x: np.sum(nn.max_unpool2d(  # noqa: E731
        *nn.max_pool2d(x, kernel, stride, padding, return_indices=True), kernel, stride,
        padding, output_size=x.shape) ** 2)
    assert_close(wg.grad(roundtrip)(x), numpy.where(picked.reshape(x.shape), 2 * x, 0.0),
                 rtol=1e-14, atol=0)
    # Taylor mode: (m x(t))² for the mask m of the maxima, along v: (mx)², 2 m x v, m v²
    v, m = rng.normal(size=x.shape), picked.reshape(x.shape)
    series = wg.taylor(lambda x: nn.max_unpool2d(*nn.max_pool2d(
        x, kernel, stride, padding, return_indices=True), kernel, stride, padding,
        output_size=x.shape) ** 2, x, v, order=2)
    for got, want in zip(series, (m * x * x, 2 * m * x * v, m * v * v)):
        assert_close(got, want, rtol=1e-14, atol=0)
    f = lambda y, i: nn.max_unpool2d(y, i, kernel, stride, padding,  # noqa: E731
                                     output_size=x.shape[2:])
    assert_close(wg.compile(f, y, where)(y, where), out, 0, 0)
    assert_close(wg.vmap(f)(y[:, None], numpy.asarray(where)[:, None])[:, 0], out, 0, 0)


@pytest.mark.parametrize("kernel, stride, padding", [(2, 2, 0), ((2, 3), (3, 2), 1)])
def test_return_indices_and_max_unpool_against_torch(kernel, stride, padding):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x = rng.normal(size=(2, 3, 8, 6))
    y, where = nn.max_pool2d(x, kernel, stride, padding, return_indices=True)
    ty, tw = F.max_pool2d(torch.tensor(x), kernel, stride, padding, return_indices=True)
    numpy.testing.assert_array_equal(where, tw.numpy())
    default = tuple((o - 1) * s - 2 * p + k for o, s, p, k in zip(
        y.shape[2:], as_pair(stride), as_pair(padding), as_pair(kernel)))
    # (the indices are places in x's plane: the default size serves where it is x's)
    for output_size in [x.shape[2:]] + ([None] if default == x.shape[2:] else []):
        ours = nn.max_unpool2d(y, where, kernel, stride, padding, output_size=output_size)
        theirs = F.max_unpool2d(ty, tw, kernel, stride, padding, output_size=output_size)
        assert_close(ours, theirs.numpy(), 0, 0)


@pytest.mark.parametrize("ceil_mode", [False, True])
def test_max_pool_of_nan_and_of_all_minus_inf_windows_against_torch(ceil_mode):
    # a window holding nan pooled to nan, but its index was 0 (outside the window) and
    # its derivative was dropped: nan equals nothing.  A window whose image part is all
    # -inf named a tap in the padding (a negative index, which max_unpool2d refused).
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x = rng.normal(size=(2, 2, 5, 6))
    x[0, 0, 1, 4] = x[1, 1, 3, 0] = numpy.nan
    x[0, 1, :2, :2] = x[1, 0, 3:, 4:] = -numpy.inf
    for kernel, stride, padding in [(2, 2, 0), (2, 2, 1), (3, 1, 1), ((2, 3), (1, 2), 1)]:
        options = dict(kernel_size=kernel, stride=stride, padding=padding,
                       ceil_mode=ceil_mode)
        tx = torch.tensor(x, requires_grad=True)
        ty, tw = F.max_pool2d(tx, return_indices=True, **options)
        y, where = nn.max_pool2d(x, return_indices=True, **options)
        assert_close(y, ty.detach().numpy(), 0, 0)
        numpy.testing.assert_array_equal(where, tw.numpy())
        # the derivative of windows with a finite maximum or a nan: torch's
        ct = numpy.where(numpy.isfinite(y) | numpy.isnan(y), rng.normal(size=y.shape), 0.0)
        (want,) = torch.autograd.grad(ty, tx, torch.tensor(ct))
        got = wg.vjp(lambda x: nn.max_pool2d(x, **options), x)[1](ct)[0]
        assert_close(got, want.numpy(), rtol=1e-13, atol=1e-15)     # (sums of overlaps)


def test_one_image_of_shape_chw_is_a_batch_of_one_as_in_torch():
    # PyTorch's conv2d and pools take an unbatched (C, H, W) image; ours refused it (QA)
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    x, w, b = rng.normal(size=(2, 6, 7)), rng.normal(size=(3, 2, 3, 3)), rng.normal(size=3)
    tx = torch.tensor(x, requires_grad=True)
    calls = [(lambda x: nn.conv2d(x, w, b, padding=1, stride=(2, 1)),
              lambda x: F.conv2d(x, torch.tensor(w), torch.tensor(b), padding=1, stride=(2, 1))),
             (lambda x: nn.max_pool2d(x, 2, padding=1), lambda x: F.max_pool2d(x, 2, padding=1)),
             (lambda x: nn.avg_pool2d(x, 3, 2, ceil_mode=True),
              lambda x: F.avg_pool2d(x, 3, 2, ceil_mode=True))]
    for ours, theirs in calls:
        want = theirs(tx)
        ct = rng.normal(size=tuple(want.shape))
        (grad,) = torch.autograd.grad(want, tx, torch.tensor(ct))
        got, back = wg.vjp(ours, x)
        assert_close(got, want.detach().numpy(), rtol=1e-13, atol=1e-14)
        assert_close(back(ct)[0], grad.numpy(), rtol=1e-13, atol=1e-14)
    y, where = nn.max_pool2d(x, 2, return_indices=True)
    numpy.testing.assert_array_equal(where, F.max_pool2d(tx, 2, return_indices=True)[1])
    assert y.shape == where.shape == (2, 3, 3)
    with pytest.raises(ValueError, match=r"\(N, C, H, W\) or one of shape \(C, H, W\), got "
                                         r"\(6, 7\)"):
        nn.conv2d(x[0], w)


def test_max_unpool_errors():
    y, where = nn.max_pool2d(rng.normal(size=(1, 2, 4, 4)), 2, return_indices=True)
    with pytest.raises(ValueError, match=r"indices of shape \(2, 2, 2\) do not match x of "
                                         r"shape \(1, 2, 2, 2\)"):
        nn.max_unpool2d(y, numpy.asarray(where)[0], 2)
    with pytest.raises(TypeError, match="indices must be integers"):
        nn.max_unpool2d(y, numpy.asarray(where, float), 2)
    with pytest.raises(ValueError, match=r"index 15 lies outside the 3x3 output plane"):
        nn.max_unpool2d(y, numpy.full_like(where, 15), 2, output_size=(3, 3))
    with pytest.raises(ValueError, match=r"pooled images of shape \(N, C, H, W\) or one of "
                                         r"shape \(C, H, W\), got \(2, 2\)"):
        nn.max_unpool2d(y[0, 0], numpy.asarray(where)[0, 0], 2)
    # (one image, (C, H, W), with its indices, is a batch of one, as PyTorch takes it)
    assert_close(nn.max_unpool2d(y[0], numpy.asarray(where)[0], 2),
                 nn.max_unpool2d(y, where, 2)[0], rtol=0, atol=0)


@pytest.mark.parametrize("bad", [-1, 28])
@pytest.mark.parametrize("how", ["eager", "vmap", "compile", "compiled_grad", "vmap_grad",
                                 "compiled_linear_grad"])
def test_max_unpool_refuses_indices_outside_the_plane_under_every_trace(how, bad):
    """Pooling a 6x5 image and forgetting output_size names places outside the 6x4 plane;
    a negative index was read from the plane's end, silently, where a trace had no values
    to check."""
    x = rng.normal(size=(3, 2, 4, 6, 5))
    y, where = (numpy.stack(a) for a in zip(*[nn.max_pool2d(e, 2, return_indices=True)
                                             for e in x]))
    where = numpy.array(where)
    where[1, 0, 2, 1, 1] = bad
    f = lambda y, i: nn.max_unpool2d(y, i, 2, output_size=(6, 4))  # noqa: E731
    g = wg.grad(lambda y, i: np.sum(f(y, i) ** 2))
    # (linear: its compiled gradient is the gather alone, without the unpooling's check)
    c = rng.normal(size=(2, 4, 6, 4))
    linear = wg.grad(lambda y, i: np.sum(f(y, i) * c))
    runs = {"eager": lambda: f(y[1], where[1]),
            "compiled_linear_grad": lambda: wg.compile(linear, y[0], where[0])(y[1], where[1]),
            "vmap": lambda: wg.vmap(f)(y, where),
            "compile": lambda: wg.compile(f, y[0], where[0])(y[1], where[1]),
            "compiled_grad": lambda: wg.compile(g, y[0], where[0])(y[1], where[1]),
            "vmap_grad": lambda: wg.vmap(g)(y, where)}
    with pytest.raises(ValueError, match=rf"max_unpool2d: index {bad} lies outside the 6x4 "
                                         r"output plane: indices must be in \[0, 24\)"):
        runs[how]()


def test_max_unpool_of_no_images_is_empty_as_in_torch():
    y, where = nn.max_pool2d(numpy.zeros((0, 2, 4, 4)), 2, return_indices=True)
    assert nn.max_unpool2d(y, where, 2).shape == (0, 2, 4, 4)
    assert wg.grad(lambda y: np.sum(nn.max_unpool2d(y, where, 2)))(y).shape == (0, 2, 2, 2)
    f = lambda y, i: nn.max_unpool2d(y, i, 2)
    ys, idx = numpy.zeros((0, 1, 1, 2, 2)), numpy.zeros((0, 1, 1, 2, 2), int)
    assert wg.vmap(f)(ys, idx).shape == (0, 1, 1, 4, 4)
    assert wg.vmap(wg.grad(lambda y, i: np.sum(f(y, i) ** 2)))(ys, idx).shape == ys.shape
    try:
        import torch
    except ImportError:
        return
    ty, ti = torch.nn.functional.max_pool2d(torch.zeros(0, 2, 4, 4), 2, return_indices=True)
    assert tuple(torch.nn.functional.max_unpool2d(ty, ti, 2).shape) == (0, 2, 4, 4)


# ---- errors -----------------------------------------------------------------------------------
X = rng.normal(size=(1, 4, 5, 5))


@pytest.mark.parametrize("call, error, kind", [
    (lambda x: nn.conv2d(x, numpy.ones((6, 3, 3, 3)), groups=2),
     r"kernels of shape \(O, 2, kh, kw\) for images of shape \(1, 4, 5, 5\), got "
     r"\(6, 3, 3, 3\): with groups=2, each kernel sees C/groups = 4/2", ValueError),
    (lambda x: nn.conv2d(x, numpy.ones((6, 1, 3, 3)), groups=3),
     r"groups=3 must divide the 4 input channels .* \(1, 4, 5, 5\) and the 6 output "
     r"channels of kernels of shape \(6, 1, 3, 3\)", ValueError),
    (lambda x: nn.conv2d(x, numpy.ones((5, 2, 3, 3)), groups=2),
     r"groups=2 must divide .* the 5 output channels", ValueError),
    (lambda x: nn.conv2d(x, numpy.ones((2, 4, 3, 3)), dilation=3),
     r"kernels of shape \(2, 4, 3, 3\) with dilation \(3, 3\) span \(7, 7\), larger than "
     r"images of shape \(1, 4, 5, 5\) with padding \(\(0, 0\), \(0, 0\)\)", ValueError),
    (lambda x: nn.conv2d(x, numpy.ones((2, 4, 3, 3)), dilation=(1, 4), padding=(0, 1)),
     r"span \(3, 9\), larger than .* padding \(\(0, 0\), \(1, 1\)\)", ValueError),
    (lambda x: nn.conv2d(x, numpy.ones((2, 4, 3, 3)), stride=(1, 0)),
     r"stride must be >= 1 and dilation >= 1, got stride \(1, 0\)", ValueError),
    (lambda x: nn.conv2d(x, numpy.ones((2, 4, 3, 3)), dilation=0),
     r"dilation >= 1, got stride \(1, 1\) and dilation \(0, 0\)", ValueError),
    (lambda x: nn.conv2d(x, numpy.ones((2, 4, 3, 3)), padding=(1, -1)),
     r"padding must be >= 0, got padding \(1, -1\)", ValueError),
    (lambda x: nn.conv2d(x, numpy.ones((2, 4, 3, 3)), padding="full"),
     r"padding must be an int, a pair \(height, width\), 'valid' or 'same', got 'full'",
     ValueError),
    (lambda x: nn.conv2d(x, numpy.ones((2, 4, 3, 3)), stride=2, padding="same"),
     r"padding='same' is not supported for strided convolutions \(stride \(2, 2\)\)",
     ValueError),
    (lambda x: nn.conv2d(x, numpy.ones((2, 4, 3, 3)), stride=(1, 2, 1)),
     r"stride must be an int or a pair \(height, width\), got \(1, 2, 1\)", ValueError),
    (lambda x: nn.conv2d(x, numpy.ones((2, 4, 3, 3)), stride=1.5),
     r"stride must be an int or a pair of ints \(height, width\), got 1.5", TypeError),
    (lambda x: nn.conv2d(x, numpy.ones((2, 4, 3, 3)), dilation=(1, None)),
     r"dilation must be an int or a pair of ints", TypeError),
    (lambda x: nn.conv2d(x, numpy.ones((4, 1, 3, 3)), groups=2.0),
     r"groups must be an int, got 2.0", TypeError),
    (lambda x: nn.conv2d(x, numpy.ones((4, 1, 3, 3)), groups=0),
     r"groups must be >= 1, got 0", ValueError),
    (lambda x: nn.conv2d(x, numpy.ones((2, 4, 3, 3)), numpy.ones(3)),
     r"expected bias of shape \(2,\) for kernels of shape \(2, 4, 3, 3\), got \(3,\)",
     ValueError),
    (lambda x: nn.conv2d(x, numpy.ones((2, 4, 3))),
     r"kernels of shape \(O, C/groups, kh, kw\) for images of shape \(1, 4, 5, 5\), got "
     r"\(2, 4, 3\)", ValueError),
    (lambda x: nn.max_pool2d(x, (2, 3), padding=2),
     r"max_pool2d: padding must be >= 0 and at most half the window, as in PyTorch, got "
     r"padding \(2, 2\) for a 2x3 window", ValueError),
    (lambda x: nn.avg_pool2d(x, 3, padding=(0, -1)),
     r"avg_pool2d: padding must be >= 0 .* got padding \(0, -1\)", ValueError),
    (lambda x: nn.avg_pool2d(x, (6, 2)),
     r"a 6x2 window does not fit in images of shape \(1, 4, 5, 5\)", ValueError),
    (lambda x: nn.max_pool2d(x, (2, 8), padding=1),
     r"a 2x8 window does not fit in images of shape \(1, 4, 5, 5\) with padding \(1, 1\)",
     ValueError),
    (lambda x: nn.max_pool2d(x, 2, stride=(1, 0)),
     r"kernel_size and stride must be >= 1, got \(2, 2\) and \(1, 0\)", ValueError),
    (lambda x: nn.avg_pool2d(x, "2"), r"kernel_size must be an int or a pair of ints",
     TypeError),
    (lambda x: nn.max_pool2d(x, 2, dilation=(1, 0)),
     r"max_pool2d: dilation must be >= 1, got \(1, 0\)", ValueError),
    (lambda x: nn.max_pool2d(x, 2, dilation=1.5),
     r"max_pool2d: dilation must be an int or a pair of ints", TypeError),
    (lambda x: nn.max_pool2d(x, 2, stride=1, dilation=(5, 1)),
     r"max_pool2d: a 2x2 window dilated by \(5, 1\) does not fit in images of shape "
     r"\(1, 4, 5, 5\)", ValueError),
    (lambda x: nn.max_pool2d(x, 3, dilation=4, padding=1),
     r"a 3x3 window dilated by \(4, 4\) does not fit in images of shape \(1, 4, 5, 5\) "
     r"with padding \(1, 1\)", ValueError),
    (lambda x: nn.avg_pool2d(x, 7, stride=2, ceil_mode=True),     # (with stride 3 it fits)
     r"avg_pool2d: a 7x7 window does not fit in images of shape \(1, 4, 5, 5\)", ValueError),
    (lambda x: nn.max_pool2d(x, 2, ceil_mode=1),
     r"max_pool2d: ceil_mode must be True or False, got 1", TypeError),
    (lambda x: nn.avg_pool2d(x, 2, ceil_mode="yes"),
     r"avg_pool2d: ceil_mode must be True or False, got 'yes'", TypeError),
    (lambda x: nn.avg_pool2d(x, 2, count_include_pad=None),
     r"avg_pool2d: count_include_pad must be True or False, got None", TypeError),
    (lambda x: nn.avg_pool2d(x, 2, divisor_override=0),
     r"avg_pool2d: divisor_override must be a nonzero int \(or None\), got 0", ValueError),
    (lambda x: nn.avg_pool2d(x, 2, divisor_override=2.5),
     r"divisor_override must be a nonzero int \(or None\), got 2.5", ValueError),
    (lambda x: nn.avg_pool2d(x, 2, divisor_override=True),
     r"divisor_override must be a nonzero int \(or None\), got True", ValueError),
])
def test_errors_name_the_shapes_and_the_setting(call, error, kind):
    for run in (lambda: call(X), lambda: wg.grad(lambda t: np.sum(call(t)))(X)):
        with pytest.raises(kind, match=error):
            run()
