"""The plan cache: one `Plan` per (src, dst, threads, attrs, streaming threshold), checked
before it is built. functools' cache is safe to call from several Python threads."""
from functools import lru_cache

from ..core.attrs import Attrs
from ..core.desc import _fmt
from ..core.errors import ReorderError
from .plans import Plan
from ..kernels.base import STREAM_MIN_BYTES

__all__ = ["cached_plan"]


@lru_cache(maxsize=512)
def cached_plan(src, dst, threads=None, attrs=None, stream_min_bytes=STREAM_MIN_BYTES):
    """A cached Plan. `attrs` (reorder.attrs.Attrs: scales by value, zero points, sum,
    compensation) is part of the key; a change of dtype alone needs none."""
    if src.dims != dst.dims:
        raise ReorderError(f"src dims {_fmt(src.dims)} and dst dims {_fmt(dst.dims)} differ; a "
                           f"reorder keeps the logical shape")
    if attrs is None and src.dtype != dst.dtype:
        attrs = Attrs()
    if attrs is not None:
        attrs = attrs.bind(src, dst)   # validates; None when it is a plain same-type move
    if dst.has_overlap or any(a.stride < 0 for a in dst.axes if a.extent > 1):
        raise ReorderError(f"dst {dst!r} has overlapping or negative strides; a destination "
                           f"must give every element its own place")
    if isinstance(stream_min_bytes, bool) or not isinstance(stream_min_bytes, int) \
            or stream_min_bytes < 0:
        raise ReorderError(f"stream_min_bytes must be an int >= 0, got {stream_min_bytes!r}")
    return Plan(src, dst, threads, attrs, stream_min_bytes)
