"""Tiles into dst rows a multiple of 512 bytes apart walk B's columns first (all of A's rows
at each column, so each dst row is written whole, in order): nchw -> nhwc and 2-D
transposes of f32, 16-bit and byte elements, with ragged columns, a reversed and an offset
source, against numpy's own transpose bit for bit on every SIMD path, streamed and cached,
1-3 threads; the plan must choose the order where it is meant to, and only there."""
import numpy as np
import pytest

import reorder as ro
from reorder import _kernels
from reorder.plan.cache import cached_plan

from reorder.testing.reference import uint_view
from simd_paths import kernel_paths
from storage_values import STORAGE, check_on_threads, random_storage

simd = kernel_paths("avx512", "avx2")

STREAMED, CACHED = 0, 1 << 62

BOTH, STREAMED_ONLY, CACHED_ONLY, NEITHER = ("cached", "streamed"), ("streamed",), ("cached",), ()
# (dtype, src, dst, dims, the stores with which columns go first in a streamed plan, in a
# cached one): dst rows (pixels, or the rows of the transpose) 512 or 1024 bytes apart; the
# columns (pixels) end in a partial tile (144 = 9 x 16, 289, 961 and 2100 are not multiples
# of 16 or 64; byte planes of 961 keep a column's 512 rows at 8 an L1 set); more channels
# than a work item has pixels (8x8). 1- and 2-byte elements go columns first with cached
# stores in a cached plan's short slices only; a cached plan never streams.
CASES = [
    ("f32", "nchw", "nhwc", (16, 128, 12, 12), BOTH, CACHED_ONLY),     # rows 512 bytes apart
    ("f32", "nchw", "nhwc", (16, 256, 17, 17), BOTH, CACHED_ONLY),     # 1024
    ("bf16", "nchw", "nhwc", (16, 256, 17, 17), STREAMED_ONLY, CACHED_ONLY),
    ("f16", "nchw", "nhwc", (16, 256, 17, 17), STREAMED_ONLY, CACHED_ONLY),
    ("s8", "nchw", "nhwc", (16, 512, 31, 31), STREAMED_ONLY, CACHED_ONLY),
    ("u8", "nchw", "nhwc", (16, 512, 31, 31), STREAMED_ONLY, CACHED_ONLY),
    ("f32", "ab", "ba", (128, 2100), BOTH, CACHED_ONLY),
    ("bf16", "ab", "ba", (256, 4200), STREAMED_ONLY, CACHED_ONLY),
    ("f32", "nchw", "nhwc", (16, 128, 8, 8), BOTH, CACHED_ONLY),
    # 1024 rows of 16-bit planes: more than the L1's sets hold, so streamed only
    ("bf16", "nchw", "nhwc", (16, 1024, 7, 7), STREAMED_ONLY, NEITHER),
    # rows 768 bytes apart (f32 C = 192) keep row blocks first; so do source rows 4 KiB
    # apart (on 16 sets of an L2's 1024) and 8-byte elements (no such loop)
    ("f32", "nchw", "nhwc", (16, 192, 15, 15), NEITHER, NEITHER),
    ("f32", "ab", "ba", (1024, 1024), NEITHER, NEITHER),
    ("f64", "nchw", "nhwc", (16, 64, 12, 12), NEITHER, NEITHER),
]
PERM = {("nchw", "nhwc"): (0, 2, 3, 1), ("ab", "ba"): (1, 0)}


def _has_loop(dtype):
    """Whether this CPU has the columns-first loops for dtype's elements (AVX-512 tiles; BW
    for 1- and 2-byte ones): elsewhere no plan chooses the order."""
    size = np.dtype(STORAGE[dtype]).itemsize
    return "avx512" in _kernels.simd_paths() and \
        (size == 4 or _kernels.cpu_features()["avx512 f+bw"])


def _check(x, dtype, src, dst, in_streamed, in_cached):
    before = x.copy()
    expected = np.ascontiguousarray(x.transpose(PERM[src, dst]))
    for threshold, cols_first in ((STREAMED, in_streamed), (CACHED, in_cached)):
        p = cached_plan(ro.Desc.of(x, dtype=dtype, tag=src),
                        ro.Desc(x.shape, dtype, dst), stream_min_bytes=threshold)
        assert p.kernel == "transpose", p.explain()
        assert p.runners[0].cols_first == (cols_first if _has_loop(dtype) else ()), p.explain()
        check_on_threads(p, x, expected, STORAGE[dtype], threshold)
    assert np.array_equal(uint_view(x), uint_view(before))        # input untouched


@pytest.mark.parametrize("dtype,src,dst,dims,in_streamed,in_cached", CASES,
                         ids=[f"{c[0]}-{c[1]}-{'x'.join(map(str, c[3]))}" for c in CASES])
def test_tile_order_matches_numpy(simd, dtype, src, dst, dims, in_streamed, in_cached):
    x = random_storage(dims, dtype, np.random.default_rng(3))
    _check(x, dtype, src, dst, in_streamed, in_cached)


@pytest.mark.parametrize("view", ["reversed", "offset"])
@pytest.mark.parametrize("dtype", ["f32", "bf16", "s8"])
def test_tile_order_on_views(simd, view, dtype):
    """Channels in reverse order (a negative plane stride) and a source starting inside a
    bigger buffer: the columns-first loops read A's rows from their own stride."""
    c = {"f32": 128, "bf16": 256, "s8": 512}[dtype]
    big = random_storage((17, c + 3, 31, 31), dtype, np.random.default_rng(5))
    x = big[:16, ::-1][:, :c] if view == "reversed" else big[1:, 3:]
    _check(x, dtype, "nchw", "nhwc", BOTH if dtype == "f32" else STREAMED_ONLY, CACHED_ONLY)
