"""Planner: normalise a (src, dst) descriptor pair into loop nodes and pick a kernel.

Normalisation (spec §5.3 is oneDNN's version of the same idea):
  1. Each logical dim is split into digits at every weight either side uses, so that each
     digit is one strided axis on both sides (`nchw -> nChw16c`: c = 16*C + c16).
     The iteration space of a dim is its size rounded up to the larger blocking; positions
     beyond the logical size are zeros in dst padding, or skipped where dst has no room.
  2. Size-1 nodes are dropped, nodes are sorted by dst stride (outermost first), and nodes
     contiguous on both sides are fused, so `h` and `w` become one run of H*W.
  3. The first kernel in `KERNELS` whose `is_usable_for` accepts the problem runs it; the
     generic kernel accepts everything, so every valid pair has a plan.
Plans are immutable and cached on the descriptor pair.
"""
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from . import _kernels
from ._kernels import data_address
from .attrs import Attrs
from .desc import Desc, _fmt, _bytes
from .errors import ReorderError
from .tags import ABC
from .threads import resolve

# Below this many bytes moved a thread team costs more than it saves.
PARALLEL_MIN_BYTES = 1 << 18
# From this output size on, streaming (non-temporal) stores beat cached ones: measured on
# the 2-core AVX-512 machines this project runs on (1 MiB L2 per core), nchw->nChw16c and
# oihw->OIhw16i16o gain 1.1-2x from 2.4 MB of output up and are even at 3 MB.
NT_MIN_BYTES = 2 << 20


class Node(NamedTuple):
    extent: int
    ss: int          # src stride, elements
    ds: int          # dst stride, elements
    dim: int         # logical dim, or -1 when no bounds check is needed
    weight: int      # logical step along `dim`


@dataclass(frozen=True)
class Problem:
    """A normalised reorder: what the kernels see."""
    src: Desc
    dst: Desc
    nodes: tuple                 # of Node, outermost first
    checked: tuple               # of (dim, logical size, dst padded size)
    itemsize: int                # bytes per element the kernel moves (a whole run when widened)
    attrs: object = None         # conversion attributes (reorder.attrs.Attrs), or None
    qstrides: tuple = ()         # with attrs: per node (scale index stride, comp index stride)

    @property
    def moved_bytes(self):
        """src bytes read + dst bytes written (padding included on dst)."""
        logical = math.prod(self.src.dims)
        return logical * self.src.dtype.itemsize + self.dst.nelems * self.dst.dtype.itemsize


def widen(prob):
    """A short run contiguous on both sides and unpadded (a 16-float block row, an RGBA
    pixel) moves as one 16/32/64-byte element: nhwc -> nChw16c becomes a transpose of
    64-byte elements. Returns the widened problem, or None."""
    last = prob.nodes[-1]
    k = last.extent
    if prob.attrs is not None or len(prob.nodes) < 3 or last.ss != 1 or last.ds != 1 \
            or last.dim >= 0 or k * prob.itemsize not in (16, 32, 64):
        return None
    rest = prob.nodes[:-1]
    if any(nd.ss % k or nd.ds % k for nd in rest):
        return None
    nodes = tuple(nd._replace(ss=nd.ss // k, ds=nd.ds // k) for nd in rest)
    return Problem(prob.src, prob.dst, nodes, prob.checked, k * prob.itemsize)


class _Incompatible(Exception):
    """The two blockings of a dim do not nest (e.g. 48c against 32c)."""


def _dim_nodes(d, src, dst):
    n = src.dims[d]
    s_axes = [a for a in src.axes if a.dim == d]
    d_axes = [a for a in dst.axes if a.dim == d]
    blk = max(src.block_size(d), dst.block_size(d))
    if blk % src.block_size(d) or blk % dst.block_size(d):
        raise _Incompatible(d)
    full = -(-n // blk) * blk                       # iteration extent of this dim
    weights = sorted({a.weight for a in s_axes + d_axes})
    for lo, hi in zip(weights, weights[1:]):
        if hi % lo:
            raise _Incompatible(d)
    nodes = []
    for i, w in enumerate(weights):
        top = weights[i + 1] if i + 1 < len(weights) else full
        extent = top // w
        # each side: the axis holding digit weight w is the one with the largest weight <= w
        sa = max((a for a in s_axes if a.weight <= w), key=lambda a: a.weight)
        da = max((a for a in d_axes if a.weight <= w), key=lambda a: a.weight)
        nodes.append(Node(extent, sa.stride * (w // sa.weight), da.stride * (w // da.weight), d, w))
    return nodes, full


def normalise(src, dst, attrs=None):
    """(src, dst) -> Problem, or raise _Incompatible for blockings that do not nest.

    With conversion attributes, each node also gets a scale index stride and a compensation
    index stride (attrs.index_strides), and nodes fuse only where those chain too."""
    nodes, checked = [], []
    noq = ((0, 0),) if attrs is not None else ()
    if 0 in src.dims:       # nothing to move, and dst (padded dims 0 too) holds nothing
        return Problem(src, dst, (Node(0, 0, 0, -1, 1),), (), src.dtype.itemsize, attrs, noq)
    qs = attrs.index_strides(src, dst) if attrs is not None else None
    dst_pad = dst.padded_dims
    for d in range(src.ndim):
        dn, full = _dim_nodes(d, src, dst)
        padded = full > src.dims[d]
        if padded:
            checked.append((d, src.dims[d], dst_pad[d]))
        nodes += [(nd if padded else nd._replace(dim=-1), qs(d, nd.weight) if qs else (0, 0))
                  for nd in dn if nd.extent != 1]
    nodes.sort(key=lambda nq: (-abs(nq[0].ds), -abs(nq[0].ss)))
    fused = []
    for nd, (ks, cs) in nodes:
        if fused:
            prev, (pk, pc) = fused[-1]
            if (prev.ds == nd.ds * nd.extent and prev.ss == nd.ss * nd.extent
                    and pk == ks * nd.extent and pc == cs * nd.extent
                    and prev.dim == nd.dim and (nd.dim < 0 or prev.weight == nd.weight * nd.extent)):
                fused[-1] = (nd._replace(extent=prev.extent * nd.extent), (ks, cs))
                continue
        fused.append((nd, (ks, cs)))
    if not fused:
        fused = [(Node(1, 0, 0, -1, 1), (0, 0))]
    return Problem(src, dst, tuple(nd for nd, _ in fused), tuple(checked), src.dtype.itemsize,
                   attrs, tuple(q for _, q in fused) if attrs is not None else ())


# ---------------------------------------------------------------------------------------------
# kernel registry, in priority order

class Kernel:
    name = ""
    why = ""

    def is_usable_for(self, prob):
        """True if this kernel can run `prob` (a normalised Problem)."""
        raise NotImplementedError

    def prepare(self, prob):
        """The kernel's runner for this problem, built once per plan: an object with
        run(src_addr, dst_addr, nthreads)."""
        raise NotImplementedError


def _node_array(nodes):
    return np.array(nodes, dtype=np.int64).reshape(-1, 5)


def _checked_array(prob):
    return np.array(prob.checked, dtype=np.int64).reshape(-1, 3)


def _nt_stores(prob):
    """Non-temporal stores pay once the output no longer fits in cache; in cache they lose
    (measured: benchmarks/, and docs/kernels.md)."""
    return prob.dst.nelems * prob.dst.dtype.itemsize >= NT_MIN_BYTES


def _round_up(n, m):
    return -(-n // m) * m


def _walker(prob, nt):
    """Walker runner: the node before the run, when unchecked, becomes a row loop inside each
    work item; rows and long runs are sliced so a static split has >= 16 items to share."""
    nodes = list(prob.nodes)
    row = (1, 0, 0)
    last = nodes[-1]
    # For short runs, loop the node that continues the run in src (nhwc -> nChw16c: the 16
    # channel blocks of one pixel), so reads stay sequential; otherwise the node just outside.
    ir = next((i for i in range(len(nodes) - 1) if nodes[i].dim < 0
               and nodes[i].ss == last.extent), None) \
        if last.ss == 1 and last.extent * prob.itemsize <= 256 else None
    if ir is None and len(nodes) >= 3 and nodes[-2].dim < 0:
        ir = len(nodes) - 2
    if ir is not None and len(nodes) >= 2:
        rn = nodes.pop(ir)
        row = (rn.extent, rn.ss, rn.ds)
    outer = math.prod(nd.extent for nd in nodes[:-1])
    run = nodes[-1].extent
    per = -(-16 // outer) if 0 < outer < 16 else 1
    slice_, piece = row[0], max(run, 1)
    if per > 1 and row[0] > 1:
        slice_ = -(-row[0] // per)
    elif per > 1 and run * prob.itemsize >= (64 << 10):
        piece = _round_up(-(-run // per), 64 // prob.itemsize)
    rows = np.array([row[0], row[1], row[2], slice_, piece], dtype=np.int64)
    return _kernels.Walker(prob.itemsize, _node_array(nodes), _checked_array(prob), rows, nt)


class CopyKernel(Kernel):
    name = "copy"
    why = "innermost node contiguous on both sides and no padding: parallel block copies"

    def is_usable_for(self, prob):
        last = prob.nodes[-1]
        return last.ss == 1 and last.ds == 1 and not prob.checked

    def prepare(self, prob):
        # streaming pays for long runs only; short rows spread over many write streams lose
        # (nhwc -> nChw16c: 13.2 GB/s cached, 8.4 streamed, measured on 1 thread)
        long_runs = prob.nodes[-1].extent * prob.itemsize >= 1024
        return _walker(prob, _nt_stores(prob) and long_runs)


class TransposeKernel(Kernel):
    name = "transpose"
    why = ("innermost dst node A is strided in src and another node B is src-contiguous: "
           "A x B tiles moved with register transposes, padding written inside the tile")

    @staticmethod
    def _pick(prob):
        """(B, B's src continuation or None, A's dst continuation or None) as node indices,
        or None if the kernel does not apply."""
        nodes = prob.nodes
        if len(nodes) < 2:
            return None
        last = len(nodes) - 1
        a = nodes[last]
        if a.ds != 1 or a.ss == 1:
            return None
        ib = next((i for i in range(last - 1, -1, -1) if nodes[i].ss == 1), None)
        if ib is None:
            return None
        b = nodes[ib]
        if b.ds < a.extent or (b.dim >= 0 and b.dim == a.dim):
            return None
        # a node continuing B in src makes longer, full tiles (hw then i16 in OIhw16i16o)
        ic = next((i for i in range(last) if i != ib and nodes[i].ss == b.extent
                   and nodes[i].ds >= a.extent and b.dim < 0
                   and (nodes[i].dim < 0 or nodes[i].dim != a.dim)), None)
        # a short A continued in dst makes taller tiles (i4 then o16 in OIhw4i16o4i)
        checked_b = nodes[ic].dim if ic is not None and nodes[ic].dim >= 0 else b.dim
        ia = next((i for i in range(last) if i not in (ib, ic) and nodes[i].ds == a.extent
                   and (nodes[i].dim < 0 or nodes[i].dim not in (a.dim, checked_b))), None) \
            if a.extent < 16 else None
        height = a.extent * (nodes[ia].extent if ia is not None else 1)
        width = b.extent * (nodes[ic].extent if ic is not None else 1)
        if height < 4 or width < 4:
            return None
        return ib, ic, ia

    def is_usable_for(self, prob):
        return self._pick(prob) is not None

    def prepare(self, prob):
        ib, ic, ia = self._pick(prob)
        b = prob.nodes[ib]
        c = prob.nodes[ic] if ic is not None else None
        rest = [nd for i, nd in enumerate(prob.nodes) if i not in (ib, ic, ia)]
        nodes = _node_array(rest)
        n = b.extent * (c.extent if c else 1)
        step = math.lcm(16, b.extent) if c else 16      # slices keep whole inner rows
        outer = math.prod(nd.extent for nd in rest[:-1])
        # enough (outer, B-slice) work items for a static split to balance 2+ threads
        per = -(-16 // outer) if outer < 16 else 1
        slice_ = n if per == 1 else min(n, max(step, _round_up(-(-n // per), step)))
        limits = {d: (v, pad) for d, v, pad in prob.checked}
        checked_node = c if c is not None and c.dim >= 0 else b
        valid, alloc = limits.get(checked_node.dim, (0, 0))
        rows = (b.extent, b.ds, c.ds) if c else (0, b.ds, 0)
        bvec = np.array([n, checked_node.weight, valid, alloc, checked_node.dim, slice_, *rows],
                        dtype=np.int64)
        if ia is None:
            avec = np.array([0, 0, 1, 0, 0, -1], dtype=np.int64)
        else:
            ha = prob.nodes[ia]
            hv, hp = limits.get(ha.dim, (0, 0))
            avec = np.array([ha.extent, ha.ss, ha.weight, hv, hp, ha.dim], dtype=np.int64)
        return _kernels.Transpose(prob.itemsize, nodes, _checked_array(prob), avec, bvec,
                                  _nt_stores(prob))


class GenericKernel(Kernel):
    name = "generic"
    why = "strided loop nest over the normalised nodes; handles every pair"

    def is_usable_for(self, prob):
        return True

    def prepare(self, prob):
        return _walker(prob, False)


TRANSPOSE = TransposeKernel()
KERNELS = [CopyKernel(), TRANSPOSE, GenericKernel()]


# ---------------------------------------------------------------------------------------------
# plans

class Plan:
    """An immutable, cached recipe for moving data from `src` to `dst`.

    plan(x, out=None)   run it on array x (laid out as `src`); returns out or a new array
    plan.empty()        a 64-byte-aligned output array of dst's physical shape
    plan.explain()      which kernel, why, the nodes, threads and bytes moved
    """

    def __init__(self, src, dst, threads=None, attrs=None):
        self.src, self.dst, self.threads, self.attrs = src, dst, threads, attrs
        # `sum` adds beta * the old destination, which the caller must pass as out=
        self._reads_dst = attrs is not None and attrs.sum_beta is not None
        try:
            self.steps = (self._step(normalise(src, dst, attrs)),)
            self.via = None
        except _Incompatible:
            # Blockings that do not nest (48c vs 32c) go through the plain layout, where
            # each half nests trivially. A conversion happens in the second half.
            self.via = Desc(src.dims, src.dtype)
            self.steps = (self._step(normalise(src, self.via)),
                          self._step(normalise(self.via, dst, attrs)))
        # everything a call needs, computed once
        self._in_shape = src.physical_shape
        self._in_strides = tuple(s * src.dtype.itemsize for s in src.physical_strides)
        self._in_dtypes = src.dtype.numpy_dtypes
        self._out_shape = dst.physical_shape
        self._storage = dst.dtype.storage
        self._out_dtypes = dst.dtype.numpy_dtypes
        self._runners = tuple(runner for _, _, runner in self.steps)
        self.moved_bytes = sum(p.moved_bytes for p, _, _ in self.steps)
        self._small = self.moved_bytes < PARALLEL_MIN_BYTES

    @staticmethod
    def _step(prob):
        wide = widen(prob)
        if wide is not None and TRANSPOSE.is_usable_for(wide):
            prob = wide
        for k in KERNELS:
            if k.is_usable_for(prob):
                return prob, k, k.prepare(prob)
        raise AssertionError("the generic kernel accepts every problem")  # pragma: no cover

    def __setattr__(self, name, value):
        if name in self.__dict__:
            raise AttributeError("Plan is immutable")
        object.__setattr__(self, name, value)

    @property
    def kernel(self):
        return "+".join(k.name for _, k, _ in self.steps)

    def nthreads(self, threads=None):
        """Threads a call would use: 1 for small tensors (no thread team is started). An
        explicit count is validated even then."""
        if threads is None:
            threads = self.threads
            if self._small and threads is None:
                return 1
        n = resolve(threads)
        return 1 if self._small else n

    def empty(self):
        """A zero-copy-friendly output: C-contiguous, dst's physical shape, 64-byte aligned."""
        return _aligned_empty(self._out_shape, self._storage)

    def __call__(self, x, out=None, threads=None):
        x, out = self.bind(x, out)
        self.execute(x, out, self.nthreads(threads))
        return out

    def bind(self, x, out=None):
        """`x` as a view whose data pointer is src's element 0, and a checked output (a new
        one for None); raises with the reason when either does not fit. The fast tests come
        first: a repeated call passes them without building anything."""
        if not (type(x) is np.ndarray and x.shape == self._in_shape and x.dtype in self._in_dtypes
                and (x.strides == self._in_strides or x.size <= 1)):
            x = _bind_source(x, self.src)
        if out is None:
            if self._reads_dst:
                raise ReorderError(f"this plan adds {self.attrs.sum_beta} * the old destination "
                                   f"(sum); pass that destination as out=")
            out = self.empty()
        elif not (type(out) is np.ndarray and out.shape == self._out_shape and out.dtype in self._out_dtypes
                  and out.flags.c_contiguous and out.flags.writeable
                  and not np.may_share_memory(x, out)):
            check_out(out, self.dst, x)     # raises with the reason (or finds no real overlap)
        return x, out

    def execute(self, x, out, nthreads, acc=0):
        """Run the steps on a source bound to self.src and a checked output; `acc`: address
        of the int32 compensation sums the conversion step adds to (0: none)."""
        src, dst = data_address(x), data_address(out)
        last = (nthreads, acc) if acc else (nthreads,)
        if self.via is None:
            self._runners[0].run(src, dst, *last)
        else:
            tmp = _aligned_empty(self.via.physical_shape, self.via.dtype.storage)
            mid = data_address(tmp)
            self._runners[0].run(src, mid, nthreads)
            self._runners[1].run(mid, dst, *last)

    def __repr__(self):
        return (f"Plan({self.src.name} -> {self.dst.name}, {_fmt(self.src.dims)} {self.src.dtype.name}, "
                f"kernel={self.kernel}, threads={self.nthreads()}, "
                f"{_bytes(self.src.nbytes)} -> {_bytes(self.dst.nbytes)})")

    def explain(self):
        lines = [repr(self), f"  src: {self.src!r}", f"  dst: {self.dst!r}"]
        if self.via is not None:
            lines.append(f"  the blockings do not nest, so the data goes through {self.via!r}")
        for prob, kernel, _ in self.steps:
            lines.append(f"  kernel {kernel.name}: {kernel.why}")
            if prob.itemsize != prob.src.dtype.itemsize:
                lines.append(f"  runs of {prob.itemsize} B are contiguous on both sides and move "
                             f"as single elements (strides below count them)")
            if prob.attrs is not None:
                lines.append(f"  conversion: {prob.attrs.describe(prob.src, prob.dst)}")
            lines.append("  nodes, outermost first (extent, src stride, dst stride [, dim/weight]):")
            for nd in prob.nodes:
                tail = f", {ABC[nd.dim]}/{nd.weight}" if nd.dim >= 0 else ""
                lines.append(f"    {nd.extent:>8} {nd.ss:>10} {nd.ds:>10}{tail}")
            for d, n, pad in prob.checked:
                lines.append(f"  dim {ABC[d]}: {n} valid, zeros up to {pad}")
        lines.append(f"  threads: {self.nthreads()} (tensors under {_bytes(PARALLEL_MIN_BYTES)} "
                     f"run on one); bytes moved: {_bytes(self.moved_bytes)}")
        return "\n".join(lines)


@lru_cache(maxsize=512)
def cached_plan(src, dst, threads=None, attrs=None):
    """A cached Plan. `attrs` (reorder.attrs.Attrs: scales by value, zero points, sum,
    compensation) is part of the key; a change of dtype alone needs none."""
    if src.dims != dst.dims:
        raise ReorderError(f"src dims {_fmt(src.dims)} and dst dims {_fmt(dst.dims)} differ; a "
                           f"reorder keeps the logical shape")
    if attrs is None and src.dtype != dst.dtype:
        attrs = Attrs()
    if attrs is not None:
        attrs = attrs.bind(src, dst)   # validates; None when it is a plain same-type move
    if dst.has_overlap or any(a.stride < 0 for a in dst.axes if a.extent > 1):
        raise ReorderError(f"dst {dst!r} has overlapping or negative strides; a destination "
                           f"must give every element its own place")
    return Plan(src, dst, threads, attrs)


# ---------------------------------------------------------------------------------------------
# binding arrays to descriptors (shared by the front ends)

def _aligned_empty(shape, dtype, align=64):
    dtype = np.dtype(dtype)
    raw = np.empty(math.prod(shape) * dtype.itemsize + align, dtype=np.uint8)
    return np.ndarray(shape, dtype, raw, -data_address(raw) % align)


def _bind_source(x, src):
    """Check that array `x` holds descriptor `src`; return the array whose data pointer is
    src's logical element 0 (a view of x)."""
    if not isinstance(x, np.ndarray):
        raise TypeError(f"expected a numpy array, got {type(x).__name__}")
    if x.dtype not in src.dtype.numpy_dtypes:
        raise ReorderError(f"array dtype {x.dtype} does not fit descriptor dtype {src.dtype.name}")
    if x.shape == src.physical_shape:
        strides = tuple(s // x.itemsize for s in x.strides)
        if all(s == a.stride or a.extent <= 1 for s, a in zip(strides, src.axes)) and src.offset0 == 0:
            return x
    if x.ndim == 1 and x.flags.c_contiguous:
        lo = src.offset0 + sum(min(0, (a.extent - 1) * a.stride) for a in src.axes)
        hi = src.offset0 + sum(max(0, (a.extent - 1) * a.stride) for a in src.axes)
        if src.span == 0 or (lo >= 0 and hi < x.size):
            return x[src.offset0:] if src.span else x[:0]
        raise ReorderError(f"a flat buffer of {x.size} elements cannot hold {src!r}: it needs "
                           f"elements {lo}..{hi}")
    raise ReorderError(f"array of shape {_fmt(x.shape)} and strides {x.strides} does not hold "
                       f"{src!r}; expected shape {_fmt(src.physical_shape)}, or a flat buffer")


def check_out(out, dst, x=None):
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy array, got {type(out).__name__}")
    if out.dtype not in dst.dtype.numpy_dtypes:
        raise ReorderError(f"out has dtype {out.dtype}, but the result is {dst.dtype.name} "
                           f"({dst.dtype.storage})")
    if out.shape != dst.physical_shape:
        raise ReorderError(f"out has shape {_fmt(out.shape)}, but {dst.name} of "
                           f"{_fmt(dst.dims)} needs {_fmt(dst.physical_shape)}")
    if not out.flags.c_contiguous:
        raise ReorderError("out must be C-contiguous")
    if not out.flags.writeable:
        raise ReorderError("out is read-only")
    if x is not None and np.may_share_memory(x, out):
        try:
            overlap = np.shares_memory(x, out, max_work=100000)
        except np.exceptions.TooHardError:
            overlap = True          # could not prove them apart: refuse rather than risk it
        if overlap:
            raise ReorderError("out overlaps the input array; a reorder cannot run in place")


# The conversion kernel subclasses Kernel, so its module comes after this one; it is tried
# first, and takes exactly the problems that carry conversion attributes.
from .conversion import ConversionKernel  # noqa: E402

KERNELS.insert(0, ConversionKernel())
