"""wengert.nn's losses with PyTorch's options (class weights, ignore_index, label
smoothing, class-probability and K-dimensional targets, pos_weight; binary_cross_entropy,
smooth_l1_loss, kl_div): values against plain-NumPy references written from PyTorch's
formulas (loss_reference.py: these run without PyTorch, as in CI), values and gradients
against torch.nn.functional in float64 where it is installed (which checks the references
too), derivatives against central differences (to second order where the loss is
smooth), wg.vmap of the per-example losses against a loop, and every error message."""
import itertools
import math
import warnings

import numpy
import pytest

import wengert as wg
import wengert.nn as nn
import wengert.numpy as np
from fd import check_grads, assert_close, fd_derivative
import loss_reference as R

try:                # the comparisons with PyTorch skip without it; the rest always runs
    import torch
    F = torch.nn.functional
except ImportError:
    torch = F = None
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

rng = numpy.random.default_rng(7)
REDUCTIONS = ["mean", "sum", "none"]


def T(a):
    a = numpy.asarray(a)
    return torch.from_numpy(a if a.dtype.kind in "iu" else a.astype(float))


def torch_loss(tf, args, grads, cotangent=None):
    """PyTorch's loss ``tf(*tensors)`` of the NumPy `args` (None stays None), and its
    gradients of ``sum(loss * cotangent)`` with respect to the arguments numbered in
    `grads`."""
    ts = [None if a is None else T(a) for a in args]
    for k in grads:
        ts[k].requires_grad_()
    out = tf(*ts)
    ct = torch.ones_like(out) if cotangent is None else T(cotangent)
    (out * ct).sum().backward()
    return out.detach().numpy(), [ts[k].grad.numpy() for k in grads]


def ours(f, args, grads, cotangent):
    """The same of wengert's loss `f` of the arguments numbered in `grads`: its value and
    the VJP of `cotangent`."""
    out, back = wg.vjp(f, *[args[k] for k in grads])
    return out, list(back(cotangent))


def against_torch(f, tf, args, grads, rtol=1e-12, reference=None):
    """wengert's loss f and PyTorch's tf: values, and the VJPs of a random cotangent with
    respect to the arguments numbered in `grads`; and the NumPy `reference` value, if
    given, against PyTorch's (the references are checked where PyTorch is installed)."""
    shape = numpy.shape(torch_loss(tf, args, grads)[0])
    ct = rng.normal(size=shape)
    out, tgrads = torch_loss(tf, args, grads, ct)
    mine, mgrads = ours(f, args, grads, ct)
    assert numpy.shape(mine) == numpy.shape(out)
    assert_close(mine, out, rtol=rtol, atol=1e-14)
    for g, tg in zip(mgrads, tgrads):
        assert_close(g, tg, rtol=rtol, atol=1e-14)
    if reference is not None:
        assert numpy.shape(reference) == numpy.shape(out)
        assert_close(reference, out, rtol=rtol, atol=1e-14)


def grid(**axes):
    """One parametrize mark for every combination of the axes' values: the grids shared
    by a comparison with PyTorch and the comparison of the values with the reference."""
    return pytest.mark.parametrize(", ".join(axes), list(itertools.product(*axes.values())))


# ---- cross_entropy and nll_loss with class indices --------------------------------------------
def labels_for(shape, classes, ignored=(), ignore_index=-100):
    """Random class indices of `shape`, those at the flat positions `ignored` set to
    ignore_index (and no other equal to it)."""
    y = rng.integers(0, classes, size=shape)
    if 0 <= ignore_index < classes:
        y[y == ignore_index] = (ignore_index + 1) % classes
    y.reshape(-1)[list(ignored)] = ignore_index
    return y


# (input shape, target's flat positions set to ignore_index)
SHAPES = {"2d": ((6, 4), ()), "2d_ignored": ((6, 4), (1, 4)),
          "kdim": ((2, 3, 4, 2), ()), "kdim_ignored": ((2, 3, 4, 2), (0, 5, 11)),
          "one_example": ((5,), ())}


def _class_case(name, ignore_index=-100):
    shape, ignored = SHAPES[name]
    classes = shape[1] if len(shape) > 1 else shape[0]
    target_shape = shape[:1] + shape[2:] if len(shape) > 1 else ()
    return rng.normal(size=shape) * 2, labels_for(target_shape, classes, ignored,
                                                  ignore_index), classes


CLASS_INDICES = grid(shape=list(SHAPES), weighted=[False, True], smoothing=[0.0, 0.25, 1.0],
                     reduction=REDUCTIONS)


def _cross_entropy_case(shape, weighted):
    z, y, classes = _class_case(shape)
    return z, y, rng.uniform(0.2, 3.0, size=classes) if weighted else None


@needs_torch
@CLASS_INDICES
def test_cross_entropy_against_torch(shape, weighted, smoothing, reduction):
    z, y, w = _cross_entropy_case(shape, weighted)
    against_torch(
        lambda z: nn.cross_entropy(z, y, weight=w, reduction=reduction,
                                   label_smoothing=smoothing),
        lambda z, y, w: F.cross_entropy(z, y, weight=w, reduction=reduction,
                                        label_smoothing=smoothing),
        [z, y, w], grads=[0],
        reference=R.cross_entropy(z, y, w, reduction=reduction, label_smoothing=smoothing))


def cross_entropy_values_agree(z, target, w, reduction, smoothing):
    """nn.cross_entropy's value is the NumPy reference's (labels or probabilities)."""
    got = nn.cross_entropy(z, target, weight=w, reduction=reduction,
                           label_smoothing=smoothing)
    want = R.cross_entropy(z, target, w, reduction=reduction, label_smoothing=smoothing)
    assert numpy.shape(got) == numpy.shape(want)
    assert_close(got, want, rtol=1e-13, atol=1e-15)


@CLASS_INDICES
def test_cross_entropy_values(shape, weighted, smoothing, reduction):
    cross_entropy_values_agree(*_cross_entropy_case(shape, weighted), reduction, smoothing)


NLL = grid(shape=list(SHAPES), weighted=[False, True], reduction=REDUCTIONS)


def _nll_case(shape, weighted):
    z, y, w = _cross_entropy_case(shape, weighted)
    return z - numpy.log(numpy.exp(z).sum(axis=1 if z.ndim > 1 else 0, keepdims=True)), y, w


@needs_torch
@NLL
def test_nll_loss_against_torch(shape, weighted, reduction):
    logp, y, w = _nll_case(shape, weighted)
    against_torch(lambda p: nn.nll_loss(p, y, weight=w, reduction=reduction),
                  lambda p, y, w: F.nll_loss(p, y, weight=w, reduction=reduction),
                  [logp, y, w], grads=[0],
                  reference=R.nll_loss(logp, y, w, reduction=reduction))


@NLL
def test_nll_loss_values(shape, weighted, reduction):
    logp, y, w = _nll_case(shape, weighted)
    got = nn.nll_loss(logp, y, weight=w, reduction=reduction)
    want = R.nll_loss(logp, y, w, reduction=reduction)
    assert numpy.shape(got) == numpy.shape(want)
    assert_close(got, want, rtol=1e-13, atol=1e-15)


IGNORED = grid(ignore_index=[0, 2, -1], reduction=REDUCTIONS)


def _ignore_case(ignore_index):
    """Scores with 2 of 6 labels equal to ignore_index, class weights, and the losses'
    keyword arguments to try (without and with weights and label smoothing)."""
    z, y, classes = _class_case("2d_ignored", ignore_index)
    assert (y == ignore_index).sum() == 2
    w = rng.uniform(0.2, 3.0, size=classes)
    return z, y, ({}, {"weight": w, "label_smoothing": 0.1})


@needs_torch
@IGNORED
def test_ignore_index_a_class_or_another_negative(ignore_index, reduction):
    z, y, options = _ignore_case(ignore_index)
    for kw in options:
        against_torch(
            lambda z: nn.cross_entropy(z, y, ignore_index=ignore_index, reduction=reduction,
                                       **kw),
            lambda z, y: F.cross_entropy(z, y, ignore_index=ignore_index, reduction=reduction,
                                         **{k: T(v) if k == "weight" else v
                                            for k, v in kw.items()}),
            [z, y], grads=[0],
            reference=R.cross_entropy(z, y, ignore_index=ignore_index, reduction=reduction,
                                      **kw))
    against_torch(lambda p: nn.nll_loss(p, y, ignore_index=ignore_index, reduction=reduction),
                  lambda p, y: F.nll_loss(p, y, ignore_index=ignore_index,
                                          reduction=reduction), [z, y], grads=[0],
                  reference=R.nll_loss(z, y, ignore_index=ignore_index, reduction=reduction))


@IGNORED
def test_ignore_index_values(ignore_index, reduction):
    z, y, options = _ignore_case(ignore_index)
    for kw in options:
        assert_close(nn.cross_entropy(z, y, ignore_index=ignore_index, reduction=reduction,
                                      **kw),
                     R.cross_entropy(z, y, ignore_index=ignore_index, reduction=reduction,
                                     **kw), rtol=1e-13, atol=1e-15)
    assert_close(nn.nll_loss(z, y, ignore_index=ignore_index, reduction=reduction),
                 R.nll_loss(z, y, ignore_index=ignore_index, reduction=reduction),
                 rtol=1e-13, atol=1e-15)


def _all_ignored_cases():
    """Scores, labels all -100, and (loss, PyTorch's name, NumPy reference, options)."""
    z, y = rng.normal(size=(3, 4)), numpy.full(3, -100)
    w = rng.uniform(0.5, 2.0, size=4)
    return z, y, [(f, name, ref, kw)
                  for f, name, ref in ((nn.cross_entropy, "cross_entropy", R.cross_entropy),
                                       (nn.nll_loss, "nll_loss", R.nll_loss))
                  for kw in ({}, {"weight": w}, {"label_smoothing": 0.2})
                  if f is nn.cross_entropy or "label_smoothing" not in kw]


def test_an_all_ignored_batch_is_nan_for_the_mean_with_zero_gradients():
    z, y, cases = _all_ignored_cases()
    for f, _, ref, kw in cases:
        with numpy.errstate(invalid="raise", divide="raise"):   # (no 0/0 on the way)
            value = f(z, y, **kw)
            grad = wg.grad(lambda z: f(z, y, **kw))(z)
        assert math.isnan(value) and math.isnan(ref(z, y, **kw))
        assert not grad.any()
        assert f(z, y, reduction="sum", **kw) == 0.0 == ref(z, y, reduction="sum", **kw)
        assert_close(f(z, y, reduction="none", **kw), numpy.zeros(3), rtol=0, atol=0)
        assert_close(ref(z, y, reduction="none", **kw), numpy.zeros(3), rtol=0, atol=0)


@needs_torch
def test_an_all_ignored_batch_against_torch():
    z, y, cases = _all_ignored_cases()
    for f, name, _, kw in cases:
        tkw = {k: T(v) if k == "weight" else v for k, v in kw.items()}
        grad = wg.grad(lambda z: f(z, y, **kw))(z)
        tz = T(z).requires_grad_()
        out = getattr(F, name)(tz, T(y), **tkw)
        out.backward()
        assert math.isnan(out.item())
        assert_close(grad, tz.grad.numpy(), rtol=0, atol=0)


def test_ignored_examples_get_neither_loss_nor_gradient_even_at_infinite_scores():
    # an ignored example's scores may be anything: -inf log-probabilities (log 0) there
    # must not turn the other examples' loss or gradient into nan
    y = numpy.array([0, -100, 1])
    with numpy.errstate(divide="ignore"):
        logp = numpy.log(numpy.array([[0.5, 0.5], [0.0, 1.0], [0.25, 0.75]]))
    value = nn.nll_loss(logp, y)
    assert_close(value, (math.log(2) - math.log(0.75)) / 2, rtol=1e-15)
    g = wg.grad(lambda p: nn.nll_loss(p, y))(logp)
    assert_close(g, [[-0.5, 0.0], [0.0, 0.0], [0.0, -0.5]], rtol=0, atol=0)


PROBABILITIES = grid(shape=[(5, 3), (2, 3, 2, 2), (4,)], weighted=[False, True],
                     smoothing=[0.0, 0.3], reduction=REDUCTIONS)


def _probabilities_case(shape, weighted):
    z = rng.normal(size=shape) * 2
    axis = 1 if len(shape) > 1 else 0
    t = numpy.moveaxis(rng.dirichlet(numpy.ones(shape[axis]),
                                     size=numpy.delete(shape, axis)), -1, axis)
    return z, t, rng.uniform(0.2, 3.0, size=shape[axis]) if weighted else None


@needs_torch
@PROBABILITIES
def test_cross_entropy_of_class_probabilities_against_torch(shape, weighted, smoothing,
                                                            reduction):
    z, t, w = _probabilities_case(shape, weighted)
    against_torch(
        lambda z, t: nn.cross_entropy(z, t, weight=w, reduction=reduction,
                                      label_smoothing=smoothing),
        lambda z, t, w: F.cross_entropy(z, t, weight=w, reduction=reduction,
                                        label_smoothing=smoothing),
        [z, t, w], grads=[0, 1],
        reference=R.cross_entropy(z, t, w, reduction=reduction, label_smoothing=smoothing))


@PROBABILITIES
def test_cross_entropy_of_class_probabilities_values(shape, weighted, smoothing, reduction):
    cross_entropy_values_agree(*_probabilities_case(shape, weighted), reduction, smoothing)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_derivatives_to_second_order(reduction):
    """Input, class weights and soft targets, by central differences: the weights enter
    the mean's denominator too (PyTorch does not differentiate them)."""
    z, y, classes = _class_case("2d_ignored")
    w = rng.uniform(0.5, 2.0, size=classes)
    check_grads(lambda z, w: nn.cross_entropy(z, y, weight=w, reduction=reduction,
                                              label_smoothing=0.2), z, w)
    check_grads(lambda p, w: nn.nll_loss(p, y, weight=w, reduction=reduction), z, w)
    z4, y4, _ = _class_case("kdim_ignored")
    check_grads(lambda z: nn.cross_entropy(z, y4, reduction=reduction), z4)
    t = rng.dirichlet(numpy.ones(classes), size=6)
    check_grads(lambda z, t, w: nn.cross_entropy(z, t, weight=w, reduction=reduction,
                                                 label_smoothing=0.1), z, t, w)


def test_class_weights_scale_and_normalise_as_documented():
    """The weighted mean is the weighted sum over the sum of the counted examples'
    weights; scaling every weight changes nothing in it."""
    z, y, classes = _class_case("2d_ignored")
    w = rng.uniform(0.5, 2.0, size=classes)
    per = nn.cross_entropy(z, y, reduction="none")
    counted = y != -100
    weighted = nn.cross_entropy(z, y, weight=w, reduction="none")
    assert_close(weighted[counted], per[counted] * w[y[counted]], rtol=1e-14)
    assert_close(nn.cross_entropy(z, y, weight=w),
                 weighted.sum() / w[y[counted]].sum(), rtol=1e-14)
    assert_close(nn.cross_entropy(z, y, weight=7 * w), nn.cross_entropy(z, y, weight=w),
                 rtol=1e-14)


# ---- the fused default path ------------------------------------------------------------------
def _ops(f, *args):
    graph = wg.trace(f, *args)
    return [n.op.name for n in graph.live_nodes() if n.op.name not in ("input", "const")]


def test_default_cross_entropy_stays_one_fused_primitive():
    z, y, _ = _class_case("2d")
    assert _ops(lambda z: nn.cross_entropy(z, y), z) == ["cross_entropy"]
    # K-dimensional targets fold into rows for the same primitive
    z4, y4, _ = _class_case("kdim")
    assert "cross_entropy" in _ops(lambda z: nn.cross_entropy(z, y4), z4)
    # any option or an ignored label takes the composed path
    for call in (lambda z: nn.cross_entropy(z, y, weight=numpy.ones(4)),
                 lambda z: nn.cross_entropy(z, y, label_smoothing=0.1),
                 lambda z: nn.cross_entropy(z, numpy.where(numpy.arange(6) == 0, -100, y)),
                 lambda z: nn.cross_entropy(z, y, ignore_index=int(y[0]))):
        ops = _ops(call, z)
        assert "cross_entropy" not in ops and "log_softmax" in ops, ops


def test_fused_cross_entropy_keeps_float32():
    """The fused primitive returned a Python float (float64) for float32 scores, eagerly
    and compiled, though its trace said float32."""
    z, y, _ = _class_case("2d")
    z4, y4, _ = _class_case("kdim")
    for z, y in ((z, y), (z4, y4)):
        z32 = z.astype(numpy.float32)
        for f in (lambda z: nn.cross_entropy(z, y),
                  lambda z: nn.cross_entropy(z, y, reduction="sum"),
                  lambda z: nn.cross_entropy(z, y, ignore_index=-100)):
            loss = f(z32)
            assert numpy.result_type(loss) == numpy.float32
            assert numpy.result_type(wg.compile(f, z32)(z32)) == numpy.float32
            assert wg.trace(f, z32).outputs[0].dtype == numpy.float32
            assert wg.grad(f)(z32).dtype == numpy.float32
            assert_close(loss, f(z), rtol=1e-6, atol=0)


@needs_torch
def test_fused_cross_entropy_float32_as_torch():
    z, y, _ = _class_case("2d")
    z32 = z.astype(numpy.float32)
    for reduction in ("mean", "sum"):
        want = F.cross_entropy(torch.from_numpy(z32), T(y), reduction=reduction).numpy()
        loss = nn.cross_entropy(z32, y, reduction=reduction)
        assert numpy.result_type(loss) == want.dtype
        assert_close(loss, want, rtol=1e-6, atol=0)


def test_cross_entropy_of_integer_scores_is_that_of_their_floats():
    # (integer scores overflowed inside the fused primitive: float(-inf) to an int)
    z = rng.integers(-3, 4, size=(5, 4))
    y = labels_for((5,), 4)
    for reduction in REDUCTIONS:
        for options in ({}, {"label_smoothing": 0.1}):
            assert_close(nn.cross_entropy(z, y, reduction=reduction, **options),
                         nn.cross_entropy(z.astype(float), y, reduction=reduction, **options),
                         rtol=1e-15, atol=0)


@pytest.mark.parametrize("loss", [nn.cross_entropy, nn.nll_loss])
def test_an_empty_batch_sums_to_zero(loss):
    # the fused mean of no example is 0/0, which the sum multiplied by 0: nan, not 0
    z, y = numpy.zeros((0, 3)), numpy.zeros(0, dtype=numpy.int64)
    assert loss(z, y, reduction="sum") == 0.0
    assert loss(z, y, reduction="none").shape == (0,)
    with warnings.catch_warnings(), numpy.errstate(invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)     # (NumPy's mean of nothing)
        assert numpy.isnan(loss(z, y))                        # 0/0, as PyTorch
    g = wg.grad(lambda z: loss(z, y, reduction="sum"))(z)
    assert g.shape == (0, 3)
    if torch is not None:
        for reduction in REDUCTIONS:
            want = getattr(F, loss.__name__)(T(z), T(y), reduction=reduction).numpy()
            with warnings.catch_warnings(), numpy.errstate(invalid="ignore"):
                warnings.simplefilter("ignore", RuntimeWarning)
                got = loss(z, y, reduction=reduction)
            numpy.testing.assert_array_equal(got, want)


def test_labels_traced_without_values():
    """In wg.compile the labels have no values while tracing: the defaults trace the
    fused primitive (after the labels' check at run time), and an explicit ignore_index
    (-100 too) leaves those examples out at run time."""
    z, y, _ = _class_case("2d_ignored")
    clean = numpy.where(y == -100, 1, y)
    assert _ops(lambda z, y: nn.cross_entropy(z, y), z, clean) == ["checked_labels",
                                                                  "cross_entropy"]
    ops = _ops(lambda z, y: nn.cross_entropy(z, y, ignore_index=-100), z, clean)
    assert "cross_entropy" not in ops and "ne" in ops and "checked_labels" in ops, ops
    default = wg.compile(wg.grad(lambda z, y: nn.cross_entropy(z, y)), z, clean)
    assert_close(default(z, clean), wg.grad(lambda z: nn.cross_entropy(z, clean))(z),
                 rtol=1e-14, atol=1e-16)
    for reduction in ("mean", "sum"):
        loss = lambda z, y: nn.cross_entropy(z, y, ignore_index=-100, reduction=reduction)
        value, grad = wg.compile(wg.value_and_grad(loss), z, clean)(z, y)
        assert_close(value, R.cross_entropy(z, y, reduction=reduction), rtol=1e-13)
        assert_close(grad, wg.grad(loss)(z, y), rtol=1e-14, atol=1e-16)
    nll = wg.compile(lambda p, y: nn.nll_loss(p, y), z, clean)       # always checks
    assert_close(nll(z, y), R.nll_loss(z, y), rtol=1e-13)


@needs_torch
def test_labels_traced_without_values_against_torch():
    z, y, _ = _class_case("2d_ignored")
    clean = numpy.where(y == -100, 1, y)
    for reduction in ("mean", "sum"):
        loss = lambda z, y: nn.cross_entropy(z, y, ignore_index=-100, reduction=reduction,
                                             label_smoothing=0.0)
        fast = wg.compile(wg.value_and_grad(loss), z, clean)
        value, grad = fast(z, y)
        tz = T(z).requires_grad_()
        out = F.cross_entropy(tz, T(y), reduction=reduction)
        out.backward()
        assert_close(value, out.item(), rtol=1e-13)
        assert_close(grad, tz.grad.numpy(), rtol=1e-12, atol=1e-16)
    nll = wg.compile(lambda p, y: nn.nll_loss(p, y), z, clean)
    assert_close(nll(z, y), F.nll_loss(T(z), T(y)).item(), rtol=1e-13)


def _traced_runs(f, z, y, clean):
    """f(z, y) with the labels traced without their values: compiled (for the clean
    labels' signature) and batched, each as a loss and as its gradient."""
    return {"compile": lambda: wg.compile(f, z, clean)(z, y),
            "compile_grad": lambda: wg.compile(wg.grad(f), z, clean)(z, y),
            "vmap": lambda: wg.vmap(f)(z[None], y[None]),
            "vmap_grad": lambda: wg.vmap(wg.grad(f))(z[None], y[None])}


@pytest.mark.parametrize("classes", [3, 200])     # (with 200, -100 would index class 100)
@pytest.mark.parametrize("how", ["compile", "compile_grad", "vmap", "vmap_grad"])
def test_a_default_ignore_label_in_traced_labels_raises_at_run_time(how, classes):
    """The default cross_entropy of labels traced without their values is the fused
    primitive, which cannot leave a label out: a -100 there raises when the function
    runs, saying what to do, rather than reading class C - 100 (NumPy's negative index)
    or failing inside NumPy."""
    z = rng.normal(size=(4, classes))
    y, clean = numpy.array([0, -100, 2, 1]), numpy.array([0, 1, 2, 1])
    f = lambda z, y: nn.cross_entropy(z, y)
    with pytest.raises(ValueError, match=(
            rf"cross_entropy: labels must lie in range\({classes}\) for {classes} classes, got "
            r"values from -100 to 2; -100 is PyTorch's default ignore_index, which the fused "
            r"cross-entropy of labels traced without their values \(wg.compile, wg.vmap\) "
            r"cannot leave out: pass ignore_index=-100 explicitly")):
        _traced_runs(f, z, y, clean)[how]()
    # labels in range run as before, through the fused primitive
    got = _traced_runs(f, z, clean, clean)[how]()
    want = (f(z, clean) if how in ("compile", "vmap") else wg.grad(f)(z, clean))
    assert_close(numpy.reshape(got, numpy.shape(want)), want, rtol=1e-13, atol=1e-16)


@pytest.mark.parametrize("how", ["compile", "compile_grad", "vmap", "vmap_grad"])
@pytest.mark.parametrize("bad", [-1, 3, 7])
def test_labels_out_of_range_raise_at_run_time_when_traced(bad, how):
    """Any label outside range(C) (other than an explicit ignore_index) is refused at run
    time in a traced function, with the eager message: a negative one would otherwise
    read a class from the end, a large one fail inside NumPy."""
    z = rng.normal(size=(4, 3))
    y, clean = numpy.array([0, bad, 2, 1]), numpy.array([0, 1, 2, 1])
    low, high = min(bad, 0), max(bad, 2)
    calls = {
        "default": (lambda z, y: nn.cross_entropy(z, y), ""),
        "explicit": (lambda z, y: nn.cross_entropy(z, y, ignore_index=-100),
                     r" \(or equal ignore_index, -100\)"),
        "smoothing": (lambda z, y: nn.cross_entropy(z, y, label_smoothing=0.1,
                                                    reduction="sum"),
                      r" \(or equal ignore_index, -100\)"),
        "nll_loss": (lambda p, y: nn.nll_loss(p, y, ignore_index=1), r" \(or equal "
                     r"ignore_index, 1\)")}
    for name, (f, also) in calls.items():
        who = "nll_loss" if name == "nll_loss" else "cross_entropy"
        with pytest.raises(ValueError, match=rf"{who}: labels must lie in range\(3\) for 3 "
                                             rf"classes{also}, got values from {low} to {high}"):
            _traced_runs(f, z, y, clean)[how]()
        with pytest.raises(ValueError, match=rf"{who}: labels must lie in range\(3\)"):
            f(z, y)                                       # (eagerly: the same refusal)


def test_traced_labels_with_an_explicit_ignore_index_are_left_out_at_run_time():
    z = rng.normal(size=(4, 3))
    y, clean = numpy.array([0, -100, 2, 1]), numpy.array([0, 1, 2, 1])
    f = lambda z, y: nn.cross_entropy(z, y, ignore_index=-100)
    runs = _traced_runs(f, z, y, clean)
    assert_close(runs["compile"](), f(z, y), rtol=1e-14)
    assert_close(runs["compile_grad"](), wg.grad(f)(z, y), rtol=1e-14, atol=1e-17)
    assert_close(runs["vmap"](), [f(z, y)], rtol=1e-14)
    assert_close(runs["vmap_grad"](), [wg.grad(f)(z, y)], rtol=1e-14, atol=1e-17)
    # (the mean over the three counted, by hand and by the reference)
    logp = z - numpy.log(numpy.exp(z).sum(axis=1, keepdims=True))
    assert_close(f(z, y), -(logp[0, 0] + logp[2, 2] + logp[3, 1]) / 3, rtol=1e-14)
    assert_close(f(z, y), R.cross_entropy(z, y), rtol=1e-14)


# ---- binary cross-entropy ---------------------------------------------------------------------
def _binary_case(shape=(5, 3)):
    z = rng.normal(size=shape) * 2
    t = rng.uniform(size=shape)
    t[0] = numpy.round(t[0])                      # hard 0/1 targets too
    return z, t


BCE_WITH_LOGITS = grid(weight_shape_pos_shape=[(None, None), ((5, 3), None), (None, (3,)),
                                               ((3,), (5, 3)), ((5, 1), ())],
                       reduction=REDUCTIONS)


def _bce_with_logits_case(shapes):
    z, t = _binary_case()
    weight_shape, pos_shape = shapes
    w = None if weight_shape is None else rng.uniform(0.2, 2.0, size=weight_shape)
    pw = None if pos_shape is None else rng.uniform(0.2, 4.0, size=pos_shape)
    return z, t, w, pw


@needs_torch
@BCE_WITH_LOGITS
def test_bce_with_logits_weights_against_torch(weight_shape_pos_shape, reduction):
    z, t, w, pw = _bce_with_logits_case(weight_shape_pos_shape)
    f = lambda z, t: nn.binary_cross_entropy_with_logits(z, t, weight=w, reduction=reduction,
                                                         pos_weight=pw)
    against_torch(f, lambda z, t, w, pw: F.binary_cross_entropy_with_logits(
        z, t, weight=w, reduction=reduction, pos_weight=pw), [z, t, w, pw], grads=[0, 1],
        reference=R.binary_cross_entropy_with_logits(z, t, w, reduction, pw))


@BCE_WITH_LOGITS
def test_bce_with_logits_weights_values_and_differences(weight_shape_pos_shape, reduction):
    z, t, w, pw = _bce_with_logits_case(weight_shape_pos_shape)
    got = nn.binary_cross_entropy_with_logits(z, t, weight=w, reduction=reduction,
                                              pos_weight=pw)
    want = R.binary_cross_entropy_with_logits(z, t, w, reduction, pw)
    assert numpy.shape(got) == numpy.shape(want)
    assert_close(got, want, rtol=1e-13, atol=1e-15)
    # weight and pos_weight too (PyTorch differentiates neither), by central differences
    args = [a for a in (z, t, w, pw) if a is not None]
    check_grads(lambda *a: nn.binary_cross_entropy_with_logits(
        a[0], a[1], weight=a[2] if w is not None else None, reduction=reduction,
        pos_weight=a[-1] if pw is not None else None), *args)


def test_bce_with_logits_pos_weight_is_finite_at_extreme_logits():
    z = numpy.array([-1000.0, -1000.0, 1000.0, 1000.0])
    t = numpy.array([0.0, 1.0, 0.0, 1.0])
    pw = numpy.array(3.0)
    with numpy.errstate(over="raise", invalid="raise", divide="raise"):
        y = nn.binary_cross_entropy_with_logits(z, t, reduction="none", pos_weight=pw)
        g = wg.grad(lambda z: nn.binary_cross_entropy_with_logits(
            z, t, reduction="sum", pos_weight=pw))(z)
    # -(pw t log sigmoid(z) + (1 - t) log(1 - sigmoid(z))) in the limits
    assert_close(y, [0.0, 3000.0, 1000.0, 0.0], rtol=1e-15, atol=0)
    assert_close(g, [0.0, -3.0, 1.0, 0.0], rtol=1e-15, atol=0)


BCE = grid(weight_shape=[None, (5, 3), (3,)], reduction=REDUCTIONS)


def _bce_case(weight_shape):
    z, t = _binary_case()
    p = 1 / (1 + numpy.exp(-z))
    w = None if weight_shape is None else rng.uniform(0.2, 2.0, size=weight_shape)
    return z, p, t, w


@needs_torch
@BCE
def test_binary_cross_entropy_against_torch(weight_shape, reduction):
    _, p, t, w = _bce_case(weight_shape)
    f = lambda p, t: nn.binary_cross_entropy(p, t, weight=w, reduction=reduction)
    against_torch(f, lambda p, t, w: F.binary_cross_entropy(p, t, weight=w,
                                                            reduction=reduction),
                  [p, t, w], grads=[0, 1], rtol=1e-10,
                  reference=R.binary_cross_entropy(p, t, w, reduction))


@BCE
def test_binary_cross_entropy_values_and_differences(weight_shape, reduction):
    z, p, t, w = _bce_case(weight_shape)
    f = lambda p, t: nn.binary_cross_entropy(p, t, weight=w, reduction=reduction)
    want = R.binary_cross_entropy(p, t, w, reduction)
    assert numpy.shape(f(p, t)) == numpy.shape(want)
    assert_close(f(p, t), want, rtol=1e-12, atol=1e-14)
    # the same loss as from the logits
    assert_close(f(p, t), nn.binary_cross_entropy_with_logits(z, t, weight=w,
                                                              reduction=reduction),
                 rtol=1e-12, atol=1e-14)
    t = numpy.clip(t, 0.05, 0.95)         # (differences must stay inside [0, 1])
    args = (p, t) if w is None else (p, t, w)
    check_grads(lambda p, t, *w: nn.binary_cross_entropy(p, t, weight=w[0] if w else None,
                                                          reduction=reduction), *args)


def test_binary_cross_entropy_of_a_number_differentiates():
    # a traced number's value is a float, which the range check read as an array
    f = lambda p: nn.binary_cross_entropy(p, 0.3)
    assert_close(wg.grad(f)(0.4), fd_derivative(f, 0.4), rtol=1e-8, atol=0)
    g = lambda t: nn.binary_cross_entropy(0.4, t)
    assert_close(wg.grad(g)(0.3), fd_derivative(g, 0.3), rtol=1e-8, atol=0)
    with pytest.raises(ValueError, match=r"input must lie in \[0, 1\], got values from 1.4"):
        wg.grad(f)(1.4)


CLAMPED_P = numpy.array([0.0, 0.0, 1.0, 1.0, 1e-50, 1 - 2 ** -53, 0.5])
CLAMPED_T = numpy.array([0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.25])


def test_binary_cross_entropy_clamps_its_logarithms_at_minus_100():
    p, t = CLAMPED_P, CLAMPED_T
    with numpy.errstate(over="raise", invalid="raise", divide="raise"):
        y = nn.binary_cross_entropy(p, t, reduction="none")
        g = wg.grad(lambda p: nn.binary_cross_entropy(p, t, reduction="sum"))(p)
        gt = wg.grad(lambda t: nn.binary_cross_entropy(p, t, reduction="sum"))(t)
    assert_close(y, R.binary_cross_entropy(p, t, reduction="none"), rtol=1e-15, atol=0)
    assert y[1] == y[2] == 100.0 and y[0] == y[3] == 0.0
    # the derivative of -(t max(log p, -100) + (1 - t) max(log(1 - p), -100)): a clamped
    # logarithm is constant
    log_p_free = p > math.exp(-100)
    log_q_free = 1 - p > math.exp(-100)
    with numpy.errstate(divide="ignore", invalid="ignore"):
        expect = numpy.where(log_p_free, -t / p, 0.0) + numpy.where(log_q_free,
                                                                    (1 - t) / (1 - p), 0.0)
        expect_t = -(numpy.maximum(numpy.log(p), -100) - numpy.maximum(numpy.log1p(-p), -100))
    assert_close(g, expect, rtol=1e-14, atol=0)
    assert_close(gt, expect_t, rtol=1e-14, atol=0)


@needs_torch
def test_binary_cross_entropy_clamps_as_torch():
    p, t = CLAMPED_P, CLAMPED_T
    want = F.binary_cross_entropy(T(p), T(t), reduction="none").numpy()
    assert_close(nn.binary_cross_entropy(p, t, reduction="none"), want, rtol=1e-15, atol=0)
    assert_close(R.binary_cross_entropy(p, t, reduction="none"), want, rtol=1e-15, atol=0)
    # where nothing is clamped, PyTorch's gradient formula agrees
    g = wg.grad(lambda p: nn.binary_cross_entropy(p, t, reduction="sum"))(p)
    tp = T(p).requires_grad_()
    F.binary_cross_entropy(tp, T(t), reduction="sum").backward()
    assert_close(g[-1], tp.grad.numpy()[-1], rtol=1e-14)


# ---- smooth L1, Huber, KL divergence ----------------------------------------------------------
def _regression_case(beta, shape=(4, 3)):
    """Differences d with |d| away from 0 and from beta (the kinks)."""
    a = rng.normal(size=shape)
    d = rng.uniform(0.1, 0.4, size=shape) * rng.choice([-1, 1], size=shape)
    d += rng.choice([0.0, 1.0, 2.0], size=shape) * max(beta, 0.5) * numpy.sign(d)
    return a, a - d


SMOOTH_L1 = grid(beta=[1.0, 0.5, 2.5, 0.0], reduction=REDUCTIONS)


@needs_torch
@SMOOTH_L1
def test_smooth_l1_against_torch(beta, reduction):
    a, b = _regression_case(beta)
    f = lambda a, b: nn.smooth_l1_loss(a, b, reduction=reduction, beta=beta)
    against_torch(f, lambda a, b: F.smooth_l1_loss(a, b, reduction=reduction, beta=beta),
                  [a, b], grads=[0, 1], reference=R.smooth_l1_loss(a, b, reduction, beta))
    if beta:
        against_torch(lambda a, b: nn.huber_loss(a, b, reduction=reduction, delta=beta),
                      lambda a, b: F.huber_loss(a, b, reduction=reduction, delta=beta),
                      [a, b], grads=[0, 1], reference=R.huber_loss(a, b, reduction, beta))


@SMOOTH_L1
def test_smooth_l1_values_and_differences(beta, reduction):
    a, b = _regression_case(beta)
    f = lambda a, b: nn.smooth_l1_loss(a, b, reduction=reduction, beta=beta)
    assert_close(f(a, b), R.smooth_l1_loss(a, b, reduction, beta), rtol=1e-14, atol=1e-15)
    check_grads(f, a, b)
    if beta:                                      # Huber is beta times it
        huber = nn.huber_loss(a, b, reduction=reduction, delta=beta)
        assert_close(huber, R.huber_loss(a, b, reduction, beta), rtol=1e-14, atol=1e-15)
        assert_close(huber, beta * f(a, b), rtol=1e-14, atol=1e-15)
    else:
        assert_close(f(a, b), nn.l1_loss(a, b, reduction=reduction), rtol=0, atol=0)


KL_DIV = grid(log_target=[False, True], reduction=["mean", "batchmean", "sum", "none"])


def _kl_div_case(log_target):
    q = numpy.log(rng.dirichlet(numpy.ones(4), size=5))
    p = rng.dirichlet(numpy.ones(4), size=5)
    return q, p, numpy.log(p) if log_target else p


@needs_torch
@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides")       # (PyTorch's advice)
@KL_DIV
def test_kl_div_against_torch(log_target, reduction):
    q, _, t = _kl_div_case(log_target)
    f = lambda q, t: nn.kl_div(q, t, reduction=reduction, log_target=log_target)
    against_torch(f, lambda q, t: F.kl_div(q, t, reduction=reduction, log_target=log_target),
                  [q, t], grads=[0, 1], reference=R.kl_div(q, t, reduction, log_target))


@KL_DIV
def test_kl_div_values_and_differences(log_target, reduction):
    q, p, t = _kl_div_case(log_target)
    f = lambda q, t: nn.kl_div(q, t, reduction=reduction, log_target=log_target)
    assert_close(f(q, t), R.kl_div(q, t, reduction, log_target), rtol=1e-13, atol=1e-15)
    check_grads(f, q, t)
    if reduction == "batchmean":       # each row's KL divergence, averaged
        rows = (p * (numpy.log(p) - q)).sum(axis=1)
        assert_close(f(q, t), rows.mean(), rtol=1e-13)


ZERO_Q = numpy.log(numpy.array([[0.5, 0.25, 0.25]]))
ZERO_P = numpy.array([[1.0, 0.0, 0.0]])


def test_kl_div_of_a_zero_probability_is_zero_and_has_a_gradient():
    q, p = ZERO_Q, ZERO_P
    with numpy.errstate(divide="raise", invalid="raise"):
        value = nn.kl_div(q, p, reduction="sum")
        gq, gp = wg.grad(lambda q, p: nn.kl_div(q, p, reduction="sum"), argnums=(0, 1))(q, p)
    assert_close(value, R.kl_div(q, p, reduction="sum"), rtol=1e-15)
    assert_close(value, math.log(2), rtol=1e-15)
    assert_close(gq, -p, rtol=0, atol=0)
    # d/dp (p log p - p q) = log p + 1 - q where p > 0; at p = 0 only -q (xlogy's 0 side)
    assert_close(gp, [[1.0 - q[0, 0], -q[0, 1], -q[0, 2]]], rtol=1e-15)


@needs_torch
def test_kl_div_of_a_zero_probability_as_torch():
    assert_close(nn.kl_div(ZERO_Q, ZERO_P, reduction="sum"),
                 F.kl_div(T(ZERO_Q), T(ZERO_P), reduction="sum").item(), rtol=1e-15)


ONE_Q, ONE_P = numpy.log(numpy.array([0.5, 0.5])), numpy.array([0.75, 0.25])


def test_kl_div_batchmean_of_one_example_without_a_batch_axis():
    # PyTorch divides by the first dimension, here the classes' (2)
    value = nn.kl_div(ONE_Q, ONE_P, reduction="batchmean")
    assert_close(value, R.kl_div(ONE_Q, ONE_P, reduction="batchmean"), rtol=1e-15)
    assert_close(value, (0.75 * math.log(1.5) + 0.25 * math.log(0.5)) / 2, rtol=1e-14)


@needs_torch
def test_kl_div_batchmean_of_one_example_as_torch():
    assert_close(nn.kl_div(ONE_Q, ONE_P, reduction="batchmean"),
                 F.kl_div(T(ONE_Q), T(ONE_P), reduction="batchmean").item(), rtol=1e-15)


# ---- vmap: per-example losses ----------------------------------------------------------------
def _vmap_cases():
    w, pw = rng.uniform(0.5, 2.0, size=4), rng.uniform(0.5, 2.0, size=4)
    return {
        "cross_entropy_weight_smoothing": (
            lambda z, y: nn.cross_entropy(z, y, weight=w, label_smoothing=0.2,
                                          reduction="none"), "labels"),
        "cross_entropy_ignore": (
            lambda z, y: nn.cross_entropy(z, y, ignore_index=-100, reduction="none"),
            "labels"),
        "cross_entropy_soft": (lambda z, t: nn.cross_entropy(z, t, reduction="none"),
                               "probabilities"),
        "nll_loss_weight": (lambda z, y: nn.nll_loss(z, y, weight=w, reduction="none"),
                            "labels"),
        "bce_logits": (lambda z, t: nn.binary_cross_entropy_with_logits(
            z, t, weight=w, reduction="none", pos_weight=pw), "probabilities"),
        "bce": (lambda z, t: nn.binary_cross_entropy(1 / (1 + np.exp(-z)), t, weight=w,
                                                     reduction="none"), "probabilities"),
        "smooth_l1": (lambda z, t: nn.smooth_l1_loss(z, t, reduction="none", beta=0.5),
                      "probabilities"),
        "kl_div": (lambda z, t: nn.kl_div(nn.log_softmax(z), t, reduction="none"),
                   "probabilities"),
    }


VMAP_CASES = list(_vmap_cases())


@pytest.mark.parametrize("name", VMAP_CASES)
def test_vmap_of_per_example_losses_is_the_loop(name):
    f, kind = _vmap_cases()[name]
    z = rng.normal(size=(3, 5, 4))
    if kind == "labels":
        y = rng.integers(0, 4, size=(3, 5))
        y[0, 1] = y[2, 4] = -100                  # (looked for though traced)
    else:
        y = rng.dirichlet(numpy.ones(4), size=(3, 5))
    batched = wg.vmap(f)(z, y)
    loop = numpy.stack([f(a, b) for a, b in zip(z, y)])
    assert_close(batched, loop, rtol=1e-13, atol=1e-15)
    # and the per-example gradients of their sums
    g = wg.vmap(wg.grad(lambda z, y: np.sum(f(z, y))))(z, y)
    assert_close(g, numpy.stack([wg.grad(lambda z: np.sum(f(z, b)))(a) for a, b in zip(z, y)]),
                 rtol=1e-12, atol=1e-15)


# (two examples of (2, 3) logits, -inf where a class is masked out)
MASKED = numpy.array([[[2.0, -numpy.inf, 0.5], [1.0, 3.0, -numpy.inf]],
                      [[0.0, 1.0, -numpy.inf], [-numpy.inf, 0.0, 0.0]]])
MASKED_LABELS = numpy.array([[0, 1], [1, 2]])


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_vmap_of_the_fused_cross_entropy_with_masked_logits_is_finite(reduction):
    # the defaults under vmap take the fused primitive, batched through its decomposition:
    # that once multiplied log_softmax by one_hot, -inf * 0 = nan
    f = lambda z, y: nn.cross_entropy(z, y, reduction=reduction)
    loop = numpy.stack([f(z, y) for z, y in zip(MASKED, MASKED_LABELS)])
    assert numpy.isfinite(loop).all()
    assert_close(wg.vmap(f)(MASKED, MASKED_LABELS), loop, rtol=1e-14, atol=0)
    g = wg.vmap(wg.grad(f))(MASKED, MASKED_LABELS)
    assert_close(g, numpy.stack([wg.grad(f)(z, y) for z, y in zip(MASKED, MASKED_LABELS)]),
                 rtol=1e-14, atol=1e-16)
    # Taylor mode expands the same decomposition: coefficients as the general path's
    v = numpy.array([[1.0, 0.0, -1.0], [0.5, 0.0, 0.0]])
    z, y = MASKED[0], MASKED_LABELS[0]
    fused = wg.taylor(lambda z: f(z, y), z, v, order=2)
    general = wg.taylor(lambda z: nn.cross_entropy(z, y, ignore_index=-100,
                                                   reduction=reduction), z, v, order=2)
    assert numpy.isfinite(numpy.asarray(fused, dtype=float)).all()
    assert_close(fused, general, rtol=1e-13, atol=1e-16)
    if torch is not None:
        want = [F.cross_entropy(T(z), T(y), reduction=reduction).item()
                for z, y in zip(MASKED, MASKED_LABELS)]
        assert_close(wg.vmap(f)(MASKED, MASKED_LABELS), want, rtol=1e-14, atol=0)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_vmap_of_the_fused_cross_entropy_keeps_float32(reduction):
    # its decomposition once took a product with one_hot, whose float64 promoted the loss
    z = rng.normal(size=(3, 4, 5)).astype(numpy.float32)
    y = rng.integers(0, 5, size=(3, 4))
    f = lambda z, y: nn.cross_entropy(z, y, reduction=reduction)
    got = wg.vmap(f)(z, y)
    assert got.dtype == numpy.float32
    assert_close(got, [f(a, b) for a, b in zip(z, y)], rtol=1e-6, atol=0)
    assert wg.compile(wg.vmap(f), z, y)(z, y).dtype == numpy.float32


# ---- errors ---------------------------------------------------------------------------------
Z = rng.normal(size=(3, 4))
Y = numpy.array([0, 3, 1])
P = numpy.full((3, 4), 0.25)


@pytest.mark.parametrize("call, error, match", [
    (lambda z: nn.cross_entropy(z, Y, weight=numpy.ones(3)), ValueError,
     r"cross_entropy: weight must have shape \(4,\), one weight per class of input of shape "
     r"\(3, 4\), got weight of shape \(3,\)"),
    (lambda z: nn.nll_loss(z, Y, weight=numpy.ones((1, 4))), ValueError,
     r"nll_loss: weight must have shape \(4,\).*\(3, 4\).*\(1, 4\)"),
    (lambda z: nn.cross_entropy(z, Y, "sum"), TypeError,
     r"weight must be an array of 4 class weights, got 'sum'; pass the reduction by "
     r"keyword, reduction='sum'"),
    (lambda z: nn.binary_cross_entropy_with_logits(z, P, "none"), TypeError,
     r"pass the reduction by keyword, reduction='none'"),
    (lambda z: nn.cross_entropy(z, Y, label_smoothing=1.5), ValueError,
     r"cross_entropy: label_smoothing must lie in \[0, 1\], got 1.5"),
    (lambda z: nn.cross_entropy(z, Y, label_smoothing=-0.1), ValueError,
     r"label_smoothing must lie in \[0, 1\], got -0.1"),
    (lambda z: nn.nll_loss(z, Y.astype(float)), TypeError,
     r"nll_loss: target must be integer class indices, got dtype float64 \(class "
     r"probabilities are cross_entropy's\)"),
    (lambda z: nn.nll_loss(z, P), TypeError, r"nll_loss: target must be integer class"),
    (lambda z: nn.cross_entropy(z, numpy.array([0, 4, -100])), ValueError,
     r"cross_entropy: labels must lie in range\(4\) for 4 classes \(or equal ignore_index, "
     r"-100\), got values from 0 to 4"),
    (lambda z: nn.cross_entropy(z, numpy.array([-1, 2, -100]), reduction="none"), ValueError,
     r"range\(4\) .*\(or equal ignore_index, -100\), got values from -1 to 2"),
    (lambda z: nn.nll_loss(z, numpy.array([0, 1, -100]), ignore_index=1), ValueError,
     r"nll_loss: labels must lie in range\(4\) .*ignore_index, 1\), got values from -100 "
     r"to 0"),
    (lambda z: nn.cross_entropy(z, numpy.array([0, 1, 9]), weight=numpy.ones(4)), ValueError,
     r"got values from 0 to 9"),
    (lambda z: nn.cross_entropy(z, P, ignore_index=2), ValueError,
     r"cross_entropy: ignore_index \(2\) is for class indices; a target of class "
     r"probabilities has no class to ignore"),
    (lambda z: nn.cross_entropy(z, P[:, :3]), ValueError,
     r"cross_entropy: expected input of shape \(N, C\), \(N, C, d1, ...\) or \(C,\) and target "
     r"of class indices of shape \(N,\), \(N, d1, ...\) or \(\) \(or class probabilities of "
     r"the input's shape\), got input of shape \(3, 4\) and target of shape \(3, 3\)"),
    (lambda z: nn.cross_entropy(z.reshape(3, 2, 2), Y), ValueError,
     r"got input of shape \(3, 2, 2\) and target of shape \(3,\)"),
    (lambda z: nn.nll_loss(z[0, 0], numpy.array(0)), ValueError,
     r"nll_loss: expected input .*got input of shape \(\) and target of shape \(\)"),
    (lambda z: nn.cross_entropy(z, Y, reduction="batchmean"), ValueError,
     r"cross_entropy: reduction must be 'mean', 'sum' or 'none', got 'batchmean'"),
    (lambda z: nn.nll_loss(z, Y, reduction="avg"), ValueError,
     r"nll_loss: reduction must be 'mean', 'sum' or 'none', got 'avg'"),
    (lambda z: nn.binary_cross_entropy(nn.sigmoid(z), P, reduction=None), ValueError,
     r"binary_cross_entropy: reduction must be 'mean', 'sum' or 'none', got None"),
    (lambda z: nn.smooth_l1_loss(z, P, reduction="batchmean"), ValueError,
     r"smooth_l1_loss: reduction must be"),
    (lambda z: nn.kl_div(z, P, reduction="average"), ValueError,
     r"kl_div: reduction must be 'mean', 'batchmean', 'sum' or 'none', got 'average'"),
    (lambda z: nn.binary_cross_entropy(z, P), ValueError,
     r"binary_cross_entropy: input must lie in \[0, 1\], got values from -?\d.* to \d"),
    (lambda z: nn.binary_cross_entropy(nn.sigmoid(z), 5 * P), ValueError,
     r"binary_cross_entropy: target must lie in \[0, 1\], got values from 1.25 to 1.25"),
    (lambda z: nn.binary_cross_entropy(nn.sigmoid(z), P, weight=numpy.ones(3)), ValueError,
     r"binary_cross_entropy: weight of shape \(3,\) does not broadcast to the input's shape "
     r"\(3, 4\)"),
    (lambda z: nn.binary_cross_entropy_with_logits(z, P, pos_weight=numpy.ones((2, 4))),
     ValueError, r"binary_cross_entropy_with_logits: pos_weight of shape \(2, 4\) does not "
     r"broadcast to the input's shape \(3, 4\)"),
    (lambda z: nn.binary_cross_entropy(nn.sigmoid(z), P[:2]), ValueError,
     r"binary_cross_entropy: input and target must have the same shape, got input of shape "
     r"\(3, 4\) and target of shape \(2, 4\)"),
    (lambda z: nn.smooth_l1_loss(z, P, beta=-1), ValueError,
     r"smooth_l1_loss: beta must be >= 0 \(0 is l1_loss\), got -1.0"),
    (lambda z: nn.kl_div(z, P.T), ValueError,
     r"kl_div: input and target must have the same shape, got input of shape \(3, 4\) and "
     r"target of shape \(4, 3\)")])
def test_loss_errors(call, error, match):
    # eagerly, and while a gradient is recorded (the input then a traced value)
    for run in (lambda: call(Z), lambda: wg.grad(lambda z: np.sum(call(z)))(Z)):
        with pytest.raises(error, match=match):
            run()
