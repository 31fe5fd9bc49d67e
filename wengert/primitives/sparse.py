"""Products and solves with a constant scipy.sparse matrix: ``A @ x`` and ``spsolve(A, b)``
for a traced dense x or b (the front-end is `wengert.scipy.sparse`).

The matrix is no argument but a parameter (`SparseMatrix`): its entries are data (a
finite-difference Laplacian, an FEM stiffness matrix) that nothing differentiates, so
both primitives are linear in their one argument.  A JVP is the primitive applied to the
tangent; a VJP is the transposed map applied to the cotangent, without conjugation
(JAX's and autograd's convention, docs/complex.md), with op(A) = A or Aᵀ:

    sparse_matmul(x, matrix=A, transpose=t) = op(A) x,      x̄ = op(A)ᵀ ȳ
    sparse_solve(b, matrix=A, transpose=t)  = op(A)⁻¹ b,    b̄ = op(A)⁻ᵀ ȳ

Each rule is its primitive with `transpose` flipped, so a derivative of any order is one
more sparse product or solve (a solve reuses the LU factors of the first).  Under
`wg.vmap` the batch becomes more columns of the dense operand: one product, one solve.

A matrix whose entries are traced (a stiffness matrix K(k) assembled from a conductivity
field k) is two arguments and a parameter: the vector `data` of its stored entries, the
dense operand, and a constant `Pattern` (row and column of each entry, duplicates summed,
as in COO).  Such a matrix is bilinear in (data, x), and its rules are the same products
and solves plus one gather-product, ``entry_products(ȳ, x)[k] = ȳ[row_k]·x[col_k]``
(written with getitem and mul, so it differentiates again):

    sparse_data_matmul(data, x) = A x,    datā = entry_products(ȳ, x),   x̄ = Aᵀ ȳ
    sparse_data_solve(data, b)  = A⁻¹ b,  b̄ = A⁻ᵀ ȳ,   datā = -entry_products(b̄, A⁻¹ b)

(the adjoint method: one transposed solve, with the factors of the first, for the
whole gradient).  Under `wg.vmap` a batch of data is one block-diagonal matrix, so a batch
of matrices is still one product or one factorisation.
"""
from __future__ import annotations

import math
import weakref

import numpy as np

from .registry import defprimitive, float_dtype, shape_of
from .array import getitem, reshape, sum as sum_, sum_nonzero, transpose
from .scalar import real_part
from .shape import broadcast_to


class SparseMatrix:
    """A constant scipy.sparse matrix as a primitive's parameter.

    Equal, and hashed, by the identity of the matrix it holds (hashing the entries on
    every product would cost as much as the product): two uses of one matrix intern to
    one node, and the parameter keeps the matrix alive, so its id stays its own while a
    graph holds it.  A graph's digest reads the entries (`digest_into`).  `held` gives the
    one wrapper of a matrix, so LU factors computed for one solve serve the others.

    Example:
        >>> import scipy.sparse as sp
        >>> a = sp.eye(3, format="csr")
        >>> held(a) == held(a), held(a) == held(sp.eye(3, format="csr"))
        (True, False)
        >>> held(a)
        csr_matrix[3x3, 3 stored, float64]
    """

    __slots__ = ("matrix", "_lu", "__weakref__")

    def __init__(self, matrix):
        self.matrix = matrix
        self._lu = {}           # permc_spec -> SuperLU factors, made at the first solve

    def __eq__(self, other):
        return type(other) is SparseMatrix and other.matrix is self.matrix

    def __hash__(self):
        return hash(id(self.matrix))

    @property
    def shape(self):
        return self.matrix.shape

    @property
    def dtype(self):
        return self.matrix.dtype

    def __repr__(self):
        m, n = self.matrix.shape
        return f"{type(self.matrix).__name__}[{m}x{n}, {self.matrix.nnz} stored, {self.dtype}]"

    def digest_into(self, h):
        """The entries, in canonical CSR form (a matrix changed in place since it was
        used digests otherwise)."""
        csr = self.matrix.tocsr(copy=True)
        csr.sum_duplicates()
        csr.sort_indices()
        h.update(f"{csr.shape}{csr.dtype.str}".encode())
        for part in (csr.indptr, csr.indices, csr.data):
            h.update(np.ascontiguousarray(part).tobytes())

    def product(self, x, transpose):
        """op(A) @ x on a NumPy array, as SciPy computes it."""
        if x.dtype == object:
            # (scalarisation's arrays of nodes: SciPy's kernels would take them for
            # numbers; the C, Fortran and ADDS back-ends have no sparse product)
            raise NotImplementedError("a product with a scipy.sparse matrix has no "
                                      "element-by-element form")
        a = self.matrix.T if transpose else self.matrix
        return np.asarray(a @ x)

    def solve(self, b, transpose, permc_spec):
        """op(A)⁻¹ b on a NumPy array, by SuperLU factors of A made once."""
        if b.dtype == object:
            raise NotImplementedError("a scipy.sparse solve has no element-by-element form")
        dtype = float_dtype(self.dtype, b.dtype)
        lu = self._lu.get((permc_spec, dtype))
        if lu is None:
            lu = _factors(self.matrix.tocsc().astype(dtype), permc_spec)
            if lu is not None:
                self._lu[(permc_spec, dtype)] = lu
        return _solved(lu, self.matrix, b, dtype, transpose, permc_spec)


def _factors(csc, permc_spec):
    """SuperLU factors of a CSC matrix, or None where it is exactly singular."""
    from scipy.sparse import linalg as spla
    try:
        return spla.splu(csc, permc_spec=permc_spec)
    except RuntimeError:
        return None


def _solved(lu, a, b, dtype, transpose, permc_spec):
    """op(A)⁻¹ b by A's factors `lu`; where A is exactly singular (no factors), SciPy's
    spsolve of `a`, which warns and gives nan, as SciPy's own call would."""
    if lu is None:
        from scipy.sparse import linalg as spla
        return np.asarray(spla.spsolve((a.T if transpose else a).tocsc(), b,
                                       permc_spec=permc_spec))
    return lu.solve(np.asarray(b, dtype=np.result_type(dtype, b.dtype)),
                    trans="T" if transpose else "N")


_HELD = weakref.WeakValueDictionary()


def held(matrix) -> SparseMatrix:
    """The parameter standing for `matrix` (one per matrix while any graph holds it)."""
    found = _HELD.get(id(matrix))
    if found is None or found.matrix is not matrix:
        found = _HELD[id(matrix)] = SparseMatrix(matrix)
    return found


def check_operand(kind, matrix_shape, shape, left):
    """Refuse a dense operand of `shape` that a sparse matrix (`kind`, say "scipy.sparse
    csr_array", of `matrix_shape`) cannot multiply, ``A @ x`` (``x @ A`` unless `left`),
    naming both shapes as SciPy's messages do.

    Example:
        >>> check_operand("A", (2, 3), (3,), left=True)
        >>> check_operand("A", (2, 3), (2,), left=True)
        Traceback (most recent call last):
        ValueError: matmul: dimension mismatch, A of shape (2, 3) and an operand of shape (2,)
    """
    if len(shape) not in (1, 2):
        raise ValueError(f"matmul of {kind} and an operand of shape {shape}: a sparse "
                         "matrix multiplies dense vectors and matrices (one or two "
                         "dimensions)")
    m, n = matrix_shape
    if (shape[0] if left else shape[-1]) != (n if left else m):
        raise ValueError(f"matmul: dimension mismatch, {kind} of shape {(m, n)} and an "
                         f"operand of shape {shape}")


def _rows(params):
    """The rows of op(A): of the constant matrix (`sparse_matmul`, `sparse_solve`) or of
    the pattern (`sparse_data_matmul`, `sparse_data_solve`)."""
    shape = (params["matrix"] if "matrix" in params else params["pattern"]).shape
    return shape[1] if params["transpose"] else shape[0]


def _matmul_aval(args, params):
    x = args[0]
    return (_rows(params),) + x.shape[1:], np.result_type(params["matrix"].dtype, x.dtype)


def _solve_aval(args, params):
    b = args[0]
    return (_rows(params),) + b.shape[1:], float_dtype(params["matrix"].dtype, b.dtype)


sparse_matmul = defprimitive(
    "sparse_matmul", lambda x, matrix, transpose: matrix.product(x, transpose),
    cost="mul", linear=True, complex=True, abstract_eval=_matmul_aval,
    doc="sparse_matmul(x, matrix=A, transpose=False): A @ x (Aᵀ @ x if transpose) for a "
        "constant scipy.sparse matrix A (a `SparseMatrix`) and a dense x of 1 or 2 "
        "dimensions.")
sparse_matmul.defvjp(lambda g, x, ans, matrix, transpose: (
    sparse_matmul(g, matrix=matrix, transpose=not transpose),))

sparse_solve = defprimitive(
    "sparse_solve", lambda b, matrix, transpose, permc_spec: matrix.solve(b, transpose,
                                                                         permc_spec),
    cost="div", linear=True, complex=True, abstract_eval=_solve_aval,
    doc="sparse_solve(b, matrix=A, transpose=False, permc_spec='COLAMD'): the x of A x = b "
        "(Aᵀ x = b if transpose) for a constant square scipy.sparse matrix A and a dense b "
        "of 1 or 2 dimensions, by SuperLU.")
sparse_solve.defvjp(lambda g, b, ans, matrix, transpose, permc_spec: (
    sparse_solve(g, matrix=matrix, transpose=not transpose, permc_spec=permc_spec),))


def _columns(args, mapped, node):
    """A batch of dense operands is more columns of one: (B, n, k...) -> (n, B·k), one
    product or solve, and back to (B, m, k...)."""
    x = args[0]
    shape = shape_of(x)
    rest = tuple(range(2, len(shape)))
    cols = reshape(transpose(x, axes=(1, 0) + rest), shape=(shape[1], math.prod(
        shape[:1] + shape[2:])))
    out = node.op(cols, **node.params)
    out = reshape(out, shape=(_rows(node.params), shape[0]) + shape[2:])
    return transpose(out, axes=(1, 0) + rest)


sparse_matmul.defbatch(_columns)
sparse_solve.defbatch(_columns)


# ---- a matrix with traced entries and a constant pattern ---------------------------------
class Pattern:
    """The constant sparsity pattern of a sparse matrix whose entries are traced: the row
    and column of each stored entry (COO, duplicates summed) and the shape.

    Equal, and hashed, by identity, as `SparseMatrix` is (a pattern is made once per
    matrix the user builds, and every product and solve with that matrix shares it); a
    graph's digest reads the indices.  It keeps the last LU factors it made, for the data
    they were made of: a gradient's transposed solve, or a Newton step's repeated solves
    with one matrix, reuse them.

    Example:
        >>> import numpy as np
        >>> p = Pattern(np.array([0, 1, 1]), np.array([0, 0, 1]), (2, 2))
        >>> p.product(np.array([2.0, 1.0, 3.0]), np.array([1.0, 1.0]), transpose=False)
        array([2., 4.])
        >>> p
        Pattern[2x2, 3 stored]
    """

    __slots__ = ("rows", "cols", "shape", "_lu", "_stacked", "__weakref__")

    def __init__(self, rows, cols, shape):
        self.rows = _frozen(rows)
        self.cols = _frozen(cols)
        self.shape = (int(shape[0]), int(shape[1]))
        self._lu = []           # [(data, dtype, permc_spec, factors)], the newest last
        self._stacked = {}      # batch size -> the block-diagonal pattern (vmap)

    def __repr__(self):
        return f"Pattern[{self.shape[0]}x{self.shape[1]}, {self.rows.size} stored]"

    def digest_into(self, h):
        h.update(f"{self.shape}".encode())
        h.update(self.rows.tobytes())
        h.update(self.cols.tobytes())

    @property
    def nnz(self):
        return self.rows.size

    def matrix(self, data, fmt="coo"):
        """The scipy.sparse array with these entries (duplicates kept, as SciPy's COO)."""
        import scipy.sparse as sp
        return sp.coo_array((data, (self.rows, self.cols)), shape=self.shape).asformat(fmt)

    def product(self, data, x, transpose):
        """op(A) @ x on NumPy arrays, by SciPy's sparse product."""
        if x.dtype == object or data.dtype == object:
            raise NotImplementedError("a product with a sparse matrix has no "
                                      "element-by-element form")
        a = self.matrix(data, "csr")
        return np.asarray((a.T if transpose else a) @ x)

    def solve(self, data, b, transpose, permc_spec):
        """op(A)⁻¹ b on NumPy arrays, by SuperLU; the factors of the same data are reused."""
        if b.dtype == object or data.dtype == object:
            raise NotImplementedError("a sparse solve has no element-by-element form")
        dtype = float_dtype(data.dtype, b.dtype)
        lu = None
        for d, t, p, factors in self._lu:
            # (comparing the entries costs O(nnz), nothing beside a factorisation)
            if t == dtype and p == permc_spec and d.shape == data.shape and \
                    np.array_equal(d, data):
                lu = factors
        a = None
        if lu is None:
            a = self.matrix(data.astype(dtype), "csc")
            lu = _factors(a, permc_spec)
            if lu is not None:
                self._lu = self._lu[-1:] + [(data.copy(), dtype, permc_spec, lu)]
        return _solved(lu, a, b, dtype, transpose, permc_spec)

    def stacked(self, size):
        """The pattern of the block-diagonal matrix of `size` copies (a vmapped batch of
        matrices with this pattern: their data one after the other)."""
        found = self._stacked.get(size)
        if found is None:
            m, n = self.shape
            shift = np.arange(size)[:, None]
            found = self._stacked[size] = Pattern((self.rows + m * shift).ravel(),
                                                  (self.cols + n * shift).ravel(),
                                                  (size * m, size * n))
        return found


def _frozen(index):
    a = np.array(index, dtype=np.intp)          # (a copy: the caller may change its own)
    a.flags.writeable = False
    return a


def entry_products(g, x, pattern, transpose):
    """``g[row_k] · x[col_k]`` for each stored entry k (``g[col_k] · x[row_k]`` if
    `transpose`), summed over the columns of a 2-D g and x: the derivative of op(A) x in
    entry k, contracted with g.  Written with getitem and mul, so it differentiates again.

    Example:
        >>> import numpy as np
        >>> p = Pattern(np.array([0, 1]), np.array([1, 1]), (2, 2))
        >>> entry_products(np.array([1.0, 2.0]), np.array([5.0, 7.0]), p, False)
        array([ 7., 14.])
    """
    rows, cols = (pattern.cols, pattern.rows) if transpose else (pattern.rows, pattern.cols)
    out = getitem(g, index=(rows,)) * getitem(x, index=(cols,))
    return sum_(out, axis=(1,), keepdims=False) if len(shape_of(out)) == 2 else out


def _data_cotangent(ct, data):
    """A real data vector's cotangent is real (the real part of a complex one)."""
    return real_part(ct) if np.dtype(data.dtype).kind != "c" else ct


def _data_matmul_aval(args, params):
    data, x = args
    return (_rows(params),) + x.shape[1:], np.result_type(data.dtype, x.dtype)


def _data_solve_aval(args, params):
    data, b = args
    return (_rows(params),) + b.shape[1:], float_dtype(data.dtype, b.dtype)


sparse_data_matmul = defprimitive(
    "sparse_data_matmul", lambda data, x, pattern, transpose: pattern.product(data, x,
                                                                              transpose),
    cost="mul", complex=True, abstract_eval=_data_matmul_aval,
    doc="sparse_data_matmul(data, x, pattern=P, transpose=False): A @ x (Aᵀ @ x if "
        "transpose) for the sparse matrix A with entries `data` at P's rows and columns "
        "and a dense x of 1 or 2 dimensions.")
sparse_data_matmul.defjvp(lambda ts, data, x, ans, pattern, transpose: sum_nonzero((
    None if ts[0] is None else sparse_data_matmul(ts[0], x, pattern=pattern,
                                                  transpose=transpose),
    None if ts[1] is None else sparse_data_matmul(data, ts[1], pattern=pattern,
                                                  transpose=transpose))))
sparse_data_matmul.defvjp(
    lambda g, data, x, ans, pattern, transpose: _data_cotangent(
        entry_products(g, x, pattern, transpose), data),
    lambda g, data, x, ans, pattern, transpose: sparse_data_matmul(
        data, g, pattern=pattern, transpose=not transpose))

sparse_data_solve = defprimitive(
    "sparse_data_solve", lambda data, b, pattern, transpose, permc_spec: pattern.solve(
        data, b, transpose, permc_spec),
    cost="div", complex=True, abstract_eval=_data_solve_aval,
    doc="sparse_data_solve(data, b, pattern=P, transpose=False, permc_spec='COLAMD'): the "
        "x of A x = b (Aᵀ x = b if transpose) for the square sparse matrix A with entries "
        "`data` at P's rows and columns and a dense b of 1 or 2 dimensions, by SuperLU.")


def _solve_jvp(ts, data, b, ans, pattern, transpose, permc_spec):
    # A dx + dA x = db
    rhs = sum_nonzero((ts[1], None if ts[0] is None else -sparse_data_matmul(
        ts[0], ans, pattern=pattern, transpose=transpose)))
    return sparse_data_solve(data, rhs, pattern=pattern, transpose=transpose,
                             permc_spec=permc_spec)


def _solve_adjoint(g, data, pattern, transpose, permc_spec):
    return sparse_data_solve(data, g, pattern=pattern, transpose=not transpose,
                             permc_spec=permc_spec)


sparse_data_solve.defjvp(_solve_jvp)
sparse_data_solve.defvjp(
    lambda g, data, b, ans, pattern, transpose, permc_spec: _data_cotangent(-entry_products(
        _solve_adjoint(g, data, pattern, transpose, permc_spec), ans, pattern, transpose),
        data),
    lambda g, data, b, ans, pattern, transpose, permc_spec: _solve_adjoint(
        g, data, pattern, transpose, permc_spec))


def _data_batch(args, mapped, node):
    """A batch of dense operands with shared data is more columns (`_columns`); a batch of
    data is one block-diagonal matrix of the examples' matrices, times (or solving for)
    the examples' operands one after the other."""
    if not mapped[0]:
        out = _columns(args[1:], mapped[1:], _Shared(node, args[0]))
        return out
    data, x = args
    size = shape_of(data)[0]
    params = node.params
    x = x if mapped[1] else broadcast_to(x, shape=(size,) + tuple(shape_of(x)))
    xshape = shape_of(x)
    flat = reshape(x, shape=(size * xshape[1],) + tuple(xshape[2:]))
    out = node.op(reshape(data, shape=(size * shape_of(data)[1],)), flat,
                  **{**params, "pattern": params["pattern"].stacked(size)})
    return reshape(out, shape=(size, _rows(params)) + tuple(xshape[2:]))


class _Shared:
    """The operation on one example, seen by `_columns` as a primitive of the dense
    operand alone (the data, the same for every example, is bound)."""

    def __init__(self, node, data):
        self.params = node.params
        self._op, self._data = node.op, data

    def op(self, x, **params):
        return self._op(self._data, x, **params)


sparse_data_matmul.defbatch(_data_batch)
sparse_data_solve.defbatch(_data_batch)
