"""wengert.numpy's NaN-ignoring statistics, polynomials, the elementwise functions of a
float's representation, and the integer- and bool-valued functions (searching, counting,
sets, histograms): derivatives against central differences to second order, values and
dtypes against NumPy, closed forms, and tracing without values."""
import warnings

import numpy
import pytest

import wengert as wg
import wengert.numpy as np
from wengert.primitives import special as SP
from fd import check_grads, assert_close

rng = numpy.random.default_rng(11)


def r(*shape):
    return rng.normal(size=shape)


def with_nans(x, fraction=0.7):
    """x with NaNs at some of the places whose indices sum to 1 modulo 4 (picked at random
    with probability `fraction`): along every axis, of any four neighbours at most one is
    NaN, so every slice keeps numbers."""
    x = numpy.array(x, dtype=float)
    mask = (sum(numpy.indices(x.shape)) % 4 == 1) & (rng.uniform(size=x.shape) < fraction)
    x[mask] = numpy.nan
    return x


def value(f, *args):
    """f's result on traced args (eager tracing, with values), as plain values.  Integer
    and bool arguments are traced too: as floats (which wg.vjp makes of them) cast back."""
    dtypes = [numpy.result_type(a) for a in args]
    if all(dt.kind in "fc" for dt in dtypes):
        return wg.vjp(f, *args)[0]
    return wg.vjp(lambda *t: f(*[x if dt.kind in "fc" else np.astype(x, dt)
                                 for x, dt in zip(t, dtypes)]),
                  *[a if dt.kind in "fc" else numpy.asarray(a, float)
                    for a, dt in zip(args, dtypes)])[0]


def same(got, want, name="", exact=True):
    """Equal values and dtypes, pytree by pytree (NaNs equal)."""
    got_leaves, want_leaves = wg.tree.flatten(got)[0], wg.tree.flatten(want)[0]
    assert len(got_leaves) == len(want_leaves), name
    for g, w in zip(got_leaves, want_leaves):
        g, w = numpy.asarray(g), numpy.asarray(w)
        assert g.dtype == w.dtype, (name, g.dtype, w.dtype)
        if exact:
            numpy.testing.assert_array_equal(g, w, err_msg=name)
        else:           # (within rounding: float32 sums of another length, say)
            tol = 1e-6 if g.dtype in (numpy.float32, numpy.complex64) else 1e-12
            numpy.testing.assert_allclose(g, w, rtol=tol, atol=tol / 100, err_msg=name)


# ---- NaN-ignoring statistics ---------------------------------------------------------------
NAN_CASES = {
    "nanvar": lambda x: np.nanvar(x),
    "nanvar axis": lambda x: np.nanvar(x, axis=0),
    "nanvar ddof keepdims": lambda x: np.nanvar(x, -1, ddof=1, keepdims=True),
    "nanvar correction where": lambda x: np.nanvar(x, -1, correction=1,
                                                   where=numpy.arange(x.shape[-1]) != 1),
    "nanvar mean": lambda x: np.nanvar(x, 1, keepdims=True,
                                       mean=np.nanmean(x, 1, keepdims=True) + 0.1),
    "nanstd": lambda x: np.nanstd(x, axis=-1),
    "nanstd axes": lambda x: np.nanstd(x, axis=(0, -1), ddof=1),
    "nanprod": lambda x: np.nanprod(x, axis=0),
    "nanprod all": lambda x: np.nanprod(x),
    "nancumsum": lambda x: np.nancumsum(x, axis=-1),
    "nancumsum flat": lambda x: np.nancumsum(x),
    "nancumprod": lambda x: np.nancumprod(x, axis=0),
    "nanmedian": lambda x: np.nanmedian(x),
    "nanmedian axis": lambda x: np.nanmedian(x, axis=-1),
    "nanmedian keepdims": lambda x: np.nanmedian(x, axis=0, keepdims=True),
    "nanquantile": lambda x: np.nanquantile(x, 0.3, axis=-1),
    "nanquantile array": lambda x: np.nanquantile(x, [0.1, 0.5, 0.85], axis=0),
    "nanquantile strong": lambda x: np.nanquantile(x, numpy.float64(0.7)),
    "nanquantile keepdims": lambda x: np.nanquantile(x, numpy.array([[0.2], [1.0]]), -1,
                                                     keepdims=True),
    "nanpercentile": lambda x: np.nanpercentile(x, 40, axis=-1),
    "nanpercentile array": lambda x: np.nanpercentile(x, [0, 65.5, 100], axis=0),
}


@pytest.mark.parametrize("name", NAN_CASES)
@pytest.mark.parametrize("shape", [(5,), (4, 5), (3, 2, 4)])
def test_nan_statistics_derivatives_and_values(name, shape):
    f = NAN_CASES[name]
    if name in ("nanvar mean", "nanstd axes") and len(shape) < 2:
        pytest.skip("reduces over a second axis")
    x = with_nans(r(*shape) + (2.0 if "prod" in name else 0.0))
    # values and dtypes: NumPy's own function of the same arguments
    want = f(x)
    same(value(f, x), want, name, exact=False)
    # no NaN reaches the derivative, and the NaNs get none
    g = wg.vjp(f, x)[1](numpy.ones(numpy.shape(want)))[0]
    assert numpy.all(numpy.isfinite(g)) and numpy.all(g[numpy.isnan(x)] == 0), name
    check_grads(f, x)


@pytest.mark.parametrize("dtype", [numpy.float32, numpy.float64])
def test_nan_statistics_give_numpys_dtypes_and_values(dtype):
    x = with_nans(r(4, 6)).astype(dtype)
    for name, f in NAN_CASES.items():
        want = f(x)
        for got in (value(f, x), wg.trace(f, x)(x)):
            same(got, want, name, exact=False)


def test_nan_statistics_equal_the_plain_ones_on_the_numbers():
    # each row's NaN-free part: the plain statistic and its derivative, zeros at the NaNs
    x = with_nans(r(3, 7))
    pairs = [(np.nanvar, np.var),
             (lambda v: np.nanstd(v, ddof=1), lambda v: np.std(v, ddof=1)),
             (np.nanmedian, np.median),
             (lambda v: np.nanquantile(v, 0.35), lambda v: np.quantile(v, 0.35)),
             (np.nanprod, np.prod), (lambda v: np.nancumsum(v)[-1], np.sum)]
    for nan_f, f in pairs:
        for row in x:
            keep = ~numpy.isnan(row)
            assert_close(value(nan_f, row), f(row[keep]), rtol=1e-13, atol=0)
            g = wg.grad(nan_f)(row)
            assert_close(g[keep], wg.grad(f)(row[keep]), rtol=1e-12, atol=1e-15)
            assert numpy.all(g[~keep] == 0)


def test_nan_order_statistics_in_closed_form():
    v = numpy.array([3.0, numpy.nan, 1.0, 4.0, numpy.nan, 1.5, 9.0])
    assert wg.grad(np.nanmedian)(v).tolist() == [1.0, 0, 0, 0, 0, 0, 0]      # 3 of 1,1.5,3,4,9
    assert wg.grad(np.nanmedian)(v[:6]).tolist() == [0.5, 0, 0, 0, 0, 0.5]   # (1.5 + 3)/2
    # nanquantile 'linear': q(n-1) = 0.3·4 = 1.2 between the sorted 1.5 and 3.0
    assert wg.grad(lambda v: np.nanquantile(v, 0.3))(v) == pytest.approx(
        [0.2, 0, 0, 0, 0, 0.8, 0])
    assert wg.grad(lambda v: np.nanpercentile(v, 100))(v).tolist() == [0, 0, 0, 0, 0, 0, 1.0]
    # nanvar's: 2(x - mean)/(n - ddof) at the numbers
    keep = ~numpy.isnan(v)
    g = wg.grad(lambda v: np.nanvar(v, ddof=1))(v)
    assert_close(g[keep], 2 * (v[keep] - v[keep].mean()) / (keep.sum() - 1), rtol=1e-14)


def test_all_nan_slices_are_nan_with_numpys_warning_and_send_no_derivative():
    x = numpy.array([[1.0, numpy.nan, 3.0], [numpy.nan] * 3])
    cases = [(np.nanmedian, "All-NaN slice"), (lambda t, a: np.nanquantile(t, 0.4, a),
                                              "All-NaN slice"),
             (lambda t, a: np.nanpercentile(t, [10, 90], a)[1], "All-NaN slice"),
             (np.nanvar, "Degrees of freedom"), (np.nanstd, "Degrees of freedom")]
    for f, message in cases:
        with pytest.warns(RuntimeWarning, match=message):
            out = value(lambda t: f(t, 1), x)
        assert numpy.isnan(out[1]) and not numpy.isnan(out[0]), f
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            g = wg.grad(lambda t: np.sum(np.nan_to_num(f(t, 1))))(x)
            numpy_out = numpy.asarray(f(x, 1))
        assert numpy.array_equal(numpy.isnan(numpy_out), numpy.isnan(out))
        assert numpy.all(numpy.isfinite(g)) and g[1].tolist() == [0, 0, 0] and \
            g[0, 1] == 0, f
    # too few numbers for ddof: nan and no derivative, as NumPy
    with pytest.warns(RuntimeWarning, match="Degrees of freedom"):
        assert numpy.isnan(value(lambda t: np.nanvar(t, ddof=2), x[0]))
    # nanargmax of an all-NaN slice is NumPy's ValueError
    for ns in (numpy, np):
        with pytest.raises(ValueError, match="All-NaN slice encountered"):
            wg.grad(lambda t: t[ns.nanargmax(t, axis=1)[0]])(x)
        with pytest.raises(ValueError, match="All-NaN slice encountered"):
            wg.grad(lambda t: t[ns.nanargmin(t)])(x[1])


def test_nanargmax_nanargmin_are_numpys_integers_without_derivative():
    x = with_nans(r(4, 5))
    for name in ("nanargmax", "nanargmin"):
        for kw in ({}, {"axis": 0}, {"axis": -1, "keepdims": True}):
            f = lambda t: getattr(np, name)(t, **kw)
            want = getattr(numpy, name)(x, **kw)
            same(value(f, x), want, name)
            same(wg.compile(f, x)(x), want, name)              # recorded: no value needed
    g = wg.grad(lambda t: t.ravel()[np.nanargmax(t)] * 3)(x)
    assert g.ravel()[numpy.nanargmax(x)] == 3 and numpy.count_nonzero(g) == 1


def test_nan_functions_refuse_what_they_cannot_honour():
    x = with_nans(r(3, 4))
    with pytest.raises(NotImplementedError, match=r"numpy\.nanquantile\(\.\.\., method='lower'"):
        wg.grad(lambda t: np.nanquantile(t, 0.5, method="lower"))(x)
    for ns in (numpy, np):
        with pytest.raises(ValueError, match="'bogus' is not a valid method"):
            wg.grad(lambda t: ns.sum(ns.nanquantile(t, 0.5, method="bogus")))(x)
        with pytest.raises(ValueError, match=r"Percentiles must be in the range \[0, 100\]"):
            wg.grad(lambda t: ns.sum(ns.nanpercentile(t, 101)))(x)
        with pytest.raises(TypeError, match="dtype must be inexact"):
            wg.grad(lambda t: ns.nanvar(t, dtype=int))(x)
    with pytest.raises(NotImplementedError, match=r"nanvar\(\.\.\., out=\.\.\.\)"):
        wg.grad(lambda t: np.nanvar(t, out=numpy.zeros(())))(x)
    with pytest.raises(NotImplementedError, match="weights="):
        wg.grad(lambda t: np.nanquantile(t, 0.5, weights=numpy.ones((3, 4))))(x)
    with pytest.raises(NotImplementedError, match="traced q"):
        wg.grad(lambda t: np.nanquantile(x * t, t))(0.5)
    for f in (np.quantile, np.percentile):          # (checked before NumPy reads q)
        with pytest.raises(NotImplementedError, match=f"numpy.{f.__name__} with traced q"):
            wg.grad(lambda q: np.sum(f(numpy.arange(4.0), q)))(0.5)


def test_nan_statistics_through_numpys_dispatch_vmap_and_compile():
    x = with_nans(r(3, 5))
    f = lambda t: (numpy.nanstd(t, 1) + numpy.nanmedian(t, 1) + numpy.nanprod(t, 1)
                   + numpy.nancumsum(t, 1)[:, -1] + numpy.nanquantile(t, 0.2, 1))
    check_grads(f, x)
    g = lambda t: np.nanvar(t) + np.nanmedian(t) + np.nanpercentile(t, 70)
    assert_close(wg.vmap(g)(x), [g(row) for row in x], rtol=1e-13)
    assert_close(wg.vmap(wg.grad(g))(x), [wg.grad(g)(row) for row in x], rtol=1e-13)
    assert_close(wg.compile(wg.grad(g), x[0])(x[1]), wg.grad(g)(x[1]), rtol=1e-13)
    # a where given as a list, as NumPy takes it
    where = [True, False, True, True, True]
    same(value(lambda t: np.nanvar(t, 1, where=where), x), numpy.nanvar(x, 1, where=where),
         exact=False)
    # integer arrays hold no NaN: the plain statistics
    i = numpy.arange(12).reshape(3, 4)
    for name in ("nanmedian", "nanvar", "nanstd"):
        same(value(lambda t: getattr(np, name)(t.astype(int), 1), i * 1.0),
             getattr(numpy, name)(i, 1), name, exact=False)
    same(value(lambda t: np.nanquantile(t.astype(int), 0.3, 1), i * 1.0),
         numpy.nanquantile(i, 0.3, 1), exact=False)


# ---- elementwise: a float's parts and neighbours, i0, unwrap, sort_complex, ranges ---------
def test_float_parts_give_numpys_values_and_dtypes():
    x = numpy.array([-7.5, -3.0, -0.5, -0.0, 0.0, 0.25, 2.75, 1e300, 5e-324,
                     numpy.inf, -numpy.inf, numpy.nan])
    y = numpy.array([2.0, -2.0, 0.3, 1.0, -1.0, 0.1, 0.5, 3.0, 1.0, 2.0, 1.0, 1.0])
    with numpy.errstate(over="ignore"):                   # (1e300 is inf in float32)
        x32 = x.astype(numpy.float32)
    for v in (x, x32, numpy.arange(-3, 9)):
        w = y.astype(v.dtype) if v.dtype.kind == "f" else numpy.arange(1, 13)
        with numpy.errstate(all="ignore"):
            for name in ("modf", "frexp", "spacing", "i0"):
                if name == "i0" and v.dtype.kind == "f":
                    v = numpy.where(numpy.isfinite(v) & (abs(v) < 700), v, 1.0).astype(v.dtype)
                f = getattr(np, name)
                want = getattr(numpy, name)(v)
                for got in (value(f, v), wg.trace(f, v)(v), wg.compile(f, v)(v),
                            wg.trace(getattr(numpy, name), v)(v)):
                    same(got, want, name)
                    if name == "modf":          # the signs of zeros too
                        assert numpy.array_equal(numpy.signbit(got), numpy.signbit(want))
            for name in ("divmod", "floor_divide", "nextafter", "remainder"):
                f = getattr(np, name)
                want = getattr(numpy, name)(v, w)
                for got in (value(f, v, w), wg.trace(f, v, w)(v, w),
                            wg.compile(f, v, w)(v, w)):
                    same(got, want, name)
            # Python's operators on traced values
            same(value(lambda a, b: (a // b, divmod(a, b)), v, w),
                 (v // w, divmod(v, w)), "// divmod")
    assert numpy.floor_divide(1.0, 0.1) == 9.0 and value(np.floor_divide, 1.0, 0.1) == 9.0
    same(value(lambda b: np.floor_divide(b, b), numpy.array([True])),
         numpy.floor_divide(numpy.array([True]), numpy.array([True])))
    for name in ("modf", "frexp", "spacing", "floor_divide", "i0"):
        with pytest.raises(TypeError):
            wg.vjp(lambda z: getattr(np, name)(*([z] * (2 if name == "floor_divide" else 1))),
                   numpy.array([1 + 1j]))


def test_ufunc_examples_run():
    # (the doctest finder does not look into the docstrings of ufunc objects)
    import doctest
    for name in ("floor_divide", "divmod", "modf", "frexp", "spacing", "nextafter"):
        test = doctest.DocTestParser().get_doctest(getattr(np, name).__doc__, {}, name, None, 0)
        result = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE).run(test)
        assert result.attempted >= 2 and result.failed == 0, name


def test_float_parts_derivatives():
    x = numpy.array([-7.3, -0.4, 0.3, 2.7, 40.0, 1e-3, -3e5])
    assert wg.grad(lambda a: np.sum(np.modf(a)[0]))(x).tolist() == [1.0] * 7
    assert wg.grad(lambda a: np.sum(np.modf(a)[1]))(x).tolist() == [0.0] * 7
    m, e = numpy.frexp(x)
    assert wg.grad(lambda a: np.sum(np.frexp(a)[0]))(x).tolist() == (2.0 ** -e).tolist()
    assert wg.grad(lambda a: np.sum(np.frexp(a)[0]))(numpy.array([0.0, numpy.inf])).tolist() \
        == [1.0, 1.0]
    g = wg.grad(lambda a: np.sum(np.frexp(a)[0]))(x.astype(numpy.float32))
    assert g.dtype == numpy.float32
    assert wg.grad(lambda a: np.sum(np.spacing(a) + np.floor_divide(a, 0.7)))(x).tolist() \
        == [0.0] * 7
    gx, gy = wg.grad(lambda a, b: np.sum(np.divmod(a, b)[1]), argnums=(0, 1))(x, 0.7)
    assert gx.tolist() == [1.0] * 7 and gy == -numpy.sum(x // 0.7)
    for f in (lambda a: np.modf(a)[0] * np.frexp(a)[0], lambda a: np.divmod(a, 0.9)[1] ** 2,
              lambda a: np.sin(a) * np.floor_divide(a, 0.9)):
        check_grads(f, numpy.array([-2.3, 0.6, 3.3]))
        check_grads(f, numpy.array([[1.3, -0.55], [5.1, 9.2]]))
    # nextafter: values anywhere, a derivative nowhere (as JAX)
    for ns in (numpy, np):
        with pytest.raises(NotImplementedError, match="nextafter has no derivative rule"):
            wg.grad(lambda a: ns.sum(ns.nextafter(a, 2.0)))(x)
        with pytest.raises(NotImplementedError, match="nextafter has no derivative rule"):
            wg.jvp(lambda a: ns.nextafter(1.0, a), (2.0,), (1.0,))
    g = wg.grad(lambda a: np.sum(a * np.nextafter(wg.stop_gradient(a), numpy.inf)))(x)
    assert g.tolist() == numpy.nextafter(x, numpy.inf).tolist()
    assert wg.vmap(lambda a: np.nextafter(a, 0.0))(x).tolist() == \
        numpy.nextafter(x, 0.0).tolist()


def test_taylor_series_of_the_float_parts():
    # between the jumps modf's fraction is x - n and frexp's mantissa x/2**e: linear
    assert wg.taylor(lambda x: np.modf(x)[0] ** 2, 1.25, 1.0, order=3) == \
        pytest.approx([0.0625, 0.5, 1.0, 0.0])
    assert wg.taylor(lambda x: np.frexp(x)[0], 3.0, 1.0, order=3) == [0.75, 0.25, 0.0, 0.0]
    assert wg.taylor(lambda x: x // 0.5 + np.spacing(x), 1.3, 1.0, order=2)[1:] == [0.0, 0.0]
    assert wg.taylor(np.i0, 1.0, 1.0, order=1)[1] == pytest.approx(SP.i1_numpy(1.0))
    # above order 1: i0'' = i1' = i0 - i1/x, at x = 1
    c2 = wg.taylor(np.i0, 1.0, 1.0, order=2)[2]
    assert c2 == pytest.approx((numpy.i0(1.0) - SP.i1_numpy(1.0)) / 2, rel=1e-12)


def test_i0_derivatives_are_i1_and_its_derivative():
    import scipy.special
    x = numpy.array([-30.0, -4.0, -0.3, 0.0, 1e-8, 0.7, 6.0, 9.5, 300.0])
    assert_close(wg.grad(lambda a: np.sum(np.i0(a)))(x), scipy.special.i1(x), rtol=1e-14)
    h = wg.grad(lambda a: np.sum(wg.grad(lambda b: np.sum(np.i0(b)))(a)))(x)
    assert_close(h, scipy.special.i0(x) - numpy.where(x == 0, -0.5 + scipy.special.i0(0.0),
                                                      scipy.special.i1(x) / numpy.where(
                                                          x == 0, 1, x)), rtol=1e-13)
    check_grads(np.i0, r(2, 3) * 3)
    check_grads(lambda a: np.i0(a) ** 2 / np.i0(2 * a), r(4))
    # wengert's own I₁, used without SciPy, against SciPy's
    t = numpy.concatenate([numpy.linspace(-30, 30, 6001), numpy.geomspace(1e-300, 700, 500)])
    assert_close(SP.i1_numpy(t), scipy.special.i1(t), rtol=3e-15, atol=0)
    assert SP.i1_numpy(numpy.float32([1.5])).dtype == numpy.float32
    g = wg.grad(lambda a: np.sum(np.i0(a)))(numpy.float32([1.0, 2.0]))
    assert g.dtype == numpy.float32


def test_unwrap_values_and_derivatives():
    phase = numpy.cumsum(r(3, 9) * 2.5, axis=-1)
    wrapped = numpy.angle(numpy.exp(1j * phase))
    for kw in ({}, {"axis": 0}, {"discont": 4.0}, {"period": 5.0}, {"period": 5.0,
                                                                      "discont": 1.0}):
        f = lambda p: np.unwrap(p, **kw)
        same(value(f, wrapped), numpy.unwrap(wrapped, **kw), str(kw), exact=False)
        assert_close(wg.jacrev(lambda p: np.sum(f(p) ** 2) / 2)(wrapped), value(f, wrapped),
                     rtol=1e-13)
        check_grads(f, wrapped)
        if "axis" not in kw:
            check_grads(f, wrapped[0])
    # a traced period: each corrected element gets its multiple of the period
    g = wg.grad(lambda t: np.sum(np.unwrap(wrapped[0], period=t)))(2 * numpy.pi)
    want = numpy.sum((numpy.unwrap(wrapped[0]) - wrapped[0]) / (2 * numpy.pi))
    assert g == pytest.approx(want, abs=1e-9)
    i = numpy.array([0, 3, 7, 1, 9, 2])
    same(value(lambda p: np.unwrap(p.astype(int), period=6), i * 1.0),
         numpy.unwrap(i, period=6))
    same(wg.trace(lambda p: np.unwrap(p), wrapped)(wrapped), numpy.unwrap(wrapped),
         exact=False)


def test_sort_complex():
    z = numpy.array([2 + 1j, 1 + 3j, 1 - 2j, numpy.nan + 0j, 2 + 0j, 1 + numpy.nan * 1j])
    for a in (z, z.astype(numpy.complex64), numpy.array([3.0, -1.0, 2.0]),
              numpy.array([3, 1, 2], numpy.int16), numpy.float32([2.0, 1.0])):
        same(value(np.sort_complex, a), numpy.sort_complex(a), str(a.dtype))
        same(wg.trace(np.sort_complex, a)(a), numpy.sort_complex(a), str(a.dtype))
    x = r(5)
    check_grads(lambda a: np.real(np.sort_complex(a)), x)
    from fd import check_complex_grads
    check_complex_grads(lambda a: np.sort_complex(a) ** 2, r(5) + 1j * r(5))


def test_logspace_and_geomspace():
    a, b, base = r(3), r(3), numpy.abs(r(3)) + 0.5
    cases = {
        "logspace": lambda s, t: np.logspace(s, t, 5),
        "logspace axis": lambda s, t: np.logspace(s, t, 4, endpoint=False, axis=-1),
        "logspace base": lambda s, t: np.logspace(s[0], t[0], 6, base=2.5),
        "logspace base array": lambda s, t: np.logspace(s, t, 3, base=base, axis=1),
        "geomspace": lambda s, t: np.geomspace(s ** 2 + 0.5, t ** 2 + 1, 5),
        "geomspace negative": lambda s, t: np.geomspace(-(s ** 2) - 0.1, -(t ** 2) - 2, 4,
                                                        axis=-1),
        "geomspace no endpoint": lambda s, t: np.geomspace(s[0] ** 2 + 1, 3.0, 4,
                                                           endpoint=False),
        "geomspace one": lambda s, t: np.geomspace(s ** 2 + 1, t ** 2 + 1, 1),
    }
    for name, f in cases.items():
        same(value(f, a, b), f(a, b), name, exact=False)
        check_grads(f, a, b)
    # the ends are start and stop themselves (derivative 1), as NumPy makes them
    j = wg.jacrev(lambda s: np.geomspace(s, 5.0, 3))(2.0)
    assert j[0] == 1.0 and j[-1] == 0.0
    check_grads(lambda c: np.logspace(0.0, 1.0, 4, base=c), 3.0)
    same(value(lambda s: np.logspace(s, 2.0, 3, dtype=int), 0.0),
         numpy.logspace(0.0, 2.0, 3, dtype=int))
    same(value(lambda s: np.geomspace(s, 8.0, 4, dtype=numpy.float32), 1.0),
         numpy.geomspace(1.0, 8.0, 4, dtype=numpy.float32))
    with pytest.raises(ValueError, match="cannot include zero"):
        wg.grad(lambda s: np.sum(np.geomspace(s, 1.0, 3)))(0.0)
    same(wg.compile(lambda s, t: np.geomspace(s, t, 4), 1.0, 2.0)(1.0, 8.0),
         numpy.geomspace(1.0, 8.0, 4), exact=False)


# ---- polynomials ----------------------------------------------------------------------------
POLY_CASES = {
    "poly": (np.poly, [r(4)]),
    "poly matrix": (lambda a: np.real(np.poly(a)), [r(3, 3) + numpy.diag([0.0, 3.0, 6.0])]),
    "polyadd": (np.polyadd, [r(2), r(4)]),
    "polyadd longer first": (np.polyadd, [r(5), r(3)]),
    "polysub": (np.polysub, [r(3), r(3)]),
    "polymul": (np.polymul, [r(3), r(4)]),
    "polydiv": (np.polydiv, [r(6), r(3)]),
    "polydiv short": (np.polydiv, [r(2), r(3)]),
    "polyder": (np.polyder, [r(5)]),
    "polyder 3": (lambda p: np.polyder(p, 3), [r(5)]),
    "polyint": (np.polyint, [r(4)]),
    "polyint k": (lambda p, k: np.polyint(p, 3, k), [r(3), r(3)]),
    "polyint one k": (lambda p, k: np.polyint(p, 2, k[0]), [r(3), r(1)]),
    "polyval": (np.polyval, [r(4), r(3, 2)]),
    "polyfit": (lambda x, y: np.polyfit(x, y, 2), [r(8), r(8)]),
    "polyfit 2-d y w": (lambda x, y, w: np.polyfit(x, y, 3, w=w), [r(9), r(9, 2),
                                                                  numpy.abs(r(9)) + 0.5]),
    "polyfit full": (lambda x, y: np.polyfit(x, y, 1, full=True)[:2]
                     + (np.polyfit(x, y, 1, full=True)[3],), [r(7), r(7)]),
    "polyfit cov": (lambda x, y: np.polyfit(x, y, 2, cov=True), [r(9), r(9)]),
    "polyfit cov unscaled": (lambda x, y, w: np.polyfit(x, y, 1, w=w, cov="unscaled"),
                             [r(6), r(6, 2), numpy.abs(r(6)) + 0.5]),
    "roots": (np.roots, [numpy.poly([0.5, -1.2, 2.0, 3.1])]),
    # (zero coefficients are stripped, so the finite differences keep them zero)
    "roots trailing zeros": (lambda p: np.roots(np.concatenate([p, numpy.zeros(2)])),
                             [numpy.array([2.0, -3.0, 0.5])]),
    "roots complex": (lambda p: (np.real(np.roots(p)), np.imag(np.roots(p))),
                      [numpy.array([1.0, 0.4, 2.0, 0.3])]),
    "vander": (lambda x: np.vander(x, 4), [r(3)]),
}


@pytest.mark.parametrize("name", POLY_CASES)
def test_polynomials_derivatives_and_values(name):
    f, args = POLY_CASES[name]
    same(value(f, *args), f(*args), name, exact=name.startswith(("polyadd", "polysub",
                                                                 "polyder", "polyint",
                                                                 "polydiv", "poly ")))
    check_grads(f, *args, rtol=1e-5 if "fit" not in name else 1e-4)


def test_polynomial_values_are_numpys_bit_for_bit():
    p, q = r(5), r(3)
    for f, args in ((np.poly, (p,)), (np.polydiv, (p, q)), (np.polyadd, (p, q)),
                    (np.polysub, (q, p)), (lambda a: np.polyder(a, 2), (p,)),
                    (lambda a, k: np.polyint(a, 2, k), (p, q[:2]))):
        same(value(f, *args), f(*args))
    # float32 and integer coefficients keep NumPy's dtypes
    for c in (p.astype(numpy.float32), numpy.arange(1, 5)):
        for f in (np.poly, np.polyder, np.polyint, lambda a: np.polymul(a, a),
                  lambda a: np.polyadd(a, a[:2])):
            same(value(lambda t: f(t.astype(c.dtype)), c * 1.0), f(c), exact=False)


def test_polyder_of_polyint_is_the_identity():
    p, k = r(5), r(2)
    same(value(lambda a, c: np.polyder(np.polyint(a, 2, c), 2), p, k), p, exact=False)
    jp, jk = wg.jacrev(lambda a, c: np.polyder(np.polyint(a, 2, c), 2), argnums=(0, 1))(p, k)
    assert_close(jp, numpy.eye(5), rtol=1e-14, atol=1e-15)
    assert numpy.all(jk == 0)
    # and polyint's derivative in k: the constants are the last coefficients
    jk = wg.jacrev(lambda c: np.polyint(p, 2, c))(k)
    assert jk[-2:].tolist() == [[1.0, 0.0], [0.0, 1.0]] and numpy.all(jk[:-2] == 0)


def test_polyfit_recovers_exact_polynomials_and_its_derivative_is_the_pseudo_inverse():
    x = numpy.linspace(-1.0, 2.0, 9)
    coefficients = numpy.array([0.5, -1.0, 2.0, 3.0])
    y = numpy.polyval(coefficients, x)
    assert_close(value(lambda t: np.polyfit(x, t, 3), y), coefficients, rtol=1e-12,
                 atol=1e-12)
    jy = wg.jacrev(lambda t: np.polyfit(x, t, 3))(y)
    assert_close(jy, numpy.linalg.pinv(numpy.vander(x, 4)), rtol=1e-10, atol=1e-12)
    # exact data: the coefficients do not depend on where the points are, nor on weights
    jx, jw = wg.jacrev(lambda s, w: np.polyfit(s, np.polyval(coefficients, s), 3, w=w),
                       argnums=(0, 1))(x, numpy.ones(9))
    assert_close(jx, numpy.zeros((4, 9)), atol=1e-10)
    assert_close(jw, numpy.zeros((4, 9)), atol=1e-10)
    # too few points: NumPy's RankWarning, as NumPy
    with pytest.warns(numpy.exceptions.RankWarning):
        value(lambda t: np.polyfit(x[:2], t, 3), y[:2])
    with pytest.raises(NotImplementedError, match="traced rcond"):
        wg.grad(lambda c: np.sum(np.polyfit(x, y, 1, rcond=c)))(1e-10)
    with pytest.raises(ValueError, match="must exceed order"):
        wg.grad(lambda t: np.sum(np.polyfit(x[:3], t, 2, cov=True)[1]))(y[:3])


def test_roots_and_poly_in_closed_form():
    # a simple root z of p moves by -(dp/dc_k)(z)/p'(z) = -z^(n-k)/p'(z)
    zs = numpy.array([3.0, -1.0, 0.5])
    p = numpy.poly(zs)
    g = wg.jacrev(np.roots)(p)
    for i, z in enumerate(numpy.roots(p)):
        assert_close(g[i], -z ** numpy.arange(3, -1, -1) / numpy.polyval(numpy.polyder(p), z),
                     rtol=1e-10)
    # poly's derivative in a zero: -(the other factors' product)
    j = wg.jacrev(np.poly)(zs)
    assert_close(j[:, 0], -numpy.concatenate([[0.0], numpy.poly(zs[1:])]), rtol=1e-14)
    # all-zero and constant polynomials, as NumPy
    same(value(np.roots, numpy.zeros(3)), numpy.roots(numpy.zeros(3)))
    same(value(np.roots, numpy.array([0.0, 2.0])), numpy.roots([0.0, 2.0]))
    same(value(np.poly, numpy.zeros(0)), numpy.poly(numpy.zeros(0)))
    # leading zeros are dropped by polymul, as poly1d drops them
    a = numpy.array([0.0, 0.0, 1.0, 2.0])
    same(value(np.polymul, a, a[::-1]), numpy.polymul(a, a[::-1]), exact=False)
    with pytest.raises(NotImplementedError, match="poly1d"):
        wg.grad(lambda t: np.sum(np.polyadd(numpy.poly1d([1.0, 2.0]), t)))(r(2))


def test_polynomials_needing_values_refuse_tracing_without_them():
    for f in (np.roots, lambda p: np.polymul(p, p), lambda p: np.polydiv(p, p[:2])[1],
              lambda p: np.polyfit(p, p, 1)):
        with pytest.raises(wg.ConcretizationError):
            wg.trace(f, r(4))
    # the others trace without values
    for f in (np.poly, lambda p: np.polyadd(p, p[:2]), lambda p: np.polyint(np.polyder(p)),
              lambda p: np.polyval(p, p)):
        p = r(4)
        same(wg.compile(f, p)(p), f(p), exact=False)


# ---- integer- and bool-valued functions of traced values -------------------------------------
def _integer_cases(x, y):
    xs, b = numpy.sort(x), numpy.round(x * 2)
    return {
        "searchsorted": (lambda a, v: np.searchsorted(a, v), (xs, y)),
        "searchsorted right sorter": (lambda a, v: np.searchsorted(
            a, v, "right", sorter=numpy.argsort(x)), (x, y)),
        "searchsorted traced sorter": (lambda a, v: np.searchsorted(
            a, v, sorter=np.argsort(a)), (x, y)),
        "searchsorted scalar": (lambda a: np.searchsorted(a, 0.1), (xs,)),
        "digitize": (lambda v: np.digitize(v, [-1.0, 0.0, 0.5, 1.0]), (y,)),
        "digitize right decreasing": (lambda v: np.digitize(v, [1.0, 0.0, -1.0], True), (y,)),
        "digitize traced bins": (lambda v, e: np.digitize(v, e), (y, xs)),
        "lexsort": (lambda a, c: np.lexsort((a, c)), (b[:5], numpy.round(y))),
        "lexsort 2-d keys": (lambda a: np.lexsort(np.round(a.reshape(2, -1))), (x[:6],)),
        "lexsort axis": (lambda a: np.lexsort((np.round(a), -a), axis=0),
                         (x.reshape(2, -1),)),
        "isin": (lambda a, t: np.isin(a, t), (b, b[:3])),
        "isin invert": (lambda a: np.isin(a, [0.0, 1.0, numpy.nan], invert=True), (b,)),
        "isin complex": (lambda a: np.isin(a * 1j, [1j, 0j]), (b,)),
        "isin empty": (lambda a: np.isin(a, []), (b,)),
        "isin integer": (lambda a: np.isin(a.astype(int), numpy.array([0, 2]),
                                           kind="table"), (b,)),
        "bincount": (lambda a: np.bincount(np.abs(a).astype(int), minlength=9), (b,)),
        "unique": (lambda a: np.unique(a, return_index=True, return_inverse=True,
                                       return_counts=True)[1:], (b,)),
        "unique axis": (lambda a: np.unique(a.reshape(-1, 2), return_inverse=True,
                                            axis=0)[1], (numpy.round(x) * 0,)),
        "unique_inverse": (lambda a: np.unique_inverse(a).inverse_indices, (b,)),
        "unique_counts": (lambda a: np.unique_counts(a).counts, (b,)),
        "unique_all": (lambda a: tuple(np.unique_all(a))[1:], (b,)),
        "unravel_index": (lambda a: np.unravel_index(np.argmax(a), (2, 2, 3)), (x[:12],)),
        "ravel_multi_index": (lambda a: np.ravel_multi_index(
            (np.argmax(a.reshape(3, 4), 0) % 2, np.argmin(a.reshape(3, 4), 0)), (2, 4)),
            (x[:12],)),
        "ravel_multi_index wrap F": (lambda a: np.ravel_multi_index(
            (np.round(a).astype(int), np.round(a * 3).astype(int)), (3, 4), mode="wrap",
            order="F"), (x,)),
        "ravel_multi_index clip wrap": (lambda a: np.ravel_multi_index(
            (np.round(a).astype(int), np.round(a * 3).astype(int)), (3, 4),
            mode=("clip", "wrap")), (x,)),
        "histogram counts": (lambda a: np.histogram(a)[0], (x,)),
        "histogram counts edges": (lambda a: np.histogram(a, [-1.0, 0.0, 0.3, 2.0])[0], (x,)),
        "isposinf isneginf": (lambda a: (np.isposinf(a / b), np.isneginf(a / b)), (x,)),
        "iscomplex isreal": (lambda a: (np.iscomplex(a), np.isreal(a),
                                        np.iscomplex(a + 1j * np.round(a)),
                                        np.isreal(a + 1j * np.round(a))), (x,)),
        "nanargmax": (lambda a: np.nanargmax(np.where(a > 1.0, numpy.nan, a)), (x,)),
    }


def test_integer_valued_functions_give_numpys_results_on_traced_values():
    x, y = r(12), r(5)
    with numpy.errstate(all="ignore"):
        for name, (f, args) in _integer_cases(x, y).items():
            want = f(*args)                         # NumPy's, on plain values
            same(value(f, *args), want, name)
            # and a function differentiated through them gets the derivative of the rest
            g = wg.grad(lambda *a: np.sum(a[0] ** 2) + 0 * np.sum(
                np.asarray(wg.tree.flatten(f(*a))[0][0]) * 1.0))(*args)
            assert_close(g, 2 * args[0])
            # NumPy's own function dispatches to ours
            if name in ("searchsorted", "digitize", "isin", "lexsort", "bincount"):
                npf = {"searchsorted": lambda a, v: numpy.searchsorted(a, v),
                       "digitize": lambda v: numpy.digitize(v, [-1.0, 0.0, 0.5, 1.0]),
                       "isin": lambda a, t: numpy.isin(a, t),
                       "lexsort": lambda a, c: numpy.lexsort((a, c)),
                       "bincount": lambda a: numpy.bincount(np.abs(a).astype(int))}[name]
                same(value(npf, *args), npf(*args), name)


RECORDED = ["searchsorted", "searchsorted right sorter", "searchsorted traced sorter",
            "searchsorted scalar", "digitize", "digitize right decreasing", "lexsort",
            "lexsort 2-d keys", "lexsort axis", "isin", "isin invert", "isin complex",
            "isin empty", "isin integer", "ravel_multi_index wrap F",
            "ravel_multi_index clip wrap", "histogram counts", "histogram counts edges",
            "isposinf isneginf", "iscomplex isreal", "nanargmax"]


def test_integer_valued_functions_trace_without_values_or_say_why_not():
    x, y = r(12), r(5)
    cases = _integer_cases(x, y)
    with numpy.errstate(all="ignore"):
        for name in RECORDED:
            f, args = cases[name]
            same(wg.trace(f, *args)(*args), f(*args), name)
            other = tuple(a[::-1] * 1.5 for a in args)        # new values, same graph
            same(wg.compile(f, *args)(*other), f(*other), name)
        for name in set(cases) - set(RECORDED):
            f, args = cases[name]
            with pytest.raises(wg.ConcretizationError):
                wg.trace(f, *args)


def test_integer_valued_functions_under_vmap():
    a, vs = numpy.sort(r(6)), r(4, 3)
    assert wg.vmap(lambda v: np.searchsorted(a, v))(vs).tolist() == \
        numpy.searchsorted(a, vs).tolist()
    tables = numpy.sort(r(4, 6), axis=1)                      # (one call per example)
    assert wg.vmap(np.searchsorted)(tables, vs).tolist() == \
        [numpy.searchsorted(t, v).tolist() for t, v in zip(tables, vs)]
    keys = numpy.round(r(4, 2, 5))
    assert wg.vmap(np.lexsort)(keys).tolist() == [numpy.lexsort(k).tolist() for k in keys]
    t = numpy.round(r(3))
    assert wg.vmap(lambda e: np.isin(e, t))(numpy.round(vs)).tolist() == \
        numpy.isin(numpy.round(vs), t).tolist()


# ---- weights, gathers and edges: what flows differentiably through them -------------------
def test_bincount_weights_are_a_scatter_add():
    x = numpy.array([0, 3, 3, 1, 0, 3])
    w = r(6)
    for kw in ({}, {"minlength": 7}):
        same(value(lambda v: np.bincount(x, v, **kw), w), numpy.bincount(x, w, **kw))
        check_grads(lambda v: np.bincount(x, v, **kw), w)
    ct = r(4)
    assert_close(wg.vjp(lambda v: np.bincount(x, v), w)[1](ct)[0], ct[x], rtol=0, atol=0)
    same(value(lambda v: np.bincount(x, v.astype(numpy.float32)), w),
         numpy.bincount(x, w.astype(numpy.float32)))
    # traced indices: NumPy's counts of their values
    same(value(lambda i, v: np.bincount(i.astype(int), v), x * 1.0, w), numpy.bincount(x, w))
    # with the indices a constant it compiles, and vmaps over the weights
    f = lambda v: np.bincount(x, v) ** 2
    assert_close(wg.compile(f, w)(w + 1), f(w + 1), rtol=1e-15)
    ws = r(3, 6)
    assert_close(wg.vmap(wg.grad(lambda v: np.sum(f(v))))(ws),
                 [2 * numpy.bincount(x, v)[x] for v in ws], rtol=1e-14)
    for ns in (numpy, np):
        with pytest.raises(ValueError, match="same length"):
            wg.grad(lambda v: ns.sum(ns.bincount(x, v)))(w[:3])
    with pytest.raises(wg.ConcretizationError):
        wg.trace(lambda i: np.bincount(i), numpy.array([1, 2]))


HIST_CASES = {
    "weights": lambda a, w: np.histogram(a, 5, weights=w),
    "weights range": lambda a, w: np.histogram(a, 4, (-1.0, 1.5), weights=w)[0],
    "weights edges": lambda a, w: np.histogram(a, [-3.0, -0.5, 0.2, 0.4, 3.0], weights=w)[0],
    "density": lambda a, w: np.histogram(a, 6, density=True),
    "density range": lambda a, w: np.histogram(a, 6, (-2.0, 3.0), density=True)[0],
    "density weights edges": lambda a, w: np.histogram(a, [-3.0, 0.0, 0.1, 3.0],
                                                       weights=w, density=True)[0],
    "edges from the data": lambda a, w: np.histogram(a, 3)[1],
    "2-d weights": lambda a, w: np.histogram2d(a, a[::-1], 3, weights=w),
    "2-d density edges": lambda a, w: np.histogram2d(a, w, [3, [-3.0, 0.0, 3.0]],
                                                     density=True),
    "dd": lambda a, w: np.histogramdd(a.reshape(-1, 2), (2, 3),
                                      weights=w[:a.shape[0] // 2]),
    "dd density": lambda a, w: np.histogramdd([a, w, a * w], 2, density=True),
    "dd range": lambda a, w: np.histogramdd(a.reshape(-1, 3), 2, [(-1, 1), None, (0, 2)],
                                            weights=w[:a.shape[0] // 3])[0],
}


@pytest.mark.parametrize("name", HIST_CASES)
def test_histograms_weights_edges_and_density(name):
    f = HIST_CASES[name]
    a, w = r(12), r(12)
    same(value(f, a, w), f(a, w), name, exact="density" not in name)
    check_grads(f, a, w)
    same(wg.compile(f, a, w)(a * 1.5, w), f(a * 1.5, w), name, exact=False)


def test_histogram_derivatives_in_closed_form():
    a = numpy.array([0.1, 0.5, 0.55, 0.9, 2.0])
    w = r(5)
    # a bin's weighted count: the weights of its values
    j = wg.jacrev(lambda v: np.histogram(a, 2, (0, 1), weights=v)[0])(w)
    assert j.tolist() == [[1, 0, 0, 0, 0], [0, 1, 1, 1, 0]]
    j = wg.jacrev(lambda v: np.histogram(a, [0.0, 0.52, 3.0], weights=v)[0])(w)
    assert j.tolist() == [[1, 1, 0, 0, 0], [0, 0, 1, 1, 1]]
    # the edges follow the smallest and largest values
    je = wg.jacrev(lambda t: np.histogram(t, 4)[1])(a)
    s = numpy.linspace(0, 1, 5)
    assert_close(je[:, 0], 1 - s, rtol=1e-14, atol=1e-15)
    assert_close(je[:, -1], s, rtol=1e-14, atol=1e-15)
    assert numpy.all(je[:, 1:-1] == 0)
    # counts themselves have no derivative
    assert numpy.all(wg.jacrev(lambda t: np.histogram(t, 3, (0, 2))[0] * 1.0)(a) == 0)
    # equal values: the range widened by 1/2 each way, as NumPy
    same(value(lambda t: np.histogram(t, 2), numpy.ones(3)), numpy.histogram(numpy.ones(3), 2))
    same(value(lambda t: np.histogram(t, "auto"), a), numpy.histogram(a, "auto"))
    for ns in (numpy, np):
        with pytest.raises(ValueError, match="autodetected range of"):
            wg.grad(lambda t: ns.sum(ns.histogram(t, 2)[1]))(numpy.array([1.0, numpy.inf]))
        with pytest.raises(ValueError, match="must increase monotonically"):
            wg.grad(lambda t: ns.sum(ns.histogram(a, t)[0] * 1.0))(numpy.array([1.0, 0.0]))
        with pytest.raises(ValueError, match="same shape"):
            wg.grad(lambda v: ns.sum(ns.histogram(a, 2, weights=v)[0]))(w[:3])
        with pytest.raises(TypeError, match="not supported for weighted data"):
            wg.grad(lambda v: ns.sum(ns.histogram(a, "auto", weights=v)[0]))(w)


def test_unique_values_are_a_gather_of_the_first_occurrences():
    x = numpy.array([2.0, 1.0, 2.0, numpy.nan, 3.0, 1.0, numpy.nan])
    for kw in ({}, {"return_index": True}, {"return_counts": True, "return_inverse": True},
               {"equal_nan": False}, {"sorted": False}):
        same(value(lambda t: np.unique(t, **kw), x), numpy.unique(x, **kw), str(kw))
    for name in ("unique_all", "unique_counts", "unique_inverse", "unique_values"):
        same(value(getattr(np, name), x), getattr(numpy, name)(x), name)
    g = wg.grad(lambda t: np.sum(np.nan_to_num(np.unique(t)) ** 2))(x)
    assert g.tolist() == [4.0, 2.0, 0.0, 0.0, 6.0, 0.0, 0.0]
    for name in ("unique_all", "unique_counts", "unique_inverse"):
        g = wg.grad(lambda t: np.sum(np.nan_to_num(getattr(np, name)(t).values) * 3))(x)
        assert g.tolist() == [3.0, 3.0, 0.0, 0.0, 3.0, 0.0, 0.0], name
    m = numpy.array([[1.0, 2.0], [0.5, 1.0], [1.0, 2.0]])
    same(value(lambda t: np.unique(t, axis=0), m), numpy.unique(m, axis=0))
    assert wg.grad(lambda t: np.sum(np.unique(t, axis=0)[1]))(m).tolist() == \
        [[1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]
    check_grads(lambda t: np.unique(t), r(6))
    check_grads(lambda t: np.unique(numpy.array([[1.0, 0.0], [1.0, 0.0]]) @ t, axis=1)[0],
                r(2, 3))


def test_classification_functions():
    x = numpy.array([-numpy.inf, -1.0, 0.0, numpy.inf, numpy.nan])
    z = numpy.array([1 + 0j, 1j, numpy.nan + 0j])
    for v in (x, x.astype(numpy.float32), numpy.arange(3), z):
        for name in ("iscomplex", "isreal", "isposinf", "isneginf"):
            if v.dtype.kind == "c" and name in ("isposinf", "isneginf"):
                for ns in (numpy, np):
                    with pytest.raises(TypeError, match="would be ambiguous"):
                        value(getattr(ns, name), v)
                continue
            f, want = getattr(np, name), getattr(numpy, name)(v)
            for got in (value(f, v), wg.trace(f, v)(v), wg.trace(getattr(numpy, name), v)(v)):
                same(got, want, name)
    with pytest.raises(NotImplementedError, match=r"out=\.\.\."):
        value(lambda t: np.isposinf(t, out=numpy.zeros(5, bool)), x)


def test_former_notimplemented_example_from_the_issue():
    g = wg.grad(lambda x: np.nanstd(x))(numpy.ones(3) * [1, 2, 3])
    assert_close(g, wg.grad(lambda x: np.std(x))(numpy.array([1.0, 2.0, 3.0])), rtol=1e-15)
    g = wg.grad(lambda x: numpy.nanstd(x))(numpy.array([1.0, numpy.nan, 3.0]))
    assert g.tolist() == [-0.5, 0.0, 0.5]


@pytest.mark.parametrize("name", ["union1d", "intersect1d", "setdiff1d", "setxor1d"])
def test_set_operations_gather_their_values(name):
    """NumPy's values; each is gathered from its first place in ar1, else ar2, so d/dx of
    Σ result² is 2x at those places and 0 elsewhere (a repeat gets none)."""
    x = numpy.array([3.0, 1.0, 2.0, 1.0, 7.5])
    y = numpy.array([[2.0, 5.0], [7.5, 0.5]])
    ours, theirs = getattr(np, name), getattr(numpy, name)
    numpy.testing.assert_array_equal(ours(wg.value(x), y), theirs(x, y))
    gx, gy = wg.grad(lambda x, y: np.sum(ours(x, y) ** 2), argnums=(0, 1))(x, y)
    found = theirs(x, y)
    want_x = numpy.zeros(5)
    want_y = numpy.zeros((2, 2))
    for v in found:
        if v in x:
            k = int(numpy.flatnonzero(x == v)[0])
            want_x[k] = 2 * v
        else:
            want_y[numpy.unravel_index(int(numpy.flatnonzero(y.ravel() == v)[0]), (2, 2))] = 2 * v
    numpy.testing.assert_array_equal(gx, want_x)
    numpy.testing.assert_array_equal(gy, want_y)
    # (central differences where no value of x is one of y's: there the set is smooth)
    check_grads(lambda x: ours(x, y) ** 2, numpy.array([3.0, 1.0, 6.0]), order=2)
    assert ours([1, 2, 3], [2, 4]).tolist() == theirs([1, 2, 3], [2, 4]).tolist()   # plain
    with pytest.raises(wg.ConcretizationError, match=f"numpy.{name}"):
        wg.compile(lambda x: ours(x, y), x)


def test_intersect1d_with_indices_and_nans():
    x, y = numpy.array([4.0, numpy.nan, 1.0, 2.0]), numpy.array([2.0, 4.0, numpy.nan])
    v, i1, i2 = np.intersect1d(x, y, return_indices=True)
    want = numpy.intersect1d(x, y, return_indices=True)
    numpy.testing.assert_array_equal(v, want[0])
    assert i1.tolist() == want[1].tolist() and i2.tolist() == want[2].tolist()
    g = wg.grad(lambda x: np.nansum(np.union1d(x, y) * 3))(x)
    assert g.tolist() == [3.0, 0.0, 3.0, 3.0]                 # (the nan gets none)


def test_histogram_bin_edges():
    a = numpy.random.default_rng(4).normal(size=40)
    for bins, range_ in ((10, None), ("auto", None), ("fd", None), (4, (-1.0, 2.0)),
                         ([-1.0, 0.0, 0.5, 3.0], None)):
        got = wg.jacfwd(lambda a: np.histogram_bin_edges(a, bins, range_))(a)
        want = numpy.histogram_bin_edges(a, bins, range_)
        numpy.testing.assert_allclose(np.histogram_bin_edges(wg.value(a), bins, range_), want)
        if range_ is None and not isinstance(bins, list):
            # equal bins from the smallest to the largest value: edge k moves with them
            k = numpy.arange(len(want)) / (len(want) - 1)
            lo, hi = numpy.argmin(a), numpy.argmax(a)
            numpy.testing.assert_allclose(got[:, lo], 1 - k, atol=1e-15)
            numpy.testing.assert_allclose(got[:, hi], k, atol=1e-15)
            assert not numpy.delete(got, [lo, hi], axis=1).any()
        else:
            assert not got.any()                 # (edges given or a range: constants)
    check_grads(lambda a: np.histogram_bin_edges(a, 5), a[:6], order=2)
    numpy.testing.assert_allclose(wg.compile(lambda a: np.histogram_bin_edges(a, 5), a)(a),
                                  numpy.histogram_bin_edges(a, 5))
    with pytest.raises(wg.ConcretizationError):
        wg.compile(lambda a: np.histogram_bin_edges(a, "auto"), a)
