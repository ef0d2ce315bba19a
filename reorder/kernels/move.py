"""The kernel adapters of pure moves (no type conversion): each decides whether its runner in
`csrc/move/kernels.pyx` fits a normalised problem, and cuts the problem into the runner's arrays.

  copy       innermost node contiguous on both sides, no padding
  blocks     conv weights with small spatial dims: whole (O block x I block x h*w) blocks
             through an L1 scratch
  interleave rows of pixels with a few channels side by side <-> one plane a channel,
             permuted in registers
  transpose  A x B tiles with register transposes
  generic    a strided walk; takes every problem
"""
import math
from typing import NamedTuple

import numpy as np

from .. import _kernels
from ..core import machine
from ..core.desc import _bytes
from .base import (FAR_SLICE_WORDS, ALL_THREADS, COLS_FIRST_DST_ROW_BYTES, COLS_FIRST_ROWS_PER_SET,
                      FAR_PLANE_BYTES, Kernel, far_plane_slice, far_planes, plane_offsets,
                      rows_on_one_offset, rows_spread, slab_lanes)

__all__ = ["CopyKernel", "BlockKernel", "InterleaveKernel", "TransposeKernel", "GenericKernel"]

# Runs shorter than this spread over too many write streams for streaming stores to pay
# (docs/kernels/copy.md#tuning-constants).
_STREAM_MIN_RUN_BYTES = 1024
# With cached stores a tile work item's dst footprint (B slice x A row bytes) stays under
# this, so the lines its row blocks of A fill in turn are still in L2 when the next block
# comes (nchw -> nhwc: A = c). Streamed lines do not stay in any cache: there the slices are
# as long as the thread split allows, which keeps the source rows' reads long (docs/kernels/transpose.md#tuning-constants).
TILE_DST_BYTES = 128 << 10
# The rows (and columns) of the register tiles' largest transposes.
TILE_ROWS = 16
# With cached stores, tile work items of this many dst rows or more, each short (several
# tiles of A), build their rows in a scratch and copy them out whole (TransposeKernel).
TILE_COPY_OUT_ROWS = 64
# Tiles whose rows are dst planes on few 4 KiB offsets build this many bytes of them at a
# time in a scratch (in L1) and copy each row's part out in turn (TransposeKernel).
TILE_COPY_LANES_BYTES = 16 << 10
# ... and so do rows that lie back to back, 1 to 4 KiB long, on this many 4 KiB offsets or
# fewer, by element size, in steps that move TILE_COPY_ROWS_MIN_BYTES or more (above the
# 1 MiB L2 of the AMD kinds it was measured on), where machine.TileRules does not copy them
# out whole.
COPIED_ROW_OFFSETS = {1: 2, 2: 2, 4: 4, 8: 4}
TILE_COPY_ROWS_MIN_BYTES = 3 << 19
# Byte tiles with cached stores fetch the dst lines of their next row group early when source
# and destination together reach this fraction of the streaming threshold (an eighth of the
# L3 by default): there the lines come from L3, from rows too far apart for the hardware
# prefetchers; below it they are mostly in L2 and the fetches only cost (docs/kernels/transpose.md#tuning-constants).
TILE_AHEAD_FRACTION = 4
# The transpose tiles walk B's columns first (problem.COLS_FIRST_DST_ROW_BYTES) where a
# column's A rows spread over an L2's 1024 sets, streamed; cached, f32 there too, while a
# tile column of 1- and 2-byte elements, part of a source line that the next columns read
# again, needs them over the L1's 64 (over the L2's alone they read 0.83-0.91x cached), and
# only in a cached plan's short slices (in a streamed plan's long ones, run cached on more
# threads, 16-bit columns first read 0.84-0.94x). f32 rows 4 KiB apart, on 16 of an L2's
# sets, read 0.2 of a copy columns first (docs/kernels/transpose.md#tuning-constants).


def _node_array(nodes):
    return np.array(nodes, dtype=np.int64).reshape(-1, 5)


def _checked_array(prob):
    return np.array(prob.checked, dtype=np.int64).reshape(-1, 3)


def _round_up(n, m):
    return -(-n // m) * m


def _grid_nodes(prob):
    """(row node, cross node) indices when short runs contiguous on both sides can move as
    a grid: one node continues the run in src, another in dst (nhwc -> nChw16c: a pixel's
    channel blocks, and the pixels). The cross node is looped whole inside each row: the
    bounds-checked one, else the shorter. None when there is no such pair."""
    nodes = prob.nodes
    last = nodes[-1]
    if len(nodes) < 3 or last.ss != 1 or last.ds != 1 or last.extent * prob.itemsize > 256:
        return None
    ia = next((i for i in range(len(nodes) - 1) if nodes[i].ss == last.extent), None)
    ib = next((i for i in range(len(nodes) - 1) if nodes[i].ds == last.extent), None)
    if ia is None or ib is None or ia == ib:
        return None
    a, b = nodes[ia], nodes[ib]
    if a.dim >= 0 and b.dim >= 0:
        return None
    if a.dim >= 0 or (b.dim < 0 and a.extent <= b.extent):
        return ib, ia
    return ia, ib


def _walker(prob, stream_min_bytes):
    """Walker runner: the node before the run, when unchecked, becomes a row loop inside each
    work item (with a cross node inside it, for a grid of short runs); rows and long runs are
    sliced so a static split has >= 16 items to share. It streams whole runs contiguous on
    both sides, and only long ones, or a grid whose dst lines it fills whole."""
    nodes = list(prob.nodes)
    row = (1, 0, 0)
    cross = None
    last = nodes[-1]
    grid = _grid_nodes(prob)
    nt = prob.streams(stream_min_bytes) and (grid is not None or (
        last.ss == 1 and last.ds == 1 and last.extent * prob.itemsize >= _STREAM_MIN_RUN_BYTES))
    if grid is not None:
        ir, ic = grid
        cross = np.array(nodes[ic][:5], dtype=np.int64)
        if nodes[ic].dim < 0:
            cross[3:] = (-1, 1)
        nodes = [nd for i, nd in enumerate(nodes) if i != ic]
        ir -= ir > ic
    else:
        # For short runs, loop the node that continues the run in src, so reads stay
        # sequential; otherwise the node just outside.
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
        # a grid's slices keep whole dst lines of rows (16-byte runs: 4 rows a line)
        line = 64 // math.gcd(64, run * prob.itemsize) if grid is not None else 1
        slice_ = min(row[0], _round_up(-(-row[0] // per), line))
    elif per > 1 and run * prob.itemsize >= (64 << 10):
        piece = _round_up(-(-run // per), 64 // prob.itemsize)
    rows = np.array([row[0], row[1], row[2], slice_, piece], dtype=np.int64)
    slab = grid is None and ir == len(prob.nodes) - 2 and slab_lanes(prob) > 0
    # a grid's padded columns each take a pass over the rows: passes of _GRID_CHUNK_BYTES of
    # source rows at a time (a whole number of 64-byte dst lines of the shortest runs)
    chunk = _round_up(max(1, _GRID_CHUNK_BYTES // max(1, abs(row[1]) * prob.itemsize)), 16) \
        if grid is not None else 0
    return _kernels.Walker(prob.itemsize, _node_array(nodes), _checked_array(prob), rows, nt,
                           slab, cross, chunk)


# Source bytes a grid pass covers before the next column's pass over the same rows: the
# lines it read are still in L1 (nhwc -> nChw16c at C=19 f32: 0.77 -> 0.94 of a copy against
# one pass a column over all the rows; docs/kernels/copy.md#tuning-constants).
_GRID_CHUNK_BYTES = 8 << 10


class CopyKernel(Kernel):
    name = "copy"
    why = "innermost node contiguous on both sides and no padding: parallel block copies"

    def is_usable_for(self, prob, stream_min_bytes=None):
        last = prob.nodes[-1]
        if not (last.ss == 1 and last.ds == 1 and not prob.checked):
            return False
        # weights whose runs are shorter than a line (1x1 to OIhw4i16o4i: runs of 4 i) go
        # to the block kernel, 4-10x faster there than a copy per run (docs/kernels/copy.md#tuning-constants)
        return last.extent * prob.itemsize >= _COPY_MIN_RUN_BYTES or not _BLOCKS.is_usable_for(prob)

    def prepare(self, prob, stream_min_bytes):
        return _walker(prob, stream_min_bytes)


class _BlockShape(NamedTuple):
    block: tuple        # node indices in the block
    r: int              # node index of the rows
    cols: tuple         # node indices of the columns, plain-side order (innermost first)
    il: int             # interleave width of the blocked side
    to_blocked: bool
    runs: bool = False  # the plain side's rows are contiguous: each column is a run of R


# 1- and 2-byte activations blocked by 16 channels whose planes have at most this many
# pixels take the block kernel (its AVX-512 VBMI register path), keyed by element size and
# direction (to the blocked side or from it); larger planes, and 16-bit planes out of the
# blocked side, keep the transpose kernel, measured level or faster there
ACTIVATION_BLOCK_COLUMNS = {(1, True): 256, (1, False): 64, (2, True): 256, (2, False): 0}


class BlockKernel(Kernel):
    """Plain rows of R x C <-> one dense block (see csrc/move/blocks.h): the block nodes are the
    densest prefix of the blocked side's strides that parses as [jl][r][columns...], where the
    columns (jl included) form one contiguous run on the plain side and r is the row node."""
    name = "blocks"
    why = ("weights blocked in two dims (OIhw16i16o, OIhw4i16o4i, ...), and 1- and 2-byte "
           "activations of small planes blocked by 16 channels: each O block x I block x "
           "spatial block (or 16 channels x a plane) goes through an L1 scratch with register "
           "transposes and leaves with whole contiguous stores; padding written (or skipped) "
           "per block")

    @staticmethod
    def _parse(nodes, block, to_blocked, checked):
        ps = (lambda nd: nd.ss) if to_blocked else (lambda nd: nd.ds)
        options = [(block[0], block[1:], 1)]
        if len(block) >= 2:
            options.append((block[1], (block[0],) + block[2:], nodes[block[0]].extent))
        for r, cols, il in options:
            rn = nodes[r]
            chain = sorted(cols, key=lambda i: ps(nodes[i]))
            size = 1
            for i in chain:
                if ps(nodes[i]) != size:
                    break
                size *= nodes[i].extent
            else:
                # (rows may be closer than C apart where columns are padded: only valid
                # columns are read or written, and the plain side's own layout keeps them apart)
                if rn.extent < 2:
                    continue
                cdims = {nodes[i].dim for i in chain if nodes[i].dim >= 0}
                if len(cdims) > 1 or (rn.dim >= 0 and rn.dim in cdims):
                    continue
                if cdims:
                    # the checked columns sit above the unchecked ones, one step of their
                    # dim per `cunit` columns, so a column's coordinate is c // cunit
                    low = [i for i in chain if nodes[i].dim < 0]
                    cunit = math.prod(nodes[i].extent for i in low)
                    if any(ps(nodes[i]) >= cunit for i in low) or any(
                            ps(nodes[i]) != nodes[i].weight * cunit for i in chain if nodes[i].dim >= 0):
                        continue
                if not BlockKernel._bounds_fit(nodes, rn, cdims, to_blocked, checked):
                    continue
                return _BlockShape(tuple(block), r, tuple(chain), il, to_blocked)
        return BlockKernel._parse_runs(nodes, block, to_blocked, checked) if len(block) >= 2 \
            else None

    @staticmethod
    def _parse_runs(nodes, block, to_blocked, checked):
        """The rows contiguous on the plain side (hwio's o) and groups of il = block[0]'s
        extent (2 or 4) columns interleaved with them on the blocked side (OIhw4i16o4i,
        OIhw8i16o2i): each column is a run of R elements, anywhere. The columns are numbered
        unchecked nodes first, then the checked dim's nodes by weight, so a column's
        coordinate along that dim is c // cunit as in the contiguous case."""
        ps = (lambda nd: nd.ss) if to_blocked else (lambda nd: nd.ds)
        r, cols, il = block[1], (block[0],) + tuple(block[2:]), nodes[block[0]].extent
        rn = nodes[r]
        if ps(rn) != 1 or rn.extent < 2 or il not in (2, 4):
            # (the interleave stage has vector paths for il = 2 and 4; wider groups, ohwi's
            # OIhw16i16o, keep the small transposed blocks)
            return None
        cdims = {nodes[i].dim for i in cols if nodes[i].dim >= 0}
        if len(cdims) > 1 or (rn.dim >= 0 and rn.dim in cdims):
            return None
        checked_cols = sorted((i for i in cols if nodes[i].dim >= 0), key=lambda i: nodes[i].weight)
        step = 1
        for i in checked_cols:
            if nodes[i].weight != step:
                return None
            step *= nodes[i].extent
        if not BlockKernel._bounds_fit(nodes, rn, cdims, to_blocked, checked):
            return None
        order = tuple(i for i in cols if nodes[i].dim < 0) + tuple(checked_cols)
        return _BlockShape(tuple(block), r, order, il, to_blocked, True)

    @staticmethod
    def _small_planes(nodes, shape, itemsize):
        """Activations of 1- and 2-byte elements in blocks of 16 channels whose planes are
        at most ACTIVATION_BLOCK_COLUMNS[itemsize, to_blocked] pixels: there the register
        path beats the transpose kernel's tiles (docs/kernels/blocks.md#tuning-constants)."""
        columns = math.prod(nodes[i].extent for i in shape.cols)
        return (nodes[shape.r].extent == 16 and shape.il == 1
                and columns <= ACTIVATION_BLOCK_COLUMNS[itemsize, shape.to_blocked])

    @staticmethod
    def _bounds_fit(nodes, rn, cdims, to_blocked, checked):
        """Plain -> blocked writes every position of the block (the blocked side's padding
        covers the iteration); blocked -> plain writes the valid part of a plain side that
        has no padding of its own."""
        limits = {d: (v, pad) for d, v, pad in checked}
        for d in cdims | ({rn.dim} if rn.dim >= 0 else set()):
            valid, alloc = limits[d]
            top = 1 + sum((nd.extent - 1) * nd.weight for nd in nodes if nd.dim == d)
            if (to_blocked and alloc < top) or (not to_blocked and alloc != valid):
                return False
        return True

    def _pick(self, prob):
        if prob.attrs is not None or len(prob.nodes) < 2 or prob.itemsize not in (1, 2, 4, 8):
            return None
        nodes = prob.nodes
        for to_blocked in (True, False):
            blocked = prob.dst if to_blocked else prob.src
            # weights: two dims blocked on the blocked side; activations (one) only where
            # their 16-row blocks of 1- or 2-byte elements move in registers and the planes
            # are small
            activations = sum(blocked.block_size(d) > 1 for d in range(blocked.ndim)) < 2
            if activations and not (prob.itemsize <= 2 and "avx512" in _kernels.block_paths()):
                continue
            bs = (lambda nd: nd.ds) if to_blocked else (lambda nd: nd.ss)
            prefix, expect = [], 1
            for i in sorted(range(len(nodes)), key=lambda i: bs(nodes[i])):
                if bs(nodes[i]) != expect:
                    break
                prefix.append(i)
                expect *= nodes[i].extent
            for k in range(len(prefix), 1, -1):
                block = tuple(prefix[:k])
                if math.prod(nodes[i].extent for i in block) * prob.itemsize > _kernels.BLOCK_MAX_BYTES:
                    continue
                shape = self._parse(nodes, block, to_blocked, prob.checked)
                if shape is not None and activations and \
                        not self._small_planes(nodes, shape, prob.itemsize):
                    shape = None
                if shape is not None and shape.cols == (block[0],) and shape.il > 1 \
                        and not prob.checked:
                    # rows of il elements contiguous on both sides, nothing to transpose:
                    # the copy kernel's grid moves them (hwio -> OIhw16i16o)
                    shape = None
                if shape is not None:
                    return shape
        return None

    def is_usable_for(self, prob, stream_min_bytes=None):
        return self._pick(prob) is not None

    def explain(self, prob, runner, stream_min_bytes):
        if runner.in_registers and runner.path == "avx512":
            return ["blocks: rows of 1- or 2-byte elements permuted and transposed in registers, "
                    "a segment of at most 320 bytes at a time (AVX-512 VBMI)"]
        return []

    def prepare(self, prob, stream_min_bytes):
        sh = self._pick(prob)
        nodes = prob.nodes
        bs = (lambda nd: nd.ds) if sh.to_blocked else (lambda nd: nd.ss)
        ps = (lambda nd: nd.ss) if sh.to_blocked else (lambda nd: nd.ds)
        rn = nodes[sh.r]
        R, C = rn.extent, math.prod(nodes[i].extent for i in sh.cols)
        # the scratch row of each plain column: its blocked offset with r taken out
        c = np.arange(C, dtype=np.int64)
        boff = np.zeros(C, dtype=np.int64)
        coff = np.zeros(C, dtype=np.int64) if sh.runs else None
        unit = 1
        for i in sh.cols:
            nd = nodes[i]
            # a contiguous plain side numbers its columns by their plain offsets; runs in
            # sh.cols order, the first fastest
            k = (c // unit) % nd.extent if sh.runs else (c // ps(nd)) % nd.extent
            boff += k * bs(nd)
            if sh.runs:
                coff += k * ps(nd)
            unit *= nd.extent
        group = R * sh.il
        q = (boff // group * sh.il + boff % group).astype(np.int32)
        checked_cols = [i for i in sh.cols if nodes[i].dim >= 0]
        cdim = nodes[checked_cols[0]].dim if checked_cols else -1
        if sh.runs:
            cunit = math.prod(nodes[i].extent for i in sh.cols if nodes[i].dim < 0)
        else:
            cunit = min(ps(nodes[i]) // nodes[i].weight for i in checked_cols) if checked_cols else 1
        shape = np.array([R, C, sh.il, ps(rn), int(sh.to_blocked), rn.dim, rn.weight, cdim, cunit],
                         dtype=np.int64)
        outer = [nd for i, nd in enumerate(nodes) if i not in sh.block]
        if sh.runs:
            # the block walk goes along the plain side: the blocks whose runs share lines
            # (hwio: four O blocks of 16 bytes in a line) come one after another
            outer.sort(key=lambda nd: -abs(ps(nd)))
        # blocked -> plain into a destination padded outside the block (its rows and columns
        # have none, _bounds_fit): one memset of the destination, then the padding's blocks
        # are skipped: 0.8-1.8x the speed of zeroing them block by block, 1.3x at the median
        # (docs/kernels/blocks.md#choices-in-the-code, "Padding outside the block")
        # (a sub-memory or strided destination is not one run: its blocks are zeroed one
        # by one, so the bytes between them, another region's, are never touched)
        whole = prob.dst.offset0 == 0 and prob.dst.is_c_contiguous and prob.dst.is_dense
        zero = prob.dst.nbytes if whole and not sh.to_blocked and any(
            alloc > valid for _, valid, alloc in prob.checked) else 0
        return _kernels.Blocks(prob.itemsize, _node_array(outer).reshape(-1, 5), _checked_array(prob),
                               q, shape, prob.streams(stream_min_bytes), coff, zero)


_BLOCKS = BlockKernel()
_COPY_MIN_RUN_BYTES = 64


# The most channels whose pixels the interleave kernel takes with cached stores, by element
# size and direction (into planes or out of them): beyond them an output register's permutes
# (one per pair of channels) cost more than the transpose kernel's tiles. Streamed, where the
# tiles' stores of 8-32 bytes a dst row leave lines in part, it takes up to 15 of every size.
# 16-bit pixels of 8 channels into planes, which the tiles move as 16-byte words, keep the
# tiles either way (docs/kernels/interleave.md#tuning-constants, measured on an AMD Zen 5).
INTERLEAVE_MAX_CHANNELS = {(1, True): 15, (1, False): 15, (2, True): 15, (2, False): 12,
                           (4, True): 10, (4, False): 6, (8, True): 6, (8, False): 6}
INTERLEAVE_STREAMED_MAX_CHANNELS = 15
INTERLEAVE_LEFT_TO_TILES = {(2, True, 8)}
# Work items of the interleave kernel take rows in pieces of at least this many bytes of a
# plane (a whole number of the kernel's 64-byte steps), so that a static split of one image
# balances the threads.
_INTERLEAVE_MIN_PIECE_BYTES = 4096


class InterleaveKernel(Kernel):
    """Rows of n pixels with C channels side by side (n * C contiguous elements, channel
    fastest) <-> C planes of n contiguous pixels each, either way (see csrc/move/interleave.h)."""
    name = "interleave"
    why = ("pixels of a few channels side by side on one side, one plane a channel on the "
           "other (nhwc <-> nchw of images): 64 bytes of every plane at a time permuted in "
           "registers to or from the pixels' C registers")

    @staticmethod
    def _pick(prob, stream_min_bytes=None):
        """(channel node, pixel node, to_planes) as node indices, or None."""
        if prob.attrs is not None or prob.checked or prob.itemsize not in (1, 2, 4, 8) \
                or not _kernels.interleave_paths(prob.itemsize):
            return None
        nodes = prob.nodes
        streamed = prob.streams(machine.STREAM_MIN_BYTES if stream_min_bytes is None
                                else stream_min_bytes)
        for to_planes in (True, False):
            inner = (lambda nd: nd.ss) if to_planes else (lambda nd: nd.ds)    # interleaved
            plane = (lambda nd: nd.ds) if to_planes else (lambda nd: nd.ss)    # planar
            ik = next((i for i, nd in enumerate(nodes) if inner(nd) == 1), None)
            if ik is None:
                continue
            c = nodes[ik].extent
            most = INTERLEAVE_STREAMED_MAX_CHANNELS if streamed else \
                INTERLEAVE_MAX_CHANNELS[prob.itemsize, to_planes]
            if not 2 <= c <= min(most, _kernels.INTERLEAVE_MAX_CHANNELS) \
                    or (prob.itemsize, to_planes, c) in INTERLEAVE_LEFT_TO_TILES:
                continue
            ip = next((i for i, nd in enumerate(nodes) if i != ik and plane(nd) == 1
                       and inner(nd) == nodes[ik].extent), None)
            if ip is not None and nodes[ip].extent * prob.itemsize >= 64:
                return ik, ip, to_planes
        return None

    def is_usable_for(self, prob, stream_min_bytes=None):
        return self._pick(prob, stream_min_bytes) is not None

    def explain(self, prob, runner, stream_min_bytes):
        return [f"interleave: pixels of {runner.channels} channels "
                + ("into planes" if runner.to_planes else "from planes")
                + f", rows in pieces of {runner.piece} pixels, {runner.path} permutes"]

    def prepare(self, prob, stream_min_bytes):
        ik, ip, to_planes = self._pick(prob, stream_min_bytes)
        k, px = prob.nodes[ik], prob.nodes[ip]
        rest = [nd for i, nd in enumerate(prob.nodes) if i not in (ik, ip)]
        outer = math.prod(nd.extent for nd in rest)
        per = -(-16 // outer) if outer < 16 else 1
        piece = px.extent if per == 1 else \
            min(px.extent, max(_INTERLEAVE_MIN_PIECE_BYTES // prob.itemsize,
                               _round_up(-(-px.extent // per), 64 // prob.itemsize)))
        shape = np.array([k.extent, px.extent, k.ds if to_planes else k.ss, int(to_planes), piece],
                         dtype=np.int64)
        return _kernels.Interleave(prob.itemsize, _node_array(rest).reshape(-1, 5), shape,
                                   prob.streams(stream_min_bytes))


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
        # a short A continued in dst makes taller tiles (i4 then o16 in OIhw4i16o4i). It comes
        # first: a node that could continue either side (i16 in OIhw16i16o -> oihw, after
        # hw) goes to A, so each dst row gets a whole run instead of 9 elements per column.
        ia = next((i for i in range(last) if i != ib and nodes[i].ds == a.extent
                   and (nodes[i].dim < 0 or nodes[i].dim not in (a.dim, b.dim))), None) \
            if a.extent < 16 else None
        ia_dim = nodes[ia].dim if ia is not None else -1
        # a node continuing B in src makes longer, full tiles (hw then i16 in OIhw16i16o)
        ic = next((i for i in range(last) if i not in (ib, ia) and nodes[i].ss == b.extent
                   and nodes[i].ds >= a.extent and b.dim < 0
                   and (nodes[i].dim < 0 or nodes[i].dim not in (a.dim, ia_dim))), None)
        height = a.extent * (nodes[ia].extent if ia is not None else 1)
        width = b.extent * (nodes[ic].extent if ic is not None else 1)
        if height < 4 or width < 4:
            return None
        return ib, ic, ia

    def is_usable_for(self, prob, stream_min_bytes=None):
        return self._pick(prob) is not None

    def stream_threads(self, prob, runner, stream_min_bytes):
        """Tiles of 1- and 2-byte elements writing far planes (problem.far_planes) stream on
        every thread count from the one-thread threshold: on 2 threads cached they measured
        at half the streamed speed (bf16 nhwc -> nchw 8x256x56x56: 0.52 of a copy against
        0.92). 4-byte tiles there measured faster cached (docs/kernels/transpose.md#tuning-constants)."""
        if self._far_words(prob) and prob.streams(stream_min_bytes):
            return ALL_THREADS
        return super().stream_threads(prob, runner, stream_min_bytes)

    @classmethod
    def _far_words(cls, prob):
        """Whether the tiles move 1- or 2-byte elements into far planes (B one node)."""
        ib, ic, _ = cls._pick(prob)
        return prob.itemsize <= 2 and ic is None and far_planes(prob.nodes[ib], prob.itemsize)

    @classmethod
    def far_slice(cls, prob):
        """B's columns a work item takes with cached stores where B (one node) is far dst
        planes (problem.far_plane_slice), else 0: the dst footprint bound (TILE_DST_BYTES)
        is for B's rows near each other, and with A long it cut far planes to 16 a slice."""
        ib, ic, _ = cls._pick(prob)
        return 0 if ic is not None else far_plane_slice(prob.nodes[ib], prob.itemsize)

    def explain(self, prob, runner, stream_min_bytes):
        far = not runner.nt and self.far_slice(prob)
        lines = [f"tiles: B in slices of {runner.slice} a work item"
                 + ("" if runner.nt else " (cached stores: " + (FAR_SLICE_WORDS if far else
                    f"dst footprint <= {_bytes(TILE_DST_BYTES)})"))
                 + (f", columns first ({' and '.join(runner.cols_first)}): each dst row written "
                    "whole, in order" if runner.cols_first else "")]
        if runner.copy_lanes:
            lines.append(f"tiles: a work item's dst rows, on few 4 KiB offsets, are built "
                         f"{runner.copy_lanes} elements at a time in a scratch and copied out "
                         f"a row at a time")
        elif runner.copy_out:
            lines.append("tiles: a work item's dst rows, back to back, are built in a scratch "
                         "and copied out whole")
        return lines

    def prepare(self, prob, stream_min_bytes):
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
        nt = prob.streams(stream_min_bytes)
        far = self.far_slice(prob)
        if not nt and far:
            slice_ = min(slice_, far)
        elif not nt:
            height = prob.nodes[-1].extent * (prob.nodes[ia].extent if ia is not None else 1)
            slice_ = min(slice_,
                         max(step, TILE_DST_BYTES // (height * prob.itemsize) // step * step))
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
        ahead = not nt and prob.itemsize == 1 \
            and prob.moved_bytes >= stream_min_bytes // TILE_AHEAD_FRACTION
        cols_first = self._cols_first(prob, b, c, ia, nt)
        lanes = self._copy_lanes(prob, b, ia, ic, slice_, nt)
        return _kernels.Transpose(prob.itemsize, nodes, _checked_array(prob), avec, bvec, nt,
                                  ahead, lanes > 0 or self._copy_out(prob, b, ia, ic, slice_, nt),
                                  lanes, cols_first)

    @staticmethod
    def _cols_first(prob, b, c, ia, nt):
        """The Transpose runner's cols_first (1 cached, 2 streamed; see
        problem.COLS_FIRST_DST_ROW_BYTES): the AVX-512 tiles of 1-, 2- and 4-byte elements
        have the loop."""
        a = prob.nodes[-1]
        if c is not None or ia is not None or a.extent > 1024 * COLS_FIRST_ROWS_PER_SET \
                or b.ds * prob.itemsize % COLS_FIRST_DST_ROW_BYTES \
                or prob.itemsize not in (1, 2, 4) or "avx512" not in _kernels.simd_paths() \
                or (prob.itemsize < 4 and not _kernels.cpu_features()["avx512 f+bw"]):
            return 0
        offsets = [k * abs(a.ss) * prob.itemsize for k in range(a.extent)]
        wide = rows_spread(offsets, 1024)
        streamed = nt and wide
        cached = wide if TILE_ROWS * prob.itemsize >= 64 else not nt and rows_spread(offsets, 64)
        return (2 if streamed else 0) | (1 if cached else 0)

    @staticmethod
    def _copy_lanes(prob, b, ia, ic, slice_, nt):
        """The lanes of A a work item builds at a time in a scratch of TILE_COPY_LANES_BYTES
        before copying each row's part out, else 0:
        * where B's rows lie a multiple of 4 KiB apart (problem.rows_on_one_offset;
          nhwc -> nchw at 32x32, 64x64 or 224x224 pixels of f32): written directly, a tile's
          stores went to as many lines of one cache set as it has columns. On an AMD Zen 5
          1.1-2.8 times as fast; planes on two offsets 0.78-0.84.
        * where the rows lie back to back, 1 to 4 KiB long (nchw -> nhwc at 256 or 512 f32
          channels, 1024 bf16; nhwc -> nchw at 16x16 f32 pixels), on few offsets
          (COPIED_ROW_OFFSETS by element size), the step moves TILE_COPY_ROWS_MIN_BYTES or
          more, and machine.TILE_RULES does not copy them out whole: on the Zen 5 1.1-3.8
          times as fast; on more offsets (f32 at 64 or 128 channels, bf16 at 512, bytes at
          1024) 0.55-1.1, moving 1 MiB or less 0.74-0.88, and longer rows (planes) on two
          offsets 0.78-0.84 (docs/kernels/transpose.md#tuning-constants)."""
        a = prob.nodes[-1]
        if nt or ia is not None or ic is not None or b.dim >= 0 or a.dim >= 0:
            return 0
        offsets, row = plane_offsets(b, prob.itemsize), b.ds * prob.itemsize
        if not (rows_on_one_offset(b, prob.itemsize)
                or b.ds == a.extent and 1024 <= row < FAR_PLANE_BYTES
                and offsets <= COPIED_ROW_OFFSETS[prob.itemsize]
                and prob.moved_bytes >= TILE_COPY_ROWS_MIN_BYTES
                and not machine.TILE_RULES.copy_out_rows):
            return 0
        return max(16, TILE_COPY_LANES_BYTES // (slice_ * prob.itemsize) // 16 * 16)

    @staticmethod
    def _copy_out(prob, b, ia, ic, slice_, nt):
        """Whether work items build their rows in a scratch and copy them out whole: 4- and
        8-byte elements with cached stores, where B's rows lie back to back in dst, each
        takes several tiles of A and a work item has TILE_COPY_OUT_ROWS of them or more
        (nchw -> nhwc: 128 pixels of 256 channels), so it writes a line of each of its many
        rows per block of A, more streams than the hardware follows. Copied out in sequence
        instead they measured 1.05-1.4 times as fast on an Intel Xeon (f64 1.4-1.8); the
        1- and 2-byte tiles, which write their rows in wider pieces, were level or slower,
        as were the tiles whose rows are one tile or few and long (nchw <-> nChw16c,
        nhwc -> nchw; docs/kernels/transpose.md#tuning-constants). Only where machine.TILE_RULES says so: on an AMD Zen 5
        the same shapes, their stores cached there, read 0.77-1.0 of the direct stores."""
        a = prob.nodes[-1]
        return (machine.TILE_RULES.copy_out_rows and not nt and prob.itemsize >= 4
                and ia is None and ic is None and b.dim < 0
                and b.ds == a.extent and a.extent > TILE_ROWS and slice_ >= TILE_COPY_OUT_ROWS
                and slice_ * a.extent * prob.itemsize <= TILE_DST_BYTES)


class GenericKernel(Kernel):
    name = "generic"
    why = "strided loop nest over the normalised nodes; handles every pair"

    def is_usable_for(self, prob, stream_min_bytes=None):
        return True

    def prepare(self, prob, stream_min_bytes):
        return _walker(prob, stream_min_bytes)
