"""The coefficients of SO(3)'s exponential map and its Jacobians, as functions of s = θ²
(θ the angle, the norm of a rotation vector φ), for SE(3)'s exponential coordinates
(`RigidTransform`) and the kinematics of rotation vectors (`RotationSpline`).

With [φ]× the cross product by φ, the Jacobians of exp are
``J(±φ) = I ± a [φ]× + b [φ]×²`` (left: +, right: -) and their inverses
``J⁻¹(±φ) = I ∓ ½ [φ]× + c [φ]×²``, where

* a = (1 - cos θ)/θ²,
* b = (θ - sin θ)/θ³,
* c = (1 - (θ/2) cot(θ/2))/θ²,

and the angular acceleration of a rotation vector moving along φ(t) has two more,

* d = (2 (1 - cos θ) - θ sin θ)/θ⁴,
* e = (3 sin θ - θ cos θ - 2θ)/θ⁵.

Each is 0/0 at θ = 0 and loses digits to cancellation near it; below θ = 2 each is its
Taylor series in s (kept to terms below 1e-20 of the first, so exact to rounding), above
it the formula, whose cancellation there costs a few ulps at most.  A series in s is smooth
through the identity, so derivatives of every order are finite there (`_series_or` keeps
the branch not taken from meeting a ``where``'s zero cotangent).  c's series converges for
θ < 2π (the pole of cot(θ/2)); the others' everywhere.
"""
from __future__ import annotations

import math
from fractions import Fraction

from .... import numpy as _wnp
from ._rotation import _series_or

__all__ = []

_SERIES_BELOW = 4.0             # s = θ² (θ < 2 rad)


def _terms(term):
    """The floats term(0), term(1), ... while |term(k)| 4ᵏ is above 1e-20 |term(0)|."""
    out, k = [], 0
    while True:
        t = term(k)
        if k > 2 and abs(t) * 4 ** k < Fraction(1, 10 ** 20) * abs(out[0]):
            return out
        out.append(t)
        k += 1


def _bernoulli(n):
    """B₀ … Bₙ (B₁ = -1/2), exactly."""
    b = [Fraction(1)]
    for m in range(1, n + 1):
        b.append(-sum(math.comb(m + 1, k) * b[k] for k in range(m)) / (m + 1))
    return b


_B = _bernoulli(80)
_f = math.factorial
_A = [float(x) for x in _terms(lambda k: Fraction((-1) ** k, _f(2 * k + 2)))]
_B_ = [float(x) for x in _terms(lambda k: Fraction((-1) ** k, _f(2 * k + 3)))]
# x cot x = Σ (-1)ⁿ B₂ₙ (2x)²ⁿ/(2n)!, so 1 - (θ/2) cot(θ/2) = -Σₙ≥₁ (-1)ⁿ B₂ₙ θ²ⁿ/(2n)!
_C = [float(x) for x in _terms(lambda k: (-1) ** k * _B[2 * k + 2] / _f(2 * k + 2))]
_D = [float(x) for x in _terms(lambda k: Fraction((-1) ** k * (2 + 2 * k), _f(2 * k + 4)))]
_E = [float(x) for x in _terms(lambda k: Fraction((-1) ** (k + 1) * (2 + 2 * k),
                                                  _f(2 * k + 5)))]


def _even(coefficients, formula):
    def f(s):
        return _series_or(s, s < _SERIES_BELOW, coefficients, formula, _SERIES_BELOW)
    return f


def _a(s):
    t = _wnp.sqrt(s)
    return (1 - _wnp.cos(t)) / s


def _b(s):
    t = _wnp.sqrt(s)
    return (t - _wnp.sin(t)) / (s * t)


def _c(s):
    half = _wnp.sqrt(s) / 2
    return (1 - half / _wnp.tan(half)) / s


def _d(s):
    t = _wnp.sqrt(s)
    return (2 * (1 - _wnp.cos(t)) - t * _wnp.sin(t)) / (s * s)


def _e(s):
    t = _wnp.sqrt(s)
    return (3 * _wnp.sin(t) - t * _wnp.cos(t) - 2 * t) / (s * s * t)


one_minus_cos = _even(_A, _a)           # a = (1 - cos θ)/θ²
theta_minus_sin = _even(_B_, _b)        # b = (θ - sin θ)/θ³
inverse_coefficient = _even(_C, _c)     # c = (1 - (θ/2) cot(θ/2))/θ²
acceleration_d = _even(_D, _d)          # d = (2 (1 - cos θ) - θ sin θ)/θ⁴
acceleration_e = _even(_E, _e)          # e = (3 sin θ - θ cos θ - 2θ)/θ⁵


def squared_norm(phi):
    """θ² = |φ|², over the last axis."""
    return _wnp.sum(phi * phi, axis=-1)


def jacobian_times(phi, v, sign=1):
    """J(sign · φ) v = v + sign · a φ×v + b φ×(φ×v): the left Jacobian of exp (sign 1;
    V of SE(3)'s exponential) or the right one (sign -1, rotation-vector rates to
    body angular rates)."""
    s = squared_norm(phi)[..., None]
    cross = _wnp.cross(phi, v)
    return v + sign * one_minus_cos(s) * cross + theta_minus_sin(s) * _wnp.cross(phi, cross)


def inverse_jacobian_times(phi, v, sign=1):
    """J(sign · φ)⁻¹ v = v - sign · ½ φ×v + c φ×(φ×v)."""
    s = squared_norm(phi)[..., None]
    cross = _wnp.cross(phi, v)
    return v - sign * 0.5 * cross + inverse_coefficient(s) * _wnp.cross(phi, cross)
