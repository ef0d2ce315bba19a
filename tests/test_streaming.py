"""Streaming (non-temporal) stores are a parameter of the plan: each kernel family runs with
streaming forced on (threshold 0) and forced off (2**62), and each result is compared with the
independent reference, not with the other. The kernel and runner chosen are asserted."""
import numpy as np
import pytest

import reorder as ro
from reorder.plan.cache import cached_plan

import quant_reference as qr
from reorder.testing.reference import ref_physical_shape, ref_reorder, uint_view

ON, OFF = 0, 1 << 62

# (kernel family, src tag, dst tag, dims, dtypes, kernel name, runner type, streams when forced)
FAMILIES = [
    ("copy", "abcd", "bacd", (3, 5, 16, 20), ("f32", "f32"), "copy", "Walker", True),
    ("transpose", "abcd", "aBcd16b", (2, 35, 7, 9), ("f32", "f32"), "transpose", "Transpose", True),
    # padded blocks of 256 floats: runs of 1 KiB contiguous on both sides, with zero padding
    ("generic walker", "aBcd256b", "aBcd512b", (2, 300, 2, 3), ("f32", "f32"), "generic",
     "Walker", True),
    ("conversion tile", "abcd", "aBcd16b", (2, 35, 5, 19), ("f32", "bf16"), "convert",
     "ConvertTile", True),
    ("conversion tile, s8 lines", "abcd", "aBcd16b", (2, 35, 5, 19), ("f32", "s8"), "convert",
     "ConvertTile", True),
    ("conversion tile, f32 columns", "aBcd16b", "abcd", (2, 35, 4, 8), ("bf16", "f32"),
     "convert", "ConvertTile", True),
    # f32 columns widened from bytes stream only in far planes (4 KiB apart or more)
    ("conversion tile, f32 columns from bytes", "aBcd16b", "abcd", (2, 35, 32, 32),
     ("s8", "f32"), "convert", "ConvertTile", True),
    ("conversion tile, near f32 columns from bytes", "aBcd16b", "abcd", (2, 35, 4, 8),
     ("s8", "f32"), "convert", "ConvertTile", False),
    # a plain conversion: one contiguous run, streamed after an unaligned head
    ("conversion rows", "abcd", "abcd", (2, 35, 5, 19), ("f32", "bf16"), "convert", "Convert",
     True),
    ("conversion rows, s8", "abcd", "abcd", (2, 35, 5, 19), ("f32", "s8"), "convert", "Convert",
     True),
    # an output wider than its input stays cached (docs/performance.md, "The streaming threshold")
    ("conversion rows, widening", "abcd", "abcd", (2, 35, 5, 19), ("s8", "f32"), "convert",
     "Convert", False),
    # the int8 weight kernel has no streaming stores: forcing them changes nothing
    ("int8 weight kernel", "abcd", "ABcd4b16a4b", (35, 21, 3, 3), ("f32", "s8"), "convert",
     "ConvertW4i16o4i", False),
]


@pytest.mark.parametrize("family,stag,dtag,dims,dts,kernel,runner,streams", FAMILIES,
                         ids=[f[0] for f in FAMILIES])
@pytest.mark.parametrize("threshold", [ON, OFF], ids=["streaming-on", "streaming-off"])
def test_streaming_forced_on_and_off(family, stag, dtag, dims, dts, kernel, runner, streams,
                                     threshold):
    sdt, ddt = dts
    rng = np.random.default_rng(len(family))
    n = qr.nelems(dims, stag)
    src = qr.random_values(n, sdt, rng)
    kw = {}
    if family == "int8 weight kernel":
        scales = rng.uniform(20, 60, dims[0]).astype(np.float32)
        kw = dict(src_scales=scales, src_scale_mask=1)
    sdesc, ddesc = ro.Desc(dims, sdt, stag), ro.Desc(dims, ddt, dtag)
    attrs = None
    if kw:
        from reorder.core.attrs import make_attrs
        attrs = make_attrs(**kw)
    p = cached_plan(sdesc, ddesc, None, attrs, threshold)
    assert p.kernel == kernel, p.explain()
    assert type(p.runners[0]).__name__ == runner, p.explain()
    assert p.runners[0].nt == (streams and threshold == ON), p.explain()
    for threads in (1, 2):
        out = np.empty(ddesc.physical_shape, dtype=ddesc.dtype.storage)
        uint_view(out)[...] = 0x5A                      # every byte must be written
        got = p(src.reshape(sdesc.physical_shape), out=out, threads=threads)
        assert got.shape == ref_physical_shape(dims, dtag)
        if sdt == ddt:
            exp = ref_reorder(src, dims, stag, dtag)
        else:
            exp, _, _ = qr.ref_reorder(src, dims, stag, dtag, sdt, ddt,
                                       src_scales=kw.get("src_scales"),
                                       src_mask=kw.get("src_scale_mask", 0))
        np.testing.assert_array_equal(uint_view(got).reshape(-1), uint_view(exp).reshape(-1))


def test_threshold_is_checked():
    d = ro.Desc((4, 4), "f32", "ab")
    for bad in (-1, 1.5, True):
        with pytest.raises(ro.ReorderError, match="stream_min_bytes"):
            cached_plan(d, d, None, None, bad)
