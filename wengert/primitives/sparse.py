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
"""
from __future__ import annotations

import math
import weakref

import numpy as np

from .registry import defprimitive, float_dtype, shape_of
from .array import reshape, transpose


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
        from scipy.sparse import linalg as spla
        dtype = float_dtype(self.dtype, b.dtype)
        lu = self._lu.get((permc_spec, dtype))
        if lu is None:
            try:
                lu = spla.splu(self.matrix.tocsc().astype(dtype), permc_spec=permc_spec)
            except RuntimeError:         # exactly singular: SciPy's spsolve warns, gives nan
                a = self.matrix.T if transpose else self.matrix
                return np.asarray(spla.spsolve(a.tocsc(), b, permc_spec=permc_spec))
            self._lu[(permc_spec, dtype)] = lu
        return lu.solve(np.asarray(b, dtype=np.result_type(dtype, b.dtype)),
                        trans="T" if transpose else "N")


_HELD = weakref.WeakValueDictionary()


def held(matrix) -> SparseMatrix:
    """The parameter standing for `matrix` (one per matrix while any graph holds it)."""
    found = _HELD.get(id(matrix))
    if found is None or found.matrix is not matrix:
        found = _HELD[id(matrix)] = SparseMatrix(matrix)
    return found


def _rows(params):
    shape = params["matrix"].shape
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
