"""The low-bit path against oneDNN's own reorder primitive, called through ctypes.

The library is the one named by ONEDNN_LIB, else the `libdnnl.so.3` that
`pip install -e ".[onednn]"` (the `onednn` wheel, oneDNN 3.13) puts in this environment's
lib/ directory; without either the module is skipped. docs/int8.md lists what each oneDNN
release can compare and what differed.

With oneDNN 3.13 every case runs: f32, f16 and bf16 -> f8 (every f16 value, every tie of the
f8 grid, overflow, NaN, inf, subnormals) in ab, ba and BA16a64b4a, f8 -> f32/f16/bf16 for all
256 codes, f32 -> s4/u4 (every tie, saturation, odd element counts, scales and a zero point),
and s4/u4 -> f32/f16/bf16 with
grouped scales (f32, bf16, f16) and grouped zero points (s32, s8, u8, s4, u4), in ab and ba.
oneDNN 3.2
(onednn-cpu-gomp 2023.2.0) has none of the low-bit types; there only the integer rule shared
with s8/u8 runs, and the rest skips naming what is missing."""
import ctypes as C
import os
import sys

import ml_dtypes
import numpy as np
import pytest

import reorder as ro
from lowbit_reference import pack_nibbles

_INSTALL = ('pip install -e ".[onednn]" (the onednn wheel, about 2 GB with its runtimes) or set '
            'ONEDNN_LIB to a libdnnl.so.3')


def _find():
    path = os.environ.get("ONEDNN_LIB")
    if path:
        return path
    path = os.path.join(sys.prefix, "lib", "libdnnl.so.3")
    return path if os.path.exists(path) else None


def _load(path):
    """The PyPI wheels carry no RUNPATH: the SYCL build's runtimes (installed beside it by pip)
    are loaded first, and its CPU engine is Intel's OpenCL CPU runtime, whose ICD file in the
    wheel names a path of the build machine, so the loader is pointed at the library itself."""
    d = os.path.dirname(path)
    for name in ("libintlc.so.5", "libimf.so", "libsvml.so", "libtbb.so.12", "libsycl.so.9"):
        for where in (d, os.path.join(sys.prefix, "lib")):
            if os.path.exists(os.path.join(where, name)):
                C.CDLL(os.path.join(where, name), mode=C.RTLD_GLOBAL)
                break
    ocl = os.path.join(d, "libintelocl.so")
    if os.path.exists(ocl):
        os.environ.setdefault("OCL_ICD_FILENAMES", ocl)
    return C.CDLL(path)


_PATH = _find()
if not _PATH:
    pytest.skip(f"no oneDNN library to compare with: {_INSTALL}", allow_module_level=True)
try:
    _L = _load(_PATH)
except OSError as exc:  # pragma: no cover - a wrong path or a missing runtime
    pytest.skip(f"cannot load {_PATH}: {exc}", allow_module_level=True)

_vp = C.c_void_p
_Dims = C.c_int64 * 12
_DT = {"f16": 1, "bf16": 2, "f32": 3, "s32": 4, "s8": 5, "u8": 6, "f8_e5m2": 9, "f8_e4m3": 10,
       "s4": 11, "u4": 12}
_ARG_FROM, _ARG_TO, _ARG_SCALES, _ARG_ZP = 1, 17, 4096, 8192
_UNIMPLEMENTED = 3


class _Version(C.Structure):
    _fields_ = [("major", C.c_int), ("minor", C.c_int), ("patch", C.c_int),
                ("hash", C.c_char_p), ("cpu_runtime", C.c_uint), ("gpu_runtime", C.c_uint)]


_L.dnnl_version.restype = C.POINTER(_Version)
_V = _L.dnnl_version().contents
VERSION = (_V.major, _V.minor, _V.patch)

_L.dnnl_memory_desc_create_with_string_tag.argtypes = [C.POINTER(_vp), C.c_int, _Dims, C.c_int,
                                                       C.c_char_p]
_L.dnnl_memory_desc_get_size.restype = C.c_size_t
_L.dnnl_memory_desc_get_size.argtypes = [_vp]
_L.dnnl_reorder_primitive_desc_create.argtypes = [C.POINTER(_vp), _vp, _vp, _vp, _vp, _vp]
_L.dnnl_primitive_create.argtypes = [C.POINTER(_vp), _vp]
_L.dnnl_memory_create.argtypes = [C.POINTER(_vp), _vp, _vp, _vp]
_L.dnnl_primitive_attr_set_scales_mask.argtypes = [_vp, C.c_int, C.c_int]
_L.dnnl_primitive_attr_set_zero_points_mask.argtypes = [_vp, C.c_int, C.c_int]
_GROUPED = hasattr(_L, "dnnl_primitive_attr_set_scales")     # oneDNN 3.4+
if _GROUPED:
    _L.dnnl_primitive_attr_set_scales.argtypes = [_vp, C.c_int, C.c_int, C.c_int, _Dims, C.c_int]
    _L.dnnl_primitive_attr_set_zero_points.argtypes = [_vp, C.c_int, C.c_int, C.c_int, _Dims,
                                                       C.c_int]
_L.dnnl_engine_create.argtypes = [C.POINTER(_vp), C.c_int, C.c_size_t]
_L.dnnl_stream_create.argtypes = [C.POINTER(_vp), _vp, C.c_uint]
_L.dnnl_primitive_execute.argtypes = [_vp, _vp, C.c_int, _vp]
_L.dnnl_stream_wait.argtypes = [_vp]
for _f in ("dnnl_primitive_destroy", "dnnl_primitive_desc_destroy", "dnnl_memory_destroy",
           "dnnl_memory_desc_destroy", "dnnl_primitive_attr_destroy"):
    getattr(_L, _f).argtypes = [_vp]


class _Arg(C.Structure):
    _fields_ = [("arg", C.c_int), ("memory", _vp)]


def _ok(status, what):
    if status != 0:
        raise RuntimeError(f"oneDNN {'.'.join(map(str, VERSION))} status {status} in {what}")


_ENG, _STRM = _vp(), _vp()
_ok(_L.dnnl_engine_create(C.byref(_ENG), 1, 0), f"CPU engine ({_PATH})")
_ok(_L.dnnl_stream_create(C.byref(_STRM), _ENG, 1), "stream")


class _Quant:
    """One side's scales / zero points for onednn_reorder: arrays in oneDNN's dense layout
    (raw bytes for s4/u4, bf16, f16), a mask, and groups (None: oneDNN 3.2's mask API)."""

    def __init__(self, scales=None, scale_dt="f32", zp=None, zp_dt="s32", mask=0, groups=None,
                 zp_mask=None):
        self.scales, self.scale_dt, self.zp, self.zp_dt = scales, scale_dt, zp, zp_dt
        self.mask, self.groups = mask, groups
        self.zp_mask = mask if zp_mask is None else zp_mask


def _md(dims, dt, tag):
    md = _vp()
    _ok(_L.dnnl_memory_desc_create_with_string_tag(C.byref(md), len(dims), _Dims(*dims), _DT[dt],
                                                   tag.encode()), f"memory desc {dt} {tag}")
    return md


def _table_dims(dims, mask, groups):
    g = (1,) * (len(dims) - 2) + tuple(groups or (1, 1))
    return tuple(d // gi for i, (d, gi) in enumerate(zip(dims, g)) if mask >> i & 1) or (1,)


def onednn_reorder(x, dims, sdt, stag, ddt, dtag, side=None, q=None):
    """oneDNN's reorder of the bytes of x, with the scales / zero points `q` on `side` ('src' or
    'dst'). Returns the destination bytes, or None when oneDNN has no implementation."""
    keep = []                               # everything oneDNN points into, alive until the end
    smd, dmd = _md(dims, sdt, stag), _md(dims, ddt, dtag)
    size = _L.dnnl_memory_desc_get_size(dmd)
    if size >= 1 << 40:       # a type this oneDNN does not know gives no size (size_t -1)
        raise RuntimeError(f"no size for {ddt} {dtag}")
    out = np.zeros(size, np.uint8)
    arg = _ARG_FROM if side == "src" else _ARG_TO
    attr, extra = _vp(), []
    if q is not None:
        _ok(_L.dnnl_primitive_attr_create(C.byref(attr)), "attr")
        if q.scales is not None:
            if q.groups is None:
                _ok(_L.dnnl_primitive_attr_set_scales_mask(attr, arg, q.mask), "scales mask")
            else:
                _ok(_L.dnnl_primitive_attr_set_scales(attr, arg, q.mask, 2, _Dims(*q.groups),
                                                      _DT[q.scale_dt]), "grouped scales")
            tdims = _table_dims(dims, q.mask, q.groups)
            extra.append((_ARG_SCALES | arg, q.scales, _md(tdims, q.scale_dt, "abcd"[:len(tdims)])))
        if q.zp is not None:
            if q.groups is None:
                _ok(_L.dnnl_primitive_attr_set_zero_points_mask(attr, arg, q.zp_mask), "zp mask")
            else:
                _ok(_L.dnnl_primitive_attr_set_zero_points(attr, arg, q.zp_mask, 2,
                                                           _Dims(*q.groups), _DT[q.zp_dt]),
                    "grouped zero points")
            tdims = _table_dims(dims, q.zp_mask, q.groups)
            extra.append((_ARG_ZP | arg, q.zp, _md(tdims, q.zp_dt, "abcd"[:len(tdims)])))
    pd = _vp()
    st = _L.dnnl_reorder_primitive_desc_create(C.byref(pd), smd, _ENG, dmd, _ENG, attr)
    if st == _UNIMPLEMENTED:
        return None
    _ok(st, f"reorder primitive desc {sdt}:{stag} -> {ddt}:{dtag}")
    prim = _vp()
    _ok(_L.dnnl_primitive_create(C.byref(prim), pd), "primitive")
    x = np.ascontiguousarray(x)
    mems = []
    for a, arr, md in [(_ARG_FROM, x, smd), (_ARG_TO, out, dmd)] + extra:
        arr = np.ascontiguousarray(arr)
        keep.append(arr)
        m = _vp()
        _ok(_L.dnnl_memory_create(C.byref(m), md, _ENG, _vp(arr.ctypes.data)), "memory")
        mems.append((a, m))
    args = (_Arg * len(mems))(*[_Arg(a, m) for a, m in mems])
    _ok(_L.dnnl_primitive_execute(prim, _STRM, len(mems), args), "execute")
    _ok(_L.dnnl_stream_wait(_STRM), "wait")
    for _, m in mems:
        _L.dnnl_memory_destroy(m)
    _L.dnnl_primitive_destroy(prim)
    _L.dnnl_primitive_desc_destroy(pd)
    for md in [smd, dmd] + [e[2] for e in extra]:
        _L.dnnl_memory_desc_destroy(md)
    if attr:
        _L.dnnl_primitive_attr_destroy(attr)
    return out


def _has(sdt, ddt, stag="ab", dtag="ab", dims=(4, 6)):
    """The reason this oneDNN cannot run the pair, or None when it can."""
    try:
        n = _L.dnnl_memory_desc_get_size(_md(dims, sdt, stag))
    except RuntimeError as exc:
        return f"oneDNN {'.'.join(map(str, VERSION))} has no {sdt}: {exc}"
    try:
        r = onednn_reorder(np.zeros(min(n, 1 << 20), np.uint8), dims, sdt, stag, ddt, dtag)
    except RuntimeError as exc:
        return f"oneDNN {'.'.join(map(str, VERSION))} has no {ddt}: {exc}"
    if r is None:
        return f"oneDNN {'.'.join(map(str, VERSION))} has no {sdt}:{stag} -> {ddt}:{dtag} reorder"
    return None


def _need(sdt, ddt, stag="ab", dtag="ab"):
    why = _has(sdt, ddt, stag, dtag)
    if why:
        pytest.skip(why)


def _bytes(a):
    return np.asarray(a).view(np.uint8).reshape(-1)


# ---- the integer rule (runs on 3.2 too) -----------------------------------------------------

def _weights(K, N, seed=0, nan=True):
    x = (np.random.default_rng(seed).standard_normal((K, N)) * 40).astype(np.float32)
    edge = np.array([np.inf, -np.inf, 0.5, 1.5, -2.5, 126.5, -128.5, 255.5, 3e9, np.nan],
                    np.float32)
    if not nan:
        edge = edge[:-1]
    x.reshape(-1)[:edge.size] = edge
    return x


# NaN -> s8 is not defined by oneDNN (a C++ float -> int conversion): 3.2's x64 reorder gives
# 127 (this library's rule), 3.13 gives -128. u8 agrees (0). docs/int8.md records both.
def _nan_ok(dt):
    return dt == "u8" or VERSION[:2] == (3, 2)


@pytest.mark.parametrize("dims", [(96, 200), (17, 65), (64, 128)])
@pytest.mark.parametrize("dt,tag", [("s8", "BA16a64b4a"), ("u8", "AB16b16a"), ("s8", "ab"),
                                    ("u8", "ba")])
@pytest.mark.parametrize("threads", [1, 2])
def test_integer_rule_matches_onednn(dims, dt, tag, threads):
    K, N = dims
    x = _weights(K, N, nan=_nan_ok(dt))
    sc = np.random.default_rng(1).uniform(0.2, 3, N).astype(np.float32)
    want = onednn_reorder(x, dims, "f32", "ab", dt, tag, "dst",
                          _Quant(sc, mask=2, zp=np.array([3], np.int32), zp_mask=0))
    # groups of (1, 1) send s8/u8 through the low-bit kernels
    got = ro.reorder(x, "ab", tag, dtype=dt, dst_scales=sc, dst_scale_mask=2, dst_zero_point=3,
                     dst_groups=(1, 1), threads=threads)
    assert np.array_equal(_bytes(got), want)


@pytest.mark.parametrize("dt,tag", [("s8", "BA16a64b4a"), ("u8", "ab")])
def test_dequantize_matches_onednn(dt, tag):
    K, N = 40, 70
    q = np.random.default_rng(2).integers(0 if dt == "u8" else -128, 128, (K, N))
    q = q.astype(np.uint8 if dt == "u8" else np.int8)
    codes = ro.reorder(q, "ab", tag)
    sc = np.random.default_rng(3).uniform(0.01, 2, N).astype(np.float32)
    want = onednn_reorder(codes, (K, N), dt, tag, "f32", "ab", "src",
                          _Quant(sc, mask=2, zp=np.array([-5], np.int32), zp_mask=0))
    got = ro.reorder(codes, tag, "ab", dims=(K, N), dtype="f32", src_scales=sc, src_scale_mask=2,
                     src_zero_point=-5, src_groups=(1, 1))
    assert np.array_equal(_bytes(got), want)


# ---- f8 -------------------------------------------------------------------------------------

_F8 = {"f8_e4m3": ml_dtypes.float8_e4m3fn, "f8_e5m2": ml_dtypes.float8_e5m2}
_FLOAT = {"f32": np.float32, "f16": np.float16, "bf16": ml_dtypes.bfloat16}


def _f8_inputs(dt):
    """f32 values that exercise f32 -> f8: every f16 value (NaN payloads included), every
    midpoint between neighbouring f8 values and the f32 values one ulp either side, the f16
    midpoints next to them (where rounding to f16 first decides), overflow edges, f32
    subnormals and values below the f16 range."""
    f16 = np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float32)
    grid = np.arange(256, dtype=np.uint8).view(_F8[dt]).astype(np.float32)
    grid = np.unique(grid[np.isfinite(grid)])
    mid = ((grid[:-1].astype(np.float64) + grid[1:]) / 2).astype(np.float32)
    near = np.concatenate([mid, np.nextafter(mid, np.inf), np.nextafter(mid, -np.inf)])
    h = near.astype(np.float16)
    hmid = ((h.astype(np.float64) + np.nextafter(h, np.float16(np.inf)).astype(np.float64)) / 2)
    hmid = hmid[np.isfinite(hmid)].astype(np.float32)
    near = np.concatenate([near, hmid, np.nextafter(hmid, np.inf), np.nextafter(hmid, -np.inf)])
    edges = np.array([448, 464, 464.01, 480, 57344, 61439.99, 61440, 65504, 65520, 1e6, 3e38,
                      2.0 ** -10, 2.0 ** -9, 2.0 ** -17, 2.0 ** -16, 1.5 * 2.0 ** -17, 1e-30,
                      1e-40, -1e-40, np.float32(np.finfo(np.float32).tiny) / 3], np.float32)
    nans = np.array([0x7fc00000, 0x7f800001, 0x7fbfffff, 0xffc12345, 0x7f801000],
                    np.uint32).view(np.float32)
    out = np.concatenate([f16, near, -near, edges, -edges, nans]).astype(np.float32)
    return out


def _odd_matrix(v, N=257):
    """v laid out as a (K, N) matrix with K odd (zeros after the end)."""
    K = -(-v.size // N)
    K += 1 - K % 2
    m = np.zeros(K * N, np.float32)
    m[:v.size] = v
    return m.reshape(K, N)


@pytest.mark.parametrize("dt", ["f8_e4m3", "f8_e5m2"])
@pytest.mark.parametrize("tag", ["ab", "ba", "BA16a64b4a"])
def test_f32_to_f8_matches_onednn(dt, tag):
    _need("f32", dt, "ab", tag)
    x = _odd_matrix(_f8_inputs(dt))
    want = onednn_reorder(x, x.shape, "f32", "ab", dt, tag)
    got = ro.reorder(x, "ab", tag, dtype=dt)
    bad = np.nonzero(_bytes(got) != want)[0]
    assert bad.size == 0, f"{bad.size} bytes differ, first at {bad[:5]}"


@pytest.mark.parametrize("dt", ["f8_e4m3", "f8_e5m2"])
@pytest.mark.parametrize("src", ["f16", "bf16"])
def test_f16_bf16_to_f8_matches_onednn(dt, src):
    """Every 16-bit pattern of the source type."""
    _need(src, dt)
    x = np.arange(1 << 16, dtype=np.uint16).reshape(256, 256)
    want = onednn_reorder(x, x.shape, src, "ab", dt, "ab")
    got = ro.reorder(x.view(_FLOAT[src]), "ab", "ab", dtype=dt)
    bad = np.nonzero(_bytes(got) != want)[0]
    assert bad.size == 0, f"{bad.size} of 65536 differ, first source words {x.reshape(-1)[bad[:5]]}"


@pytest.mark.parametrize("src", ["f8_e4m3", "f8_e5m2"])
@pytest.mark.parametrize("dt", ["f32", "f16", "bf16"])
def test_f8_to_float_matches_onednn(src, dt):
    """All 256 codes, NaN codes included, into an odd-sized blocked and a plain layout."""
    _need(src, dt)
    codes = np.tile(np.arange(256, dtype=np.uint8), 3)[:17 * 45].reshape(17, 45)
    want = onednn_reorder(codes, codes.shape, src, "ab", dt, "ab")
    got = ro.reorder(codes.view(_F8[src]), "ab", "ab", dtype=dt)
    assert np.array_equal(_bytes(got), want)
    blocked = ro.reorder(codes.view(_F8[src]), "ab", "AB16b16a")
    want = onednn_reorder(_bytes(blocked), codes.shape, src, "AB16b16a", dt, "ba")
    got = ro.reorder(blocked, "AB16b16a", "ba", dims=codes.shape, dtype=dt)
    assert np.array_equal(_bytes(got), want)


# ---- s4 / u4 --------------------------------------------------------------------------------

def _int4_inputs(lo, hi):
    """Every tie k + 0.5 across the range and past it, one f32 ulp either side, saturation,
    +-inf (NaN -> int4 is undefined in oneDNN; see docs/int8.md)."""
    t = np.arange(lo - 3, hi + 3, dtype=np.float32) + np.float32(0.5)
    v = np.concatenate([t, np.nextafter(t, np.inf), np.nextafter(t, -np.inf),
                        np.arange(lo - 3, hi + 4, dtype=np.float32),
                        [np.inf, -np.inf, 1e9, -1e9, 0.0, -0.0, 1e-40]]).astype(np.float32)
    return v


@pytest.mark.parametrize("dt", ["s4", "u4"])
@pytest.mark.parametrize("tag", ["ab", "ba"])
@pytest.mark.parametrize("dims", [(7, 13), (33, 17), (64, 48)])
def test_f32_to_int4_matches_onednn(dt, tag, dims):
    """An odd element count leaves the last high nibble of oneDNN's buffer 0."""
    _need("f32", dt, "ab", tag)
    lo, hi = (-8, 7) if dt == "s4" else (0, 15)
    v = _int4_inputs(lo, hi)
    x = np.resize(v, dims).astype(np.float32)
    x.reshape(-1)[:v.size] = v[:x.size]
    want = onednn_reorder(x, dims, "f32", "ab", dt, tag)
    got = ro.reorder(x, "ab", tag, dtype=dt)
    assert np.array_equal(_bytes(got), want)


@pytest.mark.parametrize("dt", ["s4", "u4"])
@pytest.mark.parametrize("tag", ["ab", "ba"])
def test_f32_to_int4_with_scales_matches_onednn(dt, tag):
    """Per-column dst scales and a common zero point, x * (1/scale) + zp."""
    _need("f32", dt, "ab", tag)
    K, N = 33, 17
    x = (np.random.default_rng(4).standard_normal((K, N)) * 9).astype(np.float32)
    x[0, :4] = [np.inf, -np.inf, 1e9, -1e9]
    sc = np.random.default_rng(5).uniform(0.3, 3, N).astype(np.float32)
    sc[:3] = [0.5, 0.25, 2.0]                    # exact reciprocals: ties survive the scaling
    x[1:4, :3] = np.array([[0.25, 0.375, 1.0], [-0.75, 0.125, 5.0], [1.25, -0.625, 3.0]])
    zp = 3
    want = onednn_reorder(x, (K, N), "f32", "ab", dt, tag, "dst",
                          _Quant(sc, mask=2, zp=np.array([zp], np.int32), zp_mask=0))
    if want is None:                     # 3.13 has dst scales on s4/u4, not a dst zero point
        zp = None
        want = onednn_reorder(x, (K, N), "f32", "ab", dt, tag, "dst", _Quant(sc, mask=2))
    if want is None:
        pytest.skip(f"oneDNN {VERSION} has no f32 -> {dt} reorder with dst scales")
    got = ro.reorder(x, "ab", tag, dtype=dt, dst_scales=sc, dst_scale_mask=2, dst_zero_point=zp)
    assert np.array_equal(_bytes(got), want)


# s8/u8 -> s4/u4 is not compared: oneDNN 3.13 runs it as jit_direct_copy:uni and writes
# zeros (docs/int8.md).


_ZP = {"s32": np.int32, "s8": np.int8, "u8": np.uint8, "s4": ml_dtypes.int4,
       "u4": ml_dtypes.uint4}


def _zp_table(zdt, shape, seed):
    lo, hi = {"s32": (-300, 300), "s8": (-128, 128), "u8": (0, 256), "s4": (-8, 8),
              "u4": (0, 16)}[zdt]
    z = np.random.default_rng(seed).integers(lo, hi, shape).astype(_ZP[zdt])
    raw = pack_nibbles(z.reshape(-1).astype(np.int64)) if zdt in ("s4", "u4") else z
    return z, raw


@pytest.mark.parametrize("src", ["s4", "u4"])
@pytest.mark.parametrize("tag", ["ab", "ba"])
@pytest.mark.parametrize("zdt", ["s32", "s8", "u8", "s4", "u4", None])
@pytest.mark.parametrize("sdt", ["f32", "bf16", "f16"])
def test_int4_dequantize_grouped_matches_onednn(src, tag, zdt, sdt):
    """oneDNN's weight decompression: scales and zero points per group of 32 K per column,
    src side (oneDNN takes groups on the source only). N = 33, an odd element count, except
    with s4/u4 zero points: oneDNN 3.13 reads none of them when a row of the table has an odd
    number of nibbles (every result is as if they were 0; docs/int8.md)."""
    if not _GROUPED:
        pytest.skip(f"oneDNN {VERSION} has no grouped scales (dnnl_primitive_attr_set_scales)")
    _need(src, "f32", tag, "ab")
    K, N, G = 96, 32 if zdt in ("s4", "u4") else 33, 32
    packed = np.random.default_rng(6).integers(0, 256, (K * N + 1) // 2).astype(np.uint8)
    packed[-1] &= 0x0f
    codes = _bytes(ro.reorder(packed, "ab", tag, src_dtype=src, dims=(K, N)))
    sc = np.random.default_rng(7).uniform(0.01, 2, (K // G, N)).astype(_FLOAT[sdt])
    z, zraw = _zp_table(zdt, (K // G, N), 8) if zdt else (None, None)
    for dt in ("f32", "bf16", "f16"):
        want = onednn_reorder(codes, (K, N), src, tag, dt, "ab", "src",
                              _Quant(sc.view(np.uint8) if sdt != "f32" else sc, sdt, zraw,
                                     zdt or "s32", mask=3, groups=(G, 1)))
        if want is None:
            pytest.skip(f"oneDNN {VERSION} has no grouped {src}:{tag} -> {dt} with {sdt} scales "
                        f"and {zdt} zero points")
        got = ro.reorder(codes, tag, "ab", src_dtype=src, dims=(K, N), dtype=dt, src_scales=sc,
                         src_zero_point=z, src_groups=(G, 1))
        bad = np.nonzero(_bytes(got) != want)[0]
        assert bad.size == 0, f"-> {dt}: {bad.size} bytes differ, first at {bad[:5]}"


@pytest.mark.parametrize("src", ["s4", "u4"])
def test_int4_dequantize_per_column_matches_onednn(src):
    """Without groups: per-column scales, and per-column s32 zero points (or, where oneDNN
    takes only a common one, as 3.13 does without groups, one)."""
    _need(src, "f32")
    K, N = 17, 31
    packed = np.random.default_rng(9).integers(0, 256, (K * N + 1) // 2).astype(np.uint8)
    packed[-1] &= 0x0f
    sc = np.random.default_rng(10).uniform(0.01, 2, N).astype(np.float32)
    z = np.random.default_rng(11).integers(-9, 9, N).astype(np.int32)
    want = onednn_reorder(packed, (K, N), src, "ab", "f32", "ab", "src", _Quant(sc, zp=z, mask=2))
    if want is None:
        z = z[:1]
        want = onednn_reorder(packed, (K, N), src, "ab", "f32", "ab", "src",
                              _Quant(sc, zp=z, mask=2, zp_mask=0))
    if want is None:
        pytest.skip(f"oneDNN {VERSION} has no zero points on {src} -> f32 without groups")
    got = ro.reorder(packed, "ab", "ab", src_dtype=src, dims=(K, N), dtype="f32", src_scales=sc,
                     src_scale_mask=2, src_zero_point=z)
    assert np.array_equal(_bytes(got), want)
