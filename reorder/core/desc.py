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

import dataclasses
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

    __slots__ = ("dims", "dtype", "axes", "offset0", "tag", "region", "_key")
    dims: tuple[int, ...]
    dtype: DType
    axes: tuple[Axis, ...]
    offset0: int
    tag: Optional[Tag]
    region: Optional[tuple[int, ...]]     # offsets into the parent, for a sub-memory

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

    def _init(self, dims, dtype, axes, offset0, tag, region=None):
        # the tag and the region say how the layout was spelled; the bytes (the key) do not
        # depend on them
        for name, value in (("dims", dims), ("dtype", dtype), ("axes", axes),
                            ("offset0", offset0), ("tag", tag), ("region", region)):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_key", (dims, dtype.name, axes, offset0))

    @classmethod
    def _from_axes(cls, dims, dtype, axes, offset0=0, tag=None, region=None):
        self = object.__new__(cls)
        self._init(tuple(dims), as_dtype(dtype), tuple(axes), offset0, tag, region)
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
        return (Desc._from_axes, (self.dims, self.dtype.name, self.axes, self.offset0, self.tag,
                                  self.region))

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

    # -- views of the same bytes (oneDNN's permute_axes, reshape, create_submemory) ----------
    def permute_axes(self, perm: Sequence[int]) -> Desc:
        """The same bytes with the logical dims renumbered, as `dnnl_memory_desc_permute_axes`:
        logical dim i of this descriptor becomes dim perm[i] of the result, so
        result.offset(j) == self.offset(i) when j[perm[k]] == i[k]. Swapping O and I
        (perm (1, 0, 2, 3)) turns `OIhw16i16o` weights into `IOhw16o16i` ones for a
        deconvolution without moving a byte."""
        perm = _check_perm(perm, self.ndim)
        dims = [0] * self.ndim
        for d, p in enumerate(perm):
            dims[p] = self.dims[d]
        axes = tuple(a._replace(dim=perm[a.dim]) for a in self.axes)
        region = None
        if self.region is not None:
            region = [0] * self.ndim
            for d, p in enumerate(perm):
                region[p] = self.region[d]
            region = tuple(region)
        return Desc._from_axes(dims, self.dtype, axes, self.offset0,
                               self._tag_for(axes, self.ndim), region)

    def reshape(self, dims: Sequence[int]) -> Desc:
        """The same bytes seen with other logical dims, as `dnnl_memory_desc_reshape`.

        Dims are grouped from the innermost (last) one outwards into the smallest groups of
        equal element count. A group may add or drop a size-1 dim (not one padded by a block),
        keep a dim, or split / merge dims; a merge needs the merged dims dense over each other
        in row-major order (each outer stride = the next dim's size x its stride).

        Blocked dims: unlike oneDNN (3.2 refuses any split or merge that touches a blocked dim),
        a blocked dim may be split when whole blocks stay whole -- the innermost new dim is a
        multiple of the dim's block and the dim is not padded -- so `OIhw16i16o` 64x32x3x3
        reshapes to `gOIhw16i16o` 2x32x32x3x3; the inverse merge (a blocked dim innermost
        in its group) is allowed too. A split that cuts a block, a merge in which a blocked
        dim is not the innermost, and any split or merge of a padded dim are refused, naming
        the dim."""
        new = _check_dims(dims)
        old = self.dims
        where = f"reshape of {_fmt(old)} to {_fmt(new)}"
        if math.prod(new) != math.prod(old):
            raise ReorderError(f"{where}: {math.prod(old)} elements cannot become "
                               f"{math.prod(new)}")
        pdims = self.padded_dims
        outer = {a.dim: k for k, a in enumerate(self.axes) if a.block == 0}
        # replace[k]: the axes that take the place of input axis k; before[k]: new size-1
        # dims inserted in front of it (key None: after the last outer axis)
        replace = {k: [] for k in range(len(self.axes))}
        before = {}
        ie, oe = len(old), len(new)
        while ie or oe:
            if ie and old[ie - 1] == 1:
                d = ie - 1
                if pdims[d] == 1:                       # drop a size-1 dim
                    ie -= 1
                    continue
                if not (oe and new[oe - 1] == 1):
                    raise ReorderError(f"{where}: dim {d} has size 1 but is padded to "
                                       f"{pdims[d]} by its block of {self.block_size(d)}, so "
                                       f"it can only stay a size-1 dim; the new dims put "
                                       f"{new[oe - 1] if oe else 'nothing'} there")
                self._relabel(replace, d, oe - 1)
                ie, oe = ie - 1, oe - 1
                continue
            if oe and new[oe - 1] == 1:                 # add a size-1 dim
                before.setdefault(outer[ie] if ie < len(old) else None, []).append(oe - 1)
                oe -= 1
                continue
            if not ie or not oe:
                raise ReorderError(f"{where}: dims {_fmt(old[:ie])} and new dims "
                                   f"{_fmt(new[:oe])} have no common grouping; a size-0 dim "
                                   f"can only stay a size-0 dim")
            ib, ob = ie - 1, oe - 1
            iv, ov = old[ib], new[ob]
            while iv != ov:
                if iv < ov and ib > 0:
                    ib -= 1
                    iv *= old[ib]
                elif ov < iv and ob > 0:
                    ob -= 1
                    ov *= new[ob]
                else:
                    break
                if iv == 0 or ov == 0:
                    break
            if iv != ov or (iv == 0 and (ie - ib > 1 or oe - ob > 1)):
                raise ReorderError(f"{where}: dims {ib}..{ie - 1} ({_fmt(old[ib:ie])}) and "
                                   f"new dims {ob}..{oe - 1} ({_fmt(new[ob:oe])}) have no "
                                   f"common grouping; a size-0 dim can only stay a size-0 dim")
            if ie - ib == 1 and oe - ob == 1:
                self._relabel(replace, ib, ob)
            else:
                self._regroup(replace, outer, ib, ie, new, ob, oe, where)
            ie, oe = ib, ob
        axes = []
        last_outer = max(outer.values())
        for k, a in enumerate(self.axes):
            axes.extend(Axis(d, 0, 1, 1, None) for d in sorted(before.get(k, ())))
            axes.extend(replace[k])
            if k == last_outer:
                axes.extend(Axis(d, 0, 1, 1, None) for d in sorted(before.get(None, ())))
        # a new size-1 axis may have any stride; give it the one its tag would (the next
        # axis' stride times its extent), so a reshaped tag layout equals the tag built directly
        fixed = []
        for a in reversed(axes):
            if a.stride is None:
                nxt = fixed[0] if fixed else None
                a = a._replace(stride=nxt.stride * (nxt.extent or 1) if nxt else 1)
            fixed.insert(0, a)
        axes = tuple(fixed)
        return Desc._from_axes(new, self.dtype, axes, self.offset0,
                               self._tag_for(axes, len(new)))

    def _relabel(self, replace, d, to):
        for k, a in enumerate(self.axes):
            if a.dim == d:
                replace[k].append(a._replace(dim=to))

    def _regroup(self, replace, outer, ib, ie, new, ob, oe, where):
        """Split / merge input dims ib..ie-1 into new dims ob..oe-1 (a group of one size)."""
        old = self.dims
        group = f"dims {ib}..{ie - 1} ({_fmt(old[ib:ie])}) into {_fmt(new[ob:oe])}"
        for d in range(ib, ie - 1):
            if self.blocks(d):
                raise ReorderError(f"{where}: dim {d} (size {old[d]}) is blocked by "
                                   f"{self.block_size(d)} and is not the innermost dim of the "
                                   f"merge of {group}; its blocks would not stay whole")
        blk = self.block_size(ie - 1)
        if blk > 1:
            if self.padded_dims[ie - 1] != old[ie - 1]:
                raise ReorderError(f"{where}: dim {ie - 1} (size {old[ie - 1]}) is padded to "
                                   f"{self.padded_dims[ie - 1]} by its block of {blk}; a padded "
                                   f"dim cannot be split or merged")
            if new[oe - 1] % blk:
                raise ReorderError(f"{where}: splitting dim {ie - 1} (size {old[ie - 1]}, "
                                   f"blocked by {blk}) into {_fmt(new[ob:oe])} cuts its blocks: "
                                   f"the innermost new dim {oe - 1} (size {new[oe - 1]}) is not a "
                                   f"multiple of {blk}")
        # the outer axes of the group, innermost first, must step through memory as one
        # row-major run (size-1 axes step nowhere, so their strides are free)
        base = None
        span = 1
        for d in range(ie - 1, ib - 1, -1):
            a = self.axes[outer[d]]
            if a.extent != 1:
                if base is None:
                    base = a.stride
                elif a.stride != base * span:
                    raise ReorderError(
                        f"{where}: dims {ib}..{ie - 1} are not dense over each other (dim "
                        f"{d} has stride {a.stride}, dense would be {base * span}), so "
                        f"{group} is not a view of the same bytes")
            span *= a.extent
        if base is None:
            base = self.axes[outer[ie - 1]].stride
        sizes = list(new[ob:oe])
        sizes[-1] //= blk
        stride = base
        made = []
        for j in range(len(sizes) - 1, -1, -1):
            made.append(Axis(ob + j, 0, blk if j == len(sizes) - 1 else 1, sizes[j], stride))
            stride *= sizes[j]
        made.reverse()
        first = min(outer[d] for d in range(ib, ie))
        replace[first].extend(made)
        for k, a in enumerate(self.axes):
            if a.block and a.dim == ie - 1:
                replace[k].append(a._replace(dim=oe - 1))

    def submemory(self, dims: Sequence[int], offsets: Sequence[int]) -> Desc:
        """A region of this layout, as `dnnl_memory_desc_create_submemory`: logical size `dims`
        starting at logical index `offsets`, with this descriptor's strides and blocks and
        offset0 moved to the region's first element, so result.offset(i) ==
        self.offset(i + offsets). Reading it takes the parent's whole buffer, flat:
        `reorder(parent.reshape(-1), sub, "nchw")`.

        Along a blocked dim the offset must be a multiple of the block, and the region must
        end at a block boundary or at the parent's end: a region's padding (up to the next
        block boundary) is zero-filled by whoever writes it, so it must be the parent's own
        padding, not parent data. oneDNN also accepts a region shorter than one block that
        stops inside a block (its padded dims then equal its dims); this library refuses it,
        naming the dim."""
        sizes = _check_region(dims, "dims", self.ndim)
        starts = _check_region(offsets, "offsets", self.ndim)
        for d, (n, o) in enumerate(zip(sizes, starts)):
            if n < 0:
                raise ReorderError(f"sub-memory dims {sizes}: dim {d} has a negative size {n}")
            if o < 0:
                raise ReorderError(f"sub-memory offsets {starts}: dim {d} has a negative offset "
                                   f"{o}")
            if o + n > self.dims[d]:
                raise ReorderError(f"sub-memory of dim {d}: offset {o} + size {n} = {o + n} "
                                   f"runs past the parent's size {self.dims[d]}")
            blk = self.block_size(d)
            if o % blk:
                raise ReorderError(f"sub-memory offset {o} of dim {d} is not a multiple of the "
                                   f"dim's block of {blk}")
            if (o + n) % blk and o + n != self.dims[d]:
                raise ReorderError(
                    f"sub-memory of dim {d} ends at {o + n}, inside a block of {blk}, before the "
                    f"parent's end ({self.dims[d]}): its padding up to "
                    f"{-(-(o + n) // blk) * blk} would be the parent's data")
        offset0 = self.offset0
        axes = []
        for a in self.axes:
            if a.block == 0:
                blk = self.block_size(a.dim)
                offset0 += starts[a.dim] // blk * a.stride
                a = a._replace(extent=-(-sizes[a.dim] // blk))
            axes.append(a)
        if offset0 < 0:
            raise ReorderError(f"sub-memory at offsets {starts} starts {-offset0} elements "
                               f"before the parent's element 0 (negative strides): describe "
                               f"the parent from its buffer's start (offset0=)")
        return Desc._from_axes(sizes, self.dtype, axes, offset0, self.tag, starts)

    def _tag_for(self, axes, ndims):
        """The tag of a view: the same axis order and blocks, relettered (None if strided)."""
        if self.tag is None:
            return None
        t = parse_tag(spell(ndims, tuple((a.dim, a.block) for a in axes)))
        return dataclasses.replace(t, spelling=t.alias)     # IOhw16o16i rather than BAcd16a16b

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
            layout = f"strides={self.strides}"
            if self.is_blocked:     # a strided view of a blocked layout keeps its blocks
                layout = f"{spell(self.ndim, tuple((a.dim, a.block) for a in self.axes))} {layout}"
        else:
            own = self.tag is not None and self.tag.abc == abc
            alias = self.tag.spelling if own else parse_tag(abc).alias
            layout = abc if alias == abc else f"{alias} = {abc}"
        if self.offset0:
            layout += f", offset0={self.offset0}"
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
        if self.region is not None:
            lines.append(f"  sub-memory at offsets {self.region} of its parent: element 0 is "
                         f"element {self.offset0} of the parent's buffer")
        elif self.offset0:
            lines.append(f"  element 0 is element {self.offset0} of the buffer (offset0)")
        return "\n".join(lines)


def _check_perm(perm, ndims):
    try:
        perm = tuple(operator.index(p) for p in perm)
    except TypeError:
        raise TypeError(f"perm must be a sequence of integers, got {perm!r}") from None
    if len(perm) != ndims:
        raise ReorderError(f"perm {perm} has {len(perm)} entries but the descriptor has "
                           f"{ndims} dims")
    for p in perm:
        if not 0 <= p < ndims:
            raise ReorderError(f"perm {perm}: {p} is not a dim of a {ndims}-dim descriptor")
    seen = [p for i, p in enumerate(perm) if p in perm[:i]]
    if seen:
        raise ReorderError(f"perm {perm} is not a permutation: dim {seen[0]} appears twice")
    return perm


def _check_region(values, what, ndims):
    try:
        values = tuple(operator.index(v) for v in values)
    except TypeError:
        raise TypeError(f"sub-memory {what} must be a sequence of integers, got "
                        f"{values!r}") from None
    if len(values) != ndims:
        raise ReorderError(f"sub-memory {what} {values} has {len(values)} entries but the "
                           f"parent has {ndims} dims")
    return values


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
