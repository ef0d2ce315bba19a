"""Low-bit types (f8_e4m3, f8_e5m2, packed s4/u4, grouped scales and zero points) against the
independent reference in lowbit_reference.py, on awkward sizes, both SIMD and scalar rows."""
import numpy as np
import pytest

ml_dtypes = pytest.importorskip("ml_dtypes")

import reorder as ro
from lowbit_reference import (pack_nibbles, place, quantize_ref, reorder_decode_bits,
                              reorder_encode, unpack_nibbles)
from simd_paths import lowbit_rows


rows = lowbit_rows()


def _f16_grid_values():
    """Every finite f16 value (all rounding ties of both f8 grids are f16 values), inf, NaN,
    and f32 values just around the f16 rounding points."""
    h = np.arange(0, 0x10000, dtype=np.uint32).astype(np.uint16).view(np.float16)
    vals = h.astype(np.float32)
    vals = vals[np.isfinite(vals)]
    nxt = np.nextafter(vals, np.float32(np.inf))
    prv = np.nextafter(vals, np.float32(-np.inf))
    extra = np.array([np.nan, -np.nan, np.inf, -np.inf, 1e-40, -1e-40, 3e38, 464.0, 464.0001,
                      448.0, 480.0, 57344.0, 61440.0, 61439.99, 65504.0, 65520.0,
                      2.0 ** -10, 2.0 ** -9 * 1.5, 2.0 ** -17, 2.0 ** -16 * 1.5], np.float32)
    nan_payloads = np.array([0x7f800001, 0x7fa00000, 0xffc00000, 0x7f900000, 0x7fe00000],
                            np.uint32).view(np.float32)
    return np.concatenate([vals, nxt[::7], prv[::11], extra, nan_payloads])


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_f8_encode_every_f16_value_and_ties(rows, fmt):
    x = _f16_grid_values()
    got = ro.reorder(x, "a", "a", dtype=f"f8_{fmt}").view(np.uint8)
    want = np.array([reorder_encode(v, fmt) for v in x], np.uint8)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [(hex(int(x.view(np.uint32)[i])), hex(got[i]), hex(want[i])) for i in bad[:5]]


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_f8_decode_every_code(fmt):
    codes = np.arange(256, dtype=np.uint8)
    got = ro.reorder(codes, "a", "a", src_dtype=f"f8_{fmt}", dtype="f32").view(np.uint32)
    want = np.array([reorder_decode_bits(c, fmt) for c in range(256)], np.uint32)
    assert np.array_equal(got, want)


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_f8_ml_dtypes_in_and_out(fmt):
    mt = ml_dtypes.float8_e4m3fn if fmt == "e4m3" else ml_dtypes.float8_e5m2
    x = np.random.default_rng(0).standard_normal((7, 19, 5)).astype(np.float32) * 30
    y = ro.reorder(x, "abc", "aBc8b", dtype=f"f8_{fmt}")
    assert y.dtype == np.dtype(mt) and y.shape == (7, 3, 5, 8)
    codes = np.array([reorder_encode(v, fmt) for v in x.reshape(-1)])
    assert np.array_equal(y.view(np.uint8).reshape(-1), place(codes, x.shape, "aBc8b"))
    back = ro.reorder(y, "aBc8b", "abc", dims=x.shape, dtype="f32")
    want = np.array([reorder_decode_bits(c, fmt) for c in codes], np.uint32).view(np.float32)
    assert np.array_equal(back.reshape(-1).view(np.uint32), want.view(np.uint32))


TAGS = ["ab", "ba", "BA16a64b4a", "AB16b16a", "Ab4a", "aB3b", "BA4b8a2b"]


@pytest.mark.parametrize("dt", ["s4", "u4"])
@pytest.mark.parametrize("tag", TAGS)
@pytest.mark.parametrize("dims", [(7, 5), (64, 33), (33, 64), (1, 1), (130, 3)])
def test_int4_packed_every_layout(rows, dt, tag, dims):
    rng = np.random.default_rng(hash((dt, tag, dims)) % 2**32)
    x = (rng.standard_normal(dims) * 6).astype(np.float32)
    edge = np.array([np.nan, np.inf, -np.inf, 7.5, -8.5, 0.5, 6.5, -7.5, 15.5, 14.5], np.float32)
    x.reshape(-1)[: min(x.size, edge.size)] = edge[: x.size]
    got = ro.reorder(x, "ab", tag, dtype=dt)
    codes = quantize_ref(x, dims, dt)
    want = pack_nibbles(place(codes, dims, tag))
    assert got.dtype == np.uint8 and np.array_equal(got, want)
    back = ro.reorder(got, tag, "ab", dims=dims, src_dtype=dt, dtype="f32")
    assert np.array_equal(back.reshape(-1), codes.astype(np.float32))
    unpacked = ro.reorder(x, "ab", tag, dtype=dt, packed=False)
    assert unpacked.dtype == np.dtype(ml_dtypes.int4 if dt == "s4" else ml_dtypes.uint4)
    assert np.array_equal(unpacked.view(np.int8 if dt == "s4" else np.uint8).reshape(-1),
                          unpack_nibbles(want, len(place(codes, dims, tag)), dt == "s4"))


@pytest.mark.parametrize("G", [1, 3, 32])
@pytest.mark.parametrize("tag", ["ab", "BA16a64b4a", "ba", "AB16b16a"])
@pytest.mark.parametrize("dt", ["s4", "u4", "s8", "f8_e4m3"])
def test_grouped_scales_and_zero_points(rows, G, tag, dt):
    K, N = 96, 37
    rng = np.random.default_rng(G)
    x = (rng.standard_normal((K, N)) * 3).astype(np.float32)
    sc = rng.uniform(0.05, 1.0, (K // G, N)).astype(np.float32)
    zp = None if dt.startswith("f8") else rng.integers(0, 4, (K // G, N)).astype(np.int8)
    got = ro.reorder(x, "ab", tag, dtype=dt, dst_scales=sc, dst_zero_point=zp, dst_groups=(G, 1))
    inv = (np.float32(1) / sc).reshape(-1)
    codes = quantize_ref(x, (K, N), dt, inv, None if zp is None else zp.reshape(-1), 3, (G, 1))
    placed = place(codes, (K, N), tag)
    if dt in ("s4", "u4"):
        assert np.array_equal(got, pack_nibbles(placed))
    else:
        assert np.array_equal(got.view(np.uint8).reshape(-1), (placed & 0xFF).astype(np.uint8))
    if dt in ("s4", "u4"):   # and back: v = scale * (q - zp), oneDNN's grouped src scales
        back = ro.reorder(got, tag, "ab", dims=(K, N), src_dtype=dt, dtype="f32", src_scales=sc,
                          src_zero_point=zp, src_groups=(G, 1))
        q = codes.reshape(K, N).astype(np.float32)
        s = np.repeat(sc, G, axis=0)
        z = np.repeat(zp, G, axis=0).astype(np.float32)
        assert np.array_equal(back, (s * (q - z)).astype(np.float32))


def test_quantize_s4_groups_min_max():
    rng = np.random.default_rng(5)
    w = rng.standard_normal((256, 48)).astype(np.float32)
    q = ro.quantize(w, "ab", "BA16a64b4a", dtype="s4", group_size=128, symmetric=False)
    assert q.scales.shape == (2, 48) and q.zero_points.shape == (2, 48)
    g = w.reshape(2, 128, 48)
    lo = np.minimum(g.min(1), 0)
    hi = np.maximum(g.max(1), 0)
    sc = ((hi - lo) / np.float32(15)).astype(np.float32)
    zp = np.clip(np.rint(np.float32(-8) - lo / sc), -8, 7)
    assert np.array_equal(q.scales, sc) and np.array_equal(q.zero_points, zp.astype(np.int8))
    codes = quantize_ref(w, w.shape, "s4", (np.float32(1) / sc).reshape(-1),
                         zp.reshape(-1), 3, (128, 1))
    assert np.array_equal(q.data, pack_nibbles(place(codes, w.shape, "BA16a64b4a")))
    deq = ro.reorder(q.data, "BA16a64b4a", "ab", dims=w.shape, src_dtype="s4", dtype="f32",
                     src_scales=q.scales, src_zero_point=q.zero_points, src_groups=(128, 1))
    assert np.max(np.abs(deq - w)) <= np.max(q.scales) * 0.5001


def test_quantize_symmetric_and_f8():
    w = np.random.default_rng(1).standard_normal((64, 16)).astype(np.float32)
    q = ro.quantize(w, "ab", "ab", dtype="s4", group_size=32)
    assert q.zero_points is None
    assert np.array_equal(q.scales, np.abs(w.reshape(2, 32, 16)).max(1) / np.float32(7))
    f = ro.quantize(w, "ab", "ab", dtype="f8_e4m3", group_size=64, scale_dtype="bf16")
    assert f.scales.dtype == np.dtype(ml_dtypes.bfloat16) and f.data.dtype == np.dtype(ml_dtypes.float8_e4m3fn)


def test_bad_input():
    w = np.zeros((100, 8), np.float32)
    with pytest.raises(ro.ReorderError, match="does not divide K=100"):
        ro.quantize(w, "ab", "ab", dtype="s4", group_size=32)
    with pytest.raises(ro.ReorderError, match="needs 25x8"):
        ro.reorder(w, "ab", "ab", dtype="s4", dst_scales=np.ones((4, 8), np.float32),
                   dst_groups=(4, 1))
    with pytest.raises(ro.ReorderError, match="does not divide dim a"):
        ro.reorder(w, "ab", "ab", dtype="s4", dst_scales=np.ones((3, 8), np.float32),
                   dst_groups=(33, 1))
    with pytest.raises(ro.ReorderError, match="holds 15 values in 8 bytes"):
        ro.reorder(np.zeros(7, np.uint8), "ab", "ab", dims=(3, 5), src_dtype="s4", dtype="f32")
    bad = np.array([[1, 0x19]], np.int8).view(ml_dtypes.int4)    # neither storage form of an int4
    with pytest.raises(ro.ReorderError, match="outside"):
        ro.reorder(bad, "ab", "ab", dtype="f32")
    x = np.ones((4, 4), np.float32)
    before = x.copy()
    ro.reorder(x, "ab", "ab", dtype="u4")
    assert np.array_equal(x, before)


@pytest.mark.parametrize("tag", ["ab", "ba", "BA16a64b4a"])
def test_int4_arrays_made_by_astype(rows, tag):
    """`astype(ml_dtypes.int4)` stores a negative value as its nibble alone (-2 as 0x0e), not
    sign-extended: such arrays are read as ml_dtypes reads them, as data and as zero points."""
    K, N, G = 64, 19, 32
    v = np.random.default_rng(12).integers(-8, 8, (K, N))
    data = v.astype(np.int8).astype(ml_dtypes.int4)
    assert data.view(np.uint8).max() > 7                     # the nibble-only form is there
    zp = np.random.default_rng(13).integers(-8, 8, (K // G, N))
    sc = np.random.default_rng(14).uniform(0.1, 2, (K // G, N)).astype(np.float32)
    laid = ro.reorder(data, "ab", tag)
    assert np.array_equal(laid, place(v.reshape(-1), (K, N), tag).reshape(laid.shape))
    for src, stag in [(data, "ab"), (laid, tag)]:
        got = ro.reorder(src, stag, "ab", dims=(K, N), dtype="f32", src_scales=sc,
                         src_zero_point=zp.astype(np.int8).astype(ml_dtypes.int4),
                         src_groups=(G, 1))
        want = np.repeat(sc, G, 0) * (v - np.repeat(zp, G, 0)).astype(np.float32)
        assert np.array_equal(got, want.astype(np.float32))
    packed = ro.reorder(data, "ab", tag, packed=True)
    assert np.array_equal(packed, pack_nibbles(place(v.reshape(-1), (K, N), tag)))
