"""The conversion kernel adapter: how a reorder with a type conversion, scales, zero
points, sum or compensation is cut for the runners of `csrc/convert/convert.pyx` (the int8 `4i16o4i`
weight kernel, 16-lane tiles with register transposes, or a strided walk). The planner
lists it ahead of the move kernels.
"""
import dataclasses
import math

import numpy as np

from .. import _convert
from ..core.attrs import scale_array, sum_factor, zero_point
from ..core.desc import _bytes
from .move import TILE_DST_BYTES
from .base import (FAR_SLICE_WORDS, UNALIASED_PLANE_OFFSETS, COLS_FIRST_DST_ROW_BYTES,
                   FAR_PLANE_BYTES, Kernel, Node, far_plane_slice,
                      far_planes, rows_on_one_offset, rows_spread, slab_lanes)

__all__ = ["ConversionKernel", "arith_for", "call_values", "tile_b_slice",
           "widened_columns_cached"]

CODES = _convert.CODES

# A grid's rows this far apart in dst (bytes) or nearer may take streaming stores; threads
# split the rows of a grid whose rows are this long or shorter across its columns.
GRID_STREAM_ROW_BYTES = 4096

# The tile path takes at most this many destination-contiguous lanes per outer position.
TILE_MAX_LANES = 4096

# Far planes that would stay whole (problem.far_plane_slice) are sliced all the same where a
# tile has fewer outer positions than this: B's slices are then the work the threads share
# (1x256x56x56 nhwc -> nchw widened into f32, 2 threads, an AMD Zen 5: B whole, one thread
# doing it all, read 0.67-0.88 of the slices' speed).
TILE_SHARED_POSITIONS = 4

# Tiles into dst planes a multiple of 4 KiB apart build this many lanes of them at a time in
# a scratch, at most TILE_COPY_SCRATCH_BYTES of it, and copy each plane's part out
# (_copy_lanes). On an AMD Zen 5 256 were best: 1.15-1.19 times 512's speed widening into
# f32, 1.28-1.35 times 128's narrowing into 16 bits (docs/kernels/conversion.md#tuning-constants).
TILE_COPY_LANES = 256
TILE_COPY_SCRATCH_BYTES = 64 << 10

# 1-byte outputs convert four lane groups at a time (each column's 64 bytes stored whole)
# where a lane's source run along B is this long or shorter: longer runs would be read as 64
# far-apart streams at once, and pairs of groups (32 bytes) measured slower than one. 16-bit
# outputs pair two groups at any length, 32 streams measuring faster than half lines
# (docs/kernels/conversion.md#tuning-constants).
TILE_WIDE_ROW_BYTES = 4096

# f32 columns widened in a tile: from 1-byte sources they stream only where they lie far
# apart in dst (problem.FAR_PLANE_BYTES: nChw16c -> nchw, nhwc -> nchw); nearer
# (nchw -> nChw16c, nchw -> nhwc) they measured slower streamed. From 1- and 2-byte sources
# they stream on more than one thread only where a lane group writes many such far planes
# (problem.far_planes: nhwc -> nchw); elsewhere 2 threads measured faster cached
# (docs/kernels/conversion.md#streaming).


def widened_columns_cached(prob, runner):
    """Whether `runner` is a tile writing f32 columns widened from a narrower type that
    keeps its stores cached on more than one thread: all but those writing far planes
    (problem.far_planes). On 2 threads they measured slower streamed than cached
    (bf16 -> f32 nchw -> nChw16c 8x256x56x56: 0.97 of a copy against 1.34-1.45), on 1
    faster (0.97 against 0.71)."""
    if type(runner) is _convert.ConvertTile and prob.dst.dtype.name == "f32" \
            and prob.src.dtype.itemsize < 4:
        b = next(nd for nd in prob.nodes if nd.ss == 1 and nd.extent > 1)
        return not far_planes(b, 4)
    return False


def _tile_cols_first(prob, b, soff):
    """Whether a tile's widening chunks (rq_singles: whole positions of 16-bit and 1-byte
    sources to f32, scaled 1-byte ones to 16-bit outputs; AVX-512) walk B's columns first:
    dst rows a multiple of problem.COLS_FIRST_DST_ROW_BYTES apart, the lanes' source rows
    spread over an L2's sets. bf16 -> f32 `nchw -> nhwc` 8x256x56x56 read 0.47 -> 1.39 of a
    copy on one thread (streamed), 1.15 -> 1.54 on two (cached); u8 -> f32 0.61 -> 0.80 /
    1.01 -> 1.43 (cached); at C = 64 and 192 (rows 256 and 768 bytes apart) 0.64-0.82x. The
    pairs of 16-bit outputs (f32 -> bf16) read 0.64-2.3x so, and keep their order
    (docs/kernels/conversion.md#choices-in-the-code)."""
    ssize, dsize = prob.src.dtype.itemsize, prob.dst.dtype.itemsize
    return ssize < dsize and b.ds * dsize % COLS_FIRST_DST_ROW_BYTES == 0 \
        and _convert.simd_available() and rows_spread([int(o) * ssize for o in soff], 1024)


def _split_node(nodes, qstrides):
    """The node threads split when compensation is accumulated: one that carries a comp
    index (the longest; the outermost among equals), so every sum stays in one thread."""
    best = -1
    for i, (nd, (_, cs)) in enumerate(zip(nodes, qstrides)):
        if cs != 0 and nd.extent > 1 and (best < 0 or nd.extent > nodes[best].extent):
            best = i
    return best


def part_group_bytes_fit(lanes, b):
    """Whether 1-byte outputs of `lanes` lanes that are not whole groups of 16 take the tile
    over B `b` (else they convert on the source's layout and move): where a position's groups
    go four at a time, all of them (4, 8, ... groups, the last overlapping: 49 lanes of a 7x7
    plane) or the first ones (64 lanes or more), or with 32 lanes or more read over more than
    one chunk of B. Others take one group at a time, which measured slower than the two
    passes where a position is one chunk or the last group repeats most of its lanes
    (nchw -> nhwc at C=19) (docs/kernels/conversion.md#tuning-constants)."""
    return lanes >= 64 or -(-lanes // 16) % 4 == 0 or (lanes >= 32 and b.extent > 16)


def _tile_layout(prob):
    """How the tile kernel would cut `prob`, or None when it does not fit.

    Lanes: the innermost nodes that are dense in dst (strides 1, e1, e1*e2, ...) and not B,
    at least 16 of them (`c16` of nChw16c; `4i16o4i` of OIhw4i16o4i; the 49 pixels of a 7x7
    plane). Lanes that are not whole groups of 16 end in a group that overlaps the one before
    (see _lane_tables), which writes the shared lanes twice: not with a sum with dst or
    compensation sums, nor for 1-byte outputs that part_group_bytes_fit turns away. B: the
    node that is contiguous in src (`hw`); scales and compensation must not vary along it.
    The rest are outer nodes, walked as usual."""
    nodes, qs = list(prob.nodes), list(prob.qstrides)
    if len(nodes) < 2:
        return None
    ib = [i for i, nd in enumerate(nodes) if nd.ss == 1 and nd.extent > 1]
    if len(ib) != 1 or qs[ib[0]] != (0, 0):
        return None
    ib = ib[0]
    lanes, k = 1, len(nodes) - 1
    chain = []
    while k >= 0 and k != ib and nodes[k].ds == lanes and lanes < 256:
        if lanes % 16 == 0 and lanes * nodes[k].extent > TILE_MAX_LANES:
            break
        chain.append(k)
        lanes *= nodes[k].extent
        k -= 1
    if not chain or lanes < 16 or lanes > TILE_MAX_LANES or k < 0:
        return None
    b = nodes[ib]
    if b.ds < lanes:
        return None
    if lanes % 16 and (prob.attrs.comp or prob.attrs.sum_beta is not None
                       or prob.dst.dtype.itemsize == 1 and not part_group_bytes_fit(lanes, b)):
        return None
    blk_dims = {nodes[i].dim for i in chain if nodes[i].dim >= 0}
    if b.dim >= 0 and b.dim in blk_dims:
        return None
    alloc = {d: pad for d, _, pad in prob.checked}
    for d in blk_dims:          # lanes must never lie beyond dst's allocation
        if max(nd.extent * nd.weight for nd in nodes if nd.dim == d) > alloc[d]:
            return None
    outer = [i for i in range(len(nodes)) if i != ib and i not in chain]
    return chain, ib, outer, sorted(blk_dims)


def _split_lanes(prob):
    """`prob` with its innermost destination node, when it is longer than TILE_MAX_LANES,
    split into blocks of the longest multiple of 16 lanes that divides it (nChw16c -> nchw
    at 112x112: 12544 pixels -> 4 x 3136), so the tile path can take it; else None."""
    last = prob.nodes[-1]
    if last.ds != 1 or last.ss == 1 or last.extent <= TILE_MAX_LANES:
        return None
    n = next((n for n in range(TILE_MAX_LANES // 16 * 16, 15, -16) if last.extent % n == 0), None)
    if n is None:
        return None
    k = last.extent // n
    outer = Node(k, last.ss * n, last.ds * n, last.dim, last.weight * n)
    inner = Node(n, last.ss, last.ds, last.dim, last.weight)
    sq, cq = prob.qstrides[-1]
    return dataclasses.replace(prob, nodes=prob.nodes[:-1] + (outer, inner),
                               qstrides=prob.qstrides[:-1] + ((sq * n, cq * n), (sq, cq)))


def _w4i16o4i_layout(prob, layout):
    """int8 weights whose lanes are `4i16o4i` over a src row [i16][S] per o (plain oihw-like
    sources): (outer nodes, their scale/comp strides, the kernel's parameters), or None.

    With S > 1 the tile layout holds it: lanes (i%4, o, i/4) and B = the S spatial points.
    With S = 1 (1x1 convolutions, matmul weights `OI4i16o4i`) nothing is left to be B, and
    the i/4 node has fused with the I blocks (both strides chain); it is split back."""
    a = prob.attrs
    if prob.dst.dtype.name not in ("s8", "u8") or a.src_zp is not None \
            or a.dst_zp is not None or a.sum_beta is not None:
        return None
    nodes, qs = list(prob.nodes), list(prob.qstrides)
    if layout is not None:
        chain, ib, outer, _ = layout
        b = nodes[ib]
        if len(chain) != 3 or not (b.ss == 1 and b.ds == 256 and b.dim < 0):
            return None
        S = b.extent
        onodes, oq = [nodes[i] for i in outer], [qs[i] for i in outer]
    else:
        if len(nodes) < 3 or nodes[-3].extent % 4 or nodes[-3].ds != 64:
            return None
        chain, S, n2 = [len(nodes) - 1, len(nodes) - 2, len(nodes) - 3], 1, nodes[-3]
        iblocks = Node(n2.extent // 4, n2.ss * 4, n2.ds * 4, n2.dim, n2.weight * 4)
        nodes[-3] = Node(4, n2.ss, n2.ds, n2.dim, n2.weight)
        onodes, oq = nodes[:-3] + [iblocks], qs[:-3] + [qs[-3]]
    (n0, q0), (n1, q1), (n2, q2) = ((nodes[i], qs[i]) for i in chain)
    if not ((n0.extent, n0.ds, n1.extent, n1.ds, n2.extent, n2.ds) == (4, 1, 16, 4, 4, 64)
            and 1 <= S <= 12 and n0.ss == S and n2.ss == 4 * S and q0 == (0, 0) and q2 == (0, 0)
            and n0.dim == n2.dim and (n0.dim < 0 or (n0.weight, n2.weight) == (1, 4))):
        return None
    return onodes, oq, (S, n1.ss, n1.weight, q1[0], q1[1], n1.dim, n0.dim)


def _tile_cut(prob):
    """(prob, layout) as the tile kernel takes it: `prob` itself or with its innermost node
    split (_split_lanes), and _tile_layout's cut of it; layout None when neither fits."""
    layout = _tile_layout(prob)
    split = None if layout is not None else _split_lanes(prob)
    split_layout = None if split is None else _tile_layout(split)
    return (split, split_layout) if split_layout is not None else (prob, layout)


def _tile_streams(prob, b, stream_min_bytes):
    """Whether the tiles stream whole 64-byte lines: of f32 columns, of 16-bit ones two
    groups wide and 1-byte ones four groups wide or on contiguous columns (AVX-512), of any
    output whose lines the tile completes (AVX2, see csrc/convert/simd_avx2.c); f32 widened from
    bytes only into far planes."""
    nt = prob.streams(stream_min_bytes)
    if prob.src.dtype.itemsize == 1 and prob.dst.dtype.itemsize == 4:
        nt = nt and b.ds * 4 >= FAR_PLANE_BYTES
    return nt


def tile_b_slice(prob, stream_min_bytes):
    """(the columns of B a tile position takes at a time where the plan slices B, else 0;
    whether they are far dst planes; whether they stay whole by machine.TileRules alone), as
    _cached_b_slice: for explain() and the tests."""
    prob, layout = _tile_cut(prob)
    if layout is None or _w4i16o4i_layout(prob, layout) is not None:
        return 0, False, False
    b = prob.nodes[layout[1]]
    if _tile_streams(prob, b, stream_min_bytes):
        return 0, False, False
    ssize, dsize = prob.src.dtype.itemsize, prob.dst.dtype.itemsize
    positions = math.prod(prob.nodes[i].extent for i in layout[2])
    n = _cached_b_slice(b, ssize, dsize, positions)
    far = far_planes(b, max(ssize, dsize))
    by_rule = far and not n and b.dim < 0 and positions >= TILE_SHARED_POSITIONS \
        and not far_plane_slice(b, ssize, dsize) and far_plane_slice(b, ssize, dsize, True)
    return n, far, by_rule


def _cached_b_slice(b, ssize, dsize, positions):
    """For a tile whose stores stay cached, the columns of B a position takes at a time, a
    multiple of 16 that divides B, or 0 for B whole (no such slice, or no need):
    * B far dst planes (nhwc -> nchw: the channels, a plane each): problem.far_plane_slice.
      With B whole a lane group wrote every plane at once; measured on an Intel Xeon, the
      widening conversions read 2-3 times as fast in slices; on an AMD Zen 5 only where the
      planes start at few 4 KiB offsets (docs/kernels/conversion.md#tuning-constants), or where fewer than
      TILE_SHARED_POSITIONS outer positions leave the slices as the threads' work.
    * B far dst rows (nchw -> nhwc: the pixels, a row of every channel each): rows that fit
      in TILE_DST_BYTES, when B's do not. A position walks its lane groups one after the
      other over all of B: with B whole, the first group's lines left L2 before the next
      came to fill them (docs/int8.md); the moves' tiles slice B for the same reason."""
    if b.dim >= 0:
        return 0
    row = b.ds * dsize
    if far_planes(b, max(ssize, dsize)):
        most = far_plane_slice(b, ssize, dsize,
                               True if positions < TILE_SHARED_POSITIONS else None)
        if b.extent <= most:
            return 0
    elif row < 64 or b.extent * row <= TILE_DST_BYTES:
        return 0
    else:
        most = TILE_DST_BYTES // row
    return max((n for n in range(16, min(b.extent - 1, most) + 1, 16) if b.extent % n == 0),
               default=0)


def _copy_lanes(prob, b, nt, groups):
    """The lanes (TILE_COPY_LANES, fewer where B's rows are many) a position builds at a time
    in a scratch before each of B's rows gets its part, where B's rows are dst planes a
    multiple of 4 KiB apart (problem.rows_on_one_offset; nhwc -> nchw at 32x32 or 64x64
    pixels of f32): written directly, a lane group's stores went to as many lines of one
    cache set as B has planes (docs/kernels/conversion.md#tuning-constants). Else 0; never with a sum with dst, which
    reads it, nor into bytes, whose four lane groups a store measured slower so (0.87-0.94
    on an AMD Zen 5)."""
    dsize = prob.dst.dtype.itemsize
    if nt or dsize < 2 or prob.attrs.sum_beta is not None or not rows_on_one_offset(b, dsize):
        return 0
    step = 16 * groups
    lanes = min(TILE_COPY_LANES, TILE_COPY_SCRATCH_BYTES // (b.extent * dsize))
    return max(step, lanes // step * step)


def _outer_rows(onodes, oq):
    """The runners' node array: outer nodes, then a dummy node for the per-position work."""
    rows = [tuple(nd) + tuple(q) for nd, q in zip(onodes, oq)] + [(1, 0, 0, -1, 1, 0, 0)]
    return np.array(rows, dtype=np.int64).reshape(-1, 7)


def _lane_tables(prob, chain, blk_dims):
    """Per-lane src offset, scale index, comp index and checked-dim coordinates, in dst
    order (lane j = sum of digit * dst stride over the chain), and the lane count L. The
    tables are whole groups of 16: when the L lanes are not, the last group holds lanes
    L-16 .. L-1 (overlapping the group before rather than running past the last lane into
    what follows it in dst)."""
    n = math.prod(prob.nodes[i].extent for i in chain)
    j = np.arange(n, dtype=np.int64)
    if n % 16:
        j = np.concatenate([j[:n // 16 * 16], j[n - 16:]])
    soff, koff, coff = (np.zeros(j.size, np.int64) for _ in range(3))
    acoord = np.zeros((len(blk_dims), j.size), np.int64)
    for i in chain:
        nd, (ks, cs) = prob.nodes[i], prob.qstrides[i]
        digit = (j // nd.ds) % nd.extent
        soff += digit * nd.ss
        koff += digit * ks
        coff += digit * cs
        if nd.dim >= 0:
            acoord[blk_dims.index(nd.dim)] += digit * nd.weight
    return soff, koff, coff, acoord, n


def _arith(a, sscale, dscale, src_zp, dst_zp, beta):
    return _convert.Arith(
        src_scales=sscale, src_scale_masked=bool(a.src_mask),
        # f32 reciprocal, like oneDNN's jit
        dst_inv_scales=None if dscale is None else np.float32(1) / dscale,
        dst_scale_masked=bool(a.dst_mask),
        src_zp=None if src_zp is None else float(src_zp),
        dst_zp=None if dst_zp is None else float(dst_zp),
        beta=None if beta is None else float(beta), adj=float(a.scale_adjust))


def arith_for(a):
    """The kernels' arithmetic (an _convert.Arith) for the values held in Attrs `a`."""
    return _arith(a, a.src_scale_values(), a.dst_scale_values(), a.src_zp, a.dst_zp, a.sum_beta)


def call_values(a, like, src_scales, dst_scales, src_zero_point, dst_zero_point, sum_beta):
    """The arithmetic for one call's values, under the structure of Attrs `a` (the plan's,
    whose arithmetic is `like`): the same operations and value counts, checked here; the
    types as make_attrs checks them."""
    sscale = dscale = None
    for side, v, have in (("src", src_scales, a.src_scales), ("dst", dst_scales, a.dst_scales)):
        if (v is None) != (have is None):
            raise ValueError(f"{side}_scales: the call and the plan disagree on their presence")
        if v is not None:
            if type(v) is float:
                if len(have) != 4:
                    raise ValueError(f"{side}_scales: 1 value, the plan has {len(have) // 4}")
                arr = v
            else:
                arr = scale_array(v, f"{side}_scales")[0]
                if arr.size * 4 != len(have):
                    raise ValueError(f"{side}_scales: {arr.size} values, the plan has "
                                     f"{len(have) // 4}")
            if side == "src":
                sscale = arr
            else:
                dscale = arr
    szp, dzp = src_zero_point, dst_zero_point
    if szp is not None and not (type(szp) is int and -2**31 <= szp < 2**31):
        szp = zero_point(szp, "src_zero_point")
    if dzp is not None and not (type(dzp) is int and -2**31 <= dzp < 2**31):
        dzp = zero_point(dzp, "dst_zero_point")
    beta = None if sum_beta is None else sum_factor(sum_beta)
    if (szp is None, dzp is None, beta is None) != (a.src_zp is None, a.dst_zp is None,
                                                   a.sum_beta is None):
        raise ValueError("zero points / sum: the call and the plan disagree on their presence")
    return like.with_values(sscale, dscale, szp, dzp, beta)


def grid_kind(prob):
    """How the conversion walk takes its innermost node as grids (Convert.grid): 0 not at
    all; 1 that node's rows in one call, when it is a multiple of 16 lanes contiguous on
    both sides and all data (a block's channels), or a padded block of 16 lanes whose rows
    are dense on both sides (nChw16c -> nChw16c at C=19, where the grid converts under the
    data lanes' mask in one pass: measured faster than the slab's two; nhwc -> nChw16c at
    C=19, whose rows are not dense, measured slower as a grid than moved and converted in
    two steps), its scale index steps 0 or 1 along them (1 if the rows step it too) and
    nothing carries a comp index; 2 also
    whole steps of the node before the rows (the pixels), when that node is unchecked and
    carries no scale index. Compensation keeps the per-run walk, and so does a CPU without
    AVX-512, which has no grid code."""
    if len(prob.nodes) < 2 or prob.attrs.comp or not _convert.simd_available():
        return 0
    lane, (lk, lc), (rk, rc) = prob.nodes[-1], prob.qstrides[-1], prob.qstrides[-2]
    if not (lane.ss == lane.ds == 1 and lane.extent >= 16 and lane.extent % 16 == 0
            and (lane.dim < 0 or slab_lanes(prob) == 16)
            and lk in (0, 1) and lc == rc == 0 and (rk == 0 or lk == 1)):
        return 0
    # a padded block's lanes go through the slab's masked rows, which take grid 1 only
    if lane.dim < 0 and len(prob.nodes) >= 3 and prob.nodes[-3].dim < 0 \
            and prob.qstrides[-3] == (0, 0):
        return 2
    return 1


def grid_order(prob):
    """prob with the grid's rows taken along the source: the node on which the source runs
    on from the lanes (nhwc -> nChw16c: the blocks of one pixel) goes next to them, so that
    a grid reads its source in order."""
    L = prob.nodes[-1].extent
    for i in range(len(prob.nodes) - 2, -1, -1):
        if prob.nodes[i].ss == L:
            break
    else:
        return prob
    order = [k for k in range(len(prob.nodes) - 1) if k != i] + [i, len(prob.nodes) - 1]
    return dataclasses.replace(prob, nodes=tuple(prob.nodes[k] for k in order),
                               qstrides=tuple(prob.qstrides[k] for k in order))


def grid_walk(prob, stream_min_bytes):
    """(prob in the order its grids walk it, grid kind, nt) for a conversion on the element
    walk: grids where the normalised order and the source's both take them. The rows go
    along the source (grid_order) where the grid streams, which needs them, or where they
    are no more than the other order's. Where the source's order would make thousands of
    rows of a few blocks (nChw16c -> nhwc: 3136 pixels a block) and the stores stay cached,
    the blocks are the rows: each column (a pixel) then writes its whole dst row and reads
    one line from each block's plane, a few streams the prefetchers follow, where the
    pixels as rows wrote 64 bytes every 1 KiB (measured on an Intel Xeon: 0.16-0.61 of a
    copy against 0.88-1.03; docs/int8.md)."""
    dsize = prob.dst.dtype.itemsize

    def streams(walk, grid):
        # a contiguous run streams 1-, 2- and 4-byte outputs when they are large, unless
        # they are wider than the input: those stay cached (docs/performance.md#the-streaming-threshold); a grid
        # streams only where its rows lie near each other in dst (nChw16c -> nhwc: the
        # pixels); rows in far planes (nhwc -> nChw16c: one per block) fill their lines
        # over consecutive pixels in cache instead
        nt = dsize in (1, 2, 4) and dsize <= prob.src.dtype.itemsize \
            and walk.streams(stream_min_bytes)
        return nt and not (grid == 2 and walk.nodes[-2].ds * dsize > GRID_STREAM_ROW_BYTES)

    kind = grid_kind(prob)
    ordered = grid_order(prob) if kind else prob
    grid = grid_kind(ordered) if kind else 0
    if not grid:
        return prob, 0, streams(prob, 0)
    nt = streams(ordered, grid)
    if not nt and grid == 2 and kind == 2 and ordered.nodes[:-3] == prob.nodes[:-3] \
            and prob.nodes[-2].extent < ordered.nodes[-2].extent and not streams(prob, 2):
        return prob, 2, False
    return ordered, grid, nt


class ConversionKernel(Kernel):
    name = "convert"
    why = ("type conversion, scales, zero points, sum and compensation fused into one pass "
           "(f32 arithmetic per element): the int8 `4i16o4i` weight kernel, 16-lane tiles "
           "with AVX-512 or AVX2 register transposes, or a strided walk whose contiguous "
           "runs convert in SIMD rows, whichever fits (docs/int8.md)")

    def is_usable_for(self, prob, stream_min_bytes=None):
        return prob.attrs is not None

    def stream_threads(self, prob, runner, stream_min_bytes):
        upto = super().stream_threads(prob, runner, stream_min_bytes)
        return min(upto, 1) if widened_columns_cached(prob, runner) else upto

    def explain(self, prob, runner, stream_min_bytes):
        lines = []
        if getattr(runner, "grid", 0):
            walk = runner.walked[-1 - runner.grid:]     # (extent, ss, ds) each
            side = ("the node the source runs on along" if walk[-2][1] == walk[-1][0]
                    else "the node the destination runs on along, few beside the columns")
            lines.append(f"grids: {' x '.join(str(nd[0]) for nd in walk)} "
                         f"({'columns, ' if runner.grid == 2 else ''}rows, lanes) to a SIMD "
                         f"call; the rows are {side}")
        if type(runner).__name__ != "ConvertTile":
            return lines
        b_slice, far, whole = tile_b_slice(prob, stream_min_bytes)
        if b_slice:
            lines.append(f"tiles: B in slices of {b_slice} a position (cached stores: "
                         + (FAR_SLICE_WORDS if far else f"dst rows <= {_bytes(TILE_DST_BYTES)})"))
        elif whole:
            lines.append(f"tiles: B whole a position (cached stores: far dst planes widened into "
                         f"f32 that start at {UNALIASED_PLANE_OFFSETS} or more 4 KiB offsets, "
                         f"which machine.TILE_RULES does not slice on this CPU)")
        if runner.cols_first:
            lines.append("tiles: the widening chunks walk B's columns first, every lane group at "
                         "each: each dst row written whole, in order")
        if getattr(runner, "copy_lanes", 0):
            lines.append(f"tiles: a position's dst rows, a multiple of 4 KiB apart, are built "
                         f"{runner.copy_lanes} lanes at a time in a scratch and copied out a "
                         f"row at a time")
        return lines

    def prepare(self, prob, stream_min_bytes):
        arith = arith_for(prob.attrs)
        codes = (CODES[prob.src.dtype.name], CODES[prob.dst.dtype.name])
        checked = np.array(prob.checked, dtype=np.int64).reshape(-1, 3)
        empty = not (prob.nodes and prob.nodes[0].extent)
        prob, layout = (prob, None) if empty else _tile_cut(prob)
        w = None if empty else _w4i16o4i_layout(prob, layout)
        if w is not None:
            onodes, oq, params = w
            return _convert.ConvertW4i16o4i(*codes, _outer_rows(onodes, oq), checked, arith,
                                            _split_node(onodes, oq),
                                            np.array(params, dtype=np.int64))
        if layout is None:
            prob, grid, nt = grid_walk(prob, stream_min_bytes)
            rows = [tuple(nd) + tuple(q) for nd, q in zip(prob.nodes, prob.qstrides)]
            nodes = np.array(rows, dtype=np.int64).reshape(-1, 7)
            dsize = prob.dst.dtype.itemsize
            # threads that split a grid's columns would share every row's dst lines when the
            # columns lie inside the rows' lines and a row is short (nChw16c -> nhwc at C=64
            # with the pixels as rows: 64 bytes a pixel); they split the rows
            cols = prob.nodes[-3] if grid == 2 else None
            gsplit = len(prob.nodes) - 2 if grid == 2 and cols.ds < prob.nodes[-2].ds and \
                cols.extent * cols.ds * dsize <= GRID_STREAM_ROW_BYTES else -1
            return _convert.Convert(*codes, nodes, checked, arith,
                                    _split_node(prob.nodes, prob.qstrides), nt,
                                    slab_lanes(prob), grid, gsplit)
        chain, ib, outer, blk_dims = layout
        onodes = [prob.nodes[i] for i in outer]
        oq = [prob.qstrides[i] for i in outer]
        soff, koff, coff, acoord, nlanes = _lane_tables(prob, chain, blk_dims)
        b = prob.nodes[ib]
        nt = _tile_streams(prob, b, stream_min_bytes)
        dsize = prob.dst.dtype.itemsize
        b_in = 0 if nt else _cached_b_slice(b, prob.src.dtype.itemsize, dsize,
                                            math.prod(nd.extent for nd in onodes))
        if b_in:
            # an outer node of B's slices, innermost: a position's lane groups walk one
            # slice's dst rows or planes at a time
            onodes.append(Node(b.extent // b_in, b_in * b.ss, b_in * b.ds, -1, 1))
            oq.append((0, 0))
            b = b._replace(extent=b_in)
        nodes = _outer_rows(onodes, oq)
        bvec = np.array([b.extent, b.ds, b.weight, b.dim], dtype=np.int64)
        groups = 2 if dsize == 2 else 4 if dsize == 1 and \
            b.extent * prob.src.dtype.itemsize <= TILE_WIDE_ROW_BYTES else 1
        return _convert.ConvertTile(*codes, nodes, checked, arith, _split_node(onodes, oq),
                                    soff, koff, coff, acoord, np.array(blk_dims, dtype=np.int64),
                                    bvec, nt, groups, nlanes,
                                    _copy_lanes(prob, b, nt, groups),
                                    _tile_cols_first(prob, b, soff))
