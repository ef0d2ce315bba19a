"""Writing into part of an array, beside the same reorder into a whole array of the region's
size and np.copyto of the same bytes, in one run. Target (issue 48): a write into a
sub-memory runs at the speed of the same reorder into a whole tensor of that size; a
strided out= view at the speed of a contiguous out.

  region  half the channels of an nChw16c 8x64x56x56 parent, from nchw 8x32x56x56
  whole   the same source into a whole nChw16c 8x32x56x56
  view    nchw -> nhwc into big[..., 16:48] of an nhwc 8x56x56x64 array, and nchw -> nchw
          into big[:, ::2] of an nchw 8x64x56x56 array; `whole`: into a contiguous out
"""
import numpy as np
import pytest

import reorder as ro
from reorder.testing.reference import abstract_tag, reference_reorder

DIMS = (8, 32, 56, 56)
THREADS = [1, 2]


def _source():
    return np.random.default_rng(0).standard_normal(DIMS).astype(np.float32)


def _group(name, threads):
    return f"{name} {'x'.join(map(str, DIMS))} f32 {threads}T"


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("impl", ["region", "whole", "copy"])
def test_sub_memory_write(benchmark, record, time_copy, impl, threads):
    x = _source()
    whole = ro.plan(ro.Desc(DIMS, "f32", "nchw"), ro.Desc(DIMS, "f32", "nChw16c"))
    nbytes = x.nbytes + whole.dst.nbytes
    group = _group("nchw->nChw16c half of a 64-channel parent", threads)
    benchmark.group = group
    if impl == "region":
        parent = ro.Desc((8, 64, 56, 56), "f32", "nChw16c")
        sub = parent.submemory(DIMS, (0, 32, 0, 0))
        plan = ro.plan(ro.Desc(DIMS, "f32", "nchw"), sub)
        out = np.zeros(parent.physical_shape, np.float32)
        benchmark(plan, x, out, threads)
        want = reference_reorder(x, DIMS, "abcd", abstract_tag("nChw16c", 4))
        assert np.array_equal(out[:, 2:], want) and not out[:, :2].any()
    elif impl == "whole":
        out = whole.empty()
        benchmark(whole, x, out, threads)
    else:
        time_copy(nbytes)
    record(group, impl, nbytes)


VIEWS = {
    "nchw->nhwc into big[..., 16:48]": ("nhwc", (8, 56, 56, 64),
                                        lambda big: big[..., 16:48], (0, 2, 3, 1)),
    "nchw->nchw into big[:, ::2]": ("nchw", (8, 64, 56, 56), lambda big: big[:, ::2],
                                    (0, 1, 2, 3)),
}


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("case", list(VIEWS))
@pytest.mark.parametrize("impl", ["view", "whole", "copy"])
def test_strided_view_write(benchmark, record, time_copy, impl, case, threads):
    dtag, big_shape, take, perm = VIEWS[case]
    x = _source()
    nbytes = 2 * x.nbytes
    group = _group(case, threads)
    benchmark.group = group
    if impl == "view":
        big = np.zeros(big_shape, np.float32)
        view = take(big)
        benchmark(ro.reorder, x, "nchw", dtag, out=view, threads=threads)
        assert np.array_equal(view, x.transpose(perm))
    elif impl == "whole":
        out = np.empty(x.transpose(perm).shape, np.float32)
        benchmark(ro.reorder, x, "nchw", dtag, out=out, threads=threads)
    else:
        time_copy(nbytes)
    record(group, impl, nbytes)
