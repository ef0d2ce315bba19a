"""The interleave kernel (pixels of a few channels side by side <-> one plane a channel: nhwc
<-> nchw of images): every element size, both directions, channel counts from 2 to 15, rows
that end in a partial step, against numpy's own transpose bit for bit, on the AVX-512 and
portable paths, streaming forced on and off, 1-3 threads; the plan must pick the kernel
where it is meant to run, so a planner change cannot bypass it."""
import numpy as np
import pytest

import reorder as ro
from reorder import _kernels
from reorder.kernels import move
from reorder.plan.cache import cached_plan

from reorder.testing.reference import uint_view
from simd_paths import kernel_paths
from storage_values import STORAGE, check_on_threads, random_storage

DTYPES = ["f32", "bf16", "f16", "s8", "u8", "f64"]
# N, H, W of the images: rows ending in a partial step of every element size (37, 7x11,
# 224x224 = 50176 pixels); one image of one row; a row of exactly one step of bytes (64);
# rows shorter than a line (3x5: other kernels); zero-size N and H
SHAPES = [(2, 1, 37), (3, 7, 11), (1, 224, 224), (1, 1, 64), (2, 3, 5), (0, 4, 4), (2, 0, 5)]
CHANNELS = [2, 3, 4, 5, 7, 8, 10, 12, 15]
PERM = {("nhwc", "nchw"): (0, 3, 1, 2), ("nchw", "nhwc"): (0, 2, 3, 1)}

simd = kernel_paths("avx512")


def _meant_for_interleave(dims, dtype, to_planes, streaming):
    n, c, h, w = dims
    size = np.dtype(STORAGE[dtype]).itemsize
    most = move.INTERLEAVE_STREAMED_MAX_CHANNELS if streaming \
        else move.INTERLEAVE_MAX_CHANNELS[size, to_planes]
    return (0 not in dims and c <= most
            and (size, to_planes, c) not in move.INTERLEAVE_LEFT_TO_TILES
            and h * w * size >= 64 and bool(_kernels.interleave_paths(size)))


def _check(x, src, dst, dims, dtype, simd):
    before = x.copy()
    expected = np.ascontiguousarray(x.transpose(PERM[src, dst]))
    for streaming in (False, True):
        p = cached_plan(ro.Desc(dims, dtype, src), ro.Desc(dims, dtype, dst),
                        stream_min_bytes=0 if streaming else 1 << 62)
        if _meant_for_interleave(dims, dtype, src == "nhwc", streaming):
            assert p.kernel == "interleave", p.explain()
            assert p.runners[0].nt == streaming
            assert p.runners[0].path == ("avx512" if simd else "portable")
        elif 0 not in dims:
            assert p.kernel != "interleave", p.explain()
        check_on_threads(p, x, expected, STORAGE[dtype], streaming)
    assert np.array_equal(uint_view(x), uint_view(before))        # input untouched


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("c", CHANNELS)
@pytest.mark.parametrize("nhw", SHAPES, ids=["x".join(map(str, s)) for s in SHAPES])
@pytest.mark.parametrize("src,dst", [("nhwc", "nchw"), ("nchw", "nhwc")])
def test_interleave_matches_numpy(simd, src, dst, nhw, c, dtype):
    n, h, w = nhw
    dims = (n, c, h, w)
    rng = np.random.default_rng(n * 1000 + c * 10 + h + w)
    shape = (n, h, w, c) if src == "nhwc" else dims
    x = random_storage(shape, dtype, rng)
    _check(x, src, dst, dims, dtype, simd)


@pytest.mark.parametrize("dtype", ["f32", "bf16", "u8"])
@pytest.mark.parametrize("view", ["channels_reversed", "offset", "batch_step", "rgba_to_rgb",
                                  "w_reversed"])
def test_views(simd, view, dtype):
    """Views of the source: planes in reverse order (a negative plane stride), an offset
    start and every other image keep each row's pixels contiguous, so the kernel runs them;
    three channels of four (pixels 4 apart) and a reversed W do not, and must still be exact."""
    rng = np.random.default_rng(7)
    planar = random_storage((5, 4, 9, 40), dtype, rng)       # nchw
    pixels = random_storage((5, 9, 40, 4), dtype, rng)       # nhwc
    v, src = {"channels_reversed": (planar[:, ::-1], "nchw"),
              "offset": (planar[1:, 1:, 2:, :], "nchw"),
              "batch_step": (pixels[::2], "nhwc"),
              "rgba_to_rgb": (pixels[..., :3], "nhwc"),
              "w_reversed": (pixels[:, :, ::-1], "nhwc")}[view]
    dst = "nhwc" if src == "nchw" else "nchw"
    before = (planar.copy(), pixels.copy())
    kw = {"dtype": "bf16"} if dtype == "bf16" else {}
    p = ro.plan(ro.Desc.of(v, src, **kw), dst)
    assert (p.kernel == "interleave") == (view not in ("rgba_to_rgb", "w_reversed")
                                          and bool(_kernels.interleave_paths(v.itemsize))), \
        p.explain()
    got = ro.reorder(v, src, dst, **({"src_dtype": "bf16"} if dtype == "bf16" else {}))
    expected = np.ascontiguousarray(v.transpose(PERM[src, dst]))
    assert np.array_equal(uint_view(got), uint_view(expected))
    assert np.array_equal(uint_view(planar), uint_view(before[0]))
    assert np.array_equal(uint_view(pixels), uint_view(before[1]))


def test_explain_names_the_kernel():
    p = ro.plan(ro.Desc((2, 3, 64, 64), "u8", "nhwc"), ro.Desc((2, 3, 64, 64), "u8", "nchw"))
    if _kernels.interleave_paths(1):
        assert "kernel interleave: pixels of a few channels" in p.explain()
        assert "interleave: pixels of 3 channels into planes, rows in pieces of" in p.explain()
        assert p.runners[0].channels == 3 and p.runners[0].to_planes


@pytest.mark.parametrize("shape,why", [((1, 100, 0, 1, 64), "bad interleave"),
                                       ((16, 100, 100, 1, 64), "bad interleave"),
                                       ((17, 100, 100, 1, 64), "bad interleave"),
                                       ((3, 0, 100, 1, 64), "bad interleave"),
                                       ((3, 100, 100, 2, 64), "bad interleave"),
                                       ((3, 100, 100), "5 numbers")])
def test_runner_refuses_bad_shapes(shape, why):
    with pytest.raises(ValueError, match=why):
        _kernels.Interleave(1, np.zeros((0, 5), np.int64), np.array(shape, np.int64), False)
