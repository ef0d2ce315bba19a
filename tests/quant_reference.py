"""A slow, independent reference for converting reorders, quantization and int8 compensation.

Written from the layout spec (§1.3-§1.4: blocking and off_v; §3: reorder math and type
conversion; §4: s8s8 / zero-point compensation and where it is stored), with plain numpy.
It never imports the `reorder` package and shares no code with it.

Conventions (the ones `reorder` documents):
* arithmetic in f32, in oneDNN's order:
      v = src_scale * (src - src_zp); v += beta * dst_old; v = v * (1/dst_scale) + dst_zp;
      v *= scale_adjust
  where 1/dst_scale is computed in f32 (oneDNN's jit:uni multiplies by the reciprocal);
* integers: saturate to [lo, hi] (s32 hi = 2147483520), then round half to even; NaN gives
  the bound oneDNN's x64 kernels give: 127 for s8, 0 for u8, 2147483520 for s32;
* f16: numpy's astype(float16); bf16: round half to even on the upper 16 bits, f32 denormals
  flushed to signed zero, NaN made quiet;
* f64 values pass through f32.
Only abstract tags are understood here ("abcd", "aBcd16b", "ABcd4b16a4b", "BA16a64b4a").
bf16 values travel as uint16 bit patterns.
"""
import math

import numpy as np

LETTERS = "abcdefghijkl"

NUMPY = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": np.uint16,
         "s8": np.int8, "u8": np.uint8, "s32": np.int32}
BOUNDS = {"s8": (-128.0, 127.0), "u8": (0.0, 255.0), "s32": (-2147483648.0, 2147483520.0)}


def bits(a):
    """The elements of `a` flat, as unsigned integers of their size: results compared through
    it must match bit for bit (NaN payloads and signed zeros included)."""
    a = np.asarray(a)
    return a.reshape(-1).view(f"u{a.dtype.itemsize}")


# ---------------------------------------------------------------------------------------------
# layouts

def parse(tag):
    """Abstract tag -> (outer dims in memory order, inner blocks as (size, dim) outermost
    first)."""
    i = 0
    outer = []
    while i < len(tag) and tag[i].isalpha():
        outer.append(LETTERS.index(tag[i].lower()))
        i += 1
    blocks = []
    while i < len(tag):
        j = i
        while tag[j].isdigit():
            j += 1
        blocks.append((int(tag[i:j]), LETTERS.index(tag[j])))
        i = j + 1
    assert sorted(outer) == list(range(len(outer))), tag
    return outer, blocks


def blocking(dims, tag):
    """(padded dims, outer strides, inner blocks) of a dense tag-built layout (§1.3)."""
    outer, blocks = parse(tag)
    blocks = [(s, d) for s, d in blocks if s != 1]
    blk = [1] * len(dims)
    for s, d in blocks:
        blk[d] *= s
    padded = [-(-n // b) * b for n, b in zip(dims, blk)]
    strides = [0] * len(dims)
    stride = math.prod(s for s, _ in blocks)
    for d in reversed(outer):
        strides[d] = stride
        if padded[d]:
            stride *= padded[d] // blk[d]
    return padded, strides, blocks


def offsets(dims, tag, idx):
    """off_v (§1.4) of index arrays `idx` (one per dim, padded coordinates allowed)."""
    _, strides, blocks = blocking(dims, tag)
    p = [np.asarray(v, dtype=np.int64).copy() for v in idx]
    off = np.zeros(np.broadcast(*p).shape, dtype=np.int64)
    bs = 1
    for size, d in reversed(blocks):
        off += (p[d] % size) * bs
        p[d] = p[d] // size
        bs *= size
    for d, s in enumerate(strides):
        off += p[d] * s
    return off


def nelems(dims, tag):
    return math.prod(blocking(dims, tag)[0])


def trim_tag(tag, mask):
    """benchdnn's trim_tag_by_mask: drop the letters (and blocks) of unmasked dims, then
    relabel the kept dims a, b, ... in order."""
    outer, blocks = parse(tag)
    keep = [d for d in range(len(outer)) if mask >> d & 1]
    new = {d: LETTERS[i] for i, d in enumerate(keep)}
    blocked = {d for s, d in blocks if s != 1}
    out = "".join(new[d].upper() if d in blocked else new[d] for d in outer if d in new)
    out += "".join(f"{s}{new[d]}" for s, d in blocks if d in new and s != 1)
    return out


def logical_grid(dims):
    return [g.reshape(-1) for g in np.indices(dims, dtype=np.int64)] if dims else []


# ---------------------------------------------------------------------------------------------
# type conversion (§3.3)

def to_f32(values, dt):
    v = np.asarray(values)
    if dt == "bf16":
        return (v.astype(np.uint32) << 16).view(np.float32)
    if dt == "f16":
        # as vcvtph2ps: exact, and a signalling NaN comes out quiet (numpy keeps it signalling)
        f = v.astype(np.float32).view(np.uint32)
        return np.where(np.isnan(v), f | 0x00400000, f).astype(np.uint32).view(np.float32)
    return v.astype(np.float32)


def f32_to_bf16_bits(v):
    x = np.asarray(v, dtype=np.float32).view(np.uint32).astype(np.uint64)
    exp = x & 0x7F800000
    mant = x & 0x007FFFFF
    rne = ((x + 0x7FFF + ((x >> 16) & 1)) >> 16) & 0xFFFF
    out = np.where(exp == 0, (x >> 16) & 0x8000,
                   np.where(exp == 0x7F800000,
                            np.where(mant != 0, (x >> 16) | 0x40, x >> 16), rne))
    return out.astype(np.uint16)


def from_f32(v, dt):
    v = np.asarray(v, dtype=np.float32)
    if dt == "f32":
        return v.copy()
    if dt == "f64":
        return v.astype(np.float64)
    if dt == "f16":
        with np.errstate(over="ignore"):
            h = v.astype(np.float16)
        # numpy keeps a signalling NaN signalling; the conversion instruction (vcvtps2ph)
        # and the library make every NaN quiet, keeping the top payload bits
        return np.where(np.isnan(h), h.view(np.uint16) | 0x0200, h.view(np.uint16)).view(np.float16)
    if dt == "bf16":
        return f32_to_bf16_bits(v)
    lo, hi = BOUNDS[dt]
    v = np.where(np.isnan(v), np.float32(lo if dt == "u8" else hi), v)
    v = np.clip(v, np.float32(lo), np.float32(hi))
    return np.rint(v).astype(np.int64).astype(NUMPY[dt])


# ---------------------------------------------------------------------------------------------
# the reorder

def scale_values(dims, mask, values, idx):
    """Scale at every logical index: the scales form a row-major tensor over the masked
    dims of src (§3.2)."""
    values = np.asarray(values, dtype=np.float32).reshape(-1)
    k = np.zeros(idx[0].shape if idx else (), dtype=np.int64)
    for d in range(len(dims)):
        if mask >> d & 1:
            k = k * dims[d] + idx[d]
    return values[k]


def ref_reorder(src_flat, dims, stag, dtag, sdt, ddt, *, src_scales=None, src_mask=0,
                dst_scales=None, dst_mask=0, src_zp=None, dst_zp=None, beta=None,
                dst_old=None, scale_adjust=1.0, comp=(), comp_mask=0):
    """Returns (dst_flat, s8s8 or None, zp or None). src_flat/dst_old: flat buffers of the
    tags' padded sizes in the NUMPY storage type of their dtypes."""
    idx = logical_grid(dims)
    n_dst = nelems(dims, dtag)
    dst = np.zeros(n_dst, dtype=NUMPY[ddt])
    if math.prod(dims) == 0:
        return dst, None, None
    s_off = offsets(dims, stag, idx)
    d_off = offsets(dims, dtag, idx)
    v = to_f32(np.asarray(src_flat)[s_off], sdt)
    if src_zp is not None:
        v = v - np.float32(src_zp)
    if src_scales is not None:
        v = v * scale_values(dims, src_mask, src_scales, idx)
    if beta is not None:
        v = v + np.float32(beta) * to_f32(np.asarray(dst_old)[d_off], ddt)
    if dst_scales is not None:
        inv = np.float32(1) / np.asarray(dst_scales, dtype=np.float32)
        v = v * scale_values(dims, dst_mask, inv, idx)
    if dst_zp is not None:
        v = v + np.float32(dst_zp)
    if scale_adjust != 1.0:
        v = v * np.float32(scale_adjust)
    q = from_f32(v, ddt)
    dst[d_off] = q
    s8s8 = zp = None
    if comp:
        assert ddt == "s8"
        cdims = [dims[d] for d in range(len(dims)) if comp_mask >> d & 1]
        ctag = trim_tag(dtag, comp_mask)
        c_off = offsets(cdims, ctag, [idx[d] for d in range(len(dims)) if comp_mask >> d & 1])
        sums = np.zeros(nelems(cdims, ctag), dtype=np.int64)
        np.add.at(sums, c_off, q.astype(np.int64))
        wrap = lambda a: ((a + 2**31) % 2**32 - 2**31).astype(np.int32)   # int32 arithmetic
        if "s8s8" in comp:
            s8s8 = wrap(-128 * sums)
        if "zp" in comp:
            zp = wrap(-sums)
    return dst, s8s8, zp


def place(values_logical, dims, tag, dt, fill=0):
    """Flat buffer in `tag` holding `values_logical` (row-major over dims); padding = fill."""
    buf = np.full(nelems(dims, tag), fill, dtype=NUMPY[dt])
    if math.prod(dims):
        buf[offsets(dims, tag, logical_grid(dims))] = np.asarray(values_logical).reshape(-1)
    return buf


# ---------------------------------------------------------------------------------------------
# benchdnn-style inputs (§6.2)

def dt_max_min(dt):
    return {"f32": (2.0**24, -2.0**24), "f64": (2.0**24, -2.0**24), "bf16": (2.0**24, -2.0**24),
            "f16": (65504.0, -65504.0), "s8": (127, -128), "u8": (255, 0),
            "s32": (2147483520, -2147483520)}[dt]


def benchdnn_fill(n, dt):
    """n logical values cycling through {max, min, 0, .25, .5, 1, 1.5, 2, 16, 64}; every other
    cycle the small values are negated (except for u8), so negative ties occur too. Returned
    in the dtype's storage (bf16 as bits)."""
    hi, lo = dt_max_min(dt)
    gen = np.array([hi, lo, 0, .25, .5, 1, 1.5, 2, 16, 64], dtype=np.float64)
    i = np.arange(n)
    v = gen[i % 10]
    if dt != "u8":
        neg = ((i // 10) % 2 == 1) & (i % 10 >= 2)
        v = np.where(neg, -v, v)
    if dt in ("s8", "u8", "s32"):
        return np.trunc(v).astype(NUMPY[dt])
    if dt == "bf16":
        return f32_to_bf16_bits(v.astype(np.float32))
    return v.astype(NUMPY[dt])


def per_dim_scales(n):
    """benchdnn's per-dim scale values {1/16, 1/8, 1/4}, cycling."""
    return np.array([1 / 16, 1 / 8, 1 / 4], dtype=np.float32)[np.arange(n) % 3]


def random_values(n, dt, rng):
    """Random values exactly representable in dt (for sum's old destination)."""
    if dt in ("s8", "u8", "s32"):
        lo, hi = {"s8": (-128, 128), "u8": (0, 256), "s32": (-1000, 1000)}[dt]
        return rng.integers(lo, hi, n).astype(NUMPY[dt])
    v = (rng.integers(-64, 65, n) / 4).astype(np.float32)
    if dt == "bf16":
        return f32_to_bf16_bits(v)
    return v.astype(NUMPY[dt])
