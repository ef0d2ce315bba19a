"""Front ends: `reorder()`, `plan()` and `quantize()`. Everything goes through the planner."""
from typing import NamedTuple

import numpy as np

from .._convert import finish_compensation
from .._kernels import data_address
from ..plan.binding import bind_out, check_dst, is_whole
from ..core.attrs import _comp_kinds, make_attrs
from ..kernels.convert import call_values
from ..core.desc import Desc, _fmt
from ..core.dtypes import dtype_of_numpy, as_dtype
from . import interop
from ..quant import lowbit
from ..quant.results import Quantized
from ..core.errors import ReorderError
from ..core.index_map import as_index_map, is_index_map
from ..plan.cache import (QUANTIZE_CALLS, REORDER_CALLS, REORDER_CALLS_WITH_ATTRS,
                          cached_plan)

__all__ = ["reorder", "plan", "quantize", "Quantized", "as_array"]


def as_array(x):
    """numpy view of `x` (an ndarray, anything with __array__, or a CPU __dlpack__ tensor of
    any dtype, bf16 and f8 included), never a copy of an ndarray."""
    arr = interop.read(x)
    try:
        dtype_of_numpy(arr.dtype)   # TypeError for object/string arrays, ReorderError for others
    except TypeError:
        if arr.dtype.type.__module__ == "ml_dtypes":      # f8 and friends from DLPack
            raise TypeError(f"reorder() has no {arr.dtype} data type; rearrange() moves "
                            f"{arr.dtype} tensors as bytes") from None
        raise
    return arr


def _check_desc_args(src, dims, src_dtype):
    """dims= and src_dtype= beside a source Desc must say what it says."""
    if dims is not None and tuple(dims) != src.dims:
        raise ReorderError(f"dims={_fmt(dims)} disagrees with the source descriptor {src!r}")
    if src_dtype is not None and as_dtype(src_dtype) != src.dtype:
        raise ReorderError(f"src_dtype={as_dtype(src_dtype).name} disagrees with the source "
                           f"descriptor {src!r}")


def _src_desc(x, src, dims, src_dtype):
    """Descriptor of the source array, and the array the plan binds to it."""
    if isinstance(src, Desc):
        _check_desc_args(src, dims, src_dtype)
        return src, (x if src_dtype is None else _read_as(x, _dtype_for(x, src_dtype)))
    dtype = _dtype_for(x, src_dtype)
    x = _read_as(x, dtype)
    if x.ndim == 1 and dims is not None and (len(dims) > 1 or Desc(dims, dtype, src).is_blocked):
        # a flat buffer holding a (usually blocked) layout
        desc = Desc(dims, dtype, src)
        if not x.flags.c_contiguous or x.size != desc.nelems:
            raise ReorderError(f"a flat source for {desc!r} must be a contiguous buffer of "
                               f"{desc.nelems} elements, got {x.size}")
        return desc, x
    desc = Desc.of(x, src, dims=dims, dtype=dtype)
    return desc, x


def _dst_desc(src_desc, dst, dtype=None):
    if is_index_map(dst):
        # an index map over the source's logical dims (traced anew each call)
        return as_index_map(dst).desc(src_desc.dims, src_desc.dtype if dtype is None
                                      else as_dtype(dtype))
    if isinstance(dst, Desc):
        check_dst(dst)          # here, so the message shows the caller's own Desc
        if dst.dims != src_desc.dims:
            raise ReorderError(f"dst descriptor dims {_fmt(dst.dims)} differ from the source's "
                               f"{_fmt(src_desc.dims)}")
        if dtype is not None and as_dtype(dtype) != dst.dtype:
            raise ReorderError(f"dtype={as_dtype(dtype).name} disagrees with the dst descriptor "
                               f"{dst!r}")
        return dst
    return Desc(src_desc.dims, src_desc.dtype if dtype is None else as_dtype(dtype), dst)


def _with_strides(desc, view):
    """`desc` over the numpy view `view` of the same shape: its strides, in elements."""
    axes = tuple(a._replace(stride=s // view.itemsize) for a, s in zip(desc.axes, view.strides))
    return Desc._from_axes(desc.dims, desc.dtype, axes, desc.offset0, desc.tag)


def _strided_out_desc(src_desc, dst, dtype, out):
    """The destination Desc of a strided `out=` view (steps, negative or transposed strides):
    dst's layout with out's own strides, so the kernels write into the view and nothing else
    of its base changes."""
    ddesc = _dst_desc(src_desc, dst, dtype)
    if ddesc.is_blocked:
        raise ReorderError(f"out must be C-contiguous for the blocked destination {ddesc!r}; "
                           f"a strided out= takes plain layouts, and a region of a blocked "
                           f"array is written through a sub-memory Desc with its whole array "
                           f"as out=")
    if out.shape != ddesc.physical_shape:
        raise ReorderError(f"out has shape {_fmt(out.shape)}, but {ddesc.name} of "
                           f"{_fmt(ddesc.dims)} needs {_fmt(ddesc.physical_shape)}")
    bad = [s for s in out.strides if s % out.itemsize]
    if bad:
        raise ReorderError(f"out has byte strides {out.strides}, not multiples of its "
                           f"{out.itemsize}-byte elements; a strided out= must step by whole "
                           f"elements")
    return _with_strides(ddesc, out)


class _FlippedCall(NamedTuple):
    """A call into an out= view with reversed axes, run as the source reversed along the same
    logical dims into the view with those axes turned forwards (views of x and out only)."""
    x_index: tuple          # per source axis: slice(None, None, -1) to reverse it, else slice()
    out_index: tuple        # the same per axis of out
    plan: object = None     # the plan of the two forward views

    @property
    def src(self):
        """The plan's source Desc (the fast lookup reads the dtype from it)."""
        return self.plan.src

    def __call__(self, x, out, threads=None):
        self.plan(x[self.x_index], out=out[self.out_index], threads=threads)
        return out


def _flip_onto_source(sdesc, arr, ddesc, out, attrs):
    """A `_FlippedCall` (without its plan) when every reversed axis of the plain strided
    destination `ddesc` (out's view) can move onto the source: a plain source that `arr`
    holds exactly, one physical axis per logical dim on both sides, and no scale that
    varies along a reversed dim (its values would be met in reverse). Else None."""
    if not sdesc.is_plain or sdesc.offset0 or sdesc.region is not None or ddesc.offset0 \
            or ddesc.region is not None or len(ddesc.axes) != out.ndim \
            or len(sdesc.axes) != arr.ndim or arr.shape != tuple(a.extent for a in sdesc.axes) \
            or any(s != a.stride * arr.itemsize for a, s in zip(sdesc.axes, arr.strides)):
        return None
    src_axis = {a.dim: k for k, a in enumerate(sdesc.axes)}
    if len(src_axis) != arr.ndim or len({a.dim for a in ddesc.axes}) != out.ndim:
        return None
    back = slice(None, None, -1)
    x_index, out_index, mask = [slice(None)] * arr.ndim, [slice(None)] * out.ndim, 0
    for k, a in enumerate(ddesc.axes):
        if a.stride < 0 and a.extent > 1:
            out_index[k] = x_index[src_axis[a.dim]] = back
            mask |= 1 << a.dim
    if attrs is not None and (attrs.src_mask | attrs.dst_mask) & mask:
        return None
    return _FlippedCall(tuple(x_index), tuple(out_index))


def _attrs(src_scales, src_scale_mask, dst_scales, dst_scale_mask, src_zero_point,
           dst_zero_point, sum_beta):
    """Conversion attributes, or None when no keyword asks for one."""
    if (src_scales is None and src_scale_mask is None and dst_scales is None
            and dst_scale_mask is None and src_zero_point is None and dst_zero_point is None
            and sum_beta is None):
        return None
    return make_attrs(src_scales=src_scales, src_scale_mask=src_scale_mask,
                      dst_scales=dst_scales, dst_scale_mask=dst_scale_mask,
                      src_zero_point=src_zero_point, dst_zero_point=dst_zero_point,
                      sum_beta=sum_beta)


def _read_as(x, dtype):
    """x, its bytes read as `dtype`: `src_dtype=` states what an array's bytes mean (uint16
    words as bf16 or f16, int8 as u8); _dtype_for has checked that the sizes agree."""
    return x if x.dtype in dtype.numpy_dtypes else x.view(dtype.storage)


def _dtype_for(arr, dtype):
    if dtype is None:
        return dtype_of_numpy(arr.dtype)
    d = as_dtype(dtype)
    if d.itemsize != arr.dtype.itemsize:
        raise ReorderError(f"dtype={d.name} has {d.itemsize}-byte elements but the array is "
                           f"{arr.dtype} ({arr.dtype.itemsize} bytes)")
    return d


def _lowbit_wanted(arr, src, dst, src_dtype, dtype, groups, zps, packed):
    """True when a call goes through reorder.lowbit: a low-bit type on either side, groups,
    zero points per element of a mask (arrays of more than one value), or packed= given."""
    if packed is not None or any(g is not None for g in groups) \
            or any(z is not None and np.size(z) > 1 for z in zps):
        return True
    names = [as_dtype(t).name for t in (src_dtype, dtype) if t is not None]
    names += [d.dtype.name for d in (src, dst) if isinstance(d, Desc)]
    if src_dtype is None and not isinstance(src, Desc):
        try:
            names.append(dtype_of_numpy(arr.dtype).name)
        except (ReorderError, TypeError):
            pass
    return any(n in lowbit.LOWBIT for n in names)


def _reorder_lowbit(arr, src, dst, dims, out, threads, src_dtype, dtype, packed, src_scales,
                    src_scale_mask, dst_scales, dst_scale_mask, src_zero_point, dst_zero_point,
                    sum_beta, src_groups, dst_groups):
    if sum_beta is not None:
        raise ReorderError("sum_beta is not supported with low-bit types or groups")
    src_packed = (src_dtype is not None and arr.dtype == np.uint8
                  and as_dtype(src_dtype).name in ("s4", "u4"))
    if src_packed:
        if isinstance(src, Desc):
            _check_desc_args(src, dims, src_dtype)
            sdesc = src
        elif dims is None:
            raise ReorderError(f"a packed {as_dtype(src_dtype).name} buffer needs dims=")
        else:
            sdesc = Desc(dims, src_dtype, src)
    else:
        sdesc, arr = _src_desc(arr, src, dims, src_dtype)
    ddesc = _dst_desc(sdesc, dst, dtype)
    if not is_whole(ddesc):
        # the low-bit paths pack and plan through byte proxies of whole arrays
        raise ReorderError(f"the destination must be a whole C-contiguous array for low-bit "
                           f"types and groups; {ddesc!r} has strides {ddesc.physical_strides} "
                           f"and offset0={ddesc.offset0}. Reorder into a whole array, then copy")
    if packed is None:      # like for like: an unpacked int4 array gives an unpacked result
        packed = src_packed or sdesc.dtype.name not in ("s4", "u4")
    sq = lowbit.Quant("src", sdesc.dims, src_scales, src_zero_point, src_scale_mask, src_groups)
    dq = lowbit.Quant("dst", sdesc.dims, dst_scales, dst_zero_point, dst_scale_mask, dst_groups)
    return lowbit.reorder_lowbit(arr, sdesc, ddesc, packed_src=src_packed, packed=packed,
                                 squant=sq, dquant=dq, out=out, threads=threads)


@interop.returns_like_input
def reorder(x, src, dst, *, dims=None, out=None, threads=None, src_dtype=None, dtype=None,
            src_scales=None, src_scale_mask=None, dst_scales=None, dst_scale_mask=None,
            src_zero_point=None, dst_zero_point=None, sum_beta=None, src_groups=None,
            dst_groups=None, packed=None):
    """Move `x` from layout `src` to layout `dst`; returns a new C-contiguous array in dst's
    physical shape, or `out`. A torch (or jax) tensor comes back as one, zero-copy.

    x       numpy array (or __array__ / CPU __dlpack__ object). For a plain tag its axes are
            the tag's memory axes (an 'nhwc' array has shape (N, H, W, C)) and any strides
            work. A blocked source is its physical shape (N, C/16, H, W, 16) or a flat buffer
            with `dims=`.
    src/dst tags ('nchw', 'nChw16c', 'aBcd16b', 'NCHW16c', 'OIhw4i16o4i', ...) or Descs.
    dims    logical dims (N, C, H, W order), needed when blocking hides them (C=17 in nChw16c).
    out     preallocated result (exact shape/dtype, C-contiguous, writable, not overlapping x);
            for a plain dst also any numpy view with steps (only the view is written), and
            for a sub-memory dst Desc the parent's whole array (only the region is written;
            docs/how-to/write-into-part.md).
    threads thread count for this call (see reorder.set_num_threads).
    src_dtype  data type of x when numpy cannot name it ('bf16' for uint16 words).
    dtype   data type of the result ('s8', 'bf16', np.float16, ...); default: x's. The
            conversion happens in the kernel: f32 arithmetic, saturation, then round half
            to even (docs/int8.md).
    src_scales, src_scale_mask, dst_scales, dst_scale_mask
            oneDNN scales: one number (mask 0), or values along the dims of the mask (bit d
            = varies along logical dim d; masks 1, 2, 3, ...). v = src_scale * (x - src_zp) ...
            / dst_scale + dst_zp.
    src_zero_point, dst_zero_point  common zero points of integer tensors (s8, u8, s32).
    sum_beta  add beta * the old destination (pass it as out=) before the dst scale.
    src_groups, dst_groups  oneDNN's scale/zero-point groups (g0, g1) for the last two dims:
            scales (f32, bf16, f16) and zero points (s8, u8, s4, u4, s32 arrays) per group
            (docs/int8.md, "Low-bit types").
    packed  s4/u4 results as a packed uint8 buffer, two values a byte in oneDNN's order
            (default, except for an unpacked int4 source) or, with False, one value a byte
            (ml_dtypes int4/uint4). A packed source is a uint8 buffer with src_dtype='s4'
            and dims=.

    Padding in the destination is always exactly zero. Inputs are never modified.

    >>> y = reorder(np.zeros((2, 17, 5, 5), np.float32), "nchw", "nChw16c")
    >>> y.shape
    (2, 2, 5, 5, 16)
    """
    no_attrs = (src_scales is None and src_scale_mask is None and dst_scales is None
                and dst_scale_mask is None and src_zero_point is None and dst_zero_point is None
                and sum_beta is None)
    tags = type(src) is str and type(dst) is str and src_groups is None and dst_groups is None \
        and packed is None
    # a strided out= view (steps, transposed, negative strides) is its own destination
    # descriptor: the calls keyed by tags alone assume a C-contiguous out
    strided_out = type(out) is np.ndarray and not out.flags.c_contiguous
    strided_key = None
    if strided_out and tags and no_attrs and type(x) is np.ndarray:
        # a repeated call into views of one geometry: the plan by the view's strides too
        strided_key = ("strided out",) + _plain_key(x, src, dst, dims, dtype, src_dtype) + (
            out.shape, out.strides, out.dtype)
        p = REORDER_CALLS.get(strided_key)
        if p is not None:
            return p(x if src_dtype is None else _read_as(x, p.src.dtype), out=out,
                     threads=threads)
    tags = tags and not strided_out
    if tags and type(x) is np.ndarray and (no_attrs or (type(src_zero_point) in _ONE_VALUE and
                                                        type(dst_zero_point) in _ONE_VALUE)):
        # a call repeated: its key names everything the route depends on (with tags, no groups
        # and at most single zero points, a call is low-bit only through the dtypes, in the key)
        if no_attrs:
            p = REORDER_CALLS.get(_plain_key(x, src, dst, dims, dtype, src_dtype))
            if p is not None:
                return p(x if src_dtype is None else _read_as(x, p.src.dtype), out=out,
                         threads=threads)
        else:
            p = REORDER_CALLS_WITH_ATTRS.get(_attrs_key(x, src, dst, dims, dtype, src_dtype, src_scales,
                                              src_scale_mask, dst_scales, dst_scale_mask,
                                              src_zero_point, dst_zero_point, sum_beta))
            if p is not None:
                return _run_with_values(p, x, out, threads, src_dtype, src_scales, dst_scales,
                                        src_zero_point, dst_zero_point, sum_beta)
    arr = as_array(x)
    if _lowbit_wanted(arr, src, dst, src_dtype, dtype, (src_groups, dst_groups),
                      (src_zero_point, dst_zero_point), packed):
        return _reorder_lowbit(arr, src, dst, dims, out, threads, src_dtype, dtype, packed,
                               src_scales, src_scale_mask, dst_scales, dst_scale_mask,
                               src_zero_point, dst_zero_point, sum_beta, src_groups, dst_groups)
    if strided_out:
        sdesc, arr = _src_desc(arr, src, dims, src_dtype)
        ddesc = _strided_out_desc(sdesc, dst, dtype, out)
        attrs = _attrs(src_scales, src_scale_mask, dst_scales, dst_scale_mask, src_zero_point,
                       dst_zero_point, sum_beta)
        if all(a.stride >= 0 for a in ddesc.axes if a.extent > 1):
            p = cached_plan(sdesc, ddesc, None, attrs)
            if strided_key is not None:
                REORDER_CALLS.put(strided_key, p)
            return p(arr, out=out, threads=threads)
        flip = _flip_onto_source(sdesc, arr, ddesc, out, attrs)
        if flip is not None:
            # x into out[::-1] is x[::-1] into out[::-1][::-1]: reversing the source along
            # the same logical dims gives a view with forward strides, in one pass
            p = cached_plan(_with_strides(sdesc, arr[flip.x_index]),
                            _with_strides(ddesc, out[flip.out_index]), None, attrs)
            flip = flip._replace(plan=p)
            if strided_key is not None:
                REORDER_CALLS.put(strided_key, flip)
            return flip(arr, out=out, threads=threads)
        # a reversed axis the source cannot take over (a blocked source, scales along it):
        # the kernels walk destinations forwards, so the result is made whole and copied into
        # the view (a second pass; sum reads the view's old values)
        p = cached_plan(sdesc, _dst_desc(sdesc, dst, dtype), None, attrs)
        bind_out(out, ddesc, arr)           # out's dtype, writability, overlap with arr
        tmp = p.empty()
        if p._reads_dst:
            np.copyto(tmp, out)
        np.copyto(out, p(arr, out=tmp, threads=threads))
        return out
    if not no_attrs:
        # Plans are keyed by the attributes' structure (masks, value shapes, which operations);
        # the values themselves are this call's arguments, checked and handed to the runner.
        key = _attrs_key(arr, src, dst, dims, dtype, src_dtype, src_scales, src_scale_mask,
                         dst_scales, dst_scale_mask, src_zero_point, dst_zero_point, sum_beta)
        p = REORDER_CALLS_WITH_ATTRS.get(key)
        if p is None:
            attrs = _attrs(src_scales, src_scale_mask, dst_scales, dst_scale_mask,
                           src_zero_point, dst_zero_point, sum_beta)
            sdesc, arr = _src_desc(arr, src, dims, src_dtype)
            p = cached_plan(sdesc, _dst_desc(sdesc, dst, dtype), None, attrs)
            REORDER_CALLS_WITH_ATTRS.put(key, p)
            return p(arr, out=out, threads=threads)
        return _run_with_values(p, arr, out, threads, src_dtype, src_scales, dst_scales,
                                src_zero_point, dst_zero_point, sum_beta)
    if tags:
        # remembered for the next call with this key (the lookup at the top)
        key = _plain_key(arr, src, dst, dims, dtype, src_dtype)
        sdesc, arr = _src_desc(arr, src, dims, src_dtype)
        p = cached_plan(sdesc, _dst_desc(sdesc, dst, dtype))
        REORDER_CALLS.put(key, p)
        return p(arr, out=out, threads=threads)
    sdesc, arr = _src_desc(arr, src, dims, src_dtype)
    p = cached_plan(sdesc, _dst_desc(sdesc, dst, dtype))
    return p(arr, out=out, threads=threads)


_ONE_VALUE = (type(None), int, float)


def _plain_key(arr, src, dst, dims, dtype, src_dtype):
    """A call with tags and no attributes: what its plan depends on."""
    return (arr.shape, arr.strides, arr.dtype, src, dst, None if dims is None else tuple(dims),
            dtype, src_dtype)


def _attrs_key(arr, src, dst, dims, dtype, src_dtype, src_scales, src_scale_mask, dst_scales,
               dst_scale_mask, src_zero_point, dst_zero_point, sum_beta):
    """A call with attributes: what its plan depends on (not the values)."""
    return _plain_key(arr, src, dst, dims, dtype, src_dtype) + (
        _value_key(src_scales), type(src_scale_mask), src_scale_mask,
        _value_key(dst_scales), type(dst_scale_mask), dst_scale_mask,
        src_zero_point is None, dst_zero_point is None, sum_beta is None)


def _run_with_values(p, arr, out, threads, src_dtype, src_scales, dst_scales, src_zero_point,
                     dst_zero_point, sum_beta):
    """Run a plan with attributes on this call's values (checked against the plan's)."""
    values = call_values(p.attrs, p._values, src_scales, dst_scales, src_zero_point,
                         dst_zero_point, sum_beta)
    if src_dtype is not None:
        arr = _read_as(arr, p.src.dtype)
    arr, bound = p.bind(arr, out)
    p.execute(arr, bound, p.nthreads(threads), values=values)
    return bound if out is None else out


def _value_key(v):
    """What a scale argument contributes to a call's key: its kind and shape, not its values."""
    if v is None:
        return None
    t = type(v)
    if t is float or t is int:
        return t
    if t is np.ndarray:
        return (t, v.shape, v.dtype)
    try:
        return (type(v), np.shape(v), getattr(v, "dtype", None))
    except Exception:               # ragged and the like: no key, the long way reports it
        return []


def plan(src, dst, *, dims=None, src_dtype=None, threads=None, dtype=None, src_scales=None,
         src_scale_mask=None, dst_scales=None, dst_scale_mask=None, src_zero_point=None,
         dst_zero_point=None, sum_beta=None):
    """A cached `Plan` from `src` to `dst` (Descs, or tags with `dims=` and `src_dtype=`, which
    defaults to f32). With a source Desc, `dims=` and `src_dtype=` may be given but must agree
    with it, as in reorder(). `dst` may also be an IndexMap (or a function of the indices):
    its Desc over src's logical dims. Apply the plan as `plan(x, out=None)`; `plan.explain()` says what
    it will do. `dtype=` and the scale / zero-point / sum keywords are those of reorder();
    scales are part of the cache key by value."""
    if isinstance(src, Desc):
        _check_desc_args(src, dims, src_dtype)
    else:
        if dims is None:
            raise ReorderError("plan() with a tag source needs dims=")
        src = Desc(dims, "f32" if src_dtype is None else src_dtype, src)
    attrs = _attrs(src_scales, src_scale_mask, dst_scales, dst_scale_mask, src_zero_point,
                   dst_zero_point, sum_beta)
    return cached_plan(src, _dst_desc(src, dst, dtype), threads, attrs)


# ---------------------------------------------------------------------------------------------
# quantize(): int8 weights with compensation

class _QuantizePrep(NamedTuple):
    plan: object
    comp_desc: object
    comp_mask: int
    scale_adjust: float
    s8s8: bool
    zp: bool
    ncomp: int


def quantize(w, src, dst, *, src_scales=None, src_scale_mask=None, compensation=None,
             comp_mask=None, scale_adjust=1.0, dims=None, src_dtype=None, threads=None, out=None,
             scales=None, scale_mask=None, dtype=None, group_size=None, symmetric=True,
             scale_dtype="f32", zp_dtype=None, dst_scales=None, dst_zero_point=None,
             packed=True):
    """Quantize weights `w` to s8 in layout `dst`, with optional int8 compensation.

    q = saturate_round(scale_adjust * src_scales[x] * w[x])   (f32 arithmetic; oneDNN's src
    scale, spelled as in reorder())

    w             array in layout `src` (f32, f64, bf16, f16, s8, ...; as for reorder())
    src, dst      tags or Descs; a dst tag makes an s8 Desc over w's dims
    src_scales    multiplier: one number (default 1), or values per the dims of src_scale_mask
    src_scale_mask  bits of the dims the scales vary along; default 0 for one number, else
                  comp_mask (or 1, the output channels, without compensation)
    compensation  None, "s8s8" (-128 * sum q), "zp" (-sum q) or ("s8s8", "zp"); sums run over
                  the unmasked dims of the stored s8 values, padded entries are 0
    comp_mask     dims that keep their own sum: 1 (O, conv weights; the default), 3 (G and O,
                  grouped), 2 (N of 2-D matmul weights `BA16a64b4a`), 5 (3-D matmul), ...
    scale_adjust  1.0, or 0.5 for CPUs without VNNI (the conv multiplies back by 2)

    out           optional preallocated int8 array for .data (dst's physical shape)

    Returns a `Quantized` (.data, .compensation, .zp_compensation, .desc, .to_onednn_buffer()).

    Low-bit and grouped weights (dtype= 's4', 'u4', 'f8_e4m3', 'f8_e5m2', or group_size=):
    w is (..., K, N); scales and zero points per group of `group_size` consecutive K per N,
    computed from the data (symmetric: absmax; symmetric=False: min/max with a zero point)
    unless dst_scales= / dst_zero_point= give them; q = round(w * (1/scale) + zp). Returns a
    `QuantizedLowBit` (.data packed unless packed=False, .scales, .zero_points); see
    docs/int8.md.
    """
    if dtype is not None or group_size is not None:
        if compensation is not None or src_scales is not None or scales is not None:
            raise ReorderError("low-bit quantize() takes dst_scales=/dst_zero_point= (or computes "
                               "them); compensation and src_scales apply to s8 weights")
        arr = as_array(w)
        sdesc, arr = _src_desc(arr, src, dims, src_dtype)
        ddesc = _dst_desc(sdesc, dst, "s8" if dtype is None else dtype)
        return lowbit.quantize_lowbit(arr, sdesc, ddesc, group_size=group_size,
                                      symmetric=symmetric, scale_dtype=scale_dtype,
                                      zp_dtype=zp_dtype, dst_scales=dst_scales,
                                      dst_zero_point=dst_zero_point, packed=packed,
                                      src_packed=False, out=out, threads=threads)
    if scales is not None:
        if src_scales is not None:
            raise ReorderError("give the scales once: src_scales= or scales=")
        src_scales = scales
    if scale_mask is not None:
        if src_scale_mask is not None:
            raise ReorderError("give the scale mask once: src_scale_mask= or scale_mask=")
        src_scale_mask = scale_mask
    scales, scale_mask = (1.0 if src_scales is None else src_scales), src_scale_mask
    arr = as_array(w)
    key = _quantize_key(arr, src, dst, scales, scale_mask, compensation, comp_mask,
                        scale_adjust, dims, src_dtype, threads)
    q = QUANTIZE_CALLS.get(key)
    if q is None:
        q = _prepare(arr, src, dst, scales, scale_mask, _comp_kinds(compensation), comp_mask,
                     scale_adjust, dims, src_dtype, threads)
        QUANTIZE_CALLS.put(key, q)
    p = q.plan
    # src_dtype= says how to read the bytes; otherwise the array's dtype must fit the plan's
    arr, bound = p.bind(arr if src_dtype is None else _read_as(arr, p.src.dtype), out)
    s8s8 = np.zeros(q.ncomp, np.int32) if q.s8s8 else None
    zp = np.zeros(q.ncomp, np.int32) if q.zp else None
    acc = data_address(zp if q.zp else s8s8)       # the sums land in one, then become both
    p.execute(arr, bound, p.nthreads(threads), acc)
    if acc:
        finish_compensation(acc, data_address(s8s8), data_address(zp), q.ncomp)
    return Quantized(bound if out is None else out, s8s8, zp, p.dst, q.comp_desc, q.comp_mask,
                     q.scale_adjust)


def _quantize_key(arr, src, dst, scales, scale_mask, compensation, comp_mask, scale_adjust,
                  dims, src_dtype, threads):
    """The cache key of a call, or None (Descs, unusual argument types: the long way).
    Scales are keyed by value, so changing an array in place is seen."""
    if not (isinstance(src, str) and isinstance(dst, str)):
        return None
    if type(scales) is np.ndarray:
        skey = (scales.dtype.str, scales.shape, scales.tobytes())
    elif type(scales) in (int, float):
        skey = scales
    else:
        return None
    return (arr.shape, arr.strides, arr.dtype, src, dst, dims if dims is None else tuple(dims),
            src_dtype, skey, scale_mask, compensation, comp_mask, scale_adjust, threads)


def _prepare(arr, src, dst, scales, scale_mask, comp, comp_mask, scale_adjust, dims, src_dtype,
             threads):
    """What every call with one quantize() signature shares; validates everything."""
    sdesc, arr = _src_desc(arr, src, dims, src_dtype)
    if isinstance(dst, Desc):
        if dst.dims != sdesc.dims:
            raise ReorderError(f"dst descriptor dims {_fmt(dst.dims)} differ from the source's "
                               f"{_fmt(sdesc.dims)}")
        if dst.dtype.name != "s8":
            raise ReorderError(f"quantize() writes s8, but the dst descriptor is {dst.dtype.name}")
        ddesc = dst
    else:
        ddesc = Desc(sdesc.dims, "s8", dst)
    if scale_mask is None:
        n = np.size(scales)
        scale_mask = 0 if n == 1 else (comp_mask if comp_mask is not None else 1)
    attrs = make_attrs(src_scales=scales, src_scale_mask=scale_mask, compensation=comp,
                       comp_mask=comp_mask, scale_adjust=scale_adjust)
    p = cached_plan(sdesc, ddesc, threads, attrs)
    cdesc = attrs.comp_desc(ddesc) if comp else None
    return _QuantizePrep(p, cdesc, attrs.comp_mask if comp else 0, attrs.scale_adjust,
                         "s8s8" in comp, "zp" in comp, cdesc.nelems if comp else 0)
