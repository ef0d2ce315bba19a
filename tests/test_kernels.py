"""Each fast kernel is chosen where it should be and agrees with the independent reference,
bit for bit, with SIMD on and off, streaming stores on and off, and for threads 1, 2 and 3."""
import numpy as np
import pytest

import reorder as ro
from reorder import _kernels
from reorder.plan.cache import cached_plan

from reorder.testing.reference import ref_from_plain, ref_physical_shape, ref_reorder, uint_view
from simd_paths import kernel_paths

# (src tag, dst tag, dims, kernel the planner must pick)
CASES = [
    ("abcd", "aBcd16b", (2, 35, 7, 9), "transpose"),         # nchw -> nChw16c, padded C
    ("abcd", "aBcd16b", (1, 3, 33, 5), "transpose"),          # C=3: one padded tile row group
    ("abcd", "aBcd8b", (2, 17, 5, 19), "transpose"),
    ("abcd", "acdb", (3, 37, 6, 7), "transpose"),             # nchw -> nhwc, C not a multiple of 16
    ("acdb", "abcd", (2, 19, 5, 17), "transpose"),            # nhwc -> nchw
    ("abcd", "ABcd16b16a", (35, 33, 3, 3), "blocks"),      # oihw -> OIhw16i16o, B = hw + i16
    ("abcd", "ABcd16a16b", (17, 40, 1, 1), "blocks"),        # i stays innermost: 16-long runs
    ("abcd", "abcd", (4, 5, 6, 7), "copy"),
    ("abcd", "bacd", (4, 5, 6, 7), "copy"),                   # inner h*w run stays contiguous
    ("ab", "ba", (7, 3), "generic"),                          # B too short for a tile
    # three channels of pixels to planes: the interleave kernel where the CPU has its path
    ("ab", "ba", (1000, 3), "interleave"),
    ("abcd", "aBcd4b", (2, 6, 3, 3), "transpose"),
    # A spans two dst nodes: i4 then o16 (64 rows), i2 then o16 (32 rows); O and I padded
    ("abcd", "ABcd4b16a4b", (35, 21, 3, 3), "blocks"),
    ("abcd", "ABcd8b16a2b", (20, 10, 3, 3), "blocks"),
    ("abcde", "aBCde4c16b4c", (2, 17, 9, 3, 3), "blocks"),
    # back to plain with both tile sides padded, on different dims
    ("ABcd4b16a4b", "abcd", (35, 21, 3, 3), "blocks"),
    ("ABcd16b16a", "abcd", (20, 10, 3, 3), "blocks"),
    # C a multiple of the block, and 2 or 3 blocks of it: each nhwc pixel's C run is whole
    # blocks, so the move is block copies
    ("acdb", "aBcd16b", (2, 32, 5, 7), "copy"),
    ("aBcd16b", "acdb", (2, 48, 3, 5), "copy"),
    ("acdb", "acBd4b", (1, 8, 5, 6), "copy"),                 # nhwc -> the OpenCL channel image
    # 4 blocks: a grid of whole block rows (below)
    ("acdb", "aBcd16b", (2, 64, 5, 7), "copy"),
    ("aBcd16b", "acdb", (2, 64, 3, 5), "copy"),
]


def _to_plain_src(dims, tag, dtype, rng):
    if np.dtype(dtype).kind == "f":
        plain = rng.standard_normal(dims).astype(dtype)
    else:
        plain = rng.integers(-100, 100, dims).astype(dtype)
    plain_tag = "abcdefghijkl"[:len(dims)]
    return ref_from_plain(plain, plain_tag, tag) if tag != plain_tag else plain


simd = kernel_paths("avx512", "avx2")


@pytest.fixture(params=[False, True], ids=["cached-stores", "streaming-stores"])
def streaming(request):
    """The plans' streaming threshold: 0 streams every destination, 2**62 none."""
    return 0 if request.param else 1 << 62


@pytest.mark.usefixtures("transpose_small_byte_planes")
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.float64])
@pytest.mark.parametrize("stag,dtag,dims,kernel", CASES)
def test_kernel_matches_reference(simd, streaming, stag, dtag, dims, kernel, dtype):
    rng = np.random.default_rng(1)
    x = _to_plain_src(dims, stag, dtype, rng)
    p = cached_plan(ro.Desc(dims, np.dtype(dtype).name, stag), ro.Desc(dims, np.dtype(dtype).name, dtag),
                    stream_min_bytes=streaming)
    if kernel == "interleave" and not _kernels.interleave_paths(np.dtype(dtype).itemsize):
        kernel = "generic"
    assert kernel is None or p.kernel == kernel, p.explain()
    src_phys = ro.Desc(dims, np.dtype(dtype).name, stag).physical_shape
    assert src_phys == ref_physical_shape(dims, stag)
    x = x.reshape(src_phys)
    expected = ref_reorder(x.reshape(-1), dims, stag, dtag).reshape(ref_physical_shape(dims, dtag))
    assert p.dst.physical_shape == expected.shape
    for threads in (1, 2, 3):
        out = np.full(p.dst.physical_shape, 0x5A, dtype=np.uint8).view(x.dtype) \
            if x.dtype.itemsize == 1 else np.full(p.dst.physical_shape, np.nan, dtype=x.dtype) \
            if x.dtype.kind == "f" else np.full(p.dst.physical_shape, 0x5A, dtype=x.dtype)
        p(x, out=out, threads=threads)
        assert np.array_equal(uint_view(out), uint_view(expected)), (threads, p.explain())


# 8-byte elements (f64, s64, u64) through the tile transposes: the AVX-512 8x8 qword tiles on
# the "avx512" path, AVX2 8x4 ones on "avx2", the portable loops without SIMD. Rows and columns not multiples of 8, padded
# rows and columns, aligned whole tiles (the streamed path), A over two dst nodes and B over
# two src nodes, size-1 and zero dims.
QWORD_TILES = [
    ("abcd", "aBcd16b", (2, 35, 7, 9)),          # C=35: 3 data rows in the last block
    ("abcd", "aBcd8b", (2, 17, 5, 19)),
    ("abcd", "aBcd16b", (3, 64, 12, 12)),        # whole, aligned tiles
    ("aBcd16b", "abcd", (2, 35, 7, 9)),          # 63 rows, a short last block of columns
    ("acdb", "abcd", (3, 37, 7, 9)),             # nhwc -> nchw: B = 37
    ("abcd", "acdb", (2, 33, 1, 40)),            # nchw -> nhwc: A = 33
    ("ABcd16b16a", "abcd", (64, 48, 13, 13)),    # A = hw then i16
    ("abcd", "ABcd16b16a", (35, 33, 13, 13)),    # B = hw then i16, I padded: zero columns
    ("abcd", "aBcd16b", (1, 1, 1, 1)),
    ("abcd", "aBcd16b", (0, 20, 4, 4)),
]


QWORD_TILE = {"avx512": "avx512 qwords 8x8", "avx2": "avx2 qwords 8x4", False: "portable"}


@pytest.mark.parametrize("dtype", ["f64", "u64"])
@pytest.mark.parametrize("stag,dtag,dims", QWORD_TILES,
                         ids=[f"{s}-{d}-{'x'.join(map(str, dims))}" for s, d, dims in QWORD_TILES])
def test_qword_tiles_match_reference(simd, streaming, stag, dtag, dims, dtype):
    """Any bit pattern (NaNs included) lands bit for bit where the reference puts it; dst
    starts as 0x5A bytes, so a lane left unwritten or a padding lane not zeroed shows."""
    rng = np.random.default_rng(8)
    plain = rng.integers(0, 1 << 64, dims, dtype=np.uint64)
    plain = plain if dtype == "u64" else plain.view(np.float64)
    x = ref_from_plain(plain, "abcd", stag) if stag != "abcd" else plain
    p = cached_plan(ro.Desc(dims, dtype, stag), ro.Desc(dims, dtype, dtag),
                    stream_min_bytes=streaming)
    tiny = np.prod(dims) <= 1                    # one element or none: the generic loop
    assert p.kernel == ("generic" if tiny else "transpose") and len(p.steps) == 1, p.explain()
    if not tiny:
        assert p.runners[0].tile == QWORD_TILE[simd], p.explain()
    x = x.reshape(p.src.physical_shape)
    expected = ref_reorder(x.reshape(-1), dims, stag, dtag).reshape(ref_physical_shape(dims, dtag))
    for threads in (1, 2, 3):
        out = np.full(p.dst.physical_shape, 0x5A, np.uint8).repeat(8).view(x.dtype) \
            .reshape(p.dst.physical_shape)
        p(x, out=out, threads=threads)
        assert np.array_equal(uint_view(out), uint_view(expected)), (threads, p.explain())


@pytest.mark.parametrize("view", ["negative", "offset", "both"])
def test_views_through_qword_tiles(simd, view):
    """Negative-stride and offset f64 views of an nchw source go through the same tiles."""
    big = np.random.default_rng(12).standard_normal((3, 45, 9, 11))
    v = {"negative": big[:, ::-1], "offset": big[1:, 5:], "both": big[1:, :4:-1]}[view]
    keep = v.copy()
    p = ro.plan(ro.Desc.of(v), "nChw16c")
    assert p.kernel == "transpose", p.explain()
    assert p.runners[0].tile == QWORD_TILE[simd], p.explain()
    got = p(v)
    expected = ref_from_plain(np.ascontiguousarray(v), "abcd", "aBcd16b")
    assert np.array_equal(uint_view(got), uint_view(expected.reshape(got.shape)))
    assert np.array_equal(uint_view(v), uint_view(keep))                 # input untouched


# nhwc -> nchw, the pixels A; (dims, dtype, the cached slice, explain()'s rule)
TILE_SLICES = [
    # 64 channels 9216 / 4608 bytes apart: far planes, 32 of f32 a slice, 64 of bf16 (B whole)
    ((16, 64, 48, 48), "f32", 32, "far dst planes"),
    ((16, 64, 48, 48), "bf16", 64, "far dst planes"),
    # 48 channels are too few to be far planes: the dst footprint within 128 KiB (16 channels
    # of 1600 floats, 32 of bf16)
    ((16, 48, 40, 40), "f32", 16, "dst footprint"),
    ((16, 48, 40, 40), "bf16", 32, "dst footprint"),
]


@pytest.mark.parametrize("dims,dtype,cached_slice,rule", TILE_SLICES,
                         ids=[f"{c[1]}-{c[0][1]}ch" for c in TILE_SLICES])
def test_tile_slices_follow_the_stores(dims, dtype, cached_slice, rule):
    """With cached stores a work item's B slice follows the rule explain() names; streamed,
    B is whole (16 outer positions already balance the threads). Both against the
    reference."""
    storage = np.uint32 if dtype == "f32" else np.uint16
    plain = np.random.default_rng(3).integers(0, 1 << 16, dims).astype(storage)
    x = ref_from_plain(plain, "abcd", "acdb")
    expected = ref_reorder(x.reshape(-1), dims, "acdb", "abcd").reshape(dims)
    for threshold, want in ((1 << 62, cached_slice), (0, dims[1])):
        p = cached_plan(ro.Desc(dims, dtype, "acdb"), ro.Desc(dims, dtype, "abcd"),
                        stream_min_bytes=threshold)
        assert p.kernel == "transpose" and p.runners[0].slice == want, p.explain()
        assert (f"(cached stores: {rule}" in p.explain()) == (threshold > 0), p.explain()
        for threads in (1, 2):
            out = np.full(dims, 0x5A5A5A5A & np.iinfo(storage).max, storage)
            as_f32 = (lambda a: a.view(np.float32)) if dtype == "f32" else (lambda a: a)
            p(as_f32(x), out=as_f32(out), threads=threads)
            assert np.array_equal(out, expected), (threads, p.explain())


# nchw -> nhwc with cached stores: a work item's rows (pixels, each A = C elements long) lie
# back to back in dst and are many, so 4- and 8-byte tiles build them in a scratch and copy
# them out whole (TransposeKernel._copy_out), by the Xeon's rules (machine.TileRules). C not a
# multiple of the tile (40, 24), the last slice short (297 pixels in slices of 64), B whole in
# one slice (65, 210 pixels).
COPY_OUT_TILES = [(3, 48, 9, 33), (17, 24, 5, 13), (20, 40, 7, 30)]


@pytest.mark.parametrize("dtype", ["f32", "s32", "f64"])
@pytest.mark.parametrize("dims", COPY_OUT_TILES, ids=lambda d: "x".join(map(str, d)))
def test_tiles_copied_out_match_reference(simd, dims, dtype, tile_rules):
    dt = np.dtype(ro.Desc(dims, dtype, "abcd").dtype.storage)
    x = np.random.default_rng(sum(dims)).integers(0, 256, int(np.prod(dims)) * dt.itemsize,
                                                  dtype=np.uint8).view(dt).reshape(dims)
    expected = ref_reorder(x.reshape(-1), dims, "abcd", "acdb").reshape(ref_physical_shape(dims, "acdb"))
    for threshold, copy_out in ((1 << 62, tile_rules.copy_out_rows), (0, False)):
        p = cached_plan(ro.Desc(dims, dtype, "abcd"), ro.Desc(dims, dtype, "acdb"),
                        stream_min_bytes=threshold)
        assert p.kernel == "transpose" and p.runners[0].copy_out == copy_out, p.explain()
        assert ("copied out whole" in p.explain()) == copy_out, p.explain()
        for threads in (1, 2, 3):
            out = np.full(p.dst.nbytes, 0x5A, np.uint8).view(dt).reshape(p.dst.physical_shape)
            p(x, out=out, threads=threads)
            assert np.array_equal(uint_view(out), uint_view(expected)), (threads, p.explain())
    # a view with C reversed and an offset takes the same path, and is left as it was
    v = x[:, ::-1][:, 1:]
    keep = v.copy()
    p = cached_plan(ro.Desc.of(v), ro.Desc(v.shape, dtype, "acdb"), stream_min_bytes=1 << 62)
    assert p.runners[0].copy_out == tile_rules.copy_out_rows, p.explain()
    got = p(v)
    want = ref_reorder(np.ascontiguousarray(v).reshape(-1), v.shape, "abcd", "acdb")
    assert np.array_equal(uint_view(got), uint_view(want.reshape(got.shape)))
    assert np.array_equal(uint_view(v), uint_view(keep))


# nhwc -> nchw where the dst planes lie a multiple of 4 KiB apart (their starts on one 4 KiB
# offset): a work item builds a chunk of pixels of its planes in a scratch and copies each
# plane's part out (TransposeKernel._copy_lanes). One plane's bytes: f32 32x32, bf16 32x64,
# s8 64x64, f64 16x32; C not a multiple of the tile (40, 24, 72). The scratch is set small,
# so that chunks of 48 pixels (f32, one image: 16 planes a slice) leave a short last one.
COPY_LANES_TILES = [("f32", (2, 40, 32, 32)), ("f32", (1, 72, 64, 64)), ("bf16", (3, 24, 32, 64)),
                    ("s8", (1, 40, 64, 64)), ("s8", (2, 64, 128, 32)), ("f64", (2, 24, 16, 32))]


@pytest.mark.parametrize("dtype,dims", COPY_LANES_TILES,
                         ids=[f"{d}-{'x'.join(map(str, s))}" for d, s in COPY_LANES_TILES])
@pytest.mark.parametrize("scratch", [16 * 4 * 48, None], ids=["ragged-chunks", "plan-scratch"])
def test_planes_on_one_offset_copied_out_in_chunks(simd, dtype, dims, scratch, monkeypatch,
                                                   fresh_plans):
    from reorder.kernels import move
    if scratch:
        monkeypatch.setattr(move, "TILE_COPY_LANES_BYTES", scratch)
    dt = np.dtype(ro.Desc(dims, dtype, "abcd").dtype.storage)
    x = np.random.default_rng(sum(dims)).integers(0, 256, int(np.prod(dims)) * dt.itemsize,
                                                  dtype=np.uint8).view(dt)
    expected = ref_reorder(x, dims, "acdb", "abcd").reshape(dims)
    x = x.reshape(dims[0], dims[2], dims[3], dims[1])
    for threshold, copied in ((1 << 62, True), (0, False)):
        p = cached_plan(ro.Desc(dims, dtype, "acdb"), ro.Desc(dims, dtype, "abcd"),
                        stream_min_bytes=threshold)
        lanes = p.runners[0].copy_lanes
        assert p.kernel == "transpose" and (lanes > 0) == copied, p.explain()
        assert ("copied out a row at a time" in p.explain()) == copied, p.explain()
        if copied and scratch:
            assert lanes == max(16, scratch // (p.runners[0].slice * dt.itemsize) // 16 * 16)
        for threads in (1, 2, 3):
            out = np.full(p.dst.nbytes, 0x5A, np.uint8).view(dt).reshape(dims)
            p(x, out=out, threads=threads)
            assert np.array_equal(uint_view(out), uint_view(expected)), (threads, p.explain())
    # a view one element in, its pixels C + 1 apart: the same path, left as it was
    v = np.concatenate([x[..., :1], x], axis=-1)[..., 1:]
    keep = v.copy()
    p = ro.plan(ro.Desc.of(v, "acdb"), "abcd")
    assert p.runners[0].copy_lanes > 0, p.explain()
    got = p(v)
    want = ref_reorder(np.ascontiguousarray(v).reshape(-1), dims, "acdb", "abcd")
    assert np.array_equal(uint_view(got), uint_view(want.reshape(dims)))
    assert np.array_equal(uint_view(v), uint_view(keep))


# The same copy-out in the other layouts whose dst rows lie a multiple of 4 KiB apart:
# nChw16c -> nchw (the rows: a block's 16 planes) and nchw -> nhwc at 1024 f32 or 2048 bf16
# channels (the rows: pixels). (src tag, dst tag, dims, dtype)
COPY_LANES_LAYOUTS = [("aBcd16b", "abcd", (2, 64, 32, 32), "f32"),
                      ("aBcd16b", "abcd", (1, 32, 64, 64), "bf16"),
                      ("abcd", "acdb", (2, 1024, 3, 5), "f32"),
                      ("abcd", "acdb", (1, 2048, 2, 3), "bf16")]


@pytest.mark.usefixtures("transpose_few_columns")
@pytest.mark.parametrize("stag,dtag,dims,dtype", COPY_LANES_LAYOUTS,
                         ids=[f"{c[0]}-{c[1]}-{c[3]}" for c in COPY_LANES_LAYOUTS])
def test_rows_on_one_offset_copied_out_in_other_layouts(simd, stag, dtag, dims, dtype):
    dt = np.dtype(ro.Desc(dims, dtype, "abcd").dtype.storage)
    plain = np.random.default_rng(sum(dims)).integers(0, 256, int(np.prod(dims)) * dt.itemsize,
                                                      dtype=np.uint8).view(dt).reshape(dims)
    x = ref_from_plain(plain, "abcd", stag)
    expected = ref_reorder(x.reshape(-1), dims, stag, dtag).reshape(ref_physical_shape(dims, dtag))
    p = cached_plan(ro.Desc(dims, dtype, stag), ro.Desc(dims, dtype, dtag),
                    stream_min_bytes=1 << 62)
    assert p.kernel == "transpose" and p.runners[0].copy_lanes > 0, p.explain()
    for threads in (1, 2, 3):
        out = np.full(p.dst.nbytes, 0x5A, np.uint8).view(dt).reshape(p.dst.physical_shape)
        p(x, out=out, threads=threads)
        assert np.array_equal(uint_view(out), uint_view(expected)), (threads, p.explain())


# nchw -> nhwc rows (pixels) back to back, 1 KiB or longer on few 4 KiB offsets
# (move.COPIED_ROW_OFFSETS): copied out in chunks where the kind's rules do not copy
# them out whole and the step moves TILE_COPY_ROWS_MIN_BYTES (set to 0 here, then back).
# (dims, dtype, copied): f32 at 256 and 512 channels, f64 at 128, bf16 at 1024, bytes at
# 2048 are; f32 at 128, bf16 at 512, bytes at 1024 are not.
BACK_TO_BACK_ROWS = [((2, 256, 5, 7), "f32", True), ((3, 512, 2, 9), "f32", True),
                     ((2, 128, 4, 5), "f64", True), ((2, 1024, 3, 5), "bf16", True),
                     ((1, 2048, 3, 3), "s8", True), ((2, 128, 6, 6), "f32", False),
                     ((2, 512, 3, 5), "bf16", False), ((2, 1024, 3, 5), "u8", False)]


@pytest.mark.usefixtures("transpose_few_columns")
@pytest.mark.parametrize("dims,dtype,copied", BACK_TO_BACK_ROWS,
                         ids=[f"{c[1]}-{c[0][1]}c" for c in BACK_TO_BACK_ROWS])
def test_rows_back_to_back_copied_out_in_chunks_by_kind(simd, dims, dtype, copied, tile_rules,
                                                         monkeypatch):
    from reorder.kernels import move
    from reorder.plan import cache
    dt = np.dtype(ro.Desc(dims, dtype, "abcd").dtype.storage)
    for floor, small in ((0, False), (1 << 62, True)):
        monkeypatch.setattr(move, "TILE_COPY_ROWS_MIN_BYTES", floor)
        cache.clear()        # the floor changed within the test
        _check_back_to_back(dims, dtype, dt, copied and not small, tile_rules)


def _check_back_to_back(dims, dtype, dt, copied, tile_rules):
    x = np.random.default_rng(sum(dims)).integers(0, 256, int(np.prod(dims)) * dt.itemsize,
                                                  dtype=np.uint8).view(dt).reshape(dims)
    expected = ref_reorder(x.reshape(-1), dims, "abcd", "acdb").reshape(ref_physical_shape(dims, "acdb"))
    p = cached_plan(ro.Desc(dims, dtype, "abcd"), ro.Desc(dims, dtype, "acdb"),
                    stream_min_bytes=1 << 62)
    want = copied and not tile_rules.copy_out_rows
    assert p.kernel == "transpose" and (p.runners[0].copy_lanes > 0) == want, p.explain()
    for threads in (1, 2, 3):
        out = np.full(p.dst.nbytes, 0x5A, np.uint8).view(dt).reshape(p.dst.physical_shape)
        p(x, out=out, threads=threads)
        assert np.array_equal(uint_view(out), uint_view(expected)), (threads, p.explain())


# (dims, dtype): planes not on one 4 KiB offset, or nearer than 4 KiB, are written directly
DIRECT_PLANES = [((1, 64, 56, 64), "f32"),       # two offsets
                 ((1, 64, 96, 96), "bf16"),      # two
                 ((8, 64, 16, 16), "f32"),       # 1 KiB planes
                 ((1, 64, 60, 60), "f32")]


@pytest.mark.parametrize("dims,dtype", DIRECT_PLANES)
def test_planes_on_several_offsets_are_written_directly(dims, dtype):
    p = cached_plan(ro.Desc(dims, dtype, "acdb"), ro.Desc(dims, dtype, "abcd"),
                    stream_min_bytes=1 << 62)
    assert p.kernel == "transpose" and p.runners[0].copy_lanes == 0, p.explain()
    assert "copied out a row at a time" not in p.explain()


def test_copy_out_refused_where_rows_are_not_back_to_back():
    """The runner checks the plan's promise: rows one level, A's extent apart, B unchecked."""
    nodes = np.array([[2, 100, 100, -1, 1], [10, 1, 10, -1, 1], [10, 10, 1, -1, 1]], np.int64)
    a = np.array([0, 0, 1, 0, 0, -1], np.int64)
    ok = np.array([10, 1, 0, 0, -1, 10, 0, 10, 0], np.int64)
    _kernels.Transpose(4, nodes, np.zeros((0, 3), np.int64), a, ok, False, False, True)
    for bad in ([10, 1, 0, 0, -1, 10, 0, 12, 0],       # rows 12 apart, A 10 long
                [10, 1, 10, 16, 1, 10, 0, 10, 0],      # B checked (padded)
                [10, 1, 0, 0, -1, 10, 5, 10, 50]):     # rows on two levels
        with pytest.raises(ValueError, match="copy_out"):
            _kernels.Transpose(4, nodes, np.zeros((0, 3), np.int64), a,
                               np.array(bad, np.int64), False, False, True)
    # rows far apart take copy_lanes, a positive multiple of 16, with A whole groups of 16;
    # B still unchecked
    far = np.array([10, 1, 0, 0, -1, 10, 0, 1024, 0], np.int64)
    nodes32 = np.array([[2, 100, 100, -1, 1], [10, 1, 10, -1, 1], [32, 10, 1, -1, 1]], np.int64)
    assert _kernels.Transpose(4, nodes32, np.zeros((0, 3), np.int64), a, far, False, False,
                              True, 32).copy_lanes == 32
    for lanes, b, nd in ((24, far, nodes32), (-16, far, nodes32), (32, far, nodes),
                         (32, np.array([10, 1, 10, 16, 1, 10, 0, 1024, 0]), nodes32)):
        with pytest.raises(ValueError, match="copy_out"):
            _kernels.Transpose(4, nd, np.zeros((0, 3), np.int64), a, b, False, False,
                               True, lanes)


# A not a multiple of the tile's row block, B whole: with cached stores the last block of
# rows overlaps the one before (rows written twice, the same bytes); with padding rows in A,
# edge columns in B or streamed stores the tail takes the masked or element-wise path.
TAIL_TILES = [
    ("aBcd16b", "abcd", (2, 32, 7, 7)),     # 49 rows: 32 + 17, 16 * 3 + 1, 8 * 6 + 1
    ("aBcd16b", "abcd", (1, 16, 5, 7)),     # 35 rows
    ("aBcd16b", "abcd", (1, 32, 3, 11)),    # 33 rows: one past a 32-row block
    ("aBcd16b", "abcd", (2, 32, 3, 3)),     # 9 rows: under one block, no uniform rows
    ("abcd", "acdb", (2, 40, 4, 8)),        # nchw -> nhwc: A = 40 channels, B = 32 pixels
    ("acdb", "abcd", (2, 48, 5, 7)),        # nhwc -> nchw: A = 35 pixels, B = 48 channels
    ("abcd", "acdb", (1, 40, 3, 7)),        # B = 21 pixels: edge columns, no overlap
    ("abcd", "aBcd16b", (2, 19, 4, 8)),     # A = 16 lanes, 3 of them data: no overlap
    ("abcd", "acdb", (2, 90, 5, 16)),       # A = 90 channels: byte rows in groups of 64, 16, tail
    ("acdb", "abcd", (1, 80, 10, 13)),      # A = 130 pixels: two groups of 64, then the tail
]


@pytest.mark.usefixtures("transpose_small_byte_planes", "transpose_few_columns")
@pytest.mark.parametrize("dtype", [np.int8, np.float16, np.float32, np.float64])
@pytest.mark.parametrize("stag,dtag,dims", TAIL_TILES,
                         ids=[f"{s}-{d}-{'x'.join(map(str, n))}" for s, d, n in TAIL_TILES])
def test_tile_tails_match_reference(simd, streaming, stag, dtag, dims, dtype):
    dt = np.dtype(dtype)
    src = ro.Desc(dims, dt.name, stag)
    rng = np.random.default_rng(sum(dims))
    x = rng.integers(0, 256, src.nbytes, dtype=np.uint8).view(dt).reshape(src.physical_shape)
    p = cached_plan(src, ro.Desc(dims, dt.name, dtag), stream_min_bytes=streaming)
    assert p.kernel == "transpose", p.explain()
    expected = ref_reorder(x.reshape(-1), dims, stag, dtag).reshape(ref_physical_shape(dims, dtag))
    for threads in (1, 2, 3):
        out = np.full(p.dst.nbytes, 0x5A, np.uint8).view(dt).reshape(p.dst.physical_shape)
        p(x, out=out, threads=threads)
        assert np.array_equal(uint_view(out), uint_view(expected)), (threads, p.runners[0].tile)


# Byte tiles of 64-row groups whose dst lies in L3 fetch the next group's lines early: the
# plan turns it on from a quarter of the streaming threshold while stores stay cached.
AHEAD_TILES = [
    ("abcd", "acdb", (2, 200, 5, 16)),      # A = 200 channels: groups at 0, 64 fetch ahead
    ("acdb", "abcd", (1, 80, 10, 13)),      # A = 130 pixels: the first group fetches ahead
    ("abcd", "acdb", (3, 130, 2, 20)),      # B = 40 pixels: a ragged edge after the tiles
]


@pytest.mark.parametrize("dtype", ["s8", "u8"])
@pytest.mark.parametrize("stag,dtag,dims", AHEAD_TILES,
                         ids=[f"{s}-{d}-{'x'.join(map(str, n))}" for s, d, n in AHEAD_TILES])
def test_byte_tiles_fetching_ahead_match_reference(stag, dtag, dims, dtype):
    src = ro.Desc(dims, dtype, stag)
    x = np.random.default_rng(sum(dims)).integers(0, 256, src.nbytes, dtype=np.uint8) \
        .view(np.int8 if dtype == "s8" else np.uint8).reshape(src.physical_shape)
    keep = x.copy()
    expected = ref_reorder(x.reshape(-1), dims, stag, dtag).reshape(ref_physical_shape(dims, dtag))
    moved = 2 * src.nbytes
    for threshold, ahead in ((2 * moved, True), (4 * moved + 4, False), (moved, False)):
        p = cached_plan(src, ro.Desc(dims, dtype, dtag), stream_min_bytes=threshold)
        r = p.runners[0]
        assert p.kernel == "transpose" and r.ahead == ahead and r.nt == (threshold <= moved), \
            (threshold, p.explain())
        for threads in (1, 2):
            out = np.full(p.dst.nbytes, 0x5A, np.uint8).view(x.dtype).reshape(p.dst.physical_shape)
            p(x, out=out, threads=threads)
            assert np.array_equal(uint_view(out), uint_view(expected)), (threads, r.tile)
    assert np.array_equal(x, keep)


# Short runs contiguous on both sides, one node continuing them in src and another in dst
# (nhwc <-> nChw16c, nChw8c <-> nChw16c): the walker loops the pixels as rows and the blocks
# across each row, a grid of fixed-size copies; padded columns go through masked loads (two
# columns interleaved in dst, 8- or 16-byte runs: one masked pass), and streamed stores fill
# whole dst lines. The source's padding holds random bits and dst starts as 0x5A, so a
# leaked, missed or misplaced lane shows in the bytes.
GRID_MOVES = [
    ("acdb", "aBcd16b", (2, 19, 5, 7)),         # a column of 3 lanes, 13 zeros
    ("acdb", "aBcd16b", (2, 64, 5, 7)),         # 4 whole columns
    ("acdb", "aBcd16b", (1, 48, 7, 9)),         # 63 pixels: streamed lines leave a tail
    ("acdb", "aBcd16b", (2, 35, 0, 3)),
    ("acdb", "aBcd16b", (16, 19, 20, 25)),      # 500 pixels an item: passes of 8 KiB of src
    ("acdb", "aBcd16b", (3, 40, 1, 2)),
    ("aBcd16b", "acdb", (2, 19, 5, 7)),
    ("aBcd16b", "acdb", (2, 64, 3, 5)),
    ("aBcd8b", "aBcd16b", (2, 19, 5, 7)),       # a partial column, then one of zeros
    ("aBcd8b", "aBcd16b", (2, 40, 3, 3)),       # src holds 40 of 48: the last 8 are zeros
    ("aBcd8b", "aBcd16b", (2, 27, 5, 7)),       # a whole column, then one of 3 lanes
    ("aBcd8b", "aBcd16b", (1, 32, 1, 3)),       # 3 pixels: fewer than a line of a column
    ("aBcd16b", "aBcd8b", (2, 32, 5, 7)),       # two whole columns from each pixel's 16
    ("aBcd16b", "aBcd8b", (2, 19, 5, 7)),       # src lanes 24..31 lie beyond dst: skipped
    ("aBcd16b", "aBcd64b", (2, 48, 3, 5)),      # 3 data columns of a 4-column line, 1 of zeros
    ("aBcd16b", "aBcd64b", (2, 35, 2, 3)),
    ("acdb", "aBcd4b", (2, 13, 4, 5)),          # 4-lane runs
    ("acdb", "aBcd32b", (2, 64, 3, 5)),         # runs of 2-4 whole lines (f32, f64)
    ("aBcd32b", "acdb", (2, 70, 3, 3)),         # a padded column
    ("acdeb", "aBcde16b", (2, 19, 3, 4, 5)),
]


@pytest.mark.parametrize("dtype", [np.int8, np.float16, np.float32, np.float64])
@pytest.mark.parametrize("stag,dtag,dims", GRID_MOVES,
                         ids=[f"{s}-{d}-{'x'.join(map(str, n))}" for s, d, n in GRID_MOVES])
def test_short_runs_move_as_a_grid(simd, streaming, stag, dtag, dims, dtype):
    rng = np.random.default_rng(sum(dims))
    dt = np.dtype(dtype)
    src = ro.Desc(dims, dt.name, stag)
    x = rng.integers(0, 256, src.nbytes, dtype=np.uint8).view(dt).reshape(src.physical_shape)
    p = cached_plan(src, ro.Desc(dims, dt.name, dtag), stream_min_bytes=streaming)
    assert p.kernel in ("copy", "generic") and (p.runners[0].cross > 1 or 0 in dims), p.explain()
    expected = ref_reorder(x.reshape(-1), dims, stag, dtag).reshape(ref_physical_shape(dims, dtag))
    for threads in (1, 2, 3):
        out = np.full(p.dst.nbytes, 0x5A, np.uint8).view(dt).reshape(p.dst.physical_shape)
        p(x, out=out, threads=threads)
        assert np.array_equal(uint_view(out), uint_view(expected)), threads


@pytest.mark.parametrize("dtype", ["s8", "f16", "f32"])
def test_grid_from_a_reversed_offset_view(simd, streaming, dtype):
    """An nhwc buffer read through a view with an offset and the pixels of each row reversed:
    the grid's rows are the 5 pixels of a row, run backwards in src, so streamed lines of 2
    or 4 of them leave a tail."""
    rng = np.random.default_rng(7)
    dt = np.dtype({"s8": np.int8, "f16": np.float16, "f32": np.float32}[dtype])
    base = rng.integers(0, 256, 2 * 4 * 7 * 19 * dt.itemsize, np.uint8).view(dt).reshape(2, 4, 7, 19)
    v = base.transpose(0, 3, 1, 2)[:, :, :, 1:6][..., ::-1]                # nhwc, W + 2
    keep = base.copy()
    p = cached_plan(ro.Desc.of(v), ro.Desc(v.shape, dtype, "nChw16c"), stream_min_bytes=streaming)
    assert p.runners[0].cross == 2, p.explain()
    expected = ref_from_plain(np.ascontiguousarray(v), "abcd", "aBcd16b")
    for threads in (1, 2, 3):
        assert np.array_equal(uint_view(p(v, threads=threads)), uint_view(expected))
    assert np.array_equal(uint_view(base), uint_view(keep))


@pytest.mark.parametrize("stag,dtag,dims,dtype,cross", [
    ("acdb", "aBcd16b", (2, 64, 6, 6), np.float32, 4),
    ("aBcd8b", "aBcd16b", (2, 32, 6, 6), np.int8, 2),      # two columns interleaved
    ("aBcd16b", "aBcd8b", (2, 32, 6, 6), np.float16, 2),   # and split again
])
def test_grid_streams_into_an_unaligned_out(stag, dtag, dims, dtype, cross):
    """Streamed lines need a 64-byte aligned dst; an `out=` that is not keeps cached stores
    and the same bytes."""
    dt = np.dtype(dtype)
    src = ro.Desc(dims, dt.name, stag)
    x = np.random.default_rng(8).integers(0, 256, src.nbytes, np.uint8)
    x = x.view(dt).reshape(src.physical_shape)
    p = cached_plan(src, ro.Desc(dims, dt.name, dtag), stream_min_bytes=0)
    assert p.runners[0].cross == cross and p.runners[0].nt, p.explain()
    expected = ref_reorder(x.reshape(-1), dims, stag, dtag)
    raw = np.full(expected.nbytes + 64, 0x5A, np.uint8)
    for shift in (0, 4, 16, 36):
        buf = raw[shift:shift + expected.nbytes].view(dt).reshape(p.dst.physical_shape)
        p(x, out=buf)
        assert np.array_equal(uint_view(buf).reshape(-1), uint_view(expected)), shift


# Streamed tiles whose uniform rows are whole dst lines (planes a multiple of 16 elements):
# the AVX-512 dword tile streams them from its uniform loop, and only into a 64-byte aligned
# dst; elsewhere the general loop takes them. Random bits, dst filled with 0x5A first.
STREAMED_UNIFORM = [
    ("aBcd16b", "abcd", (2, 48, 4, 12)),    # nChw16c -> nchw, 48-pixel planes
    ("acdb", "abcd", (2, 40, 4, 8)),        # nhwc -> nchw: B = 32 channels and an edge of 8
    ("abcd", "aBcd16b", (2, 35, 4, 8)),     # nchw -> nChw16c: the last block 3 lanes of data
]


@pytest.mark.parametrize("stag,dtag,dims", STREAMED_UNIFORM,
                         ids=[f"{s}-{d}-{'x'.join(map(str, n))}" for s, d, n in STREAMED_UNIFORM])
def test_streamed_tiles_match_reference_at_every_alignment(simd, stag, dtag, dims):
    src = ro.Desc(dims, "f32", stag)
    x = np.random.default_rng(9).integers(0, 256, src.nbytes, np.uint8)
    x = x.view(np.float32).reshape(src.physical_shape)
    p = cached_plan(src, ro.Desc(dims, "f32", dtag), stream_min_bytes=0)
    assert p.kernel == "transpose" and p.runners[0].nt, p.explain()
    expected = ref_reorder(x.reshape(-1), dims, stag, dtag)
    raw = np.empty(expected.nbytes + 128, np.uint8)
    line = (-raw.ctypes.data) % 64
    for shift in (0, 4, 32):
        buf = raw[line + shift:line + shift + expected.nbytes].view(np.float32)
        buf = buf.reshape(p.dst.physical_shape)
        for threads in (1, 2, 3):
            raw.fill(0x5A)
            p(x, out=buf, threads=threads)
            assert np.array_equal(uint_view(buf).reshape(-1), uint_view(expected)), (shift, threads)


def test_grid_cross_refused():
    """The walker refuses a cross node with a bad extent, dim or weight, one asked beside a
    slab, one over a run that is not contiguous on both sides, and a negative grid chunk."""
    nodes = np.array([[8, 16, 16, -1, 1], [16, 1, 1, -1, 1]], np.int64)
    checked = np.zeros((0, 3), np.int64)
    rows = np.array([8, 64, 16, 8, 16], np.int64)
    w = _kernels.Walker(4, nodes[1:], checked, rows, False, False, np.array([4, 16, 128, -1, 1]))
    assert w.cross == 4
    for bad in ([4, 16, 128, -1, 0], [4, 16, 128, 12, 1], [-1, 16, 128, -1, 1], [4, 16, 128]):
        with pytest.raises(ValueError, match="cross"):
            _kernels.Walker(4, nodes[1:], checked, rows, False, False, np.array(bad))
    slab_run, slab_checked = np.array([[16, 1, 1, 1, 1]], np.int64), np.array([[1, 3, 16]], np.int64)
    slab_rows = np.array([8, 16, 16, 8, 16], np.int64)
    _kernels.Walker(4, slab_run, slab_checked, slab_rows, False, True)
    with pytest.raises(ValueError, match="cross"):
        _kernels.Walker(4, slab_run, slab_checked, slab_rows, False, True, np.array([4, 16, 128, -1, 1]))
    strided = np.array([[16, 2, 1, -1, 1]], np.int64)
    with pytest.raises(ValueError, match="cross"):
        _kernels.Walker(4, strided, checked, rows, False, False, np.array([4, 16, 128, -1, 1]))
    with pytest.raises(ValueError, match="grid_chunk"):
        _kernels.Walker(4, nodes[1:], checked, rows, False, False, np.array([4, 16, 128, -1, 1]),
                        -1)


# A padded block on an unchanged layout (nChw16c -> nChw16c at C=19): the walker moves a
# slab of whole rows in one pass, 64 bytes at a time under the rows' lane mask repeated
# (AVX-512BW), or as 8-byte ANDs that zero the padding lanes (portable). The source's
# padding holds random bits and dst starts as 0x5A, so a leaked or missed padding lane, or
# a zeroed data lane, shows in the bytes; 35 rows of 16 or 32 bytes end inside a line.
SLAB_MOVES = [((2, 19, 5, 7), "aBcd16b"), ((1, 3, 4, 4), "aBcd16b"), ((3, 1, 2, 3), "aBcd8b"),
              ((2, 17, 3, 3), "aBcd4b"), ((40, 19), "aB16b"), ((2, 19, 0, 3), "aBcd16b"),
              ((2, 3, 2, 5, 5), "aBcde16b")]


@pytest.mark.parametrize("dtype", [np.int8, np.float16, np.float32, np.float64])
@pytest.mark.parametrize("dims,tag", SLAB_MOVES, ids=[f"{t}-{'x'.join(map(str, d))}" for d, t in SLAB_MOVES])
def test_padded_block_slabs(simd, dims, tag, dtype):
    rng = np.random.default_rng(len(dims) * 100 + dims[1])
    dt = np.dtype(dtype)
    src = ro.Desc(dims, dt.name, tag)
    x = rng.integers(0, 256, src.nbytes, dtype=np.uint8).view(dt).reshape(src.physical_shape)
    p = ro.plan(src, src)
    assert p.kernel == "generic" and p.runners[0].slab == (0 not in dims), p.explain()
    expected = ref_reorder(x.reshape(-1), dims, tag, tag).reshape(src.physical_shape)
    for threads in (1, 2, 3):
        out = np.full(src.nbytes, 0x5A, np.uint8).view(dt).reshape(src.physical_shape)
        p(x, out=out, threads=threads)
        assert np.array_equal(uint_view(out), uint_view(expected)), threads


def test_padded_block_slab_refused():
    """The walker refuses a slab whose run is not a padded block's lanes or whose rows are
    not dense; a plain source strided like the block holds no padding lanes to read."""
    nodes = np.array([[8, 16, 16, -1, 1], [16, 1, 1, 1, 1]], np.int64)
    checked = np.array([[1, 3, 16]], np.int64)
    _kernels.Walker(4, nodes[1:], checked, np.array([8, 16, 16, 8, 16], np.int64), False, True)
    with pytest.raises(ValueError, match="slab"):
        _kernels.Walker(4, nodes[1:], checked, np.array([8, 32, 16, 8, 16], np.int64), False, True)
    with pytest.raises(ValueError, match="slab"):
        _kernels.Walker(4, nodes[1:] * [1, 1, 1, 0, 1] - [0, 0, 0, 1, 0], checked,
                        np.array([8, 16, 16, 8, 16], np.int64), False, True)
    base = np.zeros((1, 4, 4, 16), np.float32)
    p = ro.plan(ro.Desc((1, 3, 4, 4), "f32", strides=(256, 1, 64, 16)),
                ro.Desc((1, 3, 4, 4), "f32", "aBcd16b"))
    assert not any(getattr(r, "slab", False) for r in p.runners), p.explain()
    x = base[..., :3]
    x[...] = np.arange(48, dtype=np.float32).reshape(1, 4, 4, 3)
    expected = ref_from_plain(np.ascontiguousarray(x.transpose(0, 3, 1, 2)), "abcd", "aBcd16b")
    assert np.array_equal(uint_view(p(x)), uint_view(expected))


def test_large_tile_run_is_parallel_and_identical():
    """A tensor big enough for a thread team: every thread count gives the reference's bytes."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((4, 37, 60, 61)).astype(np.float32)
    ref = ref_from_plain(x, "abcd", "aBcd16b")
    for t in (1, 2, 3, 4):
        got = ro.reorder(x, "nchw", "nChw16c", threads=t)
        assert got.shape == ref.shape == (4, 3, 60, 61, 16)
        assert np.array_equal(got.view(np.uint32), ref.view(np.uint32)), t
    p = ro.plan(ro.Desc.of(x), ro.Desc(x.shape, "f32", "nChw16c"), threads=2)
    assert p.nthreads() == (2 if _kernels.OPENMP else 1)


def test_small_tensor_runs_on_one_thread():
    p = ro.plan(ro.Desc((1, 16, 4, 4), "f32", "nchw"), ro.Desc((1, 16, 4, 4), "f32", "nChw16c"),
                threads=2)
    assert p.nthreads() == 1


def test_incompatible_blockings_go_through_plain():
    """48c against 32c does not nest; the plan goes through the plain layout, still exact."""
    rng = np.random.default_rng(3)
    dims = (2, 70, 3, 3)
    x = rng.standard_normal(dims).astype(np.float32)
    a = ro.reorder(x, "nchw", "aBcd48b")
    p = ro.plan(ro.Desc(dims, "f32", "aBcd48b"), ro.Desc(dims, "f32", "aBcd32b"))
    assert p.via is not None and "do not nest" in p.explain()
    assert np.array_equal(a, ref_from_plain(x, "abcd", "aBcd48b"))
    got = p(a)
    expected = ref_from_plain(x, "abcd", "aBcd32b")
    assert got.shape == expected.shape == (2, 3, 3, 3, 32)
    assert np.array_equal(got, expected)


def test_explain_names_kernel_and_nodes():
    p = ro.plan(ro.Desc((8, 30, 56, 56), "f32", "nchw"), ro.Desc((8, 30, 56, 56), "f32", "nChw16c"))
    text = p.explain()
    assert "transpose" in text and "nodes" in text and "threads" in text
    assert "30 valid, zeros up to 32" in text
    assert repr(p).startswith("Plan(nchw -> nChw16c")


def test_plan_is_cached_and_immutable():
    a = ro.plan(ro.Desc((2, 3), "f32", "ab"), ro.Desc((2, 3), "f32", "ba"))
    b = ro.plan(ro.Desc((2, 3), "f32", "ab"), ro.Desc((2, 3), "f32", "ba"))
    assert a is b
    with pytest.raises(AttributeError):
        a.src = None


def test_plan_empty_is_aligned():
    p = ro.plan(ro.Desc((3, 5, 7, 7), "f32", "nchw"), ro.Desc((3, 5, 7, 7), "f32", "nChw8c"))
    out = p.empty()
    assert out.shape == p.dst.physical_shape and out.flags.c_contiguous
    assert out.__array_interface__["data"][0] % 64 == 0
    assert out.dtype == np.float32 and out.flags.writeable


@pytest.mark.parametrize("dtype", ["s8", "bf16", "f64"])
def test_plan_empty_zero_size_and_other_types(dtype):
    for dims in [(0, 5, 3, 3), (2, 5, 3, 3)]:
        p = ro.plan(ro.Desc(dims, "f32", "nchw"), ro.Desc(dims, dtype, "nChw16c"))
        out = p.empty()
        assert out.shape == p.dst.physical_shape and out.flags.c_contiguous
        assert out.dtype == np.dtype(p.dst.dtype.storage)
        assert out.__array_interface__["data"][0] % 64 == 0


def _proc_cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return None


def test_cpu_features_detected_once_at_import_and_strictly():
    """Both extensions hold final CPU features as soon as they are imported (no kernel has
    run yet), the same in both, and each equals what the kernel reports in /proc/cpuinfo,
    with a SIMD feature set counted only when every extension it is compiled for is there."""
    import subprocess
    import sys
    code = ("from reorder import _kernels, _convert\n"
            "print(repr((_kernels.cpu_features(), _convert.cpu_features())))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    kernels, convert = eval(out)
    assert kernels == convert
    flags = _proc_cpu_flags()
    if flags is None or not {"sse2"} & flags:
        pytest.skip("no x86 /proc/cpuinfo flags to compare with")
    has = lambda *names: all(n in flags for n in names)
    conv = has("avx512f", "avx512bw", "avx512vl", "avx512dq")
    assert kernels == {"avx2": has("avx2"), "avx512f": has("avx512f"),
                       "avx512 f+bw": has("avx512f", "avx512bw"),
                       "avx512 f+bw+vl+dq": conv,
                       "avx512 bf16": conv and has("avx512_bf16"),
                       "avx512 vbmi+vnni": conv and has("avx512vbmi", "avx512_vnni")}
    from reorder import _convert as cv
    assert cv.simd_available() == conv
    assert ("avx512" in _kernels.simd_paths()) == has("avx512f")
