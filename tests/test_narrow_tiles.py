"""Moves of 1- and 2-byte elements (bf16, f16, s8, u8) through the register-transpose tiles
(AVX-512 F+BW on the "avx512" path when the CPU has BW, else AVX2): each case asserts the
tile path it runs (so a silent fall back to the portable loops fails)
and compares with the independent reference bit for bit, padding included, on every SIMD
path this CPU has, with streaming stores forced on and off, for 1, 2 and 3 threads."""
import numpy as np
import pytest

import reorder as ro
from reorder import _kernels
from reorder.plan.cache import cached_plan

from reorder.testing.reference import ref_from_plain, ref_physical_shape, ref_reorder, uint_view
from simd_paths import kernel_paths
from storage_values import random_storage, sentinel

# the transpose kernel's tiles, also on the small byte planes the block kernel takes where
# the CPU has AVX-512 VBMI (test_block_kernel.py)
pytestmark = pytest.mark.usefixtures("transpose_small_byte_planes", "transpose_few_columns")

# (src tag, dst tag, dims): short A (16 rows), long A, ragged columns, padding on either side,
# B over two src nodes (hw then i16), A over two dst nodes (i4 then o16)
CASES = [
    ("abcd", "aBcd16b", (2, 35, 7, 9)),           # C padded, 63 columns: full and ragged
    ("abcd", "aBcd16b", (1, 16, 8, 8)),           # whole tiles only
    ("abcd", "aBcd16b", (2, 3, 20, 20)),          # C=3: 13 rows of zeros per tile
    ("abcd", "aBcd16b", (3, 64, 12, 12)),         # aligned whole tiles (the streamed path)
    ("abcd", "aBcd8b", (2, 17, 5, 19)),           # 8-row tiles: written rows a prefix
    ("aBcd16b", "abcd", (2, 35, 7, 9)),
    ("aBcd16b", "abcd", (2, 32, 10, 10)),         # 100 rows: 3 tall tiles and a 4-row one
    ("abcd", "acdb", (3, 37, 6, 7)),              # nchw -> nhwc, C=37
    ("abcd", "acdb", (2, 64, 9, 9)),
    ("acdb", "abcd", (2, 19, 5, 17)),             # nhwc -> nchw
    ("abcd", "ABcd16b16a", (35, 33, 3, 3)),       # oihw -> OIhw16i16o
    ("ABcd16b16a", "abcd", (20, 10, 3, 3)),
    ("abcd", "ABcd4b16a4b", (35, 21, 3, 3)),      # oihw -> OIhw4i16o4i, O and I padded
    ("ABcd4b16a4b", "abcd", (35, 21, 3, 3)),
    ("abcd", "aBcd16b", (1, 1, 1, 1)),            # size-1 dims
    ("abcd", "aBcd16b", (0, 20, 4, 4)),           # zero-size
    # the AVX-512 word tiles' masked edges: 16x32 with 32-column blocks, 32x16 with 32-row ones
    ("abcd", "aBcd16b", (2, 30, 33, 1)),          # C=30 padded, 33 columns: one full, one of 1
    ("abcd", "aBcd16b", (1, 17, 1, 1)),           # one column, 15 rows of padding
    ("aBcd16b", "abcd", (2, 30, 9, 7)),           # 63 rows, second C block 14 columns short
    ("acdb", "abcd", (3, 40, 7, 9)),              # nhwc -> nchw: 63 rows far apart, B = 40
    ("abcd", "acdb", (2, 33, 1, 40)),             # nchw -> nhwc: C = 32 + 1
    ("abcd", "acdb", (1, 1, 5, 5)),
    ("abcd", "aBcd32b", (2, 45, 6, 7)),           # A = c32, padded: 32x16 with masked rows
    # bytes into dst rows whole lines apart: the AVX-512 64x16 tile, ragged B; C=100 in
    # blocks of 64 (the second block's 36 rows to the AVX2 code, 4 of them element-wise)
    ("abcd", "acdb", (2, 128, 9, 9)),
    ("abcd", "aBcd64b", (2, 100, 9, 9)),
    ("abcde", "acdeb", (1, 64, 3, 5, 7)),         # ncdhw -> ndhwc
    ("abcd", "acdb", (2, 80, 9, 9)),              # rows 80 bytes apart: the AVX2 tile
    # back from blocks of 16 with the last one short (8 and 8 of 16 channels): the tall
    # tile's ragged columns, 400 and 135 rows (a last group of 16 and of 7 under 64)
    ("aBcd16b", "abcd", (2, 24, 20, 20)),
    ("aBcd16b", "abcd", (1, 40, 9, 15)),
]
# the byte cases that take the AVX-512 64x16 tile (A of 64 rows or more into dst rows whole
# lines apart, src rows more than a line apart)
LINE_TILES = {(2, 64, 9, 9), (2, 128, 9, 9), (2, 100, 9, 9), (1, 64, 3, 5, 7)}

DTYPES = ["bf16", "f16", "s8", "u8"]

simd = kernel_paths("avx512", "avx2")

# The 1- and 2-byte AVX-512 tiles need BW besides F; on F alone the "avx512" path runs AVX2.
HAS_BW = _kernels.cpu_features()["avx512 f+bw"]


def few_rows_fit(stag, dtag, dims, size):
    """Whether the first channel block of a plain -> blocked move has so few data rows that
    the few-rows tile takes it: its data fits a word of 8 bytes, its block 16, 32 or 64."""
    if stag != "abcd" or not dtag.startswith("aBcd") or dtag == "aBcd":
        return False
    block = int(dtag[4:-1])
    return min(dims[1], block) * size <= 8 and block * size in (16, 32, 64)


def narrow_isa(path):
    """The tile family ("avx512" or "avx2") a SIMD path runs 2-byte moves with (bytes take
    the AVX2 tiles but in LINE_TILES: docs/kernels/transpose.md)."""
    return "avx512" if path == "avx512" and HAS_BW else "avx2"



@pytest.mark.parametrize("streaming", [False, True], ids=["cached", "streamed"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("stag,dtag,dims", CASES)
def test_narrow_tile_matches_reference(simd, streaming, stag, dtag, dims, dtype):
    rng = np.random.default_rng(7)
    plain_tag = "abcdefgh"[:len(dims)]
    plain = random_storage(dims, dtype, rng)
    x = ref_from_plain(plain, plain_tag, stag) if stag != plain_tag else plain
    p = cached_plan(ro.Desc(dims, dtype, stag), ro.Desc(dims, dtype, dtag),
                    stream_min_bytes=0 if streaming else 1 << 62)
    x = x.reshape(p.src.physical_shape)
    expected = ref_reorder(x.reshape(-1), dims, stag, dtag).reshape(ref_physical_shape(dims, dtag))
    if 0 not in dims and len(p.steps) == 1 and p.kernel == "transpose" \
            and p.steps[0].problem.itemsize == p.src.dtype.itemsize:
        tile = p.runners[0].tile
        if simd is False:
            assert tile == "portable"
        elif few_rows_fit(stag, dtag, dims, p.src.dtype.itemsize):
            assert tile.endswith("few rows"), (tile, p.explain())
        elif p.src.dtype.itemsize == 2:
            # the AVX-512 path hands A rows close together (nChw16c -> nchw) with cached
            # stores to the AVX2 tile, which is faster there
            families = {narrow_isa(simd) + " words", "avx2 words"}
            assert tile.rsplit(" ", 1)[0] in families, (tile, p.explain())
        elif simd == "avx512" and HAS_BW and dims in LINE_TILES:
            assert tile == "avx512 bytes 64x16", (tile, p.explain())
        else:
            assert tile.startswith("avx2 bytes"), (tile, p.explain())
    for threads in (1, 2, 3):
        out = sentinel(p.dst.physical_shape, x.dtype)
        p(x, out=out, threads=threads)
        assert np.array_equal(uint_view(out), uint_view(expected)), (threads, p.explain())


# the tile each activation case must take, by element size, on the AVX2 and AVX-512 paths
# (cached stores: these are small)
TILE_OF = [
    ("nchw", "nChw16c", (2, 48, 20, 20), {2: "avx2 words 16x16", 1: "avx2 bytes 16x16"},
     {2: "avx512 words 16x32", 1: "avx2 bytes 16x16"}),
    ("nChw16c", "nchw", (2, 48, 20, 20), {2: "avx2 words 16x8", 1: "avx2 bytes 32x16"},
     {2: "avx2 words 16x8", 1: "avx2 bytes 32x16, avx512 edges"}),
    ("nchw", "nhwc", (2, 48, 20, 20), {2: "avx2 words 16x8", 1: "avx2 bytes 16x16"},
     {2: "avx512 words 32x16", 1: "avx2 bytes 16x16"}),
    ("nhwc", "nchw", (2, 48, 20, 20), {2: "avx2 words 16x8", 1: "avx2 bytes 32x16"},
     {2: "avx512 words 32x16", 1: "avx2 bytes 32x16, avx512 edges"}),
    # A = hw then i16 (2704 rows), B = o16: each dst row gets whole runs of i*hw (13x13: a
    # block too big for the block kernel's scratch, which takes the small-spatial weights)
    ("OIhw16i16o", "oihw", (64, 48, 13, 13), {2: "avx2 words 16x8", 1: "avx2 bytes 16x16"},
     {2: "avx512 words 32x16", 1: "avx2 bytes 16x16"}),
]


@pytest.mark.parametrize("path", ["avx512", "avx2"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("stag,dtag,dims,avx2_tiles,avx512_tiles", TILE_OF)
def test_activation_moves_take_the_register_tile(stag, dtag, dims, avx2_tiles, avx512_tiles,
                                                 dtype, path):
    if path not in _kernels.simd_paths():
        pytest.skip(f"this CPU has no {path}")
    p = ro.plan(ro.Desc(dims, dtype, stag), ro.Desc(dims, dtype, dtag))
    assert p.kernel == "transpose" and len(p.runners) == 1, p.explain()
    tiles = avx512_tiles if narrow_isa(path) == "avx512" else avx2_tiles
    try:
        _kernels.set_simd(path)
        assert p.runners[0].tile == tiles[p.src.dtype.itemsize], p.explain()
    finally:
        _kernels.set_simd(True)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("view", ["negative", "offset", "both"])
def test_views_through_narrow_tiles(view, dtype):
    """Negative-stride and offset views of an nchw source: the channel axis is reversed or
    starts inside a bigger buffer, h*w stays contiguous, so the tile still runs."""
    rng = np.random.default_rng(11)
    big = random_storage((3, 45, 9, 11), dtype, rng)
    v = {"negative": big[:, ::-1], "offset": big[1:, 5:], "both": big[1:, :4:-1]}[view]
    if dtype == "bf16":
        got = ro.reorder(v, "nchw", "nChw16c", src_dtype="bf16")
        p = ro.plan(ro.Desc.of(v, dtype="bf16"), "nChw16c")
    else:
        got = ro.reorder(v, "nchw", "nChw16c")
        p = ro.plan(ro.Desc.of(v), "nChw16c")
    assert p.kernel == "transpose", p.explain()
    if "avx2" in _kernels.simd_paths():
        isa = narrow_isa(_kernels.simd_paths()[0]) if p.src.dtype.itemsize == 2 else "avx2"
        assert p.runners[0].tile.startswith(isa), p.explain()
    expected = ref_from_plain(np.ascontiguousarray(v), "abcd", "aBcd16b")
    assert got.shape == expected.shape
    assert np.array_equal(uint_view(got), uint_view(expected))
    assert np.array_equal(uint_view(v), uint_view(np.ascontiguousarray(v)))   # input untouched


# Cases that must run the AVX-512 word tiles (with BW), streaming forced on: the masked edges
# of both shapes, one- and two-level rows, A rows adjacent (nChw16c -> nchw streams there).
AVX512_WORDS = [
    ("abcd", "aBcd16b", (2, 35, 7, 9), "avx512 words 16x32"),
    ("abcd", "aBcd16b", (2, 30, 33, 1), "avx512 words 16x32"),
    ("abcd", "aBcd16b", (2, 7, 20, 20), "avx512 words 16x32"),
    ("abcd", "aBcd8b", (2, 17, 5, 19), "avx512 words 16x32"),
    ("abcd", "ABcd16b16a", (35, 33, 13, 13), "avx512 words 16x32"),     # B = hw then i16
    ("abcd", "ABcd16b16a", (20, 40, 11, 12), "avx512 words 16x32"),
    ("aBcd16b", "abcd", (2, 30, 9, 7), "avx512 words 32x16"),
    ("aBcd16b", "abcd", (2, 32, 10, 10), "avx512 words 32x16"),
    ("acdb", "abcd", (3, 40, 7, 9), "avx512 words 32x16"),
    ("abcd", "acdb", (3, 37, 6, 7), "avx512 words 32x16"),
    ("abcd", "aBcd32b", (2, 45, 6, 7), "avx512 words 32x16"),
    ("abcd", "ABcd4b16a4b", (35, 21, 13, 13), "avx512 words 32x16"),    # A = i4 then o16
    ("abcd", "ABcd4b16a4b", (20, 40, 11, 12), "avx512 words 32x16"),
]


@pytest.mark.skipif(not HAS_BW, reason="this CPU has no AVX-512 BW")
@pytest.mark.parametrize("streaming", [False, True], ids=["cached", "streamed"])
@pytest.mark.parametrize("stag,dtag,dims,tile", AVX512_WORDS)
def test_avx512_word_tiles_match_reference(stag, dtag, dims, tile, streaming):
    rng = np.random.default_rng(5)
    plain = random_storage(dims, "bf16", rng)
    x = ref_from_plain(plain, "abcd", stag) if stag != "abcd" else plain
    p = cached_plan(ro.Desc(dims, "bf16", stag), ro.Desc(dims, "bf16", dtag),
                    stream_min_bytes=0 if streaming else 1 << 62)
    assert p.kernel == "transpose" and len(p.steps) == 1, p.explain()
    x = x.reshape(p.src.physical_shape)
    expected = ref_reorder(x.reshape(-1), dims, stag, dtag).reshape(ref_physical_shape(dims, dtag))
    try:
        _kernels.set_simd("avx512")
        # cached nChw16c -> nchw goes to the AVX2 tile (A rows adjacent in src)
        want = "avx2 words 16x8" if not streaming and stag == "aBcd16b" else tile
        assert p.runners[0].tile == want, p.explain()
        for threads in (1, 2):
            out = sentinel(p.dst.physical_shape, x.dtype)
            p(x, out=out, threads=threads)
            assert np.array_equal(uint_view(out), uint_view(expected)), (threads, p.explain())
    finally:
        _kernels.set_simd(True)


@pytest.mark.skipif(not HAS_BW, reason="this CPU has no AVX-512 BW")
@pytest.mark.parametrize("view", ["negative", "offset", "both"])
@pytest.mark.parametrize("dst", ["nChw16c", "nhwc"])
def test_avx512_word_tiles_on_views(view, dst):
    """Strided, negative-stride and offset nchw views through both AVX-512 word tiles, into
    a destination given with out=."""
    rng = np.random.default_rng(13)
    big = random_storage((3, 70, 9, 11), "bf16", rng)
    v = {"negative": big[:, ::-1], "offset": big[1:, 5:], "both": big[1:, :4:-1]}[view]
    p = ro.plan(ro.Desc.of(v, dtype="bf16"), dst)
    expected = ref_from_plain(np.ascontiguousarray(v), "abcd", {"nChw16c": "aBcd16b",
                                                                "nhwc": "acdb"}[dst])
    try:
        _kernels.set_simd("avx512")
        assert p.runners[0].tile.startswith("avx512 words"), p.explain()
        out = sentinel(expected.shape, expected.dtype)
        p(v, out=out)
    finally:
        _kernels.set_simd(True)
    assert np.array_equal(uint_view(out), uint_view(expected))


# The few-rows tile (a padded channel block whose data fits a word of 4 or 8 bytes): channel
# counts from 1 to 8 around the word sizes, blocks whose dst row is 16, 32 and 64 bytes,
# columns ragged against every step width (35, 5) and whole (256).
FEW_ROWS = [(c, block, hw) for c in (1, 2, 3, 4, 5, 8) for block in (8, 16, 32, 64)
            for hw in ((5, 7), (16, 16), (1, 5))]


@pytest.mark.parametrize("streaming", [False, True], ids=["cached", "streamed"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("c,block,hw", FEW_ROWS)
def test_few_rows_tile_matches_reference(simd, c, block, hw, dtype, streaming):
    rng = np.random.default_rng(c * 100 + block)
    dims = (2, c) + hw
    dtag = f"aBcd{block}b"
    plain = random_storage(dims, dtype, rng)
    p = cached_plan(ro.Desc(dims, dtype, "abcd"), ro.Desc(dims, dtype, dtag),
                    stream_min_bytes=0 if streaming else 1 << 62)
    assert p.kernel == "transpose" and len(p.steps) == 1, p.explain()
    fits = few_rows_fit("abcd", dtag, dims, p.src.dtype.itemsize)
    if simd is False:
        assert p.runners[0].tile == "portable"
    elif fits:
        assert p.runners[0].tile == narrow_isa(simd) + " few rows", p.explain()
    else:
        assert not p.runners[0].tile.endswith("few rows"), p.explain()
    expected = ref_from_plain(plain, "abcd", dtag)
    for threads in (1, 2):
        # an out= at a 64-byte boundary, and one element past it (no whole lines to stream)
        for shift in (0, 1):
            size = int(np.prod(p.dst.physical_shape))
            buf = sentinel((size + 64,), plain.dtype)
            base = (-buf.ctypes.data % 64) // buf.itemsize + shift
            out = buf[base:base + size].reshape(p.dst.physical_shape)
            p(plain, out=out, threads=threads)
            assert np.array_equal(uint_view(out), uint_view(expected)), (threads, shift)
            outside = np.concatenate([buf[:base], buf[base + size:]]).view(np.uint8)
            assert (outside == 0x5A).all(), "wrote outside out="


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("view", ["negative", "offset", "strided"])
def test_few_rows_tile_on_views(simd, view, dtype):
    """Three channels taken reversed, from inside a bigger buffer, and every other one:
    the tile's rows are then far apart, negative or not, and start anywhere."""
    rng = np.random.default_rng(17)
    big = random_storage((3, 7, 9, 11), dtype, rng)
    v = {"negative": big[:, 2::-1], "offset": big[1:, 4:], "strided": big[:, 1::2][:, :3]}[view]
    src = ro.Desc.of(v, dtype=dtype) if dtype == "bf16" else ro.Desc.of(v)
    p = ro.plan(src, "nChw16c")
    if simd:
        assert p.runners[0].tile == narrow_isa(simd) + " few rows", p.explain()
    before = v.copy()
    got = p(v)
    expected = ref_from_plain(np.ascontiguousarray(v), "abcd", "aBcd16b")
    assert np.array_equal(uint_view(got), uint_view(expected))
    assert np.array_equal(uint_view(v), uint_view(before))       # input untouched
