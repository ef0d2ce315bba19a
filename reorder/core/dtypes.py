"""Data types: oneDNN names, numpy dtypes, element sizes.

bf16 has no numpy dtype of its own: it is `ml_dtypes.bfloat16` when that package is installed,
and otherwise travels as uint16 words with an explicit `dtype="bf16"`.
"""
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .errors import ReorderError

try:  # optional: real bf16, f8 and int4 arrays
    import ml_dtypes as _ml_dtypes
    _BF16_NP = np.dtype(_ml_dtypes.bfloat16)
    _LOWBIT_NP = {"f8_e4m3": np.dtype(_ml_dtypes.float8_e4m3fn),
                  "f8_e5m2": np.dtype(_ml_dtypes.float8_e5m2),
                  "s4": np.dtype(_ml_dtypes.int4), "u4": np.dtype(_ml_dtypes.uint4)}
except ImportError:  # pragma: no cover - exercised on machines without ml_dtypes
    _BF16_NP = None
    _LOWBIT_NP = {"f8_e4m3": np.dtype(np.uint8), "f8_e5m2": np.dtype(np.uint8),
                  "s4": np.dtype(np.int8), "u4": np.dtype(np.uint8)}


@dataclass(frozen=True)
class DType:
    name: str            # oneDNN spelling: f32, s8, ...
    itemsize: int
    kind: str            # "float" or "int"
    storage: np.dtype    # how the bytes travel in numpy (bf16 -> uint16 without ml_dtypes)

    @property
    def word(self):
        """Unsigned word of the same size: pure moves are typed by size, not meaning."""
        return np.dtype(f"u{self.itemsize}")

    @cached_property
    def numpy_dtypes(self):
        """The numpy dtypes an array of this type may have: the storage type, and for bf16
        also uint16 words."""
        words = {"bf16": np.uint16, "f8_e4m3": np.uint8, "f8_e5m2": np.uint8}
        return {self.storage} | ({np.dtype(words[self.name])} if self.name in words else set())

    @property
    def is_int(self):
        return self.kind == "int"

    def __repr__(self):
        return self.name


_TABLE = [
    DType("f32", 4, "float", np.dtype(np.float32)),
    DType("f64", 8, "float", np.dtype(np.float64)),
    DType("f16", 2, "float", np.dtype(np.float16)),
    DType("bf16", 2, "float", _BF16_NP if _BF16_NP is not None else np.dtype(np.uint16)),
    DType("s8", 1, "int", np.dtype(np.int8)),
    DType("u8", 1, "int", np.dtype(np.uint8)),
    DType("s32", 4, "int", np.dtype(np.int32)),
    DType("s64", 8, "int", np.dtype(np.int64)),
    DType("u16", 2, "int", np.dtype(np.uint16)),
    DType("u32", 4, "int", np.dtype(np.uint32)),
    DType("u64", 8, "int", np.dtype(np.uint64)),
    DType("s16", 2, "int", np.dtype(np.int16)),
    # Low-bit types (reorder/lowbit.py): f8 one byte a value; s4/u4 one value a byte here
    # (ml_dtypes int4/uint4 arrays), packed two a byte only in the buffers lowbit.py writes.
    DType("f8_e4m3", 1, "float", _LOWBIT_NP["f8_e4m3"]),
    DType("f8_e5m2", 1, "float", _LOWBIT_NP["f8_e5m2"]),
    DType("s4", 1, "int", _LOWBIT_NP["s4"]),
    DType("u4", 1, "int", _LOWBIT_NP["u4"]),
]
LOWBIT = ("f8_e4m3", "f8_e5m2", "s4", "u4")
BY_NAME = {d.name: d for d in _TABLE}
_ALIASES = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
            "int8": "s8", "uint8": "u8", "int32": "s32", "int64": "s64", "int16": "s16",
            "uint16": "u16", "uint32": "u32", "uint64": "u64", "float8_e4m3fn": "f8_e4m3",
            "float8_e5m2": "f8_e5m2", "int4": "s4", "uint4": "u4", "e4m3": "f8_e4m3",
            "e5m2": "f8_e5m2"}
_BY_NUMPY = {}
for _d in _TABLE:
    _BY_NUMPY.setdefault(_d.storage, _d)   # uint16 maps to u16, not to bf16 words


def as_dtype(x):
    """A DType from a oneDNN name ('f32'), a numpy name ('float32'), a numpy dtype or a DType."""
    if isinstance(x, DType):
        return x
    if isinstance(x, str):
        key = _ALIASES.get(x.lower(), x.lower())
        if key in BY_NAME:
            return BY_NAME[key]
        raise ReorderError(f"unknown data type {x!r}; expected one of {', '.join(BY_NAME)} "
                           f"or a numpy dtype")
    try:
        npd = np.dtype(x)
    except TypeError:
        raise TypeError(f"not a data type: {x!r}") from None
    return dtype_of_numpy(npd)


def dtype_of_numpy(npd):
    if not isinstance(npd, np.dtype):   # every call checks its array's dtype: no rebuilding
        npd = np.dtype(npd)
    if npd.byteorder == ">" or (npd.byteorder == "=" and not np.little_endian):
        raise ReorderError(f"big-endian arrays are not supported (dtype {npd})")
    d = _BY_NUMPY.get(npd.newbyteorder("=") if npd.byteorder == "<" else npd)
    if d is None:
        if npd.kind in "OUSVM" or npd.hasobject:
            raise TypeError(f"arrays of dtype {npd} hold no numbers a layout reorder can move; "
                            f"use a numeric dtype such as float32 or int8")
        raise ReorderError(f"unsupported dtype {npd}; supported: {', '.join(BY_NAME)}")
    return d


# ---------------------------------------------------------------------------------------------
# conversion rules (spec §3.3): which pairs a reorder may convert between, and how

CONVERTIBLE = ("f32", "f64", "f16", "bf16", "s8", "u8", "s32")
# oneDNN has no CPU reorder between the 16-bit floats and s32.
UNSUPPORTED_PAIRS = frozenset({("bf16", "s32"), ("s32", "bf16"), ("f16", "s32"), ("s32", "f16")})
# Integer destinations saturate to these bounds (as f32), then round half to even. s32 tops out
# at 2147483520 (0x4EFFFFFF), the largest f32 below 2^31; NaN becomes 0.
SATURATION = {"s8": (-128.0, 127.0), "u8": (0.0, 255.0), "s32": (-2147483648.0, 2147483520.0)}
# NaN saturates to the bound oneDNN's x64 kernels give (their clamp order): s8 127, u8 0,
# s32 2147483520. f16 follows IEEE (numpy's astype); bf16 flushes f32 denormals to zero.


def check_conversion(src, dst):
    """Raise ReorderError unless a reorder can convert dtype `src` into dtype `dst`."""
    src, dst = as_dtype(src), as_dtype(dst)
    for d in (src, dst):
        if d.name not in CONVERTIBLE:
            raise ReorderError(f"cannot convert {src.name} to {dst.name}: {d.name} takes part only "
                               f"in same-type moves; conversions support {', '.join(CONVERTIBLE)}")
    if (src.name, dst.name) in UNSUPPORTED_PAIRS:
        raise ReorderError(f"cannot convert {src.name} to {dst.name}: conversions between "
                           f"f16/bf16 and s32 are not supported (as in oneDNN); go through f32")
