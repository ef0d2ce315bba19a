"""Low-bit sources read back to f32 / bf16 / f16: s4/u4 (packed two a byte or one a byte as
ml_dtypes int4/uint4), f8 and s8/u8 with grouped scales and zero points, from plain rows and from
tiled layouts (BA16a64b4a, BA8a32b2a, AB16b16a, ...) and from the layouts that take the
multi-pass way. Every result is checked against the independent reference: the codes are
placed with the reference's offsets, and v = scale * (code - zp) is computed per element in
numpy f32."""
import numpy as np
import pytest

ml_dtypes = pytest.importorskip("ml_dtypes")

import reorder as ro
from reorder import _lowbit
from lowbit_reference import decode_bits, pack_nibbles, place, scale_index
from simd_paths import lowbit_rows


rows = lowbit_rows()


RANGE = {"s4": (-8, 7), "u4": (0, 15), "s8": (-128, 127), "u8": (0, 255)}


def _codes(dt, dims, seed):
    """Random codes of dt (ints for integer types, raw bytes for f8), every extreme included."""
    rng = np.random.default_rng(seed)
    n = int(np.prod(dims))
    if dt.startswith("f8"):
        c = rng.integers(0, 256, n)
        c[:4] = [0x80, 0x7F, 0xFF, 0x01][:n] if n >= 4 else c[:4]
        return c.astype(np.int64)
    lo, hi = RANGE[dt]
    c = rng.integers(lo, hi + 1, n)
    c[: min(n, 2)] = [lo, hi][: min(n, 2)]
    return c.astype(np.int64)


def _value(dt, code):
    if dt.startswith("f8"):
        return np.array([decode_bits(int(code), dt[3:])], np.uint32).view(np.float32)[0]
    return np.float32(code)


def want_f32(codes, dims, dt, sc=None, zp=None, mask=0, groups=(1, 1)):
    """v = scale * (code - zp) + 0 in f32, element by element, in logical C order."""
    out = np.empty(len(codes), np.float32)
    scf = None if sc is None else np.asarray(sc, np.float32).reshape(-1)
    zpf = None if zp is None else np.asarray(zp).astype(np.float32).reshape(-1)
    for n, idx in enumerate(np.ndindex(*dims)):    # NaN * scale keeps the NaN's sign and payload
        v = _value(dt, codes[n])
        i = scale_index(idx, dims, mask, groups) if len(dims) >= 2 and mask else 0
        if zpf is not None:
            v = np.float32(v - zpf[i])
        if scf is not None:
            v = np.float32(scf[i] * v)
        out[n] = np.float32(v + np.float32(0))
    return out.reshape(dims)


def source(codes, dims, tag, dt, packed):
    """The source buffer in `tag` from the reference's placement (padding 0)."""
    placed = place(codes, dims, tag)
    if dt in ("s4", "u4") and packed:
        return pack_nibbles(placed)
    if dt == "s4":
        return placed.astype(np.int8).view(ml_dtypes.int4)
    if dt == "u4":
        return placed.astype(np.uint8).view(ml_dtypes.uint4)
    if dt.startswith("f8"):
        mt = ml_dtypes.float8_e4m3fn if dt == "f8_e4m3" else ml_dtypes.float8_e5m2
        return placed.astype(np.uint8).view(mt)
    return placed.astype(np.int8 if dt == "s8" else np.uint8)


def same_bits(got, want):
    got = np.asarray(got, np.float32)
    assert got.shape == want.shape
    bad = got.view(np.uint32) != want.view(np.uint32)
    assert not bad.any(), f"{int(bad.sum())} of {bad.size} differ, first at " \
                          f"{np.argwhere(bad)[0].tolist()}: {got[bad][0]} != {want[bad][0]}"


@pytest.fixture
def fused_calls(monkeypatch):
    """The one-pass kernels that ran (the real ones, counted)."""
    calls = []
    for name in ("dequant_tiles", "dequant_plain"):
        real = getattr(_lowbit, name)

        def spy(*a, _real=real, _name=name, **k):
            calls.append(_name)
            return _real(*a, **k)
        monkeypatch.setattr(_lowbit, name, spy)
    return calls


# tiles over the last two dims: X = 4 and X = 2 nibble tiles take the vector unpack, the others
# the table; ba, Ab4a and aB3b the multi-pass way
ONE_PASS = {"ab": "dequant_plain", "BA16a64b4a": "dequant_tiles", "BA8a32b2a": "dequant_tiles",
            "AB16b16a": "dequant_tiles", "BA4b8a2b": "dequant_tiles"}
TAGS = list(ONE_PASS) + ["ba", "Ab4a", "aB3b"]
DIMS = [(7, 5), (33, 65), (130, 3), (1, 1), (64, 128), (17, 97)]


@pytest.mark.parametrize("packed", [True, False])
@pytest.mark.parametrize("dt", ["s4", "u4"])
@pytest.mark.parametrize("tag", TAGS)
@pytest.mark.parametrize("dims", DIMS)
def test_int4_back_to_f32(rows, fused_calls, dims, tag, dt, packed):
    codes = _codes(dt, dims, hash((dims, tag, dt)) % 2**32)
    x = source(codes, dims, tag, dt, packed)
    got = ro.reorder(x, tag, "ab", dims=dims, src_dtype=dt if packed else None, dtype="f32")
    same_bits(got, want_f32(codes, dims, dt))
    assert fused_calls == ([ONE_PASS[tag]] if tag in ONE_PASS else [])


GROUPED = [((64, 40), (32, 1), 3), ((96, 37), (3, 1), 3), ((48, 64), (1, 16), 3),
           ((32, 130), (8, 2), 3), ((40, 33), (1, 1), 2), ((40, 33), (1, 1), 1)]


@pytest.mark.parametrize("dt", ["s4", "u4", "s8", "u8", "f8_e4m3", "f8_e5m2"])
@pytest.mark.parametrize("tag", ["ab", "BA16a64b4a", "AB16b16a", "ba"])
@pytest.mark.parametrize("dims,groups,mask", GROUPED)
def test_scales_and_zero_points(rows, dims, groups, mask, tag, dt):
    """Groups along K, along N and both; per-N and per-K scales without groups; zero points
    for the integer types (f8 takes scales only)."""
    rng = np.random.default_rng(hash((dims, groups, tag, dt)) % 2**32)
    codes = _codes(dt, dims, 5)
    qd = [dims[d] if mask >> d & 1 else 1 for d in range(2)]
    qd = (qd[0] // groups[0], qd[1] // groups[1])
    sc = rng.uniform(0.05, 2.0, qd).astype(np.float32)
    zp = None
    if not dt.startswith("f8"):
        zp = rng.integers(*{"s4": (-8, 8), "u4": (0, 16), "s8": (-20, 20), "u8": (0, 30)}[dt],
                          qd).astype(np.int8 if dt in ("s4", "s8") else np.uint8)
    x = source(codes, dims, tag, dt, True)
    kw = dict(src_scales=sc, src_zero_point=zp, src_scale_mask=mask)
    if groups != (1, 1):
        kw["src_groups"] = groups
    src_dtype = dt if dt in ("s4", "u4") else None
    got = ro.reorder(x, tag, "ab", dims=dims, src_dtype=src_dtype, dtype="f32", **kw)
    same_bits(got, want_f32(codes, dims, dt, sc, zp, mask, groups))


@pytest.mark.parametrize("threads", [1, 2, 3])
@pytest.mark.parametrize("tag,dims", [("BA16a64b4a", (3, 48, 200)), ("ab", (5, 32, 77)),
                                      ("AB16b16a", (2, 40, 70))])
def test_leading_dims_threads_and_out(rows, fused_calls, threads, tag, dims):
    """Three-dim sources (the tiles repeat over the leading dim), the work split over threads,
    written into out= (a preset buffer, every element overwritten)."""
    btag = {"BA16a64b4a": "aCB16b64c4b", "ab": "abc", "AB16b16a": "aBC16c16b"}[tag]
    codes = _codes("s4", dims, 9)
    G = 8
    sc = np.random.default_rng(1).uniform(0.1, 1, dims[:-2] + (dims[-2] // G, dims[-1])) \
        .astype(np.float32)
    x = source(codes, dims, btag, "s4", True)
    out = np.full(dims, np.nan, np.float32)
    got = ro.reorder(x, btag, "abc", dims=dims, src_dtype="s4", dtype="f32", src_scales=sc,
                     src_groups=(G, 1), out=out, threads=threads)
    assert got is out
    same_bits(out, want_f32(codes, dims, "s4", sc, None, 7, (G, 1)))
    assert fused_calls == ["dequant_plain" if tag == "ab" else "dequant_tiles"]


@pytest.mark.parametrize("dt", ["bf16", "f16"])
@pytest.mark.parametrize("tag", ["BA16a64b4a", "ab", "AB16b16a"])
def test_half_destinations(rows, tag, dt):
    """bf16 / f16 results: the f32 values rounded (half to even), as the f32 -> bf16 reorder."""
    dims = (50, 70)
    codes = _codes("u4", dims, 3)
    sc = np.random.default_rng(4).uniform(0.01, 3, (dims[0] // 10, dims[1])).astype(np.float32)
    x = source(codes, dims, tag, "u4", True)
    got = ro.reorder(x, tag, "ab", dims=dims, src_dtype="u4", dtype=dt, src_scales=sc,
                     src_groups=(10, 1))
    f = want_f32(codes, dims, "u4", sc, None, 3, (10, 1))
    want = f.astype(ml_dtypes.bfloat16) if dt == "bf16" else f.astype(np.float16)
    assert np.array_equal(np.asarray(got).view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("dims", [(0, 5), (4, 0), (0, 0)])
@pytest.mark.parametrize("tag", ["ab", "BA16a64b4a"])
def test_zero_size(dims, tag):
    x = np.zeros(0, np.uint8)
    got = ro.reorder(x, tag, "ab", dims=dims, src_dtype="s4", dtype="f32")
    assert got.shape == dims


def test_input_untouched_and_bad_buffers():
    dims = (32, 64)
    codes = _codes("s4", dims, 2)
    x = source(codes, dims, "BA16a64b4a", "s4", True)
    keep = x.copy()
    ro.reorder(x, "BA16a64b4a", "ab", dims=dims, src_dtype="s4", dtype="f32")
    assert np.array_equal(x, keep)
    with pytest.raises(ro.ReorderError, match=r"holds 4096 values in 2048 bytes"):
        ro.reorder(x[:-1].copy(), "BA16a64b4a", "ab", dims=dims, src_dtype="s4", dtype="f32")
    with pytest.raises(ro.ReorderError, match="flat contiguous uint8 buffer"):
        ro.reorder(x.reshape(2, -1), "BA16a64b4a", "ab", dims=dims, src_dtype="s4", dtype="f32")
    with pytest.raises(ro.ReorderError, match="out has shape"):
        ro.reorder(x, "BA16a64b4a", "ab", dims=dims, src_dtype="s4", dtype="f32",
                   out=np.empty((64, 32), np.float32))
    bad = source(codes, dims, "BA16a64b4a", "s4", False).view(np.int8).copy()
    bad[5] = 16
    with pytest.raises(ro.ReorderError, match="outside"):
        ro.reorder(bad.view(ml_dtypes.int4), "BA16a64b4a", "ab", dims=dims, dtype="f32")


@pytest.mark.parametrize("align", [0, 4, 12, 20, 36, 60])
@pytest.mark.parametrize("tag,dims", [("BA16a64b4a", (40, 200)), ("ab", (9, 37)),
                                      ("AB16b16a", (33, 50))])
def test_streaming_stores_into_out(rows, monkeypatch, tag, dims, align):
    """A result the caller gives, at or above the streaming threshold (set to 0 here), is
    written with streaming stores: rows that start off a 32-byte boundary get a scalar head."""
    from reorder.quant import lowbit
    monkeypatch.setattr(lowbit, "STREAM_MIN_BYTES", 0)
    codes = _codes("u4", dims, 11)
    x = source(codes, dims, tag, "u4", True)
    n = int(np.prod(dims))
    raw = np.zeros(n * 4 + 128, np.uint8)
    start = (-raw.ctypes.data) % 32 + align
    out = raw[start:start + n * 4].view(np.float32).reshape(dims)
    out[...] = np.nan
    ro.reorder(x, tag, "ab", dims=dims, src_dtype="u4", dtype="f32", out=out)
    same_bits(out, want_f32(codes, dims, "u4"))


_WANT = {}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("tag,dt,dims", [("BA64a64b4a", "s4", (72, 4200)),
                                         ("aCB8b32c2b", "u4", (2, 24, 4200))])
@pytest.mark.slow                   # strips of 4200 columns through the element-wise reference
def test_wide_strips(rows, fused_calls, threads, tag, dt, dims):
    """A strip's tiles are unpacked through a stage of at most 262144 bytes: 4096 columns of
    64-row tiles, so 72 x 4200 has a run cut at 4096 columns, a right-edge tile cut at 40
    columns and a strip cut by the end of K; 2 x 24 x 4200 in 8-row tiles (X = 2) has strips
    in each of its two matrices. Groups of 8 along K, with zero points."""
    G = 8
    codes = _codes(dt, dims, 31)
    sdims = dims[:-2] + (dims[-2] // G, dims[-1])
    sc = np.random.default_rng(32).uniform(0.1, 1, sdims).astype(np.float32)
    zp = np.random.default_rng(33).integers(0 if dt == "u4" else -3, 4, sdims).astype(np.int8)
    mask = (1 << len(dims)) - 1
    x = source(codes, dims, tag, dt, True)
    got = ro.reorder(x, tag, "abc"[:len(dims)], dims=dims, src_dtype=dt, dtype="f32",
                     src_scales=sc, src_zero_point=zp, src_groups=(G, 1), threads=threads)
    if tag not in _WANT:
        _WANT[tag] = want_f32(codes, dims, dt, sc, zp, mask, (G, 1))
    same_bits(got, _WANT[tag])
    assert fused_calls == ["dequant_tiles"]
