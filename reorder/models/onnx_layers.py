"""The layers of an ONNX model as a runtime creates them: for each Conv / ConvTranspose / Gemm /
MatMul weight, the source and destination shapes (ONNX shape inference on the model's static
input shapes), strides, pads, dilations and groups, as an onednn_runtime.Layer. The weights'
data are never read; only small integer initializers (shapes for Reshape) are given to the
shape inference."""
import mmap
import os

import numpy as np

from ._extras import require
from .errors import ConvertError
from .onnx_reader import _ONNX_DTYPES, _WEIGHT_SLOTS, _Wire, _typed, scan
from .source import memmap_region


def parse_input_shapes(specs):
    """{name: dims} from ['NAME=1x3x224x224', ...] (or a dict)."""
    if not specs:
        return {}
    if isinstance(specs, dict):
        items = specs.items()
    else:
        items = []
        for s in ([specs] if isinstance(specs, str) else specs):
            name, eq, dims = str(s).rpartition("=")
            if not eq or not name:
                raise ConvertError(f"--input-shape {s!r}: expected NAME=DIMS, e.g. "
                                   f"input=1x3x224x224")
            items.append((name, dims))
    out = {}
    for name, dims in items:
        try:
            t = tuple(int(d) for d in (dims.split("x") if isinstance(dims, str) else dims))
        except ValueError:
            raise ConvertError(f"--input-shape {name}={dims}: dims must be integers joined by "
                               f"'x', e.g. 1x3x224x224") from None
        if not t or any(d < 1 for d in t):
            raise ConvertError(f"--input-shape {name}={dims}: dims must be positive")
        out[name] = t
    return out


def _attrs(node):
    from onnx import helper
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _small_constant(onnx, path, t):
    """A TensorProto with the values of a small integer initializer (a Reshape's shape), so
    shape inference can follow it; None for the rest."""
    from onnx import numpy_helper
    n = int(np.prod(t.dims, dtype=np.int64)) if t.dims else 1
    if t.data_type not in (6, 7) or n > 64:
        return None
    dt = np.dtype(_ONNX_DTYPES[t.data_type])
    if t.raw is not None:
        a = np.array(memmap_region(path, t.raw[0], dt, t.dims)())
    elif t.record is not None:
        a = _typed(onnx, path, t, dt)()
    else:
        return None
    return numpy_helper.from_array(a.reshape(t.dims), t.name)


def infer(path, input_shapes=None):
    """(graph, {tensor name: dims}) after shape inference with `input_shapes` set; a dynamic
    batch is 1, any other dynamic dim must be given."""
    onnx = require("onnx", "reading ONNX models")
    from onnx import helper, shape_inference
    inits, graph_bytes = scan(path)
    model = onnx.ModelProto()
    # the graph without its initializers, plus the model's opsets as the file has them
    graph = onnx.GraphProto.FromString(graph_bytes)
    opsets = _opsets(onnx, path)
    init_names = {t.name for t in inits}
    given = dict(input_shapes or {})
    inputs = [i for i in graph.input if i.name not in init_names]
    unknown = set(given) - {i.name for i in inputs}
    if unknown:
        raise ConvertError(f"{path}: --input-shape names {', '.join(sorted(unknown))}, which "
                           f"the model has no input of; its inputs: "
                           f"{', '.join(i.name for i in inputs) or '(none)'}")
    for i in inputs:
        shape = i.type.tensor_type.shape
        if i.name in given:
            dims = given[i.name]
            if len(dims) != len(shape.dim):
                raise ConvertError(f"{path}: --input-shape {i.name}: {len(dims)} dims given, "
                                   f"the input has {len(shape.dim)}")
            for d, v in zip(shape.dim, dims):
                if d.HasField("dim_value") and d.dim_value != v:
                    raise ConvertError(f"{path}: --input-shape {i.name}: dim {v} where the "
                                       f"model fixes {d.dim_value}")
                d.dim_value = v
            continue
        for k, d in enumerate(shape.dim):
            if not d.HasField("dim_value") or d.dim_value <= 0:
                if k == 0:
                    d.dim_value = 1                 # a dynamic batch: one image
                else:
                    raise ConvertError(
                        f"{path}: input {i.name!r} has a dynamic dim {k} "
                        f"({d.dim_param or '?'}); give its shape with --input-shape "
                        f"{i.name}=" + "x".join(str(x.dim_value or '?') for x in shape.dim))
    for t in inits:
        c = _small_constant(onnx, path, t)
        if c is not None:
            graph.initializer.append(c)
        elif t.name not in {i.name for i in graph.input}:
            graph.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    model.graph.CopyFrom(graph)
    model.opset_import.extend(opsets)
    model.ir_version = 8
    try:
        inferred = shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    except Exception as exc:                      # onnx raises its own InferenceError types
        raise ConvertError(f"{path}: ONNX shape inference failed ({type(exc).__name__}: "
                           f"{str(exc).strip().splitlines()[0] if str(exc) else ''}); give the "
                           f"inputs' shapes with --input-shape NAME=DIMS, or convert without "
                           f"asking oneDNN (--onednn-lib none)") from None
    shapes = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.input) + \
            list(inferred.graph.output):
        dims = vi.type.tensor_type.shape.dim
        if vi.type.tensor_type.HasField("shape") and all(d.HasField("dim_value") for d in dims):
            shapes[vi.name] = tuple(int(d.dim_value) for d in dims)
    return graph, shapes


def _opsets(onnx, path):
    """The model's opset_import entries (field 8 of ModelProto), read from the file."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        w = _Wire(buf, path)
        out = []
        for field, wt, value, _, _ in w.fields(0, os.fstat(f.fileno()).st_size):
            if field == 8 and wt == 2:
                out.append(onnx.OperatorSetIdProto.FromString(bytes(buf[value[0]:value[1]])))
    return out


def layers(path, input_shapes=None, src_dtype="f32", src_layout="nhwc"):
    """{weight tensor name (as its node reads it): (Layer, node label, None)} for the model's
    Conv / ConvTranspose / Gemm / 2-D MatMul weights.
    Failures are values, not raised: (None, label, message), so that a weight whose layout
    is not asked (a rule gives it, or its role is decided otherwise) never fails on them."""
    from . import onednn_runtime as R
    onnx = require("onnx", "reading ONNX models")
    try:
        graph, shapes = infer(path, input_shapes)
        failed = None
    except ConvertError as exc:
        if "--input-shape names" in str(exc):
            raise                                  # the user's own mistake: say it now
        graph, shapes, failed = onnx.GraphProto.FromString(scan(path)[1]), {}, str(exc)
    out = {}
    for node in graph.node:
        kind = _WEIGHT_SLOTS.get((node.op_type, 1))
        if kind is None or len(node.input) < 2:
            continue
        label = f"{node.op_type} {node.name or '(unnamed)'!r}"
        x, wname = node.input[0], node.input[1]
        y = node.output[0] if node.output else None
        if failed:
            out.setdefault(wname, (None, label, failed))
            continue
        if x not in shapes or wname not in shapes or y not in shapes:
            missing = x if x not in shapes else (wname if wname not in shapes else y)
            out.setdefault(wname, (None, label, (
                f"{path}: {label}: shape inference gave no static shape for {missing!r}; give "
                f"the inputs' shapes with --input-shape NAME=DIMS, or a rule with dst for its "
                f"weight {wname!r}")))
            continue
        xs, ws, ys = shapes[x], shapes[wname], shapes[y]
        a = _attrs(node)
        try:
            if node.op_type in ("Conv", "ConvTranspose"):
                layer = _conv_layer(R, node.op_type, a, xs, ws, ys, src_dtype, src_layout)
            elif node.op_type == "Gemm":
                if a.get("transA", 0):
                    xs = xs[::-1]
                ws2 = ws if a.get("transB", 0) else ws[::-1]      # (N, K)
                layer = R.make_layer("ip", xs, ws2, src_dtype=src_dtype)
            else:
                if len(ws) != 2:
                    continue                       # batched operands are kept as stored
                layer = R.make_layer("matmul", xs, ws, src_dtype=src_dtype)
        except ValueError as exc:
            out.setdefault(wname, (None, label, f"{path}: {label}: {exc}"))
            continue
        out.setdefault(wname, (layer, label, None))
    return out


def _conv_layer(R, op, a, xs, ws, ys, src_dtype, src_layout):
    sp = len(xs) - 2
    k = tuple(a.get("kernel_shape", ws[2:]))
    st = tuple(a.get("strides", [1] * sp))
    dl = tuple(a.get("dilations", [1] * sp))
    g = int(a.get("group", 1))
    pads = list(a.get("pads", [0] * 2 * sp))
    auto = a.get("auto_pad", b"NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else auto
    ext = [(k[d] - 1) * dl[d] + 1 for d in range(sp)]
    if op == "Conv":
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            for d in range(sp):
                total = max((ys[2 + d] - 1) * st[d] + ext[d] - xs[2 + d], 0)
                lo = total // 2 if auto == "SAME_UPPER" else total - total // 2
                pads[d], pads[sp + d] = lo, total - lo
        elif auto == "VALID":
            pads = [0] * 2 * sp
        return R.make_layer("conv", xs, ws, st, pads, dl, g, src_dtype, src_layout,
                            dst_dims=ys)
    # ConvTranspose: the end pads follow from the inferred output (output_padding,
    # output_shape and auto_pad included), as a runtime passes them to oneDNN
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        for d in range(sp):
            total = st[d] * (xs[2 + d] - 1) + ext[d] - ys[2 + d]
            lo = total // 2 if auto == "SAME_UPPER" else total - total // 2
            pads[d] = max(lo, 0)
    elif auto == "VALID":
        pads = [0] * 2 * sp
    for d in range(sp):
        pads[sp + d] = (xs[2 + d] - 1) * st[d] - pads[d] + ext[d] - ys[2 + d]
    return R.make_layer("deconv", xs, ws, st, pads, dl, g, src_dtype, src_layout, dst_dims=ys)
