"""Binding arrays to descriptors: the checks every front end makes before a kernel runs, and
64-byte-aligned outputs."""
import math

import numpy as np

from .._kernels import data_address
from ..core.desc import _fmt
from ..core.errors import ReorderError

__all__ = ["OutRegion", "aligned_empty", "bind_out", "bind_source", "check_dst", "check_out",
           "is_whole"]


def aligned_empty(shape, dtype, align=64):
    dtype = np.dtype(dtype)
    raw = np.empty(math.prod(shape) * dtype.itemsize + align, dtype=np.uint8)
    return np.ndarray(shape, dtype, raw, -data_address(raw) % align)


def check_dst(dst):
    """Raise unless `dst` can be written: no two elements on one address (zero or
    interleaved strides), which a result could not hold."""
    if dst.has_overlap:
        raise ReorderError(f"the destination {dst!r} has strides {dst.physical_strides}: two "
                           f"elements would share an address, so it cannot hold a result")


def is_whole(dst):
    """Whether `dst` is a whole output array: C-contiguous in its physical axes from offset 0,
    as plan.empty() makes. Any other dst (a sub-memory, a strided view) is written through
    out= only, element by element of its own footprint (bind_out)."""
    return dst.offset0 == 0 and dst.is_c_contiguous


def _footprint(desc):
    """(lo, hi): the lowest and highest element offsets `desc` touches, padding included."""
    lo = desc.offset0 + sum(min(0, (a.extent - 1) * a.stride) for a in desc.axes)
    hi = desc.offset0 + sum(max(0, (a.extent - 1) * a.stride) for a in desc.axes)
    return lo, hi


class OutRegion:
    """How an out= array takes a destination that is not a whole array (is_whole false),
    worked out once per destination: a plan binds every call's out= through it.

    `out` is either dst's physical array (a strided numpy view: its shape, its strides;
    offset0 0) or the C-contiguous array of a parent that dst (a sub-memory) indexes from
    its first element, offset0 included. Only dst's footprint is written."""
    __slots__ = ("dst", "shape", "strides", "lo", "hi", "empty")

    def __init__(self, dst):
        self.dst, self.shape = dst, dst.physical_shape
        self.strides = tuple(a.stride for a in dst.axes)
        self.lo, self.hi = _footprint(dst)
        self.empty = dst.span == 0

    def bind(self, out, x=None):
        """The array whose data pointer is dst's element 0 (out itself or a view of it),
        after checking that out can take dst and does not overlap `x`."""
        dst = self.dst
        if not isinstance(out, np.ndarray):
            raise TypeError(f"out must be a numpy array, got {type(out).__name__}")
        if out.dtype not in dst.dtype.numpy_dtypes:
            raise ReorderError(f"out has dtype {out.dtype}, but the result is {dst.dtype.name} "
                               f"({dst.dtype.storage})")
        if not out.flags.writeable:
            raise ReorderError("out is read-only")
        size = out.itemsize
        if out.shape == self.shape and dst.offset0 == 0 and all(
                s == st * size or n <= 1 for s, st, n in zip(out.strides, self.strides, self.shape)):
            bound = out
            view = None
        elif out.flags.c_contiguous:
            if not self.empty and (self.lo < 0 or self.hi >= out.size):
                raise ReorderError(f"the destination {dst!r} does not fit in out: it writes "
                                   f"elements {self.lo}..{self.hi} of the parent (offset0="
                                   f"{dst.offset0}), but out of shape {_fmt(out.shape)} holds "
                                   f"{out.size}")
            flat = out.reshape(-1)
            bound = flat[:0] if self.empty else flat[dst.offset0:]
            view = bound
        else:
            raise ReorderError(f"out of shape {_fmt(out.shape)} and strides {out.strides} does "
                               f"not hold {dst!r}; expected shape {_fmt(self.shape)} with "
                               f"strides {tuple(st * size for st in self.strides)} bytes, or a "
                               f"C-contiguous parent array that dst indexes from its start")
        if x is not None and not self.empty and np.may_share_memory(x, out):
            if view is not None:
                # the region's own elements, not the range they span: a source read from
                # another region of the same parent (gaps between this one's rows) does not
                # overlap it
                view = np.lib.stride_tricks.as_strided(
                    view, self.shape, tuple(st * size for st in self.strides), writeable=False)
            try:
                overlap = np.shares_memory(x, out if view is None else view, max_work=100000)
            except np.exceptions.TooHardError:
                overlap = True          # could not prove them apart: refuse rather than risk it
            if overlap:
                raise ReorderError("out overlaps the input array; a reorder cannot run in place")
        return bound


def bind_out(out, dst, x=None):
    """OutRegion(dst).bind(out, x), for a caller without a plan."""
    return OutRegion(dst).bind(out, x)


def bind_source(x, src):
    """Check that array `x` holds descriptor `src`; return the array whose data pointer is
    src's logical element 0 (a view of x).

    `x` is either src's physical array (its shape and strides; element 0 at its data pointer,
    so only for an offset0 of 0), or a flat contiguous buffer that src indexes from its start
    (offset0 included), or, for an src with an offset0 (a sub-memory), the C-contiguous array
    of the parent it indexes, in any shape, as out= takes it."""
    if not isinstance(x, np.ndarray):
        raise TypeError(f"expected a numpy array, got {type(x).__name__}")
    if x.dtype not in src.dtype.numpy_dtypes:
        raise ReorderError(f"array dtype {x.dtype} does not fit descriptor dtype {src.dtype.name}")
    if x.shape == src.physical_shape and src.offset0 == 0:
        strides = tuple(s // x.itemsize for s in x.strides)
        if all(s == a.stride or a.extent <= 1 for s, a in zip(strides, src.axes)):
            return x
    if (x.ndim == 1 or src.offset0) and x.flags.c_contiguous:
        lo, hi = _footprint(src)
        if src.span == 0 or (lo >= 0 and hi < x.size):
            flat = x.reshape(-1)
            return flat[src.offset0:] if src.span else flat[:0]
        raise ReorderError(f"a buffer of {x.size} elements (shape {_fmt(x.shape)}) cannot hold "
                           f"{src!r}: it needs elements {lo}..{hi}")
    if src.offset0:
        raise ReorderError(f"array of shape {_fmt(x.shape)} and strides {x.strides} cannot hold "
                           f"{src!r}: a descriptor with offset0={src.offset0} indexes a "
                           f"C-contiguous buffer (its parent's array) from its start; pass "
                           f"that buffer")
    raise ReorderError(f"array of shape {_fmt(x.shape)} and strides {x.strides} does not hold "
                       f"{src!r}; expected shape {_fmt(src.physical_shape)}, or a flat buffer")


def check_out(out, dst, x=None):
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy array, got {type(out).__name__}")
    if out.dtype not in dst.dtype.numpy_dtypes:
        raise ReorderError(f"out has dtype {out.dtype}, but the result is {dst.dtype.name} "
                           f"({dst.dtype.storage})")
    if out.shape != dst.physical_shape:
        raise ReorderError(f"out has shape {_fmt(out.shape)}, but {dst.name} of "
                           f"{_fmt(dst.dims)} needs {_fmt(dst.physical_shape)}")
    if not out.flags.c_contiguous:
        raise ReorderError("out must be C-contiguous")
    if not out.flags.writeable:
        raise ReorderError("out is read-only")
    if x is not None and np.may_share_memory(x, out):
        try:
            overlap = np.shares_memory(x, out, max_work=100000)
        except np.exceptions.TooHardError:
            overlap = True          # could not prove them apart: refuse rather than risk it
        if overlap:
            raise ReorderError("out overlaps the input array; a reorder cannot run in place")
