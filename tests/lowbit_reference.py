"""A slow, independent reference for the low-bit types, written from oneDNN's rules as
docs/int8.md cites them (float8.cpp, float16.hpp, utils.hpp nibble2_t, ref_io_helper.hpp,
reorder.cpp / simple_reorder.hpp for groups). It never imports the ``reorder`` package.

f8 values are found by searching the format's own grid (every code decoded from its
definition), not by bit tricks: nearest grid value, ties to the even code.
"""
import math

import numpy as np

from reorder.testing.reference import offsets_of_all


def _grid(ebits, mbits, bias):
    """(code, value) of every finite non-negative code of a 1-sign-bit float8 format."""
    out = []
    for code in range(128):
        e, m = code >> mbits, code & ((1 << mbits) - 1)
        if e == 0:
            v = m * 2.0 ** (1 - bias - mbits)
        else:
            v = (1 + m / 2 ** mbits) * 2.0 ** (e - bias)
        out.append((code, v))
    return out


# e4m3 ("fn"): no inf; 0x7f / 0xff are NaN. e5m2: 0x7c inf, 0x7d..0x7f NaN.
E4M3 = [(c, v) for c, v in _grid(4, 3, 7) if c != 0x7f]
E5M2 = [(c, v) for c, v in _grid(5, 2, 15) if c < 0x7c]


def decode(code, fmt):
    """Value of one f8 code (NaN for NaN codes)."""
    s = -1.0 if code & 0x80 else 1.0
    c = code & 0x7f
    if fmt == "e4m3":
        if c == 0x7f:
            return math.nan
        return s * dict(E4M3)[c]
    if c == 0x7c:
        return s * math.inf
    if c > 0x7c:
        return math.nan
    return s * dict(E5M2)[c]


def decode_bits(code, fmt):
    """f32 bits oneDNN produces for an f8 code: the value, or for NaN the f16 NaN it goes
    through (e5m2: the code's top bits, quiet bit set; e4m3: f16 0x7e00) widened to f32."""
    sign = 0x80000000 if code & 0x80 else 0
    v = decode(code, fmt)
    if math.isnan(v):
        if fmt == "e4m3":
            return sign | 0x7fc00000
        mant = (code | 0x02) & 0x03
        return sign | 0x7f800000 | (mant << 21)
    return int(np.array(v, np.float32).view(np.uint32))


def _nearest(a, grid, overflow_code):
    """Code of the grid value nearest to a >= 0, ties to the even code; `overflow_code` is the
    code one step past the grid (its value: the next power-of-two step)."""
    best = None
    for c, v in grid:
        d = abs(a - v)
        if best is None or d < best[1] or (d == best[1] and c % 2 == 0):
            best = (c, d)
    return best[0]


def encode(x, fmt):
    """One f32 value -> f8 code by oneDNN's rules: first to f16 (IEEE, half to even,
    overflow to inf), then to the f8 grid, half to even. e4m3: |v| > 464 (the midpoint past
    448), inf and NaN -> NaN with the sign. e5m2: overflow -> inf; NaN keeps the f16 NaN's top
    bits (quiet bit set)."""
    x = np.float32(x)
    bits = int(np.array(x, np.float32).view(np.uint32))
    sign = 0x80 if bits >> 31 else 0
    if np.isnan(x):
        if fmt == "e4m3":
            return sign | 0x7f
        return sign | 0x7c | 0x02 | ((bits >> 21) & 1)
    with np.errstate(over="ignore"):
        h = float(np.float16(x))            # IEEE round half to even
    a = abs(h)
    if fmt == "e4m3":
        if a > 464.0:
            return sign | 0x7f
        return sign | _nearest(a, E4M3, None)
    if math.isinf(a):
        return sign | 0x7c
    # past the largest finite e5m2 (57344) the next step would be 65536: that is inf
    grid = E5M2 + [(0x7c, 65536.0)]
    return sign | _nearest(a, grid, None)


def reorder_encode(x, fmt):
    """encode() as oneDNN's reorder applies it: the value is first computed in f32 as
    x * scale + dst zero point (0 when none), so -0.0 arrives as +0.0
    (src/cpu/reorder/simple_reorder.hpp, the reference reorder that runs f8)."""
    with np.errstate(invalid="ignore"):            # a signalling NaN is made quiet, as in C
        return encode(np.float32(np.float32(x) + np.float32(0)), fmt)


def reorder_decode_bits(code, fmt):
    """decode_bits() as oneDNN's reorder applies it: the f32 result gets + dst zero point (0),
    so the code of -0.0 gives +0.0."""
    bits = decode_bits(code, fmt)
    with np.errstate(invalid="ignore"):
        v = np.array([bits], np.uint32).view(np.float32) + np.float32(0)
    return int(v.view(np.uint32)[0])


def int_code(v, lo, hi, unsigned):
    """f32 value -> integer code: clamp (NaN -> hi for signed, lo for unsigned: the order
    min(hi, v) then max(lo, v), u: max first), then round half to even."""
    v = np.float32(v)
    if np.isnan(v):
        return lo if unsigned else hi
    v = min(max(float(v), lo), hi)
    return int(np.rint(v))


def scale_index(idx, dims, mask, groups):
    """oneDNN's quant entry of logical index idx: masked dims kept, the last two divided by
    their groups, row-major over those quant dims."""
    nd = len(dims)
    qd = [dims[d] if mask >> d & 1 else 1 for d in range(nd)]
    qi = [idx[d] if mask >> d & 1 else 0 for d in range(nd)]
    qd[-2] //= groups[0]
    qd[-1] //= groups[1]
    qi[-2] //= groups[0]
    qi[-1] //= groups[1]
    off = 0
    for d in range(nd):
        off = off * qd[d] + qi[d]
    return off


def quantize_ref(x_logical, dims, code, inv=None, zp=None, mask=0, groups=(1, 1)):
    """Logical f32 tensor -> integer / f8 codes (flat, C order): v = x * inv[i] + zp[i] in f32."""
    lo, hi = {"s4": (-8, 7), "u4": (0, 15), "s8": (-128, 127), "u8": (0, 255)}.get(code, (0, 0))
    out = np.zeros(int(np.prod(dims)), np.int64)
    flat = np.asarray(x_logical, np.float32).reshape(-1)
    for n, idx in enumerate(np.ndindex(*dims)):
        v = flat[n]
        i = scale_index(idx, dims, mask, groups) if len(dims) >= 2 else 0
        if inv is not None:
            v = np.float32(v * np.float32(inv[i]))
        v = np.float32(v + np.float32(0 if zp is None else zp[i]))
        if code.startswith("f8"):
            out[n] = encode(v, code[3:])
        else:
            out[n] = int_code(v, lo, hi, code[0] == "u")
    return out


def place(codes_logical, dims, tag):
    """One code a byte (int64 values) at each logical element's physical offset in `tag`;
    padding 0. Returns (int64 array of the physical elements)."""
    offs, grid = offsets_of_all(dims, tag)
    poffs, _ = offsets_of_all(dims, tag, padded=True)
    n = int(poffs.max()) + 1 if poffs.size else 0
    out = np.zeros(n, np.int64)
    out[offs] = np.asarray(codes_logical).reshape(-1)
    return out


def pack_nibbles(elems):
    """oneDNN's nibble order: element i of the buffer in byte i // 2, low nibble when i is
    even (nibble2_t(low, high)); an odd count leaves the last high nibble 0."""
    elems = np.asarray(elems, np.int64) & 0xF
    n = len(elems)
    out = np.zeros((n + 1) // 2, np.uint8)
    for i in range(n):
        out[i // 2] |= np.uint8(elems[i] << (4 * (i % 2)))
    return out


def unpack_nibbles(buf, n, signed):
    buf = np.asarray(buf, np.uint8)
    vals = [(int(buf[i // 2]) >> (4 * (i % 2))) & 0xF for i in range(n)]
    if signed:
        vals = [v - 16 if v >= 8 else v for v in vals]
    return np.array(vals, np.int64)
