"""The image catalogue: every kind of image (or packed buffer) MACE and MNN make, by name, and
its geometry (the image's width and height for a tensor's logical dims)."""
import math
import operator
from types import MappingProxyType
from typing import NamedTuple

import numpy as np

from ..core.desc import Desc
from ..core.errors import ReorderError
from ..core.index_map import as_index_map, is_index_map


class Kind(NamedTuple):
    name: str
    engine_name: str     # MACE BufferContentType / MNN OpenCLBufferFormat name
    dims: str            # logical dims, in order
    tag: str             # blocked layout of the packed data (over `dims`; Winograd: over r,c,o,i)
    split: int           # physical axes [:split] form the rows, the rest (minus lanes) the columns
    layout: str          # default source layout (and destination layout of the inverse)
    winograd: int = 0    # output tile b of a Winograd filter, else 0
    buffer: bool = False  # a packed buffer, not an image
    engines: tuple = ("mace", "mnn")   # the engines whose image this is, bit for bit

    @property
    def rank(self):
        return len(self.dims)

    @property
    def invertible(self):
        return not self.winograd


_MACE = ("mace",)
_KINDS = [
    Kind("channel", "IN_OUT_CHANNEL", "nchw", "acBd4b", 2, "nchw"),
    Kind("height", "IN_OUT_HEIGHT", "nchw", "aCbd4c", 2, "nchw", engines=_MACE),
    Kind("width", "IN_OUT_WIDTH", "nchw", "acbD4d", 2, "nchw", engines=_MACE),
    Kind("conv2d_filter", "CONV2D_FILTER", "oihw", "Acdb4a", 3, "oihw", engines=_MACE),
    Kind("dw_conv2d_filter", "DW_CONV2D_FILTER", "mihw", "aBcd4b", 2, "abcd"),
    Kind("argument", "ARGUMENT", "l", "A4a", 0, "a"),
    Kind("weight_height", "WEIGHT_HEIGHT", "oihw", "Acdb4a", 1, "oihw", engines=_MACE),
    Kind("weight_width", "WEIGHT_WIDTH", "oihw", "acdB4b", 1, "oihw", engines=_MACE),
    Kind("winograd2", "WINOGRAD_FILTER", "oihw", "abcD4d", 3, "oihw", winograd=2, engines=_MACE),
    Kind("winograd4", "WINOGRAD_FILTER", "oihw", "abcD4d", 3, "oihw", winograd=4, engines=_MACE),
    Kind("winograd6", "WINOGRAD_FILTER", "oihw", "abcD4d", 3, "oihw", winograd=6, engines=_MACE),
    Kind("nc4hw4", "NC4HW4_BUFFER", "nchw", "Bacd4b", 3, "nchw", buffer=True, engines=("mnn",)),
]
#: Every image kind by name, as MACE lays it out (engine="mace", the default).
KINDS = MappingProxyType({k.name: k for k in _KINDS})
#: The kinds whose MNN layout differs from MACE's (engine="mnn"). MNN's convolution pads I
#: to a multiple of 4 before packing its filter, so the image is ROUND_UP(I, 4) wide and the
#: extra columns are zero (source/backend/opencl/execution/image/ConvExecution.cpp).
MNN_KINDS = MappingProxyType({
    "conv2d_filter": Kind("conv2d_filter", "CONV2D_FILTER", "oihw", "AcdB4b4a", 3, "oihw",
                          engines=("mnn",)),
})
ENGINES = ("mace", "mnn")

# MACE's enum names (any case) work too
_ALIASES = {"in_out_channel": "channel", "in_out_height": "height", "in_out_width": "width",
            "nc4hw4_buffer": "nc4hw4"}


def _map_kind(index_map, dims):
    """The image an index map describes, for logical `dims`: one AXIS_SEPARATOR between the
    rows and the columns, the last output a 4-lane block (RGBA). The map's indices are the
    tensor's axes, so its source layout is plain (abcd)."""
    m = as_index_map(index_map)
    if len(m.axis_separators) != 1:
        raise ReorderError(f"an image map has one AXIS_SEPARATOR, between rows and columns; "
                           f"{m!r} has {len(m.axis_separators)}")
    try:
        dims = tuple(operator.index(d) for d in dims)
    except TypeError:
        raise TypeError(f"dims must be a sequence of integers, got {dims!r}") from None
    lay = m.layout(dims)
    desc = m.desc(dims)
    last = lay.groups[-1]
    if len(last) != 1 or desc.axes[last[0]].block != 4:
        raise ReorderError(f"the last output of an image map is its 4 RGBA lanes, a block of 4 "
                           f"such as `c % 4`; {m!r} ends with `{m.final_indices[-1]}`")
    if desc.tag is None:
        raise ReorderError(f"{m!r} orders the blocks of an index against their weights; an image "
                           f"map needs a layout a tag can spell")
    split = sum(len(g) for g in lay.groups[:m.axis_separators[0]])
    return Kind("index map", repr(m), tuple(m.initial_indices), desc.tag.abc, split,
                "abcdefghijkl"[:len(dims)], engines=ENGINES)


def _kind(kind, engine="mace", dims=None):
    if is_index_map(kind):
        if dims is None:
            raise ReorderError("an image described by an index map needs the tensor's dims")
        return _map_kind(kind, dims)
    if engine not in ENGINES:
        raise ReorderError(f"engine must be one of {', '.join(map(repr, ENGINES))}, got {engine!r}")
    if isinstance(kind, Kind):
        return kind
    if not isinstance(kind, str):
        raise TypeError(f"kind must be a string such as 'channel', got {type(kind).__name__}")
    key = kind.strip().lower().replace("-", "_")
    key = _ALIASES.get(key, key)
    if engine == "mnn" and key in MNN_KINDS:
        return MNN_KINDS[key]
    if key in KINDS:
        k = KINDS[key]
        if engine == "mnn" and engine not in k.engines:
            mnn = sorted(n for n, v in KINDS.items() if "mnn" in v.engines) + list(MNN_KINDS)
            raise ReorderError(f"MNN has no {k.name} image (MACE's {k.engine_name}); with "
                               f"engine='mnn' the kinds are: {', '.join(sorted(set(mnn)))}")
        return k
    hint = ("; the Winograd filter needs its tile size: winograd2, winograd4 or winograd6"
            if key.startswith("winograd") else "")
    raise ReorderError(f"unknown image kind {kind!r}{hint}; valid kinds: {', '.join(KINDS)}")


def _fmt(shape):
    return "(" + ", ".join(str(d) for d in shape) + ")"


def _check_dims(k, dims):
    """Logical dims of kind k as a tuple of positive ints (an argument may be given as L)."""
    if dims is None:
        raise ReorderError(f"a {k.name} image needs dims ({', '.join(k.dims)})")
    if k.name == "argument" and np.ndim(dims) == 0:
        dims = (dims,)
    try:
        dims = tuple(int(d) for d in dims)
    except TypeError:
        raise TypeError(f"dims must be a sequence of integers, got {dims!r}") from None
    if k.name == "argument" and len(dims) > 1:
        if any(d != 1 for d in dims[1:]):
            raise ReorderError(f"an argument image takes [L] or [L, 1, ...]; dims {_fmt(dims)} "
                               f"have a trailing dim other than 1")
        dims = dims[:1]
    if len(dims) != k.rank:
        raise ReorderError(f"a {k.name} image takes {k.rank}-D dims ({', '.join(k.dims)}), "
                           f"got {len(dims)}-D dims {_fmt(dims)}")
    if any(d < 1 for d in dims):
        raise ReorderError(f"dims {_fmt(dims)} of a {k.name} image must all be >= 1")
    if k.name == "dw_conv2d_filter" and dims[0] != 1:
        raise ReorderError(f"a depthwise filter image holds multiplier M = 1 only; dims "
                           f"{_fmt(dims)} have M = {dims[0]} (MACE would silently give zeros)")
    if k.winograd and dims[2:] != (3, 3):
        raise ReorderError(f"a Winograd filter image takes a 3x3 filter (O, I, 3, 3); dims "
                           f"{_fmt(dims)} have a {dims[2]}x{dims[3]} kernel")
    return dims


def _geometry(k, dims):
    """(width, height, physical shape) of kind k for logical dims `dims` (already checked)."""
    if k.winograd:
        t = k.winograd + 2
        o, i = dims[:2]
        packed = Desc((t, t, o, i), "f32", k.tag)
    else:
        packed = Desc(dims, "f32", k.tag)
    phys = packed.physical_shape
    height = math.prod(phys[:k.split])
    width = math.prod(phys[k.split:-1])
    return width, height, phys


def image_shape(kind, dims, *, engine="mace"):
    """(width, height) in pixels of the image of `kind` holding a tensor of logical `dims`
    (n, c, h, w for activations; o, i, h, w for filters; m, i, h, w for depthwise; (L,) for an
    argument). For the nc4hw4 buffer, the shape of its (rows, columns) view. The host array
    of the image is (height, width, 4)."""
    k = _kind(kind, engine)
    width, height, _ = _geometry(k, _check_dims(k, dims))
    return width, height
