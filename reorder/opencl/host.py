"""Host packing: a tensor in any layout into the (height, width, 4) array of an image, and
back, each one planned reorder. Needs only numpy."""
import numpy as np

from ..front.api import reorder
from ..core.desc import Desc
from ..core.dtypes import dtype_of_numpy
from ..core.errors import ReorderError
from ..core.tags import parse_tag
from ..core.index_map import is_index_map
from .kinds import _check_dims, _fmt, _geometry, _kind
from .winograd import winograd_transform

# Source layouts that only the image engines name.
_LAYOUT_ALIASES = {"nc4hw4": "Bacd4b", "mihw": "abcd", "l": "a"}


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


def to_image_array(x, kind, *, layout=None, dims=None, out=None, engine="mace", threads=None):
    """Pack `x` into the C-contiguous host array (height, width, 4) of an image of `kind`.

    kind    an image kind ("channel", "conv2d_filter", ...), or an index map (IndexMap or
            function) with one AXIS_SEPARATOR between rows and columns and a 4-lane block last,
            `lambda n, c, h, w: [n, h, AXIS_SEPARATOR, c // 4, w, c % 4]` (= "channel"); x's
            axes are then the map's indices.
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
    x = _as_numpy(x)
    k = _kind(kind, engine, _map_dims(kind, x, layout, dims))
    src, arr = _source(x, k, layout, dims)
    return _pack(k, src, arr, out, threads)


def _map_dims(kind, x, layout, dims):
    """For an index-map kind: the tensor's dims, which are x's axes (the map's indices)."""
    if not is_index_map(kind):
        return None
    if layout is not None:
        raise ReorderError("with an index map, x's axes are the map's indices; layout= does "
                           "not apply")
    return x.shape if dims is None else dims


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
    k = _kind(kind, engine, dims)
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
