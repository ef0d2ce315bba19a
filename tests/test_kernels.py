"""Each fast kernel is chosen where it should be and agrees with the independent reference,
bit for bit, with SIMD on and off, streaming stores on and off, and for threads 1, 2 and 3."""
import numpy as np
import pytest

import reorder as ro
from reorder import _kernels
from reorder.plan_cache import cached_plan

from reference import ref_from_plain, ref_physical_shape, ref_reorder, uint_view
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
    ("ab", "ba", (1000, 3), "generic"),                       # B too short for a tile
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
    # 4 blocks: whole block rows move as wide elements through the transpose
    ("acdb", "aBcd16b", (2, 64, 5, 7), None),
    ("aBcd16b", "acdb", (2, 64, 3, 5), None),
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


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int8, np.float64])
@pytest.mark.parametrize("stag,dtag,dims,kernel", CASES)
def test_kernel_matches_reference(simd, streaming, stag, dtag, dims, kernel, dtype):
    rng = np.random.default_rng(1)
    x = _to_plain_src(dims, stag, dtype, rng)
    p = cached_plan(ro.Desc(dims, np.dtype(dtype).name, stag), ro.Desc(dims, np.dtype(dtype).name, dtag),
                    stream_min_bytes=streaming)
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


@pytest.mark.parametrize("dtype,width", [("f32", 64), ("f16", 32), ("s8", 16)])
@pytest.mark.parametrize("stag,dtag,dims", [("nhwc", "nChw16c", (2, 64, 5, 7)),
                                            ("nChw16c", "nhwc", (2, 64, 3, 5))])
def test_block_rows_move_as_wide_elements(stag, dtag, dims, dtype, width):
    """16-lane block rows that are contiguous on both sides move as one wide element (16
    times the element size) through the transpose, and give the reference's bytes."""
    p = ro.plan(ro.Desc(dims, dtype, stag), ro.Desc(dims, dtype, dtag))
    assert p.kernel == "transpose" and f"runs of {width} B" in p.explain(), p.explain()
    sabs, dabs = {"nhwc": "acdb", "nChw16c": "aBcd16b"}[stag], {"nhwc": "acdb", "nChw16c": "aBcd16b"}[dtag]
    x = _to_plain_src(dims, sabs, np.dtype(p.src.dtype.storage), np.random.default_rng(4))
    x = x.reshape(p.src.physical_shape)
    got = p(x)
    expected = ref_reorder(x.reshape(-1), dims, sabs, dabs).reshape(ref_physical_shape(dims, dabs))
    assert got.shape == expected.shape
    assert np.array_equal(uint_view(got), uint_view(expected))


# A padded block on an unchanged layout (nChw16c -> nChw16c at C=19): the walker copies a
# slab of whole rows, padding lanes included, and zeroes those lanes after. The source's
# padding holds random bits and dst starts as 0x5A, so a leaked or missed padding lane, or
# a zeroed data lane, shows in the bytes.
SLAB_MOVES = [((2, 19, 5, 7), "aBcd16b"), ((1, 3, 4, 4), "aBcd16b"), ((3, 1, 2, 3), "aBcd8b"),
              ((2, 17, 3, 3), "aBcd4b"), ((40, 19), "aB16b"), ((2, 19, 0, 3), "aBcd16b"),
              ((2, 3, 2, 5, 5), "aBcde16b")]


@pytest.mark.parametrize("dtype", [np.int8, np.float16, np.float32, np.float64])
@pytest.mark.parametrize("dims,tag", SLAB_MOVES, ids=[f"{t}-{'x'.join(map(str, d))}" for d, t in SLAB_MOVES])
def test_padded_block_slabs(dims, tag, dtype):
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


def test_padded_runs_do_not_move_as_wide_elements():
    padded = ro.plan(ro.Desc((2, 30, 5, 7), "f32", "nhwc"), ro.Desc((2, 30, 5, 7), "f32", "nChw16c"))
    assert "runs of" not in padded.explain()       # a padded run cannot move as a unit


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
