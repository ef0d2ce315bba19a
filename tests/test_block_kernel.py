"""The block kernel (conv weights blocked in two dims: OIhw16i16o, OIhw4i16o4i, ...): every
element size, both directions, against the independent reference bit for bit (padding
included), on the AVX-512, AVX2 and portable paths, streaming forced on and off, 1-3
threads, and the plan must pick the kernel where it is meant to run, so a planner change
cannot bypass it."""
import numpy as np
import pytest

import reorder as ro
from reorder import _kernels
from reorder.plan.cache import cached_plan

from reorder.testing.reference import ref_from_plain, ref_physical_shape, ref_reorder, uint_view
from simd_paths import kernel_paths
from storage_values import STORAGE, check_on_threads, random_storage, sentinel

# f64: 8-byte elements take 4x4 qword transposes on the AVX2 path
DTYPES = ["f32", "bf16", "f16", "s8", "u8", "f64"]

# the tests' own names for the abstract tags the reference understands
ABSTRACT = {"oihw": "abcd", "OIhw16i16o": "ABcd16b16a", "OIhw4i16o4i": "ABcd4b16a4b",
            "OIhw8i8o": "ABcd8b8a", "IOhw16o16i": "BAcd16a16b", "OIhw16o16i": "ABcd16a16b",
            "goihw": "abcde", "gOIhw16i16o": "aBCde16c16b", "ABcd4b32a4b": "ABcd4b32a4b",
            "OIhw8i16o2i": "ABcd8b16a2b", "ABcd16b32a2b": "ABcd16b32a2b", "hwio": "cdba"}
# ABcd4b32a4b: 32-byte s8 rows, the 256-bit interleave of bytes; OIhw8i16o2i (bf16 weights)
# and ABcd16b32a2b: pairs interleaved, 16- and 32-row groups
BLOCKED = ["OIhw16i16o", "OIhw4i16o4i", "OIhw8i8o", "IOhw16o16i", "ABcd4b32a4b", "OIhw8i16o2i",
           "ABcd16b32a2b"]

# O x I x H x W: O and I below, at and above a block, padded on either or both; 1x1, 3x3,
# 5x5 and 7x1 spatial dims; 1x1 unpadded (runs of a few elements contiguous on both sides,
# which a copy would take); the benchmarks' padded weights; zero-size O
DIMS = [(1, 1, 1, 1), (3, 15, 3, 3), (16, 16, 3, 3), (17, 33, 5, 5), (33, 17, 7, 1),
        (15, 3, 1, 1), (32, 64, 1, 1), (200, 120, 3, 3), (0, 16, 3, 3)]


# the block kernel has an AVX-512 path (F, BW, VBMI: the il = 4 interleave of 16- and
# 32-byte rows as byte permutes, the AVX2 tiles otherwise), an AVX2 one and the portable one
simd = kernel_paths("avx512", "avx2")


def _path(simd):
    """The path a runner takes under the fixture's set_simd (AVX2 where the CPU has AVX-512
    but not VBMI)."""
    if simd == "avx512" and "avx512" not in _kernels.block_paths():
        return "avx2"
    return simd or "portable"


BLOCK_ELEMS = {"OIhw16i16o": 256, "OIhw4i16o4i": 256, "OIhw8i8o": 64, "IOhw16o16i": 256,
               "ABcd4b32a4b": 512, "gOIhw16i16o": 256, "OIhw8i16o2i": 256, "ABcd16b32a2b": 1024}


def _meant_for_blocks(dims, blocked, dtype):
    """Blocks of at least 2 rows hold something (a size-1 or zero-size dim normalises away
    the row node or the whole problem), and the block fits the kernel's scratch."""
    nbytes = BLOCK_ELEMS[blocked] * dims[-2] * dims[-1] * np.dtype(STORAGE[dtype]).itemsize
    return 0 not in dims and min(dims[-4], dims[-3]) >= 2 and nbytes <= _kernels.BLOCK_MAX_BYTES


def _check(src_tag, dst_tag, dims, dtype, simd, plain_tag="oihw"):
    rng = np.random.default_rng(sum(dims) + len(dtype))
    plain = random_storage(dims, dtype, rng)
    sabs, dabs = ABSTRACT[src_tag], ABSTRACT[dst_tag]
    x = ref_from_plain(plain, ABSTRACT[plain_tag], sabs) if src_tag != plain_tag else plain
    before = x.copy()
    expected = ref_reorder(x.reshape(-1), dims, sabs, dabs).reshape(ref_physical_shape(dims, dabs))
    for streaming in (False, True):
        p = cached_plan(ro.Desc(dims, dtype, src_tag), ro.Desc(dims, dtype, dst_tag),
                        stream_min_bytes=0 if streaming else 1 << 62)
        if _meant_for_blocks(dims, dst_tag if src_tag == plain_tag else src_tag, dtype) \
                and dims[-2:] != (1, 1) or p.kernel == "blocks":
            # (1x1 weights may run as whole-line copies or as wide elements through the
            # transpose; never as copies of runs shorter than a line, below)
            assert p.kernel == "blocks", p.explain()
            assert p.runners[0].nt == streaming
            assert p.runners[0].path == _path(simd)
        if p.kernel == "copy":      # whole lines a run (IOhw16o16i 1x1: 16 i), never less
            prob = p.steps[0].problem
            assert prob.nodes[-1].extent * prob.itemsize >= 64, p.explain()
        check_on_threads(p, x.reshape(p.src.physical_shape), expected, STORAGE[dtype], streaming)
    assert np.array_equal(uint_view(x), uint_view(before))        # input untouched


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dims", DIMS, ids=["x".join(map(str, d)) for d in DIMS])
@pytest.mark.parametrize("blocked", BLOCKED)
@pytest.mark.parametrize("direction", ["to_blocked", "to_plain"])
def test_weights_match_reference(simd, direction, blocked, dims, dtype):
    if direction == "to_blocked":
        _check("oihw", blocked, dims, dtype, simd)
    else:
        _check(blocked, "oihw", dims, dtype, simd)


# hwio (TensorFlow's weights, o contiguous) <-> the blocked layouts that interleave groups of
# 2 or 4 i with 16 o (OIhw4i16o4i, OIhw8i16o2i): every column of a block is a run of 16 o on
# the hwio side (the block kernel's runs); OIhw16i16o's runs of 16 o are runs on both sides,
# a copy of runs where nothing is padded. 7x7 f32 blocks exceed the scratch (smaller blocks).
RUNS_DIMS = DIMS + [(64, 40, 7, 7), (48, 32, 1, 1)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dims", RUNS_DIMS, ids=["x".join(map(str, d)) for d in RUNS_DIMS])
@pytest.mark.parametrize("blocked", ["OIhw4i16o4i", "OIhw8i16o2i", "OIhw16i16o"])
@pytest.mark.parametrize("direction", ["to_blocked", "to_plain"])
def test_hwio_weights_match_reference(simd, direction, blocked, dims, dtype):
    src, dst = ("hwio", blocked) if direction == "to_blocked" else (blocked, "hwio")
    rng = np.random.default_rng(sum(dims) + len(dtype))
    x = ref_from_plain(random_storage(dims, dtype, rng), "abcd", ABSTRACT[src])
    before = x.copy()
    expected = ref_reorder(x.reshape(-1), dims, ABSTRACT[src], ABSTRACT[dst]).reshape(
        ref_physical_shape(dims, ABSTRACT[dst]))
    for streaming in (False, True):
        p = cached_plan(ro.Desc(dims, dtype, src), ro.Desc(dims, dtype, dst),
                        stream_min_bytes=0 if streaming else 1 << 62)
        if blocked != "OIhw16i16o" and 0 not in dims and min(dims[:2]) >= 2 \
                and dtype != "f64" and dims[:2] != (16, 16):
            assert p.kernel == "blocks" and p.runners[0].runs, p.explain()
            assert p.runners[0].path == _path(simd)
        if blocked == "OIhw16i16o" and dims == (16, 16, 3, 3):
            assert p.kernel == "copy", p.explain()
        check_on_threads(p, x.reshape(p.src.physical_shape), expected, STORAGE[dtype], streaming)
    assert np.array_equal(uint_view(x), uint_view(before))


@pytest.mark.parametrize("dtype", ["f32", "bf16", "s8"])
@pytest.mark.parametrize("view,runs", [("offset", True), ("i_reversed", True), ("i_step", True),
                                       ("o_reversed", False)])
@pytest.mark.parametrize("dst", ["OIhw4i16o4i", "OIhw8i16o2i"])
def test_hwio_views(simd, dst, view, runs, dtype):
    """Views of an hwio source: an offset start, I reversed (runs at falling addresses) or
    stepped keep each o run contiguous, so the runs take them; O reversed does not."""
    big = random_storage((3, 3, 41, 37), dtype, np.random.default_rng(7))
    v = {"offset": big[1:, :, 2:, 3:], "i_reversed": big[:, :, ::-1], "i_step": big[:, :, ::2],
         "o_reversed": big[..., ::-1]}[view]
    before = big.copy()
    kw = {"src_dtype": "bf16"} if dtype == "bf16" else {}
    p = ro.plan(ro.Desc.of(v, "hwio", dtype=dtype if dtype == "bf16" else None), dst)
    assert (p.kernel == "blocks" and p.runners[0].runs) == runs, p.explain()
    got = ro.reorder(v, "hwio", dst, **kw)
    expected = ref_from_plain(np.ascontiguousarray(v), "cdba", ABSTRACT[dst])
    assert np.array_equal(uint_view(got), uint_view(expected))
    assert np.array_equal(uint_view(big), uint_view(before))


@pytest.mark.parametrize("dtype", ["f32", "bf16", "s8"])
@pytest.mark.parametrize("dims", [(3, 17, 33, 3, 3), (2, 32, 16, 1, 1)], ids=["3x17x33x3x3", "2x32x16x1x1"])
@pytest.mark.parametrize("direction", ["to_blocked", "to_plain"])
def test_grouped_weights(simd, direction, dims, dtype):
    """goihw <-> gOIhw16i16o: the groups dim is one more outer node."""
    if direction == "to_blocked":
        _check("goihw", "gOIhw16i16o", dims, dtype, simd, plain_tag="goihw")
    else:
        _check("gOIhw16i16o", "goihw", dims, dtype, simd, plain_tag="goihw")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("view,blocks", [("o_reversed", True), ("offset", True), ("o_step", True),
                                         ("i_reversed", False)])
@pytest.mark.parametrize("dst", ["OIhw16i16o", "OIhw4i16o4i"])
def test_strided_sources(simd, dst, view, blocks, dtype):
    """Views of an oihw source: a reversed or stepped O axis and an offset start keep each
    row's I x h x w contiguous, so the block kernel runs them; a reversed I axis does not."""
    rng = np.random.default_rng(3)
    big = random_storage((41, 37, 3, 3), dtype, rng)
    v = {"o_reversed": big[::-1], "offset": big[2:, 3:], "o_step": big[::2, 1:],
         "i_reversed": big[:, ::-1]}[view]
    before = big.copy()
    kw = {"src_dtype": "bf16"} if dtype == "bf16" else {}
    p = ro.plan(ro.Desc.of(v, "oihw", dtype=dtype if dtype == "bf16" else None), dst)
    assert (p.kernel == "blocks") == blocks, p.explain()
    got = ro.reorder(v, "oihw", dst, **kw)
    expected = ref_from_plain(np.ascontiguousarray(v), "abcd", ABSTRACT[dst])
    assert got.shape == expected.shape
    assert np.array_equal(uint_view(got), uint_view(expected))
    assert np.array_equal(uint_view(big), uint_view(before))


# 1-byte blocks of 16 rows move whole in registers on the AVX-512 path, a segment of columns
# at a time: one to four registers a row (2x2, 1x3, 3x3, 4x4), segments ending in a chunk of
# at most 16 bytes (3x3, 1x1), of 32 or 48 (2x1, 3x1, 2x3); several segments a block; I padded
# inside a segment and past it; O padded; a block of one segment
REGISTER_DIMS = [(16, 16, 2, 2), (17, 33, 4, 4), (18, 19, 1, 3), (33, 20, 2, 1), (40, 72, 3, 3),
                 (20, 40, 1, 1), (16, 16, 3, 1), (31, 49, 2, 3), (16, 16, 3, 3)]
REGISTER_TAGS = ["OIhw16i16o", "OIhw4i16o4i", "OIhw8i16o2i"]
# 16-bit 8i16o2i weights (a dword is one pair of i) and 4i16o4i ones (pairs of dwords; 1x1:
# the identity map): segments of up to five registers a row (3x3: 288 bytes)
REGISTER_16 = [(dims, tag, dt) for dims in REGISTER_DIMS if dims[2:] != (4, 4)
               for tag in ("OIhw8i16o2i", "OIhw4i16o4i") for dt in ("bf16", "f16")]


@pytest.mark.parametrize("dims,blocked,dtype",
                         [(d, b, dt) for d in REGISTER_DIMS for b in REGISTER_TAGS for dt in ("s8", "u8")]
                         + REGISTER_16)
@pytest.mark.parametrize("direction", ["to_blocked", "to_plain"])
def test_blocks_in_registers(simd, direction, blocked, dims, dtype):
    src, dst = ("oihw", blocked) if direction == "to_blocked" else (blocked, "oihw")
    p = ro.plan(ro.Desc(dims, dtype, src), ro.Desc(dims, dtype, dst))
    assert p.kernel == "blocks" and p.runners[0].in_registers, p.explain()
    assert ("in registers" in p.explain()) == (_path(simd) == "avx512")
    _check(src, dst, dims, dtype, simd)


@pytest.mark.parametrize("dims,blocked,dtype", [((17, 33, 5, 5), "OIhw16i16o", "s8"),
                                                ((16, 16, 3, 3), "OIhw16i16o", "bf16"),
                                                ((16, 16, 3, 3), "OIhw8i8o", "s8")])
def test_blocks_outside_the_register_path(dims, blocked, dtype):
    """Segments wider than 256 bytes (5x5: 400), 2-byte elements and blocks of 8 rows take
    the tiles."""
    p = ro.plan(ro.Desc(dims, dtype, "oihw"), ro.Desc(dims, dtype, blocked))
    assert p.kernel == "blocks" and not p.runners[0].in_registers, p.explain()


# Activations blocked by 16 channels whose planes are small take the block kernel where the
# CPU has AVX-512 VBMI (move.ACTIVATION_BLOCK_COLUMNS): bytes either way, 16-bit
# elements into the blocked side; 7x7 (a plane not a multiple of 4 bytes), 3x5, 8x8, 1x3,
# 10x10 and 14x14; channels padded (35, 19, 3) and whole; one image and several
ACTIVATIONS = [((8, 64, 7, 7), "nchw", "nChw16c"), ((8, 64, 7, 7), "nChw16c", "nchw"),
               ((2, 35, 7, 7), "nchw", "nChw16c"), ((2, 35, 7, 7), "nChw16c", "nchw"),
               ((3, 19, 3, 5), "nchw", "nChw16c"), ((3, 19, 3, 5), "nChw16c", "nchw"),
               ((2, 48, 8, 8), "nChw16c", "nchw"), ((1, 3, 1, 3), "nchw", "nChw16c"),
               ((4, 40, 1, 3), "nChw16c", "nchw"), ((2, 19, 10, 10), "nchw", "nChw16c"),
               ((1, 32, 14, 14), "nchw", "nChw16c")]
ACT_CASES = [(n, s, d, dt) for n, s, d in ACTIVATIONS for dt in ("s8", "u8")] + \
            [(n, s, d, dt) for n, s, d in ACTIVATIONS if s == "nchw" for dt in ("bf16", "f16")]
ACT_ABSTRACT = {"nchw": "abcd", "nChw16c": "aBcd16b"}


@pytest.mark.parametrize("dims,src,dst,dtype", ACT_CASES,
                         ids=[f"{s}-{d}-{'x'.join(map(str, n))}-{dt}" for n, s, d, dt in ACT_CASES])
def test_small_planes_take_the_blocks(simd, dims, src, dst, dtype):
    rng = np.random.default_rng(sum(dims))
    plain = random_storage(dims, dtype, rng)
    x = ref_from_plain(plain, "abcd", ACT_ABSTRACT[src]) if src != "nchw" else plain
    before = x.copy()
    expected = ref_from_plain(plain, "abcd", ACT_ABSTRACT[dst])
    for streaming in (False, True):
        p = cached_plan(ro.Desc(dims, dtype, src), ro.Desc(dims, dtype, dst),
                        stream_min_bytes=0 if streaming else 1 << 62)
        if "avx512" in _kernels.block_paths():
            assert p.kernel == "blocks" and p.runners[0].in_registers, p.explain()
            assert p.runners[0].path == _path(simd)
        for threads in (1, 2, 3):
            out = sentinel(p.dst.physical_shape, STORAGE[dtype])
            p(x.reshape(p.src.physical_shape), out=out, threads=threads)
            assert np.array_equal(uint_view(out), uint_view(expected)), (streaming, threads, p.explain())
    assert np.array_equal(uint_view(x), uint_view(before))


@pytest.mark.parametrize("view", ["c_reversed", "offset", "c_step"])
def test_small_byte_planes_from_views(simd, view):
    """nchw views whose planes stay contiguous: channels reversed (rows at a negative
    stride) or stepped, an offset start."""
    big = random_storage((3, 41, 7, 7), "s8", np.random.default_rng(5))
    v = {"c_reversed": big[:, ::-1], "offset": big[1:, 2:], "c_step": big[:, ::2]}[view]
    before = big.copy()
    p = ro.plan(ro.Desc.of(v, "nchw"), "nChw16c")
    if "avx512" in _kernels.block_paths():
        assert p.kernel == "blocks", p.explain()
    got = ro.reorder(v, "nchw", "nChw16c")
    assert np.array_equal(got, ref_from_plain(np.ascontiguousarray(v), "abcd", "aBcd16b"))
    assert np.array_equal(big, before)


@pytest.mark.parametrize("dims,src,dst,dtype", [
    ((8, 64, 7, 7), "nChw16c", "nchw", "f32"), ((8, 64, 7, 7), "nChw16c", "nchw", "bf16"),
    ((8, 64, 28, 28), "nchw", "nChw16c", "s8"), ((8, 64, 14, 14), "nChw16c", "nchw", "s8"),
    ((8, 64, 7, 7), "nChw8c", "nchw", "s8")])
def test_other_planes_keep_the_transpose(dims, src, dst, dtype):
    """Wider elements, 16-bit planes out of the blocked side, larger planes (14x14 from the
    blocked side, 28x28 either way) and blocks of 8 channels keep the transpose kernel."""
    p = ro.plan(ro.Desc(dims, dtype, src), ro.Desc(dims, dtype, dst))
    assert p.kernel == "transpose", p.explain()


@pytest.mark.parametrize("dtype", DTYPES[:5])
@pytest.mark.parametrize("src,dst,dims", [
    ("oihw", "OIhw16i16o", (512, 512, 3, 3)), ("OIhw16i16o", "oihw", (512, 512, 3, 3)),
    ("oihw", "OIhw4i16o4i", (200, 120, 3, 3)), ("OIhw4i16o4i", "oihw", (200, 120, 3, 3)),
    ("oihw", "OIhw8i16o2i", (200, 120, 3, 3)), ("OIhw8i16o2i", "oihw", (200, 120, 3, 3))])
def test_benchmark_cases_take_the_block_kernel(src, dst, dims, dtype):
    """The speed-target cases (reorder/bench_cases.py) run on this kernel, on its widest path
    where the CPU has it."""
    p = ro.plan(ro.Desc(dims, dtype, src), ro.Desc(dims, dtype, dst))
    assert p.kernel == "blocks" and len(p.runners) == 1, p.explain()
    assert "kernel blocks:" in p.explain()
    if _kernels.block_paths():
        assert p.runners[0].path == _kernels.block_paths()[0]


@pytest.mark.parametrize("src,dst,dims", [("nchw", "nChw16c", (2, 48, 7, 7)),
                                          ("nChw16c", "nchw", (2, 48, 7, 7)),
                                          ("oihw", "hwio", (64, 32, 3, 3))])
def test_one_blocked_dim_stays_with_transpose(src, dst, dims):
    """Activations (one blocked dim) and plain weight moves keep the transpose kernel."""
    p = ro.plan(ro.Desc(dims, "f32", src), ro.Desc(dims, "f32", dst))
    assert p.kernel == "transpose", p.explain()


def test_blocks_too_big_for_the_scratch_fall_back():
    """A 16 x 16 x 11 x 11 f32 block (61 KiB) exceeds the scratch: the transpose kernel runs
    it, still exact."""
    dims = (32, 32, 11, 11)
    p = ro.plan(ro.Desc(dims, "f32", "oihw"), ro.Desc(dims, "f32", "OIhw16i16o"))
    assert p.kernel == "transpose", p.explain()
    x = np.random.default_rng(0).standard_normal(dims).astype(np.float32)
    assert np.array_equal(p(x), ref_from_plain(x, "abcd", "ABcd16b16a"))


def test_runner_rejects_bad_shapes():
    nodes = np.array([[2, 16, 16, -1, 1]], np.int64)
    checked = np.zeros((0, 3), np.int64)
    q = np.arange(16, dtype=np.int32)
    ok = np.array([16, 16, 1, 16, 1, -1, 1, -1, 1], np.int64)
    _kernels.Blocks(4, nodes, checked, q, ok, False)
    with pytest.raises(ValueError, match="element size"):
        _kernels.Blocks(3, nodes, checked, q, ok, False)
    with pytest.raises(ValueError, match="bad block"):
        _kernels.Blocks(4, nodes, checked, q, np.array([16, 16, 3, 16, 1, -1, 1, -1, 1], np.int64), False)
    with pytest.raises(ValueError, match="bad block"):
        _kernels.Blocks(4, nodes, checked, q, np.array([512, 512, 1, 512, 1, -1, 1, -1, 1], np.int64), False)
    with pytest.raises(ValueError, match="outside"):
        _kernels.Blocks(4, nodes, checked, q * 2, ok, False)
    with pytest.raises(ValueError, match="more than one column"):
        _kernels.Blocks(1, nodes, checked, q // 2, ok, False)
    runs = np.array([16, 16, 4, 1, 1, -1, 1, -1, 1], np.int64)
    _kernels.Blocks(1, nodes, checked, q, runs, False, np.arange(16, dtype=np.int64) * 64)
    with pytest.raises(ValueError, match="runs need 16 column offsets"):
        _kernels.Blocks(1, nodes, checked, q, runs, False, np.zeros(3, np.int64))
    with pytest.raises(ValueError, match="row stride of 1"):
        _kernels.Blocks(1, nodes, checked, q, ok, False, np.zeros(16, np.int64))


def test_padding_of_an_outer_dim_beside_padded_rows():
    """A block whose outer coordinate is all padding (a = 1 of 1) is zeros, even though its
    own row dim (c) is partly valid: abc -> ABC2a2b2c over 1x1x1."""
    p = ro.plan(ro.Desc((1, 1, 1), "s8", "abc"), ro.Desc((1, 1, 1), "s8", "ABC2a2b2c"))
    assert p.kernel == "blocks", p.explain()
    out = np.full(p.dst.physical_shape, 90, np.int8)
    p(np.array([[[7]]], np.int8), out=out)
    assert out.ravel().tolist() == [7, 0, 0, 0, 0, 0, 0, 0]


# Blocked -> "plain" blocks into a destination padded in a dim outside the block: the blocks
# that lie wholly in that padding must come out zero, whatever out= held. The first two take
# the block kernel's activation path where the CPU has AVX-512 VBMI (the transpose elsewhere),
# the third the weights path on every CPU.
OUTER_PAD_CASES = [
    ("u8", (1, 16, 16, 3), "cadb", "ADbc64a16a3d"),
    ("u8", (3, 16, 16, 3), "cadb", "ADbc16a3d"),
    ("f32", (2, 2, 33, 16, 2, 2), "dfeABc3a32b2a", "bEfAdc7e2a"),
    ("s8", (3, 5, 2, 2), "ABcd4a4b", "aBCd3c4b"),
]


@pytest.mark.parametrize("dtype, dims, src, dst", OUTER_PAD_CASES)
def test_padding_of_an_outer_dim_on_the_plain_side(simd, dtype, dims, src, dst):
    rng = np.random.default_rng(7)
    x = random_storage(ref_physical_shape(dims, src), dtype, rng)
    expected = ref_reorder(x.reshape(-1), dims, src, dst).reshape(ref_physical_shape(dims, dst))
    for streaming in (False, True):
        p = cached_plan(ro.Desc(dims, dtype, src), ro.Desc(dims, dtype, dst),
                        stream_min_bytes=0 if streaming else 1 << 62)
        if dtype == "f32":
            assert p.kernel == "blocks", p.explain()
        check_on_threads(p, x, expected, STORAGE[dtype], (src, dst, dims, streaming))
        fresh = p(x)                    # a new result: its padding comes from the kernel too
        assert np.array_equal(uint_view(fresh), uint_view(expected)), p.explain()
        if p.kernel == "blocks" and not p.runners[0].to_blocked:
            # the plan zeroes the destination first; the runner alone zeroes block by block
            assert p.runners[0].zero_bytes == p.dst.nbytes
            real = _kernels.Blocks
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(_kernels, "Blocks", lambda *args: real(*args[:7], 0))
                runner = p.steps[0].kernel.prepare(p.steps[0].problem, 0 if streaming else 1 << 62)
            assert runner.zero_bytes == 0
            for threads in (1, 2):
                out = sentinel(p.dst.physical_shape, STORAGE[dtype])
                runner.run(_kernels.data_address(x), _kernels.data_address(out), threads)
                assert np.array_equal(uint_view(out), uint_view(expected)), (threads, p.explain())
