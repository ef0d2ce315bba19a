"""Front end: `reorder()` and `plan()`. Everything goes through the planner."""
import numpy as np

from .desc import Desc, _fmt
from .dtypes import dtype_of_numpy, as_dtype
from .errors import ReorderError
from .planner import cached_plan, _bind_source
from .quantize import make_attrs

__all__ = ["reorder", "plan", "as_array"]


def as_array(x):
    """numpy view of `x` (an ndarray, anything with __array__, or a CPU __dlpack__ tensor),
    never a copy of an ndarray."""
    if x is None:
        raise TypeError("expected an array, got None")
    if isinstance(x, np.ndarray):
        arr = x
    elif hasattr(x, "__dlpack__") and not hasattr(x, "__array_interface__"):
        try:
            arr = np.from_dlpack(x)
        except (BufferError, RuntimeError, TypeError) as exc:
            raise TypeError(f"cannot read {type(x).__name__} through DLPack on the CPU: {exc}") from None
    else:
        try:
            arr = np.asarray(x)
        except Exception as exc:
            raise TypeError(f"cannot read {type(x).__name__} as an array: {exc}") from None
    dtype_of_numpy(arr.dtype)       # TypeError for object/string arrays, ReorderError for others
    return arr


def _src_desc(x, src, dims, dtype):
    """Descriptor of the source array and the array bound to it."""
    if isinstance(src, Desc):
        if dims is not None and tuple(dims) != src.dims:
            raise ReorderError(f"dims={_fmt(dims)} disagrees with the source descriptor {src!r}")
        if x.dtype.itemsize != src.dtype.itemsize:
            raise ReorderError(f"the array is {x.dtype} but the source descriptor says {src.dtype.name}")
        return src, _bind_source(x, src)
    if x.ndim == 1 and dims is not None and (len(dims) > 1 or Desc(dims, dtype, src).is_blocked):
        # a flat buffer holding a (usually blocked) layout
        desc = Desc(dims, dtype, src)
        if not x.flags.c_contiguous or x.size != desc.nelems:
            raise ReorderError(f"a flat source for {desc!r} must be a contiguous buffer of "
                               f"{desc.nelems} elements, got {x.size}")
        return desc, x
    desc = Desc.of(x, src, dims=dims, dtype=dtype)
    return desc, x


def _dst_desc(src_desc, dst, dtype=None):
    if isinstance(dst, Desc):
        if dst.dims != src_desc.dims:
            raise ReorderError(f"dst descriptor dims {_fmt(dst.dims)} differ from the source's "
                               f"{_fmt(src_desc.dims)}")
        if dtype is not None and as_dtype(dtype) != dst.dtype:
            raise ReorderError(f"dtype={as_dtype(dtype).name} disagrees with the dst descriptor "
                               f"{dst!r}")
        return dst
    return Desc(src_desc.dims, src_desc.dtype if dtype is None else as_dtype(dtype), dst)


def _attrs(src_scales, src_scale_mask, dst_scales, dst_scale_mask, src_zero_point,
           dst_zero_point, sum_beta):
    """Conversion attributes, or None when no keyword asks for one."""
    if (src_scales is None and src_scale_mask is None and dst_scales is None
            and dst_scale_mask is None and src_zero_point is None and dst_zero_point is None
            and sum_beta is None):
        return None
    return make_attrs(src_scales=src_scales, src_scale_mask=src_scale_mask,
                      dst_scales=dst_scales, dst_scale_mask=dst_scale_mask,
                      src_zero_point=src_zero_point, dst_zero_point=dst_zero_point,
                      sum_beta=sum_beta)


def _dtype_for(arr, dtype):
    if dtype is None:
        return dtype_of_numpy(arr.dtype)
    d = as_dtype(dtype)
    if d.itemsize != arr.dtype.itemsize:
        raise ReorderError(f"dtype={d.name} has {d.itemsize}-byte elements but the array is "
                           f"{arr.dtype} ({arr.dtype.itemsize} bytes)")
    return d


def reorder(x, src, dst, *, dims=None, out=None, threads=None, src_dtype=None, dtype=None,
            src_scales=None, src_scale_mask=None, dst_scales=None, dst_scale_mask=None,
            src_zero_point=None, dst_zero_point=None, sum_beta=None):
    """Move `x` from layout `src` to layout `dst`; returns a new C-contiguous array in dst's
    physical shape, or `out`.

    x       numpy array (or __array__ / CPU __dlpack__ object). For a plain tag its axes are
            the tag's memory axes (an 'nhwc' array has shape (N, H, W, C)) and any strides
            work. A blocked source is its physical shape (N, C/16, H, W, 16) or a flat buffer
            with `dims=`.
    src/dst tags ('nchw', 'nChw16c', 'aBcd16b', 'NCHW16c', 'OIhw4i16o4i', ...) or Descs.
    dims    logical dims (N, C, H, W order), needed when blocking hides them (C=17 in nChw16c).
    out     preallocated result (exact shape/dtype, C-contiguous, writable, not overlapping x).
    threads thread count for this call (see reorder.set_num_threads).
    src_dtype  data type of x when numpy cannot name it ('bf16' for uint16 words).
    dtype   data type of the result ('s8', 'bf16', np.float16, ...); default: x's. The
            conversion happens in the kernel: f32 arithmetic, saturation, then round half
            to even (docs/int8.md).
    src_scales, src_scale_mask, dst_scales, dst_scale_mask
            oneDNN scales: one number (mask 0), or values along the dims of the mask (bit d
            = varies along logical dim d; masks 1, 2, 3, ...). v = src_scale * (x - src_zp) ...
            / dst_scale + dst_zp.
    src_zero_point, dst_zero_point  common zero points of integer tensors (s8, u8, s32).
    sum_beta  add beta * the old destination (pass it as out=) before the dst scale.

    Padding in the destination is always exactly zero. Inputs are never modified.

    >>> y = reorder(np.zeros((2, 17, 5, 5), np.float32), "nchw", "nChw16c")
    >>> y.shape
    (2, 2, 5, 5, 16)
    """
    arr = as_array(x)
    attrs = _attrs(src_scales, src_scale_mask, dst_scales, dst_scale_mask, src_zero_point,
                   dst_zero_point, sum_beta)
    if attrs is not None:
        sdesc, arr = _src_desc(arr, src, dims, _dtype_for(arr, src_dtype))
        p = cached_plan(sdesc, _dst_desc(sdesc, dst, dtype), None, attrs)
        return p(arr, out=out, threads=threads)
    if isinstance(src, str) and isinstance(dst, str) and src_dtype is None:
        # the common call: skip rebuilding descriptors when the array looks the same
        key = (arr.shape, arr.strides, arr.dtype, src, dst, None if dims is None else tuple(dims),
               dtype)
        p = _plan_by_key(key)
        if p is None:
            sdesc, arr = _src_desc(arr, src, dims, _dtype_for(arr, None))
            p = cached_plan(sdesc, _dst_desc(sdesc, dst, dtype))
            _remember(key, p)
        return p(arr, out=out, threads=threads)
    sdesc, arr = _src_desc(arr, src, dims, _dtype_for(arr, src_dtype))
    p = cached_plan(sdesc, _dst_desc(sdesc, dst, dtype))
    return p(arr, out=out, threads=threads)


_BY_KEY = {}
_BY_KEY_MAX = 256


def _plan_by_key(key):
    try:
        return _BY_KEY.get(key)
    except TypeError:       # unhashable dims
        return None


def _remember(key, p):
    if len(_BY_KEY) >= _BY_KEY_MAX:
        _BY_KEY.pop(next(iter(_BY_KEY)), None)
    try:
        _BY_KEY[key] = p
    except TypeError:
        pass


def plan(src, dst, *, dims=None, src_dtype="f32", threads=None, dtype=None, src_scales=None,
         src_scale_mask=None, dst_scales=None, dst_scale_mask=None, src_zero_point=None,
         dst_zero_point=None, sum_beta=None):
    """A cached `Plan` from `src` to `dst` (Descs, or tags with `dims=` and `src_dtype=`).
    Apply it as `plan(x, out=None)`; `plan.explain()` says what it will do. `dtype=` and the
    scale / zero-point / sum keywords are those of reorder(); scales are part of the cache key
    by value."""
    if not isinstance(src, Desc):
        if dims is None:
            raise ReorderError("plan() with a tag source needs dims=")
        src = Desc(dims, src_dtype, src)
    attrs = _attrs(src_scales, src_scale_mask, dst_scales, dst_scale_mask, src_zero_point,
                   dst_zero_point, sum_beta)
    return cached_plan(src, _dst_desc(src, dst, dtype), threads, attrs)
