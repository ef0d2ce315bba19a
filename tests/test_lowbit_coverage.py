"""Low-bit reorders on the sources and options a deployer meets: strided, negative-stride,
offset and zero-size sources, bf16 / f16 sources, out=, 1 and 2 threads, per-channel zero
points without groups, scales per group along both dims; every result against the independent
reference in lowbit_reference.py, with the vector and the scalar rows."""
import numpy as np
import pytest

ml_dtypes = pytest.importorskip("ml_dtypes")

import reorder as ro
from lowbit_reference import pack_nibbles, place, quantize_ref
from simd_paths import lowbit_rows


rows = lowbit_rows()


def expected(x, tag, dt, sc=None, zp=None, mask=0, groups=(1, 1), packed=True):
    """The destination bytes from the reference: codes of the logical f32 values, placed in
    `tag` (padding 0), packed two a byte for s4/u4."""
    x = np.asarray(x, np.float32)
    inv = None if sc is None else (np.float32(1) / np.asarray(sc, np.float32)).reshape(-1)
    z = None if zp is None else np.asarray(zp).astype(np.float32).reshape(-1)
    codes = quantize_ref(x, x.shape, dt, inv, z, mask, groups)
    placed = place(codes, x.shape, tag)
    if dt in ("s4", "u4") and packed:
        return pack_nibbles(placed)
    return (placed & 0xFF).astype(np.uint8)


_EXPECTED = {}


def expected_once(key, *args, **kw):
    """expected(), computed once per key: the reference is slow (a Python loop per element)
    and the rows and threads variants of one case share it."""
    if key not in _EXPECTED:
        _EXPECTED[key] = expected(*args, **kw)
    return _EXPECTED[key]


def as_bytes(y):
    return np.asarray(y).view(np.uint8).reshape(-1)


def _big(shape, seed=0):
    return (np.random.default_rng(seed).standard_normal(shape) * 4).astype(np.float32)


SOURCES = {
    "strided": lambda b: b[::2, ::3],
    "negative": lambda b: b[::-1, ::-2],
    "offset": lambda b: b[3:40, 5:80],
    "transposed": lambda b: b.T[:50, :33],
}


@pytest.mark.parametrize("kind", list(SOURCES))
@pytest.mark.parametrize("tag,dt", [("BA16a64b4a", "s4"), ("ab", "f8_e4m3"), ("ab", "u4"),
                                    ("AB16b16a", "f8_e5m2"), ("ba", "s4")])
def test_views_as_sources(rows, kind, tag, dt):
    base = _big((70, 150), seed=len(kind))
    before = base.copy()
    x = SOURCES[kind](base)
    K = x.shape[0]
    G = next(g for g in (8, 5, 3, 1) if K % g == 0)
    sc = np.random.default_rng(1).uniform(0.2, 2, (K // G, x.shape[1])).astype(np.float32)
    zp = None if dt.startswith("f8") else np.random.default_rng(2).integers(
        0 if dt == "u4" else -2, 3, sc.shape).astype(np.int8)
    got = ro.reorder(x, "ab", tag, dtype=dt, dst_scales=sc, dst_zero_point=zp,
                     dst_groups=(G, 1))
    want = expected_once(("views", kind, tag, dt), np.ascontiguousarray(x), tag, dt, sc, zp, 3,
                         (G, 1))
    assert np.array_equal(as_bytes(got), want)
    assert np.array_equal(base, before)                  # the source is never written


@pytest.mark.parametrize("dims", [(0, 64), (16, 0), (0, 0)])
@pytest.mark.parametrize("tag,dt", [("BA16a64b4a", "s4"), ("ab", "f8_e4m3"), ("ab", "u4")])
def test_zero_size(dims, tag, dt):
    x = np.zeros(dims, np.float32)
    got = ro.reorder(x, "ab", tag, dtype=dt)
    assert as_bytes(got).size == expected(x, tag, dt).size


@pytest.mark.parametrize("src_dt", ["bf16", "f16"])
@pytest.mark.parametrize("tag,dt", [("BA16a64b4a", "s4"), ("ab", "f8_e4m3"), ("AB16b16a", "u4")])
def test_half_sources(rows, src_dt, tag, dt):
    x32 = _big((70, 130), seed=3)
    x = x32.astype(ml_dtypes.bfloat16 if src_dt == "bf16" else np.float16)
    exact = x.astype(np.float32)                         # both widen to f32 exactly
    sc = np.random.default_rng(4).uniform(0.2, 2, (7, 130)).astype(np.float32)
    got = ro.reorder(x, "ab", tag, dtype=dt, dst_scales=sc, dst_groups=(10, 1))
    want = expected_once(("half", src_dt, tag, dt), exact, tag, dt, sc, None, 3, (10, 1))
    assert np.array_equal(as_bytes(got), want)
    words = ro.reorder(x.view(np.uint16), "ab", tag, src_dtype=src_dt, dtype=dt,
                       dst_scales=sc, dst_groups=(10, 1))
    assert np.array_equal(as_bytes(words), as_bytes(got))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("G", [1, 2, 4, 32])
@pytest.mark.parametrize("tag,dt", [("BA16a64b4a", "s4"), ("BA16a64b4a", "u4"),
                                    ("BA8a32b2a", "s4"), ("ab", "f8_e4m3"), ("ab", "s4"),
                                    ("BA16a64b4a", "s8")])
def test_threads_against_reference(rows, threads, G, tag, dt):
    # 64 x 136: whole tiles and tiles cut at the right edge, several per thread
    x = _big((64, 136), seed=G)
    sc = np.random.default_rng(G + 1).uniform(0.1, 1, (64 // G, 136)).astype(np.float32)
    zp = None if dt.startswith("f8") else np.random.default_rng(G + 2).integers(
        0 if dt[0] == "u" else -3, 4, sc.shape).astype(np.int8)
    got = ro.reorder(x, "ab", tag, dtype=dt, dst_scales=sc, dst_zero_point=zp,
                     dst_groups=(G, 1), threads=threads)
    want = expected_once(("threads", G, tag, dt), x, tag, dt, sc, zp, 3, (G, 1))
    assert np.array_equal(as_bytes(got), want)


@pytest.mark.parametrize("tag", ["BA16a64b4a", "ab", "AB16b16a"])
def test_groups_along_both_dims(rows, tag):
    x = _big((64, 128), seed=9)
    sc = np.random.default_rng(10).uniform(0.1, 1, (16, 16)).astype(np.float32)
    zp = np.random.default_rng(11).integers(-2, 3, (16, 16)).astype(np.int8)
    got = ro.reorder(x, "ab", tag, dtype="s4", dst_scales=sc, dst_zero_point=zp,
                     dst_groups=(4, 8))
    assert np.array_equal(got, expected_once(("both", tag), x, tag, "s4", sc, zp, 3, (4, 8)))


@pytest.mark.parametrize("tag,dt", [("BA16a64b4a", "s4"), ("ab", "f8_e5m2"), ("ba", "u4"),
                                    ("AB16b16a", "s8")])
def test_out(rows, tag, dt):
    x = _big((40, 70), seed=12)
    want = expected_once(("out", tag, dt), x, tag, dt)
    fresh = ro.reorder(x, "ab", tag, dtype=dt)
    out = np.full_like(fresh, 0x5A) if fresh.dtype == np.uint8 else \
        np.full(fresh.shape, 0x5A, np.uint8).view(fresh.dtype)
    got = ro.reorder(x, "ab", tag, dtype=dt, out=out)
    assert got is out and np.array_equal(as_bytes(out), want)
    bad = np.zeros(as_bytes(fresh).size + 1, np.uint8)
    with pytest.raises(ro.ReorderError):
        ro.reorder(x, "ab", tag, dtype=dt, out=bad)


@pytest.mark.parametrize("tag", ["ab", "BA16a64b4a", "AB16b16a"])
@pytest.mark.parametrize("dt,mask", [("s8", 2), ("u8", 1), ("u4", 2), ("s4", 1)])
def test_per_channel_zero_points_without_groups(rows, tag, dt, mask):
    x = _big((48, 80), seed=13)
    n = x.shape[0] if mask == 1 else x.shape[1]
    sc = np.random.default_rng(14).uniform(0.1, 1, n).astype(np.float32)
    lo = 0 if dt[0] == "u" else -4
    zp = np.random.default_rng(15).integers(lo, lo + 8, n)     # int64, as np.array gives
    got = ro.reorder(x, "ab", tag, dtype=dt, dst_scales=sc, dst_scale_mask=mask,
                     dst_zero_point=zp)
    assert np.array_equal(as_bytes(got), expected_once(("zp", tag, dt, mask), x, tag, dt, sc,
                                                       zp, mask))
    # and back to f32 with the same per-channel source scales and zero points (s8/u8 sources
    # and packed s4/u4 both): v = scale * (q - zp)
    back = ro.reorder(got, tag, "ab", dims=x.shape, src_dtype=dt if dt in ("s4", "u4") else None,
                      dtype="f32", src_scales=sc, src_scale_mask=mask, src_zero_point=zp)
    q = quantize_ref(x, x.shape, dt, (np.float32(1) / sc).reshape(-1),
                     zp.astype(np.float32), mask).reshape(x.shape).astype(np.float32)
    shape = (-1, 1) if mask == 1 else (1, -1)
    assert np.array_equal(back, sc.reshape(shape) * (q - zp.astype(np.float32).reshape(shape)))


def test_result_type_is_exported():
    q = ro.quantize(_big((64, 16)), "ab", "ab", dtype="s4", group_size=32)
    assert isinstance(q, ro.QuantizedLowBit) and "QuantizedLowBit" in ro.__all__


def test_zero_point_out_of_s32():
    with pytest.raises(ro.ReorderError, match="do not fit in s32"):
        ro.reorder(_big((4, 4)), "ab", "ab", dtype="s8", dst_scales=np.ones(4, np.float32),
                   dst_scale_mask=2, dst_zero_point=np.array([0, 0, 0, 2**40]))


@pytest.mark.parametrize("tag,dt", [("BA16a64b4a", "s4"), ("ab", "u8"), ("AB16b16a", "s8")])
def test_common_zero_point_with_channel_scales(rows, tag, dt):
    # oneDNN keeps separate masks for scales and zero points; one zero point is common to all
    x = _big((32, 72), seed=16)
    sc = np.random.default_rng(17).uniform(0.1, 1, 72).astype(np.float32)
    got = ro.reorder(x, "ab", tag, dtype=dt, dst_scales=sc, dst_scale_mask=2, dst_zero_point=2,
                     dst_groups=(1, 1))
    want = expected_once(("common zp", tag, dt), x, tag, dt, sc, np.full(72, 2), 2)
    assert np.array_equal(as_bytes(got), want)


@pytest.mark.parametrize("tag", ["BA16a64b4a", "ab", "Ab4a"])
def test_quantize_out(tag):
    w = _big((64, 96), seed=18)
    q = ro.quantize(w, "ab", tag, dtype="s4", group_size=32)
    out = np.full(q.data.size, 0xA5, np.uint8)
    again = ro.quantize(w, "ab", tag, dtype="s4", group_size=32, out=out)
    assert again.data is out and np.array_equal(out, q.data)
    for bad in (np.zeros(q.data.size - 1, np.uint8), np.zeros(q.data.size, np.int8),
                np.zeros((2, q.data.size // 2), np.uint8)):
        with pytest.raises(ro.ReorderError, match="contiguous uint8 buffer"):
            ro.quantize(w, "ab", tag, dtype="s4", group_size=32, out=bad)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("tag,dt,dims", [("BA16a64b4a", "s4", (72, 4200)),
                                         ("BA64a64b4a", "s4", (72, 4200)),
                                         ("BA8a32b2a", "u4", (2, 24, 4200)),
                                         ("AB64b64a", "u4", (72, 4200)),
                                         ("AB64b64a", "f8_e4m3", (72, 4200))])
@pytest.mark.slow                   # strips of 4200 columns through the element-wise reference
def test_wide_strips_against_reference(rows, threads, tag, dt, dims):
    """BA{n}a{m}b{X}a nibble tiles are built a strip of n rows at a time, in runs of tiles at
    most 262144 bytes of codes wide (4096 columns for 64-row tiles): `4a` tiles straight from
    the registers, `2a` tiles through a staging buffer. 72 x 4200 in BA16a64b4a's 64-row
    tiles: a run cut at 4096 columns, a right-edge tile cut at 40 columns, a strip cut by the
    end of K (BA64a64b4a's tiles are 256 rows, 64a inside 4a, taller than K: each is
    quantized on its own); 2 x 24 x 4200 in 8-row tiles (X = 2): strips in each of the two
    matrices. AB64b64a tiles are gathered from the stage through the position table, as
    nibbles and as f8 bytes. Groups of 8 along K."""
    G = 8
    x = _big(dims, seed=21)
    sdims = dims[:-2] + (dims[-2] // G, dims[-1])
    sc = np.random.default_rng(22).uniform(0.1, 1, sdims).astype(np.float32)
    zp = np.random.default_rng(23).integers(0 if dt == "u4" else -3, 4, sdims).astype(np.int8)
    if dt.startswith("f8"):
        zp = None
    src = "abc"[:len(dims)]
    btag = tag if len(dims) == 2 else "aCB8b32c2b"         # BA8a32b2a over the last two dims
    mask = (1 << len(dims)) - 1
    got = ro.reorder(x, src, btag, dtype=dt, dst_scales=sc, dst_zero_point=zp,
                     dst_groups=(G, 1), threads=threads)
    want = expected_once(("wide", tag, dt), x, btag, dt, sc, zp, mask, (G, 1))
    assert np.array_equal(as_bytes(got), want)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("aligned", [True, False])
def test_streamed_tiles_against_reference(rows, threads, aligned, monkeypatch):
    """A large destination the caller gives gets its BA{n}a{m}b4a tiles written with streaming
    stores (forced here from 0 bytes): whole aligned lines streamed, an unaligned buffer
    written as before, the same bytes as the reference either way, with the run cut at 4096
    columns, the right-edge tile and the strip cut by the end of K."""
    import reorder.quant.lowbit
    monkeypatch.setattr(reorder.quant.lowbit, "STREAM_MIN_BYTES", 0)
    G, dims, tag = 8, (72, 4200), "BA16a64b4a"           # 64 x 64 tiles: one full strip
    x = _big(dims, seed=21)
    sc = np.random.default_rng(22).uniform(0.1, 1, (dims[0] // G, dims[1])).astype(np.float32)
    zp = np.random.default_rng(23).integers(-3, 4, (dims[0] // G, dims[1])).astype(np.int8)
    kw = dict(dtype="s4", dst_scales=sc, dst_zero_point=zp, dst_groups=(G, 1), threads=threads)
    n = ro.reorder(x, "ab", tag, **kw).size
    raw = np.full(n + 64 + 1, 0xAA, np.uint8)
    start = (-raw.ctypes.data) % 64 + (0 if aligned else 1)
    out = raw[start:start + n]
    got = ro.reorder(x, "ab", tag, out=out, **kw)
    assert got is out
    want = expected_once(("wide", tag, "s4"), x, tag, "s4", sc, zp, 3, (G, 1))
    assert np.array_equal(as_bytes(got), want)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("aligned", [True, False])
@pytest.mark.parametrize("dt", ["f8_e4m3", "f8_e5m2"])
def test_streamed_rows_against_reference(rows, threads, aligned, dt, monkeypatch):
    """Plain f8 rows into a large destination the caller gives: the lines from each row's
    first aligned one are streamed (forced here from 0 bytes). Rows of 1000 bytes start at
    several alignments, so rows have a head, a streamed middle and a tail; a buffer one byte
    off never reaches an aligned line and is written as before."""
    import reorder.quant.lowbit
    monkeypatch.setattr(reorder.quant.lowbit, "STREAM_MIN_BYTES", 0)
    dims = (7, 1000)
    x = _big(dims, seed=31)
    kw = dict(dtype=dt, threads=threads)
    n = int(np.prod(dims))
    raw = np.full(n + 64 + 1, 0xAA, np.uint8)
    start = (-raw.ctypes.data) % 64 + (0 if aligned else 1)
    out = raw[start:start + n]
    storage = {"f8_e4m3": ml_dtypes.float8_e4m3fn, "f8_e5m2": ml_dtypes.float8_e5m2}[dt]
    got = ro.reorder(x, "ab", "ab", out=out.view(storage).reshape(dims), **kw)
    want = expected_once(("streamed rows", dt), x, "ab", dt)
    assert np.array_equal(as_bytes(got), want) and np.array_equal(out, want)
