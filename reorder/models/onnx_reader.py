"""ONNX models: the initializers, located in the file without loading them, and their roles.

The protobuf wire format is scanned directly, so that each initializer's `raw_data` becomes a
(file offset, length) pair that is memory-mapped when the tensor is converted: a model is never
read whole. Only the graph without its initializers is parsed by the `onnx` package, to read
the nodes and their attributes; the few small integer constants that parametrize folded ops
(a Reshape's shape, Squeeze's axes) are read when the model is planned.
"""
import mmap
import os

import numpy as np

from . import onnx_fold
from ._extras import require
from .errors import ConvertError
from .roles import Role
from .source import SourceTensor, memmap_region

# onnx.TensorProto.DataType -> numpy (little-endian, as raw_data is)
_ONNX_DTYPES = {1: "<f4", 2: "u1", 3: "i1", 4: "<u2", 5: "<i2", 6: "<i4", 7: "<i8", 9: "?",
                10: "<f2", 11: "<f8", 12: "<u4", 13: "<u8", 16: "<u2"}
_BF16 = 16

# ops that consume a weight in a known slot: (op, input index) -> role kind
_WEIGHT_SLOTS = {("Conv", 1): "conv", ("ConvTranspose", 1): "deconv", ("Gemm", 1): "fc",
                 ("MatMul", 1): "fc"}
_BIAS_SLOTS = {("Conv", 2), ("ConvTranspose", 2), ("Gemm", 2)}
_MATRIX_SLOTS = {("Gemm", 0), ("MatMul", 0)}
_VECTOR_OPS = {"BatchNormalization", "InstanceNormalization", "LayerNormalization", "PRelu"}


class _Wire:
    """Protobuf fields of one message held in a buffer: (field, wire type, value or
    (start, end) of a length-delimited payload, record start)."""

    def __init__(self, buf, path):
        self.buf, self.path = buf, path

    def varint(self, pos, end):
        result = shift = 0
        while True:
            if pos >= end:
                raise ConvertError(f"{self.path}: corrupt or truncated ONNX file: a field at "
                                   f"byte {pos} runs past the end of its message")
            b = self.buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result, pos
            shift += 7
            if shift > 63:
                raise ConvertError(f"{self.path}: corrupt ONNX file: varint too long at byte {pos}")

    def fields(self, start, end):
        pos = start
        while pos < end:
            rec = pos
            key, pos = self.varint(pos, end)
            field, wt = key >> 3, key & 7
            if wt == 0:
                value, pos = self.varint(pos, end)
            elif wt == 1:
                value, pos = (pos, pos + 8), pos + 8
            elif wt == 2:
                n, pos = self.varint(pos, end)
                value, pos = (pos, pos + n), pos + n
            elif wt == 5:
                value, pos = (pos, pos + 4), pos + 4
            else:
                raise ConvertError(f"{self.path}: corrupt ONNX file: wire type {wt} of field "
                                   f"{field} at byte {rec} (not a protobuf ModelProto?)")
            if pos > end or field == 0:
                raise ConvertError(f"{self.path}: corrupt or truncated ONNX file: field {field} "
                                   f"at byte {rec} runs past byte {end}")
            yield field, wt, value, rec, pos


class OnnxTensor:
    """An initializer found in the file: where its data lives and how to read it."""

    def __init__(self, name, dims, data_type, raw, external, record):
        self.name, self.dims, self.data_type = name, dims, data_type
        self.raw, self.external, self.record = raw, external, record


def scan(path):
    """(initializers [OnnxTensor], graph bytes without initializers)."""
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise ConvertError(f"cannot read {path}: {exc.strerror or exc}") from None
    with f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            raise ConvertError(f"{path}: empty file, not an ONNX model")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            return _scan(_Wire(buf, path), size)


def _scan(w, size):
    graph = None
    for field, wt, value, _, _ in w.fields(0, size):
        if field == 7 and wt == 2:
            graph = value
    if graph is None:
        raise ConvertError(f"{w.path}: not an ONNX model (no graph in the file)")
    inits, kept = [], []
    for field, wt, value, rec, end in w.fields(*graph):
        if field == 5 and wt == 2:
            inits.append(_tensor(w, value))
        else:
            kept.append(bytes(w.buf[rec:end]))
    return inits, b"".join(kept)


def _tensor(w, span):
    name, dims, dt, raw, ext, loc = None, [], 1, None, {}, 0
    for field, wt, value, _, _ in w.fields(*span):
        if field == 1:
            if wt == 2:                            # packed repeated int64
                pos, end = value
                while pos < end:
                    v, pos = w.varint(pos, end)
                    dims.append(v)
            else:
                dims.append(value)
        elif field == 2 and wt == 0:
            dt = value
        elif field == 8 and wt == 2:
            name = bytes(w.buf[value[0]:value[1]]).decode("utf-8", "replace")
        elif field == 9 and wt == 2:
            raw = value
        elif field == 13 and wt == 2:
            key = val = None
            for f2, _, v2, _, _ in w.fields(*value):
                text = bytes(w.buf[v2[0]:v2[1]]).decode("utf-8", "replace")
                if f2 == 1:
                    key = text
                elif f2 == 2:
                    val = text
            ext[key] = val
        elif field == 14 and wt == 0:
            loc = value
    if name is None:
        raise ConvertError(f"{w.path}: corrupt ONNX file: an initializer at byte {span[0]} has "
                           f"no name")
    dims = [d - (1 << 64) if d >= 1 << 63 else d for d in dims]
    return OnnxTensor(name, tuple(dims), dt, raw, ext if loc == 1 else None,
                      bytes(w.buf[span[0]:span[1]]) if raw is None and loc != 1 else None)


def read(path):
    """(list of source tensors, {name: Role}) for an ONNX model. Constant shape-only ops
    applied to initializers are folded (onnx_fold): their results are the tensors listed."""
    onnx = require("onnx", "reading ONNX models")
    inits, graph_bytes = scan(path)
    try:
        graph = onnx.GraphProto.FromString(graph_bytes)
    except Exception as exc:                      # protobuf's DecodeError and friends
        raise ConvertError(f"{path}: corrupt ONNX graph ({type(exc).__name__}: {exc})") from None
    base = os.path.dirname(os.path.abspath(path))
    stored = {}
    for t in inits:
        if t.data_type not in _ONNX_DTYPES:
            raise ConvertError(f"{path}: initializer {t.name!r} has ONNX data type "
                               f"{t.data_type}, which the converter does not read")
        dt = np.dtype(_ONNX_DTYPES[t.data_type])
        if any(d < 0 for d in t.dims):
            raise ConvertError(f"{path}: initializer {t.name!r} has negative dims {list(t.dims)}")
        nbytes = int(np.prod(t.dims, dtype=np.int64)) * dt.itemsize
        if t.external is not None:
            loader = _external(path, base, t, dt, nbytes)
        elif t.raw is not None:
            if t.raw[1] - t.raw[0] != nbytes:
                raise ConvertError(f"{path}: initializer {t.name!r} of shape {list(t.dims)} "
                                   f"needs {nbytes} bytes of raw_data, the file has "
                                   f"{t.raw[1] - t.raw[0]}")
            loader = memmap_region(path, t.raw[0], dt, t.dims)
        else:
            loader = _typed(onnx, path, t, dt)
        stored[t.name] = SourceTensor(t.name, t.dims, dt, nbytes, loader,
                                      bf16=t.data_type == _BF16)
    return _fold(path, graph, stored, onnx)


def _fold(path, graph, stored, onnx):
    """The tensors to convert and their roles: each initializer, or what the folded ops that
    read it make of it (onnx_fold's docstring: which ops, and how the results are named)."""
    from onnx import numpy_helper
    uses = onnx_fold.uses_of(graph)
    outputs = {o.name for o in graph.output}
    consts = onnx_fold.Constants(graph, {n: (t.shape, t.load) for n, t in stored.items()},
                                 numpy_helper)
    refused = {}
    tensors, out = [], {}
    for src in stored.values():
        ends = onnx_fold.follow(src.name, src.shape, uses, outputs, consts, refused)
        groups = onnx_fold.group(src.name, ends)
        for name, members in groups:
            shape, steps = members[0].shape, members[0].steps
            found = [u for e in members for u in e.uses]
            if members[0].as_stored():
                tensors.append(src)
                steps = ()
            else:
                tensors.append(_folded(src, name, members, len(groups) > 1))
            after = f" after {', '.join(s.label for s in steps)}" if steps else ""
            what = f"initializer {src.name!r}" if name == src.name else \
                f"tensor {name!r} (initializer {src.name!r})"
            out[name] = _role(path, name, shape, found, uses, refused, after, what,
                              output=any(e.output for e in members))
    return tensors, out


def _folded(src, name, members, shared):
    """The SourceTensor of a folded result: src's bytes through the steps of members[0]."""
    first = members[0]
    steps, shape = first.steps, first.shape
    load = src.load

    def fold_load():
        return onnx_fold.apply(load(), steps).reshape(shape)
    meta = {"initializer": src.name, "stored_shape": list(src.shape),
            "folded": [f"{s.label} -> {list(s.shape)}" for s in steps],
            "graph_names": [e.name for e in members]}
    if shared:
        meta["shared"] = "the initializer feeds other fold chains too"
    moved = onnx_fold.moves_data(steps, src.shape)
    return SourceTensor(name, shape, src.dtype, src.nbytes, fold_load, bf16=src.bf16,
                        meta=meta, extra_cost=src.nbytes if moved else 0,
                        aliases=(src.name,) if name != src.name else ())


def _external(path, base, t, dt, nbytes):
    loc = t.external.get("location")
    if not loc:
        raise ConvertError(f"{path}: initializer {t.name!r} is external but names no location")
    full = os.path.normpath(os.path.join(base, loc))
    if os.path.isabs(loc) or not full.startswith(base + os.sep):
        raise ConvertError(f"{path}: initializer {t.name!r}: external data location {loc!r} is "
                           f"outside the model's directory")
    try:
        offset = int(t.external.get("offset") or 0)
        length = int(t.external.get("length") or nbytes)
        size = os.path.getsize(full)
    except (ValueError, OSError) as exc:
        raise ConvertError(f"{path}: initializer {t.name!r}: external data {loc!r}: "
                           f"{getattr(exc, 'strerror', None) or exc}") from None
    if length != nbytes or offset + nbytes > size:
        raise ConvertError(f"{path}: initializer {t.name!r} of shape {list(t.dims)} needs "
                           f"{nbytes} bytes at offset {offset} of {loc!r}, which has {size} "
                           f"bytes (length field {length})")
    return memmap_region(full, offset, dt, t.dims)


def _typed(onnx, path, t, dt):
    """Loader of an initializer stored in the typed fields (float_data, ...): small tensors."""
    record = t.record

    def load():
        from onnx import numpy_helper
        try:
            arr = numpy_helper.to_array(onnx.TensorProto.FromString(record))
        except Exception as exc:
            raise ConvertError(f"{path}: initializer {t.name!r} cannot be decoded "
                               f"({type(exc).__name__}: {exc})") from None
        if arr.shape != tuple(t.dims):
            raise ConvertError(f"{path}: initializer {t.name!r} holds {arr.size} values for "
                               f"shape {list(t.dims)}")
        if t.data_type == _BF16:
            arr = arr.view(np.uint16) if arr.dtype.itemsize == 2 else arr
        return np.ascontiguousarray(arr, dtype=dt)
    return load


def _attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return a.i
    return default


def _role(path, name, shape, found_uses, uses, refused, after, what, output=False):
    """The Role of tensor `name` of `shape` read by `found_uses` [(node, input index)]. A
    weight whose layout at its Conv / Gemm / MatMul cannot be read off the tensor is an
    "undecided" Role whose origin is the error naming the path. `after` names the folded ops
    that made the tensor and `what` the tensor, for the messages."""
    found = {}
    for node, i in found_uses:
        label = f"{node.op_type} {node.name or '(unnamed)'!r} input {i}{after}"
        kind = _WEIGHT_SLOTS.get((node.op_type, i))
        if kind == "fc" and node.op_type == "MatMul" and len(shape) != 2:
            kind = "other"                     # batched matmul operand: kept as it is
        if kind in ("conv", "deconv"):
            role = Role(kind, groups=_attr(node, "group", 1), origin=label)
        elif kind == "fc":
            role = Role("fc", trans=bool(_attr(node, "transB", 0)), origin=label)
            if node.op_type == "Gemm" and _attr(node, "transA", 0) not in (0, 1):
                role = Role("other", origin=label)
        elif kind == "other":
            role = Role("other", origin=label)
        elif (node.op_type, i) in _BIAS_SLOTS:
            role = Role("bias" if len(shape) == 1 else "other", origin=label)
        elif (node.op_type, i) in _MATRIX_SLOTS:
            role = Role("matrix", origin=label)
        elif node.op_type in _VECTOR_OPS and i >= 1:
            role = Role("vector" if len(shape) == 1 else "other", origin=label)
        else:
            hop = _reaches_weight_slot(node, uses) if len(shape) >= 2 else None
            if hop is not None:
                why = refused.get(id(node))
                why = f" (not folded: {why})" if why else ""
                role = Role("undecided", origin=(
                    f"{path}: the role of {what} (shape {list(shape)}) cannot "
                    f"be decided: it reaches {hop} through {label}, which may change its "
                    f"layout{why}; name it in a rules file (role, src tag)"))
            else:
                role = Role("other", origin=label)
        found[(role.kind, role.groups, role.trans)] = role
    if len(found) > 1:
        kinds = "; ".join(r.describe() for r in found.values())
        found = {"?": Role("undecided", origin=(
            f"{path}: the role of {what} (shape {list(shape)}) cannot be "
            f"decided: its uses disagree ({kinds}); name it in a rules file"))}
    if found:
        return next(iter(found.values()))
    return Role("other", origin="graph output" if output else "unused")


def _reaches_weight_slot(node, uses, depth=8):
    """Description of the first weight slot that `node`'s outputs flow into, or None."""
    seen, frontier = set(), [node]
    for _ in range(depth):
        nxt = []
        for n in frontier:
            for out in n.output:
                for user, i in uses.get(out, ()):
                    if (user.op_type, i) in _WEIGHT_SLOTS:
                        return f"{user.op_type} {user.name or '(unnamed)'!r} input {i}"
                    if id(user) not in seen:
                        seen.add(id(user))
                        nxt.append(user)
        frontier = nxt
    return None
