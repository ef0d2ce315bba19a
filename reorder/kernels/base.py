"""What the planner hands a kernel: loop nodes, the normalised problem, the kernel interface,
and the size thresholds the plans decide with. It imports only `machine` (a leaf), so every
kernel adapter and the planner can share it without import cycles.
"""
import math
from dataclasses import dataclass
from typing import NamedTuple

from ..core import machine
from ..core.machine import STREAM_MIN_BYTES

# Below this many bytes moved a thread team costs more than it saves.
PARALLEL_MIN_BYTES = 1 << 18
# STREAM_MIN_BYTES: default bytes moved (source read + destination written) from which
# streaming (non-temporal) stores are used on one thread, half the last-level cache, or
# none on Intel CPUs (machine.py); a plan takes it as a parameter.
__all__ = ["PARALLEL_MIN_BYTES", "STREAM_MIN_BYTES", "Node", "Problem", "Kernel",
           "stream_threads", "far_planes", "far_plane_slice", "plane_offsets", "rows_on_one_offset",
           "slab_lanes"]

# On two threads the cached stores' line reads overlap: streaming pays from twice the
# one-thread threshold of bytes moved, or once the destination alone reaches the threshold
# (docs/kernels/index.md#constants-every-kernel-reads); more threads were not measured and keep that.
_STREAM_THREADS_MEASURED = 2
ALL_THREADS = 1 << 30


def stream_threads(moved_bytes, stream_min_bytes, dst_bytes=0):
    """The most threads at which a step moving `moved_bytes` (of which `dst_bytes` written)
    streams its stores (0: none): on one thread from stream_min_bytes moved; on more, from
    twice that, or from a destination of stream_min_bytes alone."""
    # (the destination is part of what moves: dst_bytes >= threshold implies moved_bytes is)
    if moved_bytes >= stream_min_bytes * _STREAM_THREADS_MEASURED or dst_bytes >= stream_min_bytes:
        return ALL_THREADS
    return 1 if moved_bytes >= stream_min_bytes else 0


# Tiles writing this many dst planes or more at once, each this far from the next (bytes):
# on 2 threads, those of 1- and 2-byte elements (and of f32 widened from them) measured
# faster streamed, where others measured faster cached (docs/kernels/transpose.md#tuning-constants).
FAR_PLANE_BYTES = 4096
FAR_PLANES = 64


# Tiles whose dst rows lie a multiple of this many bytes apart walk B's columns outermost,
# all of A's rows (or a position's lanes) at each, so each dst row is written whole and in
# order: row blocks (lane groups) first store one line of each of the slice's rows a pass,
# and lines that far apart streamed at 0.6 of a copy where rows 256 or 768 bytes apart read
# 1.1-1.7 (an AMD Zen 5, docs/kernels/transpose.md#tuning-constants). A column's source rows must then spread over a
# cache's sets of 64 bytes, at most COLS_FIRST_ROWS_PER_SET to a set (rows_spread).
COLS_FIRST_DST_ROW_BYTES = 512
COLS_FIRST_ROWS_PER_SET = 8


def rows_spread(offsets, sets):
    """Whether rows starting at byte `offsets` fall on `sets` cache sets of 64 bytes at most
    COLS_FIRST_ROWS_PER_SET to a set (rows 4 KiB apart crowd 1/64 of them)."""
    if len(offsets) > sets * COLS_FIRST_ROWS_PER_SET:
        return False
    per_set = [0] * sets
    for off in offsets:
        per_set[off // 64 % sets] += 1
    return max(per_set) <= COLS_FIRST_ROWS_PER_SET


def far_planes(node, itemsize):
    """Whether the columns of `node` (a tile's B) are FAR_PLANES or more dst planes, each
    FAR_PLANE_BYTES or more from the next (nhwc -> nchw: the channels)."""
    return node.extent >= FAR_PLANES and node.ds * itemsize >= FAR_PLANE_BYTES


# Far planes a tile writes at a time with cached stores: as many as take FAR_SLICE_BYTES of
# the output's element size, at most FAR_SLICE_PLANES (f32 32, narrower 64). On an Intel Xeon
# (8x256x56x56 nhwc -> nchw, 1 thread) the f32 move read 1.3 times a 16-plane slice's speed,
# the widening conversions 2-3 times B whole's (docs/kernels/transpose.md#tuning-constants).
FAR_SLICE_BYTES = 128
FAR_SLICE_PLANES = 64
# Widening tiles into f32 whose far planes all start at this few 4 KiB offsets or fewer
# (64x64 or 96x96 pixels of f32: one) take 16 planes a slice: their stores crowd a few
# cache sets, and on an AMD Zen 5 16 planes read 2.3-2.4 times B whole's speed, 1.4-1.6
# times 32's (docs/kernels/transpose.md#tuning-constants).
ALIASED_PLANE_OFFSETS = 2
# ... and from this many offsets up they slice only where machine.TileRules says so (at 4,
# 48x48 or 112x112 pixels, 32 planes read 1.1-2 times B whole's speed on the Zen 5; at 8,
# level).
UNALIASED_PLANE_OFFSETS = 8


def plane_offsets(node, itemsize):
    """How many 4 KiB offsets the starts of `node`'s dst planes fall on (1: every plane's
    start at the same one, a multiple of 4 KiB apart)."""
    return 4096 // math.gcd(node.ds * itemsize, 4096)


def rows_on_one_offset(node, itemsize):
    """Whether `node`'s dst rows (a tile's B) lie a multiple of 4 KiB apart, FAR_PLANE_BYTES
    or more: every row's start on the same 4 KiB offset, so a tile's stores into them all go
    to one cache set (docs/kernels/transpose.md#tuning-constants)."""
    return node.ds * itemsize >= FAR_PLANE_BYTES and plane_offsets(node, itemsize) == 1


def far_plane_slice(node, itemsize, dst_itemsize=None, slice_widening_planes=None):
    """The columns of `node` (a tile's B) a position takes at a time with cached stores
    where they are far planes (far_planes) in the wider of the two element sizes, a multiple
    of 16; 0 when they are not, or when B stays whole. `dst_itemsize`: the output's, when it
    differs. Widening into f32: 16 planes where they start at few 4 KiB offsets
    (ALIASED_PLANE_OFFSETS), B whole from UNALIASED_PLANE_OFFSETS up unless
    `slice_widening_planes` (default: machine.TILE_RULES)."""
    dsize = itemsize if dst_itemsize is None else dst_itemsize
    if not far_planes(node, max(itemsize, dsize)):
        return 0
    if dsize == 4 and itemsize < 4:
        offsets = plane_offsets(node, dsize)
        if offsets <= ALIASED_PLANE_OFFSETS:
            return 16
        if slice_widening_planes is None:
            slice_widening_planes = machine.TILE_RULES.slice_widening_planes
        if offsets >= UNALIASED_PLANE_OFFSETS and not slice_widening_planes:
            return 0
    return max(16, min(FAR_SLICE_PLANES, FAR_SLICE_BYTES // dsize) // 16 * 16)


class Node(NamedTuple):
    extent: int
    ss: int          # src stride, elements
    ds: int          # dst stride, elements
    dim: int         # logical dim, or -1 when no bounds check is needed
    weight: int      # logical step along `dim`


@dataclass(frozen=True)
class Problem:
    """A normalised reorder: what the kernels see."""
    src: object                  # the source Desc
    dst: object                  # the destination Desc
    nodes: tuple                 # of Node, outermost first
    checked: tuple               # of (dim, logical size, dst padded size)
    itemsize: int                # bytes per element the kernel moves
    attrs: object = None         # conversion attributes (reorder.core.attrs.Attrs), or None
    qstrides: tuple = ()         # with attrs: per node (scale index stride, comp index stride)

    @property
    def moved_bytes(self):
        """src bytes read + dst bytes written (padding included on dst)."""
        logical = math.prod(self.src.dims)
        return logical * self.src.dtype.itemsize + self.dst.nelems * self.dst.dtype.itemsize

    @property
    def dst_bytes(self):
        return self.dst.nelems * self.dst.dtype.itemsize

    def streams(self, stream_min_bytes):
        """Whether the destination is stored past the caches on one thread: when source and
        destination together reach the threshold, so that cached stores would evict lines
        of their own (docs/performance.md#the-streaming-threshold). The runner's choice; a call on more threads may
        turn it off (stream_threads)."""
        return stream_threads(self.moved_bytes, stream_min_bytes) >= 1


def slab_lanes(prob):
    """L when a walk may move a padded block's rows whole, padding lanes included, and zero
    those lanes after (nChw16c -> nChw16c at C=19: the last block's 3 channels and 13
    zeros): the innermost node is the block's L lanes and the next its rows, dense on both
    sides, with no scale or comp index along them, and both sides hold every lane the walk
    reaches; else 0."""
    if len(prob.nodes) < 2:
        return 0
    row, lane = prob.nodes[-2:]
    if not (lane.ss == lane.ds == 1 and lane.dim >= 0 and row.ss == row.ds == lane.extent
            and row.dim < 0 and prob.qstrides[-2:] in ((), ((0, 0), (0, 0)))):
        return 0
    d = lane.dim
    full = max(nd.extent * nd.weight for nd in prob.nodes if nd.dim == d)
    if prob.src.padded_dims[d] < full or prob.dst.padded_dims[d] < full:
        return 0
    return lane.extent


class Kernel:
    """A kernel adapter: decides whether its Cython runner fits a problem and builds it."""
    name = ""
    why = ""

    def is_usable_for(self, prob, stream_min_bytes=None):
        """True if this kernel can run `prob` (a normalised Problem), and should under the
        plan's threshold for streaming stores (None: the default, machine.STREAM_MIN_BYTES)."""
        raise NotImplementedError

    def prepare(self, prob, stream_min_bytes):
        """The kernel's runner for this problem, built once per plan: an object with
        run(src_addr, dst_addr, nthreads) and `nt` (whether it streams its stores).
        `stream_min_bytes`: the plan's threshold for streaming stores."""
        raise NotImplementedError

    def stream_threads(self, prob, runner, stream_min_bytes):
        """The most threads on which `runner` (from prepare) streams its stores, where it
        streams at all (runner.nt): by the bytes moved (stream_threads). A kernel whose
        stores measured otherwise on more threads says so here."""
        return stream_threads(prob.moved_bytes, stream_min_bytes, prob.dst_bytes)

    def explain(self, prob, runner, stream_min_bytes):
        """Lines for Plan.explain() on what `runner` (from prepare) does with `prob` beyond
        the kernel's `why`: its slices, its scratch, its SIMD path. None by default."""
        return []


# explain()'s words for a tile slice of far dst planes (far_plane_slice)
FAR_SLICE_WORDS = (f"far dst planes, {FAR_SLICE_BYTES} bytes over the output's element size, "
                   f"at most {FAR_SLICE_PLANES}; 16 where f32 planes widened into start at few "
                   f"4 KiB offsets)")
