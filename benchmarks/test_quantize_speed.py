"""Speed of converting reorders, each beside np.copyto of the same bytes and a numpy version
of the same result. Targets (medians, ratio to copy): f32 -> s8 OIhw4i16o4i with per-output-
channel scales and s8s8 compensation >= 0.6 (TVM's plain loop ~0.45, oneDNN ~0.2);
f32 -> bf16 / f16 nchw -> nChw16c >= 0.9."""
import numpy as np
import pytest

import reorder as ro

try:
    import ml_dtypes
except ImportError:             # pragma: no cover
    ml_dtypes = None

THREADS = [1, 2]


def _np_quantize(w, scales, out):
    """numpy: scale, saturate, round, block into OIhw4i16o4i, and the s8s8 compensation."""
    o, i, h, ww = w.shape
    q = np.rint(np.clip(w * scales[:, None, None, None], -128, 127)).astype(np.int8)
    comp = -128 * q.sum(axis=(1, 2, 3), dtype=np.int32)
    blocks = q.reshape(o // 16, 16, i // 16, 4, 4, h, ww)          # O o16 I i4 i'4 h w
    np.copyto(out, blocks.transpose(0, 2, 5, 6, 3, 1, 4))           # O I h w i4 o16 i'4
    return comp


def _np_to_nChw16c(x, out, dtype):
    n, c, h, w = x.shape
    np.copyto(out, x.reshape(n, c // 16, 16, h, w).transpose(0, 1, 3, 4, 2).astype(dtype))


S8_CASES = [(256, 256, 3, 3), (512, 512, 3, 3)]


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dims", S8_CASES, ids=lambda d: "x".join(map(str, d)))
@pytest.mark.parametrize("impl", ["reorder", "copy", "numpy"])
def test_quantize_speed(benchmark, time_copy, record, impl, dims, threads):
    if impl == "numpy" and threads != 1:
        pytest.skip("numpy is single-threaded")
    rng = np.random.default_rng(0)
    w = rng.standard_normal(dims).astype(np.float32)
    scales = (rng.random(dims[0]).astype(np.float32) + 0.5) * 40
    # a 64-byte-aligned output, reused by every call (as plan.empty() gives)
    out = ro.quantize(w, "oihw", "OIhw4i16o4i", src_scales=scales, src_scale_mask=1).data
    nbytes = w.nbytes + out.nbytes
    group = f"f32->s8 OIhw4i16o4i per-oc scale + s8s8 {'x'.join(map(str, dims))} {threads}T"
    benchmark.group = group
    if impl == "reorder":
        q = benchmark(ro.quantize, w, "oihw", "OIhw4i16o4i", src_scales=scales, src_scale_mask=1,
                      compensation="s8s8", threads=threads, out=out)
        ref = np.empty_like(out)
        comp = _np_quantize(w, scales, ref)
        # numpy's float32 multiply is the same f32 product, so the bytes must agree
        np.testing.assert_array_equal(out, ref)
        np.testing.assert_array_equal(q.compensation, comp)
    elif impl == "copy":
        time_copy(nbytes)
    else:
        benchmark(_np_quantize, w, scales, out)
    record(group, impl, nbytes)


HALF_CASES = [(1, 64, 112, 112), (8, 256, 56, 56)]


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dims", HALF_CASES, ids=lambda d: "x".join(map(str, d)))
@pytest.mark.parametrize("dt", ["bf16", "f16"])
@pytest.mark.parametrize("impl", ["reorder", "copy", "numpy"])
def test_half_speed(benchmark, time_copy, record, impl, dt, dims, threads):
    if impl == "numpy" and (threads != 1 or (dt == "bf16" and ml_dtypes is None)):
        pytest.skip("numpy is single-threaded" if threads != 1 else "needs ml_dtypes")
    x = np.random.default_rng(0).standard_normal(dims).astype(np.float32)
    p = ro.plan("nchw", "nChw16c", dims=dims, dtype=dt)
    out = p.empty()
    nbytes = x.nbytes + out.nbytes
    group = f"f32->{dt} nchw->nChw16c {'x'.join(map(str, dims))} {threads}T"
    benchmark.group = group
    if impl == "reorder":
        benchmark(p, x, out, threads)
        if dt == "f16" or ml_dtypes is not None:
            ref = np.empty_like(out)
            _np_to_nChw16c(x, ref, out.dtype)
            np.testing.assert_array_equal(out.view(np.uint16), ref.view(np.uint16))
    elif impl == "copy":
        time_copy(nbytes)
    else:
        benchmark(_np_to_nChw16c, x, out, out.dtype)
    record(group, impl, nbytes)
