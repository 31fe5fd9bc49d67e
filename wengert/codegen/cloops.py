"""Array graphs as C loops: the loop mode of ``wg.compile(f, ..., backend="c")``.

Written element by element (`scalarize`), C code grows with the arrays: a Rosenbrock
gradient of 1000 elements is 124 KB of C that takes seconds to compile.  Here an array
stays an array, and the C is a few loops over it whatever its size:

* **elementwise** nodes of one shape (with NumPy's broadcasting of their arguments,
  scalars and constants) are *fused*: one loop nest computes each element through the
  whole chain in registers, and stores only the values something else reads (an output,
  a view, a reduction in another loop, a matrix product);
* **views** (basic slicing with steps, reshape, transpose, broadcast_to, flip) are no
  code: an element of a view is an element of the buffer it views, at an offset plus
  strides, found by NumPy itself on a stand-in array (`_view`).  A view of a value a
  loop computes is computed again where it is read (`_Body.recompute`), where that is
  cheap (`RECOMPUTE`), rather than stored and read back: the reverse sweep of
  ``x[1:] - x[:-1]**2`` then needs no stored array at all;
* **reductions** (sum, prod, max, min over any axes, and ``sum_to`` of broadcasting)
  accumulate in the loop of their argument; float sums along the innermost loop add in
  NumPy's pairwise order (`_pairwise_lines`);
* **concatenate**, **pad** with zeros and **index_add** of a basic slice into zeros (a
  reverse sweep's ``x[1:]``) are read in place: an element is its piece's element where
  a region holds it, else 0 (`_Body.pieces`), the loops reading them split into boxes
  where their regions begin and end, so that no box tests where it is.  The reverse
  sweep of a stencil is then one loop with no zeroed array.  Where a region has steps,
  or the value is read other than elementwise (a matrix product, a reshape that splits
  its dims), its parts are written into regions of a zeroed buffer instead
  (`_Plan._store_parts`);
* **gathers** (``x[idx]`` with one integer index array, ``take_along_axis``) and their
  transposes, **scatter-adds** (``index_add`` at such an index, ``put_along_axis``), are
  a loop over the gathered elements reading through the index array (a constant one is
  a constant buffer) with NumPy's semantics (`_Indexed`): an index counts from the end
  where negative, and one out of bounds is noted (``wg_index``) for the glue to raise
  c's IndexError; a scatter adds in the order of the index's elements into zeros, as
  NumPy's ``bincount`` and ``np.add.at`` do, so repeated indices sum to its bits;
* **matmul** of two matrices calls BLAS's ``dgemm`` where it does enough work to gain
  (`BLAS_WORK` multiply-adds) and SciPy is there to lend its BLAS (`dgemm_address`):
  the C function takes the pointer as an argument, so it links to nothing.  A transposed
  operand is passed with its ``'T'`` flag, not copied.  Other products (of vectors, small,
  without SciPy, of operands BLAS cannot read in place) are a plain ``i, k, j`` loop nest;
* **convolutions** (``conv2d`` with any stride, padding, dilation and groups, and its two
  gradients) go image by image (`_conv_lines`): the image's windows are copied into a
  scratch buffer, a row per channel and tap, zeros where a window reaches into the
  padding (im2col), and multiplied by the kernels, a product per group, BLAS's where it
  does `CONV_BLAS_WORK` multiply-adds, else loops; an input gradient computes the rows,
  then adds each into its window's place.  Their sums add in another order than the
  NumPy code's, so they differ from it by rounding;
* **max pooling** and its derivatives' primitives (``pool_scatter``, ``pool_gather``,
  ``pool_argmax``) are a loop over the windows reading their taps through a table of
  offsets (`_pool_lines`): the maximum folds them as NumPy's ``maximum`` does, and a
  window's cotangent goes to its first maximum (or first nan), as
  ``wengert.primitives.nn._first_hits`` finds it, overlapping windows adding from the
  last window back, which is the NumPy code's order: NumPy's bits;
* **loops** (``wg.scan``, ``fori_loop``, ``while_loop``, their derivatives' loops) are
  a C loop calling, per step, a static function written from the body by this same
  code (`_functions` with ``pointers``: its scalars in memory too; a loop in a body is
  a function of its own).  The carry lives in two buffers the steps write in turn,
  their pointers swapped; a scan's step reads its rows of the xs and writes its rows of
  the ys in place; a carry plus a scatter-add (the gradient of ``x[i]`` in a loop) is
  updated in place at the scattered elements (`_updates`), NumPy's bits (`_Looped`,
  `_loop_lines`).  A body's index out of bounds stops the loop, and the glue raises.

The fused softmax cross-entropy of ``wengert.nn`` and its gradient are first written
with what the loops write (`_unfused`): a max, exp, sum and log over rows, the label's
entry picked by comparing it with each class.  Its labels, checked in range where a
trace had not their values (``checked_labels``), are checked by the Python glue before
the call, as NumPy would, with the same error.

The schedule is a list of steps (a fused loop nest, a matrix product, a gather or
scatter, a convolution or pooling) in the order of the graph.  A node joins the last
loop of its shape when everything it reads is ready before that loop, and otherwise
starts a new one: fusion never reorders a value before what it depends on (a softmax's
``x - max(x)`` reads the max after its loop).

Each loop's body is a small graph of scalars written by the one emitter with `c.CFormat`
(so NumPy's conventions of sign, maximum, remainder, integer arithmetic are the scalar
back-end's), its reads and writes being array elements.  The function takes pointers to
the arguments' data (C-contiguous), to non-uniform constants, to the results, which
Python allocates, and to a workspace holding the temporary arrays, which the compiled
function keeps between calls.  What it cannot write raises `NotLooped`, naming the
primitive.
"""
from __future__ import annotations

import ctypes
import itertools
import math
import os
import platform
import re
import types

import numpy as np

from ..graph.graph import Graph, ShapeDtype
from ..primitives import array as A, nn as NN, scalar as S
from ..loops import Loop
from ..primitives.pack import bitcast, part, place
from ..primitives.registry import CONST, INPUT
from ..primitives.shape import broadcast_to, sum_to
from . import c as C
from . import python as py
from .emit import EmitError, Symbol, emit
from .names import C_RESERVED, Names
from .scalarize import elementwise


class NotLooped(ValueError):
    """A graph the loop mode does not write; the message says what it has."""


#: Loop mode is chosen where the live arrays hold more elements than this in all
#: (measured, see docs/compile.md: above it, scalarised C takes longer to compile than
#: loops, and runs no faster).
LOOP_ELEMENTS = 100

#: Loops whose bodies hold only scalars stay scalarised (their carry in registers: a
#: scalar oscillator's 10,000 steps ran in 44 us against 78 as loops) where the arrays
#: computed outside them (not arguments, not the loops' results) hold at most this many
#: elements: scalarised, each is a statement of one long function (the gradient of a scan
#: over the 3,000 elements of a transposed array: 25 s to compile, against 0.1 s as
#: loops; over 1,000, 4 s, and 19 us a call against 16).
SCALAR_LOOP_ELEMENTS = 1000

_CTYPES = {np.dtype(np.float64): "double", np.dtype(np.int64): "int64_t",
           np.dtype(np.bool_): "unsigned char", np.dtype(np.uint8): "unsigned char"}
_LOCAL_CTYPES = {np.dtype(np.float64): "double", np.dtype(np.int64): "int64_t",
                 np.dtype(np.bool_): "int"}
# (flags: no fused a*b+c, which rounds once where NumPy rounds twice; math functions that
# need not set errno, which lets sqrt be an instruction and its loop vectorise; no
# predictive commoning, gcc's reuse of loads across iterations: on the boxes of a long
# stencil's gradient it took a quarter of gcc's time, and the loops, bound by memory, ran
# no faster with it (examples/heat_inverse.py, benchmarks/c_loops.py; clang ignores it);
# no trapping math: the results are the same, but gcc may then compute both arms of a
# comparison's select and blend them, where it kept the branch lest the unused arm raise
# a floating-point trap nothing here enables: a where and maximum loop of 1e6 elements
# took 3.9 ms instead of 13 at SSE2, 1.1 instead of 1.6 with AVX-512)
FLAGS = ("-O3", "-fno-math-errno", "-fno-predictive-commoning", "-fno-trapping-math")

#: The x86-64 levels the loops are compiled for where the machine runs them (`target`),
#: widest first, with their flags: vectors of 8 doubles (AVX-512) or 4 (AVX2), and
#: libmvec's 8- and 4-lane functions, against SSE2's 2 without them.  On an AVX-512 VM
#: (gcc 12) 8 lanes ran the gradients of benchmarks/c_loops.py 1.3 to 2.7 times faster
#: (a `where` loop 5 times), 4 lanes 1.3 to 2 times, and compiled as fast.  The FMA
#: these levels allow stays off (-ffp-contract=off): + - * / still round as NumPy's.
LEVELS = {"x86-64-v4": ("-march=x86-64-v4", "-mprefer-vector-width=512"),
          "x86-64-v3": ("-march=x86-64-v3",)}

#: The level of SSE2 alone, which every x86-64 runs: the loops' flags are then `FLAGS`.
BASELINE = "x86-64"

#: The environment variable naming the widest level the loops may be compiled for:
#: ``x86-64`` turns the wider ones off, ``x86-64-v3`` keeps AVX2 but not AVX-512.
TARGET_VARIABLE = "WENGERT_C_TARGET"

_RUNS = {}              # level -> whether this machine runs it and the compiler writes it


def target() -> str:
    """The x86-64 level the loops are compiled for: the widest of `LEVELS` that the
    machine runs, that the compiler writes, and that ``$WENGERT_C_TARGET`` allows (all
    where it is unset), else `BASELINE`.  The flags are in the key of the persistent
    cache, so a library built for one level is never loaded where another is chosen.

    Example:
        >>> target() in ("x86-64-v4", "x86-64-v3", "x86-64")
        True
    """
    widest = os.environ.get(TARGET_VARIABLE) or next(iter(LEVELS))
    if widest != BASELINE and widest not in LEVELS:
        raise ValueError(f"{TARGET_VARIABLE}={widest!r}: the loops are compiled for one "
                         f"of {', '.join([*LEVELS, BASELINE])}")
    levels = list(LEVELS)
    allowed = levels[levels.index(widest):] if widest in LEVELS else []
    return next((level for level in allowed if _runs(level)), BASELINE)


def flags() -> tuple:
    """The compiler flags of the loops: `FLAGS` and those of the `target` level.

    Example:
        >>> flags()[:len(FLAGS)] == FLAGS
        True
    """
    return FLAGS + LEVELS.get(target(), ())


def _runs(level):
    """Whether this machine's processor and system run code of x86-64 `level`, and the
    compiler writes it: probed once per level.  The processor is asked by code compiled
    for the baseline (``__builtin_cpu_supports``, GCC 12 or Clang 16 on), never by code
    of the level, which would stop the process where it does not run."""
    if level not in _RUNS:
        probe = "\n".join(["int wg_runs(void)", "{", "    __builtin_cpu_init();",
                           f'    return __builtin_cpu_supports("{level}");', "}", ""])
        try:
            runs = platform.machine().lower() in ("x86_64", "amd64") and \
                C.library(probe, FLAGS).wg_runs() != 0
            if runs:    # (compiled, not called: does the compiler take the level's flags?)
                C.library(probe, FLAGS + LEVELS[level])
        except Exception:           # (no compiler, an older one, another processor)
            runs = False
        _RUNS[level] = runs
    return _RUNS[level]


#: A loop reading padded values in place is split into boxes, at most this many (else
#: they are filled in memory, as where their regions are no boxes).
MAX_BOXES = 64

#: A product of matrices calls BLAS (where SciPy lends it) from this many multiply-adds
#: ``m*k*n`` on (measured, see docs/compile.md: BLAS was 2x faster at 16x16x16, 5x at
#: 128^3; below about 14^3, the loops were as fast or faster, with no call).
BLAS_WORK = 4096

#: A convolution's product of one image's windows and one group's kernels calls BLAS from
#: this many multiply-adds on (measured on a convolution's value and gradients: BLAS was
#: 1.3 times faster at 900, 3.5 at 4608 (the CNN of benchmarks/arrays.py), 5 at 1.2e6; the
#: loops as fast at about 300).
CONV_BLAS_WORK = 512

#: A view of a loop's value is computed again where it is read (not stored and read
#: back) where that takes at most this many operations per element.
RECOMPUTE = 32

_REDUCE = {A.sum: S.add, sum_to: S.add, A.prod: S.mul, A.amax: S.maximum,
           A.amin: S.minimum}
_INDEX = "ijk"          # loop indices, then i3, i4, ...


def wanted(graph) -> bool:
    """Whether ``backend="c"`` should write `graph` as loops: it holds more than
    `LOOP_ELEMENTS` array elements (constants aside), a loop's body counting its own
    times its steps (a while loop's once), and the loop's results not again.  Loops of
    scalars only stay scalarised where the arrays computed outside them hold at most
    `SCALAR_LOOP_ELEMENTS`.  Measured
    (docs/compile.md): a body of arrays ran faster as loops even at 8 elements a step,
    one of scalars 1.7 times slower (scalarised, its carry stays in registers).

    Example:
        >>> import numpy as np, wengert as wg
        >>> wanted(wg.trace(lambda x: (x * x).sum(), np.ones(3)))
        False
        >>> wanted(wg.trace(lambda x: (x * x).sum(), np.ones(10_000)))
        True
        >>> wanted(wg.trace(lambda x: wg.scan(lambda c, _: (c * 2.0, None), x,
        ...                                    length=50)[0], np.ones(3)))
        True
    """
    total, todo, in_bodies, loops = 0, [(graph, 1)], 0, False
    computed = 0                # (elements computed outside the loops, inputs aside)
    while todo:                 # (over the nesting of loops, not the graph's depth)
        g, times = todo.pop()
        packed = set()          # (a loop's results and their parts: counted in its body)
        plumbing = set()        # (node indices are the graph's own, as packed's)
        for n in g.live_nodes():
            if isinstance(n.op, Loop):
                todo.append((n.op.body, times * getattr(n.op, "length", 1)))
                packed.add(n.index)
                loops = True
            elif n.op is part and n.args[0].index in packed:
                packed.add(n.index)
            elif n.op is not CONST and n.shape:
                total += n.size * times
                in_bodies += g is not graph
                # (a loop's cotangents packed, ``place``, and summed: scalarised, zeros
                # that fold away, and copies of runs)
                if n.op is place or n.op in (S.add, part) and all(
                        a.index in plumbing or a.op is CONST for a in n.args):
                    plumbing.add(n.index)
                elif g is graph and n.op is not INPUT:
                    computed += n.size
    if loops and not in_bodies:         # (loops of scalars: see SCALAR_LOOP_ELEMENTS)
        return computed > SCALAR_LOOP_ELEMENTS
    return total > LOOP_ELEMENTS


class _Buffer:
    """Memory holding a node's elements in C order: an argument's (``role`` "in"), a
    constant's ("const"), a result's ("out"), a temporary's ("temp")."""

    def __init__(self, name, dtype, size, role):
        self.name, self.dtype, self.size, self.role = name, np.dtype(dtype), size, role
        self.zeroed = False         # filled with zeros before its first write
        self.kept = False           # zero when the function is first called, and after


class _At:
    """Where a node's elements are: element ``j`` (a multi-index of the node's shape) is
    ``buffer[offset + sum(strides * j)]``."""

    def __init__(self, buffer, offset, strides):
        self.buffer, self.offset, self.strides = buffer, offset, tuple(strides)


def _contiguous(buffer, shape):
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step if d != 1 else 0)
        step *= d
    return _At(buffer, 0, reversed(strides))


class _Group:
    """One loop nest over `shape`: its `members` (elementwise nodes) computed per element,
    its `sinks` (reductions) accumulated, its `stores` ``(node, _At over shape, plus0)``
    written (plus0: as ``0.0 + v``, index_add's sum into zeros)."""

    def __init__(self, index, shape):
        self.index, self.shape = index, tuple(shape)
        self.members, self.sinks, self.stores = [], [], []


class _Indexed:
    """A gather or scatter-add step: a loop over `shape` (the gathered elements) whose
    element j is element ``pos(j)`` of `target` (`_At`, the gather's source, the
    scatter's zeroed result): along `axis` the index read at `index` (a `_At` with
    strides over the loop's dims, or an int), wrapped and checked; along each other
    dim d, the loop's dim ``dims[d]`` (None: 0).  `value`: the scatter's ``(_At,
    strides over the loop)`` of what it adds, None for a gather, which writes `out`,
    and for an update in place, which adds `apply` (the scatter's) into `target`."""

    def __init__(self, index, node, shape, target, axis, dims, where, value=None,
                 out=None):
        self.index, self.node, self.shape = index, node, tuple(shape)
        self.target, self.axis, self.dims, self.where = target, axis, dims, where
        self.value, self.out = value, out
        self.apply = None       # an update in place (`_Plan._update`): the scratch's _At


class _Window:
    """A convolution or pooling step (`_window_lines`): `node`, one of `_WINDOWS`, its
    arguments at `ats` (`_At`s); a convolution's scratch buffer `cols` for one image's
    windows, and whether its products call BLAS (`blas`)."""

    def __init__(self, index, node):
        self.index, self.node = index, node
        self.ats, self.cols, self.blas = [], None, False


_CONVS = (NN.conv2d, NN.conv2d_input_grad, NN.conv2d_weight_grad)
_WINDOWS = _CONVS + (NN.max_pool2d, NN.pool_scatter, NN.pool_gather, NN.pool_argmax)


def _conv_shapes(n):
    """The images', kernels' and outputs' shapes of a convolution primitive's node."""
    op, (a, b) = n.op, n.args
    if op is NN.conv2d:
        return a.shape, b.shape, n.shape
    if op is NN.conv2d_input_grad:
        return n.shape, b.shape, a.shape
    return a.shape, n.shape, b.shape


class _Looped:
    """A loop step (`_loop_lines`): `node`, a scan or while loop, its body the C function
    `body` (`plan`: the body's `_Plan`), called once per step.  `args`: `_At`s of the
    node's arguments (C-contiguous; a while loop's test aside, `go`, C text); `carry`:
    two buffers per carry, which the steps write in turn; `ys`: a scan's stacked ys;
    `work`: the body's workspace; `consts`: the outer buffers of the body's constants;
    `cur`, `nxt`, `step`: names of the C variables of the loop."""

    def __init__(self, index, node):
        self.index, self.node = index, node


class _TooManyBoxes(Exception):
    """A loop would be split into more than `MAX_BOXES` boxes."""


class _Product:
    """A matrix product step; `gemm`: its operands' ``(flag, leading dimension)`` as
    BLAS reads them (`_gemm_operand`), where it calls BLAS, else None."""

    def __init__(self, index, node, gemm=None):
        self.index, self.node, self.gemm = index, node, gemm


_DGEMM = {}


def dgemm_address():
    """The address of SciPy's ``dgemm`` (`scipy.linalg.cython_blas`, the Fortran BLAS
    interface: arguments by reference, matrices column-major, ``int`` sizes), or None
    without SciPy (or with one whose dgemm takes other than ``int`` sizes).  Looked up
    once.

    Example:
        >>> address = dgemm_address()
        >>> address is None or address > 0
        True
    """
    if "address" not in _DGEMM:
        _DGEMM["address"] = _capsule_address()
    return _DGEMM["address"]


def _capsule_address():
    try:
        from scipy.linalg.cython_blas import __pyx_capi__ as capi
        capsule = capi["dgemm"]
    except (ImportError, KeyError, AttributeError):
        return None
    # (prototypes of our own: setting the argtypes of ctypes.pythonapi's functions would
    # change them for every other user in the process)
    api = ctypes.pythonapi
    get_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.py_object)(
        ("PyCapsule_GetName", api))
    get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
        ("PyCapsule_GetPointer", api))
    name = get_name(capsule)
    # (the signature Cython writes as the capsule's name: the sizes must be C ints, as
    # the generated call passes them)
    if not name or not name.replace(b" ", b"").startswith(b"void(char*,char*,int*,int*,int*,"):
        return None
    return get_pointer(capsule, name) or None


def _gemm_operand(at, shape):
    """``(flag, ld)``: how column-major BLAS reads a matrix at `at` of `shape` (r, c) in
    place, as its transpose (flag ``'N'``: rows of stride ld, elements of stride 1) or as
    itself (``'T'``: columns of stride ld); None where it cannot (broadcast, reversed or
    stepped in both dims)."""
    (r, c), (sr, sc) = shape, at.strides
    if sc == 1 or c == 1:
        ld = sr if r > 1 else max(c, 1)
        if ld >= max(c, 1):
            return "N", ld
    if sr == 1 or r == 1:
        ld = sc if c > 1 else max(r, 1)
        if ld >= max(r, 1):
            return "T", ld
    return None


class _Piece:
    """An argument `part` of a pad, concatenate or index_add `n`, placed in `region` (a
    basic index) of n.  Where the region is a box, `box` is its ``(lo, hi)`` along each
    dim of n, and `inverse` the index map from n's index to part's; else both are None.
    plus0: its elements are ``v + 0.0`` (index_add's sum into zeros)."""

    def __init__(self, n, part, region, plus0):
        self.part, self.region, self.plus0 = part, region, plus0
        shape = _region_shape(n.shape, region)
        self.size = math.prod(shape)
        self.box = self.inverse = None
        if not self.size:
            self.box = [(0, 0)] * n.ndim
            return
        at = _view(_region, _contiguous(_Buffer("", n.dtype, n.size, "temp"), n.shape),
                   n.shape, {"index": tuple(region)})
        to_part = _decode(at, n.shape, shape) if at is not None else None
        if to_part is None or (abs(to_part[1]) > 1).any():
            return                          # (steps: no box)
        c, K = to_part
        box, ck, Kk = [], np.zeros(len(shape), np.int64), np.zeros((len(shape), n.ndim),
                                                                 np.int64)
        for d in range(n.ndim):
            e = np.flatnonzero(K[d])
            if e.size:
                (e,), s = e, K[d, e[0]]
                box.append((c[d], c[d] + shape[e]) if s > 0 else (c[d] - shape[e] + 1,
                                                                  c[d] + 1))
                ck[e], Kk[e, d] = -c[d] * s, s
            else:
                box.append((c[d], c[d] + 1))
        self.box = [(int(lo), int(hi)) for lo, hi in box]
        self.inverse = _then(_bmap(part.shape, shape), (ck, Kk))


def _is_elementwise(op) -> bool:
    return op is A.astype or op is S.numpy_ufunc or elementwise(op)


def _uniform(value):
    """The one value of a constant array whose elements are all the same bits, else
    None."""
    flat = np.ascontiguousarray(value).reshape(-1)
    if flat.size == 0:
        return None
    bits = flat.view(np.uint8).reshape(flat.size, -1)
    return flat[0].item() if (bits == bits[0]).all() else None


def _getitem_view(x, index):
    return _region(x, A.decode_index(index))


def _region(x, index):
    # (with an Ellipsis, x[1, 2] is a 0-d view rather than a NumPy scalar)
    return x[index if any(i is Ellipsis for i in index) else index + (Ellipsis,)]


_VIEWS = {A.getitem: _getitem_view,
          A.reshape: lambda x, shape: np.reshape(x, shape),
          A.transpose: lambda x, axes: x.transpose(axes),
          broadcast_to: lambda x, shape: np.broadcast_to(x, shape),
          A.flip: lambda x, axes: np.flip(x, axis=axes),
          part: lambda x, start, stop, shape: np.reshape(x, -1)[start:stop].reshape(shape)}


def _view(fn, at, shape, params):
    """The `_At` of a view (`fn` of `_VIEWS`) of elements at `at` of this shape, or None
    where NumPy would copy (a reshape of a transpose).  NumPy finds it: the view is taken
    of a stand-in of the buffer, bytes of int8 that are never read, whose offset and
    strides are then the elements'."""
    space = np.empty(max(at.buffer.size, 1), np.int8)
    x = np.lib.stride_tricks.as_strided(space[at.offset:], shape, at.strides)
    with np.errstate(all="ignore"):
        r = fn(x, **params)
    if type(r) is not np.ndarray or (r.size and not np.may_share_memory(r, space)):
        return None
    offset = r.__array_interface__["data"][0] - space.__array_interface__["data"][0]
    return _At(at.buffer, offset if r.size else 0, r.strides if r.size else (0,) * r.ndim)


class _Plan:
    """The steps and buffers of a graph's loops (see the module doc)."""

    def __init__(self, graph, names, in_place=True, name="wg_f", pointers=False,
                 updates=()):
        self.graph, self.names, self.in_place = graph, names, in_place
        # (pointers: a loop's body, whose scalar inputs and results are in memory too)
        self.name, self.pointers = name, pointers
        # a body's carries updated in place (`_updates`): input node index -> result k,
        # and their scatters' node indices
        self.updated = {graph.inputs[i].index: k for i, k in updates}
        self.kept = {a.index for i, k in updates for a in graph.outputs[k].args
                     if a is not graph.inputs[i]}
        self.steps = []
        self.pieces = {}        # loop node (or part) -> [(start, stop, _Buffer, dtype)]
        self.retyped = {}       # ``part`` of a loop's int64 or bool piece -> (_At, dtype)
        self.bodies = []        # C functions of the loops' bodies (theirs first)
        self.at = {}            # node index -> _At: elements in memory
        self.scalar = {}        # node index -> C text of a scalar (a parameter, a local)
        self.literal = {}       # node index -> a number (a scalar or uniform constant)
        self.group_of = {}      # node index -> the _Group computing it
        self.virtual = {}       # node index -> (member, index map): a view of a member
        self.padded = {}        # node index -> [_Piece]: a pad, concatenate, index_add
        self.touches = set()    # values that read a padded one (recomputing them does)
        self.cost = {}          # member index -> nodes computed to compute it again
        self.ready = {}         # node index -> the step after which it can be read
        self.last = {}          # shape -> the last group of that shape
        self.buffers, self.locals = [], []
        self.checks = []        # (argument position, params) of labels the glue checks
        self.bounds = False     # whether indices are checked (the function takes wg_bad)
        self.blas = False       # whether a product calls BLAS (the function takes dgemm)
        self.out_slot = {}
        for k, o in enumerate(graph.outputs):
            self.out_slot.setdefault(o.index, k)
        self.outs = [None] * len(graph.outputs)
        users = {}
        for n in graph.live_nodes():
            for a in n.args:
                users.setdefault(a.index, []).append(n)
        self.users = users
        for n in graph.inputs:
            self._input(n)
        for n in graph.live_nodes():
            if n.op is not INPUT:
                self._node(n)
        self._results()

    # ---- values ------------------------------------------------------------------------
    def _buffer(self, node, role="temp", stem=None):
        """A new buffer for node's elements: the result's, if node is one."""
        if role == "temp" and node.index in self.out_slot and \
                self.outs[self.out_slot[node.index]] is None:
            k = self.out_slot[node.index]
            role, stem = "out", f"out{k}"
        buf = _Buffer(self.names.user(stem or f"t{node.index}"), node.dtype, node.size,
                      role)
        if role == "out":
            self.outs[self.out_slot[node.index]] = buf
        self.buffers.append(buf)
        return buf

    def _input(self, n):
        _check_dtype(n)
        self.ready[n.index] = -1
        name = self.names.user(n.label())
        if n.shape:
            role = "inout" if n.index in self.updated else "in"
            self.at[n.index] = _contiguous(_Buffer(name, n.dtype, n.size, role), n.shape)
            self.buffers.append(self.at[n.index].buffer)
        else:
            self.scalar[n.index] = name
            self.locals.append((name, n, "in"))

    def _const(self, n):
        self.ready[n.index] = -1
        value = n.value if n.shape else np.asarray(n.value)
        one = _uniform(value) if n.shape else value.item()
        if one is not None:
            self.literal[n.index] = one
            return
        buf = self._buffer(n, "const", f"k{n.index}")
        buf.value = np.ascontiguousarray(value)
        self.at[n.index] = _contiguous(buf, n.shape)

    def readable(self, a):
        """Make a's value readable outside its loop (stored, if it is computed in one)."""
        if a.index in self.at or a.index in self.scalar or a.index in self.literal:
            return
        g = self.group_of[a.index]
        if a.shape == ():
            name = self.names.user(f"s{a.index}")
            self.locals.append((name, a, "local"))
            self.scalar[a.index] = name
            g.stores.append((a, name, False))
        else:
            buf = self._buffer(a)
            self.at[a.index] = _contiguous(buf, a.shape)
            g.stores.append((a, self.at[a.index], False))

    def _in_memory(self, a):
        """a's `_At`, storing a (or a copy of a's elements) where they are not in memory."""
        if a.index not in self.at and a.index in self.padded:
            self._store_parts(a, self.padded[a.index])
        if a.index not in self.at and a.index in self.virtual:
            base, (c, K) = self.virtual[a.index]
            mem = self._in_memory(base)
            strides = np.asarray(mem.strides, np.int64)
            self.at[a.index] = _At(mem.buffer, mem.offset + int(strides @ c),
                                   [int(s) for s in strides @ K])
        if a.index not in self.at and a.index in self.group_of:
            self.readable(a)
        if a.index not in self.at:          # (a scalar, a literal: copied to memory)
            buf = self._buffer(a)
            at = _contiguous(buf, a.shape)
            g = self._join([a], a.shape)
            g.stores.append((a, at, False))
            self.at[a.index] = at
            # its memory is written by that loop: what reads it there comes after (a
            # scalar is ready before, but a view of it reads these elements)
            self.ready[a.index] = max(self.ready.get(a.index, -1), g.index)
        return self.at[a.index]

    # ---- steps ---------------------------------------------------------------------------
    def _join(self, args, shape):
        """The loop over `shape` that a node reading `args` (or a store of them) joins:
        the latest of the loops computing its arguments, or else the last loop of that
        shape, where everything else it reads is ready before that loop; else a new one.
        (Only those: a value is ready after its loop, so a loop later than these would
        not be the last of its shape.)"""
        shape = tuple(shape)
        bases = [self.virtual[a.index][0] if a.index in self.virtual else a for a in args]
        found = {self.group_of[b.index] for b in bases if b.index in self.group_of}
        candidates = [g for g in found if g.shape == shape]
        if shape in self.last:
            candidates.append(self.last[shape])
        for g in sorted(candidates, key=lambda g: -g.index):
            if all(self.group_of.get(a.index) is g or self.ready[a.index] < g.index
                   for a in args):
                break
        else:
            g = _Group(len(self.steps), shape)
            self.steps.append(g)
            self.last[shape] = g
        for a in args:              # read outside the loop that computes it: stored
            if a.index in self.group_of and self.group_of[a.index] is not g:
                self.readable(a)
        return g

    def _node(self, n):
        op = n.op
        _check_dtype(n)
        if op is CONST:
            return self._const(n)
        if any(a.index in self.retyped for a in n.args):
            at, dtype = self.retyped[n.args[0].index]
            if op not in (bitcast, A.astype) or n.dtype != dtype:
                raise NotLooped(f"{op.name} of a loop's packed {dtype} values, which the "
                                "loops do not write")
            self.at[n.index], self.ready[n.index] = at, self.ready[n.args[0].index]
            return
        if op is not part and any(a.index in self.pieces and a.index not in self.at
                                  for a in n.args):
            raise NotLooped(f"{op.name} of a loop's packed results, which the loops do not "
                            "write")
        if isinstance(op, Loop):
            return self._loop(n)
        if op is S.add and any(a.index in self.updated for a in n.args):
            return self._update(n)
        if op is part and n.args[0].index in self.pieces:
            return self._piece(n)
        if _is_elementwise(op):
            g = self._join(n.args, n.shape)
            g.members.append(n)
            self.group_of[n.index] = g
            self.ready[n.index] = g.index
            cost = 1
            for a in n.args:
                base = self.virtual[a.index][0] if a.index in self.virtual else a
                if base.index in self.cost and (base.index in self.group_of or
                                                base.index in self.padded):
                    cost += self.cost[base.index]
                if base.index in self.padded or base.index in self.touches:
                    self.touches.add(n.index)
            self.cost[n.index] = min(cost, RECOMPUTE + 1)
            return
        if op is A.getitem and any(isinstance(i, np.ndarray) for i in n.params["index"]):
            return self._indexed(n)
        if op in (A.take_along_axis, A.put_along_axis):
            return self._indexed(n)
        if op in _VIEWS:
            return self._view(n)
        if op in _REDUCE:
            return self._reduce(n)
        if op in (A.concatenate, A.pad, A.index_add):
            return self._fill(n)
        if op is A.matmul:
            return self._product(n)
        if op is place:
            return self._place(n)
        if op is NN.checked_labels:
            return self._checked(n)
        if op in _WINDOWS:
            return self._window(n)
        raise NotLooped(f"{op.name}, a primitive the loops do not write")

    def _view(self, n):
        x = n.args[0]
        self.ready[n.index] = self.ready[x.index]
        if x.index in self.literal:             # (every element is the one value)
            self.literal[n.index] = self.literal[x.index]
            return
        if x.shape == () and x.index not in self.at:
            self.readable(x)
            self.scalar[n.index] = self.scalar[x.index]
            return
        params = dict(n.params)
        if n.op is A.getitem and any(isinstance(i, np.ndarray) for i in params["index"]):
            raise NotLooped(f"{n.op.name} with an index array (a gather), which the loops "
                            "do not write")
        if n.shape and (x.index in self.virtual or x.index in self.padded or
                        x.index in self.group_of and x.index not in self.at):
            # a view of a loop's member or of a padded value: its elements computed again
            # where they are read, if that is cheap, rather than stored and read back
            base, to_x = self.virtual.get(x.index) or (x, _bmap(x.shape, x.shape))
            rel = _view(_VIEWS[n.op], _contiguous(_Buffer("", x.dtype, x.size, "temp"),
                                                  x.shape), x.shape, params)
            to_n = _decode(rel, x.shape, n.shape) if rel is not None else None
            touches = base.index in self.padded or base.index in self.touches
            # (a padded value is read in loops split where its regions begin and end,
            # which takes each of its dims to follow one dim of the loop at most)
            if to_n is not None and self.cost[base.index] <= RECOMPUTE and \
                    not (touches and (np.count_nonzero(to_n[1], axis=1) > 1).any()):
                self.virtual[n.index] = (base, _then(to_x, to_n))
                self.ready[n.index] = self.ready[base.index] if base.index in \
                    self.padded else self.group_of[base.index].index - 1
                if touches:
                    self.touches.add(n.index)
                return
        at = _view(_VIEWS[n.op], self._in_memory(x), x.shape, params)
        base = self.virtual[x.index][0] if x.index in self.virtual else x
        self.ready[n.index] = max(self.ready[n.index], self.ready[base.index])
        if at is None:                  # (NumPy would copy: view a contiguous copy)
            buf = self._buffer(x, stem=f"c{x.index}")
            copy = _contiguous(buf, x.shape)
            self._join([x], x.shape).stores.append((x, copy, False))
            at = _view(_VIEWS[n.op], copy, x.shape, params)
            self.ready[n.index] = self.steps[-1].index
        self.at[n.index] = at

    def _reduce(self, n):
        x = n.args[0]
        if n.op is sum_to:
            lead = x.ndim - len(n.shape)
            kept = (1,) * lead + tuple(n.shape)
        else:
            kept = A._kept_shape(x.shape, n.params["axis"])
        g = self._join([x], x.shape)
        g.sinks.append((n, kept))
        self.ready[n.index] = g.index
        self._result_of_step(n)

    def _fill(self, n):
        """concatenate, pad and index_add: `_Piece`s of n, each an argument placed in a
        region.  Where the regions are boxes (slices of step 1, 0-d or empty) n is read in
        place (`_Body.pieces`), else its buffer is filled (`_store_parts`)."""
        params, op = n.params, n.op
        if op is A.index_add and any(isinstance(i, np.ndarray) for i in params["index"]):
            return self._indexed(n)
        if op is A.index_add and n.dtype != n.args[0].dtype:
            raise NotLooped("index_add into another dtype, which the loops do not write")
        if op is A.concatenate:
            axis, start, regions = params["axis"], 0, []
            for arg in n.args:
                stop = start + arg.shape[axis]
                regions.append((slice(None),) * axis + (slice(start, stop),))
                start = stop
        elif op is A.pad:
            regions = [tuple(slice(lo, lo + d) for (lo, _), d
                             in zip(params["pad_width"], n.args[0].shape))]
        else:
            regions = [A.decode_index(params["index"])]
        plus0 = op is A.index_add and n.dtype.kind == "f"
        pieces = [_Piece(n, part, region, plus0) for part, region in zip(n.args, regions)]
        if not (self.in_place and n.shape and all(p.box is not None for p in pieces)):
            return self._store_parts(n, pieces)
        self.padded[n.index] = pieces = [p for p in pieces if p.size]
        ready, cost = -1, 0
        for p in pieces:
            base = self.virtual[p.part.index][0] if p.part.index in self.virtual else p.part
            if base.index in self.group_of and base.index not in self.at:
                # (read elsewhere than its loop: computed again there, where that is cheap)
                if self.cost[base.index] > RECOMPUTE:
                    self._in_memory(p.part)
                else:
                    cost = max(cost, self.cost[base.index])
            elif base.index in self.padded:
                cost = max(cost, self.cost[base.index])
            ready = max(ready, self.ready[p.part.index])
        self.ready[n.index], self.cost[n.index] = ready, cost

    def _store_parts(self, n, pieces):
        """n's buffer, zeroed where the pieces do not cover it, with each piece written
        into its region by the loop computing it (or one copying it)."""
        buf = self._buffer(n)
        whole = _contiguous(buf, n.shape)
        buf.zeroed = n.op is not A.concatenate
        ready = self.ready.get(n.index, -1)
        for p in pieces:
            part = p.part
            at = _view(_region, whole, n.shape, {"index": tuple(p.region)})
            shape = _region_shape(n.shape, p.region)
            g = self.group_of.get(part.index)
            if g is None or part.shape != shape:
                g = self._join([part], shape)
            g.stores.append((part, at, p.plus0))
            ready = max(ready, g.index)
        self.at[n.index] = whole
        self.ready[n.index] = ready

    def _place(self, n):
        """``place`` (a loop's packed cotangent): a zeroed buffer, its argument's
        elements written at its start by the loop computing them (or one copying them)."""
        x = n.args[0]
        buf = self._buffer(n)
        buf.zeroed = True
        g = self.group_of.get(x.index)
        if g is None:
            g = self._join([x], x.shape)
        strides = _contiguous(buf, x.shape).strides
        g.stores.append((x, _At(buf, n.params["start"], strides), False))
        self.at[n.index] = _contiguous(buf, n.shape)
        self.ready[n.index] = max(g.index, self.ready.get(x.index, -1))

    def _result_of_step(self, n):
        """Where a reduction or a product puts n: an array in a buffer of its own, a
        scalar in a local variable of the function."""
        if n.shape:
            self.at[n.index] = _contiguous(self._buffer(n), n.shape)
        else:
            name = self.names.user(f"s{n.index}")
            self.locals.append((name, n, "local"))
            self.scalar[n.index] = name

    def _product(self, n):
        a, b = n.args
        if a.ndim > 2 or b.ndim > 2 or n.dtype != np.float64 or a.dtype != np.float64 or \
                b.dtype != np.float64:
            raise NotLooped("matmul of more than two dimensions or not of float64 values, "
                            "which the loops do not write")
        at_a, at_b = self._in_memory(a), self._in_memory(b)
        step = _Product(len(self.steps), n)
        if a.ndim == b.ndim == 2 and math.prod(a.shape) * b.shape[1] >= BLAS_WORK and \
                max(n.shape + a.shape) < 2 ** 31 and dgemm_address() is not None:
            gemm = (_gemm_operand(at_a, a.shape), _gemm_operand(at_b, b.shape))
            if None not in gemm and max(ld for _, ld in gemm) < 2 ** 31:
                step.gemm = gemm
                self.blas = True
        self.steps.append(step)
        self.ready[n.index] = step.index
        self._result_of_step(n)

    def _indexed(self, n):
        """A gather or scatter-add step (`_Indexed`), its index array read where it is
        (a constant one of the index made a constant buffer)."""
        op = n.op
        if op in (A.getitem, A.index_add):
            index = A.decode_index(n.params["index"])
            arrays = [k for k, i in enumerate(index) if isinstance(i, np.ndarray)]
            full = slice(None)
            if len(arrays) != 1 or any(not isinstance(i, np.ndarray) and i != full
                                       for i in index):
                raise NotLooped(f"{op.name} at an index other than one integer array and "
                                "whole slices, which the loops do not write")
            (axis,), idx = arrays, index[arrays[0]]
            if idx.dtype.kind not in "iu":
                raise NotLooped(f"{op.name} at a boolean mask, which the loops do not write")
            x_shape = n.args[0].shape if op is A.getitem else n.shape
            shape = n.shape if op is A.getitem else n.args[0].shape
            dims = [d if d < axis else d + idx.ndim - 1 if d > axis else None
                    for d in range(len(x_shape))]
            if idx.size and (idx == idx.flat[0]).all():
                where = int(idx.flat[0])            # (one index: a number)
            else:
                buf = _Buffer(self.names.user(f"k{n.index}"), np.int64, idx.size, "const")
                buf.value = np.ascontiguousarray(idx, np.int64)
                self.buffers.append(buf)
                at = _contiguous(buf, idx.shape)
                where = _At(buf, 0, [0] * axis + list(at.strides) +
                            [0] * (len(shape) - axis - idx.ndim))
            values = n.args[:1] if op is A.index_add else []
        else:
            axis = n.params["axis"]
            if op is A.take_along_axis:
                (x, i), shape, x_shape, values = n.args, n.shape, n.args[0].shape, []
            else:
                (g, i), x_shape, values = n.args, n.shape, n.args[:1]
                shape = np.broadcast_shapes(g.shape, i.shape)
            if i.dtype != np.int64 or len(x_shape) != len(shape):
                raise NotLooped(f"{op.name} of other than int64 indices of its array's "
                                "dims, which the loops do not write")
            dims = [None if d == axis else d for d in range(len(x_shape))]
            if i.index in self.literal:
                where = int(self.literal[i.index])
            else:
                at = self._in_memory(i)
                where = _At(at.buffer, at.offset, _broadcast(at, i.shape, shape))
        if n.dtype != np.float64 and op in (A.index_add, A.put_along_axis):
            raise NotLooped(f"{op.name} of {n.dtype} values, which the loops do not write")
        dims = [e if e is not None and x_shape[d] != 1 else None
                for d, e in enumerate(dims)]
        self.bounds = True
        if values:
            v = values[0]
            at_v = self._in_memory(v)
            value = (at_v, _broadcast(at_v, v.shape, shape))
            buf = self._buffer(n)
            # (a scatter into an updated carry's scratch, which its update leaves zero)
            buf.zeroed, buf.kept = n.index not in self.kept, n.index in self.kept
            target = _contiguous(buf, n.shape)
            step = _Indexed(len(self.steps), n, shape, target, axis, dims, where, value)
        else:
            x = n.args[0]
            target = self._in_memory(x)
            out = _contiguous(self._buffer(n), n.shape)
            step = _Indexed(len(self.steps), n, shape, target, axis, dims, where, out=out)
        self.steps.append(step)
        self.at[n.index] = _contiguous(step.target.buffer, n.shape) if values else step.out
        self.ready[n.index] = step.index

    def _update(self, n):
        """A carry plus a scatter-add, updated in place (`_updates`): each element the
        scatter wrote (in its scratch, zeros elsewhere) is added to the carry, once,
        and zeroed in the scratch again; a repeated index adds that 0.0, which leaves
        the carry as it is, since it holds no -0.0.  NumPy's bits, in the scatter's
        count of elements, not the carry's."""
        x = next(a for a in n.args if a.index in self.updated)
        s = next(a for a in n.args if a is not x)
        scatter = self.steps[self.ready[s.index]]
        step = _Indexed(len(self.steps), n, scatter.shape, self.at[x.index], scatter.axis,
                        scatter.dims, scatter.where)
        step.apply = scatter.target
        self.steps.append(step)
        self.at[n.index] = self.at[x.index]
        self.ready[n.index] = step.index

    def _checked(self, n):
        """Labels checked in range: the argument itself, checked by the glue before the
        call (where it is one: a computed one would need its values first)."""
        x = n.args[0]
        if x.op is not INPUT:
            raise NotLooped("checked_labels of computed labels, which the loops do not "
                            "check")
        k = next(k for k, i in enumerate(self.graph.inputs) if i is x)   # (== is a node's)
        self.checks.append((k, dict(n.params)))
        self.ready[n.index] = -1
        if x.index in self.at:
            self.at[n.index] = self.at[x.index]
        else:
            self.scalar[n.index] = self.scalar[x.index]

    def _dense(self, a):
        """a's `_At`, C-contiguous: a copy of a's elements where they are not (a view with
        steps, a transpose), made by a loop."""
        at = self._in_memory(a)
        dense = _contiguous(at.buffer, a.shape).strides
        if all(s == e for s, e, d in zip(at.strides, dense, a.shape) if d != 1):
            return at
        copy = _contiguous(self._buffer(a, stem=f"c{a.index}"), a.shape)
        self._join([a], a.shape).stores.append((a, copy, False))
        return copy

    def _window(self, n):
        """A convolution or pooling step (`_Window`): its arguments read where they are
        (a convolution's kernels and cotangent made C-contiguous, as its products read
        them), its result in a buffer of its own."""
        op = n.op
        if any(v.dtype != np.float64 for v in n.args) or \
                n.dtype != (np.int64 if op is NN.pool_argmax else np.float64):
            raise NotLooped(f"{op.name} of other than float64 values, which the loops do not "
                            "write")
        step = _Window(len(self.steps), n)
        if op in _CONVS:
            x_shape, w_shape, g_shape = _conv_shapes(n)
            o, cg, kh, kw = w_shape
            og, k, p = o // n.params["groups"], cg * kh * kw, g_shape[2] * g_shape[3]
            dense = {NN.conv2d: (False, True), NN.conv2d_input_grad: (True, True),
                     NN.conv2d_weight_grad: (False, True)}[op]
            step.ats = [self._dense(a) if d else self._in_memory(a)
                        for a, d in zip(n.args, dense)]
            # one image's windows, a row per channel and tap (im2col)
            step.cols = _Buffer(self.names.user(f"cols{n.index}"), np.float64,
                                x_shape[1] * kh * kw * p, "temp")
            self.buffers.append(step.cols)
            step.blas = og * k * p >= CONV_BLAS_WORK and max(og, k, p) < 2 ** 31 and \
                dgemm_address() is not None
            self.blas = self.blas or step.blas
        else:
            step.ats = [self._in_memory(a) for a in n.args]
        self.steps.append(step)
        self.ready[n.index] = step.index
        self._result_of_step(n)

    def _loop(self, n):
        """A loop step (`_Looped`): its body a C function written as this graph is
        (`_functions`, with scalars in memory), called per step on the arguments where
        they are (a copy of those that are not C-contiguous).  The carry lives in two
        buffers that the steps write in turn, the first reading the initial carry where
        it is; a scan's step reads its rows of the xs in place and writes its ys'
        rows in place.  The results are those buffers (`pieces`, read by ``part``)."""
        op, names = n.op, self.names
        body, k0, nc = op.body, op.n_consts, op.n_carry
        k1 = k0 + nc
        for a, b in zip(n.args[:k1], body.inputs):
            if a.dtype != b.dtype or a.shape != b.shape:
                raise NotLooped(f"{op.name} of {a.dtype}{list(a.shape)} for its body's "
                                f"{b.dtype}{list(b.shape)}, which the loops do not convert")
        step = _Looped(len(self.steps), n)
        step.args = [self._dense(a) for a in n.args[:k1]]
        if op.until:
            go = n.args[k1]
            if go.index in self.group_of:
                self.readable(go)
            step.go = C.CFormat().number(self.literal[go.index]) \
                if go.index in self.literal else self.scalar.get(go.index)
            if step.go is None:
                at = self._in_memory(go)
                step.go = f"{at.buffer.name}[{at.offset}]"
        else:
            step.args += [self._dense(a) for a in n.args[k1:]]
        step.body_name = names.user(f"{self.name}_loop")
        # (a scan of no step gives its first carry as it is, -0.0 too: see _updates)
        step.updates = _updates(op) if not op.until and op.length else []
        step.body, step.plan = _functions(body, step.body_name, True, step.updates)
        step.updated = {i - k0 for i, _ in step.updates}
        sub = step.plan
        if sub.checks:
            raise NotLooped("labels checked inside a loop's body, which the loops do not "
                            "check")
        self.bodies += sub.bodies + [step.body]
        self.blas, self.bounds = self.blas or sub.blas, self.bounds or sub.bounds
        step.consts = {}
        for b in sub.buffers:       # (the body's constants: arguments of this function)
            if b.role == "const":
                mine = _Buffer(names.user(b.name), b.dtype, b.size, "const")
                mine.value = b.value
                self.buffers.append(mine)
                step.consts[b.name] = mine
        step.work = None
        if sub.workspace:
            step.work = _Buffer(names.user(f"w{n.index}"), np.uint8, sub.workspace, "temp")
            self.buffers.append(step.work)
        outs = body.outputs
        # (after n steps, the carry is in the buffer the last step wrote: the first is
        # written by steps 0, 2, 4, ...; a while loop's, and a scan's of no step, is
        # copied to the first)
        second = not op.until and op.length and op.length % 2 == 0
        step.carry, buffers = [], []
        for k, o in enumerate(outs[:nc]):
            last = self._result_buffer(n, k, f"c{n.index}_{k}")
            buffers.append(last)
            if k in step.updated:           # (one buffer, updated in place)
                step.carry.append([last, None])
                continue
            other = _Buffer(names.user(f"c{n.index}_{k}t"), o.dtype, o.size, "temp")
            self.buffers.append(other)
            step.carry.append([other, last] if second else [last, other])
        step.cur = [names.user(f"cur{k}") for k in range(nc)]
        step.nxt = [names.user(f"nxt{k}") for k in range(nc)]
        step.step, step.row = names.user("step"), names.user("row")
        if op.until:
            step.ys = [_Buffer(names.user(f"go{n.index}"), np.bool_, 1, "temp")]
            self.buffers += step.ys
            step.go_now = names.user("go")
        else:
            step.ys = [self._result_buffer(n, nc + k, f"y{n.index}_{k}")
                       for k in range(len(outs) - nc)]
            buffers += step.ys
        self.pieces[n.index] = pieces = []
        for b, (lo, hi), dtype in zip(buffers, op.layout.spans, op.layout.dtypes):
            pieces.append((lo, hi, b, dtype))
        if len(pieces) == 1:
            self.at[n.index] = _contiguous(buffers[0], n.shape)
        step.index = len(self.steps)        # (after the copies of its arguments)
        self.steps.append(step)
        self.ready[n.index] = step.index

    def _result_buffer(self, n, k, stem):
        """A buffer for result k of loop n: the graph's result's, where it is one (the
        loop writes it in place), else a temporary."""
        layout = n.op.layout
        readers = [n] if len(layout) == 1 else [
            u for u in self.users.get(n.index, []) if u.op is part and
            (u.params["start"], u.params["stop"]) == layout.spans[k] and
            u.dtype == layout.dtypes[k]]
        for u in readers:
            if u.index in self.out_slot and self.outs[self.out_slot[u.index]] is None:
                return self._buffer(u)
        buf = _Buffer(self.names.user(stem), layout.dtypes[k],
                      math.prod(layout.shapes[k]), "temp")
        self.buffers.append(buf)
        return buf

    def _piece(self, n):
        """A ``part`` of a loop's value (or of a part of it): one of its results, in
        memory, or several, whose parts are read in turn; one of int64 or bool values,
        which the pack holds as float64, is read by the bitcast or astype after it
        (`retyped`)."""
        x = n.args[0]
        start, stop = n.params["start"], n.params["stop"]
        inside = [p for p in self.pieces[x.index] if start <= p[0] and p[1] <= stop and
                  (p[0] < p[1] or start == stop)]
        exact = [p for p in inside if p[:2] == (start, stop)]
        self.ready[n.index] = self.ready[x.index]
        if exact and (len(inside) == 1 or start == stop):
            _, _, buf, dtype = exact[0]
            at = _contiguous(buf, n.shape)
            if dtype == n.dtype:
                self.at[n.index] = at
            else:
                self.retyped[n.index] = (at, dtype)
        elif sum(hi - lo for lo, hi, _, _ in inside) == stop - start:
            self.pieces[n.index] = [(lo - start, hi - start, b, d) for lo, hi, b, d in inside]
        else:
            raise NotLooped("part of a loop's packed results across them, which the "
                            "loops do not write")

    def _results(self):
        """Results not yet written where they go: stored by their loops, or copied."""
        self.res = []                           # (slot, node) of scalar results
        for k, o in enumerate(self.graph.outputs):
            if k in self.updated.values():      # (the carry's own buffer, updated)
                continue
            if o.shape == () and self.pointers and self.outs[k] is None:
                # (a body's scalar result: written to memory, `_source`)
                self.outs[k] = _Buffer(self.names.user(f"out{k}"), o.dtype, 1, "out")
                self.buffers.append(self.outs[k])
            if o.shape == ():
                self.res.append((k, o))
                if o.index in self.group_of:
                    self.readable(o)
                continue
            if self.outs[k] is not None:
                continue
            if o.index in self.group_of and o.index not in self.at and \
                    self.out_slot[o.index] == k:
                self.readable(o)                # (its buffer is this result)
                continue
            buf = _Buffer(self.names.user(f"out{k}"), o.dtype, o.size, "out")
            self.outs[k] = buf
            self.buffers.append(buf)
            self._join([o], o.shape).stores.append((o, _contiguous(buf, o.shape), False))


def _decode(at, shape, vshape):
    """The index map ``(c, K)`` of a view (`at`, of shape `vshape`) of a C-contiguous
    array of `shape` (element j of the view is the array's ``c + K @ j``), or None where
    the view is no such map (a reshape that merges dims)."""
    cs = np.ones(len(shape), np.int64)
    for d in range(len(shape) - 2, -1, -1):
        cs[d] = cs[d + 1] * shape[d + 1]
    size = math.prod(shape)
    if not size or not math.prod(vshape) or not 0 <= at.offset < size:
        return None
    c = np.array(np.unravel_index(at.offset, shape), np.int64).reshape(len(shape))
    K = np.zeros((len(shape), len(vshape)), np.int64)
    for e, (s, n) in enumerate(zip(at.strides, vshape)):
        if n == 1 or s == 0:
            continue
        for d in range(len(shape)):
            if shape[d] > 1 and s % cs[d] == 0 and abs(s // cs[d]) < shape[d]:
                K[d, e] = s // cs[d]
                break
        else:
            return None
    span = np.array([n - 1 for n in vshape], np.int64)
    lo = c + np.minimum(K, 0) @ span
    hi = c + np.maximum(K, 0) @ span
    strides_ok = all(int(cs @ K[:, e]) == s for e, (s, n) in
                     enumerate(zip(at.strides, vshape)) if n != 1)
    if (lo < 0).any() or (hi >= np.array(shape)).any() or not strides_ok:
        return None
    return c, K


def _interval(c, t, lo, hi):
    """``(first, stop)``: the integers i with ``lo <= c + t*i < hi`` (t nonzero)."""
    if t > 0:
        return -((c - lo) // t), -((c - hi) // t)
    first, stop = _interval(-c, -t, 1 - hi, 1 - lo)     # (-(c + t*i) in (-hi, -lo])
    return first, stop


def _region_shape(shape, region):
    return np.broadcast_to(np.zeros((), np.int8), shape)[region].shape


def _check_dtype(n):
    if n.dtype not in _CTYPES:
        raise NotLooped(f"a value of dtype {n.dtype} ({n.op.name}): the loops compute "
                        "float64, int64 and bool values")


# ---- C text -----------------------------------------------------------------------------
def _broadcast(at, shape, full):
    """at's strides (over `shape`) as strides over the dims of `full`, which `shape`
    broadcasts to: 0 along a dim it is repeated in."""
    lead = len(full) - len(shape)
    out = []
    for d, n in enumerate(full):
        k = d - lead
        out.append(0 if k < 0 or shape[k] != n or n == 1 else at.strides[k])
    return out


def _collapse(shape, accesses):
    """Merge neighbouring dims that every access (a list of strides) walks as one, and
    drop dims of one element: ``(sizes, accesses)`` over the remaining dims."""
    dims = [(n, [s[d] for s in accesses]) for d, n in enumerate(shape) if n != 1]
    merged = []
    for n, strides in dims:
        if merged:
            m, outer = merged[-1]
            if all(o == s * n for o, s in zip(outer, strides)):
                merged[-1] = (m * n, strides)
                continue
        merged.append((n, strides))
    sizes = [n for n, _ in merged]
    return sizes, [[st[k] for _, st in merged] for k in range(len(accesses))]


def _index_text(offset, strides, indices):
    terms = [(idx if s == 1 else f"-{idx}" if s == -1 else f"{s}*{idx}")
             for s, idx in zip(strides, indices) if s]
    if offset:
        terms.append(str(offset))
    text = " + ".join(terms) or "0"
    return text.replace("+ -", "- ")


def _scalar_of(g, node, args):
    """A scalar node of node's operation on `args` (nodes of the loop body `g`)."""
    if node.op is A.astype and node.dtype.kind == "b":
        zero = g.const(0 if args[0].dtype == np.int64 else 0.0)
        return g.remake(types.SimpleNamespace(op=S.ne, params={}, shape=(), dtype=node.dtype,
                                              value=None), [args[0], zero])
    if node.op is A.astype and (node.dtype.kind not in "fib" or
                                args[0].dtype.kind not in "fib"):
        raise NotLooped(f"astype from {args[0].dtype} to {node.dtype}")
    return g.remake(types.SimpleNamespace(op=node.op, params=node.params, shape=(),
                                          dtype=node.dtype, value=None), args)


def _bmap(shape, full):
    """The index map of an array of `shape` read broadcast to `full`: ``(c, K)``, element
    ``j`` of `full` being element ``c + K @ j`` of the array."""
    lead = len(full) - len(shape)
    K = np.zeros((len(shape), len(full)), np.int64)
    for k, n in enumerate(shape):
        if n == full[k + lead] and n != 1:
            K[k, k + lead] = 1
    return np.zeros(len(shape), np.int64), K


def _key(a, at):
    """A cache key of a's element at index map `at` (a dim of one element is at 0)."""
    c, K = at
    ones = [d for d, n in enumerate(a.shape) if n == 1]
    if ones:
        c, K = c.copy(), K.copy()
        c[ones], K[ones] = 0, 0
    return a.index, c.tobytes(), K.tobytes()


def _then(first, then):
    """The index map of `first` after `then`: element j is ``first``'s element of
    ``then``'s element of j."""
    (c1, K1), (c2, K2) = first, then
    return c1 + K1 @ c2, K1 @ K2


class _Body:
    """The statements of one loop nest: a graph of scalars whose inputs are reads of
    array elements (and scalars), emitted by `emit` with `c.CFormat`.

    The nest runs over `box`, a ``(lo, hi)`` range of each of the group's dims: all of
    them, or a part where each padded value it reads is either inside one region or
    outside all (`pieces`).  Without a box, it is a survey: reading padded values notes
    where their regions begin and end (`cuts`, per dim), which split the group's loops
    into boxes."""

    def __init__(self, plan, group, box=None):
        self.plan, self.group, self.box = plan, group, box
        self.g = Graph(optimize=False)
        self.reads = {}             # key -> (input node, _At or C text, strides)
        self.values = {}            # (node index, index map) -> scalar node
        self.accesses = []          # _At's strides over the group's dims, in order
        self.lo = np.array([lo for lo, _ in box] if box else [0] * len(group.shape),
                           np.int64)
        self.cuts = [set() for _ in group.shape]

    def value(self, a, at=None):
        """The scalar node of a's element at index map `at` of the loop's index (default:
        a broadcast to the loop's shape).  A member of this loop read there is its
        node; a value in memory written before this loop is read; a member of a loop
        read elsewhere (through a view) is computed again there (`recompute`)."""
        plan, group = self.plan, self.group
        at = _bmap(a.shape, group.shape) if at is None else at
        key = _key(a, at)
        if key in self.values:
            return self.values[key]
        if a.index in plan.literal:
            v = self.g.const(plan.literal[a.index])
        elif a.index in plan.virtual:
            base, view = plan.virtual[a.index]
            v = self.value(base, _then(view, at))
        elif a.index in plan.padded:
            v = self.pieces(a, at)
        elif a.index in plan.group_of and plan.ready[a.index] >= group.index:
            v = self.recompute(a, at)       # (computed in this loop, or one after it)
        elif a.index in plan.scalar:
            v = self.read(plan.scalar[a.index], a.dtype)
        elif a.index in plan.at:
            mem = plan.at[a.index]
            strides = np.asarray(mem.strides, np.int64)
            v = self.read(mem, a.dtype, [int(s) for s in strides @ at[1]],
                          mem.offset + int(strides @ at[0]))
        else:
            v = self.recompute(a, at)
        self.values[key] = v
        return v

    def recompute(self, m, at):
        """m's element at index map `at`, m being a member of a loop (this one, or one
        read through a view): m and the members of its loop it is computed from, those
        not computed here at that map yet, in the graph's order (`_Plan.cost` bounds
        how many there are where the map is not this loop's own)."""
        home = self.plan.group_of[m.index]
        cone, todo = {}, [m]
        while todo:
            n = todo.pop()
            if n.index not in cone:
                cone[n.index] = n
                todo += [a for a in n.args if self.plan.group_of.get(a.index) is home and
                         _key(a, at) not in self.values]
        for i in sorted(cone)[:-1]:
            n = cone[i]
            self.values[_key(n, at)] = self._computed(n, home, at)
        return self._computed(m, home, at)

    def _computed(self, n, home, at):
        return _scalar_of(self.g, n, [self.value(a, _then(_bmap(a.shape, home.shape), at))
                                      for a in n.args])

    def pieces(self, a, at):
        """The element at index map `at` of a padded value `a` (`_Plan.padded`): the
        element of the piece whose region holds it, else 0.  All elements of the box are
        in the same region, as the loops are split where regions begin and end: the
        box's first element says which.  (A survey notes those cuts, reads every piece
        for theirs, and returns a stand-in.)"""
        c0, K0 = at
        zero = self.g.const(np.zeros((), a.dtype).item())
        for p in self.plan.padded[a.index]:
            if self.box is None:
                for d, (lo, hi) in enumerate(p.box):
                    if lo == 0 and hi == a.shape[d] or not K0[d].any():
                        continue
                    (loop,), = np.nonzero(K0[d])        # (one: `_Plan._view` sees to it)
                    first, stop = _interval(int(c0[d]), int(K0[d, loop]), lo, hi)
                    self.cuts[loop].update(
                        i for i in (first, stop) if 0 < i < self.group.shape[loop])
                self.value(p.part, _then(p.inverse, at))
                continue
            j = c0 + K0 @ self.lo
            if all(lo <= i < hi for i, (lo, hi) in zip(j, p.box)):
                v = self.value(p.part, _then(p.inverse, at))
                if p.plus0:
                    v = self.g.remake(types.SimpleNamespace(
                        op=S.add, params={}, shape=(), dtype=a.dtype, value=None), [v, zero])
                return v
        return zero

    def boxes(self):
        """The boxes the survey's cuts split the group's loops into, in C order."""
        edges = [sorted({0, n} | cuts) for n, cuts in zip(self.group.shape, self.cuts)]
        return list(itertools.product(*[list(zip(e, e[1:])) for e in edges]))

    def shift(self, offset, strides):
        """An offset of the group's index moved to the box's first element."""
        return int(offset + np.asarray(strides, np.int64) @ self.lo) if len(strides) \
            else int(offset)

    def read(self, where, dtype, strides=None, offset=0):
        """An input of the body: a scalar's C text, or an element of memory at `offset`
        plus `strides` (over the loop's dims) times its index."""
        if strides is not None:
            offset = self.shift(offset, strides)
        key = where if strides is None else (where.buffer.name, offset, tuple(strides))
        if key not in self.reads:
            node = self.g.input(ShapeDtype((), dtype), f"r{len(self.reads)}")
            if strides is not None:
                self.accesses.append(strides)
                where = _At(where.buffer, offset, strides)
            self.reads[key] = (node, where, strides)
        return self.reads[key][0]


def _group_lines(plan, group, fmt, uses):
    """The C of one loop nest (a block), and the buffers it reads and writes into
    `uses`: the accumulators set to their first values, then the loops over each box of
    the group's index (one box, all of it, unless it reads padded values in place)."""
    if not group.stores and not group.sinks:
        return []                   # (its values are all computed again where read)
    survey = _Body(plan, group)
    _targets(survey)
    boxes = survey.boxes()
    if len(boxes) > MAX_BOXES:
        raise _TooManyBoxes()
    lines = [f"/* {_describe(plan, group)} */", "{"]
    for r, _ in group.sinks:
        init = fmt.number(_identity(r))
        if r.shape:
            name = plan.at[r.index].buffer.name
            lines.append(f"    for (long i = 0; i < {r.size}; ++i) {name}[i] = {init};")
        else:
            lines.append(f"    {plan.scalar[r.index]} = {init};")
    for box in boxes:
        if all(hi > lo for lo, hi in box):
            body = _Body(plan, group, box)
            nest = _nest_lines(body, _targets(body), fmt, uses)
            if len(boxes) > 1:          # (each in a block: its temporaries are its own)
                nest = ["/* [" + ", ".join(f"{lo}:{hi}" for lo, hi in box) + "] */", "{",
                        *["    " + line for line in nest], "}"]
            lines += ["    " + line for line in nest]
    lines.append("}")
    return lines


def _targets(body):
    """The body's values, and ``(target, strides, value)`` of what the loop writes: a
    store's array element (or a scalar's C text, without strides), an accumulator's."""
    plan, group, g = body.plan, body.group, body.g
    for m in group.members:
        body.value(m)
    targets = []
    for node, target, plus0 in group.stores:
        v = body.value(node)
        if plus0:
            v = g.remake(types.SimpleNamespace(op=S.add, params={}, shape=(),
                                               dtype=node.dtype, value=None),
                         [v, g.const(0.0)])
        if isinstance(target, str):
            targets.append((target, None, v, None))
        else:
            strides = _broadcast(target, group.shape, group.shape)
            body.accesses.append(strides)
            at = _At(target.buffer, body.shift(target.offset, strides), strides)
            targets.append((at, strides, v, None))
    for r, kept in group.sinks:
        x = r.args[0]
        v = body.value(x)
        if x.dtype != r.dtype:
            v = _scalar_of(g, types.SimpleNamespace(op=A.astype, dtype=r.dtype, params={
                "dtype": r.dtype}), [v])
        if r.shape:
            at = plan.at[r.index]
            strides = [0 if k == 1 else s for k, s in zip(
                kept, _broadcast(_contiguous(at.buffer, kept), kept, kept))]
            acc = body.read(at, r.dtype, strides)
            target = (_At(at.buffer, body.shift(at.offset, strides), strides), strides)
        else:
            acc = body.read(plan.scalar[r.index], r.dtype)
            target = (plan.scalar[r.index], None)
        op = _REDUCE[r.op]
        new = g.remake(types.SimpleNamespace(op=op, params={}, shape=(), dtype=r.dtype,
                                             value=None), [acc, v])
        targets.append(target + (new, r))
    return targets


def _nest_lines(body, targets, fmt, uses):
    """The C of the loop nest of `body` over its box, writing `targets`.  Float sums
    along the innermost loop (its whole extent, 8 elements or more) add in NumPy's
    pairwise order (`_pairwise_lines`); other reductions add in the loops' order."""
    g, plan = body.g, body.plan
    shape = [hi - lo for lo, hi in body.box]
    sizes, strides = _collapse(shape, body.accesses)
    index = [_INDEX[d] if d < len(_INDEX) else f"i{d}" for d in range(len(sizes))]
    by_strides = dict(zip(map(tuple, body.accesses), strides))

    def text(at, st):
        return Symbol(at.buffer.name, (_index_text(at.offset, by_strides[tuple(st)], index),))

    names, ins = {}, []
    for node, where, st in body.reads.values():
        names[node.index] = Symbol(where) if st is None else text(where, st)
        ins.append(node)
        if st is not None:
            uses.setdefault(where.buffer.name, set()).add("read")
    outs, pairwise = [], []
    for target, st, v, r in targets:
        outs.append((Symbol(target) if st is None else text(target, st), v))
        if st is not None:
            uses.setdefault(target.buffer.name, set()).add("write")
        if r is not None and r.op in (A.sum, sum_to) and r.dtype.kind == "f" and \
                sizes and sizes[-1] >= 8 and (st is None or by_strides[tuple(st)][-1] == 0):
            pairwise.append(len(outs) - 1)
    g.inputs, g.outputs = ins, [v for _, v in outs]
    depth = len(sizes)
    lines = []
    statements = _statements(g, ins, outs, names, fmt)
    if pairwise and any(name not in _INSTRUCTIONS and not _vectorised(name)
                        for text in statements
                        for name in re.findall(r"\b([A-Za-z_]\w*)\(", text)):
        # (a scalar libm function called per element: in lanes the loop ran 1.5 times
        # slower than in order (gcc 12), so it adds in order.  libmvec's functions are
        # called in lanes only where the sum is: in order, the loop would not vectorise)
        pairwise = []
    for d, (n, idx) in enumerate(zip(sizes[:-1] if pairwise else sizes, index)):
        lines.append("    " * d + f"for (long {idx} = 0; {idx} < {n}; ++{idx})" +
                     (" {" if d == depth - 1 else ""))
    if not pairwise:
        lines += ["    " * depth + s for s in statements]
    else:
        if depth > 1:
            lines[-1] += " {"
        inner = _pairwise_lines(plan, g, ins, outs, names, fmt, pairwise, index[-1],
                                sizes[-1])
        lines += ["    " * (depth - 1) + s for s in inner]
    if depth > 1 and pairwise:
        lines.append("    " * (depth - 2) + "}")
    elif depth and not pairwise:
        lines.append("    " * (depth - 1) + "}")
    return lines


def _statements(g, ins, outs, names, fmt):
    """The C statements computing `outs` (``(Symbol, node)``) of the body graph `g`.

    An array element that only a select's arm reads is read first, into a local: in
    ``c ? a[k] : b`` the compiler reads ``a[k]`` only where c holds, which it vectorises
    with masked loads, and GCC 12.2 permuted those wrongly (GCC PR 114375: a 5 x 6
    ``where`` compiled for AVX-512 read zeros).  Read unconditionally, the arm is a value
    and the select a blend, also at SSE2, which has no masked loads."""
    names, statements = dict(names), []
    for node in _conditional_reads(g, ins, [node for _, node in outs], names):
        local = Symbol(f"_r{node.index}")       # (no user name begins with _: `Names`)
        statements.append(f"const {_LOCAL_CTYPES[node.dtype]} {local.name} = "
                          f"{fmt.symbol(names[node.index])};")
        names[node.index] = local
    try:
        code = emit(g, ins, outs, fmt, names=names, rewrite=False)
    except EmitError as e:
        raise NotLooped(str(e)) from None
    sts = code.statements
    for k, st in enumerate(sts):
        if st.temporary:
            statements.append(f"const {_LOCAL_CTYPES[st.node.dtype]} {st.target} = "
                              f"{st.expr};")
        elif k and sts[k - 1].temporary and st.expr == sts[k - 1].target and \
                sum(st.expr in other.expr for other in sts) == 1:
            # (an accumulator, which the emitter assigns last as it reads it: ``s = s +
            # v`` without the temporary that held ``s + v``)
            statements[-1] = f"{fmt.symbol(st.target)} = {sts[k - 1].expr};"
        else:
            statements.append(f"{fmt.symbol(st.target)} = {st.expr};")
    return statements


def _conditional_reads(g, ins, outputs, names):
    """The inputs of body graph `g` that are array elements (``names``' symbols with an
    index) and that `outputs` need only through a select's second or third argument."""
    if not any(n.op is S.select for n in g.live_nodes(outputs)):
        return []
    live = g.mark_down(outputs)
    always = {n.index for n in outputs}
    for i in sorted(live, reverse=True):        # (users before their arguments)
        if i in always:
            node = g.nodes[i]
            args = node.args[:1] if node.op is S.select else node.args
            always.update(a.index for a in args)
    return [n for n in ins if n.index in live and n.index not in always
            and names[n.index].index]


#: functions the C compiler makes instructions (``pow(x, 2)`` a product)
_INSTRUCTIONS = {"pow", "sqrt", "fabs", "copysign", "fmin", "fmax", "floor", "ceil", "trunc",
                 "nearbyint"}

#: NumPy's pairwise summation: runs of at most this many elements are summed in 8 lanes
#: (numpy/_core/src/umath/loops_utils.h.src, PW_BLOCKSIZE), longer ones split in two
PW_BLOCK = 128


def _pairwise_lines(plan, g, ins, outs, names, fmt, pairwise, j, n):
    """The innermost loop (index `j`, `n` elements, n >= 8) of a nest whose sums
    `pairwise` (positions in `outs`) are along it, in NumPy's order: the run [0, n) is
    split in halves (the first a multiple of 8 elements) down to runs of at most
    `PW_BLOCK`; a run's elements go to 8 lanes in turn, added as ``((l0 + l1) + (l2 +
    l3)) + ((l4 + l5) + (l6 + l7))``, then the last ``len % 8`` one by one; halves are
    added when both are done.  An explicit stack walks the halves (the code of the
    body appears twice, in lanes and one by one).  The accumulator then adds the run's
    sum, so a sum along the last axis, or of a loop that is one run, is NumPy's ``0.0 +
    pairwise(run)`` bit for bit.  Lanes of 8 also let the compiler vectorise the sums
    without reassociating them."""
    v = plan.pw_names
    accs = [outs[k] for k in pairwise]
    lane = {k: f"{v['lane']}{m}" for m, k in enumerate(pairwise)}
    part = {k: f"{v['sum']}{m}" for m, k in enumerate(pairwise)}

    def body(symbol):
        names2, outs2 = dict(names), list(outs)
        for k in pairwise:
            target, node = outs[k]
            acc = node.args[0]
            names2[acc.index] = outs2[k] = symbol(k)
            outs2[k] = (symbol(k), node)
        return _statements(g, ins, outs2, names2, fmt)

    in_lanes = body(lambda k: Symbol(lane[k], (f"{j} - {v['jb']}",)))
    one_by_one = body(lambda k: Symbol(part[k]))
    lo, ln, side, top, f = v["lo"], v["len"], v["side"], v["top"], v["f"]
    left, right = v["left"], v["right"]
    decl = [f"double {left}{m}[64], {right}{m}[64], {part[k]};"
            for m, k in enumerate(pairwise)]
    pairs = [f"{part[k]} = (({lane[k]}[0] + {lane[k]}[1]) + ({lane[k]}[2] + {lane[k]}[3])) "
             f"+ (({lane[k]}[4] + {lane[k]}[5]) + ({lane[k]}[6] + {lane[k]}[7]));"
             for k in pairwise]
    return [
        "/* sums along it in NumPy's pairwise order */",
        f"long {lo}[64], {ln}[64];",
        f"int {side}[64], {top} = 1;",
        *decl,
        f"{lo}[0] = 0, {ln}[0] = {n}, {side}[0] = 0;",
        "for (;;) {",
        f"    const int {f} = {top} - 1;",
        f"    if ({ln}[{f}] > {PW_BLOCK}) {{",
        f"        if ({side}[{f}] < 2) {{          /* the first half, then the second */",
        f"            const long h = {ln}[{f}] / 2 - {ln}[{f}] / 2 % 8;",
        f"            {lo}[{top}] = {side}[{f}] ? {lo}[{f}] + h : {lo}[{f}];",
        f"            {ln}[{top}] = {side}[{f}] ? {ln}[{f}] - h : h;",
        f"            {side}[{top}] = 0, ++{side}[{f}], ++{top};",
        "            continue;",
        "        }",
        *[f"        {part[k]} = {left}{m}[{f}] + {right}{m}[{f}];"
          for m, k in enumerate(pairwise)],
        "    } else {",
        *[f"        double {lane[k]}[8] = {{-0.0, -0.0, -0.0, -0.0, -0.0, -0.0, -0.0, -0.0}};"
          for k in pairwise],
        f"        const long {v['stop']} = {lo}[{f}] + {ln}[{f}] - {ln}[{f}] % 8;",
        f"        for (long {v['jb']} = {lo}[{f}]; {v['jb']} < {v['stop']}; "
        f"{v['jb']} += 8)",
        f"            for (long {j} = {v['jb']}; {j} < {v['jb']} + 8; ++{j}) {{",
        *["                " + s for s in in_lanes],
        "            }",
        *["        " + s for s in pairs],
        f"        for (long {j} = {v['stop']}; {j} < {lo}[{f}] + {ln}[{f}]; ++{j}) {{",
        *["            " + s for s in one_by_one],
        "        }",
        "    }",
        f"    if (--{top} == 0)",
        "        break;",
        *[f"    if ({side}[{top} - 1] == 1) {left}{m}[{top} - 1] = {part[k]}; "
          f"else {right}{m}[{top} - 1] = {part[k]};" for m, k in enumerate(pairwise)],
        "}",
        *[f"{fmt.symbol(t)} = {fmt.symbol(t)} + {part[k]};"
          for k, (t, _) in zip(pairwise, accs)],
    ]


def _identity(r):
    """The value a reduction starts from."""
    op, dtype = r.op, r.dtype
    if op in (A.sum, sum_to):
        return False if dtype.kind == "b" else 0 if dtype.kind == "i" else 0.0
    if op is A.prod:
        return True if dtype.kind == "b" else 1 if dtype.kind == "i" else 1.0
    big = {"b": True, "i": 2 ** 63 - 1, "f": math.inf}[dtype.kind]
    small = {"b": False, "i": -2 ** 63, "f": -math.inf}[dtype.kind]
    return small if op is A.amax else big


def _describe(plan, group) -> str:
    """A comment saying what a loop computes (its nodes, as the graph prints them) and
    which arrays or scalars it writes."""
    shape = "x".join(map(str, group.shape)) or "scalar"
    what = [f"%{m.index} {m.op.name}" for m in group.members]
    what += [f"%{r.index} {r.op.name}" for r, _ in group.sinks]
    computed = {m.index for m in group.members}
    stored = [f"%{n.index}" for n, _, _ in group.stores if n.index not in computed]
    if stored and not what:
        what = ["copy " + ", ".join(stored)]
    text = ", ".join(what)
    if len(text) > 60:
        text = text[:57].rsplit(",", 1)[0] + ", ..."
    written = []
    targets = [t for _, t, _ in group.stores] + [
        plan.at[r.index] if r.shape else plan.scalar[r.index] for r, _ in group.sinks]
    for target in targets:
        name = target if isinstance(target, str) else target.buffer.name
        if name not in written:
            written.append(name)
    return f"{shape}: {text} -> {', '.join(written)}"


#: libm functions whose calls in loops vectorise through glibc's libmvec (where
#: `_libmvec` finds it), and their number of arguments.  The scalar forms took 3 to 16 ns
#: an element (tanh's was 12 times NumPy's and half of a tanh MLP's gradient); the 2-lane
#: forms are 1.1 to 8 times faster, and within 3 ulps of NumPy's (SciPy's erf) on random,
#: tiny, huge (sin and cos up to 1e300), subnormal and special arguments, as the scalar
#: ones are.  Left scalar: asinh (its vector form was slower between -30 and 30), erfc
#: (both forms flush results below 1e-308 that SciPy keeps) and exp10 (gcc 12 does not
#: vectorise it).
SIMD_FUNCTIONS = {name: 1 for name in (
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sin", "cos", "tan", "asin",
    "acos", "atan", "sinh", "cosh", "tanh", "acosh", "atanh", "cbrt", "erf")}
SIMD_FUNCTIONS.update(pow=2, atan2=2, hypot=2)

#: NumPy's name of a function whose C name differs (the probe's reference)
_NUMPY_NAMES = {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "acosh": "arccosh",
                "atanh": "arctanh", "pow": "power", "atan2": "arctan2"}

_LIBMVEC = {}


def _simd_declaration(name):
    # (GCC then calls glibc's vector variant of the target's width in a vectorised loop,
    # as _ZGVbN2v_tanh, _ZGVdN4v_tanh (AVX2) or _ZGVeN8v_tanh (AVX-512); -lm's linker
    # script links libmvec as needed)
    arguments = ", ".join(["double"] * SIMD_FUNCTIONS.get(name, 1))
    return f'__attribute__((__simd__("notinbranch"))) extern double {name}({arguments});'


def _vectorised(name):
    """Whether loops call libmvec's `name` (see `SIMD_FUNCTIONS`)."""
    return name in SIMD_FUNCTIONS and _libmvec(name)


def _libmvec(name):
    """Whether a loop calling `name` vectorised through libmvec compiles, loads and
    computes it (GCC and glibc 2.35 or later): probed once per function and `flags`."""
    key = name, flags()             # (a function may have 2 lanes and not 8)
    if key not in _LIBMVEC:
        binary = SIMD_FUNCTIONS.get(name, 1) == 2
        call = f"{name}(x[i], x[64 + i])" if binary else f"{name}(x[i])"
        probe = "\n".join([
            "#include <math.h>", _simd_declaration(name),
            "void wg_probe(const double *restrict x, double *restrict y)",
            f"{{ for (long i = 0; i < 64; ++i) y[i] = {call}; }}", ""])
        # (inside every function's domain: acosh's is shifted by 1)
        x = np.linspace(0.05, 0.95, 128) + (name == "acosh")
        y = np.zeros(64)
        if name == "erf":           # (NumPy has none; math's is libm's scalar one)
            expected = np.array([math.erf(v) for v in x[:64]])
        else:
            f = getattr(np, _NUMPY_NAMES.get(name, name))
            expected = f(x[:64], x[64:]) if binary else f(x[:64])
        try:
            fn = C.library(probe, key[1]).wg_probe
            fn.argtypes, fn.restype = [ctypes.c_void_p] * 2, None
            fn(x.ctypes.data, y.ctypes.data)
            _LIBMVEC[key] = bool(np.allclose(y, expected, rtol=1e-14))
        except Exception:           # (no compiler, no libmvec, no such variant, ...)
            _LIBMVEC[key] = False
    return _LIBMVEC[key]


#: The C of a call of BLAS's dgemm (through the pointer the function is given), which
#: reads its arguments by reference.  (The casts: dgemm's pointers are not const.)
GEMM_HELPER = """\
typedef void wg_dgemm_t(char *, char *, int *, int *, int *, double *, double *, int *,
                        double *, int *, double *, double *, int *);
static void wg_gemm(wg_dgemm_t *dgemm, char ta, char tb, int m, int n, int k,
                    const double *a, int lda, const double *b, int ldb, double beta,
                    double *c, int ldc)
{
    double one = 1.0;
    dgemm(&ta, &tb, &m, &n, &k, &one, (double *)a, &lda, (double *)b, &ldb, &beta, c,
          &ldc);
}"""


def _product_lines(plan, step, fmt, uses):
    """The C of a matrix product (a block): BLAS's, or ``C[i,j] += A[i,k] * B[k,j]`` with
    ``j`` innermost, so that rows of B and C are walked in order; a vector is a matrix of
    one row (A) or one column (B)."""
    n = step.node
    a, b = n.args
    at_a, at_b = plan.at[a.index], plan.at[b.index]
    if step.gemm is not None:
        return _gemm_lines(plan, step, uses)
    m = a.shape[0] if a.ndim == 2 else 1
    p = a.shape[-1]
    cols = b.shape[1] if b.ndim == 2 else 1
    ia = ["i", "k"] if a.ndim == 2 else ["k"]
    ib = ["k", "j"] if b.ndim == 2 else ["k"]
    a_ik = f"{at_a.buffer.name}[{_index_text(at_a.offset, at_a.strides, ia)}]"
    b_kj = f"{at_b.buffer.name}[{_index_text(at_b.offset, at_b.strides, ib)}]"
    uses.setdefault(at_a.buffer.name, set()).add("read")
    uses.setdefault(at_b.buffer.name, set()).add("read")
    lines = [f"/* %{n.index} matmul: {'x'.join(map(str, a.shape))} @ "
             f"{'x'.join(map(str, b.shape))} */", "{"]
    if n.shape:
        out = plan.at[n.index].buffer.name
        uses.setdefault(out, set()).add("write")
        c_ij = f"{out}[{_index_text(0, [cols if a.ndim == 2 else 0, 1], ['i', 'j'])}]" \
            if b.ndim == 2 else f"{out}[i]"
        lines.append(f"    for (long i = 0; i < {n.size}; ++i) {out}[i] = 0.0;")
    else:
        c_ij = plan.scalar[n.index]
        lines.append(f"    {c_ij} = 0.0;")
    tmp = plan.product_name
    inner = [f"const double {tmp} = {a_ik};"]
    if b.ndim == 2:
        inner += [f"for (long j = 0; j < {cols}; ++j)",
                  f"    {c_ij} = {c_ij} + {tmp}*{b_kj};"]
    else:
        inner += [f"{c_ij} = {c_ij} + {tmp}*{b_kj};"]
    loops = ([f"for (long i = 0; i < {m}; ++i)"] if a.ndim == 2 else []) + \
        [f"for (long k = 0; k < {p}; ++k) {{"]
    for d, line in enumerate(loops):
        lines.append("    " * (d + 1) + line)
    lines += ["    " * (len(loops) + 1) + line for line in inner]
    lines += ["    " * len(loops) + "}", "}"]
    return lines


def _indexed_lines(plan, step, uses):
    """The C of a gather or scatter-add (`_Indexed`): a loop nest over the gathered
    elements in C order (a scatter's adds in the order of its index's elements, as
    NumPy's), each index wrapped and checked by ``wg_index``."""
    n, target, shape = step.node, step.target, step.shape
    idx = [_INDEX[d] if d < len(_INDEX) else f"i{d}" for d in range(len(shape))]
    strides = [0] * len(shape)
    for d, e in enumerate(step.dims):
        if e is not None:
            strides[e] += target.strides[d]
    size = (n.args[0].shape if n.op in (A.getitem, A.take_along_axis) else n.shape)[
        step.axis]
    if isinstance(step.where, int):
        i_text = str(step.where)
    else:
        w = step.where
        i_text = f"{w.buffer.name}[{_index_text(w.offset, w.strides, idx)}]"
        uses.setdefault(w.buffer.name, set()).add("read")
    picked = f"wg_index({i_text}, {size}, wg_bad)"
    stride = target.strides[step.axis]
    pos = _index_text(target.offset, strides, idx)
    pos = (picked if stride == 1 else f"{stride}*{picked}") + ("" if pos == "0" else
                                                               f" + {pos}")
    kind = "gather" if step.value is None else "scatter-add"
    lines = [f"/* %{n.index} {n.op.name}: {kind} of {'x'.join(map(str, shape)) or 'one'} "
             "*/", "{"]
    if step.apply is not None:
        t, x = step.apply.buffer.name, target.buffer.name
        kind = "update in place"
        lines[0] = f"/* %{n.index} add: {x} updated where {t} was scattered into */"
        uses.setdefault(t, set()).add("write")
        uses.setdefault(x, set()).add("write")
        body = [f"const int64_t wg_at = {pos};", f"{x}[wg_at] = {x}[wg_at] + {t}[wg_at];",
                f"{t}[wg_at] = 0.0;"]
    elif step.value is None:
        uses.setdefault(target.buffer.name, set()).add("read")
        out = step.out.buffer.name
        uses.setdefault(out, set()).add("write")
        body = [f"{out}[{_index_text(0, _contiguous(step.out.buffer, shape).strides, idx)}]"
                f" = {target.buffer.name}[{pos}];"]
    else:
        at_v, st_v = step.value
        uses.setdefault(target.buffer.name, set()).add("write")
        uses.setdefault(at_v.buffer.name, set()).add("read")
        t = target.buffer.name
        body = [f"const int64_t wg_at = {pos};",
                f"{t}[wg_at] = {t}[wg_at] + "
                f"{at_v.buffer.name}[{_index_text(at_v.offset, st_v, idx)}];"]
    for d, (size_d, i) in enumerate(zip(shape, idx)):
        lines.append("    " * (d + 1) + f"for (long {i} = 0; {i} < {size_d}; ++{i})")
    lines[-1] += " {"
    lines += ["    " * (len(shape) + 1) + b for b in body]
    lines += ["    " * len(shape) + "}", "}"]
    if not shape:                       # (a 0-d scatter: no loop)
        lines = lines[:2] + ["    {"] + ["        " + b for b in body] + ["    }", "}"]
    return lines


def _gemm_lines(plan, step, uses):
    """The C of a product of matrices by BLAS.  Row-major ``C = A B`` is, read
    column-major, ``C^T = B^T A^T``: dgemm is given B first, then A, each with its flag
    (`_gemm_operand`), and writes C^T, column-major with leading dimension n, which is C
    in C order."""
    node = step.node
    a, b = node.args
    (m, k), n = a.shape, b.shape[1]
    (flag_a, ld_a), (flag_b, ld_b) = step.gemm
    at_a, at_b = plan.at[a.index], plan.at[b.index]
    out = plan.at[node.index].buffer.name
    for name, use in ((at_a.buffer.name, "read"), (at_b.buffer.name, "read"),
                      (out, "write")):
        uses.setdefault(name, set()).add(use)

    def pointer(at):
        return at.buffer.name + (f" + {at.offset}" if at.offset else "")
    return [f"/* %{node.index} matmul: {m}x{k} @ {k}x{n}, by BLAS */",
            f"wg_gemm(wg_dgemm, '{flag_b}', '{flag_a}', {n}, {m}, {k}, {pointer(at_b)}, "
            f"{ld_b}, {pointer(at_a)}, {ld_a}, 0.0, {out}, {max(n, 1)});"]


def _updates(loop):
    """``(input position, result k)`` of each carry of a scan's body that it can update
    in place: result k is carry k plus a scatter-add into zeros (``put_along_axis``,
    ``index_add`` at an index array: the gradient of ``x[i]`` in a loop, added into
    x's cotangent), and nothing else reads the carry, the scatter or the sum.

    Each step's sum ``carry + scatter`` is then the carry with the scattered elements
    added, and the others as they are, which is NumPy's ``x + 0.0`` but for -0.0: the
    first carry is written as ``x + 0.0`` before the first step, and no step gives a
    -0.0 (a sum is -0.0 only of two, and a scatter's elements are ``0.0 + ...``).

    Example:
        >>> import numpy as np, wengert as wg
        >>> f = lambda x: wg.fori_loop(0, 3, lambda i, c: c * wg.numpy.sin(x[i]), 1.0)
        >>> g = wg.trace(wg.grad(f), np.ones(3))
        >>> [_updates(n.op) for n in g.live_nodes() if isinstance(n.op, Loop)]
        [[], [(2, 1)]]
    """
    body = loop.body
    users = {}
    for n in body.live_nodes():
        for a in n.args:
            users.setdefault(a.index, []).append(n)
    for o in body.outputs:
        users.setdefault(o.index, []).append(None)
    found = []
    for k in range(loop.n_carry):
        x, o = body.inputs[loop.n_consts + k], body.outputs[k]
        if o.op is not S.add or x.dtype != np.float64 or not any(a is x for a in o.args):
            continue
        scatter = next(a for a in o.args if a is not x)
        if scatter.op is A.index_add:
            ok = any(isinstance(i, np.ndarray) for i in scatter.params["index"])
        else:
            ok = scatter.op is A.put_along_axis
        if ok and scatter.shape == x.shape and all(
                [u is o for u in users.get(i, [])] == [True]
                for i in (x.index, scatter.index)) and users[o.index] == [None]:
            found.append((loop.n_consts + k, k))
    return found


def _loop_lines(plan, step, uses):
    """The C of a loop step (`_Looped`, a block): the body's function called per step,
    reading the carry at ``cur`` and writing it at ``nxt``, which then change places; a
    scan's step reads its rows of the xs and writes its rows of the ys where they are.
    A body that checks indices returns 2 where one is out of bounds, and so does this
    function, at once."""
    n, op, sub = step.node, step.node.op, step.plan
    ins, outs = op.body.inputs, op.body.outputs
    k0, nc = op.n_consts, op.n_carry
    k1, row = k0 + nc, step.row

    def pointer(at):
        return at.buffer.name + (f" + {at.offset}" if at.offset else "")

    for at in step.args:
        uses.setdefault(at.buffer.name, set()).add("read")
    for b in [b for pair in step.carry for b in pair if b is not None] + step.ys:
        uses.setdefault(b.name, set()).add("write")
    args = []
    for kind, k in sub.params:
        if kind == "in":
            args.append(pointer(step.args[k]) if k < k0 else
                        step.carry[k - k0][0].name if k - k0 in step.updated else
                        step.cur[k - k0] if k < k1 else
                        f"{pointer(step.args[k])} + {row} * {ins[k].size}")
        elif kind == "const":
            args.append(step.consts[k.name].name)
        elif kind == "out":
            args.append(step.nxt[k] if k < nc else step.ys[0].name if op.until else
                        f"{step.ys[k - nc].name} + {row} * {outs[k].size}")
        else:
            args.append({"work": step.work and step.work.name, "dgemm": "wg_dgemm",
                         "bad": "wg_bad"}[kind])
    call = f"{step.body_name}({', '.join(args)})"
    call = f"if ({call}) return 2;" if sub.bounds else call + ";"
    lines, swap = [], []
    if any(b.kept for b in sub.buffers):        # (its scratch, zero from the first step)
        lines.append(f"memset({step.work.name}, 0, {sub.workspace});")
    for k, (a, b) in enumerate(step.carry):
        t = _CTYPES[a.dtype]
        if b is None:
            # (updated in place: a carry plus 0.0, as each step gives it, holds no -0.0)
            lines.append(f"for (long i = 0; i < {a.size}; ++i) {a.name}[i] = "
                         f"{pointer(step.args[k0 + k])}[i] + 0.0;")
            continue
        lines += [f"const {t} *{step.cur[k]} = {pointer(step.args[k0 + k])};",
                  f"{t} *{step.nxt[k]} = {a.name};"]
        swap.append(f"{step.cur[k]} = {step.nxt[k]}; "
                    f"{step.nxt[k]} = {step.nxt[k]} == {a.name} ? {b.name} : {a.name};")
    copy = [f"if ({cur} != {a.name}) memcpy({a.name}, {cur}, {a.size} * sizeof *{a.name});"
            for cur, (a, b) in zip(step.cur, step.carry) if b is not None]
    name = op.name.replace("*/", "* /")
    if op.until:
        go = step.go_now
        title = "while its test holds"
        lines += [f"int {go} = {step.go};", f"while ({go}) {{",
                  *C._indented([call, f"{go} = {step.ys[0].name}[0];"] + swap), "}"] + copy
    else:
        title, length = f"{op.length} steps", op.length
        first = f"{length - 1} - {step.step}" if op.reverse else step.step
        lines += [f"for (long {step.step} = 0; {step.step} < {length}; ++{step.step}) {{",
                  f"    const long {row} = {first};", *C._indented([call] + swap), "}"]
        lines += copy if not length else []
    return [f"/* %{n.index} {name}: {title}, a call of {step.body_name} each */", "{",
            *C._indented(lines), "}"]


# ---- convolutions and pooling -------------------------------------------------------------
#: the C names of the window steps' own variables (loop indices, pointers, values)
_WINDOW_NAMES = ("wg_n", "wg_g", "wg_c", "wg_i", "wg_j", "wg_p", "wg_q", "wg_h", "wg_v",
                 "wg_r", "wg_u", "wg_s", "wg_t", "wg_k", "wg_m", "wg_e", "wg_w", "wg_x",
                 "wg_o", "wg_tap", "wg_to", "wg_ti", "wg_tj", "wg_top", "wg_left")


def _window_lines(plan, step, uses):
    """The C of a convolution or pooling step (a block)."""
    n = step.node
    for at in step.ats:
        uses.setdefault(at.buffer.name, set()).add("read")
    uses.setdefault(plan.at[n.index].buffer.name, set()).add("write")
    if step.cols is not None:
        uses.setdefault(step.cols.name, set()).add("write")
        return _conv_lines(plan, step)
    return _pool_lines(plan, step)


def _lin(terms, const=0):
    """C text of ``sum(c * v) + const`` over ``(c, v)`` terms."""
    return _index_text(const, [c for c, _ in terms], [v for _, v in terms])


def _conv_lines(plan, step):
    """A convolution primitive, image by image: the image's windows copied into `cols`,
    a row per channel and tap (im2col; zeros where a window reaches into the padding),
    then a product per group, BLAS's or loops; an input gradient computes the rows
    first and adds each into its window's place (col2im)."""
    n = step.node
    op, geo = n.op, n.params
    (sh, sw), ((top, _), (left, _)), (dh, dw) = geo["stride"], geo["padding"], \
        geo["dilation"]
    groups = geo["groups"]
    (images, c, h, w), (o, cg, kh, kw), (_, _, ho, wo) = _conv_shapes(n)
    og, k, p = o // groups, cg * kh * kw, ho * wo
    out = plan.at[n.index]
    if op is NN.conv2d:
        (at_x, at_w), at_y = step.ats, out
    elif op is NN.conv2d_input_grad:
        (at_y, at_w), at_x = step.ats, out
    else:
        (at_x, at_y), at_w = step.ats, out
    cols, xb = step.cols.name, at_x.buffer.name

    def ptr(buffer, offset):
        return f"{buffer.name} + {offset}" if offset != "0" else buffer.name
    # (the window's tap at row wg_h, column wg_v of the image: inside it, or padding)
    inside = ["wg_h >= 0" if top else "", f"wg_h < {h}" if (ho - 1) * sh + (kh - 1) * dh
              - top >= h else "", "wg_v >= 0" if left else "",
              f"wg_v < {w}" if (wo - 1) * sw + (kw - 1) * dw - left >= w else ""]
    inside = " && ".join(t for t in inside if t)
    x_index = _index_text(at_x.offset, at_x.strides, ["wg_n", "wg_c", "wg_h", "wg_v"])
    if op is NN.conv2d_input_grad:
        copy = f"{xb}[{x_index}] = {xb}[{x_index}] + wg_r[wg_p*{wo} + wg_q];"
        copy = [f"if ({inside})", "    " + copy] if inside else [copy]
    else:
        x = f"{xb}[{x_index}]"
        copy = [f"wg_r[wg_p*{wo} + wg_q] = " + (f"{inside} ? {x} : 0.0;" if inside else
                                                 f"{x};")]
    windows = [
        f"for (long wg_c = 0; wg_c < {c}; ++wg_c)",
        f"    for (long wg_i = 0; wg_i < {kh}; ++wg_i)",
        f"        for (long wg_j = 0; wg_j < {kw}; ++wg_j) {{",
        f"            double *restrict wg_r = {cols} + ((wg_c*{kh} + wg_i)*{kw} + wg_j)*{p};",
        f"            for (long wg_p = 0; wg_p < {ho}; ++wg_p) {{",
        f"                const long wg_h = {_lin([(sh, 'wg_p'), (dh, 'wg_i')], -top)};",
        f"                for (long wg_q = 0; wg_q < {wo}; ++wg_q) {{",
        f"                    const long wg_v = {_lin([(sw, 'wg_q'), (dw, 'wg_j')], -left)};",
        *["                    " + line for line in copy],
        "                }", "            }", "        }"]
    # each group's product, of blocks of one image: group wg_g's kernels (og, k), its
    # rows of windows (k, p) and its outputs (og, p)
    w_g = ptr(at_w.buffer, _lin([(og * k, "wg_g")], at_w.offset))
    cols_g = ptr(step.cols, _lin([(k * p, "wg_g")]))
    y_ng = ptr(at_y.buffer, _lin([(at_y.strides[0], "wg_n"), (og * p, "wg_g")], at_y.offset))
    if op is NN.conv2d:                         # y = w cols
        product = _block_product((og, p, k), (w_g, k, 1), (cols_g, p, 1), (y_ng, p), False,
                                 step.blas)
    elif op is NN.conv2d_input_grad:            # cols = w^T y
        product = _block_product((k, p, og), (w_g, 1, k), (y_ng, p, 1), (cols_g, p), False,
                                 step.blas)
    else:                                       # w += y cols^T
        product = _block_product((og, k, p), (y_ng, p, 1), (cols_g, 1, p), (w_g, k), True,
                                 step.blas)
    product = [f"for (long wg_g = 0; wg_g < {groups}; ++wg_g) {{",
               *["    " + line for line in product], "}"]
    body = product + windows if op is NN.conv2d_input_grad else windows + product
    what = {NN.conv2d: "y", NN.conv2d_input_grad: "the images' cotangent",
            NN.conv2d_weight_grad: "the kernels' cotangent"}[op]
    lines = [f"/* %{n.index} {op.name}: {images} images {c}x{h}x{w}, {o} kernels "
             f"{cg}x{kh}x{kw}, {groups} group{'s' * (groups > 1)} -> {ho}x{wo}; {what}, "
             f"{'by BLAS' if step.blas else 'by loops'} */", "{"]
    if op is not NN.conv2d:                     # (sums into it)
        lines.append(f"    memset({out.buffer.name}, 0, {n.size} * sizeof(double));")
    lines.append(f"    for (long wg_n = 0; wg_n < {images}; ++wg_n) {{")
    lines += ["        " + line for line in body]
    return lines + ["    }", "}"]


def _block_product(sizes, a, b, c, accumulate, blas):
    """C lines of ``C = A B`` (``C += A B`` where `accumulate`) of blocks of sizes ``(m,
    n, k)``: A and B ``(pointer, row stride, column stride)``, C ``(pointer, row
    stride)`` with columns of stride 1.  BLAS's dgemm, or loops: with B's rows of stride 1,
    ``C[u, t] += A[u, s] B[s, t]`` with t innermost, else a dot product per element."""
    m, n, k = sizes
    if blas:
        # (row-major C = A B is column-major C^T = B^T A^T: B first)
        (fa, lda), (fb, ldb) = (_gemm_operand(types.SimpleNamespace(strides=op[1:]), shape)
                                for op, shape in ((a, (m, k)), (b, (k, n))))
        return [f"wg_gemm(wg_dgemm, '{fb}', '{fa}', {n}, {m}, {k}, {b[0]}, {ldb}, {a[0]}, "
                f"{lda}, {'1.0' if accumulate else '0.0'}, {c[0]}, {c[1]});"]
    a_us = f"({a[0]})[{_lin([(a[1], 'wg_u'), (a[2], 'wg_s')])}]"
    b_st = f"({b[0]})[{_lin([(b[1], 'wg_s'), (b[2], 'wg_t')])}]"
    c_row = f"({c[0]}) + {_lin([(c[1], 'wg_u')])}"
    if b[2] == 1:
        return [f"for (long wg_u = 0; wg_u < {m}; ++wg_u) {{",
                f"    double *restrict wg_o = {c_row};",
                *([] if accumulate else
                  [f"    for (long wg_t = 0; wg_t < {n}; ++wg_t) wg_o[wg_t] = 0.0;"]),
                f"    for (long wg_s = 0; wg_s < {k}; ++wg_s) {{",
                f"        const double wg_e = {a_us};",
                f"        for (long wg_t = 0; wg_t < {n}; ++wg_t)",
                f"            wg_o[wg_t] = wg_o[wg_t] + wg_e*{b_st};",
                "    }", "}"]
    return [f"for (long wg_u = 0; wg_u < {m}; ++wg_u) {{",
            f"    double *restrict wg_o = {c_row};",
            f"    for (long wg_t = 0; wg_t < {n}; ++wg_t) {{",
            f"        double wg_e = {'wg_o[wg_t]' if accumulate else '0.0'};",
            f"        for (long wg_s = 0; wg_s < {k}; ++wg_s)",
            f"            wg_e = wg_e + {a_us}*{b_st};",
            "        wg_o[wg_t] = wg_e;", "    }", "}"]


def _pool_lines(plan, step):
    """A pooling primitive: a loop over the windows (N, C, Ho, Wo), each reading its taps
    through a table of their offsets, in the order of `wengert.primitives.nn`'s corner
    views (row by row): the maximum as NumPy's ``maximum`` folds them; the first tap
    holding it (its value, or a nan where it is nan: `_first_hits`) for the gradients."""
    n = step.node
    op, geo = n.op, n.params
    (kh, kw), (sh, sw) = geo["kernel"], geo["stride"]
    dh, dw = geo.get("dilation", (1, 1))
    taps = [(i * dh, j * dw) for i in range(kh) for j in range(kw)]
    x = n.args[1] if op in (NN.pool_scatter, NN.pool_gather) else n.args[0]
    at_x = step.ats[1] if op in (NN.pool_scatter, NN.pool_gather) else step.ats[0]
    out = plan.at[n.index]
    images, channels, ho, wo = x.shape[:2] + (n.shape if op in (
        NN.max_pool2d, NN.pool_gather, NN.pool_argmax) else n.args[0].shape)[2:]
    loop = ["wg_n", "wg_c", "wg_p", "wg_q"]

    def window(at):
        """The element of the window's first tap in an array of x's shape at `at`."""
        s = at.strides
        return _lin([(s[0], "wg_n"), (s[1], "wg_c"), (s[2] * sh, "wg_p"),
                     (s[3] * sw, "wg_q")], at.offset)

    def table(name, at):
        offsets = ", ".join(str(i * at.strides[2] + j * at.strides[3]) for i, j in taps)
        return f"static const long {name}[{len(taps)}] = {{{offsets}}};"

    def at_window(at):                  # (an array of the windows' shape: one element)
        return f"{at.buffer.name}[{_index_text(at.offset, at.strides, loop)}]"
    xb = at_x.buffer.name
    head, body = [table("wg_tap", at_x)], [f"const double *wg_x = {xb} + {window(at_x)};"]

    def first(condition=""):
        """The first tap holding the maximum wg_m (a nan where it is nan; one search for
        each case ran twice as fast as one testing both)."""
        lines = ["long wg_w = -1;"]
        for case, hit in (("if (wg_m == wg_m)", "wg_e == wg_m"), ("else", "wg_e != wg_e")):
            test = f"{condition} && {hit}" if condition else hit
            lines += [case, f"    for (long wg_k = 0; wg_k < {len(taps)}; ++wg_k) {{",
                      "        const double wg_e = wg_x[wg_tap[wg_k]];",
                      f"        if ({test}) {{", "            wg_w = wg_k;",
                      "            break;", "        }", "    }"]
        return lines
    maximum = ["double wg_m = wg_x[0];",
               f"for (long wg_k = 1; wg_k < {len(taps)}; ++wg_k)",
               "    wg_m = wg_max(wg_m, wg_x[wg_tap[wg_k]]);"]
    descending = False
    if op is NN.max_pool2d:
        body += maximum + [f"{at_window(out)} = wg_m;"]
    elif op is NN.pool_argmax:
        ph, pw = geo["pad"]
        width, height = geo["width"], geo["height"]
        for name, ts in (("wg_ti", [i for i, _ in taps]), ("wg_tj", [j for _, j in taps])):
            head.append(f"static const long {name}[{len(taps)}] = {{{', '.join(map(str, ts))}}};")
        body += maximum + [
            f"const long wg_top = {_lin([(sh, 'wg_p')], -ph)}, "
            f"wg_left = {_lin([(sw, 'wg_q')], -pw)};"]
        # (PyTorch's indices count no tap in the padding)
        allowed = (f"wg_top + wg_ti[wg_k] >= 0 && wg_top + wg_ti[wg_k] < {height} && "
                   f"wg_left + wg_tj[wg_k] >= 0 && wg_left + wg_tj[wg_k] < {width}")
        allowed = f"({allowed})"
        body += first(allowed) + [
            f"{at_window(out)} = wg_w < 0 ? 0 : (wg_top + wg_ti[wg_w])*{width} + "
            "wg_left + wg_tj[wg_w];"]
    elif op is NN.pool_gather:          # (0.0 + t: the NumPy code's sum into zeros)
        at_t = step.ats[0]
        head.append(table("wg_to", at_t))
        body += [f"const double wg_m = {at_window(step.ats[2])};", *first(),
                 f"{at_window(out)} = wg_w < 0 ? 0.0 : 0.0 + "
                 f"{at_t.buffer.name}[{window(at_t)} + wg_to[wg_w]];"]
    else:                               # pool_scatter
        at_g, at_y = step.ats[0], step.ats[2]
        head.append(table("wg_to", out))
        o = f"{out.buffer.name}[{window(out)} + wg_to[wg_k]]"
        body += [f"const double wg_m = {at_window(at_y)}, wg_s = {at_window(at_g)};",
                 *first()]
        if sh > (kh - 1) * dh and sw > (kw - 1) * dw:
            # windows apart: each tap gets (hit) * g, a 0 of g's sign elsewhere, as the
            # NumPy code's product of the hits and g
            body += [f"for (long wg_k = 0; wg_k < {len(taps)}; ++wg_k)",
                     f"    {o} = (wg_k == wg_w ? 1.0 : 0.0)*wg_s;"]
        else:
            # overlapping windows add into a place; from the last window to the first,
            # which adds each place's shares in the NumPy code's order (by corner)
            o = o.replace("wg_k", "wg_w")
            body += ["if (wg_w >= 0)", f"    {o} = {o} + wg_s;"]
            descending = True
        covered = all({q * st + t * d for q in range(m) for t in range(k)} == set(range(size))
                      for m, st, k, d, size in zip((ho, wo), (sh, sw), (kh, kw), (dh, dw),
                                                   x.shape[2:]))
        if descending or not covered:       # (places no window writes: zeros)
            head.insert(0, f"memset({out.buffer.name}, 0, {out.buffer.size} * "
                        "sizeof(double));")
    sizes = [images, channels, ho, wo]
    lines = [f"/* %{n.index} {op.name}: {kh}x{kw} windows, stride {sh}x{sw}"
             + (f", dilation {dh}x{dw}" if (dh, dw) != (1, 1) else "")
             + f", {'x'.join(map(str, sizes))} */", "{", *["    " + h_ for h_ in head]]
    for d, (size, idx) in enumerate(zip(sizes, loop)):
        step_ = (f"long {idx} = {size - 1}; {idx} >= 0; --{idx}" if descending and d >= 2
                 else f"long {idx} = 0; {idx} < {size}; ++{idx}")
        lines.append("    " * (d + 1) + f"for ({step_})" + (" {" if d == 3 else ""))
    lines += ["    " * 5 + line for line in body]
    return lines + ["    " * 4 + "}", "}"]


def _unfused(graph):
    """`graph` with the fused cross-entropy of (n, C) logits and n labels and its gradient
    written with primitives the loops write, as `wengert.primitives.nn` computes them:
    the row's max m (0 for a row of -inf), ``e = exp(x - m)``, its sum s; the loss
    ``(sum(log(s)) + sum(m - x[label])) / n``, the gradient ``(e/s - onehot) / n``, with
    the one-hot a comparison of the label with each class (which the gradient reads as
    ``p - 1.0`` where it holds, as NumPy subtracts 1.0 there)."""
    from .. import numpy as wnp
    fused = (NN.cross_entropy, NN.cross_entropy_grad)
    if not any(n.op in fused for n in graph.live_nodes()):
        return graph

    def unfuse(new, node, new_of):
        if node.op not in fused:
            return None
        x, labels = (new_of[a.index] for a in node.args)
        n, classes = node.args[0].shape
        if x.dtype != np.float64:
            return None
        m = wnp.max(x, axis=1, keepdims=True)
        m = wnp.where(m == -math.inf, 0.0, m)
        e = wnp.exp(x - m)
        s = wnp.sum(e, axis=1, keepdims=True)
        hit = wnp.reshape(labels, (n, 1)) == np.arange(classes, dtype=labels.dtype)
        if node.op is NN.cross_entropy_grad:
            p = e / s
            return wnp.where(hit, p - 1.0, p) / float(n)
        picked = wnp.sum(wnp.where(hit, x, 0.0), axis=1)
        return (wnp.sum(wnp.log(s)) + wnp.sum(m[:, 0] - picked)) / float(n)
    return graph.rebuilt(unfuse)


def _names(graph) -> Names:
    """Names for the C function's variables: user names that are no C word, helper,
    function or loop index of the code."""
    taken = set(C_RESERVED) | set(C.HELPERS) | set(C.INTEGER_HELPERS) | set(_INDEX) | {
        f"i{d}" for d in range(len(_INDEX), 64)} | set(C._FUNCTIONS.values()) | {
        "int64_t", "uint64_t", "malloc", "free", "memset", "memcpy", "res", "restrict",
        "NULL", "INT64_MIN", "INT64_MAX", "nearbyint", "copysign", "isinf", "isnan",
        "wg_gemm", "wg_dgemm", "wg_dgemm_t", "wg_bad", "wg_at"} | set(_WINDOW_NAMES)
    return Names(frozenset(taken))


def function_source(graph, name):
    """``(source, plan)``: the C of ``int name(inputs..., outputs...)`` computing `graph`
    with loops over its arrays (see the module doc), and the `_Plan` that says what the
    parameters are.  Raises `NotLooped` for what it cannot write.

    Example:
        >>> import numpy as np, wengert as wg
        >>> # (asinh: a libm function that does not vectorise, so the sum adds in order on
        >>> # every machine, and the loop reads shortly)
        >>> g = wg.trace(lambda x: wg.numpy.sum(wg.numpy.arcsinh(x) * 2.0), np.ones(1000))
        >>> source = function_source(g, "wg_f")[0]
        >>> print(source[source.index("void"):])
        void wg_f(const double *restrict x, double *restrict res)
        {
            double s4;
            /* 1000: %1 asinh, %3 mul, %4 sum -> s4 */
            {
                s4 = 0.0;
                for (long i = 0; i < 1000; ++i) {
                    s4 = s4+asinh(x[i])*2.0;
                }
            }
            res[0] = s4;
        }
        <BLANKLINE>
    """
    definition, plan = _functions(graph, name)
    text = "\n".join(plan.bodies + [definition])
    helpers = C._integer_helpers(text) + [h for h_name, h in C.HELPERS.items()
                                          if h_name + "(" in text or plan.bounds and
                                          h_name == "wg_bad_index"]
    if plan.blas:
        helpers.append(GEMM_HELPER)
    includes = ["#include <math.h>", "#include <string.h>", "#include <stdint.h>"]
    includes += [_simd_declaration(f) for f in SIMD_FUNCTIONS
                 if re.search(rf"\b{f}\(", text) and _vectorised(f)]
    head = f"/* wengert: {len(graph.outputs)} results from {len(graph.inputs)} " \
        "arguments, in loops */"
    source = "\n".join([head, *includes, "", *(helpers + [""] if helpers else []), text])
    return source, plan


def _functions(graph, name, pointers=False, updates=()):
    """``(definition, plan)``: the C function `name` computing `graph` (`_source`), its
    loops' bodies' functions in ``plan.bodies``.  With `pointers`, a loop's body: a
    static function whose scalar arguments and results are in memory, as its arrays
    are, and whose parameters ``plan.params`` lists; its carries `updates` (`_updates`)
    are updated in place."""
    try:
        return _source(graph, name, True, pointers, updates)
    except _TooManyBoxes:
        return _source(graph, name, False, pointers, updates)


def _source(graph, name, in_place, pointers=False, updates=()):
    graph = _unfused(graph)
    names = _names(graph)
    names.taken.add(name)
    plan = _Plan(graph, names, in_place, name, pointers, updates)
    plan.product_name = names.user("a_ik")
    plan.pw_names = {k: names.user("pw_" + k) for k in (
        "lo", "len", "side", "top", "f", "left", "right", "sum", "lane", "stop", "jb")}
    fmt = C.CFormat()
    blocks, uses = [], []
    for step in plan.steps:
        used = {}
        if isinstance(step, _Group):
            blocks.append(_group_lines(plan, step, fmt, used))
        elif isinstance(step, _Indexed):
            blocks.append(_indexed_lines(plan, step, used))
        elif isinstance(step, _Window):
            blocks.append(_window_lines(plan, step, used))
        elif isinstance(step, _Looped):
            blocks.append(_loop_lines(plan, step, used))
        else:
            blocks.append(_product_lines(plan, step, fmt, used))
        uses.append(used)
    params, plan.params, body = [], [], []
    for k, n in enumerate(graph.inputs):
        plan.params.append(("in", k))
        if n.shape:
            buf = plan.at[n.index].buffer
            const = "const " if buf.role == "in" else ""
            params.append(f"{const}{_CTYPES[buf.dtype]} *restrict {buf.name}")
        elif pointers:          # (a body's scalar is read from memory, once)
            p = names.user(plan.scalar[n.index] + "_p")
            params.append(f"const {_CTYPES[n.dtype]} *restrict {p}")
            body.append(f"    const {_LOCAL_CTYPES[n.dtype]} {plan.scalar[n.index]} = "
                        f"{p}[0];")
        else:
            params.append(f"{_LOCAL_CTYPES[n.dtype]} {plan.scalar[n.index]}")
    consts = [b for b in plan.buffers if b.role == "const"]
    params += [f"const {_CTYPES[b.dtype]} *restrict {b.name}" for b in consts]
    plan.params += [("const", b) for b in consts]
    params += [f"{_CTYPES[b.dtype]} *restrict {b.name}" for b in plan.outs if b is not None]
    plan.params += [("out", k) for k, b in enumerate(plan.outs) if b is not None]
    locals_ = [(nm, n) for nm, n, role in plan.locals if role == "local"]
    for nm, n in locals_:
        body.append(f"    {_LOCAL_CTYPES[n.dtype]} {nm};")
    for b in plan.outs:
        if b is not None and b.zeroed:
            body.append(f"    memset({b.name}, 0, {b.size} * sizeof *{b.name});")
    # the temporaries: regions of one workspace, which the caller keeps between calls
    # (allocating megabytes afresh at every call costs a page fault per 4 KB)
    temps = [b for b in plan.buffers if b.role == "temp"]
    work, offset = names.user("work"), 0
    for b in temps:
        body.append(f"    {_CTYPES[b.dtype]} *restrict {b.name} = "
                    f"({_CTYPES[b.dtype]} *)({work} + {offset});")
        offset += -(-max(b.size, 1) * b.dtype.itemsize // 64) * 64
    plan.workspace = offset
    if temps:
        params.append(f"unsigned char *restrict {work}")
        plan.params.append(("work", None))
    if plan.res and not pointers:
        params.append("double *restrict res")
    if plan.blas:
        params.append("wg_dgemm_t *wg_dgemm")
        plan.params.append(("dgemm", None))
    if plan.bounds:
        params.append("int64_t *restrict wg_bad")
        plan.params.append(("bad", None))
    first = {b.name: min((k for k, u in enumerate(uses) if b.name in u), default=0)
             for b in temps if b.zeroed}
    for k, block in enumerate(blocks):
        body += [f"    memset({b.name}, 0, {b.size} * sizeof *{b.name});"
                 for b in temps if b.zeroed and first[b.name] == k]
        body += ["    " + line for line in block]
    for slot, o in plan.res:
        if pointers:
            text = _result_text(plan, o, fmt, bits=False)
            body.append(f"    {plan.outs[slot].name}[0] = {text};")
        else:
            body.append(f"    res[{slot}] = {_result_text(plan, o, fmt)};")
    if plan.bounds:             # (2: an index was out of bounds, noted in wg_bad)
        body.append("    return wg_bad[0] ? 2 : 0;")
    kind = "int" if plan.bounds else "void"
    static = "static " if pointers else ""
    definition = [f"{static}{kind} {name}({', '.join(params) or 'void'})", "{", *body, "}",
                  ""]
    return "\n".join(definition), plan


def _result_text(plan, o, fmt, bits=True):
    """The C text of a scalar result, as a double (an int64 as its bits, unless not
    `bits`)."""
    if o.index in plan.literal:
        text = fmt.number(plan.literal[o.index])
    elif o.index in plan.scalar:
        text = plan.scalar[o.index]
    else:
        at = plan.at[o.index]
        text = f"{at.buffer.name}[{at.offset}]"
    return f"wg_f64({text})" if o.dtype == np.int64 and bits else text


_ARG_TYPES = {np.dtype(np.float64): ctypes.c_double, np.dtype(np.int64): ctypes.c_int64,
              np.dtype(np.bool_): ctypes.c_int}


def _entry(d, key, graph, params, form):
    """An entry of a compiled function (see `wengert.staged`) that runs `graph` as C
    loops; `form` is the `CallForm` of its Python glue.  The glue checks the arguments,
    makes arrays C-contiguous, allocates the results and passes pointers to all of them
    (a read-only array's address the slow way: ``from_buffer`` wants a writable one)."""
    from ..staged import Entry
    name = C.c_name(d.fn_name)
    source, plan = function_source(graph, name)
    cfn = C.library(source, flags())[name]
    cfn.restype = ctypes.c_int if plan.bounds else None
    ns = d.ns
    np_ = ns.fixed("_np", np)
    names = ns.names.fork()
    names.taken.update([d.fn_name] + [n for n, _ in params])
    lines, leaves = py.prologue(params, names, ns, "_miss", form=form)
    ref, cb = ns.bind(ctypes.byref, "byref"), ns.bind(ctypes.c_char.from_buffer, "buffer")
    argtypes, args, body = [], [], []

    def pointer(var):
        p = names.own("p")
        body.extend(["try:", f"    {p} = {ref}({cb}({var}))",
                     "except (TypeError, ValueError):     # (a read-only or empty array)",
                     f"    {p} = {var}.ctypes.data"])
        return p

    for k, check_params in plan.checks:    # (labels in range, or NumPy's error: _checked)
        check = ns.bind(NN.checked_labels.impl, "checked_labels")
        body.append(f"{check}({leaves[k].name}, **{ns.bind(check_params, 'params')})")
    for leaf, n in zip(leaves, graph.inputs):
        if n.shape:
            body.append(f"{leaf.name} = {np_}.ascontiguousarray({leaf.name})")
            args.append(pointer(leaf.name))
            argtypes.append(ctypes.c_void_p)
        else:
            args.append(leaf.name if n.dtype == np.float64 else f"int({leaf.name})")
            argtypes.append(_ARG_TYPES[n.dtype])
    for b in plan.buffers:
        if b.role == "const":
            arr = np.array(b.value, order="C")          # (ours: writable, kept alive)
            args.append(ns.bind(ctypes.c_void_p(arr.ctypes.data), "kp"))
            ns.bind(arr, "k")
            argtypes.append(ctypes.c_void_p)
    results = []
    for k, (b, o) in enumerate(zip(plan.outs, graph.outputs)):
        if b is None:
            results.append(None)
            continue
        r = names.own("r")
        body.append(f"{r} = {np_}.empty({o.shape!r}, {ns.bind(o.dtype, 'dtype')})")
        args.append(pointer(r) if not o.size else f"{ref}({cb}({r}))")
        argtypes.append(ctypes.c_void_p)
        results.append(r)
    if plan.workspace:
        # (a free list: a call takes a workspace and gives it back, so calls in several
        # threads, which ctypes lets run at once, never share one)
        pool, w = ns.bind([], "workspaces"), names.own("w")
        body.append(f"{w} = {pool}.pop() if {pool} else {np_}.empty({plan.workspace}, "
                    f"{ns.bind(np.dtype(np.uint8), 'dtype')})")
        args.append(f"{ref}({cb}({w}))")
        argtypes.append(ctypes.c_void_p)
    if plan.res:
        res = names.own("res")
        body.append(f"{res} = {ns.bind(ctypes.c_double * len(graph.outputs), 'res_t')}()")
        args.append(f"{ref}({res})")
        argtypes.append(ctypes.c_void_p)
        for slot, o in plan.res:
            value = f"{res}[{slot}]"
            results[slot] = (f"bool({value})" if o.dtype.kind == "b" else
                             f"{ns.bind(C._int64_of_bits, 'int64_of_bits')}({value})"
                             if o.dtype == np.int64 else value)
    if plan.blas:
        args.append(ns.bind(ctypes.c_void_p(dgemm_address()), "dgemm"))
        argtypes.append(ctypes.c_void_p)
    if plan.bounds:             # (where the C notes an index out of bounds: c's IndexError)
        bad = names.own("bad")
        body.append(f"{bad} = {ns.bind(ctypes.c_int64 * 3, 'bad_t')}()")
        args.append(bad)
        argtypes.append(ctypes.POINTER(ctypes.c_int64))
    cfn.argtypes = argtypes
    call = ns.bind(cfn, "cfunction")
    if plan.bounds:
        body.append(f"if {call}({', '.join(args)}): "
                    f"{ns.bind(C._failed, 'failed')}({bad}, {d.fn_name!r})")
    else:
        body.append(f"{call}({', '.join(args)})")
    if plan.workspace:
        body.append(f"{pool}.append({w})")
    body.append(f"return {py.build_tree(graph.out_tree, results, ns)}")
    glue = "\n".join([f"def {d.fn_name}({form.head}):", *lines,
                      *("    " + b for b in body)]) + "\n"
    function = py.make_function(glue, d.fn_name, ns)
    e = Entry(key, graph, graph, "c", source, function, params)
    e.glue, e.looped = glue, True
    return e


def entry_or_reason(d, key, graph, params, form):
    """``(entry, None)`` where `graph` is written as loops (`wanted`), ``(None, why)``
    where it would be but they cannot write it, ``(None, None)`` where it is not: how
    `wg.compile` (`wengert.staged`) builds an entry of ``backend="c"``.

    Example:
        >>> import numpy as np, wengert as wg
        >>> try:
        ...     c = wg.compile(lambda x: x * 2.0, np.ones(1000), backend="c")
        ...     looped = c.entry.looped
        ... except wg.codegen.c.CompilerNotFound:
        ...     looped = True
        >>> looped
        True
    """
    if not wanted(graph):
        return None, None
    try:
        return _entry(d, key, graph, params, form), None
    except NotLooped as e:
        return None, str(e)


def refuse_large(graph, why):
    """Raise `NotScalar` for a graph the loops refused (`why`) whose arrays are too large
    to write element by element in reasonable time (more than `scalarize.LIMIT`
    elements: the C compiler alone would take minutes); a smaller one is scalarised.

    Example:
        >>> import numpy as np, wengert as wg
        >>> refuse_large(wg.trace(lambda x: x * 2.0, np.ones(10)), "cumsum")   # small
        >>> refuse_large(wg.trace(lambda x: x * 2.0, np.ones(10 ** 6)), "cumsum")
        Traceback (most recent call last):
          ...
        wengert.codegen.scalarize.NotScalar: arrays of 2,000,000 elements in all, ...
    """
    from .scalarize import LIMIT, NotScalar
    elements = sum(n.size for n in graph.live_nodes() if n.op is not CONST)
    if elements > LIMIT:
        raise NotScalar(f"arrays of {elements:,} elements in all, more than the {LIMIT:,} "
                        "it writes element by element")
