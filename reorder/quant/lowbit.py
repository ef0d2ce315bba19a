"""Low-bit types on the planner side: f8 (e4m3, e5m2), s4/u4 packed two a byte in oneDNN's
nibble order, and grouped scales and zero points (oneDNN's set_scales(arg, mask, groups)).

A low-bit reorder runs in up to three passes, each a kernel:
  1. the source to f32 in logical (C) order: the existing planner, or nothing when the source
     is already f32 with a unit-stride last dim. Low-bit sources in plain rows or in tiles over
     the last two dims (BA16a64b4a, AB16b16a, ...) are decoded in one pass, with the source's
     scales and zero points (`_lowbit.dequant_plain` / `dequant_tiles`), straight into the
     result when it is plain f32; other layouts are unpacked, moved as bytes and decoded
     (`_lowbit.dequant_rows`);
  2. `_lowbit.quant_rows`: f32 -> codes with the destination's scales and zero points;
  3. the existing planner moves the code bytes into the destination layout.
For s4/u4, when the destination's innermost axis is a dim of even extent, pass 2 packs the
nibble pairs along that dim directly and pass 3 moves half the bytes (a destination whose
packed bytes are a u8 layout of the halved dim); otherwise pass 3 moves one code a byte and
a fourth pass packs the buffer. The rules are in docs/int8.md.
"""
import functools
import math
import numbers

import numpy as np

from .. import _lowbit
from .._kernels import data_address
from ..plan.binding import aligned_empty, bind_source, check_out
from ..core.desc import Axis, Desc, _fmt
from ..core.dtypes import LOWBIT, as_dtype
from ..core.errors import ReorderError
from ..plan.cache import cached_plan
from ..kernels.base import PARALLEL_MIN_BYTES, STREAM_MIN_BYTES, stream_threads
from ..kernels.threads import resolve
from .results import QuantizedLowBit

__all__ = ["is_lowbit", "packed_nbytes", "Quant", "reorder_lowbit", "quantize_lowbit",
           "QuantizedLowBit"]

# types the quantizing kernel writes, and their integer ranges
CODE_TYPES = ("s4", "u4", "s8", "u8", "f8_e4m3", "f8_e5m2")
INT_RANGE = {"s4": (-8, 7), "u4": (0, 15), "s8": (-128, 127), "u8": (0, 255)}
F8_MAX = {"f8_e4m3": 448.0, "f8_e5m2": 57344.0}
SCALE_DTYPES = ("f32", "bf16", "f16")
ZP_DTYPES = ("s8", "u8", "s4", "u4", "s32")


def is_lowbit(dtype):
    return as_dtype(dtype).name in LOWBIT


def is_nibble(dtype):
    return as_dtype(dtype).name in ("s4", "u4")


def packed_nbytes(desc):
    """Bytes of a packed s4/u4 buffer: oneDNN's div_up(elements, 2), padding included."""
    return (desc.nelems + 1) // 2


# ---------------------------------------------------------------------------------------------
# grouped scales and zero points

class Quant:
    """Scales and zero points of one side, oneDNN's set_scales(arg, mask, groups) and
    set_zero_points(arg, mask, groups): `mask` bit d = varies along dim d; `groups` = (g0, g1)
    for the last two dims (a group of g0 consecutive elements along dim -2 shares a value).
    The values are a dense row-major tensor over the masked dims, the last two divided by
    their groups."""

    def __init__(self, side, dims, scales=None, zero_points=None, mask=None, groups=None):
        self.side, self.dims = side, tuple(dims)
        nd = len(self.dims)
        if groups is not None:
            groups = tuple(groups)
            if nd < 2 or len(groups) != 2 or not all(isinstance(g, numbers.Integral) and g >= 1
                                                      for g in groups):
                raise ReorderError(f"{side}_groups={groups!r}: give two positive group sizes "
                                   f"for the last two dims of a tensor of 2 or more dims")
            for g, d in zip(groups, (nd - 2, nd - 1)):
                if self.dims[d] % g:
                    raise ReorderError(
                        f"{side}_groups={groups}: a group of {g} does not divide dim "
                        f"{'abcdefghijkl'[d]} of size {self.dims[d]}; oneDNN requires each group "
                        f"size to divide its dim (dims {_fmt(self.dims)})")
        else:
            groups = (1, 1)
        size = lambda v: 0 if v is None else np.size(v)
        n = max(size(scales), size(zero_points))
        if mask is None:
            mask = 0 if n <= 1 and groups == (1, 1) else (1 << nd) - 1
        if isinstance(mask, bool) or not isinstance(mask, numbers.Integral) or mask < 0 \
                or mask >> nd:
            raise ReorderError(f"{side}_scale_mask={mask!r} is not a bit mask of the dims of a "
                               f"{nd}-d tensor")
        if groups != (1, 1) and not (mask >> (nd - 1) & 1 and mask >> (nd - 2) & 1):
            raise ReorderError(f"{side}_scale_mask={mask}: with groups the mask must include "
                               f"the last two dims (oneDNN's rule)")
        self.mask, self.groups = int(mask), groups
        qd = [self.dims[d] if mask >> d & 1 else 1 for d in range(nd)]
        if nd >= 2:
            qd[-2] //= groups[0]
            qd[-1] //= groups[1]
        self.qdims = tuple(qd)
        self.scales = self._table(scales, "scales", SCALE_DTYPES)
        self.zero_points = self._table(zero_points, "zero_point", ZP_DTYPES)

    def _table(self, values, what, kinds):
        if values is None:
            return None
        name = f"{self.side}_{what}"
        arr = np.asarray(values)
        try:
            dt = as_dtype(arr.dtype)
        except (ReorderError, TypeError):
            dt = None
        if what == "scales" and arr.dtype.kind in "iu" and arr.ndim == 0:
            dt = as_dtype("f32")         # a plain Python number
        if what == "zero_point" and arr.dtype.kind in "iu" and (dt is None or dt.name not in kinds):
            # np.array([...]) is int64: taken as s32 when every value fits
            if arr.size and (arr.min() < -2**31 or arr.max() >= 2**31):
                raise ReorderError(f"{name} holds values that do not fit in s32")
            dt = as_dtype("s32")
        if dt is None or dt.name not in kinds and not (arr.ndim == 0 and arr.dtype.kind in "fiu"):
            raise ReorderError(f"{name} has dtype {arr.dtype}; expected one of {', '.join(kinds)}")
        if dt is not None and dt.name in ("s4", "u4"):
            lo, hi = _int4_storage_range(dt.name, arr.dtype)
            raw = arr.view(np.int8 if dt.name == "s4" else np.uint8)
            if raw.size and (raw.min() < lo or raw.max() > hi):
                raise ReorderError(f"{name} holds values outside the {dt.name} range "
                                   f"[{INT_RANGE[dt.name][0]}, {INT_RANGE[dt.name][1]}]")
            arr = sign_extend_s4(raw) if dt.name == "s4" else raw
        want = math.prod(self.qdims)
        if arr.size == 1 and want != 1:     # one value: common to all (oneDNN's mask 0)
            arr = np.full(self.qdims, arr.reshape(()))
        if arr.size != want or (arr.ndim > 1 and arr.shape not in (self.qdims, tuple(
                q for q in self.qdims if q != 1) or (1,))):
            raise ReorderError(f"{name} has shape {_fmt(arr.shape)} ({arr.size} values) but "
                               f"mask {self.mask} with groups {self.groups} over dims "
                               f"{_fmt(self.dims)} needs {_fmt(self.qdims)} ({want} values)")
        if what == "zero_point" and arr.dtype.kind == "f":
            if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
                raise ReorderError(f"{name} must hold integers")
        return np.ascontiguousarray(arr.astype(np.float32, copy=False).reshape(-1))

    @property
    def trivial(self):
        return self.scales is None and self.zero_points is None

    def row_tables(self, rows_idx):
        """(base index per row, column index table or colstep) for rows given as a (R, nd-1)
        array of logical indices over dims[:-1]."""
        nd = len(self.dims)
        qstride = [math.prod(self.qdims[d + 1:]) for d in range(nd)]
        g = [1] * nd
        if nd >= 2:
            g[-2], g[-1] = self.groups
        base = np.zeros(len(rows_idx), np.int64)
        for d in range(nd - 1):
            if self.mask >> d & 1:
                base += rows_idx[:, d] // g[d] * qstride[d]
        L = self.dims[-1]
        if not self.mask >> (nd - 1) & 1:
            return base, None, 0
        if g[-1] == 1:
            return base, None, 1
        return base, (np.arange(L, dtype=np.int64) // g[-1]) * qstride[-1], 0


def _rows_index(dims):
    """(R, nd-1) logical indices of the rows (dims[:-1]) in C order."""
    lead = dims[:-1]
    if not lead:
        return np.zeros((1, 0), np.int64)
    return np.indices(lead, dtype=np.int64).reshape(len(lead), -1).T.copy()


# ---------------------------------------------------------------------------------------------
# arrays in and out

def _codes_proxy(dtype):
    """The byte type a low-bit tensor's codes move as through the existing planner."""
    return {"s4": "s8", "u4": "u8", "f8_e4m3": "u8", "f8_e5m2": "u8"}.get(dtype.name, dtype.name)


def _int4_storage_range(name, dtype):
    """The bytes an unpacked s4/u4 array may hold. An int8/uint8 array with src_dtype= holds
    the values; an ml_dtypes.int4 array holds either the sign-extended value or, as
    `astype(ml_dtypes.int4)` stores a negative one, only its nibble (-2 as 0x0e)."""
    lo, hi = INT_RANGE[name]
    if name == "s4" and dtype == _ml_int4():
        hi = 15
    return lo, hi


def _ml_int4():
    try:
        import ml_dtypes
    except ImportError:        # pragma: no cover - without ml_dtypes there are no int4 arrays
        return None
    return np.dtype(ml_dtypes.int4)


def sign_extend_s4(codes):
    """s4 codes one a byte with sign-extended values (the kernels' form): nibble-only negatives
    (8..15, from an ml_dtypes.int4 array) become -8..-1. `codes` itself when none is."""
    if codes.size == 0 or codes.max() <= 7:
        return codes
    return ((codes.view(np.uint8) & 0xF) ^ 8).view(np.int8) - np.int8(8)


def _check_packed(x, sdesc):
    name = sdesc.dtype.name
    if not isinstance(x, np.ndarray) or x.dtype != np.uint8 or x.ndim != 1 \
            or not x.flags.c_contiguous:
        raise ReorderError(f"a packed {name} source must be a flat contiguous uint8 buffer, "
                           f"got {getattr(x, 'dtype', type(x).__name__)} of shape "
                           f"{_fmt(np.shape(x))}")
    if sdesc.offset0 or not sdesc.is_dense:
        raise ReorderError(f"a packed {name} source must be a dense layout without offset")
    need = packed_nbytes(sdesc)
    if x.size != need:
        raise ReorderError(f"a packed {name} buffer of {_fmt(sdesc.dims)} in {sdesc.name} holds "
                           f"{sdesc.nelems} values in {need} bytes (two a byte, oneDNN's "
                           f"div_up(n, 2)), got {x.size} bytes")


def source_codes(x, sdesc, packed):
    """Bind a low-bit source: (codes array bound to a byte Desc over sdesc's layout, that Desc).
    A packed s4/u4 buffer is unpacked; unpacked s4/u4 values are range-checked."""
    name = sdesc.dtype.name
    proxy = Desc._from_axes(sdesc.dims, _codes_proxy(sdesc.dtype), sdesc.axes, sdesc.offset0,
                            sdesc.tag)
    if packed:
        _check_packed(x, sdesc)
        codes = aligned_empty((sdesc.nelems,), np.int8 if name == "s4" else np.uint8)
        _lowbit.unpack(data_address(x), data_address(codes), sdesc.nelems, name == "s4",
                       _threads(None, sdesc.nelems))
        return codes, proxy
    x = bind_source(x, sdesc)
    if name in ("s4", "u4"):
        raw = x.view(np.int8 if name == "s4" else np.uint8)
        lo, hi = _int4_storage_range(name, x.dtype)
        if raw.size and (raw.min() < lo or raw.max() > hi):
            bad = raw[(raw < lo) | (raw > hi)].reshape(-1)[0]
            raise ReorderError(f"an unpacked {name} array holds {int(bad)}, outside [{lo}, {hi}]")
        return raw, proxy
    return x.view(np.uint8) if name.startswith("f8") else x, proxy


def _threads(threads, nbytes):
    n = resolve(threads)
    return 1 if nbytes < PARALLEL_MIN_BYTES and threads is None else n


def _run(src_desc, dst_desc, x, out, nthreads):
    """The existing planner: one cached plan, run on bound arrays."""
    p = cached_plan(src_desc, dst_desc)
    xb, ob = p.bind(x, out)
    p.execute(xb, ob, nthreads)
    return ob if out is None else out


def _plain_rows(desc):
    """True when desc is its dims in C order, dense, from element 0: logical row r is the L
    elements from r * L."""
    return (desc.is_c_contiguous and desc.offset0 == 0 and desc.nelems == desc.span
            and not desc.is_blocked and [a.dim for a in desc.axes] == list(range(desc.ndim)))


def _decoded_source(sdesc, squant):
    """True when the source goes through the decoding kernels (a low-bit type, or s8/u8 with
    grouped scales or zero points); grouped scales on any other type are an error."""
    name = sdesc.dtype.name
    if name in LOWBIT:
        return True
    if squant is None or squant.trivial:
        return False
    if name not in ("s8", "u8"):
        raise ReorderError(f"grouped source scales apply to s8/u8/s4/u4/f8 sources, not {name}")
    return True


def _source_tiles(sdesc, packed):
    """How the one-pass decoder reads the source: ("plain", None) for plain rows, ("tiles",
    _tile_plan) for tiles over the last two dims, or None (the multi-pass way)."""
    if _plain_rows(sdesc):
        return "plain", None
    plan = _tile_plan(sdesc, packed and sdesc.dtype.name in ("s4", "u4")) \
        if len(sdesc.dims) >= 2 else None
    return ("tiles", plan) if plan is not None else None


def _dequant_fused(x, sdesc, squant, packed, f, nth, fresh=True):
    """Codes (s4/u4 packed or one a byte, f8, or s8/u8 with grouped scales) straight into f,
    the logical f32 rows, in one pass: from plain rows, or from tiles over the last two dims
    (_source_tiles: BA16a64b4a, AB16b16a, ...). False when the layout needs the multi-pass way.
    A large f the caller gave (not `fresh`) is written with streaming stores; a fresh one is
    not: its pages are zeroed through the cache as they are first touched, so stores that
    bypass the cache would write every line twice."""
    dims = sdesc.dims
    name = sdesc.dtype.name
    nib = packed and name in ("s4", "u4")
    how = _source_tiles(sdesc, packed)
    if how is None:
        return False
    if packed:
        _check_packed(x, sdesc)
        raw = x
    elif name in LOWBIT:
        raw = source_codes(x, sdesc, False)[0]       # bound, and int4 values range-checked
    else:
        raw = bind_source(x, sdesc)
    if sdesc.nelems == 0:
        return True
    L = dims[-1] if dims else 1
    R = math.prod(dims[:-1]) if dims else 1
    q = squant if squant is not None and not squant.trivial else None
    base, colidx, colstep = q.row_tables(_rows_index(dims)) if q is not None else (None, None, 0)
    sc = None if q is None else q.scales
    zp = None if q is None else q.zero_points
    stream = not fresh and stream_threads(raw.nbytes + f.nbytes, STREAM_MIN_BYTES, f.nbytes) >= nth
    if how[0] == "plain":
        _lowbit.dequant_plain(name, data_address(raw), nib, R, L, data_address(f), sc, zp, colidx,
                              colstep, base, stream, nth)
        return True
    Ta, Tb, tab, fast, toff, trow, tcol = how[1]
    _lowbit.dequant_tiles(name, data_address(raw), nib, fast, tab, Ta, Tb, dims[-2], L, toff,
                          trow, tcol, data_address(f), L, sc, zp, colidx, colstep, base, stream,
                          nth)
    return True


def to_logical_f32(x, sdesc, squant, packed, threads):
    """Pass 1: (f32 array, element offsets of its rows, row length). Rows are the logical rows
    (C order over dims[:-1])."""
    dims = sdesc.dims
    L = dims[-1] if dims else 1
    R = math.prod(dims[:-1]) if dims else 1
    nth = _threads(threads, math.prod(dims) * 5)
    if _decoded_source(sdesc, squant):
        f = aligned_empty((max(R, 1) * L,), np.float32)
        if _dequant_fused(x, sdesc, squant, packed, f, nth):
            return f, np.arange(R, dtype=np.int64) * L, True
        if sdesc.dtype.name in LOWBIT:
            codes, proxy = source_codes(x, sdesc, packed)
        else:
            codes, proxy = bind_source(x, sdesc), sdesc
        plain = Desc(dims, proxy.dtype)
        logical = _run(proxy, plain, codes, None, nth) if proxy != plain else codes
        if sdesc.dtype.name == "s4":
            logical = sign_extend_s4(logical)
        code = sdesc.dtype.name
        q = squant if squant is not None and not squant.trivial else None
        if q is not None:
            base, colidx, colstep = q.row_tables(_rows_index(dims))
            if colidx is None:
                colidx = np.full(L, 0, np.int64) if colstep == 0 else np.arange(L, dtype=np.int64)
        else:
            base, colidx = np.zeros(R, np.int64), None
        _lowbit.dequant_rows(code, data_address(logical), R, L, data_address(f),
                             None if q is None else q.scales, None if q is None else q.zero_points,
                             colidx, base, nth)
        return f, np.arange(R, dtype=np.int64) * L, True
    arr = x if sdesc.dtype.name == "f32" else None
    if arr is not None:
        arr = bind_source(x, sdesc)
        strides = sdesc.strides
        if not sdesc.is_blocked and (L <= 1 or strides[-1] == 1) and sdesc.offset0 == 0:
            idx = _rows_index(dims)
            off = idx @ np.asarray(strides[:-1], np.int64) if dims[:-1] else np.zeros(1, np.int64)
            return arr, np.ascontiguousarray(off, np.int64), False
    f = _run(sdesc, Desc(dims, "f32"), x, None, nth)
    return f, np.arange(R, dtype=np.int64) * L, True


def _pair_proxy(ddesc):
    """(dim p, u8 Desc of the packed bytes) when the destination's innermost axis is a dim of
    even extent with unit stride, so nibble pairs lie along that dim; else None."""
    axes = [a for a in ddesc.axes if a.extent > 1]
    if not axes or ddesc.offset0 or not ddesc.is_dense:
        return None
    inner = min(axes, key=lambda a: a.stride)
    if inner.stride != 1 or inner.extent % 2 or inner.weight != 1:
        return None
    p = inner.dim
    new = []
    for a in ddesc.axes:
        st = a.stride if a.stride == 1 and a is inner else a.stride // 2
        if a.dim == p:
            if a is inner:
                new.append(Axis(p, a.block and a.block // 2, 1, a.extent // 2, 1))
            else:
                new.append(Axis(p, a.block, max(a.weight // 2, 1), a.extent, st))
        else:
            new.append(Axis(a.dim, a.block, a.weight, a.extent, st))
    dims = list(ddesc.dims)
    dims[p] = (dims[p] + 1) // 2
    return p, Desc._from_axes(dims, "u8", new)


def quantize_to(f, row_off, dims, ddesc, dquant, want_packed, out, threads):
    """Passes 2 and 3: f32 rows -> the destination's codes in its layout. Returns the array."""
    name = ddesc.dtype.name
    L = dims[-1] if dims else 1
    nd = len(dims)
    inv = zp = colidx = None
    colstep = 0
    q = dquant if dquant is not None and not dquant.trivial else None
    if q is not None:
        if q.scales is not None:
            inv = np.float32(1.0) / q.scales          # 1/scale once, in f32, as for dst scales
        zp = q.zero_points
    nibble = name in ("s4", "u4")
    nth = _threads(threads, math.prod(dims) * 5)
    nib = nibble and want_packed
    res = _fused(f, row_off, dims, ddesc, q, inv, zp, nib, out, nth)
    if res is not None:
        return res
    pair = _pair_proxy(ddesc) if nib else None
    if pair is not None:
        p, proxy = pair
        pdims = proxy.dims
        ridx = _rows_index(pdims)                      # rows of the halved tensor
        if p == nd - 1:
            mode, row_bytes = 1, pdims[-1]
            src_idx0, src_idx1 = ridx, None
        else:
            mode, row_bytes = 2, L
            src_idx0 = ridx.copy()
            src_idx0[:, p] *= 2
            src_idx1 = src_idx0.copy()
            src_idx1[:, p] += 1
        row0 = _row_offsets(src_idx0, dims, row_off)
        if src_idx1 is not None:
            beyond = src_idx1[:, p] >= dims[p]          # odd size: the last high nibble is 0
            src_idx1[beyond, p] = dims[p] - 1
            row1 = _row_offsets(src_idx1, dims, row_off)
            row1[beyond] = -1
        else:
            row1 = np.full(len(ridx), -1, np.int64)
        if q is not None:
            base0, colidx, colstep = q.row_tables(src_idx0)
            base1 = q.row_tables(src_idx1)[0] if src_idx1 is not None else base0
        else:
            base0 = base1 = np.zeros(len(ridx), np.int64)
        plain = Desc(pdims, "u8")
        mid = aligned_empty((plain.nelems,), np.uint8)
        _lowbit.quant_rows(data_address(f), row0, row1, base0, base1, data_address(mid), row_bytes,
                           L, name, mode, inv, zp, colidx, colstep, False, nth)
        res = _packed_out(out, ddesc)
        _run(plain, proxy, mid, res.reshape(proxy.physical_shape), nth)
        return res
    # one code a byte in logical order, moved to the layout, then packed
    ridx = _rows_index(dims)
    row0 = _row_offsets(ridx, dims, row_off)
    base0, colidx, colstep = q.row_tables(ridx) if q is not None else (np.zeros(len(ridx), np.int64), None, 0)
    proxy_t = _codes_proxy(ddesc.dtype)
    mid = aligned_empty((math.prod(dims),), np.int8 if proxy_t == "s8" else np.uint8)
    _lowbit.quant_rows(data_address(f), row0, np.full(len(ridx), -1, np.int64), base0, base0,
                       data_address(mid), L, L, name, 0, inv, zp, colidx, colstep, False, nth)
    code_desc = Desc._from_axes(ddesc.dims, proxy_t, ddesc.axes, ddesc.offset0, ddesc.tag)
    if nibble and want_packed:
        codes = _run(Desc(dims, proxy_t), code_desc, mid, None, nth)
        res = _packed_out(out, ddesc)
        _lowbit.pack(data_address(codes), data_address(res), ddesc.nelems, nth)
        return res
    if out is not None:
        check_out(out, ddesc)
        _run(Desc(dims, proxy_t), code_desc, mid, out.view(as_dtype(proxy_t).storage), nth)
        return out
    res = _run(Desc(dims, proxy_t), code_desc, mid, None, nth)
    return res.view(ddesc.dtype.storage)


@functools.lru_cache(maxsize=64)
def _tile_plan(ddesc, nib):
    """(Ta, Tb, tab, fast, tile_off, tile_row, tile_col) when the destination is made of contiguous
    tiles over the last two dims (every inner block is on those dims: BA16a64b4a, AB16b16a,
    ...), else None. tab maps a physical position in a tile to its logical i * Tb + j; the
    tiles are listed with their byte offset, first logical row and column."""
    nd = ddesc.ndim
    if nd < 2 or ddesc.offset0 or not ddesc.is_dense:
        return None
    outer = {a.dim: a for a in ddesc.axes if a.block == 0}
    inner = [a for a in ddesc.axes if a.block]
    if len(outer) != nd or any(a.dim < nd - 2 for a in inner):
        return None
    Ta, Tb = outer[nd - 2].weight, outer[nd - 1].weight
    tile = Ta * Tb
    # small tiles (aB16b) gain nothing over the multi-pass path; tab must index 32-bit
    if tile < 64 or Tb < 8 or tile > 1 << 16 or (nib and tile % 2):
        return None
    i, j = np.arange(Ta)[:, None], np.arange(Tb)[None, :]
    off = np.zeros((Ta, Tb), np.int64)
    for a in inner:
        off = off + ((i if a.dim == nd - 2 else j) // a.weight) % a.extent * a.stride
    off = off.reshape(-1)
    if not np.array_equal(np.sort(off), np.arange(tile)):
        return None
    oaxes = [a for a in ddesc.axes if a.block == 0]
    if any(a.stride % tile for a in oaxes if a.extent > 1):
        return None
    tab = np.empty(tile, np.int32)
    tab[off] = np.arange(tile, dtype=np.int32)
    fast = 0          # BA{Ta}a{Tb}b{X}a with nibble pairs: the kernel's vector tile
    for X in (2, 4):
        if nib and Ta % X == 0 and Tb % 32 == 0 and np.array_equal(
                off, ((i // X) * Tb * X + j * X + i % X).reshape(-1)):
            fast = X
    digits = np.indices([a.extent for a in oaxes], dtype=np.int64).reshape(len(oaxes), -1)
    toff = np.zeros(digits.shape[1], np.int64)
    row = np.zeros(digits.shape[1], np.int64)
    col = np.zeros(digits.shape[1], np.int64)
    lead = ddesc.dims[:-2]
    for a, dg in zip(oaxes, digits):
        toff += dg * a.stride
        if a.dim == nd - 1:
            col = dg * Tb
        elif a.dim == nd - 2:
            row = row + dg * Ta
        else:
            row = row + dg * (math.prod(lead[a.dim + 1:]) * ddesc.dims[-2])
    if nib:
        toff //= 2
    # visit the tiles in the source's row order: a strip of Ta rows is read front to back
    # (sequential streams the prefetcher follows) and the writes jump by whole tiles; in the
    # destination's order each tile would touch Ta fresh source pages
    order = np.lexsort((col, row))
    arrays = (tab, toff[order], row[order], col[order])
    for a in arrays:                # shared through the cache
        a.flags.writeable = False
    return Ta, Tb, arrays[0], fast, arrays[1], arrays[2], arrays[3]


def _packed_out(out, ddesc):
    """The buffer of a packed s4/u4 result: `out` once checked, or a new one."""
    need = packed_nbytes(ddesc)
    if out is None:
        return aligned_empty((need,), np.uint8)
    if not (isinstance(out, np.ndarray) and out.dtype == np.uint8 and out.shape == (need,)
            and out.flags.c_contiguous and out.flags.writeable):
        raise ReorderError(f"out for a packed {ddesc.dtype.name} result must be a writable "
                           f"contiguous uint8 buffer of {need} bytes")
    return out


def _fused(f, row_off, dims, ddesc, q, inv, zp, nib, out, nth):
    """f32 rows straight into the destination in one pass, when its layout allows: C-order
    plain (rows written in place) or tiles over the last two dims (_tile_plan). None when the
    multi-pass path must run."""
    name = ddesc.dtype.name
    L = dims[-1] if dims else 1
    plain_rows = _plain_rows(ddesc) and (not nib or L % 2 == 0)
    plan = None if plain_rows or len(dims) < 2 else _tile_plan(ddesc, nib)
    if not plain_rows and plan is None:
        return None
    if nib:
        res = _packed_out(out, ddesc)
    elif out is not None:
        check_out(out, ddesc)
        res = out
    else:
        res = aligned_empty(ddesc.physical_shape, ddesc.dtype.storage)
    if ddesc.nelems == 0:
        return res
    ridx = _rows_index(dims)
    if q is not None:
        base, colidx, colstep = q.row_tables(ridx)
    else:
        base, colidx, colstep = None, None, 0
    # as on the way back: an output the caller gave is streamed when source and result are
    # large together; a fresh one is not (its pages are zeroed through the cache when first
    # touched)
    stream = out is not None and stream_threads(f.nbytes + res.nbytes, STREAM_MIN_BYTES,
                                                res.nbytes) >= nth
    if plain_rows:
        R = len(ridx)
        row_bytes = L // 2 if nib else L
        b = base if base is not None else np.zeros(R, np.int64)
        _lowbit.quant_rows(data_address(f), np.ascontiguousarray(row_off, np.int64),
                           np.full(R, -1, np.int64), b, b, data_address(res), row_bytes, L,
                           name, 1 if nib else 0, inv, zp, colidx, colstep, stream, nth)
        return res
    Ta, Tb, tab, fast, toff, trow, tcol = plan
    _lowbit.quant_tiles(data_address(f), np.ascontiguousarray(row_off, np.int64), base, name,
                        inv, zp, colidx, colstep, tab, Ta, Tb, dims[-2], dims[-1], nib, fast, toff,
                        trow, tcol, data_address(res), stream, nth)
    return res


def _row_offsets(idx, dims, row_off):
    """f32 element offset of each row given by its logical indices over dims[:-1]."""
    lead = dims[:-1]
    if not lead:
        return np.repeat(row_off[:1], len(idx))
    flat = np.ravel_multi_index(tuple(idx.T), lead) if len(idx) else np.zeros(0, np.int64)
    return np.ascontiguousarray(row_off[flat], np.int64)


def reorder_lowbit(x, sdesc, ddesc, *, packed_src, packed, squant, dquant, out, threads):
    """The low-bit reorder (see the module docstring); `packed`: s4/u4 results as a packed
    uint8 buffer (True) or one value a byte (ml_dtypes int4/uint4)."""
    sname, dname = sdesc.dtype.name, ddesc.dtype.name
    if dquant is not None and not dquant.trivial and dname not in CODE_TYPES:
        raise ReorderError(f"destination scales or zero points with groups need a quantized "
                           f"destination ({', '.join(CODE_TYPES)}), not {dname}")
    if dname in ("s4", "u4") and packed and out is not None:
        _packed_out(out, ddesc)               # checked before any work
    if sname == dname and sname in LOWBIT and (squant is None or squant.trivial) \
            and (dquant is None or dquant.trivial):
        return _move_codes(x, sdesc, ddesc, packed_src, packed, out, threads)
    dims = sdesc.dims
    if dname == "f32" and _plain_rows(ddesc) and _decoded_source(sdesc, squant) \
            and _source_tiles(sdesc, packed_src) is not None:
        if out is not None:
            check_out(out, ddesc, x)
        res = out if out is not None else aligned_empty(ddesc.physical_shape, np.float32)
        _dequant_fused(x, sdesc, squant, packed_src, res, _threads(threads, math.prod(dims) * 5),
                       fresh=out is None)
        return res
    f, row_off, logical = to_logical_f32(x, sdesc, squant, packed_src, threads)
    if dname in CODE_TYPES and (dname in LOWBIT or (dquant is not None and not dquant.trivial)):
        return quantize_to(f, row_off, dims, ddesc, dquant, packed, out, threads)
    nth = _threads(threads, math.prod(dims) * 8)
    if not logical:       # an f32 source used in place: let the planner read it as it is
        return _run(sdesc, ddesc, x, out, nth)
    return _run(Desc(dims, "f32"), ddesc, f, out, nth)


def _move_codes(x, sdesc, ddesc, packed_src, packed, out, threads):
    """A same-type low-bit move: the codes move as bytes; nibbles are (un)packed around it."""
    codes, proxy = source_codes(x, sdesc, packed_src)
    dproxy = Desc._from_axes(ddesc.dims, proxy.dtype, ddesc.axes, ddesc.offset0, ddesc.tag)
    nth = _threads(threads, math.prod(sdesc.dims) * 2)
    if sdesc.dtype.name in ("s4", "u4") and packed:
        moved = _run(proxy, dproxy, codes, None, nth)
        res = _packed_out(out, ddesc)
        _lowbit.pack(data_address(moved), data_address(res), ddesc.nelems, nth)
        return res
    if out is not None:
        check_out(out, ddesc)
        _run(proxy, dproxy, codes, out.view(proxy.dtype.storage), nth)
        return out
    return _run(proxy, dproxy, codes, None, nth).view(ddesc.dtype.storage)


# ---------------------------------------------------------------------------------------------
# quantize(): scales and zero points computed per group

def group_scales(f, dims, dtype, group_size, symmetric, scale_dtype):
    """Per-group scales and zero points from logical f32 data (…, K, N): groups of
    `group_size` consecutive K per column. Symmetric: scale = absmax / qmax (qmax: 7 s4, 127
    s8, 448 e4m3, 57344 e5m2), zero point none (u4/u8: the middle, 8 / 128). Asymmetric
    (integers only): lo = min(min, 0), hi = max(max, 0), scale = (hi - lo) / (qmax - qmin),
    zp = clamp(round_half_even(qmin - lo / scale), qmin, qmax). A group of zeros gets scale 1.
    All in f32; the scales are rounded to `scale_dtype` before the data is quantized with them."""
    K, N = dims[-2], dims[-1]
    lead = dims[:-2]
    G = group_size
    w = f.reshape(*lead, K // G, G, N)
    name = dtype.name
    if name.startswith("f8"):
        if not symmetric:
            raise ReorderError(f"{name} quantization is symmetric (no zero point); pass "
                               f"symmetric=True")
        amax = np.max(np.abs(w), axis=-2)
        scale = amax / np.float32(F8_MAX[name])
        zp = None
    elif symmetric:
        qmax = {"s4": 7, "u4": 7, "s8": 127, "u8": 127}[name]
        scale = np.max(np.abs(w), axis=-2) / np.float32(qmax)
        zp = None if name in ("s4", "s8") else np.full(scale.shape, 8 if name == "u4" else 128)
    else:
        qmin, qmax = INT_RANGE[name]
        lo = np.minimum(np.min(w, axis=-2), np.float32(0))
        hi = np.maximum(np.max(w, axis=-2), np.float32(0))
        scale = (hi - lo) / np.float32(qmax - qmin)
        zp = None
    scale = np.where((scale == 0) | ~np.isfinite(scale), np.float32(1), scale).astype(np.float32)
    if scale_dtype.name != "f32":
        scale = scale.astype(scale_dtype.storage).astype(np.float32)
    if not symmetric and zp is None:
        qmin, qmax = INT_RANGE[name]
        zp = np.clip(np.rint(np.float32(qmin) - lo / scale), qmin, qmax)
    return scale, (None if zp is None else zp.astype(np.int32))


def quantize_lowbit(arr, sdesc, ddesc, *, group_size, symmetric, scale_dtype, zp_dtype,
                    dst_scales, dst_zero_point, packed, src_packed, out, threads):
    dims = sdesc.dims
    name = ddesc.dtype.name
    if name not in CODE_TYPES:
        raise ReorderError(f"quantize(dtype={name!r}): expected one of {', '.join(CODE_TYPES)}")
    if len(dims) < 2:
        raise ReorderError(f"grouped quantization needs a tensor of 2 or more dims (..., K, N), "
                           f"got dims {_fmt(dims)}")
    K = dims[-2]
    G = K if group_size is None else group_size
    if isinstance(G, bool) or not isinstance(G, numbers.Integral) or G < 1:
        raise ReorderError(f"group_size must be a positive integer, got {group_size!r}")
    if K % G:
        raise ReorderError(f"group_size={G} does not divide K={K} (dim "
                           f"{'abcdefghijkl'[len(dims) - 2]} of {_fmt(dims)}); oneDNN requires the "
                           f"group size to divide the dim")
    scale_dtype = as_dtype(scale_dtype)
    if scale_dtype.name not in SCALE_DTYPES:
        raise ReorderError(f"scale_dtype={scale_dtype.name}: scales are f32, bf16 or f16")
    mask = (1 << len(dims)) - 1
    if dst_scales is None:
        f, row_off, logical = to_logical_f32(arr, sdesc, None, src_packed, threads)
        if not logical:                      # an f32 source in place: its statistics need C order
            f = _run(sdesc, Desc(dims, "f32"), bind_source(arr, sdesc), None, _threads(threads, 0))
            row_off = np.arange(math.prod(dims[:-1]), dtype=np.int64) * dims[-1]
        scales, zps = group_scales(f.reshape(dims), dims, ddesc.dtype, G, symmetric, scale_dtype)
        if dst_zero_point is not None:
            raise ReorderError("give dst_zero_point= together with dst_scales=, or neither")
    else:
        scales, zps = dst_scales, dst_zero_point
        f = None
    dq = Quant("dst", dims, scales, zps, mask, (G, 1))
    if f is None:
        f, row_off, _ = to_logical_f32(arr, sdesc, None, src_packed, threads)
    data = quantize_to(f, row_off, dims, ddesc, dq, packed, out, threads)
    sc_out = dq.scales.reshape(dq.qdims)
    if scale_dtype.name != "f32":
        sc_out = sc_out.astype(scale_dtype.storage)
    zp_out = None
    if dq.zero_points is not None:
        zt = as_dtype(zp_dtype) if zp_dtype is not None else None
        if zt is None:
            zt = as_dtype({"s4": "s8", "u4": "u8", "s8": "s8", "u8": "u8"}.get(name, "s32"))
        if zt.name not in ZP_DTYPES:
            raise ReorderError(f"zp_dtype={zt.name}: zero points are {', '.join(ZP_DTYPES)}")
        z = dq.zero_points.reshape(dq.qdims)
        zp_out = z.astype(np.int8 if zt.name in ("s8", "s4") else np.uint8 if zt.name in ("u8", "u4")
                          else np.int32)
        if zt.name in ("s4", "u4"):
            zp_out = zp_out.view(zt.storage) if zt.storage.itemsize == 1 else zp_out
    return QuantizedLowBit(data, sc_out, zp_out, ddesc, G, mask, (G, 1))
