"""A sparse matrix whose entries are traced and whose pattern is constant: `SparseArray`,
made by `csr_array`, `csc_array` and `coo_array` (SciPy's names and signatures) when their
data is traced.

PDE-constrained fitting puts the parameters inside the matrix: a conductivity field k
gives a stiffness matrix K(k) whose stored entries are functions of k and whose pattern
(which entries are stored) is fixed by the mesh.  SciPy's own classes would hold a traced
data vector as an opaque object array, so a `SparseArray` holds it instead: the traced
data vector and a constant `Pattern` (wengert.primitives.sparse).  Its products and
solves are the primitives `sparse_data_matmul` and `sparse_data_solve`; everything else a
matrix with traced entries can do without leaving the pattern (scaling, adding another,
transposing) is an operation on the data vector, so it costs O(nnz) and differentiates as
the data does.
"""
from __future__ import annotations

import numpy as np

from ...graph.node import Node
from ...primitives import array as A
from ...primitives import scalar as S
from ...primitives import sparse as P
from ...primitives.registry import OVERLOADS, issparse as _issparse, shape_of as _shape

__all__ = ["SparseArray", "csr_array", "csc_array", "coo_array"]


def _traced(x) -> bool:
    return type(x) is Node


_SUPPORTED = ("a sparse matrix with traced entries supports A @ x, x @ A and A.dot(x) with "
              "a dense x (traced or not), A.T, A.toarray(), scaling by a scalar (s * A, "
              "A / s, -A), A + B and A - B with another sparse matrix, and "
              "wengert.scipy.sparse.linalg.spsolve(A, b)")


class SparseArray:
    """A sparse matrix whose stored entries are traced: the data vector `data` (a traced
    value, one entry per stored element) at the rows and columns of a constant `pattern`
    (duplicates summed, as in SciPy's COO format).  Made by `csr_array`, `csc_array` and
    `coo_array` when their data is traced; `transposed` says whether it stands for the
    transpose of the pattern's matrix (``A.T`` shares A's pattern, and its LU factors).

    Example:
        >>> import numpy as np, wengert as wg, wengert.numpy as wnp
        >>> from wengert.scipy.sparse import csr_array
        >>> indices, indptr = np.array([0, 0, 1]), np.array([0, 1, 3])
        >>> f = lambda d: wnp.sum(csr_array((d, indices, indptr), shape=(2, 2)) @ np.ones(2))
        >>> wg.grad(f)(np.array([1.0, 2.0, 3.0]))       # each entry adds its x[col] = 1
        array([1., 1., 1.])
    """

    __slots__ = ("data", "pattern", "transposed", "format")

    def __init__(self, data, pattern, transposed=False, format="coo"):
        self.data = data
        self.pattern = pattern
        self.transposed = transposed
        self.format = format

    # --- what SciPy's arrays tell about themselves ------------------------------------------
    @property
    def shape(self):
        m, n = self.pattern.shape
        return (n, m) if self.transposed else (m, n)

    ndim = 2

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def nnz(self):
        """Stored entries (duplicates counted, as SciPy's COO counts them)."""
        return self.pattern.nnz

    def __repr__(self):
        m, n = self.shape
        return (f"SparseArray[{self.format} {m}x{n}, {self.nnz} stored, traced "
                f"{self.dtype}]")

    def _entries(self):
        """(data, rows, cols) in this matrix's own orientation."""
        p = self.pattern
        return (self.data,) + ((p.cols, p.rows) if self.transposed else (p.rows, p.cols))

    # --- products -------------------------------------------------------------------------
    def dot(self, x):
        """``A @ x`` (SciPy's ``A.dot``)."""
        return _product(self, x, left=True)

    def __matmul__(self, x):
        if isinstance(x, SparseArray) or _issparse(x):
            _refuse("A @ B of two sparse matrices (a sparse result with traced entries)")
        return _product(self, x, left=True)

    def __rmatmul__(self, x):
        if _issparse(x):
            _refuse("B @ A of two sparse matrices (a sparse result with traced entries)")
        return _product(self, x, left=False)

    @property
    def T(self):
        """The transpose: the same data and pattern, read the other way round."""
        return SparseArray(self.data, self.pattern, not self.transposed, self.format)

    def transpose(self, axes=None):
        """SciPy's ``A.transpose()``."""
        if axes is not None:
            raise ValueError("Sparse arrays/matrices do not support an 'axes' parameter "
                             "because swapping dimensions is the only logical permutation.")
        return self.T

    def toarray(self):
        """The dense matrix, a traced array (the entries scattered into zeros, duplicates
        summed).

        Example:
            >>> import numpy as np, wengert as wg
            >>> from wengert.scipy.sparse import coo_array
            >>> f = lambda d: coo_array((d, ([0, 1, 1], [1, 0, 0])), shape=(2, 2)).toarray()
            >>> wg.vjp(f, np.array([1.0, 2.0, 3.0]))[0]
            array([[0., 1.],
                   [5., 0.]])
        """
        data, rows, cols = self._entries()
        return A.index_add(data, index=(rows, cols), shape=self.shape)

    todense = toarray

    # --- arithmetic on the data vector ------------------------------------------------------
    def _scaled(self, s, divide=False):
        if not _scalar(s):
            _refuse(f"A {'/' if divide else '*'} x with a sparse matrix A and an operand of "
                    f"shape {tuple(_shape(s))} (elementwise)")
        return SparseArray(self.data / s if divide else self.data * s, self.pattern,
                           self.transposed, self.format)

    def __mul__(self, s):
        return self._scaled(s)

    __rmul__ = __mul__

    def multiply(self, s):
        """SciPy's ``A.multiply(s)``, for a scalar s."""
        return self._scaled(s)

    def __truediv__(self, s):
        return self._scaled(s, divide=True)

    def __neg__(self):
        return SparseArray(-self.data, self.pattern, self.transposed, self.format)

    def __pos__(self):
        return self

    def __add__(self, other):
        return _sum(self, other)

    def __radd__(self, other):
        return _sum(other, self)

    def __sub__(self, other):
        return _sum(self, -other if isinstance(other, SparseArray) else _negated(other))

    def __rsub__(self, other):
        return _sum(other, -self)

    # --- what it is not -------------------------------------------------------------------
    def __array__(self, dtype=None, copy=None):
        _refuse("converting a sparse matrix with traced entries to a NumPy array (NumPy "
                "would hold it as an opaque object); use A.toarray() for the dense matrix")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # (NumPy's operators on a plain array ask here: x @ A, np.float64(2) * A)
        if method == "__call__" and not kwargs and len(inputs) == 2:
            a, b = inputs
            if ufunc is np.matmul:
                return _product(b, a, left=False) if b is self else _product(a, b, left=True)
            if ufunc is np.multiply:
                return self._scaled(a if b is self else b)
            if ufunc is np.divide and a is self:
                return self._scaled(b, divide=True)
        _refuse(f"numpy.{ufunc.__name__} of a sparse matrix with traced entries")

    def __iter__(self):
        _refuse("iterating over a sparse matrix with traced entries")

    def __getitem__(self, index):
        _refuse("indexing a sparse matrix with traced entries (A[i, j])")


def _scalar(s) -> bool:
    return isinstance(s, (int, float, complex, np.number)) or \
        (type(s) in (Node, np.ndarray) and s.shape == ())


def _refuse(what):
    raise NotImplementedError(f"{what} is not supported: {_SUPPORTED}")


def _negated(other):
    if _issparse(other):
        return -other
    _refuse(f"A - x with a sparse matrix A and a {type(other).__name__}")


def _sum(a, b):
    """A + B for sparse matrices of one shape, at least one with traced entries: the data
    added where the patterns are one (the common case, K(k) + M(k) assembled alike), else
    the entries of both side by side (COO sums duplicates)."""
    for x in (a, b):
        if not isinstance(x, SparseArray) and not _issparse(x):
            if _scalar(x) and not _traced(x) and x == 0:
                return b if x is a else a
            _refuse(f"A + x with a sparse matrix A and a {type(x).__name__} of shape "
                    f"{tuple(_shape(x))} (the result would be dense; add A.toarray())")
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"inconsistent shapes: {tuple(a.shape)} and {tuple(b.shape)}")
    if isinstance(a, SparseArray) and isinstance(b, SparseArray) and \
            a.transposed == b.transposed and _same_pattern(a.pattern, b.pattern):
        return SparseArray(a.data + b.data, a.pattern, a.transposed, a.format)
    (da, ra, ca), (db, rb, cb) = _entries(a), _entries(b)
    pattern = P.Pattern(np.concatenate([ra, rb]), np.concatenate([ca, cb]), a.shape)
    fmt = a.format if isinstance(a, SparseArray) else b.format
    return SparseArray(A.concatenate(da, db, axis=0), pattern, False, fmt)


def _same_pattern(p, q) -> bool:
    return p is q or (p.shape == q.shape and np.array_equal(p.rows, q.rows) and
                      np.array_equal(p.cols, q.cols))


def _entries(x):
    if isinstance(x, SparseArray):
        return x._entries()
    coo = x.tocoo()
    return np.asarray(coo.data), np.asarray(coo.row), np.asarray(coo.col)


def _product(a, x, left):
    """``a @ x`` (``x @ a`` unless `left`) for a `SparseArray` a and a dense x of one or two
    dimensions, SciPy's shapes."""
    if isinstance(x, (list, tuple)):
        x = np.asarray(x)
    if _issparse(x) or isinstance(x, SparseArray):
        _refuse("a product of two sparse matrices (a sparse result with traced entries)")
    shape = tuple(_shape(x))
    P.check_operand("a sparse matrix", a.shape, shape, left)
    t = a.transposed
    if left:
        return P.sparse_data_matmul(a.data, x, pattern=a.pattern, transpose=t)
    if len(shape) == 1:
        return P.sparse_data_matmul(a.data, x, pattern=a.pattern, transpose=not t)
    # X A = (Aᵀ Xᵀ)ᵀ
    return A.transpose(P.sparse_data_matmul(a.data, A.transpose(x, axes=(1, 0)),
                                            pattern=a.pattern, transpose=not t), axes=(1, 0))


def _overload(op, args, params):
    """A primitive that met a `SparseArray` (`Primitive.__call__` and `Graph.apply` ask
    `OVERLOADS`): ``x @ A`` from a traced x's operator or wengert.numpy.matmul and dot,
    ``s * A`` with a traced scalar s; anything else is refused by name."""
    if len(args) == 2:
        a, b = args
        k = 0 if isinstance(a, SparseArray) else 1
        if op is A.matmul:
            return _product(a, b, left=True) if k == 0 else _product(b, a, left=False)
        if op is S.mul:
            return args[k]._scaled(args[1 - k])
        if op is S.div and k == 0:
            return a._scaled(b, divide=True)
        if op in (S.add, S.sub):
            return _sum(a, b) if op is S.add else _sum(a, -b)
    _refuse(f"{op.name} of a sparse matrix with traced entries")


OVERLOADS[SparseArray] = _overload


# --- the constructors ----------------------------------------------------------------------
def _constant_index(x, what):
    if _traced(x):
        raise NotImplementedError(
            f"a sparse matrix whose {what} are traced: wengert differentiates a sparse "
            "matrix in its entries, with a constant pattern (the indices must be plain "
            "arrays)")
    return np.asarray(x)


def _as_data(data, dtype):
    if dtype is not None:
        data = A.astype(data, dtype=np.dtype(dtype))
    if len(data.shape) != 1:
        raise ValueError(f"the data of a sparse matrix must be one-dimensional, got shape "
                         f"{tuple(data.shape)}")
    return data


def _compressed(arg1, shape, dtype, fmt):
    """(data, indices, indptr) of a CSR (or CSC, `fmt`) matrix with traced data."""
    if len(arg1) != 3:
        raise ValueError(f"{fmt}_array with traced data takes (data, indices, indptr), got a "
                         f"tuple of {len(arg1)}")
    data, indices, indptr = arg1
    data = _as_data(data, dtype)
    indices = _constant_index(indices, "indices").astype(np.intp)
    indptr = _constant_index(indptr, "indptr").astype(np.intp)
    if indices.size != data.shape[0] or indptr.ndim != 1 or indptr.size < 1 or \
            indptr[-1] != indices.size or np.any(np.diff(indptr) < 0):
        raise ValueError(f"{fmt}_array: {data.shape[0]} entries, {indices.size} indices and "
                         f"an index pointer of {indptr.size} ending at "
                         f"{indptr[-1] if indptr.size else None} do not make a matrix")
    major = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    if shape is None:
        shape = (indptr.size - 1, int(indices.max()) + 1 if indices.size else 0)
        if fmt == "csc":
            shape = shape[::-1]
    rows, cols = (major, indices) if fmt == "csr" else (indices, major)
    return SparseArray(data, _pattern(rows, cols, shape, fmt), False, fmt)


def _pattern(rows, cols, shape, fmt):
    m, n = (int(shape[0]), int(shape[1])) if len(shape) == 2 else (None, None)
    if m is None:
        raise ValueError(f"{fmt}_array with traced data is two-dimensional, got shape "
                         f"{tuple(shape)}")
    if rows.size and (rows.min() < 0 or rows.max() >= m or cols.min() < 0 or
                      cols.max() >= n):
        raise ValueError(f"{fmt}_array: an index lies outside the shape {(m, n)}")
    return P.Pattern(rows, cols, (m, n))


def csr_array(arg1, shape=None, dtype=None, copy=False, **kwargs):
    """SciPy's ``csr_array``; with traced data, ``csr_array((data, indices, indptr),
    shape=(m, n))`` is a `SparseArray`: differentiable in `data`, on the constant pattern
    the indices give.  Anything else is SciPy's own ``csr_array``.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy.sparse import csr_array
        >>> from wengert.scipy.sparse.linalg import spsolve
        >>> indices, indptr = np.array([0, 1, 0, 1]), np.array([0, 2, 4])
        >>> x = lambda d: spsolve(csr_array((d, indices, indptr), shape=(2, 2)),
        ...                       np.array([1.0, 0.0]))
        >>> J = wg.jacrev(x)(np.array([2.0, 0.0, 0.0, 4.0]))   # d x / d entries
        >>> J.round(4).tolist()
        [[-0.25, -0.0, -0.0, -0.0], [-0.0, -0.0, -0.125, -0.0]]
    """
    return _construct("csr", arg1, shape, dtype, copy, kwargs)


def csc_array(arg1, shape=None, dtype=None, copy=False, **kwargs):
    """SciPy's ``csc_array``; with traced data, ``csc_array((data, indices, indptr),
    shape=(m, n))`` (indices are rows, indptr runs over columns) is a `SparseArray`.

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy.sparse import csc_array
        >>> a = lambda d: csc_array((d, np.array([1]), np.array([0, 1, 1])), shape=(2, 2))
        >>> wg.vjp(lambda d: a(d).toarray(), np.array([5.0]))[0]     # entry (1, 0)
        array([[0., 0.],
               [5., 0.]])
    """
    return _construct("csc", arg1, shape, dtype, copy, kwargs)


def coo_array(arg1, shape=None, dtype=None, copy=False, **kwargs):
    """SciPy's ``coo_array``; with traced data, ``coo_array((data, (row, col)),
    shape=(m, n))`` is a `SparseArray` (duplicate entries are summed, as in SciPy: an FEM
    assembly can list each element's contributions as they come).

    Example:
        >>> import numpy as np, wengert as wg
        >>> from wengert.scipy.sparse import coo_array
        >>> row, col = np.array([0, 0, 1]), np.array([0, 0, 1])    # (0, 0) twice
        >>> f = lambda d: coo_array((d, (row, col)), shape=(2, 2)) @ np.array([1.0, 2.0])
        >>> wg.vjp(f, np.array([1.0, 1.0, 3.0]))[0]
        array([2., 6.])
    """
    return _construct("coo", arg1, shape, dtype, copy, kwargs)


def _construct(fmt, arg1, shape, dtype, copy, kwargs):
    if type(arg1) is tuple and arg1 and _traced(arg1[0]):
        if kwargs:
            raise TypeError(f"{fmt}_array with traced data: unexpected arguments "
                            f"{sorted(kwargs)}")
        if fmt != "coo":
            return _compressed(arg1, shape, dtype, fmt)
        if len(arg1) != 2 or len(arg1[1]) != 2:
            raise ValueError("coo_array with traced data takes (data, (row, col))")
        data = _as_data(arg1[0], dtype)
        rows = _constant_index(arg1[1][0], "row indices").astype(np.intp).ravel()
        cols = _constant_index(arg1[1][1], "column indices").astype(np.intp).ravel()
        if not rows.size == cols.size == data.shape[0]:
            raise ValueError(f"coo_array: {data.shape[0]} entries, {rows.size} rows and "
                             f"{cols.size} columns")
        if shape is None:
            shape = (int(rows.max()) + 1, int(cols.max()) + 1) if rows.size else (0, 0)
        return SparseArray(data, _pattern(rows, cols, shape, fmt), False, fmt)
    import scipy.sparse as sp
    return getattr(sp, f"{fmt}_array")(arg1, shape=shape, dtype=dtype, copy=copy, **kwargs)
