"""Targets: what each runtime consumes, as a decision per weight role.

A decision says how one source tensor becomes its output tensors: kept as it is, reordered to a
tag (with a dtype), quantized to s8 with scales and compensation, or packed as an OpenCL image.
Where each choice comes from is written in docs/convert.md.
"""
import os
from dataclasses import dataclass

from ..core.errors import ReorderError
from ..core.tags import parse_tag
from .errors import ConvertError
from .measured import layer_signature, measurements, signature
from .query import swap_ab

ISAS = ("avx512_core_vnni", "avx512_core", "avx2_vnni", "avx2")
PRESETS = ("onednn-f32", "onednn-int8", "onednn-int4", "onednn-int4-asym", "onednn-f8", "mace-gpu",
           "mnn-gpu", "tvm:LAYOUT", "plain")
LOWBIT_PRESETS = {"onednn-int4": "s4", "onednn-int4-asym": "u4", "onednn-f8": "f8_e4m3"}
ASYMMETRIC_PRESETS = ("onednn-int4-asym",)     # min/max per group, with zero points
_ABC = "abcdefghijkl"


@dataclass(frozen=True)
class Decision:
    action: str                   # keep | reorder | quantize | lowbit | image
    tag: str = None               # destination tag (reorder, quantize)
    dtype: str = None             # destination dtype; None = the source's
    mask: int = 0                 # quantize: dims with their own scale and compensation sum
    compensation: tuple = ()      # quantize: ("s8s8",), ("zp",), both or ()
    scale_adjust: float = 1.0
    kind: str = None              # image kind
    engine: str = "mace"          # image: whose layout of `kind` (reorder.opencl's engine=)
    stored: bool = False          # reorder the array as stored (TVM: ONNX's O, I/G, H, W)
    asymmetric: bool = False      # lowbit: min/max scales and zero points per group
    why: str = ""                 # the rule that chose it, for the metadata


@dataclass(frozen=True)
class Target:
    name: str                     # onednn-f32, onednn-int8, mace-gpu, mnn-gpu, tvm:..., plain
    isa: str = "avx512_core_vnni"
    activations: str = "s8"       # int8: the convolution's source type (s8 -> s8s8 compensation)
    dtype: str = None             # f32 / f16 (images); None = the preset's default
    # asking oneDNN (onednn-f32 / onednn-int8, docs/convert.md): whether --isa was given (then
    # oneDNN is limited to it), the runtime's source layout and float source type, which
    # library (None: find one; "none": the tables), and shapes of dynamic model inputs
    isa_given: bool = False
    src_layout: str = "nhwc"
    float_activations: str = "f32"
    onednn_lib: str = None
    input_shapes: tuple = ()

    @property
    def asks_onednn(self):
        return self.family in ("onednn-f32", "onednn-int8") and self.onednn_lib != "none"

    @property
    def src_dtype(self):
        """The source type of the primitives the runtime creates."""
        return self.activations if self.family == "onednn-int8" else self.float_activations

    @property
    def family(self):
        return self.name.split(":", 1)[0]


def make_target(name, isa=None, activations=None, dtype=None, src_layout=None, onednn_lib=None,
                input_shapes=None):
    if not isinstance(name, str):
        raise ConvertError(f"target must be a string such as 'onednn-f32', got {name!r}")
    family = name.split(":", 1)[0]
    if family not in ("onednn-f32", "onednn-int8", "onednn-int4", "onednn-int4-asym",
                      "onednn-f8", "mace-gpu", "mnn-gpu", "tvm", "plain"):
        raise ConvertError(f"unknown target {name!r}; targets: {', '.join(PRESETS)}")
    if family == "tvm":
        layout = name[4:]
        if not layout:
            raise ConvertError("target tvm:LAYOUT needs a layout, e.g. tvm:OIHW16i16o")
        try:
            parse_tag(layout, 4)
        except ReorderError as exc:
            raise ConvertError(f"target {name!r}: {exc}") from None
    if isa is not None and isa not in ISAS:
        raise ConvertError(f"unknown ISA {isa!r}; ISAs: {', '.join(ISAS)}")
    if isa is not None and family not in ("onednn-int8", "onednn-f32"):
        raise ConvertError(f"--isa applies to onednn-int8 and onednn-f32 only, not {name!r}")
    if family == "onednn-int8" and activations not in (None, "s8", "u8"):
        raise ConvertError(f"onednn-int8: activations must be s8 or u8, got {activations!r}")
    if family != "onednn-int8" and activations not in (None, "f32", "bf16"):
        raise ConvertError(f"{name}: activations must be f32 or bf16 (u8 / s8 are for "
                           f"onednn-int8), got {activations!r}")
    if src_layout not in (None, "nhwc", "nchw"):
        raise ConvertError(f"src_layout must be nhwc or nchw, got {src_layout!r}")
    if onednn_lib is not None and not isinstance(onednn_lib, (str, os.PathLike)):
        raise ConvertError(f"onednn_lib must be a path or 'none', got {onednn_lib!r}")
    if dtype not in (None, "f32", "f16"):
        raise ConvertError(f"dtype must be f32 or f16, got {dtype!r}")
    if dtype == "f16" and family not in ("mace-gpu", "mnn-gpu", "onednn-f32", "tvm", "plain"):
        raise ConvertError(f"dtype f16 does not apply to {name!r}")
    from .onnx_layers import parse_input_shapes
    shapes = tuple(sorted(parse_input_shapes(input_shapes).items()))
    int8 = family == "onednn-int8"
    return Target(name, isa or "avx512_core_vnni", (activations if int8 else None) or "s8", dtype,
                  isa is not None, src_layout or "nhwc",
                  (activations if not int8 else None) or "f32",
                  os.fspath(onednn_lib) if onednn_lib is not None else None, shapes)


def _sp(view, grouped):
    """Letters of the spatial dims of a weight view."""
    first = 3 if grouped else 2
    return _ABC[first:len(view.dims)]


def decide(target, role, view, layer=None, tables=None):
    """The Decision for one tensor of `role` seen as `view`; `layer` is its
    onednn_runtime.Layer when the graph gave one. onednn-f32 / onednn-int8 weights come from
    the measured tables (measured.py) where they cover the target's ISA and source, else from
    the rules below; `tables`: a measured.Measurements to use instead of the shipped one, or
    False for the rules alone."""
    fam = target.family
    if fam == "plain":
        return Decision("keep", why="plain target")
    if fam in ("onednn-f32", "onednn-int8") and tables is not False:
        d = _from_measurements(target, role, view, layer, tables)
        if d is not None:
            return d
    if fam == "onednn-f32":
        return _onednn_f32(target, role, view)
    if fam == "onednn-int8":
        return _onednn_int8(target, role, view)
    if fam in LOWBIT_PRESETS:
        return _onednn_lowbit(target, role, view)
    if fam == "mace-gpu":
        return _mace(target, role, view)
    if fam == "mnn-gpu":
        return _mnn(target, role, view)
    return _tvm(target, role, view)


def measured_signature(role, view, layer=None):
    """(Signature, source layout) of a weight for the measured tables: the layer's when the
    graph gave one, else what its role and view tell (a fully connected weight with transB is
    a Gemm's inner product, without it a MatMul's B)."""
    if layer is not None:
        return layer_signature(layer), layer.src_layout
    if role.kind == "fc":
        k, n = view.dims
        return (signature("ip", (n, k)) if role.trans else signature("matmul", (k, n))), "nchw"
    return signature(role.kind, view.dims, role.groups), None


def _from_measurements(target, role, view, layer, tables):
    """The Decision of the nearest measured layer (measured.py's rule), or None when the
    measurements do not cover this weight."""
    if role.kind not in ("conv", "deconv", "fc"):
        return None
    m = tables if tables is not None else measurements()
    if target.isa not in m.isas:
        return None
    sig, layout = measured_signature(role, view, layer)
    src_dtype = layer.src_dtype if layer is not None else target.src_dtype
    row = m.nearest(target.isa, src_dtype, layout or target.src_layout, sig)
    if row is None:
        return None
    tag = swap_ab(row.tag) if sig.kind == "ip" else row.tag     # ip: (N, K); the view (K, N)
    r = row.layer
    g = f" group {r['groups']}" if r["groups"] > 1 else ""
    why = (f"measured table (oneDNN {m.version}, {row.isa}): {row.implementation} {row.tag} "
           f"for the nearest measured layer, {row.network}'s {r['kind']} weights "
           f"{r['weights_dims']}{g} on src {r['src_dims']}")
    if target.family == "onednn-f32":
        return Decision("reorder", tag, _float_dtype(target), why=why)
    return Decision("quantize", tag, "s8", _int8_mask(role, view), row.compensation,
                    row.scale_adjust, why=why)


def _float_dtype(target):
    return target.dtype or "f32"


def _onednn_f32(target, role, view):
    dt = _float_dtype(target)
    if role.kind in ("conv", "deconv"):
        grouped = role.groups > 1
        sp = _sp(view, grouped)
        if view.depthwise:
            return Decision("reorder", "A" + _ABC[1:3] + sp + "16a", dt,
                            why="depthwise: Goihw16g")
        o, i = ("a", "b") if role.kind == "conv" else ("b", "a")   # deconv: memory I before O
        if grouped:
            outer = "a" + ("BC" if role.kind == "conv" else "CB")
            return Decision("reorder", outer + sp + "16c16b", dt,
                            why="grouped: gOIhw16i16o" if role.kind == "conv"
                            else "grouped deconvolution: gIOhw16i16o")
        outer = "AB" if role.kind == "conv" else "BA"
        return Decision("reorder", outer + sp + "16b16a", dt,
                        why="OIhw16i16o" if role.kind == "conv" else "deconvolution: IOhw16i16o")
    return _keep_float(role, view, dt)


def _keep_float(role, view, dt):
    """Biases, vectors and the rest: plain, floats in the target's float type."""
    return Decision("keep", dtype=dt, why=f"{role.kind}: plain")


def _int8_conv_tag(target, role, view):
    """(tag, why) of oneDNN 3.2's int8 convolution weights for this ISA and shape."""
    isa, grouped = target.isa, role.groups > 1
    sp = _sp(view, grouped)
    if view.depthwise:
        if isa == "avx512_core_vnni" and target.activations == "u8" and len(view.dims) == 5:
            return "dbceA16a", "depthwise, u8 source: brdgmm_dw dbceA16a"
        g = 16 if isa.startswith("avx512") else 8
        return "A" + _ABC[1:3] + sp + f"{g}a", f"depthwise: Goihw{g}g (jit_int8)"
    dims = view.dims
    if grouped:
        ocg = dims[1]
        if isa == "avx2_vnni":
            blk = 32 if ocg % 32 == 0 else 24
            return "aB" + sp + f"C{blk}b4c", f"grouped, avx2_vnni: brgconv aBdeC{blk}b4c"
        wide = 16 if isa.startswith("avx512") else 8
        for ob, tail in ((16, "4c16b4c"), (8, "2c8b4c"), (4, "4b4c")):
            if ob <= wide and ocg % ob == 0:
                return "aBC" + sp + tail, f"grouped: jit_int8, {ob}o block (OC per group {ocg})"
        return "aBC" + sp + "4b4c", f"grouped: jit_int8, 4o block (OC per group {ocg})"
    oc, ic = dims[0], dims[1]
    if isa == "avx512_core_vnni" and ic >= 16:
        for blk in (64, 48, 32, 16):
            if oc / (-(-oc // blk) * blk) >= 0.85:
                break
        return "A" + sp + f"B{blk}a4b", f"brgconv AcdB{blk}a4b (IC {ic} >= 16, OC {oc})"
    if isa == "avx2_vnni":
        blk = 32 if oc % 32 == 0 else 24
        return "A" + sp + f"B{blk}a4b", f"avx2_vnni brgconv AcdB{blk}a4b"
    if isa == "avx2":
        return "AB" + sp + "2b8a4b", "avx2 jit_int8: OIhw2i8o4i"
    return "AB" + sp + "4b16a4b", "jit_int8: OIhw4i16o4i"


def _int8_deconv_tag(target, role, view):
    """(tag, why) of int8 deconvolution weights over oneDNN's (O, I, ...) / (G, O/G, I/G, ...)
    view of ONNX's (I, O/G, ...): a table read from oneDNN 3.2's sources, not measured.

    Ungrouped: on the VNNI ISAs brgemm_deconvolution_fwd_t runs a brgconv on these same
    weights (stride 1: a forward convolution that inverts the spatial index itself; strided:
    the backward-data convolution of the O/I-swapped weights, whose IhwO{n}i4o is AcdB{n}a4b
    here), and where it declines, as on avx512_core / avx2, jit_*_x8s8s32x_deconvolution
    takes OIhw4i16o4i / OIhw2i8o4i: the convolution rule's tags. Grouped and depthwise weights
    go to jit_*_x8s8s32x_deconvolution, whose block must divide both the input and the output
    channels per group, and which takes depthwise ones with a u8 source only."""
    isa, dims = target.isa, view.dims
    wide = 16 if isa.startswith("avx512") else 8
    if view.depthwise:
        if target.activations == "s8" or len(dims) > 5:
            raise ConvertError("onednn-int8: oneDNN's int8 deconvolution kernels run depthwise "
                               "deconvolution in 1-D and 2-D with a u8 source only "
                               "(--activations u8); give the tensor a rule with dst")
        return "A" + _ABC[1:3] + _sp(view, True) + f"{wide}a", \
            f"depthwise deconvolution, u8 source: Goihw{wide}g (jit_int8 deconvolution)"
    if role.groups > 1:
        ocg, icg = dims[1], dims[2]
        for ob, tail in ((16, "4c16b4c"), (8, "2c8b4c"), (4, "4b4c")):
            if ob <= wide and ocg % ob == 0 and icg % ob == 0:
                return "aBC" + _sp(view, True) + tail, \
                    f"grouped deconvolution: jit_int8 deconvolution, {ob}-channel block " \
                    f"(O {ocg}, I {icg} per group)"
        raise ConvertError(f"onednn-int8: grouped deconvolution with {ocg} output and {icg} "
                           f"input channels per group: oneDNN's int8 deconvolution kernels "
                           f"need both to be multiples of 4; give the tensor a rule with dst")
    tag, why = _int8_conv_tag(target, role, view)
    return tag, f"deconvolution as the convolution rule: {why}"


def _int8_mask(role, view):
    """oneDNN's int8 weight scale and compensation mask: per output channel (dim 1 of a
    matmul's (K, N), dim 0 of a convolution's O, dims 0 and 1 of a grouped one's (G, O)).
    O is the deconvolution's output in its view too, so its masks are the convolution's."""
    if role.kind == "fc":
        return 2
    return 1 if (view.depthwise or role.groups == 1) else 3


def _onednn_int8(target, role, view):
    comp = ("s8s8",) if target.activations == "s8" else ()
    adjust = 0.5 if target.isa in ("avx512_core", "avx2") else 1.0
    if role.kind in ("conv", "deconv"):
        tag, why = (_int8_conv_tag if role.kind == "conv" else _int8_deconv_tag)(
            target, role, view)
        return Decision("quantize", tag, "s8", _int8_mask(role, view), comp, adjust, why=why)
    if role.kind == "fc":
        return Decision("quantize", "BA16a64b4a", "s8", _int8_mask(role, view), comp, adjust,
                        why="matmul weights BA16a64b4a")
    return _keep_float(role, view, "f32")


def _onednn_lowbit(target, role, view):
    """MatMul / Gemm weights as oneDNN's matmul weight decompression takes them: plain (K, N)
    `ab`, s4 or f8_e4m3, f32 scales per group of K (tasks.lowbit_group); onednn-int4-asym: u4
    with a u4 zero point per group as well (AWQ / GPTQ style). Convolutions keep
    the onednn-f32 layouts: oneDNN decompresses low-bit weights in matmul only."""
    if role.kind == "fc":
        dt = LOWBIT_PRESETS[target.family]
        if target.family in ASYMMETRIC_PRESETS:
            return Decision("lowbit", "ab", dt, asymmetric=True,
                            why=f"matmul weight decompression: {dt} ab (K, N), grouped scales "
                                f"and {dt} zero points")
        return Decision("lowbit", "ab", dt,
                        why=f"matmul weight decompression: {dt} ab (K, N), grouped scales")
    return _onednn_f32(target, role, view)


def _mace(target, role, view):
    dt = _float_dtype(target)
    if role.kind in ("conv", "deconv"):
        if len(view.dims) not in (4, 5):
            raise ConvertError("mace-gpu packs 2-D convolution weights only")
        if view.depthwise and role.kind == "conv":
            return Decision("image", dtype=dt, kind="dw_conv2d_filter", why="depthwise")
        if role.groups > 1:
            raise ConvertError(f"mace-gpu has no image kind for grouped weights (group "
                               f"{role.groups}); give the tensor a rule (dst tag) instead")
        return Decision("image", dtype=dt, kind="conv2d_filter", why="convolution filter")
    if role.kind == "fc":
        return Decision("image", dtype=dt, kind="weight_width", why="fully connected weights")
    if role.kind in ("bias", "vector"):
        return Decision("image", dtype=dt, kind="argument", why=role.kind)
    return Decision("keep", why=f"{role.kind}: plain")


def _mnn(target, role, view):
    """MNN's OpenCL image backend (docs/convert.md cites the MNN sources for each line)."""
    dt = _float_dtype(target)
    if role.kind in ("conv", "deconv"):
        if len(view.dims) not in (4, 5):
            raise ConvertError("mnn-gpu packs 2-D convolution weights only")
        if view.depthwise:
            return Decision("image", dtype=dt, kind="dw_conv2d_filter", engine="mnn",
                            why="depthwise" if role.kind == "conv" else "depthwise deconvolution")
        if role.groups > 1:
            raise ConvertError(f"mnn-gpu has no image kind for grouped weights (group "
                               f"{role.groups}); give the tensor a rule (dst tag) instead")
        if len(view.dims) != 4:
            raise ConvertError("mnn-gpu packs 2-D convolution weights only")
        if role.kind == "deconv":
            # DeconvExecution packs the (O, I, H, W) filter without padding I: MACE's image
            return Decision("image", dtype=dt, kind="conv2d_filter", engine="mace",
                            why="deconvolution filter (I wide, as MNN's DeconvExecution)")
        return Decision("image", dtype=dt, kind="conv2d_filter", engine="mnn",
                        why="convolution filter (ROUND_UP(I, 4) wide)")
    if role.kind == "fc":
        # MNN's converter turns Gemm/MatMul with a constant B into a 1x1 Convolution
        return Decision("image", dtype=dt, kind="conv2d_filter", engine="mnn",
                        why="fully connected weights as MNN's 1x1 convolution filter")
    if role.kind in ("bias", "vector"):
        return Decision("image", dtype=dt, kind="argument", engine="mnn", why=role.kind)
    return Decision("keep", why=f"{role.kind}: plain")


def _tvm(target, role, view):
    layout = target.name[4:]
    if role.kind == "conv" and len(view.dims) in (4, 5) and not view.depthwise:
        return Decision("reorder", layout, target.dtype, stored=True,
                        why=f"TVM kernel layout {layout} of the stored (O, I/G, H, W)")
    return Decision("keep", dtype=target.dtype, why=f"{role.kind}: plain")
