"""Conversions, scales / zero points / sum, and int8 compensation, bit for bit against the
independent reference in quant_reference.py (spec §3-§4).

Every check runs through each kernel path that can take it: the strided walk (1-D and
plain layouts), and the 16-lane tile (a transposing layout) with the AVX-512 and AVX2 tiles
and rows on and off, so the SIMD and portable code must agree with the reference and with
each other.
"""
import math
import zlib

import numpy as np
import pytest

import reorder as ro
from reorder import _convert
from reorder.plan import planner
from reorder.core.attrs import make_attrs
from reorder.plan.binding import aligned_empty
from reorder.kernels.convert import arith_for
from reorder.plan.cache import cached_plan
from reorder.plan import cache
import quant_reference as qr
from quant_reference import bits
from reorder.testing.reference import ref_physical_shape
from simd_paths import CONVERT_MODES as SIMD, convert_modes

try:
    import ml_dtypes
except ImportError:             # pragma: no cover
    ml_dtypes = None

TYPES = ["f32", "f64", "f16", "bf16", "s8", "u8", "s32"]
UNSUPPORTED = {("bf16", "s32"), ("s32", "bf16"), ("f16", "s32"), ("s32", "f16")}
PAIRS = [(s, d) for s in TYPES for d in TYPES if s != d and (s, d) not in UNSUPPORTED]
SIMD_IDS = {1: "simd", 2: "simd-bf16emu", 3: "avx2", 0: "portable"}
simd = convert_modes(SIMD_IDS)


# the package's conversion keywords -> the reference's
REF_NAMES = {"src_scales": "src_scales", "src_scale_mask": "src_mask", "dst_scales": "dst_scales",
             "dst_scale_mask": "dst_mask", "src_zero_point": "src_zp",
             "dst_zero_point": "dst_zp", "sum_beta": "beta"}


def check(src_flat, dims, stag, dtag, sdt, ddt, threads=None, out_fill=None, **kw):
    """reorder() vs the reference, bytes compared, padding included. `kw` uses the
    package's keyword names; the reference gets the same values."""
    ref_kw = {REF_NAMES[k]: v for k, v in kw.items()}
    out = None
    if "sum_beta" in kw:
        out_fill = qr.random_values(qr.nelems(dims, dtag), ddt, np.random.default_rng(7)) \
            if out_fill is None else out_fill
        ref_kw["dst_old"] = out_fill
        desc = ro.Desc(dims, ddt, dtag)
        out = out_fill.copy().reshape(desc.physical_shape)
    got = ro.reorder(src_flat, stag, dtag, dims=dims, src_dtype=sdt, dtype=ddt, out=out,
                     threads=threads, **kw)
    exp, _, _ = qr.ref_reorder(src_flat, dims, stag, dtag, sdt, ddt, **ref_kw)
    np.testing.assert_array_equal(bits(got), bits(exp))
    return got


def check_plan(p, src, stag, dtag, sdesc, ddesc, kw, rng, fill=None):
    """Plan `p` on `src` (stag, sdesc's layout) against the reference, bytes compared, on 1,
    2 and 3 threads, into a dst on a 64-byte line that starts as random values (read back by
    sum) or as `fill` bytes."""
    dims = sdesc.dims
    ref_kw = {REF_NAMES[k]: v for k, v in kw.items()}
    old = qr.random_values(qr.nelems(dims, dtag), ddesc.dtype.name, rng)
    if "sum_beta" in kw:
        ref_kw["dst_old"] = old
    exp, _, _ = qr.ref_reorder(src, dims, stag, dtag, sdesc.dtype.name, ddesc.dtype.name,
                               **ref_kw)
    for threads in (1, 2, 3):
        out = aligned_empty(ddesc.physical_shape, old.dtype)    # streamed lines need it
        out[...] = old.reshape(ddesc.physical_shape)
        if fill is not None and "sum_beta" not in kw:
            out.view(np.uint8)[...] = fill
        p(src.reshape(sdesc.physical_shape), out=out, threads=threads)
        np.testing.assert_array_equal(bits(out), bits(exp))


def values_for(dt, n, rng):
    """benchdnn's cycle plus random values, in dt's storage."""
    fill = qr.benchdnn_fill(n, dt)
    rnd = qr.random_values(n, dt, rng)
    return np.where(np.arange(n) % 2 == 0, fill, rnd).astype(fill.dtype)


# ---------------------------------------------------------------------------------------------
# §3.3: the rounding table, and special values, on every path

def _paths(values, sdt, ddt, simd_on):
    """Convert `values` (src storage) through the strided walk (1-D) and the tile path
    (a 16 x n transposition); both results in logical order."""
    _convert.set_simd(simd_on)
    try:
        x = np.asarray(values)
        flat = ro.reorder(x, "a", "a", dims=(x.size,), src_dtype=sdt, dtype=ddt)
        n = -(-x.size // 16) * 16
        pad = np.zeros(16 * n, dtype=x.dtype)
        pad[:x.size] = x
        grid = pad.reshape(n, 16)                      # logical (16, n) in 'ba' order
        tile = ro.reorder(grid.reshape(-1), "ba", "ab", dims=(16, n), src_dtype=sdt, dtype=ddt)
        tile = np.asarray(tile).T.reshape(-1)[:x.size]
        return np.asarray(flat), tile
    finally:
        _convert.set_simd(1)


ROUNDING = [
    ("s8", [0.5, 1.5, 2.5, -0.5, -1.5, 127.5, -128.5, 300.0, -300.0], [0, 2, 2, 0, -2, 127, -128, 127, -128]),
    ("u8", [255.5, 254.5, 0.5, 1.5, -3.0, 256.0], [255, 254, 0, 2, 0, 255]),
    ("s32", [3e9, -3e9, 2.5, -2.5, 2147483520.0, 16777217.0],
     [2147483520, -2147483648, 2, -2, 2147483520, 16777216]),
    ("s8", [np.inf, -np.inf, np.nan], [127, -128, 127]),
    ("u8", [np.inf, -np.inf, np.nan], [255, 0, 0]),
    ("s32", [np.inf, -np.inf, np.nan], [2147483520, -2147483648, 2147483520]),
]


@pytest.mark.parametrize("simd_on", SIMD, ids=SIMD_IDS.get)
@pytest.mark.parametrize("ddt,values,expected", ROUNDING)
def test_rounding_table(ddt, values, expected, simd_on):
    """Saturate, then round half to even; s32 tops out at 2147483520; NaN gives the bound
    oneDNN's x64 kernels give (127, 0, 2147483520). The values repeat past 128 elements, so
    that the rows' stores of four vectors at a time see them as well as the tails."""
    reps = 160 // len(values)
    for got in _paths(np.tile(np.array(values, np.float32), reps), "f32", ddt, simd_on):
        assert got.tolist() == expected * reps


@pytest.mark.parametrize("simd_on", SIMD, ids=SIMD_IDS.get)
def test_bf16_rules(simd_on):
    vals = np.array([1e-40, -1e-40, 1.0, 1.00390625, 1.01171875, 3.4e38, -3.4e38, np.inf,
                     -np.inf, 0.0, -0.0], np.float32)
    exp = [0x0000, 0x8000, 0x3F80, 0x3F80, 0x3F82, 0x7F80, 0xFF80, 0x7F80, 0xFF80, 0x0000, 0x8000]
    nan = np.array([0x7FC00000, 0x7F800001, 0xFFA00000], np.uint32).view(np.float32)
    for got in _paths(np.concatenate([vals, nan]), "f32", "bf16", simd_on):
        b = bits(got)
        assert b[:len(exp)].tolist() == exp
        assert b[len(exp):].tolist() == [0x7FC0, 0x7FC0, 0xFFE0]      # quiet, sign kept


@pytest.mark.parametrize("simd_on", SIMD, ids=SIMD_IDS.get)
@pytest.mark.parametrize("ddt", ["f16", "bf16"])
def test_half_types_random_bits(ddt, simd_on):
    """f32 -> f16 equals numpy's astype(float16); f32 -> bf16 equals the reference; NaN
    stays NaN; over random bit patterns and around the f16 overflow/subnormal edges."""
    rng = np.random.default_rng(1)
    u = np.concatenate([rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32),
                        np.arange(0x477FE000, 0x47800100, 7, dtype=np.uint32),
                        np.arange(0x387FF000, 0x38801000, 3, dtype=np.uint32),
                        np.arange(0x33000000 - 64, 0x33000000 + 64, dtype=np.uint32),
                        np.arange(0, 64, dtype=np.uint32)])
    f = u.view(np.float32)
    with np.errstate(over="ignore"):
        exp = f.astype(np.float16).view(np.uint16) if ddt == "f16" else qr.f32_to_bf16_bits(f)
    nan = np.isnan(f)
    for got in _paths(f, "f32", ddt, simd_on):
        b = bits(got)
        np.testing.assert_array_equal(b[~nan], exp[~nan])
        assert np.all((b[nan] & 0x7FFF) > (0x7C00 if ddt == "f16" else 0x7F80))


@pytest.mark.parametrize("simd_on", SIMD, ids=SIMD_IDS.get)
@pytest.mark.parametrize("sdt", ["f16", "bf16"])
def test_half_types_to_f32_exact(sdt, simd_on):
    h = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    ref = h.view(np.float16).astype(np.float32) if sdt == "f16" else qr.to_f32(h, "bf16")
    words = h.view(np.float16) if sdt == "f16" else h
    nan = np.isnan(ref)
    for got in _paths(words, sdt, "f32", simd_on):
        np.testing.assert_array_equal(bits(got)[~nan], bits(ref)[~nan])
        assert np.isnan(got[nan]).all()


@pytest.mark.parametrize("simd_on", SIMD, ids=SIMD_IDS.get)
def test_integer_conversions(simd_on):
    cases = [
        ("s32", "s8", [200, -200, 5, 2147483647], [127, -128, 5, 127]),
        ("s32", "u8", [300, -1, 7], [255, 0, 7]),
        ("u8", "s8", [200, 127, 0], [127, 127, 0]),
        ("s8", "u8", [-5, 100, -128], [0, 100, 0]),
        ("s8", "s32", [-128, 127, 0], [-128, 127, 0]),
        ("s32", "f32", [16777217, -16777219, 2147483647], [16777216.0, -16777220.0, 2147483648.0]),
        ("s32", "f64", [16777217, 3], [16777216.0, 3.0]),          # through f32, documented
        ("f64", "f32", [0.1, 1e300, -1e-300], [np.float32(0.1), np.inf, -0.0]),
        ("f64", "s8", [126.5, -1e10, 2.5], [126, -128, 2]),
        ("f32", "f64", [0.1, -3.0], [float(np.float32(0.1)), -3.0]),
    ]
    for sdt, ddt, src, exp in cases:
        x = np.array(src, dtype=qr.NUMPY[sdt])
        for got in _paths(x, sdt, ddt, simd_on):
            assert got.tolist() == exp, (sdt, ddt)


def test_f64_bf16_f16_roundtrip_storage():
    """bf16 arrays come back as ml_dtypes.bfloat16 (when installed) and are accepted as such,
    or as uint16 words with src_dtype='bf16'."""
    x = np.linspace(-3, 3, 64, dtype=np.float32)
    y = ro.reorder(x, "a", "a", dtype="bf16")
    if ml_dtypes is not None:
        assert y.dtype == np.dtype(ml_dtypes.bfloat16)
        np.testing.assert_array_equal(y.astype(np.float32), x.astype(ml_dtypes.bfloat16).astype(np.float32))
        back = ro.reorder(y, "a", "a", dtype=np.float32)
        np.testing.assert_array_equal(back, y.astype(np.float32))
    words = y.view(np.uint16)
    back2 = ro.reorder(words, "a", "a", src_dtype="bf16", dtype="f32")
    np.testing.assert_array_equal(bits(back2), bits(qr.to_f32(words, "bf16")))


# ---------------------------------------------------------------------------------------------
# every supported pair, several layouts, both paths

# The runner in each comment is the one the layout is chosen to reach. A conversion plan does
# not say which runner it took (Plan.kernel is "convert" and explain() lists all three), so it
# cannot be asserted here; what is asserted is the reference's bytes and shape on every path.
# Where the walk would cross layouts, the planner moves first and converts on dst's layout
# ("transpose+convert"); `walk` runs those layouts once more with that turned off.
LAYOUTS = [
    ((2, 20, 5, 7), "abcd", "aBcd16b"),        # plain -> blocked, padded C (tile)
    ((2, 20, 5, 7), "aBcd16b", "abcd"),        # blocked -> plain (walk)
    ((2, 32, 3, 5), "abcd", "acdb"),           # a transpose (tile)
    ((2, 24, 3, 37), "abcd", "acdb"),          # a transpose: full and partial lane groups
                                               # and chunks, dst rows not 16 apart (tile)
    ((20, 10, 3, 3), "abcd", "ABcd4b16a4b"),   # conv weights, padded O and I (tile)
    ((3, 17, 4, 4), "acdb", "aBcd8b"),         # runs of 8 lanes (the walk, or a move into
                                               # aBcd8b and slabs there)
    ((33,), "a", "a"),                          # 1-D (walk)
]


@pytest.fixture(params=[False, True], ids=["planned", "walk"])
def walk(request, monkeypatch):
    """True: the planner's move-then-convert for walks (and interleaved pixels) across
    layouts is off, so those layouts run the element walk (or the conversion tiles; the plan
    caches are emptied around it)."""
    if request.param:
        monkeypatch.setattr(planner, "_slow_walk", lambda step: False)
        monkeypatch.setattr(planner, "_interleaved_move", lambda src, dst, nt: False)
    cache.clear()
    yield request.param
    cache.clear()


@pytest.mark.parametrize("dims,stag,dtag", LAYOUTS, ids=[f"{s}-{d}" for _, s, d in LAYOUTS])
@pytest.mark.parametrize("sdt,ddt", PAIRS, ids=[f"{s}-{d}" for s, d in PAIRS])
def test_pairs(sdt, ddt, dims, stag, dtag, simd, walk):
    rng = np.random.default_rng(zlib.crc32(f"{sdt} {ddt} {stag}".encode()))   # same data every run
    n = math.prod(dims)
    src = qr.place(values_for(sdt, n, rng), dims, stag, sdt)
    got = check(src, dims, stag, dtag, sdt, ddt)
    assert got.shape == ref_physical_shape(dims, dtag)
    kernel = ro.plan(stag, dtag, dims=dims, src_dtype=sdt, dtype=ddt).kernel
    assert kernel == "convert" if walk else kernel in (
        "convert", "transpose+convert", "generic+convert", "copy+convert", "blocks+convert",
        "convert+transpose", "convert+generic", "convert+copy", "convert+blocks",
        "interleave+convert", "convert+interleave"), kernel


# Conversions across layouts that the tiles do not take (fewer than 16 lanes, short runs;
# lanes that are not whole groups of 16 with a sum, with scales along B (the channels of
# nChw16c -> nchw) or into too few 1-byte outputs): converted on src's layout first when they
# narrow (the move then carries the narrower type), else moved into dst's layout first and
# converted there; sum keeps the conversion last. Per-channel scales and zero points ride on
# the conversion; padded channels on either side. The rest take the tile in one pass.
MOVE_THEN_CONVERT = [((1, 37, 7, 7), "aBcd16b", "abcd"),     # 49 lanes
                     ((2, 20, 5, 7), "aBcd16b", "acdb"),     # runs of 16 into nhwc
                     ((2, 3, 14, 14), "aBcd8b", "abcd")]     # 196 lanes, 3 of 8 channels


@pytest.mark.parametrize("dims,stag,dtag", MOVE_THEN_CONVERT,
                         ids=[f"{s}-{d}" for _, s, d in MOVE_THEN_CONVERT])
@pytest.mark.parametrize("sdt,ddt", [("f32", "s8"), ("f32", "u8"), ("s8", "f32"), ("u8", "f32"),
                                     ("bf16", "f32"), ("f32", "bf16"), ("f16", "s8")])
def test_move_then_convert(sdt, ddt, dims, stag, dtag):
    rng = np.random.default_rng(zlib.crc32(f"{sdt} {ddt} {stag} {dims}".encode()))
    src = qr.place(values_for(sdt, math.prod(dims), rng), dims, stag, sdt)
    sc = (rng.random(dims[1]).astype(np.float32) + 0.5) * 2
    int_side = "dst" if ddt in ("s8", "u8") else "src" if sdt in ("s8", "u8") else None
    settings = [{}, {"src_scales": sc, "src_scale_mask": 2}]
    if int_side:
        settings.append({f"{int_side}_scales": 0.25, f"{int_side}_zero_point": 3})
    if ddt == "f32":
        settings.append({"src_scales": sc, "src_scale_mask": 2, "sum_beta": 0.5})
    for kw in settings:
        p = ro.plan(stag, dtag, dims=dims, src_dtype=sdt, dtype=ddt, **kw)
        narrows = ro.Desc((1,), ddt).dtype.itemsize < ro.Desc((1,), sdt).dtype.itemsize
        if p.kernel == "convert":
            tile = p.runners[0]
            assert type(tile).__name__ == "ConvertTile" and tile.nlanes % 16, p.explain()
            assert "sum_beta" not in kw and "src_scale_mask" not in kw, p.explain()
        elif p.kernel.startswith("convert+"):
            assert narrows and "sum_beta" not in kw and p.via.tag == p.src.tag, p.explain()
        else:
            assert p.kernel.endswith("+convert") and p.via.tag == p.dst.tag, p.explain()
        for threads in (1, 2):
            check(src, dims, stag, dtag, sdt, ddt, threads=threads, **kw)


# A padded block on an unchanged layout: the walk converts its rows whole, padding lanes
# included, and zeroes those lanes after (Convert's `slab`); rows of 16 lanes go as a grid
# instead where the grid code runs (AVX-512 modes), which loads and stores under the data
# lanes' mask, and as slabs in the other modes. The source's padding holds random bits here
# (NaN and infinities among them), so a padding lane that leaked into dst, or a zeroing
# that missed one or touched a data lane, shows in the bytes.
SLABS = [((2, 19, 5, 7), "aBcd16b", 16),      # a full block, then 3 of 16 lanes
         ((1, 3, 4, 4), "aBcd16b", 16),       # only a partial block: the padded C=3 input
         ((3, 1, 2, 3), "aBcd8b", 8),         # 1 of 8
         ((2, 17, 3, 3), "aBcd4b", 4),        # rows of 4 lanes (short of a word for 1 byte)
         ((40, 19), "aB16b", 32),             # both blocks fuse into rows of 32, 19 valid
         ((2, 19, 0, 3), "aBcd16b", 0)]       # nothing to convert


def _garbage_padding(values, dims, tag, dt, rng):
    """`place` with the padding filled with random bits instead of zeros."""
    buf = qr.place(values, dims, tag, dt)
    noise = rng.integers(0, 256, buf.nbytes, dtype=np.uint8).view(buf.dtype)
    data = np.zeros(buf.size, bool)
    if math.prod(dims):
        data[qr.offsets(dims, tag, qr.logical_grid(dims))] = True
    return np.where(data, buf, noise)


@pytest.mark.parametrize("dims,tag,lanes", SLABS,
                         ids=[f"{t}-{'x'.join(map(str, d))}" for d, t, _ in SLABS])
@pytest.mark.parametrize("sdt,ddt", PAIRS, ids=[f"{s}-{d}" for s, d in PAIRS])
def test_padded_block_slabs(sdt, ddt, dims, tag, lanes, simd):
    rng = np.random.default_rng(zlib.crc32(f"{sdt} {ddt} {tag} {dims}".encode()))
    src = _garbage_padding(values_for(sdt, math.prod(dims), rng), dims, tag, sdt, rng)
    p = ro.plan(tag, tag, dims=dims, src_dtype=sdt, dtype=ddt)
    assert [r.slab for r in p.runners] == [lanes], p.explain()
    grid = 1 if lanes == 16 and _convert.simd_available() else 0
    assert [r.grid for r in p.runners] == [grid], p.explain()
    settings = [{}]
    if ddt in ("s8", "u8"):
        settings.append({"dst_scales": 0.25, "dst_zero_point": 3})
    if sdt in ("s8", "u8"):
        settings.append({"src_scales": 0.5, "src_zero_point": -2})
    if ddt in ("f32", "s32", "s8"):
        settings.append({"sum_beta": 0.5})
    for kw in settings:
        for threads in (1, 2, 3):
            check(src, dims, tag, tag, sdt, ddt, threads=threads, **kw)


@pytest.mark.parametrize("stag", ["acdb", "aBcd8b"])
def test_padded_block_slab_after_a_move(stag):
    """nhwc (or nChw8c) -> nChw16c at C=19 with a widening conversion: the walk would run 16
    lanes at a time (or 8), so the planner moves into nChw16c first and the conversion takes
    slabs there; per-channel scales index the lanes, so no slab is taken. All against the
    reference."""
    dims = (2, 19, 5, 7)
    rng = np.random.default_rng(3)
    src = qr.place(values_for("u8", math.prod(dims), rng), dims, stag, "u8")
    sc = np.linspace(0.5, 2, 19, dtype=np.float32)
    for kw, slab in (({"src_scales": 0.25, "src_zero_point": 3}, 16), ({}, 16),
                     ({"src_scales": sc, "src_scale_mask": 2}, 0)):
        p = ro.plan(stag, "aBcd16b", dims=dims, src_dtype="u8", dtype="f32", **kw)
        assert getattr(p.runners[-1], "slab", 0) == slab, p.explain()
        assert p.kernel.endswith("+convert") or not slab, p.explain()
        for threads in (1, 2):
            check(src, dims, stag, "aBcd16b", "u8", "f32", threads=threads, **kw)


@pytest.mark.parametrize("stag", ["acdb", "aBcd8b"])
def test_narrowing_converts_before_the_move(stag):
    """f32 -> u8 nhwc (or nChw8c) -> nChw16c at C=19: the conversion runs first, on src's
    layout (one contiguous run, or slabs of 8 lanes), and the move carries bytes. Per-channel
    scales take no slabs, so from nChw8c the data moves first, as before; sum reads the
    destination, so it keeps the conversion last."""
    dims = (2, 19, 5, 7)
    rng = np.random.default_rng(4)
    src = qr.place(values_for("f32", math.prod(dims), rng), dims, stag, "f32")
    sc = np.linspace(0.5, 2, 19, dtype=np.float32)
    for kw in ({"dst_scales": 0.25, "dst_zero_point": 3}, {}, {"src_scales": sc, "src_scale_mask": 2}):
        p = ro.plan(stag, "aBcd16b", dims=dims, dtype="u8", **kw)
        if stag == "aBcd8b" and kw.get("src_scale_mask"):
            assert p.kernel.endswith("+convert") and p.via == ro.Desc(dims, "f32", "aBcd16b"), p.explain()
        else:
            assert p.kernel.startswith("convert+") and p.via == ro.Desc(dims, "u8", stag), p.explain()
            assert p.runners[0].slab == (8 if stag == "aBcd8b" else 0)
            assert "narrows into" in p.explain()
        for threads in (1, 2):
            check(src, dims, stag, "aBcd16b", "f32", "u8", threads=threads, **kw)
    old = qr.random_values(qr.nelems(dims, "aBcd16b"), "u8", rng)
    p = ro.plan(stag, "aBcd16b", dims=dims, dtype="u8", sum_beta=0.5)
    assert p.kernel.endswith("+convert"), p.explain()
    got = ro.reorder(src, stag, "aBcd16b", dims=dims, dtype="u8", sum_beta=0.5,
                     out=old.reshape(ro.Desc(dims, "u8", "aBcd16b").physical_shape).copy())
    exp, _, _ = qr.ref_reorder(src, dims, stag, "aBcd16b", "f32", "u8", beta=0.5, dst_old=old)
    np.testing.assert_array_equal(bits(got), bits(exp))


def test_padded_block_slabs_not_taken():
    """Per-channel scales index the lanes, and a plain source strided like the block
    (channel stride 1, pixels 16 apart) holds no padding lanes: neither is read a slab at a
    time (the strided source moves into nChw16c first, and the slabs read that).
    The kernel refuses a slab on nodes that are not a block's lanes and rows."""
    dims = (2, 19, 5, 7)
    sc = np.linspace(0.5, 2, 19, dtype=np.float32)
    p = ro.plan("aBcd16b", "aBcd16b", dims=dims, dtype="s8", dst_scales=sc, dst_scale_mask=2)
    assert [r.slab for r in p.runners] == [0]
    rng = np.random.default_rng(5)
    src = _garbage_padding(values_for("f32", math.prod(dims), rng), dims, "aBcd16b", "f32", rng)
    check(src, dims, "aBcd16b", "aBcd16b", "f32", "s8", dst_scales=sc, dst_scale_mask=2)

    base = np.full((1, 4, 4, 16), np.nan, np.float32)
    base[..., :3] = rng.random((1, 4, 4, 3), np.float32) * 100
    x = base[..., :3]                       # dims (1, 3, 4, 4), strides 256, 1, 64, 16
    p = ro.plan(ro.Desc((1, 3, 4, 4), "f32", strides=(256, 1, 64, 16)), "aBcd16b", dtype="u8",
                dst_scales=0.5)
    assert not p.runners[0].slab, p.explain()      # the step that reads x
    logical = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    exp, _, _ = qr.ref_reorder(logical.reshape(-1), logical.shape, "abcd", "aBcd16b",
                               "f32", "u8", dst_scales=0.5)
    np.testing.assert_array_equal(p(x).reshape(-1), exp)

    nodes = np.array([[8, 16, 16, -1, 1, 0, 0], [16, 1, 1, 1, 1, 1, 0]], np.int64)
    checked = np.array([[1, 3, 16]], np.int64)
    with pytest.raises(ValueError, match="slab 16"):        # a scale index along the lanes
        _convert.Convert(0, 4, nodes, checked, _convert.Arith(), -1, False, 16)
    with pytest.raises(ValueError, match="slab 8"):         # lanes of 16, not 8
        _convert.Convert(0, 4, nodes * [1, 1, 1, 1, 1, 0, 0], checked, _convert.Arith(), -1,
                         False, 8)


def test_unsupported_pairs_are_errors():
    x = np.zeros(4, np.float32)
    for s, d in UNSUPPORTED:
        src = np.zeros(4, qr.NUMPY[s])
        with pytest.raises(ValueError, match=f"{s} to {d}"):
            ro.reorder(src, "a", "a", src_dtype=s, dtype=d)
    with pytest.raises(ValueError, match="u16"):
        ro.reorder(x, "a", "a", dtype="u16")
    with pytest.raises(ValueError, match="unknown data type"):
        ro.reorder(x, "a", "a", dtype="f4_e2m1")


# ---------------------------------------------------------------------------------------------
# scales, zero points, sum (§3.2)

ATTR_LAYOUTS = [((2, 40, 3, 3), "abcd", "aBcd16b"), ((2, 40, 3, 3), "aBcd4b", "acdb"),
                ((16, 63), "ab", "AB16b16a2b"), ((5, 3, 7), "abc", "abc")]


@pytest.mark.parametrize("dims,stag,dtag", ATTR_LAYOUTS, ids=[f"{s}-{d}" for _, s, d in ATTR_LAYOUTS])
@pytest.mark.parametrize("mask", [0, 1, 2, 3])
@pytest.mark.parametrize("side", ["src", "dst", "both"])
def test_scales(dims, stag, dtag, mask, side, simd):
    n = math.prod(dims)
    src = qr.place(qr.benchdnn_fill(n, "f32"), dims, stag, "f32")
    count = math.prod(dims[d] for d in range(len(dims)) if mask >> d & 1)
    kw = {}
    for s in (("src", "dst") if side == "both" else (side,)):
        vals = qr.per_dim_scales(count) if mask else np.array([0.25 if s == "src" else 0.125], np.float32)
        kw[f"{s}_scales"], kw[f"{s}_scale_mask"] = vals, mask
    for ddt in ("s8", "u8", "f32", "bf16"):
        check(src, dims, stag, dtag, "f32", ddt, **kw)


def test_non_power_of_two_dst_scale_uses_the_reciprocal():
    """The f32 reciprocal of the dst scale is multiplied in (oneDNN's jit:uni convention);
    with 3.0 this differs from a division for some inputs, and matches the reference."""
    x = np.arange(-3000, 3000, dtype=np.float32) * np.float32(0.75)
    got = ro.reorder(x, "a", "a", dtype="s32", dst_scales=3.0)
    inv = np.float32(1) / np.float32(3)
    np.testing.assert_array_equal(got, np.rint(x * inv).astype(np.int32))


@pytest.mark.parametrize("sdt,ddt", [("s8", "u8"), ("u8", "s8"), ("s32", "s32"), ("s8", "s32"),
                                     ("u8", "f32"), ("s8", "bf16"), ("f32", "u8")])
@pytest.mark.parametrize("dims,stag,dtag", [((2, 16, 3, 4), "abcd", "cdba"),
                                            ((3, 32, 4, 2), "abcd", "aBcd16b"),
                                            ((1, 12, 128, 33), "adbc", "abcd")])
def test_zero_points(sdt, ddt, dims, stag, dtag, simd):
    n = math.prod(dims)
    src = qr.place(qr.benchdnn_fill(n, sdt), dims, stag, sdt)
    kw = {}
    if sdt in ("s8", "u8", "s32"):
        kw["src_zero_point"] = -1
    if ddt in ("s8", "u8", "s32"):
        kw["dst_zero_point"] = 2
    check(src, dims, stag, dtag, sdt, ddt, **kw)
    check(src, dims, stag, dtag, sdt, ddt, src_scales=qr.per_dim_scales(dims[1]), src_scale_mask=2,
          **kw)


@pytest.mark.parametrize("beta", [0.5, 1.0, 2.5, -1.0])
@pytest.mark.parametrize("sdt,ddt", [("f32", "f32"), ("f32", "s8"), ("s32", "s32"), ("f16", "f16"),
                                     ("f32", "bf16"), ("u8", "u8")])
@pytest.mark.parametrize("dims,stag,dtag", [((2, 40, 3, 3), "aBcd4b", "aBcd16b"),
                                            ((2, 20, 5, 7), "abcd", "aBcd16b"),
                                            ((30, 1), "ab", "ab")])
def test_sum(beta, sdt, ddt, dims, stag, dtag, simd):
    """v += beta * old dst (the raw stored value); padding of dst stays zero."""
    n = math.prod(dims)
    src = qr.place(qr.benchdnn_fill(n, sdt), dims, stag, sdt)
    kw = {"sum_beta": beta}
    if dims[1] % 4 == 0:
        kw.update(src_scales=qr.per_dim_scales(dims[1]), src_scale_mask=2)
    got = check(src, dims, stag, dtag, sdt, ddt, **kw)
    pd = ro.Desc(dims, ddt, dtag).padded_dims
    if pd != dims:
        assert np.asarray(got).any()


def test_sum_needs_out():
    with pytest.raises(ValueError, match="out="):
        ro.reorder(np.ones(8, np.float32), "a", "a", dtype="f32", sum_beta=1.0)


def test_inputs_not_modified_and_views():
    """A negative-stride view and a read-only source convert to the reference's bytes, and
    neither the source's values nor its flags change."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 20, 5, 7)).astype(np.float32) * 50
    keep = x.copy()
    v = x[:, ::-1]                                       # negative strides
    got = ro.reorder(v, "abcd", "aBcd16b", dtype="s8", src_scales=0.5)
    np.testing.assert_array_equal(x, keep)
    assert x.flags.writeable and v.flags.writeable      # a call never flips a flag
    exp, _, _ = qr.ref_reorder(np.ascontiguousarray(v).reshape(-1), v.shape, "abcd", "aBcd16b",
                               "f32", "s8", src_scales=0.5)
    assert got.shape == (2, 2, 5, 7, 16)
    np.testing.assert_array_equal(bits(got), bits(exp))
    ro_x = x.copy()
    ro_x.setflags(write=False)
    got = ro.reorder(ro_x, "abcd", "acdb", dtype="f16")
    assert not ro_x.flags.writeable
    np.testing.assert_array_equal(ro_x, keep)
    assert got.shape == (2, 5, 7, 20) and got.dtype == np.float16
    exp, _, _ = qr.ref_reorder(keep.reshape(-1), keep.shape, "abcd", "acdb", "f32", "f16")
    np.testing.assert_array_equal(bits(got), bits(exp))


# ---------------------------------------------------------------------------------------------
# compensation (§4)

def _weights(dims, dt="f32", seed=0):
    n = math.prod(dims)
    return values_for(dt, n, np.random.default_rng(seed))


def check_quantize(dims, stag, dtag, comp, cmask, sdt="f32", scales=None, smask=0, adj=1.0,
                   threads=None):
    src = qr.place(_weights(dims, sdt), dims, stag, sdt)
    if scales is None:
        scales, smask = 1.0, 0
    got = ro.quantize(src, stag, dtag, dims=dims, src_dtype=sdt, scales=scales, scale_mask=smask,
                      compensation=comp, comp_mask=cmask, scale_adjust=adj, threads=threads)
    exp, s8s8, zp = qr.ref_reorder(src, dims, stag, dtag, sdt, "s8",
                                   src_scales=None if np.size(scales) == 1 and scales == 1.0 else scales,
                                   src_mask=smask, scale_adjust=adj, comp=comp, comp_mask=cmask)
    np.testing.assert_array_equal(bits(got.data), bits(exp))
    for g, e in ((got.compensation, s8s8), (got.zp_compensation, zp)):
        if e is None:
            assert g is None
        else:
            assert g.dtype == np.int32
            np.testing.assert_array_equal(g, e)
    return got


def test_byte_example():
    """§4.3: f32 20x10x3x3 -> OIhw4i16o4i s8 with both flags: data 32*16*9 = 4608 B, s8s8
    comp at [4608, 4736), zp comp at [4736, 4864), 4864 B in all."""
    w = np.random.default_rng(0).standard_normal((20, 10, 3, 3)).astype(np.float32) * 30
    q = ro.quantize(w, "oihw", "OIhw4i16o4i", scales=1.0, compensation=("s8s8", "zp"))
    assert q.data.dtype == np.int8 and q.data.nbytes == 4608
    assert q.offsets == {"data": 0, "s8s8": 4608, "zp": 4736, "size": 4864}
    buf = q.to_onednn_buffer()
    assert buf.dtype == np.uint8 and buf.size == 4864
    assert bytes(buf[:4608]) == q.data.tobytes()
    s8s8 = buf[4608:4736].view("<i4")
    zp = buf[4736:4864].view("<i4")
    qi = np.rint(np.clip(w, -128, 127)).astype(np.int64)
    sums = qi.sum(axis=(1, 2, 3))
    np.testing.assert_array_equal(s8s8[:20], -128 * sums)
    np.testing.assert_array_equal(zp[:20], -sums)
    assert not s8s8[20:].any() and not zp[20:].any()            # OC padded to 32: zeros
    # one flag only: the block follows the data directly
    q1 = ro.quantize(w, "oihw", "OIhw4i16o4i", compensation="zp")
    assert q1.compensation is None and q1.offsets["zp"] == 4608 and q1.offsets["size"] == 4736


def test_unaligned_data_rounds_up_to_4():
    w = np.ones((3, 1, 1), np.float32)
    q = ro.quantize(w, "abc", "abc", compensation="s8s8", comp_mask=1)
    assert q.data.nbytes == 3 and q.offsets["s8s8"] == 4
    buf = q.to_onednn_buffer()
    assert buf.size == 16 and bytes(buf[:4]) == b"\x01\x01\x01\x00"
    assert buf[4:].view("<i4").tolist() == [-128, -128, -128]


def test_scale_adjust_half():
    """§4.2: the sum runs over the stored, scale-adjusted q: 127.5 -> 64, 2.5 -> 1."""
    w = np.array([127.5, 2.5, -0.75, 0.0], np.float32).reshape(1, 4)
    q = ro.quantize(w, "ab", "ab", compensation=("s8s8", "zp"), scale_adjust=0.5)
    assert q.data.tolist() == [[64, 1, 0, 0]]
    assert q.zp_compensation.tolist() == [-65]
    assert q.compensation.tolist() == [-128 * 65]
    assert q.scale_adjust == 0.5


COMP_CASES = [
    # dims, stag, dtag, mask
    ((20, 10, 3, 3), "abcd", "ABcd4b16a4b", 1),
    ((80, 24, 3, 5), "abcd", "ABcd4b16a4b", 1),
    ((2, 20, 10, 3, 3), "abcde", "aBCde4c16b4c", 3),         # gOIhw4i16o4i: g*OCp + oc
    ((2, 20, 10, 3, 3), "abcde", "aBCde2c8b4c", 3),
    ((35, 1, 1, 3, 3), "abcde", "Abcde16a", 1),              # Goihw16g: G padded to 48
    ((64, 1, 1, 3), "abcd", "Abcd8a", 3),
    ((6, 2, 3, 5), "abcd", "Abcd4a", 3),                     # Ab4a: not g-major
    ((32, 20, 3, 3), "abcd", "cdba", 1),                     # hwio: OC entries, no padding
    ((89, 73), "ab", "BA16a64b4a", 2),                       # matmul: N padded to 128
    ((5, 89, 73), "abc", "aCB16b32c4b", 5),                  # batch x Np
    ((8, 8), "ab", "ba", 1),                                 # the v3.2 regression case
]


@pytest.mark.parametrize("dims,stag,dtag,mask", COMP_CASES, ids=[f"{d}-{m}" for _, _, d, m in COMP_CASES])
@pytest.mark.parametrize("comp", [("s8s8",), ("zp",), ("s8s8", "zp")], ids="+".join)
def test_compensation(dims, stag, dtag, mask, comp, simd):
    check_quantize(dims, stag, dtag, comp, mask)


@pytest.mark.parametrize("sdt", ["f32", "bf16", "s8", "f16"])
@pytest.mark.parametrize("adj", [1.0, 0.5])
def test_compensation_with_scales(sdt, adj, simd):
    dims = (40, 24, 3, 3)
    check_quantize(dims, "abcd", "ABcd4b16a4b", ("s8s8", "zp"), 1, sdt=sdt,
                   scales=qr.per_dim_scales(40) * 64, smask=1, adj=adj)
    check_quantize((2, 20, 8, 3, 3), "abcde", "aBCde4c16b4c", ("s8s8",), 3, sdt=sdt,
                   scales=qr.per_dim_scales(40) * 32, smask=3, adj=adj)


@pytest.mark.parametrize("hw", [(1, 1), (1, 2), (1, 3), (2, 2), (1, 5), (2, 3), (1, 7), (2, 4),
                                (3, 3), (2, 5), (1, 11), (3, 4), (4, 4)], ids=lambda hw: "%dx%d" % hw)
def test_weight_kernel_spatial_sizes(hw, simd):
    """The `4i16o4i` weight kernel takes 1..12 spatial points, four at a time through a 16x16
    transpose and the rest one by one; 16 points fall back to the tiles. 1x1 reaches it with
    the I blocks split back out of the i/4 node they fuse with. O and I not multiples
    of 16 leave padded rows and lanes, with per-o scales and both sums."""
    dims = (37, 21) + hw
    check_quantize(dims, "abcd", "ABcd4b16a4b", ("s8s8", "zp"), 1,
                   scales=qr.per_dim_scales(37) * 64, smask=1)
    check_quantize((32, 32) + hw, "abcd", "ABcd4b16a4b", ("s8s8",), 1, sdt="bf16")


def test_comp_layout_Ab4a():
    """Abcd4a with mask 3 -> Ab4a: entry (g % 4) + 4*o + 8*(g // 4), with o = 2 (§4.3)."""
    dims = (6, 2, 3, 5)
    w = np.zeros(dims, np.float32)
    for g in range(6):
        for o in range(2):
            w[g, o, 1, 2] = g * 2 + o + 1             # the sum over (h, w)
    q = ro.quantize(w, "abcd", "Abcd4a", compensation="zp", comp_mask=3)
    assert q.zp_compensation.size == 16                # G padded to 8, times O = 2
    for g in range(6):
        for o in range(2):
            assert q.zp_compensation[(g % 4) + 4 * o + 8 * (g // 4)] == -(g * 2 + o + 1)
    assert q.comp_desc.abc == "Ab4a"


def test_comp_layout_depthwise_padding():
    w = np.full((35, 1, 1, 3, 3), 2.0, np.float32)
    q = ro.quantize(w, "goihw", "Goihw16g", compensation="s8s8")
    assert q.compensation.shape == (48,)
    assert (q.compensation[:35] == -128 * 18).all() and not q.compensation[35:].any()


@pytest.mark.parametrize("dims,stag,dtag,mask", [
    ((250, 64, 3, 3), "abcd", "ABcd4b16a4b", 1),       # tile path, split over O blocks
    ((500, 250, 1, 1), "abcd", "ABcd4b16a4b", 1),      # 1x1 weights: I blocks split back out
    ((4, 60, 64, 3, 3), "abcde", "aBCde4c16b4c", 3),
    ((128, 128, 3, 3), "abcd", "cdba", 1),              # o in the lanes: one thread owns all
    ((513, 300), "ab", "BA16a64b4a", 2),
    ((300, 513), "ab", "ab", 2),                         # strided walk, split inside the run
])
def test_threads_identical(dims, stag, dtag, mask, simd):
    """Each compensation sum is owned by one thread: 1 and 2 threads give the same bytes
    (tensors large enough to start a thread team)."""
    scales = qr.per_dim_scales(math.prod(dims[d] for d in range(len(dims)) if mask >> d & 1)) * 64
    assert ro.plan(stag, dtag, dims=dims).moved_bytes >= 1 << 18      # a thread team starts
    a = check_quantize(dims, stag, dtag, ("s8s8", "zp"), mask, scales=scales, smask=mask, threads=1)
    b = check_quantize(dims, stag, dtag, ("s8s8", "zp"), mask, scales=scales, smask=mask, threads=2)
    np.testing.assert_array_equal(a.data, b.data)
    np.testing.assert_array_equal(a.compensation, b.compensation)
    np.testing.assert_array_equal(a.zp_compensation, b.zp_compensation)


def test_threads_identical_conversions(simd):
    """1 and 2 threads each give the reference's bytes (a tensor big enough for a team)."""
    x = np.random.default_rng(5).standard_normal((4, 96, 33, 35)).astype(np.float32) * 40
    for ddt in ("s8", "bf16", "f16", "u8"):
        for threads in (1, 2):
            got = check(x.reshape(-1), x.shape, "abcd", "aBcd16b", "f32", ddt, threads=threads,
                        src_scales=qr.per_dim_scales(96), src_scale_mask=2)
            assert got.shape == (4, 6, 33, 35, 16)


# ---------------------------------------------------------------------------------------------
# plans and the cache

def test_plan_cache_keys_scales_by_value():
    a = ro.plan("abcd", "aBcd16b", dims=(2, 20, 3, 3), dtype="s8",
                src_scales=np.array([0.5] * 20, np.float32), src_scale_mask=2)
    b = ro.plan("abcd", "aBcd16b", dims=(2, 20, 3, 3), dtype=np.int8,
                src_scales=[0.5] * 20, src_scale_mask=2)
    c = ro.plan("abcd", "aBcd16b", dims=(2, 20, 3, 3), dtype="int8",
                src_scales=[0.25] * 20, src_scale_mask=2)
    assert a is b and a is not c
    assert "convert" in a.kernel and "mask 2" in a.explain()
    x = np.full((2, 20, 3, 3), 3.0, np.float32)
    assert (a(x)[:, 1, :, :, 4:] == 0).all() and (a(x)[:, 0] == 2).all()   # 1.5 -> 2
    assert (c(x)[:, 0] == 1).all()                                       # 0.75 -> 1


@pytest.mark.parametrize("dtype", ["f16", "float16", np.float16, np.dtype("float16")])
def test_dtype_spellings(dtype):
    x = np.linspace(-2, 2, 40, dtype=np.float32).reshape(2, 20)
    y = ro.reorder(x, "ab", "ba", dtype=dtype)
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y, x.T.astype(np.float16))


def test_same_dtype_without_attributes_is_a_move():
    p = ro.plan("abcd", "aBcd16b", dims=(2, 20, 3, 3), dtype="f32")
    assert "convert" not in p.kernel
    q = ro.plan("abcd", "aBcd16b", dims=(2, 20, 3, 3), dtype="f32", src_scales=2.0)
    assert q.kernel == "convert"


def test_zero_size_dims():
    y = ro.reorder(np.zeros((0, 20, 3, 3), np.float32), "abcd", "aBcd16b", dtype="s8")
    assert y.shape == (0, 2, 3, 3, 16)
    q = ro.quantize(np.zeros((16, 0, 3, 3), np.float32), "oihw", "OIhw4i16o4i",
                    compensation="s8s8")
    assert q.compensation.shape == (16,) and not q.compensation.any()


@pytest.mark.slow                   # a Hypothesis search
def test_hypothesis_random_layouts():
    hyp = pytest.importorskip("hypothesis")
    st = hyp.strategies

    @hyp.settings(max_examples=60, deadline=None)
    @hyp.given(st.data())
    def prop(data):
        nd = data.draw(st.integers(2, 4))
        dims = tuple(data.draw(st.integers(1, 9)) for _ in range(nd))
        letters = "abcd"[:nd]

        def tag():
            perm = data.draw(st.permutations(letters))
            blk = data.draw(st.sampled_from([None, 4, 8, 16]))
            if blk is None:
                return "".join(perm)
            d = data.draw(st.sampled_from(letters))
            return "".join(c.upper() if c == d else c for c in perm) + f"{blk}{d}"
        stag, dtag = tag(), tag()
        sdt, ddt = data.draw(st.sampled_from(PAIRS))
        mask = data.draw(st.sampled_from([0, 1, 2, 3]))
        n = math.prod(dims)
        src = qr.place(values_for(sdt, n, np.random.default_rng(n)), dims, stag, sdt)
        count = math.prod(dims[d] for d in range(nd) if mask >> d & 1)
        kw = {"src_scales": qr.per_dim_scales(count), "src_scale_mask": mask} if mask else {}
        _convert.set_simd(data.draw(st.sampled_from(SIMD)))
        try:
            check(src, dims, stag, dtag, sdt, ddt, **kw)
        finally:
            _convert.set_simd(1)
    prop()


# ---------------------------------------------------------------------------------------------
# bad input: a clear ValueError / TypeError naming the part

W = np.ones((20, 10, 3, 3), np.float32)

BAD = [
    # (kwargs for reorder(W, "oihw", "OIhw16i16o", ...), exception, message fragment)
    (dict(dtype="s8", src_scales=np.ones(10, np.float32), src_scale_mask=1), ValueError,
     "src_scales has 10 values but mask 1 (dim a) of dims 20x10x3x3 needs 20"),
    (dict(dtype="s8", dst_scales=np.ones(20, np.float32)), ValueError,
     "dst_scales has 20 values but mask 0"),
    (dict(dtype="s8", src_scales=np.ones((10, 20), np.float32), src_scale_mask=3), ValueError,
     "src_scales has shape 10x20"),
    (dict(dtype="s8", src_scales=np.ones(20, np.float32), src_scale_mask=16), ValueError,
     "names a dim the 4-d tensor"),
    (dict(dtype="s8", src_scales=np.ones(60, np.float32), src_scale_mask=5), ValueError,
     "mask 5 (0b101) is not a contiguous run"),
    (dict(dtype="s8", src_scales=np.ones(20, np.float32), src_scale_mask=1,
          dst_scales=np.ones(10, np.float32), dst_scale_mask=2), ValueError,
     "they must use the same mask"),
    (dict(dtype="s8", src_scales=1.0, src_scale_mask=-1), ValueError, "negative"),
    (dict(dtype="s8", src_scales=1.0, src_scale_mask=1.5), TypeError, "src_scale_mask must be an int"),
    (dict(dtype="s8", src_scale_mask=1), ValueError, "src_scale_mask is given without src_scales"),
    (dict(dtype="s8", src_scales=np.ones(0, np.float32), src_scale_mask=1), ValueError,
     "src_scales is empty"),
    (dict(dtype="s8", src_scales="2"), TypeError, "src_scales must be a number"),
    (dict(dtype="s8", src_zero_point=3), ValueError,
     "src_zero_point=3 is set but src is f32; zero points apply only to integer tensors"),
    (dict(dtype="bf16", dst_zero_point=1), ValueError, "dst_zero_point=1 is set but dst is bf16"),
    (dict(dtype="s8", dst_zero_point=1.5), TypeError, "dst_zero_point must be an integer"),
    (dict(dtype="s8", dst_zero_point=np.array([1, 2])), ValueError,
     "dst_zero_point has shape 2 (2 values) but mask 15"),
    (dict(dtype="s8", dst_zero_point=2**40), ValueError, "does not fit in s32"),
    (dict(dtype="s8", dst_zero_point=1, sum_beta=1.0), ValueError,
     "sum_beta cannot be combined with a dst_zero_point"),
    (dict(dtype="s8", sum_beta="x"), TypeError, "sum_beta must be a number"),
    (dict(dtype="s32", src_dtype=None), None, None),                   # fine: f32 -> s32
    (dict(dtype="f4_e2m1"), ValueError, "unknown data type 'f4_e2m1'"),
]


@pytest.mark.parametrize("kw,exc,msg", BAD, ids=[str(i) for i in range(len(BAD))])
def test_bad_attributes(kw, exc, msg):
    if exc is None:
        ro.reorder(W, "oihw", "OIhw16i16o", **kw)
        return
    with pytest.raises(exc) as info:
        ro.reorder(W, "oihw", "OIhw16i16o", **kw)
    assert msg in str(info.value), str(info.value)
    if exc is ValueError:
        assert isinstance(info.value, ro.ReorderError)


BAD_Q = [
    (dict(compensation="s8s8", comp_mask=0), ValueError, "comp_mask=0 does not fit"),
    (dict(compensation="s8s8", comp_mask=16), ValueError, "comp_mask=16 does not fit"),
    (dict(compensation="s9s9"), ValueError, "compensation='s9s9': expected 's8s8', 'zp'"),
    (dict(comp_mask=1), ValueError, "comp_mask is given but no compensation"),
    (dict(compensation="zp", scale_adjust=0.3), ValueError, "scale_adjust must be 1.0 or 0.5"),
    (dict(scale_adjust="half"), TypeError, "scale_adjust must be 1.0 or 0.5"),
    (dict(scales=np.ones(7, np.float32), compensation="s8s8"), ValueError,
     "scales has 7 values but mask 1 (dim a) of dims 20x10x3x3 needs 20"),
    (dict(scales=np.ones(60, np.float32), scale_mask=5, compensation="s8s8", comp_mask=1),
     ValueError, "mask 5 (0b101) is not a contiguous run"),
]


@pytest.mark.parametrize("kw,exc,msg", BAD_Q, ids=[str(i) for i in range(len(BAD_Q))])
def test_bad_quantize(kw, exc, msg):
    with pytest.raises(exc) as info:
        ro.quantize(W, "oihw", "OIhw4i16o4i", **kw)
    assert msg in str(info.value), str(info.value)


def test_compensation_needs_s8():
    with pytest.raises(ValueError, match="quantize\\(\\) writes s8, but the dst descriptor is u8"):
        ro.quantize(W, "oihw", ro.Desc(W.shape, "u8", "OIhw4i16o4i"), compensation="s8s8")
    from reorder.core.attrs import make_attrs
    with pytest.raises(ValueError, match="compensation s8s8 needs an s8 destination, but dst is u8"):
        cached_plan(ro.Desc(W.shape, "f32", "oihw"), ro.Desc(W.shape, "u8", "OIhw4i16o4i"), None,
                    make_attrs(compensation="s8s8"))
    with pytest.raises(ValueError, match="compensation cannot be combined with zero points or sum"):
        cached_plan(ro.Desc(W.shape, "s8", "oihw"), ro.Desc(W.shape, "s8", "OIhw4i16o4i"), None,
                    make_attrs(compensation="zp", src_zero_point=1))


def test_dst_desc_disagreements():
    with pytest.raises(ValueError, match="dtype=s8 disagrees with the dst descriptor"):
        ro.reorder(W, "oihw", ro.Desc(W.shape, "f16", "OIhw16i16o"), dtype="s8")
    with pytest.raises(ValueError, match="dst descriptor dims"):
        ro.quantize(W, "oihw", ro.Desc((4, 4), "s8", "ab"))
    with pytest.raises(ValueError, match="out has dtype float32, but the result is s8"):
        ro.reorder(W, "oihw", "OIhw16i16o", dtype="s8", out=np.empty((2, 1, 3, 3, 16, 16), np.float32))


@pytest.mark.usefixtures("transpose_few_columns")
@pytest.mark.parametrize("stream", [False, True], ids=["cached-stores", "streaming-stores"])
@pytest.mark.parametrize("ddt", ["f16", "bf16"])
def test_half_rows_at_one_stride(ddt, stream, simd):
    """The 16-bit tile path has its own loop for 16 full rows at one stride (nChw16c from
    nchw): odd and even counts of 16-column chunks with and without a remainder, channel
    strides other than h*w (views), offset sources, and rows that are not at one stride
    (OIhw4i4o), all against the reference, with the plan's streaming threshold at 0 (every
    destination streams) and at 2**62 (none does)."""
    threshold = 0 if stream else 1 << 62
    rng = np.random.default_rng(11)

    def run(x, sdesc, dims, dtag):
        p = cached_plan(sdesc, ro.Desc(dims, ddt, dtag), stream_min_bytes=threshold)
        assert p.kernel == "convert" and type(p.runners[0]).__name__ == "ConvertTile", p.explain()
        assert p.runners[0].nt == stream
        got = p(x)
        assert got.shape == p.dst.physical_shape
        return got

    for hw in [(1, 16), (7, 16), (4, 8), (5, 16), (3, 19), (2, 40), (1, 15)]:
        dims = (2, 32) + hw
        src = values_for("f32", math.prod(dims), rng)
        got = run(src, ro.Desc(dims, "f32", "abcd"), dims, "aBcd16b")
        exp, _, _ = qr.ref_reorder(src, dims, "abcd", "aBcd16b", "f32", ddt)
        np.testing.assert_array_equal(bits(got).reshape(-1), bits(exp))
    x = rng.standard_normal((2, 64, 5, 16)).astype(np.float32)
    for view in [x[:, ::2], x[:, 16:48], x[1:, :, 1:4]]:
        got = run(view, ro.Desc.of(view), view.shape, "aBcd16b")
        n, c, h, w = view.shape
        exp = qr.from_f32(view, ddt).reshape(n, c // 16, 16, h, w).transpose(0, 1, 3, 4, 2)
        np.testing.assert_array_equal(bits(got), bits(exp))
    dims = (8, 8, 4, 9)
    src = values_for("f32", math.prod(dims), rng)
    got = run(src, ro.Desc(dims, "f32", "abcd"), dims, "ABcd4b4a")
    exp, _, _ = qr.ref_reorder(src, dims, "abcd", "ABcd4b4a", "f32", ddt)
    np.testing.assert_array_equal(bits(got).reshape(-1), bits(exp))


@pytest.mark.parametrize("ddt", ["f16", "bf16"])
def test_streaming_stores_large_half_outputs(ddt, simd):
    """A 2.9 MB 16-bit output through the default plan (streamed or not as the machine's
    threshold says; test_streaming forces both) and with scales: same bytes as the
    reference, padding and sum included."""
    x = np.random.default_rng(9).standard_normal((2, 72, 96, 96)).astype(np.float32) * 1e3
    x.reshape(-1)[::97] = np.float32(1e-40)                 # denormals: bf16 flushes them
    got = ro.reorder(x, "nchw", "nChw16c", dtype=ddt, threads=2)
    assert got.nbytes >= 2 << 20
    exp = qr.from_f32(x, ddt)
    full = np.zeros((2, 80, 96, 96), exp.dtype)
    full[:, :72] = exp
    exp = full.reshape(2, 5, 16, 96, 96).transpose(0, 1, 3, 4, 2)
    np.testing.assert_array_equal(bits(got), bits(exp))
    for threads in (1, 2):
        got = check(x.reshape(-1), x.shape, "abcd", "aBcd16b", "f32", ddt, threads=threads,
                    src_scales=0.5)
        assert got.shape == exp.shape


ROW_STREAMS = [("f32", "s8", {"dst_scales": 0.25, "dst_zero_point": -3}),
               ("f32", "u8", {"dst_scales": 0.25, "dst_zero_point": 100}),
               ("f32", "bf16", {}), ("f32", "f16", {}), ("f64", "f32", {}),
               ("f32", "s32", {"dst_scales": 1e-3}), ("f32", "f32", {"src_scales": 3.0}),
               ("f16", "u8", {}), ("f32", "u8", {"dst_zero_point": 100})]


@pytest.mark.parametrize("sdt,ddt,kw", ROW_STREAMS,
                         ids=[f"{s}-{d}-" + "-".join(kw) for s, d, kw in ROW_STREAMS])
def test_streamed_rows(sdt, ddt, kw, simd):
    """A plain conversion with its stores streamed (threshold 0): runs shorter than the
    streamed loop, an unaligned head up to the first 64-byte line of dst (outputs offset by
    0, 1 and 5 elements), whole lines, and a tail, against the reference."""
    rng = np.random.default_rng(zlib.crc32(f"{sdt} {ddt}".encode()))
    special = np.array([np.nan, np.inf, -np.inf, 1e10, -1e10, 127.5, -128.5, 255.5, -0.0,
                        0.5, 2.5, -2.5, 65504, 3e38], np.float64)
    for n in (37, 127, 128, 1000, 4099):
        src = values_for(sdt, n, rng)
        if sdt in ("f32", "f64"):         # the clamps, NaN and ties in every line position
            k = np.arange(0, n, 7)
            src[k] = special[k % special.size].astype(src.dtype)
        p = cached_plan(ro.Desc((n,), sdt, "a"), ro.Desc((n,), ddt, "a"), None,
                        make_attrs(**kw) if kw else None, 0)
        assert type(p.runners[0]).__name__ == "Convert" and p.runners[0].nt, p.explain()
        exp, _, _ = qr.ref_reorder(src, (n,), "a", "a", sdt, ddt, **{
            {"src_scales": "src_scales", "dst_scales": "dst_scales", "dst_zero_point": "dst_zp"}[k]: v
            for k, v in kw.items()})
        for off in (0, 1, 5):
            store = np.empty(n + off + 3, qr.NUMPY[ddt])
            store.view(np.uint8)[...] = 0x5A                # guards either side of out
            out = store[off:off + n]
            p(src, out=out)
            np.testing.assert_array_equal(bits(out), bits(exp))
            guards = np.concatenate([store[:off].view(np.uint8), store[off + n:].view(np.uint8)])
            assert (guards == 0x5A).all()


SRC_ZP_ROWS = [("u8", "f32"), ("s8", "f32"), ("u8", "bf16"), ("s8", "u8")]


@pytest.mark.parametrize("stream", [False, True], ids=["cached-stores", "streaming-stores"])
@pytest.mark.parametrize("sdt,ddt", SRC_ZP_ROWS, ids=[f"{s}-{d}" for s, d in SRC_ZP_ROWS])
def test_rows_with_a_src_scale_and_zero_point(sdt, ddt, stream, simd):
    """1-byte sources with one src scale and a zero point (u8 activations in) have rows of
    their own; runs of 1 to 4099 elements, whole and partial vectors and lines, the scale
    common, absent (the same rows, scaled by 1) and per element (which takes the rows for any
    arithmetic), against the reference."""
    rng = np.random.default_rng(zlib.crc32(f"{sdt} {ddt} zp".encode()))
    for n in (1, 37, 128, 1000, 4099):
        src = values_for(sdt, n, rng)
        for scales in (0.5, None, np.linspace(0.25, 4, n, dtype=np.float32)):
            kw = {"src_zero_point": 7}
            if scales is not None:
                kw["src_scales"] = scales
            if scales is not None and not np.isscalar(scales):
                kw["src_scale_mask"] = 1
            p = cached_plan(ro.Desc((n,), sdt, "a"), ro.Desc((n,), ddt, "a"), None,
                            make_attrs(**kw), 0 if stream else 1 << 62)
            assert type(p.runners[0]).__name__ == "Convert", p.explain()
            exp, _, _ = qr.ref_reorder(src, (n,), "a", "a", sdt, ddt,
                                       **{REF_NAMES[k]: v for k, v in kw.items()})
            out = aligned_empty((n,), qr.NUMPY[ddt])
            out.view(np.uint8)[...] = 0x5A
            p(src, out=out)
            np.testing.assert_array_equal(bits(out), bits(exp))


def test_tile_scratch_allocation_failure_raises_memory_error():
    """The tile runner's scratch comes from malloc; when that fails (simulated: it cannot be
    produced on purpose) the call raises MemoryError instead of returning an output that was
    never written. The next call, with memory back, is right."""
    x = np.random.default_rng(4).standard_normal((2, 35, 5, 19)).astype(np.float32)
    p = ro.plan(ro.Desc.of(x), ro.Desc(x.shape, "bf16", "aBcd16b"))
    assert type(p.runners[0]).__name__ == "ConvertTile", p.explain()
    _convert.set_alloc_failure(True)
    try:
        for threads in (1, 2):
            with pytest.raises(MemoryError, match="conversion tile scratch"):
                p(x, threads=threads)
    finally:
        _convert.set_alloc_failure(False)
    exp, _, _ = qr.ref_reorder(x.reshape(-1), x.shape, "abcd", "aBcd16b", "f32", "bf16")
    np.testing.assert_array_equal(bits(p(x)).reshape(-1), bits(exp))


# The conversion walk's grids (Convert.grid): a block's runs of 16 channels with their rows
# (blocks or pixels) and columns (pixels or blocks) in one SIMD call, cached or streamed.
GRID_CASES = [
    ("acdb", "aBcd16b", (2, 32, 5, 7)),      # nhwc -> nChw16c: rows the blocks, columns pixels
    ("aBcd16b", "acdb", (2, 48, 5, 7)),      # nChw16c -> nhwc: rows the blocks, columns pixels
                                             # (streamed: rows the pixels, columns blocks)
    ("aBcd16b", "acdb", (1, 144, 3, 5)),     # 9 blocks: rows not whole lines, cached
    ("aBcd16b", "acdb", (1, 192, 3, 5)),     # 12 blocks: streamed lines of 1, 2 or 4 blocks
    ("acdeb", "aBcde16b", (1, 64, 2, 3, 5)),
    ("acdb", "aBcd32b", (2, 64, 3, 5)),      # runs of 32 lanes: two vectors a run
    ("aBcd32b", "acdb", (2, 64, 3, 5)),
    ("acdb", "aBcd16b", (0, 32, 3, 3)),
]
GRID_PAIRS = [("f32", "s8", {"dst_scales": 0.25, "dst_zero_point": -3}),
              ("f32", "u8", {"dst_scales": np.linspace(0.1, 2, 192, dtype=np.float32),
                             "dst_scale_mask": 2, "dst_zero_point": 100}),
              ("f32", "bf16", {}), ("f32", "f16", {"sum_beta": 0.5}), ("bf16", "f32", {}),
              ("s8", "f32", {"src_scales": 0.5, "src_zero_point": 7}), ("u8", "f16", {}),
              ("u8", "f32", {"src_zero_point": 7}), ("f32", "u8", {"dst_zero_point": 100})]


@pytest.mark.parametrize("stream", [False, True], ids=["cached-stores", "streaming-stores"])
@pytest.mark.parametrize("sdt,ddt,kw", GRID_PAIRS,
                         ids=[f"{s}-{d}-" + "-".join(kw) for s, d, kw in GRID_PAIRS])
@pytest.mark.parametrize("stag,dtag,dims", GRID_CASES, ids=lambda v: "x".join(map(str, v))
                         if isinstance(v, tuple) else v)
def test_short_runs_convert_as_a_grid(stag, dtag, dims, sdt, ddt, kw, stream, simd):
    """nhwc <-> nChw16c in one pass: the walk takes each block's 16 channels as a grid of
    rows and columns, on every SIMD path, with the plan's streaming threshold at 0 and at
    2**62, on 1, 2 and 3 threads (a thread's range may start inside a column). Per-channel
    scales step along the rows (or the columns, which then go one at a time); sum reads dst
    back. Against the reference, bytes compared."""
    kw = dict(kw)
    if "dst_scale_mask" in kw:
        kw["dst_scales"] = kw["dst_scales"][:dims[1]]
    rng = np.random.default_rng(zlib.crc32(f"{stag} {dims} {sdt} {ddt}".encode()))
    sdesc, ddesc = ro.Desc(dims, sdt, stag), ro.Desc(dims, ddt, dtag)
    src = qr.place(values_for(sdt, math.prod(dims), rng), dims, stag, sdt)
    p = cached_plan(sdesc, ddesc, None, make_attrs(**kw), 0 if stream else 1 << 62)
    if not _convert.simd_available():
        # a CPU without AVX-512 has no grid code: the two-step plans, against the same reference
        assert not any(getattr(r, "grid", 0) for r in p.runners), p.explain()
    else:
        # per-channel scales step along nChw16c -> nhwc's columns (the blocks): rows only there
        want = (1 if "dst_scale_mask" in kw and stag.startswith("aB")
                else 2 if math.prod(dims) else 0)
        assert p.kernel == "convert" and p.runners[0].grid == want, p.explain()
        # nChw16c -> nhwc: streamed, the pixels are the rows, and as a pixel's blocks share
        # dst lines, threads split the pixels; cached, the blocks (fewer than the pixels
        # here) are the rows, each pixel a column writing its whole dst row
        if want == 2 and stag.startswith("aB"):
            r = p.runners[0]
            rows_are_blocks = "the rows are the node the destination runs on along" in p.explain()
            assert rows_are_blocks == (not r.nt), p.explain()
            assert (r.grid_split >= 0) == (not rows_are_blocks), p.explain()
            # the runner's own walk (Convert.walked, which explain() and the planner read):
            # columns, rows, lanes innermost
            lanes = int("".join(ch for ch in stag if ch.isdigit()))
            blocks, pixels = dims[1] // lanes, math.prod(dims[2:])
            want_walk = [pixels, blocks, lanes] if rows_are_blocks else [blocks, pixels, lanes]
            assert [ext for ext, _, _ in r.walked[-3:]] == want_walk, (r.walked, p.explain())
    check_plan(p, src, stag, dtag, sdesc, ddesc, kw, rng)


def test_grid_refused():
    """The kernel refuses a grid on nodes it cannot follow: lanes not a multiple of 16, a
    comp index, columns along a checked dim; and a thread split on any node but the rows."""
    lanes = [16, 1, 1, -1, 1, 0, 0]
    cols, rows = [4, 16, 48, -1, 1, 0, 0], [5, 16, 16, -1, 1, 0, 0]
    for nodes in ([cols, rows, [8, 1, 1, -1, 1, 0, 0]],           # 8 lanes
                  [cols, [5, 16, 16, -1, 1, 0, 1], lanes],        # a comp index on the rows
                  [[4, 16, 48, 2, 1, 0, 0], rows, lanes]):        # columns along a checked dim
        with pytest.raises(ValueError, match="grid 2"):
            _convert.Convert(0, 4, np.array(nodes, np.int64), np.array([[2, 3, 4]], np.int64),
                             _convert.Arith(), -1, False, 0, 2)
    nodes = np.array([cols, rows, lanes], np.int64)
    with pytest.raises(ValueError, match="grid_split 0"):     # threads split only the rows
        _convert.Convert(0, 4, nodes, np.zeros((0, 3), np.int64), _convert.Arith(), -1, False,
                         0, 2, 0)


@pytest.mark.parametrize("kw", [{"dst_scales": 0.25}, {"dst_scales": 0.25, "dst_zero_point": 9},
                                {"dst_scales": np.linspace(0.1, 2, 19, dtype=np.float32),
                                 "dst_scale_mask": 2}], ids=["scale", "zp", "per-channel"])
def test_grid_of_a_padded_block(kw, simd):
    """The grid kernel given a padded block by hand (nhwc -> nChw16c at C=19, which the
    planner leaves to two steps): each pixel's second block has 3 data lanes under its
    mask and 13 zeros. Against the reference on 1, 2 and 3 threads (ranges that start inside
    a pixel), dst starting as 0x5A."""
    dims = (2, 19, 3, 5)
    rng = np.random.default_rng(11)
    src = values_for("f32", math.prod(dims), rng)           # nhwc is dense: logical order
    nhwc = src.reshape(2, 19, 3, 5).transpose(0, 2, 3, 1).copy()
    sdesc = ro.Desc(dims, "f32", "acdb")
    ddesc = ro.Desc(dims, "s8", "aBcd16b")
    nodes = np.array([[2, 285, 480, -1, 1, 0, 0],          # n
                      [15, 19, 16, -1, 1, 0, 0],           # pixels: the columns
                      [2, 16, 240, 1, 16, 16 if "dst_scale_mask" in kw else 0, 0],  # blocks
                      [16, 1, 1, 1, 1, 1 if "dst_scale_mask" in kw else 0, 0]], np.int64)
    checked = np.array([[1, 19, 32]], np.int64)
    arith = arith_for(make_attrs(**kw).bind(sdesc, ddesc))
    r = _convert.Convert(0, 4, nodes, checked, arith, -1, False, 0, 2)
    ref_kw = {{"dst_scales": "dst_scales", "dst_zero_point": "dst_zp",
               "dst_scale_mask": "dst_mask"}[k]: v for k, v in kw.items()}
    exp, _, _ = qr.ref_reorder(src, dims, "abcd", "aBcd16b", "f32", "s8", **ref_kw)
    for threads in (1, 2, 3):
        out = np.full(ddesc.physical_shape, 0x5A, np.int8)
        r.run(nhwc.ctypes.data, out.ctypes.data, threads)
        np.testing.assert_array_equal(out.reshape(-1), exp)


# The tiles' 1-byte outputs: packed and transposed as bytes, four lane groups at a time
# (ConvertTile.groups) where a lane's source run along B is short, with bodies compiled for
# the common arithmetic; their 16-bit outputs: two groups at a time wherever they carry no
# arithmetic. Each case gives B's extent, which decides `groups` for 1-byte outputs.
TILE_NARROW_CASES = [
    ("aBcd16b", "abcd", (2, 32, 8, 12), 16),     # nChw16c -> nchw: 6 groups, 4 at once and 2
    ("aBcd16b", "abcd", (1, 16, 8, 10), 16),     # 5 groups: pairs and one left single
    ("acdb", "abcd", (2, 40, 8, 12), 40),        # nhwc -> nchw: chunks of 16 and a tail of 8
    ("abcd", "acdb", (2, 64, 7, 9), 63),         # nchw -> nhwc: four groups of planes
    ("abcd", "acdb", (1, 64, 40, 40), 1600),     # long runs of B: bytes one group at a time
    ("abcd", "acdb", (1, 48, 40, 40), 1600),     # 3 groups: words in a pair and one single
    ("abcd", "aBcd16b", (2, 32, 7, 9), 63),      # one group: 16 contiguous columns a store
    ("aBcd16b", "abcd", (2, 20, 8, 10), 16),     # a padded block: its last B partial
    ("abcd", "aBcd64b", (2, 50, 5, 7), 35),      # four groups, the last with 2 lanes of data
]
TILE_NARROW_PAIRS = [("f32", "s8", {}), ("f32", "s8", {"dst_scales": 0.25}),
                   ("f32", "u8", {"dst_scales": 0.25, "dst_zero_point": 100}),
                   ("f16", "u8", {"dst_scales": np.linspace(0.1, 2, 64, dtype=np.float32),
                                  "dst_scale_mask": 2}),
                   ("f32", "s8", {"sum_beta": 0.5}),
                   ("bf16", "s8", {"src_scales": 2.0, "dst_scales": 0.5, "dst_zero_point": -3}),
                   ("s8", "f32", {"src_scales": 0.5}),
                   ("u8", "f32", {"src_scales": 0.5, "src_zero_point": 7}),
                   ("f32", "bf16", {}), ("bf16", "f16", {}),
                   ("f32", "f16", {"sum_beta": 0.5}),               # sum: single groups
                   ("s8", "bf16", {"src_scales": 0.5})]             # a scale: single groups


@pytest.mark.parametrize("stream", [False, True], ids=["cached-stores", "streaming-stores"])
@pytest.mark.parametrize("sdt,ddt,kw", TILE_NARROW_PAIRS,
                         ids=[f"{s}-{d}-{'-'.join(k) or 'plain'}"
                              for s, d, k in TILE_NARROW_PAIRS])
@pytest.mark.parametrize("stag,dtag,dims,bext", TILE_NARROW_CASES,
                         ids=[f"{s}-{d}-{'x'.join(map(str, dims))}"
                              for s, d, dims, _ in TILE_NARROW_CASES])
def test_tiles_of_bytes_and_words(stag, dtag, dims, bext, sdt, ddt, kw, stream, simd):
    """Conversions through the tiles to and from 1-byte types and to 16-bit ones, on every
    SIMD path, with the plan's streaming threshold at 0 and at 2**62, on 1, 2 and 3 threads:
    whole and partial groups of four and pairs, chunks of 16 columns and their tails, a
    padded block, sum and scales on 16-bit outputs (which keep single groups), and each body
    the arithmetic is compiled for. Against the reference, bytes compared, dst starting as
    random bytes on a 64-byte line."""
    kw = dict(kw)
    if "dst_scale_mask" in kw:
        kw["dst_scales"] = kw["dst_scales"][:dims[1]]
    rng = np.random.default_rng(zlib.crc32(f"{stag} {dims} {sdt} {ddt}".encode()))
    sdesc, ddesc = ro.Desc(dims, sdt, stag), ro.Desc(dims, ddt, dtag)
    src = values_for(sdt, math.prod(dims), rng)
    if sdt in ("f32", "f16", "bf16"):            # the clamps, NaN and ties in every lane
        special = np.array([np.nan, np.inf, -np.inf, 1e10, -1e10, 127.5, -128.5, 255.5, -0.0,
                            0.5, 2.5, -2.5, 31.75, -0.125], np.float32)
        k = np.arange(0, src.size, 5)
        src[k] = qr.from_f32(special[k % special.size], sdt)
    src = qr.place(src, dims, stag, sdt)
    p = cached_plan(sdesc, ddesc, None, make_attrs(**kw), 0 if stream else 1 << 62)
    tiles = [r for r in p.runners if type(r).__name__ == "ConvertTile"]
    if "dst_scale_mask" in kw and dtag == "abcd":
        # per-channel scales along B (the channels) are not per lane: convert, then move
        assert not tiles, p.explain()
    else:
        short = bext * np.dtype(qr.NUMPY[sdt]).itemsize <= 4096
        groups = 2 if ddt in ("bf16", "f16") else 4 if ddt in ("s8", "u8") and short else 1
        assert tiles and tiles[0].groups == groups, p.explain()
    check_plan(p, src, stag, dtag, sdesc, ddesc, kw, rng)


def test_padded_block_lanes_with_whole_steps_before_them():
    """A padded block's lanes (C=1 of a 16-channel block) with an unchecked node before their
    rows: the walk takes them as a slab's grid of rows, one call a row set (grid 1), not with
    the node before (grid 2, which the slab's masked rows do not take). Found by the random
    layouts below; the plan used to be refused by the kernel."""
    dims = (2, 1, 2, 2)
    rng = np.random.default_rng(7)
    sdesc, ddesc = ro.Desc(dims, "f32", "BCDA16b"), ro.Desc(dims, "f64", "BDCA16b")
    src = qr.place(values_for("f32", math.prod(dims), rng), dims, "BCDA16b", "f32")
    for stream in (0, 1 << 62):
        p = cached_plan(sdesc, ddesc, None, make_attrs(), stream)
        check_plan(p, src, "BCDA16b", "BDCA16b", sdesc, ddesc, {}, rng, fill=0x5A)


# 16-bit outputs without arithmetic, lane groups in pairs: a position whose groups are all
# whole (an even number, every lane valid, whole chunks of columns) runs them in one loop of
# its own; the others (an odd count, a padded block's lanes, a partial chunk) take the
# group-at-a-time body, and every case ends in the same bytes as the reference.
WORD_PAIRS = [
    ("aBcd16b", "abcd", (1, 32, 48, 48)),       # 144 groups a position
    ("aBcd16b", "abcd", (2, 40, 4, 8)),         # the last block's 8 channels: group body
    ("aBcd16b", "abcd", (1, 16, 6, 8)),         # 3 groups: odd
    ("abcd", "acdb", (2, 64, 7, 16)),           # 4 groups a plane apart, 112 columns
    ("abcd", "acdb", (2, 32, 3, 7)),            # 21 columns: a partial chunk after one whole
]


@pytest.mark.parametrize("stream", [False, True], ids=["cached-stores", "streaming-stores"])
@pytest.mark.parametrize("ddt", ["bf16", "f16"])
@pytest.mark.parametrize("stag,dtag,dims", WORD_PAIRS, ids=lambda v: "x".join(map(str, v))
                         if isinstance(v, tuple) else v)
def test_word_tiles_in_pairs(stag, dtag, dims, ddt, stream, simd):
    rng = np.random.default_rng(zlib.crc32(f"{stag} {dims} {ddt}".encode()))
    sdesc, ddesc = ro.Desc(dims, "f32", stag), ro.Desc(dims, ddt, dtag)
    src = qr.place(values_for("f32", math.prod(dims), rng), dims, stag, "f32")
    p = cached_plan(sdesc, ddesc, None, make_attrs(), 0 if stream else 1 << 62)
    assert type(p.runners[0]).__name__ == "ConvertTile" and p.runners[0].groups == 2, \
        p.explain()
    check_plan(p, src, stag, dtag, sdesc, ddesc, {}, rng, fill=0x5A)


# Whole positions of 1-byte outputs in fours and of widened f32 and 16-bit outputs one group at
# a time, each in a loop of its own per arithmetic mode (none, a dst scale, a dst scale and zero
# point, a src scale, a src scale and zero point, any; a zero point without its scale takes its
# zero point's loop, scaled by 1); the shapes of WORD_PAIRS give them
# whole positions and the ones that take the group-at-a-time body (a padded block, 3 groups
# where fours need 4, a partial chunk; 24 channels into blocks: 8 valid lanes), and the sum
# reads dst, which the fours never take.
WHOLE_LOOPS = [
    ("f32", "s8", {}),
    ("f32", "s8", {"dst_scales": 0.25}),
    ("f32", "u8", {"dst_scales": 0.25, "dst_zero_point": 128}),
    ("f32", "s8", {"src_scales": 2.0, "dst_scales": 0.25}),             # any arithmetic
    ("u8", "s8", {"src_scales": 0.5, "src_zero_point": 3}),
    ("f32", "u8", {"sum_beta": 0.5}),
    ("bf16", "f32", {}),
    ("f16", "f32", {}),
    ("s8", "f32", {}),
    ("s8", "f32", {"src_scales": 0.5}),
    ("u8", "f32", {"src_scales": 0.5, "src_zero_point": 7}),
    ("u8", "f32", {"src_zero_point": 7}),                                # scaled by 1
    ("f32", "u8", {"dst_zero_point": 128}),                              # scaled by 1
    ("u8", "bf16", {"src_scales": 0.5, "src_zero_point": 7}),            # 16-bit outputs
    ("u8", "bf16", {"src_zero_point": 7}),
    ("s8", "f16", {}),
]


@pytest.mark.parametrize("stream", [False, True], ids=["cached-stores", "streaming-stores"])
@pytest.mark.parametrize("sdt,ddt,kw", WHOLE_LOOPS,
                         ids=[f"{a}-{b}-" + "-".join(f"{k}{v:g}" for k, v in kw.items())
                              for a, b, kw in WHOLE_LOOPS])
@pytest.mark.parametrize("stag,dtag,dims", WORD_PAIRS + [("abcd", "aBcd16b", (1, 24, 4, 16))],
                         ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else v)
def test_whole_positions_in_loops_of_their_own(stag, dtag, dims, sdt, ddt, kw, stream, simd):
    rng = np.random.default_rng(zlib.crc32(f"{stag} {dims} {sdt} {ddt}".encode()))
    sdesc, ddesc = ro.Desc(dims, sdt, stag), ro.Desc(dims, ddt, dtag)
    src = qr.place(values_for(sdt, math.prod(dims), rng), dims, stag, sdt)
    p = cached_plan(sdesc, ddesc, None, make_attrs(**kw), 0 if stream else 1 << 62)
    assert type(p.runners[0]).__name__ == "ConvertTile", p.explain()
    if ddt in ("s8", "u8") and "sum_beta" not in kw:
        assert p.runners[0].groups == 4, p.explain()
    check_plan(p, src, stag, dtag, sdesc, ddesc, kw, rng, fill=0x5A)


# The fours' bodies with a scale hold it in one register (the scales one value each, no mask);
# a scale per lane (channels as lanes: nchw -> nhwc with a per-channel scale) takes the body
# for any arithmetic, which reads each lane's own. Scales that differ per channel show a lane
# given another lane's scale.
FOUR_SCALES = [
    ("f32", "u8", {"dst_scales": "per channel", "dst_scale_mask": 2, "dst_zero_point": 128}),
    ("f32", "s8", {"dst_scales": "per channel", "dst_scale_mask": 2}),
    ("u8", "s8", {"src_scales": "per channel", "src_scale_mask": 2, "src_zero_point": 3}),
    ("u8", "s8", {"src_scales": 0.5, "src_zero_point": 3}),
    ("f32", "u8", {"dst_scales": 0.25, "dst_zero_point": 128}),
]


@pytest.mark.usefixtures("transpose_few_columns")
@pytest.mark.parametrize("sdt,ddt,kw", FOUR_SCALES,
                         ids=[f"{a}-{b}-" + "-".join(kw) for a, b, kw in FOUR_SCALES])
@pytest.mark.parametrize("dims", [(2, 64, 7, 16), (1, 128, 3, 5)],     # 112 columns; 15: groups
                         ids=lambda v: "x".join(map(str, v)))
def test_fours_with_one_scale_or_a_scale_per_lane(dims, sdt, ddt, kw, simd):
    rng = np.random.default_rng(zlib.crc32(f"{dims} {sdt} {ddt} {sorted(kw)}".encode()))
    kw = {k: np.linspace(0.05, 3.0, dims[1], dtype=np.float32) if v == "per channel" else v
          for k, v in kw.items()}
    sdesc, ddesc = ro.Desc(dims, sdt, "abcd"), ro.Desc(dims, ddt, "acdb")
    src = qr.place(values_for(sdt, math.prod(dims), rng), dims, "abcd", sdt)
    p = cached_plan(sdesc, ddesc, None, make_attrs(**kw), 1 << 62)
    assert type(p.runners[0]).__name__ == "ConvertTile" and p.runners[0].groups == 4, \
        p.explain()
    check_plan(p, src, "abcd", "acdb", sdesc, ddesc, kw, rng, fill=0x5A)


# f32 columns of the tiles, streamed when the plan streams: from 1-byte sources only in far
# planes (base.FAR_PLANE_BYTES), from wider ones wherever the lines are whole;
# widened, on more than one thread only where a lane group writes many far planes. (nt,
# streams on more than one thread)
TILE_F32_STREAMS = [
    ("abcd", "aBcd16b", (2, 35, 5, 19), "s32", "f32", {"src_zero_point": 5, "src_scales": 0.5},
     True, True),                            # a padded block's lanes: masked to zero
    ("acdb", "abcd", (1, 64, 32, 32), "s8", "f32", {"src_scales": 0.5}, True, True),
    ("acdb", "abcd", (1, 64, 32, 32), "u8", "f32", {"src_scales": 0.5, "src_zero_point": 7},
     True, True),
    ("acdb", "abcd", (1, 48, 32, 32), "s8", "f32", {"src_scales": 0.5}, True, False),
    ("abcd", "acdb", (1, 32, 32, 32), "s8", "f32", {"src_scales": 0.5}, False, False),  # near
    ("aBcd16b", "abcd", (2, 35, 4, 8), "bf16", "f32", {}, True, False),
    ("aBcd16b", "abcd", (2, 35, 4, 8), "f16", "f32", {"sum_beta": 0.5}, True, False),  # sum
]


@pytest.mark.parametrize("stag,dtag,dims,sdt,ddt,kw,nt,more", TILE_F32_STREAMS,
                         ids=[f"{s}-{d}-{'x'.join(map(str, dims))}-{a}-{b}"
                              for s, d, dims, a, b, _, _, _ in TILE_F32_STREAMS])
def test_tile_streams_f32_columns(stag, dtag, dims, sdt, ddt, kw, nt, more, simd):
    """The tiles' streamed f32 columns (threshold 0), against the reference on 1-3 threads,
    dst starting on a 64-byte line as 0x5A: padding lanes after a zero point, 1-byte sources
    in far planes (and in near ones, which stay cached), and sum, which reads dst and keeps
    its stores cached. The plan's explain() says where they stream on one thread only."""
    rng = np.random.default_rng(zlib.crc32(f"{stag} {dims} {sdt}".encode()))
    sdesc, ddesc = ro.Desc(dims, sdt, stag), ro.Desc(dims, ddt, dtag)
    src = qr.place(values_for(sdt, math.prod(dims), rng), dims, stag, sdt)
    p = cached_plan(sdesc, ddesc, None, make_attrs(**kw), 0)
    assert type(p.runners[0]).__name__ == "ConvertTile" and p.runners[0].nt == nt, p.explain()
    if nt:
        assert ("f32 columns widened" not in p.explain()) == more, p.explain()
    check_plan(p, src, stag, dtag, sdesc, ddesc, kw, rng, fill=0x5A)


# Lanes that are not whole groups of 16 (a 7x7 plane's 49 pixels, 19 or 33 channels of nhwc):
# the tile's last group ends at the last lane and overlaps the group before, writing the
# lanes they share twice with the same values. dst starts as 0x5A, so a group that ran past
# the last lane (into the next row's lanes, written before or after) or a lane left unwritten
# shows; a sum with dst, which the second write would add twice, keeps the other paths.
# (src tag, dst tag, dims, the tile's lanes, whether 1-byte outputs take the tile:
# convert.part_group_bytes_fit)
PART_GROUPS = [
    ("aBcd16b", "abcd", (2, 32, 7, 7), 49, True),    # 3 groups, the last at 33..48; fours
    ("aBcd16b", "abcd", (1, 19, 7, 7), 49, True),    # the same, and a padded block's 3 columns
    ("acdb", "abcd", (1, 21, 7, 7), 49, True),       # the same over 21 channels: a partial chunk
    ("aBcd16b", "abcd", (1, 16, 11, 11), 121, True),  # 8 groups, the last at 105
    ("aBcd16b", "abcd", (1, 32, 9, 9), 81, True),    # four groups at once, one, one at 65
    ("aBcd16b", "abcd", (1, 19, 5, 5), 25, False),   # a padded block (3 of 16 columns)
    ("acdb", "abcd", (2, 40, 3, 7), 21, False),      # 21 pixels over 40 channels
    ("abcd", "acdb", (2, 19, 4, 9), 19, False),      # 19 channels over 36 pixels
    ("abcd", "acdb", (1, 33, 2, 20), 33, True),      # the last group at 17..32
    ("acdb", "abcd", (1, 20, 1, 17), 17, False),     # the last group at 1..16
    ("abcd", "aBcd20b", (2, 30, 3, 5), 20, False),   # blocks of 20 lanes, the last 10 padding
]
PART_CONVERSIONS = [
    ("f32", "s8", {"dst_scales": 0.25}),
    ("f32", "u8", {"dst_scales": 0.25, "dst_zero_point": 128}),
    ("f32", "bf16", {}),
    ("f32", "f16", {}),
    ("bf16", "f32", {}),
    ("u8", "f32", {"src_scales": 0.5, "src_zero_point": 7}),
    ("u8", "bf16", {"src_zero_point": 7}),
    ("s8", "f32", {"src_scale_mask": 2}),       # a scale per channel (lanes into acdb)
    ("f32", "s8", {"sum_beta": 0.5}),           # not the tile: the overlap would sum twice
]


@pytest.mark.parametrize("stream", [False, True], ids=["cached-stores", "streaming-stores"])
@pytest.mark.parametrize("sdt,ddt,kw", PART_CONVERSIONS,
                         ids=[f"{a}-{b}-" + "-".join(k for k in kw) for a, b, kw in PART_CONVERSIONS])
@pytest.mark.parametrize("stag,dtag,dims,nlanes,bytes_fit", PART_GROUPS,
                         ids=[f"{s}-{d}-{'x'.join(map(str, v))}" for s, d, v, _, _ in PART_GROUPS])
def test_tile_lanes_not_whole_groups(stag, dtag, dims, nlanes, bytes_fit, sdt, ddt, kw, stream,
                                     simd):
    rng = np.random.default_rng(zlib.crc32(f"{stag} {dims} {sdt} {ddt}".encode()))
    if "src_scale_mask" in kw:
        kw = dict(kw, src_scales=np.linspace(0.25, 4.0, dims[1], dtype=np.float32))
    sdesc, ddesc = ro.Desc(dims, sdt, stag), ro.Desc(dims, ddt, dtag)
    src = qr.place(values_for(sdt, math.prod(dims), rng), dims, stag, sdt)
    p = cached_plan(sdesc, ddesc, None, make_attrs(**kw), 0 if stream else 1 << 62)
    # channel scales along B (the channels, into abcd) keep the tile out, as for whole groups
    tile = "sum_beta" not in kw and not ("src_scale_mask" in kw and dtag == "abcd") \
        and (bytes_fit or ddt not in ("s8", "u8"))
    tiles = [r.nlanes for r in p.runners if type(r).__name__ == "ConvertTile"]
    assert tiles == ([nlanes] if tile else []), p.explain()
    check_plan(p, src, stag, dtag, sdesc, ddesc, kw, rng, fill=0x5A)


@pytest.mark.parametrize("view", ["channels reversed", "pixels offset and strided"])
def test_tile_lanes_not_whole_groups_from_views(view, simd):
    """Views into a larger source (negative strides; an offset with a gap between rows) take
    the same overlapping last group, against the reference of the view's values."""
    rng = np.random.default_rng(5)
    base = values_for("f32", 2 * 40 * 7 * 9, rng).reshape(2, 40, 7, 9)
    v = base[:, ::-2] if view == "channels reversed" else base[:, 3:22, 1:, 2:]
    dims = v.shape
    desc = ro.Desc(dims, "f32", strides=[s // 4 for s in v.strides])
    p = ro.plan(desc, "acdb", dtype="bf16")
    assert type(p.runners[0]).__name__ == "ConvertTile" and p.runners[0].nlanes % 16, p.explain()
    got = ro.reorder(v, "abcd", "acdb", dtype="bf16")
    exp, _, _ = qr.ref_reorder(np.ascontiguousarray(v).reshape(-1), dims, "abcd", "acdb",
                               "f32", "bf16")
    np.testing.assert_array_equal(bits(got), bits(exp))


# Tiles whose dst rows lie a multiple of 4 KiB apart build a chunk of lanes of them in a
# scratch and copy each row's part out (convert._copy_lanes): nhwc -> nchw (rows: planes),
# nChw16c -> nchw at C=40 (the last block's rows past C not in dst), nchw -> nhwc at 1024
# channels (rows: pixels). Outputs of 2 and 4 bytes; C not a multiple of 16 (40, 24, 72).
# Chunks set to 96 lanes leave a short last one. (dims, src tag, dst tag, src, dst, keywords)
COPIED_TILES = [
    ((2, 40, 32, 32), "acdb", "abcd", "bf16", "f32", {}),
    ((1, 72, 64, 64), "acdb", "abcd", "s8", "f32", {"src_scales": 0.5}),
    ((2, 64, 32, 32), "acdb", "abcd", "u8", "f32", {"src_zero_point": 3, "src_scales": 0.25}),
    ((3, 24, 32, 64), "acdb", "abcd", "f32", "bf16", {}),
    ((1, 40, 64, 64), "acdb", "abcd", "f32", "f16", {"dst_scales": 0.25}),
    ((2, 40, 64, 64), "aBcd16b", "abcd", "bf16", "f32", {}),
    ((2, 40, 32, 64), "aBcd16b", "abcd", "f32", "bf16", {}),
    ((2, 1024, 3, 5), "abcd", "acdb", "bf16", "f32", {}),
]


@pytest.mark.usefixtures("transpose_few_columns")
@pytest.mark.parametrize("chunk", [96, None], ids=["ragged-chunks", "plan-chunks"])
@pytest.mark.parametrize("dims,stag,dtag,sdt,ddt,kw", COPIED_TILES,
                         ids=[f"{'x'.join(map(str, c[0]))}-{c[1]}-{c[3]}-{c[4]}"
                              for c in COPIED_TILES])
def test_tiles_into_rows_on_one_offset_copied_out_in_chunks(dims, stag, dtag, sdt, ddt, kw,
                                                            chunk, simd, monkeypatch,
                                                            fresh_plans):
    from reorder.kernels import convert
    if chunk:
        monkeypatch.setattr(convert, "TILE_COPY_LANES", chunk)
    rng = np.random.default_rng(zlib.crc32(f"{dims} {stag} {sdt} {ddt}".encode()))
    sdesc, ddesc = ro.Desc(dims, sdt, stag), ro.Desc(dims, ddt, dtag)
    src = qr.place(values_for(sdt, math.prod(dims), rng), dims, stag, sdt)
    for threshold, copied in ((1 << 62, True), (0, False)):
        p = cached_plan(sdesc, ddesc, None, make_attrs(**kw), threshold)
        runner = p.runners[0]
        assert type(runner).__name__ == "ConvertTile", p.explain()
        assert (runner.copy_lanes > 0) == (copied and not runner.nt), p.explain()
        if runner.copy_lanes and chunk:
            assert runner.copy_lanes == 96, p.explain()
        assert ("copied out a row at a time" in p.explain()) == (runner.copy_lanes > 0)
        check_plan(p, src, stag, dtag, sdesc, ddesc, kw, rng, fill=0x5A)


# (dims, src, dst, keywords): tiles into planes a multiple of 4 KiB apart that store directly:
# bytes, a sum with dst (read back), planes on two offsets, planes of 2 KiB
DIRECT_TILES = [((1, 64, 64, 64), "f32", "s8", {"dst_scales": 0.5}),
                ((1, 64, 64, 64), "bf16", "f32", {"sum_beta": 0.5}),
                ((1, 64, 56, 64), "bf16", "f32", {}),
                ((2, 64, 32, 32), "f32", "bf16", {})]


@pytest.mark.parametrize("dims,sdt,ddt,kw", DIRECT_TILES,
                         ids=[f"{'x'.join(map(str, c[0]))}-{c[1]}-{c[2]}" for c in DIRECT_TILES])
def test_tiles_into_other_planes_store_directly(dims, sdt, ddt, kw):
    p = cached_plan(ro.Desc(dims, sdt, "acdb"), ro.Desc(dims, ddt, "abcd"), None,
                    make_attrs(**kw), 1 << 62)
    assert type(p.runners[0]).__name__ == "ConvertTile" and p.runners[0].copy_lanes == 0, \
        p.explain()


def test_tile_copy_out_with_lanes_overlapping_their_last_group(simd):
    """40 lanes in tables of three groups, the last holding lanes 24..39, built 32 lanes at a
    time: the last chunk is that group alone, copied from lane 24. Against numpy; the runner
    refuses chunks that are not whole groups, and any with a sum with dst."""
    nodes = np.array([[1, 0, 0, -1, 1, 0, 0]], np.int64)
    none = np.zeros((0, 3), np.int64)
    C, L, ds = 16, 40, 1024                     # B: 16 planes 1024 floats apart
    lanes = np.concatenate([np.arange(32), np.arange(24, 40)]).astype(np.int64)
    tables = [lanes * C, np.zeros(48, np.int64), np.zeros(48, np.int64)]
    b = np.array([C, ds, 1, -1], np.int64)
    args = (3, 0, nodes, none)                  # bf16 -> f32
    common = (np.zeros((0, 48), np.int64), np.zeros(0, np.int64), b, False, 1, L)
    t = _convert.ConvertTile(*args, arith_for(make_attrs()), -1, *tables, *common, 32)
    assert t.copy_lanes == 32
    x = np.random.default_rng(5).integers(0, 1 << 16, (L, C)).astype(np.uint16)
    x &= 0x7F7F                                 # finite values
    dst = np.full((C, ds), 0x5A5A5A5A, np.uint32)
    t.run(x.ctypes.data, dst.ctypes.data, 1)
    want = dst.copy()
    want[:, :L] = (x.astype(np.uint32) << 16).T
    np.testing.assert_array_equal(dst, want)
    for lanes_ in (24, -16):
        with pytest.raises(ValueError, match="copy_lanes"):
            _convert.ConvertTile(*args, arith_for(make_attrs()), -1, *tables, *common, lanes_)
    with pytest.raises(ValueError, match="copy_lanes"):        # whole groups, a sum with dst
        _convert.ConvertTile(*args, arith_for(make_attrs(sum_beta=0.5)), -1, *tables,
                             *common[:-1], 48, 32)


def test_tile_lanes_overlapping_refuse_what_they_would_count_twice():
    """The tile runner refuses overlapping lanes with a sum with dst (at construction) and
    compensation sums (at the call), which the shared lanes' second write would add twice;
    the planner never asks for either, and quantize() with compensation on such a shape
    stays exact."""
    nodes = np.array([[1, 0, 0, -1, 1, 0, 0]], np.int64)
    none = np.zeros((0, 3), np.int64)
    lanes = np.concatenate([np.arange(16), np.arange(4, 20)]).astype(np.int64)
    tables = [lanes * 4, np.zeros(32, np.int64), np.zeros(32, np.int64)]
    b = np.array([4, 20, 1, -1], np.int64)
    args = (0, 4, nodes, none)
    summed = arith_for(make_attrs(sum_beta=0.5))
    with pytest.raises(ValueError, match="sum with dst"):
        _convert.ConvertTile(*args, summed, -1, *tables, np.zeros((0, 32), np.int64),
                             np.zeros(0, np.int64), b, False, 1, 20)
    with pytest.raises(ValueError, match="groups of 16"):
        _convert.ConvertTile(*args, arith_for(make_attrs()), -1, *tables,
                             np.zeros((0, 32), np.int64), np.zeros(0, np.int64), b, False, 1, 16)
    t = _convert.ConvertTile(*args, arith_for(make_attrs()), -1, *tables,
                             np.zeros((0, 32), np.int64), np.zeros(0, np.int64), b, False, 1, 20)
    src = np.zeros(4 * 20, np.float32)
    dst = np.zeros(4 * 20, np.int8)
    acc = np.zeros(20, np.int32)
    with pytest.raises(ValueError, match="compensation"):
        t.run(src.ctypes.data, dst.ctypes.data, 1, acc.ctypes.data)
    check_quantize((40, 20, 3, 3), "abcd", "acdb", ("s8s8", "zp"), 1)


# Tiles whose B lies in far dst rows or planes take B in slices where the stores stay
# cached, a multiple of 16 dividing B: in nchw -> nhwc (B the pixels, a dst row of every
# channel each) rows that fit TILE_DST_BYTES; where B is far planes (base.far_plane_slice:
# nhwc -> nchw, and nchw -> nhwc with rows of 4 KiB) 128 bytes over the output's element
# size, at most 64; widening into f32, 16 where the planes start at one or two 4 KiB
# offsets, and from 8 offsets up only by the Xeon's rules (machine.TileRules) or where fewer
# than 4 positions share the threads (convert.TILE_SHARED_POSITIONS).
# (dims, src tag, src, dst, keywords, the slice with the Xeon's rules, with the others':
# 0 when B stays whole)
ROWS, FAR = "dst rows <= 128.00 KiB)", "far dst planes, "
SLICED_TILES = [
    ((1, 520, 9, 32), "abcd", "bf16", "f32", {}, 48, 48, ROWS),  # 520 lanes: a last group overlaps
    ((2, 768, 12, 20), "abcd", "f32", "s8", {"dst_scales": 0.25}, 80, 80, ROWS),
    ((2, 1024, 8, 20), "abcd", "f32", "u8", {"dst_scales": "per channel", "dst_scale_mask": 2,
                                             "dst_zero_point": 128}, 32, 32, FAR),
    ((1, 512, 12, 12), "abcd", "u8", "f32", {"src_zero_point": 3, "src_scales": 0.5}, 48, 48, ROWS),
    ((1, 256, 7, 33), "abcd", "f16", "f32", {"sum_beta": 0.5}, 0, 0, ROWS),  # 231: no slice divides
    ((1, 64, 16, 16), "abcd", "f32", "bf16", {}, 0, 0, ROWS),    # 256 rows of 128 bytes fit
    ((4, 96, 33, 33), "acdb", "bf16", "f32", {}, 32, 0, FAR),     # 96 planes, 1024 offsets
    ((1, 80, 48, 48), "acdb", "f16", "f32", {}, 16, 16, FAR),     # 4 offsets: 32 would not divide
    ((4, 128, 40, 40), "acdb", "s8", "f32", {"src_scales": 0.5}, 32, 0, FAR),    # 16 offsets
    ((2, 128, 40, 40), "acdb", "s8", "f32", {"src_scales": 0.5}, 32, 32, FAR),   # 2 positions
    ((1, 64, 32, 32), "acdb", "u8", "f32", {"src_zero_point": 7}, 16, 16, FAR),  # one offset
    ((1, 96, 56, 64), "acdb", "bf16", "f32", {}, 16, 16, FAR),    # two offsets
    ((1, 64, 112, 112), "acdb", "s8", "f32", {"src_scales": 0.5}, 32, 32, FAR),  # four
    ((1, 256, 32, 32), "acdb", "f32", "s8", {"dst_scales": 0.5}, 64, 64, FAR),
    ((1, 192, 48, 48), "acdb", "f32", "bf16", {}, 64, 64, FAR),
    ((1, 64, 64, 64), "acdb", "f32", "f16", {}, 0, 0, FAR),       # 64 planes of 16-bit: whole
]


@pytest.mark.parametrize("stream", [False, True], ids=["cached-stores", "streaming-stores"])
@pytest.mark.parametrize("dims,stag,sdt,ddt,kw,xeon,other,rule", SLICED_TILES,
                         ids=[f"{'x'.join(map(str, c[0]))}-{c[1]}-{c[2]}-{c[3]}"
                              for c in SLICED_TILES])
def test_cached_tiles_slice_far_dst_rows(dims, stag, sdt, ddt, kw, xeon, other, rule, stream,
                                         simd, tile_rules):
    want = xeon if tile_rules.slice_widening_planes else other
    rng = np.random.default_rng(zlib.crc32(f"{dims} {stag} {sdt} {ddt} {sorted(kw)}".encode()))
    kw = {k: np.linspace(0.05, 3.0, dims[1], dtype=np.float32) if v == "per channel" else v
          for k, v in kw.items()}
    dtag = "acdb" if stag == "abcd" else "abcd"
    sdesc, ddesc = ro.Desc(dims, sdt, stag), ro.Desc(dims, ddt, dtag)
    src = qr.place(values_for(sdt, math.prod(dims), rng), dims, stag, sdt)
    p = cached_plan(sdesc, ddesc, None, make_attrs(**kw), 0 if stream else 1 << 62)
    assert type(p.runners[0]).__name__ == "ConvertTile", p.explain()
    sliced = [ln for ln in p.explain().splitlines() if "B in slices of" in ln]
    if want and not p.runners[0].nt:
        assert len(sliced) == 1 and sliced[0].startswith(
            f"  tiles: B in slices of {want} a position (cached stores: {rule}"), p.explain()
    else:
        assert sliced == [], p.explain()
    # B whole by the kind's rule alone (Xeon slices it): explain() says so
    by_rule = not want and xeon and not p.runners[0].nt
    assert ("B whole a position" in p.explain()) == by_rule, p.explain()
    check_plan(p, src, stag, dtag, sdesc, ddesc, kw, rng, fill=0x5A)


# Images between nhwc and nchw: where the move alone takes the interleave kernel, the
# conversion runs as that move and a conversion on an unchanged layout (narrowing first, so
# the move carries the narrower type; a sum reads dst back, so it stays last), against the
# reference on every thread count. (dims, src tag, dst tag, src, dst, keywords, kernel)
IMAGES = [
    ((2, 3, 19, 23), "acdb", "abcd", "u8", "f32", {"src_scales": 1 / 255}, "interleave+convert"),
    ((2, 3, 19, 23), "abcd", "acdb", "f32", "u8",
     {"dst_scales": 1 / 255, "dst_zero_point": 3}, "convert+interleave"),
    ((1, 4, 16, 40), "acdb", "abcd", "f32", "bf16", {}, "convert+interleave"),
    ((1, 4, 16, 40), "abcd", "acdb", "bf16", "f32", {}, "interleave+convert"),
    ((3, 3, 8, 9), "acdb", "abcd", "s8", "f32", {"src_scales": 0.5, "sum_beta": 0.5},
     "interleave+convert"),
    ((2, 3, 5, 33), "acdb", "abcd", "f32", "s8", {"dst_scales": 0.1, "sum_beta": 1.0},
     "interleave+convert"),
]


@pytest.mark.parametrize("dims,stag,dtag,sdt,ddt,kw,kernel", IMAGES,
                         ids=[f"{c[3]}-{c[4]}-{c[1]}-{c[2]}-{'-'.join(c[5]) or 'plain'}"
                              for c in IMAGES])
def test_images_move_then_convert(dims, stag, dtag, sdt, ddt, kw, kernel, simd):
    from reorder import _kernels
    rng = np.random.default_rng(zlib.crc32(f"{dims} {stag} {sdt} {ddt}".encode()))
    sdesc, ddesc = ro.Desc(dims, sdt, stag), ro.Desc(dims, ddt, dtag)
    src = qr.place(values_for(sdt, math.prod(dims), rng), dims, stag, sdt)
    before = src.copy()
    p = cached_plan(sdesc, ddesc, None, make_attrs(**kw), 1 << 62)
    moved = sdesc.dtype.itemsize if kernel.startswith("interleave") else ddesc.dtype.itemsize
    if _kernels.interleave_paths(moved):
        assert p.kernel == kernel, p.explain()
        assert "a conversion on an unchanged layout" in p.explain()
    check_plan(p, src, stag, dtag, sdesc, ddesc, kw, rng)
    np.testing.assert_array_equal(bits(src), bits(before))
