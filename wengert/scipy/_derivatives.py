"""The derivatives wengert hands to SciPy's routines (a solver's Jacobian, quad's derivative
integrand): eager sweeps first, code made by `wg.compile` once a routine has called one
often, kept across calls for a function it meets again.  Shared by
`wengert.scipy.optimize` and `wengert.scipy.quadrature`.
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from ..graph.active import recording
from ..tree import flatten

#: Calls of a derivative in one solve after which it is compiled (`wg.compile`): a solver
#: asks for hundreds, compiled code runs ~5-10x faster than an eager sweep, and compiling
#: costs about as much as 50-100 eager calls.
HOT = 32

#: Compiled derivatives of recent solves, by what they differentiate: (digest of what was
#: traced for it, code), the code False where compiling failed (a Python branch on a value),
#: so that a function solved again and again (an outer loop around a fit) is compiled once.
_KERNELS: OrderedDict = OrderedDict()
_KERNELS_SIZE = 64


class _Derivative:
    """``x -> derivative(x, leaves)`` for one solve (``(x, p) -> ...`` for
    Hessian-vector products), as SciPy calls it: `derivative` is a wengert derivative of
    the user's function, `leaves` the numbers and arrays of its args.

    Eager until the solve has called it `HOT` times; then, or from the start if an
    earlier solve compiled it, code made by `wg.compile`.  Compiled code holds what the
    function reads besides its arguments (a global array, a global penalty weight) as it
    was when it was traced.  So code is kept with the digest of the traced graph of
    `source`, the function it differentiates (of the derivative itself where none is
    given; `Graph.digest` covers every constant), and a later solve takes it only if
    tracing at its own first point gives the same digest: a global that changed
    between solves changes the graph, and the code is made again.  (A check of values at
    the first point alone would miss a change that does not show there.)  SciPy's calls of
    the function itself stay calls of the user's function (its side effects, its logging,
    happen as with SciPy)."""

    def __init__(self, derivative, leaves, key, finish, source=None):
        self.derivative = derivative
        self.source = source      # ``(x, leaves) -> ...`` that derivative differentiates:
        #                           its graph settles the derivative's, and costs less
        self.leaves = tuple(leaves)
        self.key = key
        self.finish = finish
        self.code = None
        self.calls = 0

    def __call__(self, *xs):
        if self.code is not None:
            return self.finish(self.code(*xs, self.leaves))
        # (plain numbers in, plain numbers out: inside an outer wg.grad, wg.vmap or
        # wg.compile, whose graph would otherwise take the sweep's result as its own)
        with recording(None):
            out = self.derivative(*xs, self.leaves)
        self.calls += 1
        if self.calls == 1 or self.calls == HOT:
            self._compiled(xs, out)
        return self.finish(out)

    def _digest(self, xs):
        from ..api import traced_digest
        if self.source is not None:
            return traced_digest(self.source, xs[0], self.leaves)
        return traced_digest(self.derivative, *xs, self.leaves)

    def _compiled(self, xs, want):
        from ..staged import compile as stage
        kept = _KERNELS.get(self.key) if self.key is not None else None
        if kept is not None and kept[1] is False:
            return                              # (it cannot be compiled)
        if self.calls < HOT:                    # the first call: code from an earlier solve?
            if kept is None:
                return
            digest = self._digest(xs)
            if digest is None or digest != kept[0]:
                return                          # (something it reads has changed)
            code, fresh = kept[1], False
        else:
            digest = self._digest(xs)
            try:
                code, fresh = stage(self.derivative, *xs, self.leaves), True
            except Exception:                   # noqa: BLE001  (eager calls go on)
                self._keep(None, False)
                return
        try:
            got = code(*xs, self.leaves)
        except Exception:                       # noqa: BLE001  (eager calls go on)
            got = None
        if got is not None and _agree(got, want):
            self.code = code
            if digest is not None:
                self._keep(digest, code)
        elif self.key is not None:              # wrong: not from the cache again
            _KERNELS.pop(self.key, None)
            if fresh:
                self._keep(None, False)

    def _keep(self, digest, code):
        if self.key is None:
            return
        _KERNELS[self.key] = (digest, code)
        _KERNELS.move_to_end(self.key)
        if len(_KERNELS) > _KERNELS_SIZE:
            _KERNELS.popitem(last=False)


def _agree(got, want):
    got, want = flatten(got)[0], flatten(want)[0]
    return len(got) == len(want) and all(
        np.shape(g) == np.shape(w) and np.allclose(g, w, rtol=1e-9, atol=1e-12, equal_nan=True)
        for g, w in zip(got, want))
