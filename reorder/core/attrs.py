"""Conversion attributes (spec §3-§4): what a converting reorder needs besides the two
descriptors. Pure Python, no kernels.

`Attrs` holds scales (by value, with masks), zero points, `sum` and int8 compensation, and
answers where the compensation goes (`comp_desc`). It is hashable, so it is part of the plan
cache key. Arithmetic (in f32, oneDNN's order): v = src_scale * (src - src_zp);
v += beta * dst_old; v = v * (1/dst_scale) + dst_zp; v *= scale_adjust; then saturate and
round half to even.
"""
import math
import numbers
from dataclasses import dataclass, replace

import numpy as np

from .desc import Desc, _fmt
from .dtypes import check_conversion
from .errors import ReorderError
from .tags import ABC, spell

__all__ = ["Attrs", "make_attrs"]

_INTEGER_TENSORS = ("s8", "u8", "s32")
_COMP_KINDS = ("s8s8", "zp")


def _dims_of(mask, ndim):
    return [d for d in range(ndim) if mask >> d & 1]


def _contiguous(mask):
    """Set bits form one run (0b0110), as oneDNN's reference reorder requires."""
    if mask == 0:
        return True
    low = mask & -mask
    return (mask + low) & mask == 0


def _mask_text(mask, ndim=None):
    dims = _dims_of(mask, ndim if ndim is not None else mask.bit_length())
    if not dims:
        return "mask 0 (one common value)"
    return f"mask {mask} (dim{'s' if len(dims) > 1 else ''} {', '.join(ABC[d] for d in dims)})"


def _check_mask(mask, name):
    if isinstance(mask, bool) or not isinstance(mask, numbers.Integral):
        raise TypeError(f"{name} must be an int bit mask, got {mask!r}")
    mask = int(mask)
    if mask < 0:
        raise ReorderError(f"{name}={mask} is negative; a mask has bit d set when the values "
                           f"vary along dim d")
    return mask


def scale_array(values, name):
    """A scale argument as a flat float32 array (type checks only; counts are Attrs.bind's)."""
    arr = np.asarray(values)
    if arr.dtype.kind not in "fiu" or arr.dtype.kind == "b":
        raise TypeError(f"{name} must be a number or an array of numbers, got {arr.dtype}")
    if arr.size == 0:
        raise ReorderError(f"{name} is empty")
    return np.ascontiguousarray(arr, dtype=np.float32).reshape(-1), tuple(arr.shape)


def _scales_bytes(values, name):
    """(float32 bytes, original shape) of a scale argument."""
    if values is None:
        return None, None
    arr, shape = scale_array(values, name)
    return arr.tobytes(), shape


def sum_factor(sum_beta):
    """sum_beta as the f32 value the kernels use."""
    if isinstance(sum_beta, bool) or not isinstance(sum_beta, numbers.Real):
        raise TypeError(f"sum_beta must be a number, got {sum_beta!r}")
    return float(np.float32(sum_beta))


def zero_point(value, name):
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise ReorderError(f"{name} must be one integer (a common zero point); per-dim zero "
                               f"points are not supported, got {value.size} values")
        value = value.reshape(()).item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or int(value) != value:
        raise TypeError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if not -2**31 <= value < 2**31:
        raise ReorderError(f"{name}={value} does not fit in s32")
    return value


@dataclass(frozen=True)
class Attrs:
    """Conversion attributes of one reorder. Build with `make_attrs`; validated against the
    descriptors by `bind`. Scales are kept by value (float32 bytes), so equal attributes
    share a cached plan."""
    src_scales: bytes = None
    src_scales_shape: tuple = None
    src_mask: int = 0
    dst_scales: bytes = None
    dst_scales_shape: tuple = None
    dst_mask: int = 0
    src_zp: int = None
    dst_zp: int = None
    sum_beta: float = None
    comp: tuple = ()                 # subset of ("s8s8", "zp"), in that order
    comp_mask: int = 0
    scale_adjust: float = 1.0

    @property
    def is_trivial(self):
        return (self.src_scales is None and self.dst_scales is None and self.src_zp is None
                and self.dst_zp is None and self.sum_beta is None and not self.comp
                and self.scale_adjust == 1.0)

    def structure(self):
        """These attributes with every value replaced by a placeholder (scales 1, zero points
        0, beta 1): what a plan depends on. Masks, value counts, which operations are present,
        compensation and scale_adjust stay; the values are arguments of each call."""
        def ones(b):
            return None if b is None else np.ones(len(b) // 4, np.float32).tobytes()
        return replace(self, src_scales=ones(self.src_scales), dst_scales=ones(self.dst_scales),
                       src_zp=None if self.src_zp is None else 0,
                       dst_zp=None if self.dst_zp is None else 0,
                       sum_beta=None if self.sum_beta is None else 1.0)

    def src_scale_values(self):
        return None if self.src_scales is None else np.frombuffer(self.src_scales, np.float32)

    def dst_scale_values(self):
        return None if self.dst_scales is None else np.frombuffer(self.dst_scales, np.float32)

    # -- validation -----------------------------------------------------------------------------
    def bind(self, src, dst):
        """Check these attributes against the (src, dst) descriptors; return the attributes
        a plan needs (None for a plain same-type move). Raises ReorderError naming the part."""
        if self.is_trivial and src.dtype == dst.dtype:
            return None
        check_conversion(src.dtype, dst.dtype)
        nd = src.ndim
        full = (1 << nd) - 1
        masks = []
        for side, values, shape, mask in (("src", self.src_scales, self.src_scales_shape, self.src_mask),
                                          ("dst", self.dst_scales, self.dst_scales_shape, self.dst_mask)):
            if values is None:
                continue
            name = f"{side}_scales"
            if mask & ~full:
                raise ReorderError(f"{name}: {_mask_text(mask)} names a dim the {nd}-d tensor "
                                   f"{_fmt(src.dims)} does not have")
            if not _contiguous(mask) and not (self.comp and mask == self.comp_mask):
                raise ReorderError(f"{name}: mask {mask} ({bin(mask)}) is not a contiguous run of "
                                   f"dims; scale masks must be like 1, 2, 3, 6 (or equal the "
                                   f"compensation mask)")
            self._check_scale_shape(name, src.dims, mask, shape, len(values) // 4)
            if mask:
                masks.append((name, mask))
        if len(masks) == 2 and masks[0][1] != masks[1][1]:
            raise ReorderError(f"src_scales use {_mask_text(masks[0][1], nd)} but dst_scales use "
                               f"{_mask_text(masks[1][1], nd)}; when both vary they must use the "
                               f"same mask")
        for side, zp, desc in (("src", self.src_zp, src), ("dst", self.dst_zp, dst)):
            if zp is not None and desc.dtype.name not in _INTEGER_TENSORS:
                raise ReorderError(f"{side}_zero_point={zp} is set but {side} is "
                                   f"{desc.dtype.name}; zero points apply only to integer "
                                   f"tensors (s8, u8, s32)")
        if self.sum_beta is not None and self.dst_zp is not None:
            raise ReorderError("sum_beta cannot be combined with a dst_zero_point (oneDNN rejects "
                               "the pair: the old destination would need dequantising)")
        if self.scale_adjust not in (1.0, 0.5):
            raise ReorderError(f"scale_adjust must be 1.0 or 0.5 (0.5 halves the weights for "
                               f"CPUs without VNNI), got {self.scale_adjust}")
        if self.comp:
            if dst.dtype.name != "s8":
                raise ReorderError(f"compensation {'+'.join(self.comp)} needs an s8 destination, "
                                   f"but dst is {dst.dtype.name}")
            if self.comp_mask == 0 or self.comp_mask & ~full:
                raise ReorderError(f"comp_mask={self.comp_mask} does not fit the {nd}-d weights "
                                   f"{_fmt(src.dims)}: set bits for the dims that keep their own "
                                   f"sum (1 = dim a, 3 = dims a and b, ...; below {1 << nd})")
            if self.src_zp is not None or self.dst_zp is not None or self.sum_beta is not None:
                raise ReorderError("compensation cannot be combined with zero points or sum "
                                   "(oneDNN's compensating reorders accept scales only)")
        return self

    @staticmethod
    def _check_scale_shape(name, dims, mask, shape, count):
        md = tuple(n if mask >> d & 1 else 1 for d, n in enumerate(dims))
        need = math.prod(md)
        masked = tuple(dims[d] for d in _dims_of(mask, len(dims)))
        if count != need:
            if mask == 0:
                raise ReorderError(f"{name} has {count} values but {_mask_text(0)} needs 1; "
                                   f"pass a {name.split('_')[0]}_scale_mask for per-dim values")
            raise ReorderError(f"{name} has {count} values but {_mask_text(mask, len(dims))} of "
                               f"dims {_fmt(dims)} needs {need} (shape {_fmt(masked)})")
        if len(shape) > 1 and shape not in (md, masked):
            raise ReorderError(f"{name} has shape {_fmt(shape)}; for {_mask_text(mask, len(dims))} "
                               f"of dims {_fmt(dims)} give {need} values flat, or shaped "
                               f"{_fmt(masked)} or {_fmt(md)}")

    # -- what the planner and kernels need ------------------------------------------------------
    @property
    def scale_mask(self):
        """The mask the scale index follows (src and dst share it when both vary)."""
        sm = self.src_mask if self.src_scales is not None else 0
        dm = self.dst_mask if self.dst_scales is not None else 0
        return sm or dm

    def comp_desc(self, dst):
        """The compensation buffer's layout: dst's layout trimmed to the masked dims
        (`OIhw4i16o4i`, mask 1 -> `A16a`; `Abcd4a`, mask 3 -> `Ab4a`), s32, dense over the
        padded dims (spec §4.3)."""
        masked = _dims_of(self.comp_mask, dst.ndim)
        rank = {d: i for i, d in enumerate(masked)}
        axes = tuple((rank[a.dim], a.block) for a in dst.axes if a.dim in rank)
        return Desc(tuple(dst.dims[d] for d in masked), "s32", spell(len(masked), axes))

    def index_strides(self, src, dst):
        """(dim, digit weight) -> (scale index stride, comp index stride) of a loop node."""
        nd = src.ndim
        kmask = self.scale_mask
        kstride, run = [0] * nd, 1
        for d in reversed(range(nd)):
            if kmask >> d & 1:
                kstride[d] = run
                run *= src.dims[d]
        caxes = {}
        if self.comp:
            cdesc = self.comp_desc(dst)
            for i, d in enumerate(_dims_of(self.comp_mask, nd)):
                caxes[d] = [a for a in cdesc.axes if a.dim == i]

        def strides(d, weight):
            cs = 0
            if d in caxes:
                ca = max((a for a in caxes[d] if a.weight <= weight), key=lambda a: a.weight)
                cs = ca.stride * (weight // ca.weight)
            return kstride[d] * weight, cs
        return strides

    def describe(self, src, dst):
        nd = src.ndim
        parts = [f"{src.dtype.name} -> {dst.dtype.name}"]
        for side, values, mask in (("src", self.src_scale_values(), self.src_mask),
                                   ("dst", self.dst_scale_values(), self.dst_mask)):
            if values is not None:
                what = f"{values[0]:g}" if values.size == 1 else f"{values.size} values"
                parts.append(f"{side} scales {what}, {_mask_text(mask, nd)}")
        if self.src_zp is not None:
            parts.append(f"src zero point {self.src_zp}")
        if self.dst_zp is not None:
            parts.append(f"dst zero point {self.dst_zp}")
        if self.sum_beta is not None:
            parts.append(f"sum beta {self.sum_beta:g}")
        if self.scale_adjust != 1.0:
            parts.append(f"scale_adjust {self.scale_adjust:g}")
        if self.comp:
            cd = self.comp_desc(dst)
            parts.append(f"{'+'.join(self.comp)} compensation over {_mask_text(self.comp_mask, nd)}, "
                         f"{cd.nelems} s32 in {cd.abc or cd.name}")
        parts.append("f32 arithmetic, saturate then round half to even")
        return "; ".join(parts)


def make_attrs(*, src_scales=None, src_scale_mask=None, dst_scales=None, dst_scale_mask=None,
               src_zero_point=None, dst_zero_point=None, sum_beta=None, compensation=None,
               comp_mask=None, scale_adjust=1.0):
    """Attrs from user arguments (type checks here; checks against dims in Attrs.bind)."""
    s_bytes, s_shape = _scales_bytes(src_scales, "src_scales")
    d_bytes, d_shape = _scales_bytes(dst_scales, "dst_scales")
    smask = 0 if src_scale_mask is None else _check_mask(src_scale_mask, "src_scale_mask")
    dmask = 0 if dst_scale_mask is None else _check_mask(dst_scale_mask, "dst_scale_mask")
    if src_scale_mask is not None and src_scales is None:
        raise ReorderError("src_scale_mask is given without src_scales")
    if dst_scale_mask is not None and dst_scales is None:
        raise ReorderError("dst_scale_mask is given without dst_scales")
    if sum_beta is not None:
        sum_beta = sum_factor(sum_beta)
    comp = _comp_kinds(compensation)
    cmask = 0
    if comp:
        cmask = 1 if comp_mask is None else _check_mask(comp_mask, "comp_mask")
    elif comp_mask is not None:
        raise ReorderError("comp_mask is given but no compensation was asked for")
    if isinstance(scale_adjust, bool) or not isinstance(scale_adjust, numbers.Real):
        raise TypeError(f"scale_adjust must be 1.0 or 0.5, got {scale_adjust!r}")
    return Attrs(s_bytes, s_shape, smask, d_bytes, d_shape, dmask,
                 zero_point(src_zero_point, "src_zero_point"),
                 zero_point(dst_zero_point, "dst_zero_point"), sum_beta, comp, cmask,
                 float(scale_adjust))


def _comp_kinds(compensation):
    if compensation is None or compensation == () or compensation is False:
        return ()
    kinds = (compensation,) if isinstance(compensation, str) else tuple(compensation)
    bad = [k for k in kinds if k not in _COMP_KINDS]
    if bad or not kinds:
        raise ReorderError(f"compensation={compensation!r}: expected 's8s8', 'zp' or "
                           f"('s8s8', 'zp')")
    return tuple(k for k in _COMP_KINDS if k in kinds)
