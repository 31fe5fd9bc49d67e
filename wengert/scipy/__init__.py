"""SciPy's differentiable functions, as `autograd.scipy` has them: `wengert.scipy.special`
(erf, gammaln, digamma, expit, logsumexp, ...), `wengert.scipy.stats` (norm, t,
multivariate_normal, gamma, beta, poisson, dirichlet, and the rest of `jax.scipy.stats`:
truncnorm, binom, expon, cauchy, ..., sem, rankdata, mode, gaussian_kde), `wengert.scipy.linalg`
(solve_triangular, solve_banded, solveh_banded, cholesky, cho_factor, cho_solve, expm, sqrtm,
solve_sylvester, solve_continuous_lyapunov, inv, det, solve, lu_factor, lu_solve, eigh,
block_diag), for Gaussian processes, linear ODEs and Lie groups, Lyapunov and Sylvester
equations, vibration modes (the generalized eigh(a, b)); `wengert.scipy.signal`
(convolve, correlate, fftconvolve, convolve2d, correlate2d); and
`wengert.scipy.integrate` (solve_ivp and odeint: ODE solutions differentiated by the
adjoint method, docs/odes.md; quad, quad_vec and the fixed rules: integrals differentiated
in their limits and parameters by the Leibniz rule, docs/scipy.md); and
`wengert.scipy.optimize` (minimize, root, root_scalar, brentq, fixed_point, least_squares,
curve_fit: solvers given exact derivatives, and solutions differentiated by the implicit
function theorem, docs/optimize.md); and `wengert.scipy.sparse` (a constant
scipy.sparse matrix times traced arrays, ``A @ x``, and ``sparse.linalg.spsolve``); and
`wengert.scipy.interpolate` (CubicSpline, PchipInterpolator, Akima1DInterpolator, interp1d,
make_interp_spline, RegularGridInterpolator, interpn: interpolants differentiable in the
query points, the data values and the knots); and `wengert.scipy.fft` (dct, idct, dctn,
idctn, dst, idst, dstn, idstn, of all four types), `wengert.scipy.ndimage`
(map_coordinates: warping, differentiable in the image and the coordinates),
`wengert.scipy.cluster.vq` (vq) and `wengert.scipy.spatial.transform` (Rotation and Slerp:
rotations differentiable through every constructor, conversion and apply, for fitting
poses).

A front-end only: on plain values each function *is* SciPy's (the same call, the same
result); on traced values it records wengert's primitives (`wengert.primitives.special`,
`wengert.primitives.scipy_linalg`, `wengert.primitives.signal`, `wengert.primitives.fft`)
or compositions of `wengert.numpy`, differentiable to any order.  SciPy is an optional dependency:
``pip install 'wengert[scipy]'``.

Example:
    >>> import wengert as wg
    >>> from wengert.scipy import special, stats
    >>> wg.grad(lambda x: stats.norm.logpdf(x, loc=1.0, scale=2.0))(3.0)    # -(x-μ)/σ²
    -0.5
    >>> round(wg.grad(special.gammaln)(1.0), 6)                                # -γ
    -0.577216
    >>> import numpy as np
    >>> from wengert.scipy import linalg
    >>> wg.grad(lambda t: linalg.expm(t * np.eye(2))[0, 0])(0.0)                # e^t
    1.0
"""
from ..primitives.special import scipy_special as _scipy_special

_scipy_special()        # the ImportError that says how to install SciPy, if it is missing

from . import special  # noqa: E402

__all__ = ["special", "stats", "linalg", "signal", "integrate", "optimize", "sparse",
           "interpolate", "fft", "ndimage", "cluster", "spatial"]


def __getattr__(name):
    # stats, linalg and integrate on first use: scipy.stats takes ~0.9 s to import, which
    # code that needs only the special functions should not pay (the others less, but some)
    if name in __all__[1:]:
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
