"""wengert.scipy.optimize.leastsq, SciPy's legacy Levenberg-Marquardt call: the fit
against the normal equations' closed form and central differences (to second order),
cov_x against (JᵀJ)⁻¹, the exact Jacobian MINPACK gets, SciPy's results and warnings."""
import numpy as np
import pytest

import wengert as wg
import wengert.numpy as wnp
from fd import assert_close, check_grads, fd_jacobian

so = pytest.importorskip("scipy.optimize")
from wengert.scipy.optimize import leastsq  # noqa: E402

T = np.linspace(0.0, 2.0, 7)
Y = np.array([1.02, 0.66, 0.46, 0.30, 0.21, 0.13, 0.09])
TIGHT = dict(xtol=1e-14, ftol=1e-14)


def decay(p, y):
    return p[0] * wnp.exp(-p[1] * T) - y


def fit(y):
    return leastsq(decay, [1.0, 1.0], args=(y,), **TIGHT)[0]


def test_a_linear_fit_moves_with_the_data_as_the_pseudo_inverse():
    A = np.stack([np.ones(7), T], axis=1)
    line = lambda y: leastsq(lambda p, y: A @ p - y, [0.0, 0.0], args=(y,), **TIGHT)[0]  # noqa
    assert_close(line(Y), np.linalg.lstsq(A, Y, rcond=None)[0], rtol=1e-10)
    assert_close(wg.jacfwd(line)(Y), np.linalg.pinv(A), rtol=1e-9, atol=1e-12)


def test_a_nonlinear_fit_against_central_differences_to_second_order():
    J = wg.jacfwd(fit)(Y)
    # (MINPACK stops on the sum of squares: x to ~1e-10 here, so a step well above that)
    assert_close(J, fd_jacobian(fit, Y, 1e-4), rtol=1e-5, atol=1e-6)
    assert_close(wg.jacrev(fit)(Y), J, rtol=1e-10, atol=1e-13)
    check_grads(fit, Y, order=2, eps=1e-4, rtol=1e-4, atol=1e-6)


def test_full_output_and_cov_x():
    x, cov_x, info, mesg, ier = leastsq(decay, [1.0, 1.0], args=(Y,), full_output=True)
    theirs = so.leastsq(lambda p: p[0] * np.exp(-p[1] * T) - Y, [1.0, 1.0], full_output=True)
    assert_close(x, theirs[0], rtol=1e-7)
    assert_close(cov_x, theirs[1], rtol=1e-5)
    assert set(info) == set(theirs[2]) | {"njev"} and ier in (1, 2, 3, 4) and mesg
    assert info["njev"] >= 1 and info["nfev"] < theirs[2]["nfev"]   # exact, not differences
    # traced: cov_x = (JᵀJ)⁻¹ at the fit, itself differentiable
    def cov(y):
        return leastsq(decay, [1.0, 1.0], args=(y,), full_output=True, **TIGHT)[1]
    p = fit(Y)
    J = np.stack([np.exp(-p[1] * T), -p[0] * T * np.exp(-p[1] * T)], axis=1)
    assert_close(cov(Y), np.linalg.inv(J.T @ J), rtol=1e-8)
    assert_close(wg.jacfwd(cov)(Y), fd_jacobian(cov, Y, 1e-4), rtol=1e-4, atol=1e-6)
    fvec = wg.jacfwd(lambda y: leastsq(decay, [1.0, 1.0], args=(y,), full_output=True,
                                       **TIGHT)[2]["fvec"])(Y)
    assert_close(fvec, fd_jacobian(lambda y: decay(fit(y), y), Y, 1e-4), rtol=1e-5,
                 atol=1e-8)


def test_plain_values_dfun_shapes_and_warnings():
    x, ier = leastsq(lambda x: np.ravel(x) - np.arange(4.0), np.ones((2, 2)))
    assert x.shape == (4,) and ier in (1, 2, 3, 4)          # SciPy's: one-dimensional
    calls = []
    leastsq(decay, [1.0, 1.0], args=(Y,),
            Dfun=lambda p, y: calls.append(1) or np.stack(
                [np.exp(-p[1] * T), -p[0] * T * np.exp(-p[1] * T)], axis=1))
    assert calls
    with pytest.warns(RuntimeWarning, match="maxfev|calls to function"):
        leastsq(decay, [1.0, 1.0], args=(Y,), maxfev=2)
    assert leastsq(decay, [1.0, 1.0], args=(Y,), maxfev=2, full_output=True)[4] == 5
