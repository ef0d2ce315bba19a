"""Arrays in and out: numpy views of DLPack tensors (torch, jax, ...) and results handed back
as the caller's own array type, zero-copy.

numpy's `from_dlpack` refuses dtypes it has no type for (bf16, the f8 family), so for those
the DLPack capsule is read here with ctypes: the DLManagedTensor(Versioned) struct gives the
data pointer, shape, strides and dtype code, and the producer's deleter runs when the numpy
view is garbage collected. Results go back through DLPack as unsigned words of the same size
and are reinterpreted (`Tensor.view(dtype)`) as the type they came in as.
"""
from __future__ import annotations

import ctypes
import functools
from typing import Any, Callable, Optional, Tuple

import numpy as np

from ..core.dtypes import _BF16_NP

__all__ = ["read", "read_words", "wrap_like", "returns_like_input"]

# DLPack (dlpack.h): device and dtype codes
_KDL_CPU, _KDL_CUDA_HOST = 1, 3
_FLAG_READ_ONLY = 1
_CODE_NAMES = {0: "int", 1: "uint", 2: "float", 3: "opaque", 4: "bfloat", 5: "complex",
               6: "bool", 7: "float8_e3m4", 8: "float8_e4m3", 9: "float8_e4m3b11fnuz",
               10: "float8_e4m3fn", 11: "float8_e4m3fnuz", 12: "float8_e5m2",
               13: "float8_e5m2fnuz", 14: "float8_e8m0fnu", 15: "float6_e2m3fn",
               16: "float6_e3m2fn", 17: "float4_e2m1fn"}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


class _DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", _DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64),
                ("dl_tensor", _DLTensor)]


_capi = ctypes.pythonapi
_capi.PyCapsule_GetPointer.restype = ctypes.c_void_p
_capi.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capi.PyCapsule_IsValid.restype = ctypes.c_int
_capi.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capi.PyCapsule_SetName.restype = ctypes.c_int
_capi.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]


class _Owner:
    """Keeps a consumed DLManagedTensor alive; calls the producer's deleter when the last
    numpy view of it goes away."""
    __slots__ = ("addr", "deleter", "__weakref__")

    def __init__(self, addr, deleter):
        self.addr, self.deleter = addr, deleter

    def __del__(self):
        if self.deleter:
            _DELETER(self.deleter)(self.addr)
            self.deleter = None


def _ml_dtype(name):
    try:
        import ml_dtypes
    except ImportError:
        return None
    t = getattr(ml_dtypes, name, None)
    return None if t is None else np.dtype(t)


def dtype_name(code, bits, lanes=1):
    """A readable name of a DLPack dtype: float32, bfloat16, float8_e4m3fn, ..."""
    base = _CODE_NAMES.get(code, f"code{code}")
    if code in (0, 1, 2, 5):
        base += str(bits)
    elif code == 4:
        base = "bfloat16" if bits == 16 else f"bfloat{bits}"
    return base if lanes == 1 else f"{base}x{lanes}"


def _numpy_dtype(code, bits, words):
    """numpy dtype for a DLPack dtype: the real type where numpy (or ml_dtypes) has one, else
    with `words` unsigned words of the same size; None when there is neither."""
    if code in (0, 1, 2) and bits in (8, 16, 32, 64):
        if not (code == 2 and bits == 8):
            return np.dtype(f"{'iuf'[code]}{bits // 8}")
    if code == 6 and bits == 8:
        return np.dtype(np.bool_)
    if code == 5 and bits in (64, 128):
        return np.dtype(f"c{bits // 8}")
    real = None
    if code == 4 and bits == 16:
        real = _BF16_NP
    elif code >= 7:
        real = _ml_dtype(dtype_name(code, bits))
    if real is not None:
        return real
    if code == 4 and bits == 16 and not words:
        return np.dtype(np.uint16)          # bf16 travels as words without ml_dtypes
    if words and bits in (8, 16, 32, 64):
        return np.dtype(f"u{bits // 8}")
    return None


def _capsule(x):
    try:
        return x.__dlpack__(max_version=(1, 0)), True
    except TypeError:              # a producer from before DLPack 1.0 takes no max_version
        return x.__dlpack__(), False


def _from_capsule(x, words):
    cap, _ = _capsule(x)
    versioned = bool(_capi.PyCapsule_IsValid(cap, b"dltensor_versioned"))
    if versioned:
        addr = _capi.PyCapsule_GetPointer(cap, b"dltensor_versioned")
        mt = _DLManagedTensorVersioned.from_address(addr)
        read_only = bool(mt.flags & _FLAG_READ_ONLY)
    elif _capi.PyCapsule_IsValid(cap, b"dltensor"):
        addr = _capi.PyCapsule_GetPointer(cap, b"dltensor")
        mt = _DLManagedTensor.from_address(addr)
        read_only = False
    else:
        raise TypeError(f"{type(x).__name__}.__dlpack__() returned no DLPack capsule")
    # From here on the tensor is ours: rename the capsule so its destructor leaves it alone.
    _capi.PyCapsule_SetName(cap, b"used_dltensor_versioned" if versioned else b"used_dltensor")
    owner = _Owner(addr, mt.deleter)
    t = mt.dl_tensor
    code, bits, lanes = t.dtype.code, t.dtype.bits, t.dtype.lanes
    name = dtype_name(code, bits, lanes)
    npd = _numpy_dtype(code, bits, words) if lanes == 1 else None
    # words stand for a type numpy has none for (bf16 and f8 without ml_dtypes)
    opaque = npd is not None and npd.kind == "u" and code not in (0, 1)
    if npd is None:
        raise TypeError(f"cannot read a {type(x).__name__} of dtype {name}: "
                        + ("no numpy type holds it (install ml_dtypes for bf16 and f8)"
                           if lanes == 1 and bits % 8 == 0 else
                           "elements that are not whole bytes cannot be addressed"))
    shape = tuple(t.shape[i] for i in range(t.ndim))
    item = npd.itemsize
    if t.strides:
        strides = tuple(t.strides[i] * item for i in range(t.ndim))
    else:
        strides, s = [], item
        for n in reversed(shape):
            strides.append(s)
            s *= max(n, 1)
        strides = tuple(reversed(strides))
    base = (t.data or 0) + t.byte_offset
    if 0 in shape:
        return np.empty(shape, npd), name, opaque
    lo = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    hi = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) + item
    buf = (ctypes.c_char * (hi - lo)).from_address(base + lo)
    buf._owner = owner              # the numpy view keeps buf, buf keeps the producer's memory
    arr = np.ndarray(shape, npd, buffer=buf, offset=-lo, strides=strides)
    if read_only:
        arr.flags.writeable = False
    return arr, name, opaque


def _check_cpu(x):
    dev = getattr(x, "__dlpack_device__", None)
    if dev is not None:
        kind = dev()[0]
        if int(kind) not in (_KDL_CPU, _KDL_CUDA_HOST):
            raise TypeError(f"cannot read {type(x).__name__} through DLPack: it lives on device "
                            f"type {int(kind)}, not the CPU; move it with .cpu() first")


# (producer type, dtype) pairs numpy's from_dlpack refused: they go straight to the capsule
# reader next time, which saves the cost of a failed import.
_REFUSED: set = set()


def _from_dlpack(x, words):
    """(numpy view, True when the elements came as words because no numpy type holds them)."""
    _check_cpu(x)
    key = (type(x), str(getattr(x, "dtype", None)))
    exc = None
    if key not in _REFUSED:
        try:
            return np.from_dlpack(x), False
        except (BufferError, RuntimeError, TypeError, ValueError) as e:
            exc = e
    try:
        arr, _, opaque = _from_capsule(x, words)
    except TypeError as exc2:
        raise TypeError(f"cannot read {type(x).__name__} through DLPack on the CPU: "
                        f"{exc2}" + (f" (numpy: {exc})" if exc else "")) from None
    if exc is not None:
        _REFUSED.add(key)
    return arr, opaque


def read(x: Any) -> np.ndarray:
    """A numpy view of `x`: an ndarray as is, a DLPack tensor zero-copy (bf16 as
    ml_dtypes.bfloat16 or uint16 words, f8 as ml_dtypes' types), else np.asarray(x)."""
    if isinstance(x, np.ndarray):
        return x
    if x is None:
        raise TypeError("expected an array, got None")
    if hasattr(x, "__dlpack__") and not hasattr(x, "__array_interface__"):
        return _from_dlpack(x, False)[0]
    try:
        return np.asarray(x)
    except Exception as exc:
        raise TypeError(f"cannot read {type(x).__name__} as an array: {exc}") from None


class Like:
    """How to hand a numpy result back as the caller's array type. `opaque`: True when the
    elements came as words because no numpy type holds them (bf16 or f8 without ml_dtypes)."""
    __slots__ = ("module", "dtype", "np_dtype", "opaque")

    def __init__(self, module, dtype, np_dtype, opaque=False):
        self.module, self.dtype, self.np_dtype = module, dtype, np_dtype
        self.opaque = opaque


def _like(x, arr, opaque=False):
    return Like(type(x).__module__.split(".")[0], getattr(x, "dtype", None), arr.dtype, opaque)


def read_words(x: Any, writable: bool = False) -> Tuple[np.ndarray, Optional[Like]]:
    """(numpy view of x, how to give a result back as x's type). Dtypes with no numpy type
    (bf16 and f8 without ml_dtypes) come as unsigned words of their size, for moves that
    only copy elements."""
    if type(x) is np.ndarray:
        return x, None
    if x is None:
        raise TypeError("expected an array, got None")
    if hasattr(x, "__dlpack__") and not hasattr(x, "__array_interface__"):
        arr, opaque = _from_dlpack(x, True)
        if writable and not arr.flags.writeable:
            raise TypeError(f"out ({type(x).__name__}) is read-only")
        return arr, _like(x, arr, opaque)
    arr = read(x)
    return arr, (None if isinstance(x, np.ndarray) else _like(x, arr))


def _torch_dtype(torch, npd):
    name = {"bool": "bool"}.get(npd.name, npd.name)
    t = getattr(torch, name, None)
    if not isinstance(t, torch.dtype):
        raise TypeError(f"torch has no dtype for {npd}")
    return t


def wrap_like(like: Optional[Like], result: np.ndarray, out: Any = None) -> Any:
    """`result` as the type `like` describes: `out` itself when given, a numpy array for
    numpy (and unknown) inputs, else the same framework's tensor sharing result's memory."""
    if out is not None:
        return out
    if like is None:
        return result
    same = result.dtype == like.np_dtype
    if like.module == "torch":
        import torch
        target = like.dtype if same else _torch_dtype(torch, result.dtype)
        words = result.view(f"u{result.itemsize}") if result.dtype.kind not in "biuf" or \
            result.dtype.type.__module__ == "ml_dtypes" else result
        t = torch.from_dlpack(words)
        return t if t.dtype == target else t.view(target)
    if like.module in ("jax", "jaxlib"):
        import jax
        import jax.numpy as jnp
        words = result.view(f"u{result.itemsize}") if result.dtype.type.__module__ == "ml_dtypes" \
            else result
        a = jnp.from_dlpack(words)
        target = like.dtype if same else result.dtype
        return a if a.dtype == target else jax.lax.bitcast_convert_type(a, target)
    return result


def returns_like_input(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorator for front ends taking (x, ..., out=None): numpy views in, the caller's type out."""
    @functools.wraps(fn)
    def wrapper(x, *args, out=None, **kwargs):
        if type(x) is np.ndarray and (out is None or type(out) is np.ndarray):
            return fn(x, *args, out=out, **kwargs)
        like = None
        if not isinstance(x, np.ndarray):
            arr = read(x)
            like = _like(x, arr) if hasattr(x, "__dlpack__") and \
                not hasattr(x, "__array_interface__") else None
            x = arr
        out_arr = None
        if out is not None:
            out_arr = out if isinstance(out, np.ndarray) else read(out)
            if not out_arr.flags.writeable:
                raise TypeError(f"out ({type(out).__name__}) is read-only")
        return wrap_like(like, fn(x, *args, out=out_arr, **kwargs), out)
    return wrapper
