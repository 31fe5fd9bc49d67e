"""SciPy's interpolation (`scipy.interpolate`), differentiable: CubicSpline (every
boundary condition), PchipInterpolator, Akima1DInterpolator, CubicHermiteSpline and PPoly;
interp1d; make_interp_spline and BSpline; RegularGridInterpolator and interpn.

A drop-in: built from plain values each class holds SciPy's own object and answers plain
calls with it (SciPy's numbers and errors, and SciPy's other methods: ``roots``,
``solve``, ...).  Built from traced values, or called at traced points, it is composed of
`wengert.numpy` operations and `wengert.scipy.linalg.solve_banded` (the spline systems),
following SciPy's algorithms, so its derivatives flow to the query points, to the data
values y (or a grid's values) and to the knots x (or grid points), to any order, under
`wg.vmap` and `wg.compile` too.  The interval of a query is found by `searchsorted`, an
integer without derivative: with traced knots that is the derivative almost everywhere
(it changes only where a query crosses a knot).  What is not supported on traced values
(an option, a method) raises NotImplementedError naming it, never a wrong derivative.
docs/scipy.md, "Interpolation", has a tutorial and the table of what is supported.

Example: the derivative of a spline's value in its data is a cardinal spline, and in the
query point the spline's slope:

    >>> import numpy as np, wengert as wg
    >>> from wengert.scipy import interpolate
    >>> x = np.arange(5.0)
    >>> g = wg.grad(lambda y: interpolate.CubicSpline(x, y)(2.0))(x ** 2)
    >>> g.round(12).tolist()                     # at a knot: that knot's unit vector
    [0.0, 0.0, 1.0, 0.0, 0.0]
    >>> round(wg.grad(interpolate.CubicSpline(x, x ** 3))(1.5), 12)
    6.75
"""
from __future__ import annotations

import scipy.interpolate as _si

from ...numpy import _traced
from ...numpy.dispatch import rest_of as _rest_of
from ._ppoly import (PPoly, CubicHermiteSpline, CubicSpline, PchipInterpolator,
                     Akima1DInterpolator, pchip_interpolate)
from ._bspline import BSpline, make_interp_spline
from ._interp1d import interp1d
from ._rgi import RegularGridInterpolator, interpn

__all__ = ["PPoly", "CubicHermiteSpline", "CubicSpline", "PchipInterpolator",
           "Akima1DInterpolator", "pchip_interpolate", "BSpline", "make_interp_spline",
           "interp1d", "RegularGridInterpolator", "interpn"]

_other_functions = _rest_of(_si, globals())


def _refusing(cls):
    """SciPy's class `cls` (a subclass, so its instances are SciPy's), whose constructor
    raises NotImplementedError naming it when given traced values: SciPy would hold them
    as opaque objects."""
    def __init__(self, *args, **kwargs):
        if _traced(args, kwargs):
            raise NotImplementedError(
                f"scipy.interpolate.{cls.__name__} is not supported on traced values: "
                f"wengert differentiates {', '.join(__all__)} (docs/scipy.md, "
                "'Interpolation')")
        cls.__init__(self, *args, **kwargs)
    # (SciPy's module and docstring: help() shows SciPy's, and doctest does not run
    # SciPy's examples as this module's)
    return type(cls.__name__, (cls,), {"__init__": __init__, "__module__": cls.__module__,
                                       "__doc__": cls.__doc__})


def __getattr__(name):
    # SciPy's other functions and classes (griddata, UnivariateSpline, ...): SciPy's on
    # plain values, and a clear error on traced ones
    attr = getattr(_si, name)
    if isinstance(attr, type):
        globals()[name] = attr = _refusing(attr)
        return attr
    return _other_functions(name)
