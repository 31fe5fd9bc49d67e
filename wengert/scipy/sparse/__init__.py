"""scipy.sparse on traced values: a constant sparse matrix times a traced dense array.

Nothing here is called by user code: SciPy's own operators reach it.  ``A @ x``,
``A.dot(x)``, ``x @ A``, ``numpy.matmul(A, x)``, ``wengert.numpy.dot(A, x)`` and, for the
``spmatrix`` classes, where ``*`` is the matrix product, ``A * x`` and ``x * A`` record
one `sparse_matmul` (wengert.primitives.sparse) for any format (csr, csc, coo, dia, bsr,
lil, dok) and a dense x of one or two dimensions; the result is SciPy's dense array, of
SciPy's shape and dtype.  How the operators get here:

* ``x @ A`` (and ``x * A``): the traced value's own operator runs first, and records
  ``matmul(x, A)``; `Graph.apply` hands an operation with a sparse operand to `operand`.
* ``A @ x``, ``A.dot(x)``, ``A * x``: SciPy's ``_matmul_dispatch`` asks
  ``numpy.asanyarray(x)``, and returns NotImplemented when that is a 0-d object array, so
  that Python asks ``x.__rmatmul__(A)`` (``x.__rmul__``).  A traced value refuses to become
  a NumPy array anywhere else; only in that one SciPy function does it give the object
  array (`conversion`), a refusal path that costs nothing when nothing is refused.

A matrix whose entries are traced, on a constant pattern (a stiffness matrix K(k) of a
conductivity field k), is built with this module's `csr_array`, `csc_array` and
`coo_array` (SciPy's names and signatures): with traced data they give a `SparseArray`,
whose products and solves (`linalg.spsolve`) differentiate in the entries and in the dense
operand (wengert/scipy/sparse/_traced.py).  SciPy's own constructors given traced data,
and anything else that would put a traced value into a SciPy sparse matrix
(``A.multiply(x)``, a sparse array's elementwise ``A * x``, ``x + A``), raise an error
naming the operation and what to write instead: NumPy would take a traced value there for
an opaque object.

Example:
    >>> import numpy as np, scipy.sparse as sp, wengert as wg, wengert.numpy as wnp
    >>> L = sp.diags([1.0, -2.0, 1.0], [-1, 0, 1], shape=(4, 4), format="csr")
    >>> x = np.arange(4.0)
    >>> bool(np.allclose(wg.grad(lambda x: wnp.sum((L @ x) ** 2))(x), 2 * L.T @ (L @ x)))
    True
"""
from __future__ import annotations

import sys

import numpy as np

from ...primitives import sparse as P
from ...primitives.registry import issparse, shape_of
from ...primitives.array import transpose
from ._traced import SparseArray, csr_array, csc_array, coo_array

__all__ = ["linalg", "SparseArray", "csr_array", "csc_array", "coo_array"]


def _is_array(matrix) -> bool:
    return isinstance(matrix, sys.modules["scipy.sparse"].sparray)


def _kind(matrix) -> str:
    return f"scipy.sparse {type(matrix).__name__}"


_SUPPORTED = ("wengert differentiates a constant sparse matrix times a traced dense array "
              "(A @ x, x @ A, A.dot(x), wengert.numpy.matmul and dot, and A * x for the "
              "spmatrix classes, csr_matrix and the like, where * is the matrix product) "
              "and wengert.scipy.sparse.linalg.spsolve(A, b)")


def operand(op, args, params):
    """The result of primitive `op` on `args`, one of them a scipy.sparse matrix and one
    traced (`Graph.apply` asks): the sparse product for ``matmul``, and for ``mul`` with
    an spmatrix (SciPy's ``*``); a clear error for anything else."""
    from ...primitives import array as A, scalar as S
    k = next(i for i, a in enumerate(args) if issparse(a))
    matrix = args[k]
    if len(args) == 2 and not issparse(args[1 - k]):
        other = args[1 - k]
        if op is A.matmul:
            return product(matrix, other, left=k == 0)
        if op is S.mul and not _is_array(matrix):
            if len(shape_of(other)) == 0:
                raise NotImplementedError(
                    f"{_kind(matrix)} times a traced scalar: the result would be a sparse "
                    "matrix with traced entries, which wengert has no rules for. Multiply "
                    "the dense result instead: (A @ v) * s, not (A * s) @ v")
            return product(matrix, other, left=k == 0)
    what = f"{op.name}, with a {_kind(matrix)} as operand {k} and a traced value,"
    if op is S.mul:
        what = (f"{'A * x' if k == 0 else 'x * A'} of a {_kind(matrix)} A (a sparse array, "
                "whose * is the elementwise product) and a traced value x")
    raise NotImplementedError(
        f"{what} is not supported: {_SUPPORTED}. For an elementwise operation use the "
        "dense matrix, A.toarray(), whose result is dense and differentiable.")


def product(matrix, x, left=True):
    """``matrix @ x`` (``x @ matrix`` unless `left`) for a constant scipy.sparse `matrix`
    and a dense `x` (traced or not) of one or two dimensions, SciPy's shapes and dtype.

    Example:
        >>> import numpy as np, scipy.sparse as sp
        >>> a = sp.csr_array(np.array([[1.0, 0.0], [2.0, 3.0]]))
        >>> product(a, np.array([1.0, 1.0])), product(a, np.array([1.0, 1.0]), left=False)
        (array([1., 5.]), array([3., 3.]))
    """
    shape = tuple(shape_of(x))
    if len(matrix.shape) != 2:
        raise NotImplementedError(
            f"a {len(matrix.shape)}-D {_kind(matrix)} times a traced value: wengert "
            "multiplies by two-dimensional sparse matrices only")
    P.check_operand(f"a {_kind(matrix)}", matrix.shape, shape, left)
    a = P.held(matrix)
    if left:
        return P.sparse_matmul(x, matrix=a, transpose=False)
    if len(shape) == 1:
        return P.sparse_matmul(x, matrix=a, transpose=True)
    # X A = (Aᵀ Xᵀ)ᵀ
    return transpose(P.sparse_matmul(transpose(x, axes=(1, 0)), matrix=a, transpose=True),
                     axes=(1, 0))


def conversion(node, frame):
    """What ``numpy.asanyarray(node)`` gives where `frame` (the caller of
    ``Node.__array__``) asked it from scipy.sparse's code: a 0-d object array in
    ``_matmul_dispatch`` (SciPy then returns NotImplemented, and Python asks the traced
    value for the product); a NotImplementedError naming the SciPy function in any other
    sparse code.  None elsewhere: the caller raises its own error."""
    while frame is not None and _module(frame).split(".")[0] == "numpy":
        frame = frame.f_back                # (NumPy's Python functions SciPy called)
    if frame is None or not _module(frame).startswith("scipy.sparse"):
        return None
    if frame.f_code.co_name == "_matmul_dispatch":
        out = np.empty((), dtype=object)
        out[()] = node
        return out
    outer = frame                            # the SciPy call the user's code made
    while outer.f_back is not None and _module(outer.f_back).startswith("scipy.sparse"):
        outer = outer.f_back
    this = outer.f_locals.get("self")
    name = outer.f_code.co_name
    if this is not None and issparse(this):
        what = (f"scipy.sparse.{type(this).__name__}(...) with traced entries"
                if name == "__init__" else f"{type(this).__name__}.{name}")
        if name in _OPERATORS:
            what += f" (A {_OPERATORS[name]} x, elementwise)"
    else:                                   # (scipy.sparse.diags, not ._construct's)
        public = getattr(sys.modules.get(_module(outer).rpartition("._")[0]), name, None)
        what = f"{_module(outer).rpartition('._')[0] if public else _module(outer)}.{name}"
    instead = ("wengert.scipy.sparse.linalg.spsolve(A, b)" if "linalg" in _module(outer)
               else "A.toarray() for an elementwise operation, and "
               "wengert.scipy.sparse.csr_array((data, indices, indptr), shape=...) or "
               "coo_array((data, (row, col)), shape=...) for a matrix whose entries are "
               "traced")
    raise NotImplementedError(
        f"{what} on traced value {node.label()} is not supported: {_SUPPORTED}. "
        f"Use {instead}.")


_OPERATORS = {"__mul__": "*", "__rmul__": "*", "__add__": "+", "__radd__": "+", "__sub__": "-",
              "__rsub__": "-", "__truediv__": "/", "__rtruediv__": "/", "__pow__": "**"}


def _module(frame) -> str:
    return frame.f_globals.get("__name__", "")


def __getattr__(name):
    if name == "linalg":
        import importlib
        return importlib.import_module(f"{__name__}.linalg")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
