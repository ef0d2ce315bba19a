"""Conversions, quantization attributes and int8 compensation (spec §3-§4).

`Attrs` holds what a converting reorder needs besides the two descriptors: scales (by value),
zero points, `sum`, and compensation. It is hashable, so it is part of the plan cache key.
`ConversionKernel` runs such problems with the kernels of `_convert.pyx`, and `quantize()` is
the front end for int8 weights:

    >>> import numpy as np, reorder as ro
    >>> w = np.random.default_rng(0).standard_normal((20, 10, 3, 3)).astype(np.float32)
    >>> q = ro.quantize(w, "oihw", "OIhw4i16o4i", scales=np.full(20, 16, np.float32),
    ...                 compensation=("s8s8", "zp"))
    >>> q.data.shape, q.compensation.shape, len(q.to_onednn_buffer())
    ((2, 1, 3, 3, 4, 16, 4), (32,), 4864)

Arithmetic (in f32, oneDNN's order): v = src_scale * (src - src_zp); v += beta * dst_old;
v = v * (1/dst_scale) + dst_zp; v *= scale_adjust; then saturate and round half to even.
"""
import math
import numbers
from dataclasses import dataclass

import numpy as np

from . import _convert
from .desc import Desc, _fmt
from .dtypes import check_conversion
from .errors import ReorderError
from .planner import (KERNELS, NT_MIN_BYTES, Kernel, _aligned_empty, _bind_source, cached_plan,
                      check_out)
from .tags import ABC, spell

__all__ = ["Attrs", "ConversionKernel", "Quantized", "quantize", "make_attrs"]

CODES = _convert.CODES
_INTEGER_TENSORS = ("s8", "u8", "s32")
_COMP_KINDS = ("s8s8", "zp")


def _dims_of(mask, ndim):
    return [d for d in range(ndim) if mask >> d & 1]


def _contiguous(mask):
    """Set bits form one run (0b0110), as oneDNN's reference reorder requires."""
    if mask == 0:
        return True
    low = mask & -mask
    return (mask + low) & mask == 0


def _mask_text(mask, ndim=None):
    dims = _dims_of(mask, ndim if ndim is not None else mask.bit_length())
    if not dims:
        return "mask 0 (one common value)"
    return f"mask {mask} (dim{'s' if len(dims) > 1 else ''} {', '.join(ABC[d] for d in dims)})"


def _check_mask(mask, name):
    if isinstance(mask, bool) or not isinstance(mask, numbers.Integral):
        raise TypeError(f"{name} must be an int bit mask, got {mask!r}")
    mask = int(mask)
    if mask < 0:
        raise ReorderError(f"{name}={mask} is negative; a mask has bit d set when the values "
                           f"vary along dim d")
    return mask


def _scales_bytes(values, name):
    """(float32 bytes, original shape) of a scale argument."""
    if values is None:
        return None, None
    arr = np.asarray(values)
    if arr.dtype.kind not in "fiu" or arr.dtype.kind == "b":
        raise TypeError(f"{name} must be a number or an array of numbers, got {arr.dtype}")
    if arr.size == 0:
        raise ReorderError(f"{name} is empty")
    return np.ascontiguousarray(arr, dtype=np.float32).tobytes(), tuple(arr.shape)


def _zero_point(value, name):
    if value is None:
        return None
    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise ReorderError(f"{name} must be one integer (a common zero point); per-dim zero "
                               f"points are not supported, got {value.size} values")
        value = value.reshape(()).item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or int(value) != value:
        raise TypeError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if not -2**31 <= value < 2**31:
        raise ReorderError(f"{name}={value} does not fit in s32")
    return value


@dataclass(frozen=True)
class Attrs:
    """Conversion attributes of one reorder. Build with `make_attrs`; validated against the
    descriptors by `bind`. Scales are kept by value (float32 bytes), so equal attributes
    share a cached plan."""
    src_scales: bytes = None
    src_scales_shape: tuple = None
    src_mask: int = 0
    dst_scales: bytes = None
    dst_scales_shape: tuple = None
    dst_mask: int = 0
    src_zp: int = None
    dst_zp: int = None
    sum_beta: float = None
    comp: tuple = ()                 # subset of ("s8s8", "zp"), in that order
    comp_mask: int = 0
    scale_adjust: float = 1.0

    @property
    def is_trivial(self):
        return (self.src_scales is None and self.dst_scales is None and self.src_zp is None
                and self.dst_zp is None and self.sum_beta is None and not self.comp
                and self.scale_adjust == 1.0)

    def src_scale_values(self):
        return None if self.src_scales is None else np.frombuffer(self.src_scales, np.float32)

    def dst_scale_values(self):
        return None if self.dst_scales is None else np.frombuffer(self.dst_scales, np.float32)

    # -- validation -----------------------------------------------------------------------------
    def bind(self, src, dst):
        """Check these attributes against the (src, dst) descriptors; return the attributes
        a plan needs (None for a plain same-type move). Raises ReorderError naming the part."""
        if self.is_trivial and src.dtype == dst.dtype:
            return None
        check_conversion(src.dtype, dst.dtype)
        nd = src.ndim
        full = (1 << nd) - 1
        masks = []
        for side, values, shape, mask in (("src", self.src_scales, self.src_scales_shape, self.src_mask),
                                          ("dst", self.dst_scales, self.dst_scales_shape, self.dst_mask)):
            if values is None:
                continue
            name = f"{side}_scales"
            if mask & ~full:
                raise ReorderError(f"{name}: {_mask_text(mask)} names a dim the {nd}-d tensor "
                                   f"{_fmt(src.dims)} does not have")
            if not _contiguous(mask) and not (self.comp and mask == self.comp_mask):
                raise ReorderError(f"{name}: mask {mask} ({bin(mask)}) is not a contiguous run of "
                                   f"dims; scale masks must be like 1, 2, 3, 6 (or equal the "
                                   f"compensation mask)")
            self._check_scale_shape(name, src.dims, mask, shape, len(values) // 4)
            if mask:
                masks.append((name, mask))
        if len(masks) == 2 and masks[0][1] != masks[1][1]:
            raise ReorderError(f"src_scales use {_mask_text(masks[0][1], nd)} but dst_scales use "
                               f"{_mask_text(masks[1][1], nd)}; when both vary they must use the "
                               f"same mask")
        for side, zp, desc in (("src", self.src_zp, src), ("dst", self.dst_zp, dst)):
            if zp is not None and desc.dtype.name not in _INTEGER_TENSORS:
                raise ReorderError(f"{side}_zero_point={zp} is set but {side} is "
                                   f"{desc.dtype.name}; zero points apply only to integer "
                                   f"tensors (s8, u8, s32)")
        if self.sum_beta is not None and self.dst_zp is not None:
            raise ReorderError("sum_beta cannot be combined with a dst_zero_point (oneDNN rejects "
                               "the pair: the old destination would need dequantising)")
        if self.scale_adjust not in (1.0, 0.5):
            raise ReorderError(f"scale_adjust must be 1.0 or 0.5 (0.5 halves the weights for "
                               f"CPUs without VNNI), got {self.scale_adjust}")
        if self.comp:
            if dst.dtype.name != "s8":
                raise ReorderError(f"compensation {'+'.join(self.comp)} needs an s8 destination, "
                                   f"but dst is {dst.dtype.name}")
            if self.comp_mask == 0 or self.comp_mask & ~full:
                raise ReorderError(f"comp_mask={self.comp_mask} does not fit the {nd}-d weights "
                                   f"{_fmt(src.dims)}: set bits for the dims that keep their own "
                                   f"sum (1 = dim a, 3 = dims a and b, ...; below {1 << nd})")
            if self.src_zp is not None or self.dst_zp is not None or self.sum_beta is not None:
                raise ReorderError("compensation cannot be combined with zero points or sum "
                                   "(oneDNN's compensating reorders accept scales only)")
        return self

    @staticmethod
    def _check_scale_shape(name, dims, mask, shape, count):
        md = tuple(n if mask >> d & 1 else 1 for d, n in enumerate(dims))
        need = math.prod(md)
        masked = tuple(dims[d] for d in _dims_of(mask, len(dims)))
        if count != need:
            if mask == 0:
                raise ReorderError(f"{name} has {count} values but {_mask_text(0)} needs 1; "
                                   f"pass a {name.split('_')[0]}_scale_mask for per-dim values")
            raise ReorderError(f"{name} has {count} values but {_mask_text(mask, len(dims))} of "
                               f"dims {_fmt(dims)} needs {need} (shape {_fmt(masked)})")
        if len(shape) > 1 and shape not in (md, masked):
            raise ReorderError(f"{name} has shape {_fmt(shape)}; for {_mask_text(mask, len(dims))} "
                               f"of dims {_fmt(dims)} give {need} values flat, or shaped "
                               f"{_fmt(masked)} or {_fmt(md)}")

    # -- what the planner and kernels need ------------------------------------------------------
    @property
    def scale_mask(self):
        """The mask the scale index follows (src and dst share it when both vary)."""
        sm = self.src_mask if self.src_scales is not None else 0
        dm = self.dst_mask if self.dst_scales is not None else 0
        return sm or dm

    def comp_desc(self, dst):
        """The compensation buffer's layout: dst's layout trimmed to the masked dims
        (`OIhw4i16o4i`, mask 1 -> `A16a`; `Abcd4a`, mask 3 -> `Ab4a`), s32, dense over the
        padded dims (spec §4.3)."""
        masked = _dims_of(self.comp_mask, dst.ndim)
        rank = {d: i for i, d in enumerate(masked)}
        axes = tuple((rank[a.dim], a.block) for a in dst.axes if a.dim in rank)
        return Desc(tuple(dst.dims[d] for d in masked), "s32", spell(len(masked), axes))

    def index_strides(self, src, dst):
        """(dim, digit weight) -> (scale index stride, comp index stride) of a loop node."""
        nd = src.ndim
        kmask = self.scale_mask
        kstride, run = [0] * nd, 1
        for d in reversed(range(nd)):
            if kmask >> d & 1:
                kstride[d] = run
                run *= src.dims[d]
        caxes = {}
        if self.comp:
            cdesc = self.comp_desc(dst)
            for i, d in enumerate(_dims_of(self.comp_mask, nd)):
                caxes[d] = [a for a in cdesc.axes if a.dim == i]

        def strides(d, weight):
            cs = 0
            if d in caxes:
                ca = max((a for a in caxes[d] if a.weight <= weight), key=lambda a: a.weight)
                cs = ca.stride * (weight // ca.weight)
            return kstride[d] * weight, cs
        return strides

    def describe(self, src, dst):
        nd = src.ndim
        parts = [f"{src.dtype.name} -> {dst.dtype.name}"]
        for side, values, mask in (("src", self.src_scale_values(), self.src_mask),
                                   ("dst", self.dst_scale_values(), self.dst_mask)):
            if values is not None:
                what = f"{values[0]:g}" if values.size == 1 else f"{values.size} values"
                parts.append(f"{side} scales {what}, {_mask_text(mask, nd)}")
        if self.src_zp is not None:
            parts.append(f"src zero point {self.src_zp}")
        if self.dst_zp is not None:
            parts.append(f"dst zero point {self.dst_zp}")
        if self.sum_beta is not None:
            parts.append(f"sum beta {self.sum_beta:g}")
        if self.scale_adjust != 1.0:
            parts.append(f"scale_adjust {self.scale_adjust:g}")
        if self.comp:
            cd = self.comp_desc(dst)
            parts.append(f"{'+'.join(self.comp)} compensation over {_mask_text(self.comp_mask, nd)}, "
                         f"{cd.nelems} s32 in {cd.abc or cd.name}")
        parts.append("f32 arithmetic, saturate then round half to even")
        return "; ".join(parts)


def make_attrs(*, src_scales=None, src_scale_mask=None, dst_scales=None, dst_scale_mask=None,
               src_zero_point=None, dst_zero_point=None, sum_beta=None, compensation=None,
               comp_mask=None, scale_adjust=1.0):
    """Attrs from user arguments (type checks here; checks against dims in Attrs.bind)."""
    s_bytes, s_shape = _scales_bytes(src_scales, "src_scales")
    d_bytes, d_shape = _scales_bytes(dst_scales, "dst_scales")
    smask = 0 if src_scale_mask is None else _check_mask(src_scale_mask, "src_scale_mask")
    dmask = 0 if dst_scale_mask is None else _check_mask(dst_scale_mask, "dst_scale_mask")
    if src_scale_mask is not None and src_scales is None:
        raise ReorderError("src_scale_mask is given without src_scales")
    if dst_scale_mask is not None and dst_scales is None:
        raise ReorderError("dst_scale_mask is given without dst_scales")
    if sum_beta is not None:
        if isinstance(sum_beta, bool) or not isinstance(sum_beta, numbers.Real):
            raise TypeError(f"sum_beta must be a number, got {sum_beta!r}")
        sum_beta = float(np.float32(sum_beta))
    comp = _comp_kinds(compensation)
    cmask = 0
    if comp:
        cmask = 1 if comp_mask is None else _check_mask(comp_mask, "comp_mask")
    elif comp_mask is not None:
        raise ReorderError("comp_mask is given but no compensation was asked for")
    if isinstance(scale_adjust, bool) or not isinstance(scale_adjust, numbers.Real):
        raise TypeError(f"scale_adjust must be 1.0 or 0.5, got {scale_adjust!r}")
    return Attrs(s_bytes, s_shape, smask, d_bytes, d_shape, dmask,
                 _zero_point(src_zero_point, "src_zero_point"),
                 _zero_point(dst_zero_point, "dst_zero_point"), sum_beta, comp, cmask,
                 float(scale_adjust))


def _comp_kinds(compensation):
    if compensation is None or compensation == () or compensation is False:
        return ()
    kinds = (compensation,) if isinstance(compensation, str) else tuple(compensation)
    bad = [k for k in kinds if k not in _COMP_KINDS]
    if bad or not kinds:
        raise ReorderError(f"compensation={compensation!r}: expected 's8s8', 'zp' or "
                           f"('s8s8', 'zp')")
    return tuple(k for k in _COMP_KINDS if k in kinds)


# ---------------------------------------------------------------------------------------------
# the planner's conversion kernel

# The tile path takes at most this many destination-contiguous lanes per outer position.
TILE_MAX_LANES = 4096


def _split_node(nodes, qstrides):
    """The node threads split when compensation is accumulated: one that carries a comp
    index (the longest; the outermost among equals), so every sum stays in one thread."""
    best = -1
    for i, (nd, (_, cs)) in enumerate(zip(nodes, qstrides)):
        if cs != 0 and nd.extent > 1 and (best < 0 or nd.extent > nodes[best].extent):
            best = i
    return best


def _tile_layout(prob):
    """How the tile kernel would cut `prob`, or None when it does not fit.

    Lanes: the innermost nodes that are dense in dst (strides 1, e1, e1*e2, ...) and not B,
    at least 16 and a multiple of 16 of them (`c16` of nChw16c; `4i16o4i` of OIhw4i16o4i).
    B: the node that is contiguous in src (`hw`); scales and compensation must not vary
    along it. The rest are outer nodes, walked as usual."""
    nodes, qs = list(prob.nodes), list(prob.qstrides)
    if len(nodes) < 2:
        return None
    ib = [i for i, nd in enumerate(nodes) if nd.ss == 1 and nd.extent > 1]
    if len(ib) != 1 or qs[ib[0]] != (0, 0):
        return None
    ib = ib[0]
    lanes, k = 1, len(nodes) - 1
    chain = []
    while k >= 0 and k != ib and nodes[k].ds == lanes and lanes < 256:
        if lanes % 16 == 0 and lanes * nodes[k].extent > TILE_MAX_LANES:
            break
        chain.append(k)
        lanes *= nodes[k].extent
        k -= 1
    if not chain or lanes % 16 or lanes > TILE_MAX_LANES or k < 0:
        return None
    b = nodes[ib]
    if b.ds < lanes:
        return None
    blk_dims = {nodes[i].dim for i in chain if nodes[i].dim >= 0}
    if b.dim >= 0 and b.dim in blk_dims:
        return None
    alloc = {d: pad for d, _, pad in prob.checked}
    for d in blk_dims:          # lanes must never lie beyond dst's allocation
        if max(nd.extent * nd.weight for nd in nodes if nd.dim == d) > alloc[d]:
            return None
    outer = [i for i in range(len(nodes)) if i != ib and i not in chain]
    return chain, ib, outer, sorted(blk_dims)


def _w4i16o4i_layout(prob, layout):
    """int8 weights whose lanes are `4i16o4i` over a src row [i16][S] per o (plain oihw-like
    sources): the dedicated kernel's parameters, or None."""
    a = prob.attrs
    if prob.dst.dtype.name not in ("s8", "u8") or a.src_zp is not None \
            or a.dst_zp is not None or a.sum_beta is not None:
        return None
    chain, ib, outer, blk_dims = layout
    if len(chain) != 3:
        return None
    (n0, q0), (n1, q1), (n2, q2) = ((prob.nodes[i], prob.qstrides[i]) for i in chain)
    b = prob.nodes[ib]
    S = b.extent
    if not ((n0.extent, n0.ds, n1.extent, n1.ds, n2.extent, n2.ds) == (4, 1, 16, 4, 4, 64)
            and b.ss == 1 and b.ds == 256 and 1 <= S <= 12 and b.dim < 0
            and n0.ss == S and n2.ss == 4 * S and q0 == (0, 0) and q2 == (0, 0)
            and n0.dim == n2.dim and (n0.dim < 0 or (n0.weight, n2.weight) == (1, 4))):
        return None
    return S, n1.ss, n1.weight, q1[0], q1[1], n1.dim, n0.dim


def _lane_tables(prob, chain, blk_dims):
    """Per-lane src offset, scale index, comp index and checked-dim coordinates, in dst
    order (lane j = sum of digit * dst stride over the chain)."""
    n = math.prod(prob.nodes[i].extent for i in chain)
    soff, koff, coff = (np.zeros(n, np.int64) for _ in range(3))
    acoord = np.zeros((len(blk_dims), n), np.int64)
    j = np.arange(n, dtype=np.int64)
    for i in chain:
        nd, (ks, cs) = prob.nodes[i], prob.qstrides[i]
        digit = (j // nd.ds) % nd.extent
        soff += digit * nd.ss
        koff += digit * ks
        coff += digit * cs
        if nd.dim >= 0:
            acoord[blk_dims.index(nd.dim)] += digit * nd.weight
    return soff, koff, coff, acoord


class ConversionKernel(Kernel):
    name = "convert"
    why = ("type conversion, scales, zero points, sum and compensation fused into one pass "
           "(f32 arithmetic per element): the int8 `4i16o4i` weight kernel, 16-lane tiles "
           "with AVX-512 register transposes, or a strided walk, whichever fits "
           "(docs/int8.md)")

    def is_usable_for(self, prob):
        return prob.attrs is not None

    def prepare(self, prob):
        a = prob.attrs
        one = np.ones(1, np.float32)
        sscale = a.src_scale_values()
        dscale = a.dst_scale_values()
        dinv = one if dscale is None else np.float32(1) / dscale     # f32 reciprocal, like jit
        common = (
            one if sscale is None else np.ascontiguousarray(sscale),
            bool(sscale is not None and a.src_mask), sscale is not None,
            np.ascontiguousarray(dinv, dtype=np.float32), bool(dscale is not None and a.dst_mask),
            dscale is not None,
            float(a.src_zp or 0), a.src_zp is not None, float(a.dst_zp or 0), a.dst_zp is not None,
            float(a.sum_beta or 0.0), a.sum_beta is not None, float(a.scale_adjust))
        codes = (CODES[prob.src.dtype.name], CODES[prob.dst.dtype.name])
        checked = np.array(prob.checked, dtype=np.int64).reshape(-1, 3)
        layout = _tile_layout(prob) if prob.nodes and prob.nodes[0].extent else None
        if layout is None:
            rows = [tuple(nd) + tuple(q) for nd, q in zip(prob.nodes, prob.qstrides)]
            nodes = np.array(rows, dtype=np.int64).reshape(-1, 7)
            return _convert.Convert(*codes, nodes, checked, *common,
                                    _split_node(prob.nodes, prob.qstrides))
        chain, ib, outer, blk_dims = layout
        onodes = [prob.nodes[i] for i in outer]
        oq = [prob.qstrides[i] for i in outer]
        rows = [tuple(nd) + tuple(q) for nd, q in zip(onodes, oq)] + [(1, 0, 0, -1, 1, 0, 0)]
        nodes = np.array(rows, dtype=np.int64).reshape(-1, 7)
        w = _w4i16o4i_layout(prob, layout)
        if w is not None:
            return _convert.ConvertW4i16o4i(*codes, nodes, checked, *common,
                                            _split_node(onodes, oq), np.array(w, dtype=np.int64))
        soff, koff, coff, acoord = _lane_tables(prob, chain, blk_dims)
        b = prob.nodes[ib]
        bvec = np.array([b.extent, b.ds, b.weight, b.dim], dtype=np.int64)
        # streaming stores pay once dst outgrows the cache (the move kernels' threshold)
        nt = prob.dst.nelems * prob.dst.dtype.itemsize >= NT_MIN_BYTES
        runner = _convert.ConvertTile(*codes, nodes, checked, *common,
                                      _split_node(onodes, oq), soff, koff, coff, acoord,
                                      np.array(blk_dims, dtype=np.int64), bvec, nt)
        return runner


KERNELS.insert(0, ConversionKernel())


# ---------------------------------------------------------------------------------------------
# quantize(): int8 weights with compensation

class Quantized:
    """The result of `quantize()`.

    data             int8 array in the destination's physical shape, padding zero
    compensation     int32 s8s8 compensation (-128 * sum of q), flat in comp_desc's order, or None
    zp_compensation  int32 zero-point compensation (-sum of q), same layout, or None
    desc             the destination Desc
    comp_desc        the compensation layout (dst trimmed to the masked dims), or None
    comp_mask, scale_adjust
    """
    __slots__ = ("data", "compensation", "zp_compensation", "desc", "comp_desc", "comp_mask",
                 "scale_adjust")

    def __init__(self, data, compensation, zp_compensation, desc, comp_desc, comp_mask,
                 scale_adjust):
        self.data, self.compensation, self.zp_compensation = data, compensation, zp_compensation
        self.desc, self.comp_desc, self.comp_mask = desc, comp_desc, comp_mask
        self.scale_adjust = scale_adjust

    @property
    def offsets(self):
        """Byte offsets in to_onednn_buffer(): data, s8s8 block, zp block, total size."""
        data = self.data.nbytes
        s8s8 = -(-data // 4) * 4
        zp = s8s8 + (self.compensation.nbytes if self.compensation is not None else 0)
        end = zp + (self.zp_compensation.nbytes if self.zp_compensation is not None else 0)
        return {"data": 0, "s8s8": s8s8 if self.compensation is not None else None,
                "zp": zp if self.zp_compensation is not None else None, "size": end}

    def to_onednn_buffer(self):
        """One uint8 buffer laid out as oneDNN's weights memory with an extra descriptor:
        the s8 data, zeros up to a multiple of 4 bytes, the s8s8 block, then the zp block
        (little-endian int32)."""
        off = self.offsets
        buf = np.zeros(off["size"], dtype=np.uint8)
        buf[:self.data.nbytes] = self.data.reshape(-1).view(np.uint8)
        if self.compensation is not None:
            blk = self.compensation.astype("<i4", copy=False).view(np.uint8)
            buf[off["s8s8"]:off["s8s8"] + blk.size] = blk
        if self.zp_compensation is not None:
            blk = self.zp_compensation.astype("<i4", copy=False).view(np.uint8)
            buf[off["zp"]:off["zp"] + blk.size] = blk
        return buf

    def __repr__(self):
        comp = "+".join(k for k, v in (("s8s8", self.compensation), ("zp", self.zp_compensation))
                        if v is not None) or "no"
        return (f"Quantized({self.desc!r}, {comp} compensation"
                + (f" over {_mask_text(self.comp_mask, self.desc.ndim)}" if self.comp_desc else "")
                + (f", scale_adjust {self.scale_adjust:g}" if self.scale_adjust != 1.0 else "") + ")")


_CACHE = {}            # call signature -> (plan, attrs, comp desc); bounded like api's
_CACHE_MAX = 128


def quantize(w, src, dst, *, scales=1.0, scale_mask=None, compensation=None, comp_mask=None,
             scale_adjust=1.0, dims=None, src_dtype=None, threads=None, out=None):
    """Quantize weights `w` to s8 in layout `dst`, with optional int8 compensation.

    q = saturate_round(scale_adjust * scales[x] * w[x])   (f32 arithmetic; oneDNN's src scale)

    w             array in layout `src` (f32, f64, bf16, f16, s8, ...; as for reorder())
    src, dst      tags or Descs; a dst tag makes an s8 Desc over w's dims
    scales        multiplier: one number, or values per the dims of `scale_mask`
    scale_mask    bits of the dims the scales vary along; default 0 for one number, else
                  comp_mask (or 1, the output channels, without compensation)
    compensation  None, "s8s8" (-128 * sum q), "zp" (-sum q) or ("s8s8", "zp"); sums run over
                  the unmasked dims of the stored s8 values, padded entries are 0
    comp_mask     dims that keep their own sum: 1 (O, conv weights; the default), 3 (G and O,
                  grouped), 2 (N of 2-D matmul weights `BA16a64b4a`), 5 (3-D matmul), ...
    scale_adjust  1.0, or 0.5 for CPUs without VNNI (the conv multiplies back by 2)

    out           optional preallocated int8 array for .data (dst's physical shape)

    Returns a `Quantized` (.data, .compensation, .zp_compensation, .desc, .to_onednn_buffer()).
    """
    from .api import as_array
    arr = as_array(w)
    comp = _comp_kinds(compensation)
    key = None
    if isinstance(src, str) and isinstance(dst, str):
        sbytes, sshape = _scales_bytes(scales, "scales")
        try:
            key = (arr.shape, arr.strides, arr.dtype, src, dst,
                   None if dims is None else tuple(dims), src_dtype, sbytes, sshape, scale_mask,
                   comp, comp_mask, scale_adjust, threads)
            hit = _CACHE.get(key)
        except TypeError:           # something unhashable: take the long way
            key = hit = None
    else:
        hit = None
    if hit is None:
        hit = _prepare(arr, src, dst, scales, scale_mask, comp, comp_mask, scale_adjust, dims,
                       src_dtype, threads)
        if key is not None:
            if len(_CACHE) >= _CACHE_MAX:
                _CACHE.pop(next(iter(_CACHE)))
            _CACHE[key] = hit
    p, attrs, cdesc, fast = hit
    in_shape, in_strides, out_shape, ncomp = fast
    if out is None:
        out = p.empty()
    elif not (type(out) is np.ndarray and out.shape == out_shape and out.dtype == np.int8
              and out.flags.c_contiguous and out.flags.writeable
              and not np.may_share_memory(arr, out)):
        check_out(out, p.dst, arr)      # raises with the reason (or finds no real overlap)
    if not (type(arr) is np.ndarray and arr.shape == in_shape and arr.strides == in_strides):
        arr = _bind_source(arr, p.src)
    s8s8 = zp = None
    acc = 0
    if comp:
        s8s8 = np.zeros(ncomp, np.int32) if "s8s8" in comp else None
        zp = np.zeros(ncomp, np.int32) if "zp" in comp else None
        acc = _addr(zp if zp is not None else s8s8)
    _run(p, arr, out, acc, threads, bound=True)
    if comp:
        _convert.finish_compensation(acc, _addr(s8s8), _addr(zp), ncomp)
    return Quantized(out, s8s8, zp, p.dst, cdesc, attrs.comp_mask if comp else 0,
                     attrs.scale_adjust)


def _prepare(arr, src, dst, scales, scale_mask, comp, comp_mask, scale_adjust, dims, src_dtype,
             threads):
    """(plan, attrs, comp desc) for one quantize() signature; validates everything."""
    from .api import _src_desc, _dtype_for
    sdesc, arr = _src_desc(arr, src, dims, _dtype_for(arr, src_dtype))
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
    isz = p.src.dtype.itemsize
    fast = (p.src.physical_shape, tuple(st * isz for st in p.src.physical_strides),
            p.dst.physical_shape, cdesc.nelems if comp else 0)
    return p, attrs, cdesc, fast


def _addr(a):
    return 0 if a is None else a.ctypes.data


def _run(p, x, out, acc, threads, bound=False):
    """Run plan p with a compensation accumulator (Plan.__call__ without the comp output).
    `bound`: x is already bound to p.src."""
    if not bound:
        x = _bind_source(x, p.src)
    nthreads = p.nthreads(threads)
    src_addr, dst_addr = _addr(x), _addr(out)
    if p.via is None:
        p.steps[0][2].run(src_addr, dst_addr, nthreads, acc)
    else:
        tmp = _aligned_empty(p.via.physical_shape, p.via.dtype.storage)
        p.steps[0][2].run(src_addr, _addr(tmp), nthreads)
        p.steps[1][2].run(_addr(tmp), dst_addr, nthreads, acc)
