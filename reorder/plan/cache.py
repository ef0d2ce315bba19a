"""Every cache of plans, in one place.

- `cached_plan`: one `Plan` per (src, dst, threads, attrs, streaming threshold), checked
  before it is built.
- `cached_steps`: the planner's steps, shared by every plan whose attributes have the same
  structure (their values are handed to the runner at each call).
- `CallCache` tables for the front ends, from a call's signature to what calls with that
  signature share, so a repeated call skips building descriptors: `REORDER_CALLS`,
  `REORDER_CALLS_WITH_ATTRS`, `QUANTIZE_CALLS`, `REARRANGE_CALLS`, `TRANSFORM_CALLS`.

`clear()` empties all of them (a test that changes a planner constant needs that).
"""
import threading
from functools import lru_cache

from ..core.attrs import Attrs
from ..core.desc import _fmt
from ..core.errors import ReorderError
from ..kernels.base import STREAM_MIN_BYTES
from .planner import plan_steps
from .plans import Plan

__all__ = ["CallCache", "cached_plan", "cached_steps", "clear", "REORDER_CALLS",
           "REORDER_CALLS_WITH_ATTRS", "QUANTIZE_CALLS", "REARRANGE_CALLS", "TRANSFORM_CALLS"]


class CallCache:
    """A bounded map from a call's signature to what calls with it share, oldest out first.
    Lookups are single dict reads; insertions and evictions hold the lock, so two threads
    never evict the same entry. A key that cannot be hashed (a list in the call) is never
    stored: such a call takes the long way, which reports what is wrong with it."""

    def __init__(self, what, maxsize):
        self.what, self.maxsize = what, maxsize
        self._entries = {}
        self._lock = threading.Lock()

    def get(self, key):
        """The entry for `key`, or None when absent, when key is None, or unhashable."""
        if key is None:
            return None
        try:
            return self._entries.get(key)
        except TypeError:
            return None

    def put(self, key, value):
        if key is None:
            return
        try:
            hash(key)
        except TypeError:
            return
        with self._lock:
            self._entries[key] = value
            while len(self._entries) > self.maxsize:
                del self._entries[next(iter(self._entries))]

    def __getitem__(self, key):
        return self._entries[key]

    def __len__(self):
        return len(self._entries)

    def items(self):
        return list(self._entries.items())

    def clear(self):
        with self._lock:
            self._entries.clear()

    def __repr__(self):
        return f"CallCache({self.what}: {len(self)} of {self.maxsize})"


REORDER_CALLS = CallCache("reorder() calls with tags and no attributes", 256)
REORDER_CALLS_WITH_ATTRS = CallCache("reorder() calls with attributes (by their structure)", 256)
QUANTIZE_CALLS = CallCache("quantize() calls", 128)
REARRANGE_CALLS = CallCache("rearrange() patterns on an input's shape and strides", 256)
# keyed by the traced map's value (never the function), so a changed closure misses
TRANSFORM_CALLS = CallCache("transform_layout() maps on an input's shape and strides", 256)
_CALLS = (REORDER_CALLS, REORDER_CALLS_WITH_ATTRS, QUANTIZE_CALLS, REARRANGE_CALLS, TRANSFORM_CALLS)


@lru_cache(maxsize=512)
def cached_steps(src, dst, attrs_structure, stream_min_bytes):
    """The planner's (steps, via) for a pair, shared by plans that differ only in threads or
    in attribute values."""
    return plan_steps(src, dst, attrs_structure, stream_min_bytes)


def cached_plan(src, dst, threads=None, attrs=None, stream_min_bytes=STREAM_MIN_BYTES):
    """A cached Plan. `attrs` (reorder.core.attrs.Attrs: scales by value, zero points, sum,
    compensation) is part of the key; a change of dtype alone needs none. The key is the
    five values in this order however the call spells them, so `plan()` and `reorder()`
    asking for the same pair share one Plan."""
    return _plan(src, dst, threads, attrs, stream_min_bytes)


@lru_cache(maxsize=512, typed=True)      # typed: True is not a threshold of 1
def _plan(src, dst, threads, attrs, stream_min_bytes):
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
    steps = cached_steps(src, dst, None if attrs is None else attrs.structure(), stream_min_bytes)
    return Plan(src, dst, threads, attrs, stream_min_bytes, steps=steps)


cached_plan.cache_info = _plan.cache_info
cached_plan.cache_clear = _plan.cache_clear


def clear():
    """Empty every plan cache: the plans, the planner's steps and the front ends' tables."""
    _plan.cache_clear()
    cached_steps.cache_clear()
    for table in _CALLS:
        table.clear()
