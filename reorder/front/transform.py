"""`transform_layout()`: apply a TVM-style index map to an array, through the planner.

The map becomes a dense destination `Desc` over the array's own dims (the array's axes are the
map's indices), and the move is an ordinary cached plan: a map that is a (dim, block) layout
runs the very plan of its tag. Padding is zero from the kernel; another pad_value is written
into the padded slabs afterwards, one numpy slice assignment per digit of a padded index.
"""
import math
import operator

import numpy as np

from ..core.desc import Desc, _fmt
from ..core.errors import ReorderError
from ..core.index_map import as_index_map
from ..plan.cache import TRANSFORM_CALLS, cached_plan
from . import interop
from .api import as_array

__all__ = ["transform_layout"]


class _Prepared:
    """What every call with one (map, shape, strides, dtype) shares."""
    __slots__ = ("plan", "out_shape", "result_shape", "slabs", "physical")

    def __init__(self, plan, out_shape, result_shape, slabs):
        self.plan, self.out_shape, self.result_shape, self.slabs = plan, out_shape, result_shape, slabs
        self.physical = plan.dst.physical_shape


def _pad_slabs(desc):
    """Index tuples of the physical array that together cover its padding exactly: for each
    padded dim, coordinates >= its size, digit by digit from the most significant."""
    slabs = []
    for d, n in enumerate(desc.dims):
        if desc.padded_dims[d] == n:
            continue
        pos = sorted((i for i, a in enumerate(desc.axes) if a.dim == d),
                     key=lambda i: -desc.axes[i].weight)
        fixed = {}
        for k, i in enumerate(pos):
            a = desc.axes[i]
            digit = n // a.weight if a.block == 0 else (n // a.weight) % a.extent
            lo = digit if k == len(pos) - 1 else digit + 1
            if lo < a.extent:
                idx = [slice(None)] * len(desc.axes)
                for j, v in fixed.items():
                    idx[j] = v
                idx[i] = slice(lo, None)
                slabs.append(tuple(idx))
            if digit >= a.extent:
                break
            fixed[i] = digit
    return tuple(slabs)


def _pad_scalar(pad_value, dtype):
    """pad_value as a numpy scalar of `dtype`, or an error when the dtype cannot hold it."""
    dt = np.dtype(dtype)
    if isinstance(pad_value, (bool, np.bool_)):
        raise TypeError("pad_value must be a number, not a bool")
    if dt.kind in "iu":
        if isinstance(pad_value, (float, np.floating)):
            if not float(pad_value).is_integer():
                raise ReorderError(f"pad_value {pad_value!r} is not an integer; {dt} cannot "
                                   f"hold it")
            pad_value = int(pad_value)
        try:
            v = operator.index(pad_value)
        except TypeError:
            raise TypeError(f"pad_value must be a number, got {type(pad_value).__name__}") from None
        info = np.iinfo(dt)
        if not info.min <= v <= info.max:
            raise ReorderError(f"pad_value {v} does not fit {dt} ({info.min}..{info.max})")
        return dt.type(v)
    try:
        f = float(pad_value)
    except (TypeError, ValueError):
        raise TypeError(f"pad_value must be a number, got {type(pad_value).__name__}") from None
    with np.errstate(over="ignore", invalid="ignore"):
        v = np.array(f).astype(dt)[()]
    if math.isfinite(f) and not np.isfinite(np.float64(v)):
        raise ReorderError(f"pad_value {pad_value!r} overflows {dt} (it would become {v})")
    return v


def _prepare(m, arr):
    src = Desc.of(arr)
    dst = m.desc(arr.shape, src.dtype)
    p = cached_plan(src, dst)        # keyed by the Desc pair: the tag's plan for a tag's map
    out_shape = tuple(m.map_shape(arr.shape))
    # without separators the result keeps every output axis (TVM's map_tensor); with them,
    # each group is one physical axis
    result = m.physical_shape(arr.shape) if m.axis_separators else out_shape
    return _Prepared(p, out_shape, result, _pad_slabs(dst))


@interop.returns_like_input
def transform_layout(x, index_map, pad_value=0, *, out=None, threads=None):
    """`x` in the layout of `index_map`, as TVM's `IndexMap.map_tensor` gives it: an array of
    `index_map.map_shape(x.shape)`, or with AXIS_SEPARATOR the N-d physical array (each group
    of output axes flattened into one axis).

    x          array whose axes are the map's indices (any strides, any supported dtype)
    index_map  an IndexMap or a function `lambda n, c, h, w: [n, c // 4, h, w, c % 4]`
               (traced at every call, so a closure always gives its current map)
    pad_value  the value of outputs no input reaches (splits and merges that do not divide);
               any value the dtype holds, default 0
    out        preallocated result (exact shape and dtype, C-contiguous, not overlapping x)
    threads    thread count for this call

    The move runs the cached plan of (x's Desc, index_map.desc(x.shape)); for a map that is a
    (dim, block) layout that is the plan of the equivalent tag.
    """
    m = as_index_map(index_map)
    arr = x if type(x) is np.ndarray else as_array(x)      # the dtype is checked by Desc.of
    if arr.ndim != m.ndim:
        raise ReorderError(f"{m!r} takes {m.ndim} indices but the array has {arr.ndim} axes "
                           f"(shape {_fmt(arr.shape)})")
    # 0 fits every dtype and is what the kernel writes: nothing to check or fill
    pad = None if type(pad_value) is int and pad_value == 0 else _pad_scalar(pad_value, arr.dtype)
    key = (m, arr.shape, arr.strides, arr.dtype)
    prep = TRANSFORM_CALLS.get(key)
    if prep is None:
        prep = _prepare(m, arr)
        TRANSFORM_CALLS.put(key, prep)
    p = prep.plan
    if out is not None:
        if not isinstance(out, np.ndarray):
            raise TypeError(f"out must be a numpy array, got {type(out).__name__}")
        if out.shape != prep.result_shape:
            raise ReorderError(f"out has shape {_fmt(out.shape)}, but {m!r} of "
                               f"{_fmt(arr.shape)} gives {_fmt(prep.result_shape)}")
        if not out.flags.c_contiguous:
            raise ReorderError("out must be C-contiguous")
    if arr.size == 0 or math.prod(prep.result_shape) == 0:
        # no input element: every output is padding (TVM's shape rule still gives its extents)
        res = np.empty(prep.result_shape, arr.dtype) if out is None else out
        if res.size:
            if not res.flags.writeable:
                raise ReorderError("out is read-only")
            res[...] = 0 if pad is None else pad
        return res
    phys = None if out is None else out.reshape(prep.physical)
    phys = p(arr, out=phys, threads=threads)
    # the kernel wrote zero bytes there; any other bit pattern (-0.0 included) is written now
    if prep.slabs and pad is not None and np.asarray(pad).reshape(1).view(np.uint8).any():
        for s in prep.slabs:
            phys[s] = pad
    return phys.reshape(prep.result_shape) if out is None else out
