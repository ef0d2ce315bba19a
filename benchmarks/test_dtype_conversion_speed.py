"""Speed of type conversions on an unchanged layout and through a layout change, each beside
np.copyto of the same bytes ((src + dst) / 2) in the same run, 8x256x56x56, 1 and 2 threads:
nchw <-> nhwc and nchw <-> nChw16c through the tiles (1-byte outputs four lane groups at a
time where a lane's source run is short; docs/int8.md); back to nchw also at 1x64x112x112,
whose 12544 pixels a plane are more lanes than one tile call takes, and at 8x512x7x7, whose
49 are not a multiple of 16 (the tile's last group overlaps the one before); nhwc -> nchw at
2x128x64x64, whose f32 planes lie a multiple of 4 KiB apart (built in a scratch and copied
out a plane at a time; docs/kernels/conversion.md#tuning-constants); a padded block on an unchanged layout, nChw16c at
C=19; nhwc <-> nChw16c, whose runs of 16 channels the conversion walk takes as grids (one
SIMD call for many runs; docs/int8.md); and images of three channels between nhwc and nchw
(8x3x224x224: u8 -> f32 with a scale is an image's preprocessing).

Targets (medians, ratio to that copy; docs/int8.md): >= 0.8 on an unchanged layout (and at
least oneDNN 3.2's ratio), >= 0.7 through a layout change."""
import functools

import numpy as np
import pytest

import reorder as ro

THREADS = [1, 2]
DIMS = (8, 256, 56, 56)

# (src dtype, dst dtype, conversion keywords): every pair the issue lists
PAIRS = [
    ("f32", "bf16", {}),
    ("bf16", "f32", {}),
    ("f32", "f16", {}),
    ("f16", "f32", {}),
    ("f32", "s8", {"dst_scales": 0.01}),
    ("f32", "u8", {"dst_scales": 0.01, "dst_zero_point": 128}),
    ("s8", "f32", {"src_scales": 0.01}),
    ("u8", "f32", {"src_scales": 0.01, "src_zero_point": 128}),
]
LAYOUTS = [("nchw", "nchw", DIMS), ("nchw", "nhwc", DIMS), ("nhwc", "nchw", DIMS),
           ("nChw16c", "nchw", DIMS),
           ("nchw", "nChw16c", DIMS), ("nChw16c", "nchw", (1, 64, 112, 112)),
           ("nChw16c", "nchw", (8, 512, 7, 7)), ("nChw16c", "nChw16c", (8, 19, 56, 56)),
           ("nhwc", "nchw", (2, 128, 64, 64)),
           ("nhwc", "nChw16c", DIMS), ("nChw16c", "nhwc", DIMS),
           # images: three channels side by side <-> planes (a move by the interleave
           # kernel, then the conversion on an unchanged layout; docs/kernels/conversion.md)
           ("nhwc", "nchw", (8, 3, 224, 224)), ("nchw", "nhwc", (8, 3, 224, 224))]


@functools.lru_cache(maxsize=4)      # 26-103 MB each; the cases come grouped by pair
def _source(sdt, stag, dims):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(dims) * 40).astype(np.float32)
    if sdt in ("s8", "u8"):
        x = np.clip(np.rint(x), -128 if sdt == "s8" else 0, 127 if sdt == "s8" else 255)
    d = ro.Desc(dims, sdt, stag)
    return ro.reorder(x, "nchw", d, dtype=sdt), d


def _label(kw):
    return ",".join(f"{k.replace('_scales', ' scale').replace('_zero_point', ' zp')} {v:g}"
                    for k, v in kw.items())


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("stag,dtag,dims", LAYOUTS,
                         ids=lambda t: "x".join(map(str, t)) if isinstance(t, tuple) else t)
@pytest.mark.parametrize("sdt,ddt,kw", PAIRS, ids=lambda p: p if isinstance(p, str) else "")
@pytest.mark.parametrize("impl", ["reorder", "copy"])
def test_conversion_speed(benchmark, record, time_copy, impl, sdt, ddt, kw, stag, dtag, dims,
                          threads):
    x, sdesc = _source(sdt, stag, dims)
    p = ro.plan(sdesc, dtag, dtype=ddt, **kw)
    out = p.empty()
    nbytes = x.nbytes + out.nbytes
    extra = f" ({_label(kw)})" if kw else ""
    size = "" if dims == DIMS else " " + "x".join(map(str, dims))
    group = f"{sdt}->{ddt} {stag}->{dtag}{size}{extra} {threads}T"
    benchmark.group = group
    if impl == "reorder":
        benchmark(p, x, out, threads)
    else:
        time_copy(nbytes)
    record(group, impl, nbytes)
