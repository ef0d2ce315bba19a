"""The low-bit path against oneDNN's own reorder primitive, run through ctypes from the
library file named by ONEDNN_LIB (skipped without it; docs/int8.md says how to get oneDNN 3.2
from PyPI and what it can compare).

oneDNN 3.2 has no s4/u4, no grouped scales (no dnnl_primitive_attr_set_scales) and, on this
kind of CPU, no f8 reorder at all (every f8 pair is `unimplemented`); what it can compare is
the integer rule the low-bit kernels share with s8/u8: x * (1/scale) + zp in f32, saturate,
round half to even, per-output-channel scales, a common zero point, NaN and inf, written by
the one-pass tile kernel (BA16a64b4a, AB16b16a), the in-place rows (ab) and the multi-pass
path (ba); and the way back, scale * (q - zp). Where the library is newer and has s4/f8, those
cases run too."""
import ctypes as C
import os

import numpy as np
import pytest

import reorder as ro

_PATH = os.environ.get("ONEDNN_LIB")
if not _PATH:
    pytest.skip("ONEDNN_LIB is not set (a libdnnl.so.3 to compare with)", allow_module_level=True)
try:
    _L = C.CDLL(_PATH)
except OSError as exc:  # pragma: no cover - a wrong path
    pytest.skip(f"cannot load ONEDNN_LIB={_PATH}: {exc}", allow_module_level=True)

_vp = C.c_void_p
_Dims = C.c_int64 * 12
_DT = {"f32": 3, "s32": 4, "s8": 5, "u8": 6, "f8_e5m2": 9, "f8_e4m3": 10, "s4": 11, "u4": 12}
_ARG_FROM, _ARG_TO, _ARG_SCALES, _ARG_ZP = 1, 17, 4096, 8192
_UNIMPLEMENTED = 3

_L.dnnl_memory_desc_create_with_string_tag.argtypes = [C.POINTER(_vp), C.c_int, _Dims, C.c_int,
                                                       C.c_char_p]
_L.dnnl_memory_desc_get_size.restype = C.c_size_t
_L.dnnl_memory_desc_get_size.argtypes = [_vp]
_L.dnnl_reorder_primitive_desc_create.argtypes = [C.POINTER(_vp), _vp, _vp, _vp, _vp, _vp]
_L.dnnl_primitive_create.argtypes = [C.POINTER(_vp), _vp]
_L.dnnl_memory_create.argtypes = [C.POINTER(_vp), _vp, _vp, _vp]
_L.dnnl_primitive_attr_set_scales_mask.argtypes = [_vp, C.c_int, C.c_int]
_L.dnnl_primitive_attr_set_zero_points_mask.argtypes = [_vp, C.c_int, C.c_int]
_L.dnnl_engine_create.argtypes = [C.POINTER(_vp), C.c_int, C.c_size_t]
_L.dnnl_stream_create.argtypes = [C.POINTER(_vp), _vp, C.c_uint]
_L.dnnl_primitive_execute.argtypes = [_vp, _vp, C.c_int, _vp]
_L.dnnl_stream_wait.argtypes = [_vp]


class _Arg(C.Structure):
    _fields_ = [("arg", C.c_int), ("memory", _vp)]


def _ok(status, what):
    if status != 0:
        raise RuntimeError(f"oneDNN status {status} in {what}")


_ENG, _STRM = _vp(), _vp()
_ok(_L.dnnl_engine_create(C.byref(_ENG), 1, 0), "engine")
_ok(_L.dnnl_stream_create(C.byref(_STRM), _ENG, 1), "stream")


def _md(dims, dt, tag):
    md = _vp()
    _ok(_L.dnnl_memory_desc_create_with_string_tag(C.byref(md), len(dims), _Dims(*dims), _DT[dt],
                                                   tag.encode()), f"memory desc {dt} {tag}")
    return md


def _mem(md, arr):
    m = _vp()
    _ok(_L.dnnl_memory_create(C.byref(m), md, _ENG, _vp(arr.ctypes.data)), "memory")
    return m


def onednn_reorder(x, dims, sdt, stag, ddt, dtag, side=None, scales=None, mask=0, zp=None):
    """oneDNN's reorder of the bytes of x; scales (mask) and a common zero point on `side`
    ('src' or 'dst'). Returns the destination bytes, or None when oneDNN has no
    implementation."""
    smd, dmd = _md(dims, sdt, stag), _md(dims, ddt, dtag)
    size = _L.dnnl_memory_desc_get_size(dmd)
    if size >= 1 << 40:       # a type this oneDNN does not know gives no size (size_t -1)
        raise RuntimeError(f"no size for {ddt} {dtag}")
    out = np.zeros(size, np.uint8)
    arg = _ARG_FROM if side == "src" else _ARG_TO
    attr, extra = None, []
    if scales is not None or zp is not None:
        attr = _vp()
        _ok(_L.dnnl_primitive_attr_create(C.byref(attr)), "attr")
        if scales is not None:
            _ok(_L.dnnl_primitive_attr_set_scales_mask(attr, arg, mask), "scales mask")
            extra.append((_ARG_SCALES | arg, scales, _md((scales.size,), "f32", "a")))
        if zp is not None:
            _ok(_L.dnnl_primitive_attr_set_zero_points_mask(attr, arg, 0), "zero point mask")
            zarr = np.array([zp], np.int32)
            extra.append((_ARG_ZP | arg, zarr, _md((1,), "s32", "a")))
    pd = _vp()
    st = _L.dnnl_reorder_primitive_desc_create(C.byref(pd), smd, _ENG, dmd, _ENG, attr)
    if st == _UNIMPLEMENTED:
        return None
    _ok(st, "reorder primitive desc")
    prim = _vp()
    _ok(_L.dnnl_primitive_create(C.byref(prim), pd), "primitive")
    x = np.ascontiguousarray(x)
    args = [_Arg(_ARG_FROM, _mem(smd, x)), _Arg(_ARG_TO, _mem(dmd, out))]
    args += [_Arg(a, _mem(m, arr)) for a, arr, m in extra]
    _ok(_L.dnnl_primitive_execute(prim, _STRM, len(args), (_Arg * len(args))(*args)), "execute")
    _ok(_L.dnnl_stream_wait(_STRM), "wait")
    return out


def _weights(K, N, seed=0):
    x = (np.random.default_rng(seed).standard_normal((K, N)) * 40).astype(np.float32)
    edge = np.array([np.nan, np.inf, -np.inf, 0.5, 1.5, -2.5, 126.5, -128.5, 255.5, 3e9],
                    np.float32)
    x.reshape(-1)[:edge.size] = edge
    return x


@pytest.mark.parametrize("dims", [(96, 200), (17, 65), (64, 128)])
@pytest.mark.parametrize("dt,tag", [("s8", "BA16a64b4a"), ("u8", "AB16b16a"), ("s8", "ab"),
                                    ("u8", "ba")])
@pytest.mark.parametrize("threads", [1, 2])
def test_integer_rule_matches_onednn(dims, dt, tag, threads):
    K, N = dims
    x = _weights(K, N)
    sc = np.random.default_rng(1).uniform(0.2, 3, N).astype(np.float32)
    want = onednn_reorder(x, dims, "f32", "ab", dt, tag, "dst", sc, 2, 3)
    # groups of (1, 1) send s8/u8 through the low-bit kernels
    got = ro.reorder(x, "ab", tag, dtype=dt, dst_scales=sc, dst_scale_mask=2, dst_zero_point=3,
                     dst_groups=(1, 1), threads=threads)
    assert np.array_equal(got.view(np.uint8).reshape(-1), want)


@pytest.mark.parametrize("dt,tag", [("s8", "BA16a64b4a"), ("u8", "ab")])
def test_dequantize_matches_onednn(dt, tag):
    K, N = 40, 70
    q = np.random.default_rng(2).integers(0 if dt == "u8" else -128, 128, (K, N))
    q = q.astype(np.uint8 if dt == "u8" else np.int8)
    codes = ro.reorder(q, "ab", tag)
    sc = np.random.default_rng(3).uniform(0.01, 2, N).astype(np.float32)
    want = onednn_reorder(codes, (K, N), dt, tag, "f32", "ab", "src", sc, 2, -5).view(np.float32)
    got = ro.reorder(codes, tag, "ab", dims=(K, N), dtype="f32", src_scales=sc, src_scale_mask=2,
                     src_zero_point=-5, src_groups=(1, 1))
    assert np.array_equal(got.reshape(-1).view(np.uint32), want.view(np.uint32))


@pytest.mark.parametrize("dt", ["f8_e4m3", "f8_e5m2", "s4", "u4"])
def test_lowbit_types_where_onednn_has_them(dt):
    x = _weights(16, 64)
    x[~np.isfinite(x)] = 0
    if dt in ("s4", "u4"):
        x = np.clip(x / 8, -8, 15)
    try:
        want = onednn_reorder(x, (16, 64), "f32", "ab", dt, "ab")
    except RuntimeError as exc:          # no such type in this oneDNN (3.2 has no s4/u4)
        pytest.skip(f"this oneDNN has no {dt}: {exc}")
    if want is None:
        pytest.skip(f"this oneDNN has no f32 -> {dt} reorder on this CPU")
    got = ro.reorder(x, "ab", "ab", dtype=dt)
    assert np.array_equal(np.asarray(got).view(np.uint8).reshape(-1), want)
