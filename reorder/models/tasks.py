"""From a source tensor, its role, its rule and the target to a Task: the output tensors
(shapes, dtypes and metadata known before any data is read) and the function that fills them."""
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from ..front.api import quantize, reorder
from ..core.desc import Desc
from ..core.dtypes import as_dtype
from ..core.errors import ReorderError
from . import safetensors_format as stf
from .errors import ConvertError, LayerError
from .presets import Decision, decide
from .query import swap_ab
from .roles import Role, View, view as role_view

_ABC = "abcdefghijkl"


@dataclass
class Output:
    name: str
    dtype: np.dtype               # numpy dtype of the stored bytes
    shape: tuple                  # array shape in the file
    meta: dict
    st_dtype: str = None          # safetensors dtype name

    @property
    def nbytes(self):
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


@dataclass
class Task:
    source: object                # readers.SourceTensor
    outputs: list
    fill: Callable                # fill(array, [out arrays], threads)
    cost: int = 0                 # bytes of memory while it runs
    meta: dict = field(default_factory=dict)


def _storage(dtype_name):
    return np.dtype(as_dtype(dtype_name).storage)


def _out(name, dtype_name, shape, meta):
    dt = _storage(dtype_name)
    return Output(name, dt, tuple(int(s) for s in shape), meta,
                  stf.dtype_name(dt, bf16=dtype_name == "bf16"))


def _desc_meta(desc, source, part, base):
    tag = desc.tag.abc if desc.tag is not None else None
    return dict(base, dims=list(desc.dims), tag=tag, dtype=desc.dtype.name,
                padded_dims=list(desc.padded_dims), source=source, part=part)


def _src_dtype_name(src):
    if src.bf16:
        return "bf16"
    try:
        return as_dtype(src.dtype).name
    except (ReorderError, TypeError):
        return None


def _rule_view(src, rule, role, where):
    """View from a rule's explicit source tag: the stored array is that layout's physical
    shape."""
    try:
        fake = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), src.shape,
                                               (0,) * len(src.shape))
        desc = Desc.of(fake, rule.src)
    except ReorderError as exc:
        raise ConvertError(f"{where}: tensor {src.name!r} of shape {list(src.shape)} does not fit "
                           f"src = {rule.src!r} of {rule.where}: {exc}") from None
    depthwise = role.kind in ("conv", "deconv") and role.groups > 1 and len(desc.dims) >= 5 \
        and desc.dims[1] == 1 and desc.dims[2] == 1
    return View(desc.dims, rule.src, tuple(src.shape), depthwise)


def build(src, file_role, rule, target, where, answer=None):
    """The Task of one source tensor; `answer` is what oneDNN was asked about it (query.Answer),
    if it was."""
    task = _build(src, file_role, rule, target, where, answer)
    task.cost += src.extra_cost                      # what loading it allocates (a fold's copy)
    return task


def _keeps_as_stored(target, rule):
    """plain without a rule that changes the tensor: written as read, which needs no role."""
    return target.family == "plain" and (
        rule is None or (rule.src is None and rule.dst is None and rule.quantize != "s8"))


def _from_answer(d, answer, role, v, src, where):
    """The preset's decision with oneDNN's answer in place of the table's layout, and the
    metadata saying where the layout came from."""
    if answer.layout is None and answer.error is None:
        return d, {"decision": "table", "why": answer.why_table,
                   "layer": answer.layer.describe() if answer.layer else answer.label}
    if answer.layer is None and role.kind in ("conv", "deconv", "fc"):
        raise LayerError(answer.error)             # the layer's shapes are not known
    if role.kind not in ("conv", "deconv", "fc"):
        return d, None
    if d.action == "keep" and role.kind == "fc" and answer.layer.src_dtype in ("f32", "bf16"):
        d = Decision("reorder", None, d.dtype)     # the tables keep f32 matrices plain
    if d.action not in ("reorder", "quantize"):
        return d, None
    if answer.error is not None:
        raise LayerError(f"{where}: tensor {src.name!r} ({answer.label}): {answer.error}")
    lay = answer.layout
    tag = lay.tag
    if role.kind == "fc" and answer.layer.kind == "ip":
        tag = swap_ab(tag)                 # inner product weights are (N, K); the view (K, N)
    elif tuple(lay.dims) != tuple(v.dims):
        raise ConvertError(f"{where}: tensor {src.name!r} ({answer.label}): oneDNN's weights "
                           f"dims {list(lay.dims)} are not the tensor's {list(v.dims)}")
    why = f"asked oneDNN {lay.version}: {lay.implementation}"
    if d.action == "quantize":
        if lay.dtype != "s8":
            raise ConvertError(f"{where}: tensor {src.name!r} ({answer.label}): oneDNN asks for "
                               f"{lay.dtype} weights, not s8")
        d = replace(d, tag=tag, compensation=lay.compensation, scale_adjust=lay.scale_adjust,
                    why=why)
    else:
        d = replace(d, tag=tag, dtype=lay.dtype if d.dtype != "f16" else d.dtype, why=why)
    meta = {"decision": "query", "version": lay.version, "isa": lay.isa,
            "implementation": lay.implementation, "size": lay.size,
            "data_size": lay.data_size, "layer": answer.layer.describe()}
    return d, meta


def _build(src, file_role, rule, target, where, answer=None):
    role = rule.role_for(file_role) if rule is not None else file_role
    if role is not None and role.kind == "undecided":
        if not _keeps_as_stored(target, rule):
            raise ConvertError(role.origin)          # the file could not tell; no rule did
        role = Role("other", origin="role undecided; kept as stored (plain)")
    if role is None:
        role = Role("other", origin="no rule matched")
    if rule is not None and rule.src is not None:
        v = _rule_view(src, rule, role, where)
    else:
        try:
            v = role_view(src.name, src.shape, role, where)
        except ConvertError:
            if not _keeps_as_stored(target, rule):
                raise
            role = Role("other", origin=f"{role.describe()} that does not fit its shape; "
                                        f"kept as stored (plain)")
            v = role_view(src.name, src.shape, role, where)
    try:
        # oneDNN's answer replaces the tables' layout: then the rules alone give the rest
        asked = answer is not None and answer.layout is not None
        d = decide(target, role, v, answer.layer if answer is not None else None,
                   tables=False if asked else None)
    except ConvertError as exc:
        if rule is None or rule.dst is None:
            raise ConvertError(f"{where}: tensor {src.name!r} ({role.describe()}): {exc}") \
                from None
        d = Decision("reorder", rule.dst, target.dtype)   # the preset has no answer; the rule has
    onednn = None
    if answer is not None and (rule is None or rule.dst is None):
        d, onednn = _from_answer(d, answer, role, v, src, where)
    d = _apply_rule(d, rule, role, v, where, src)
    sdt = _src_dtype_name(src)
    base = {"role": role.kind, "origin": role.origin, "preset": target.name, "why": d.why}
    if role.groups != 1:
        base["groups"] = role.groups
    if onednn is not None:
        base["onednn"] = onednn
    if src.meta:
        base.update(src.meta)
    if d.action != "keep" and sdt is None:
        raise ConvertError(f"{where}: tensor {src.name!r} has dtype {src.dtype}, which cannot be "
                           f"converted ({d.action} for {role.describe()})")
    if d.action == "keep" or (src.shape == () and d.action == "reorder"):
        return _keep(src, d, sdt, base, where)
    if d.action == "reorder":
        return _reorder(src, d, v, sdt, base, where)
    if d.action == "quantize":
        return _quantize(src, d, v, sdt, base, where)
    if d.action == "lowbit":
        return _lowbit(src, d, v, sdt, base, where)
    return _image(src, d, v, role, sdt, base, where)


def _apply_rule(d, rule, role, v, where, src):
    if rule is None:
        return d
    changes = {"why": f"{d.why}; {rule.where}" if d.why else rule.where}
    if rule.quantize == "none" and d.action == "quantize":
        d = Decision("reorder" if rule.dst else "keep", rule.dst, rule.dtype or "f32")
    if rule.quantize == "s8" and d.action != "quantize":
        mask = 1 if role.kind in ("conv", "deconv") and (role.groups == 1 or v.depthwise) \
            else 3 if role.kind in ("conv", "deconv") else 2 if role.kind == "fc" else 0
        d = Decision("quantize", d.tag or _ABC[:len(v.dims)], "s8", mask, ("s8s8",))
    if rule.dst is not None:
        changes["tag"] = rule.dst
        changes["stored"] = False
        if d.action in ("keep", "image"):
            changes["action"], changes["kind"] = "reorder", None
    if rule.dtype is not None:
        if d.action == "quantize" and rule.dtype != "s8":
            if rule.quantize == "s8":
                raise ConvertError(f"{where}: {rule.where} asks for dtype {rule.dtype} and "
                                   f"quantize s8 at once for tensor {src.name!r}")
            changes["action"] = "reorder"           # a float type: the rule turns it off
        changes["dtype"] = rule.dtype
    if rule.compensation is not None:
        changes["compensation"] = () if rule.compensation == "none" else \
            tuple(rule.compensation.split("+"))
    if rule.scale_adjust is not None:
        changes["scale_adjust"] = float(rule.scale_adjust)
    return replace(d, **changes)


def _keep(src, d, sdt, base, where):
    dt = d.dtype if (d.dtype and sdt in ("f32", "f16", "bf16", "f64")) else sdt
    if dt is None:                                    # bool, int64...: bytes as they are
        meta = dict(base, dims=list(src.shape), tag=_ABC[:len(src.shape)] or None,
                    dtype=str(src.dtype), padded_dims=list(src.shape), source=src.name,
                    part="weights")
        out = Output(src.name, src.dtype, tuple(src.shape), meta, stf.dtype_name(src.dtype))

        def fill(a, outs, threads):
            np.copyto(outs[0], a, casting="no")
        return Task(src, [out], fill, 2 * src.nbytes)
    shape = tuple(src.shape)
    meta = dict(base, dims=list(shape), tag=_ABC[:len(shape)] or None, dtype=dt,
                padded_dims=list(shape), source=src.name, part="weights")
    out = _out(src.name, dt, shape, meta)

    def fill(a, outs, threads):
        if dt == sdt:
            np.copyto(outs[0], a.view(outs[0].dtype) if src.bf16 else a, casting="no")
        else:                                     # 0-d and empty arrays too, as one flat dim
            reorder(a.reshape(-1), "a", "a", dtype=dt, src_dtype="bf16" if src.bf16 else None,
                    out=outs[0].reshape(-1), threads=threads)
    return Task(src, [out], fill, src.nbytes + out.nbytes)


def _reorder(src, d, v, sdt, base, where):
    dt = d.dtype or sdt
    vtag, vshape, vdims = (_ABC[:len(src.shape)], src.shape, src.shape) if d.stored \
        else (v.tag, v.phys_shape, v.dims)
    try:
        dst = Desc(vdims, dt, d.tag)
    except ReorderError as exc:
        raise ConvertError(f"{where}: tensor {src.name!r} (dims {list(vdims)}) cannot take "
                           f"layout {d.tag!r}: {exc}") from None
    out = _out(src.name, dt, dst.physical_shape,
               _desc_meta(dst, src.name, "weights", base))

    def fill(a, outs, threads):
        reorder(a.reshape(vshape), vtag, dst.tag.spelling, dims=vdims, dtype=dt,
                src_dtype="bf16" if src.bf16 else None, out=outs[0], threads=threads)
    return Task(src, [out], fill, src.nbytes + out.nbytes)


def _mask_dims(mask, ndim):
    return [i for i in range(ndim) if mask >> i & 1]


def absmax(a, tag, mask):
    """max |a| over every logical dim outside `mask`, in logical order of the masked dims;
    `a` is a plain array whose axes are `tag`'s letters. No temporary of a's size."""
    dims_of_axis = [_ABC.index(c) for c in tag]
    keep = _mask_dims(mask, len(tag))
    axes = tuple(p for p, dd in enumerate(dims_of_axis) if dd not in keep)
    if a.size == 0:
        return np.zeros([a.shape[dims_of_axis.index(k)] for k in keep], np.float32)
    hi = np.max(a, axis=axes).astype(np.float32)
    lo = np.min(a, axis=axes).astype(np.float32)
    m = np.maximum(np.abs(hi), np.abs(lo))
    order = [dd for dd in dims_of_axis if dd in keep]          # remaining axes, physical order
    return np.transpose(m, [order.index(k) for k in keep]) if order else m


def _quantize(src, d, v, sdt, base, where):
    if any(c.isupper() or c.isdigit() for c in v.tag):
        raise ConvertError(f"{where}: tensor {src.name!r}: quantization needs a plain source "
                           f"layout, got {v.tag!r}")
    try:
        dst = Desc(v.dims, "s8", d.tag)
    except ReorderError as exc:
        raise ConvertError(f"{where}: tensor {src.name!r} (dims {list(v.dims)}) cannot take "
                           f"layout {d.tag!r}: {exc}") from None
    keep = _mask_dims(d.mask, len(v.dims))
    nscale = int(np.prod([v.dims[k] for k in keep], dtype=np.int64))
    ncomp = int(np.prod([dst.padded_dims[k] for k in keep], dtype=np.int64))
    extra = dict(base, mask=d.mask, scale_adjust=d.scale_adjust,
                 compensation="+".join(d.compensation) or "none")
    outs = [_out(src.name, "s8", dst.physical_shape,
                 _desc_meta(dst, src.name, "weights", extra))]
    for kind in d.compensation:
        cdims = [dst.padded_dims[k] for k in keep]
        outs.append(_out(f"{src.name}.{'compensation' if kind == 's8s8' else 'zp_compensation'}",
                         "s32", (ncomp,),
                         dict(base, dims=cdims, tag=_ABC[:len(cdims)], dtype="s32",
                              padded_dims=cdims, source=src.name, part=f"{kind} compensation",
                              mask=d.mask)))
    sdims = [v.dims[k] for k in keep]
    outs.append(_out(f"{src.name}.scales", "f32", (nscale,),
                     dict(base, dims=sdims, tag=_ABC[:len(sdims)], dtype="f32",
                          padded_dims=sdims, source=src.name,
                          part="weight scales (dequantize: w = q * scale)", mask=d.mask)))

    def fill(a, arrays, threads):
        a = a.reshape(v.phys_shape)
        if src.bf16:
            a = reorder(a, v.tag, v.tag, src_dtype="bf16", dtype="f32", threads=threads)
        amax = absmax(a, v.tag, d.mask).reshape(-1)
        mult = np.where(amax > 0, np.float32(127.0) / np.where(amax > 0, amax, 1),
                        np.float32(1.0)).astype(np.float32)
        comp = d.compensation if len(d.compensation) != 1 else d.compensation[0]
        q = quantize(a, v.tag, dst.tag.spelling, scales=mult if keep else mult.reshape(()).item(),
                     scale_mask=d.mask if keep else None, compensation=comp or None,
                     comp_mask=d.mask if comp and keep else None, scale_adjust=d.scale_adjust,
                     threads=threads, out=arrays[0])
        i = 1
        for kind in d.compensation:
            c = q.compensation if kind == "s8s8" else q.zp_compensation
            if c.size != ncomp:
                raise ConvertError(f"{where}: tensor {src.name!r}: compensation has {c.size} "
                                   f"entries, expected {ncomp}")
            arrays[i][...] = c.reshape(-1)
            i += 1
        arrays[i][...] = (np.float32(1.0) / mult).astype(np.float32)
    return Task(src, outs, fill, src.nbytes + outs[0].nbytes)


def lowbit_group(K):
    """Group size along K of a low-bit MatMul weight: 128 (the group oneDNN's decompression
    tests use), else 64 or 32 when they divide K, else K (one scale per column)."""
    for g in (128, 64, 32):
        if K % g == 0:
            return g
    return max(K, 1)


def _lowbit(src, d, v, sdt, base, where):
    """A MatMul weight (K, N) to s4 (packed, two a byte) or f8 in d.tag, with its f32 scales
    per group of K as their own tensor `<name>.scales` of shape (K / G, N)."""
    if len(v.dims) != 2:
        raise ConvertError(f"{where}: tensor {src.name!r}: low-bit weights are (K, N) matrices, "
                           f"got dims {list(v.dims)}")
    K, N = v.dims
    G = lowbit_group(K)
    dst = Desc(v.dims, d.dtype, d.tag)
    packed = d.dtype in ("s4", "u4")
    extra = dict(base, group_size=G, scales=f"{src.name}.scales", packed=packed)
    if d.asymmetric:
        extra["zero_points"] = f"{src.name}.zero_points"
    meta = _desc_meta(dst, src.name, "weights", extra)
    if packed:
        data = Output(src.name, np.dtype(np.uint8), ((dst.nelems + 1) // 2,), meta, "U8")
    else:
        data = _out(src.name, d.dtype, dst.physical_shape, meta)
    sdims = [K // G, N]
    scales = _out(f"{src.name}.scales", "f32", sdims,
                  dict(base, dims=sdims, tag="ab", dtype="f32", padded_dims=sdims,
                       source=src.name, group_size=G,
                       part=f"weight scales per group of {G} along K (w = scale * q)"
                       if not d.asymmetric else
                       f"weight scales per group of {G} along K (w = scale * (q - zp))"))
    outs = [data, scales]
    if d.asymmetric:
        # oneDNN's u4 zero-point memory: (K / G, N) `ab`, packed two a byte like the data
        zmeta = dict(base, dims=sdims, tag="ab", dtype=d.dtype, padded_dims=sdims, packed=True,
                     source=src.name, group_size=G,
                     part=f"weight zero points per group of {G} along K")
        outs.append(Output(f"{src.name}.zero_points", np.dtype(np.uint8),
                           ((sdims[0] * sdims[1] + 1) // 2,), zmeta, "U8"))

    def fill(a, arrays, threads):
        a = a.reshape(v.phys_shape)
        if src.bf16:
            a = reorder(a, v.tag, v.tag, src_dtype="bf16", dtype="f32", threads=threads)
        q = quantize(a, v.tag, dst.tag.spelling, dtype=d.dtype, group_size=G,
                     symmetric=not d.asymmetric, out=arrays[0], threads=threads)
        arrays[1][...] = q.scales
        if d.asymmetric:            # a small table: oneDNN's nibble order, even element low
            z = np.zeros(2 * arrays[2].size, np.uint8)
            z[:q.zero_points.size] = np.asarray(q.zero_points).reshape(-1).astype(np.uint8) & 0xF
            arrays[2][...] = z[0::2] | (z[1::2] << 4)
    return Task(src, outs, fill, src.nbytes + sum(o.nbytes for o in outs))


def _image(src, d, v, role, sdt, base, where):
    from .. import opencl
    dims, layout, shape = v.dims, v.tag, v.phys_shape
    if d.kind == "dw_conv2d_filter":                 # (G, 1, 1, H, W) -> MACE's (1, G, H, W)
        dims, layout, shape = (1, v.dims[0]) + tuple(v.dims[3:]), "bacd", \
            (v.dims[0], 1) + tuple(v.dims[3:])
    elif role.kind == "fc" and d.kind in ("weight_width", "conv2d_filter"):
        # (K, N) -> (N, K, 1, 1): MACE's weight image and MNN's 1x1 convolution see it so
        k, n = v.dims
        dims = (n, k, 1, 1)
        layout, shape = ("abcd", (n, k, 1, 1)) if v.tag == "ba" else ("bacd", (k, n, 1, 1))
    elif d.kind == "argument":
        dims, layout, shape = (int(np.prod(v.dims)),), "a", (int(np.prod(v.dims)),)
    try:
        width, height = opencl.image_shape(d.kind, dims, engine=d.engine)
    except ReorderError as exc:
        raise ConvertError(f"{where}: tensor {src.name!r} (dims {list(dims)}) cannot be a "
                           f"{d.kind} image: {exc}") from None
    dt = d.dtype or "f32"
    kind = opencl.MNN_KINDS.get(d.kind, opencl.KINDS[d.kind]) if d.engine == "mnn" \
        else opencl.KINDS[d.kind]
    desc = Desc(dims, dt, kind.tag)
    meta = _desc_meta(desc, src.name, "image", base)
    meta.update(image_kind=d.kind, image_shape=[width, height], engine_name=kind.engine_name,
                image_engine=d.engine)
    out = _out(src.name, dt, (height, width, 4), meta)

    def fill(a, outs, threads):
        a = a.reshape(shape)
        if src.bf16:
            a = reorder(a, layout, layout, src_dtype="bf16", dtype="f32", threads=threads)
        if a.dtype == outs[0].dtype:
            opencl.to_image_array(a, d.kind, layout=layout, out=outs[0], engine=d.engine,
                                  threads=threads)
        else:
            packed = opencl.to_image_array(a, d.kind, layout=layout, engine=d.engine,
                                           threads=threads)
            reorder(packed, "abc", "abc", dtype=dt, out=outs[0], threads=threads)
    return Task(src, [out], fill, src.nbytes + 3 * out.nbytes)
