"""`Desc`: one immutable object that answers every question about one memory layout.

A layout is a list of physical axes, outermost first. Each axis is a slice of one logical dim:
its `weight` says how much one step along the axis moves the dim's logical coordinate, its
`extent` how many steps there are, its `stride` how many elements one step moves in memory.
A dim blocked by 4 then 16 (`OIhw4i16o4i`, dim i) has three axes: outer (weight 16), 4i
(weight 4) and the inner 4i (weight 1). A plain strided array has one axis per dim, weight 1.

    coordinate(d) = sum(digit * weight over the axes of d)
    offset        = offset0 + sum(digit * stride over all axes)
"""
from __future__ import annotations

import math
import operator
from typing import Any, NamedTuple, Optional, Sequence, Union

import numpy as np

from .dtypes import DType, as_dtype, dtype_of_numpy
from .errors import ReorderError
from .tags import ABC, MAX_NDIMS, Tag, parse_tag, spell


class Axis(NamedTuple):
    dim: int        # logical dim this axis indexes
    block: int      # 0 for the dim's outer axis, else the inner block size
    weight: int     # logical step per index step
    extent: int     # number of steps
    stride: int     # elements per index step (may be negative or zero for strided views)


def _check_dims(dims):
    # operator.index, not int(): 1.5 or "2" is a mistake to report, not a size to truncate
    try:
        dims = tuple(operator.index(d) for d in dims)
    except TypeError:
        raise TypeError(f"dims must be a sequence of integers, got {dims!r}") from None
    if not 1 <= len(dims) <= MAX_NDIMS:
        raise ReorderError(f"dims {dims} has {len(dims)} entries; 1..{MAX_NDIMS} are supported")
    if any(d < 0 for d in dims):
        raise ReorderError(f"dims {_fmt(dims)}: negative size in dim "
                           f"{[i for i, d in enumerate(dims) if d < 0][0]}")
    return dims


def _fmt(shape):
    return "x".join(str(d) for d in shape) if shape else "()"


class Desc:
    """Memory descriptor: logical dims, data type and layout.

    Desc(dims, dtype, tag)                      -- from any tag spelling ('nChw16c', 'aBcd16b',
                                                   'NCHW16c', 'OIhw4i16o4i', 'aBx16b', ...)
    Desc(dims, dtype, strides=..., offset0=0)   -- plain, explicit strides in elements
    Desc.of(array, tag=None, dims=None)         -- describe an existing numpy array

    `dims` are always in logical order (N, C, [D,] H, W for data; [G,] O, I, ... for weights),
    whatever the tag's memory order.
    """

    __slots__ = ("dims", "dtype", "axes", "offset0", "tag", "_key")
    dims: tuple[int, ...]
    dtype: DType
    axes: tuple[Axis, ...]
    offset0: int
    tag: Optional[Tag]

    def __init__(self, dims: Sequence[int], dtype: Union[str, DType, np.dtype, type] = "f32",
                 tag: Union[str, Tag, None] = None, *, strides: Optional[Sequence[int]] = None,
                 offset0: int = 0) -> None:
        dims = _check_dims(dims)
        dtype = as_dtype(dtype)
        try:
            offset0 = operator.index(offset0)
        except TypeError:
            raise TypeError(f"offset0 must be an integer, got {offset0!r}") from None
        if offset0 < 0:
            raise ReorderError(f"offset0 must be >= 0, got {offset0}")
        if tag is not None and strides is not None:
            raise ReorderError("give either a tag or explicit strides, not both")
        if strides is not None:
            try:
                strides = tuple(operator.index(s) for s in strides)
            except TypeError:
                raise TypeError(f"strides must be a sequence of integers, got {strides!r}") from None
            if len(strides) != len(dims):
                raise ReorderError(f"strides {strides} has {len(strides)} entries but dims "
                                   f"{_fmt(dims)} has {len(dims)}")
            order = sorted(range(len(dims)), key=lambda d: -abs(strides[d]))
            axes = tuple(Axis(d, 0, 1, dims[d], strides[d]) for d in order)
            tag_obj = None
        else:
            tag_obj = parse_tag(ABC[:len(dims)] if tag is None else tag, len(dims))
            axes = _dense_axes(dims, tag_obj)
        self._init(dims, dtype, axes, offset0, tag_obj)

    def _init(self, dims, dtype, axes, offset0, tag):
        for name, value in (("dims", dims), ("dtype", dtype), ("axes", axes),
                            ("offset0", offset0), ("tag", tag)):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_key", (dims, dtype.name, axes, offset0))

    @classmethod
    def _from_axes(cls, dims, dtype, axes, offset0=0, tag=None):
        self = object.__new__(cls)
        self._init(tuple(dims), as_dtype(dtype), tuple(axes), offset0, tag)
        return self

    @classmethod
    def of(cls, x: np.ndarray, tag: Union[str, Tag, None] = None,
           dims: Optional[Sequence[int]] = None, dtype: Any = None) -> Desc:
        """Describe numpy array `x`. Without a tag, x's axes are the logical dims. With a tag,
        x's axes are the tag's physical axes: an 'nhwc' array has shape (N, H, W, C), an
        'nChw16c' array has shape (N, C/16, H, W, 16). Any strides are allowed, and the
        logical dims of a blocked layout default to its padded dims unless `dims` is given."""
        if not isinstance(x, np.ndarray):
            raise TypeError(f"Desc.of needs a numpy array, got {type(x).__name__}")
        dt = as_dtype(dtype) if dtype is not None else dtype_of_numpy(x.dtype)
        if dt.itemsize != x.itemsize:
            raise ReorderError(f"dtype {dt} has {dt.itemsize}-byte elements but the array's "
                               f"{x.dtype} has {x.itemsize}")
        if x.ndim == 0:
            raise ReorderError("a 0-d array has no layout; reshape it to 1 dim")
        bad = [s for s in x.strides if s % x.itemsize]
        if bad:
            raise ReorderError(f"array strides {x.strides} are not multiples of the element "
                               f"size {x.itemsize}")
        strides = tuple(s // x.itemsize for s in x.strides)
        if tag is None:
            if dims is not None and tuple(dims) != x.shape:
                raise ReorderError(f"dims {_fmt(dims)} do not match the array shape {_fmt(x.shape)}")
            return cls._from_axes(x.shape, dt, (Axis(d, 0, 1, n, s) for d, (n, s)
                                                in enumerate(zip(x.shape, strides))))
        t = _tag_for_rank(tag, x.ndim)
        if len(t.axes) != x.ndim:
            raise ReorderError(f"tag {t.spelling!r} has {len(t.axes)} physical axes "
                               f"{_physical_letters(t)} but the array has {x.ndim} "
                               f"(shape {_fmt(x.shape)})")
        if dims is None:
            dims = [0] * t.ndims
            for (d, b), n in zip(t.axes, x.shape):
                if b == 0:
                    dims[d] = n * math.prod(t.blocks(d))
        ref = cls(dims, dt, t)
        if ref.physical_shape != x.shape:
            raise ReorderError(f"array of shape {_fmt(x.shape)} does not hold dims {_fmt(ref.dims)} "
                               f"in {t.spelling!r}: expected physical shape "
                               f"{_fmt(ref.physical_shape)}")
        axes = tuple(a._replace(stride=s) for a, s in zip(ref.axes, strides))
        return cls._from_axes(ref.dims, dt, axes, 0, t)

    # -- immutability, identity ---------------------------------------------------------------
    def __setattr__(self, name, value):
        raise AttributeError(f"Desc is immutable; cannot set {name!r}")

    def __eq__(self, other):
        return isinstance(other, Desc) and self._key == other._key

    def __hash__(self):
        return hash(self._key)

    def __reduce__(self):
        return (Desc._from_axes, (self.dims, self.dtype.name, self.axes, self.offset0, self.tag))

    # -- shape and padding --------------------------------------------------------------------
    @property
    def ndim(self) -> int:
        return len(self.dims)

    def blocks(self, dim: int) -> tuple[int, ...]:
        """Inner block sizes of `dim`, outermost first (() when unblocked)."""
        return tuple(a.block for a in self.axes if a.dim == dim and a.block)

    def block_size(self, dim: int) -> int:
        return math.prod(self.blocks(dim))

    @property
    def padded_dims(self) -> tuple[int, ...]:
        return tuple(-(-n // self.block_size(d)) * self.block_size(d)
                     for d, n in enumerate(self.dims))

    @property
    def inner_blks(self) -> tuple[int, ...]:
        return tuple(a.block for a in self.axes if a.block)

    @property
    def inner_idxs(self) -> tuple[int, ...]:
        return tuple(a.dim for a in self.axes if a.block)

    @property
    def strides(self) -> tuple[int, ...]:
        """Stride of each logical dim's outer index, in elements (oneDNN's `strides`)."""
        out = [0] * self.ndim
        for a in self.axes:
            if a.block == 0:
                out[a.dim] = a.stride
        return tuple(out)

    @property
    def physical_shape(self) -> tuple[int, ...]:
        """Outer dims in tag order, then the inner blocks: nChw16c of 8x30x56x56 is
        (8, 2, 56, 56, 16)."""
        return tuple(a.extent for a in self.axes)

    @property
    def physical_strides(self) -> tuple[int, ...]:
        return tuple(a.stride for a in self.axes)

    @property
    def nelems(self) -> int:
        """Element count with padding (oneDNN's nelems(with_padding=True))."""
        return math.prod(self.padded_dims)

    @property
    def has_zero_dim(self) -> bool:
        return 0 in self.dims

    @property
    def span(self) -> int:
        """Elements from the lowest to the highest address the layout touches, plus one."""
        if any(a.extent == 0 for a in self.axes):
            return 0
        return 1 + sum((a.extent - 1) * abs(a.stride) for a in self.axes)

    @property
    def nbytes(self) -> int:
        return self.span * self.dtype.itemsize

    @property
    def is_plain(self) -> bool:
        return all(a.block == 0 for a in self.axes)

    @property
    def is_blocked(self) -> bool:
        return not self.is_plain

    @property
    def is_dense(self) -> bool:
        """Elements, padding included, fill `span` with no gaps, overlaps or reversed axes,
        in any axis order (oneDNN's is_dense(with_padding=True))."""
        return (self.nelems == self.span and not self.has_overlap
                and all(a.stride >= 0 for a in self.axes if a.extent > 1))

    @property
    def is_c_contiguous(self) -> bool:
        """Axes are laid out row-major in physical order (size-1 axes' strides are free)."""
        expect = 1
        for a in reversed(self.axes):
            if a.extent != 1 and a.stride != expect:
                return False
            expect *= max(a.extent, 1) if a.extent else 1
        return True

    @property
    def has_overlap(self) -> bool:
        """True if two in-bounds index tuples can share an address (zero or interleaved strides)."""
        reach = 0
        for a in sorted((a for a in self.axes if a.extent > 1), key=lambda a: abs(a.stride)):
            if abs(a.stride) <= reach:
                return True
            reach += (a.extent - 1) * abs(a.stride)
        return False

    # -- offsets ------------------------------------------------------------------------------
    def offset(self, *idx: Any) -> int:
        """Physical offset in elements of logical index `idx` (spec §1.4, off_v). Padded
        coordinates (dims <= i < padded_dims) are allowed."""
        if len(idx) == 1 and isinstance(idx[0], (tuple, list)):
            idx = tuple(idx[0])
        if len(idx) != self.ndim:
            raise ReorderError(f"offset needs {self.ndim} indices, got {len(idx)}")
        pd = self.padded_dims
        for d, (i, n) in enumerate(zip(idx, pd)):
            if not 0 <= i < n:
                raise ReorderError(f"index {tuple(idx)} is out of range in dim {d} "
                                   f"(size {self.dims[d]}, padded {n})")
        off = self.offset0
        for a in self.axes:
            q = idx[a.dim] // a.weight
            off += (q if a.block == 0 else q % a.extent) * a.stride
        return off

    # -- matching -----------------------------------------------------------------------------
    def matches(self, tag: Union[str, Tag]) -> bool:
        """oneDNN's memory_desc_matches_tag: same inner blocks and the tag's outer strides,
        except for dims of size 1 (unpadded), whose stride is free (spec §1.6)."""
        try:
            ref = Desc(self.dims, self.dtype, tag)
        except ReorderError:
            return False
        if (self.inner_blks, self.inner_idxs) != (ref.inner_blks, ref.inner_idxs):
            return False
        pd = ref.padded_dims
        return all(s == r for d, (s, r) in enumerate(zip(self.strides, ref.strides))
                   if not (self.dims[d] == 1 and pd[d] == 1))

    def similar_to(self, other: Desc) -> bool:
        """Same dims and layout (strides of size-1 dims aside); the data type may differ."""
        if self.dims != other.dims or self.offset0 != other.offset0:
            return False
        def key(desc):
            return tuple((a.dim, a.block, a.weight, a.extent, a.stride) for a in desc.axes
                         if a.extent != 1)
        return key(self) == key(other)

    # -- names --------------------------------------------------------------------------------
    @property
    def abc(self) -> Optional[str]:
        """Abstract oneDNN tag of the layout, or None for a strided layout no tag describes."""
        if self.tag is not None and self.is_c_contiguous and self.nelems == self.span:
            return self.tag.abc
        if self.is_plain:
            # a plain layout has a tag iff its strides are dense in some axis order
            order = sorted(range(self.ndim), key=lambda d: (-abs(self.strides[d]), d))
            cand = spell(self.ndim, tuple((d, 0) for d in order))
            if self.offset0 == 0 and self.matches(cand):
                return cand
        return None

    @property
    def name(self) -> str:
        """The user's spelling, else a familiar alias, else the abstract tag, else 'strided'."""
        if self.tag is not None:
            return self.tag.spelling
        abc = self.abc
        return parse_tag(abc).alias if abc else "strided"

    def __repr__(self):
        abc = self.abc
        if abc is None:
            layout = f"strides={self.strides}" + (f", offset0={self.offset0}" if self.offset0 else "")
        else:
            own = self.tag is not None and self.tag.abc == abc
            alias = self.tag.spelling if own else parse_tag(abc).alias
            layout = abc if alias == abc else f"{alias} = {abc}"
        padded = "" if self.padded_dims == self.dims else f", padded {_fmt(self.padded_dims)}"
        return f"Desc({_fmt(self.dims)}, {layout}, {self.dtype.name}{padded}, {_bytes(self.nbytes)})"

    def explain(self) -> str:
        """A few lines a person can read: dims, padding, each physical axis and the bytes."""
        lines = [repr(self)]
        for d, n in enumerate(self.dims):
            blks = self.blocks(d)
            if blks:
                lines.append(f"  dim {ABC[d]} ({n}) split into {' x '.join(map(str, blks))} inner "
                             f"block{'s' if len(blks) > 1 else ''}; padded to {self.padded_dims[d]}"
                             + (f" ({self.padded_dims[d] - n} zero rows)" if self.padded_dims[d] > n else ""))
        lines.append("  physical axes, outermost first (extent @ stride in elements):")
        for a in self.axes:
            label = ABC[a.dim].upper() if a.block == 0 and self.blocks(a.dim) else ABC[a.dim]
            label = f"{a.block}{ABC[a.dim]}" if a.block else label
            lines.append(f"    {label:>6}: {a.extent} @ {a.stride}")
        lines.append(f"  {self.nelems} elements with padding, {_bytes(self.nbytes)}"
                     + (", dense" if self.is_dense else ""))
        return "\n".join(lines)


def _bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} B" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024


def _dense_axes(dims, tag):
    """Axes of a tag-built layout: padded dims, dense strides (spec §1.3)."""
    axes = []
    for d, b in tag.axes:
        if b == 0:
            total = math.prod(tag.blocks(d))
            axes.append([d, 0, total, -(-dims[d] // total), 0])
        else:
            axes.append([d, b, 0, b, 0])
    # weights of inner blocks, taking repeated blocks of one dim in order
    for d in set(d for d, _ in tag.axes):
        inner = [a for a in axes if a[0] == d and a[1]]
        w = 1
        for a in reversed(inner):
            a[2] = w
            w *= a[1]
    stride = 1
    for a in reversed(axes):
        a[4] = stride
        stride *= a[3] if a[3] else 1      # a zero-size dim leaves the running stride as is
    return tuple(Axis(*a) for a in axes)


def _tag_for_rank(tag, physical_rank):
    """Parse a tag given only an array's physical rank (x meta-tags need a logical rank)."""
    try:
        return parse_tag(tag)
    except ReorderError as first:
        if isinstance(tag, str) and "x" in tag:
            for n in range(1, MAX_NDIMS + 1):
                try:
                    t = parse_tag(tag, n)
                except ReorderError:
                    continue
                if len(t.axes) == physical_rank:
                    return t
        raise first from None


def _physical_letters(t):
    return "(" + " ".join(f"{b}{ABC[d]}" if b else ABC[d] for d, b in t.axes) + ")"
