"""Ask the user's oneDNN (3.x, through its C API with ctypes) which weights layout a primitive
wants, so the converter writes exactly that instead of guessing from tables.

oneDNN only answers the question (a primitive descriptor built with the weights
`format_tag::any`, then its weights memory descriptor read back); the bytes are still written
by reorder's own kernels. A front-end module: it uses reorder's public API, nothing in the
package's lower layers imports it.
"""
import ctypes as C
import functools
import json
import math
import os
import subprocess
import sys
import threading
import warnings
from dataclasses import asdict, dataclass

from ..core.desc import Desc
from ..core.errors import ReorderError
from .errors import ConvertError

_ABC = "abcdefghijkl"
MAX_NDIMS = 12

# values from oneDNN 3.x's dnnl_types.h / dnnl_common_types.h (stable across 3.x)
_DT = {"f16": 1, "bf16": 2, "f32": 3, "s32": 4, "s8": 5, "u8": 6}
_DT_NAME = {v: k for k, v in _DT.items()}
_DT_SIZE = {"f16": 2, "bf16": 2, "f32": 4, "s32": 4, "s8": 1, "u8": 1}
_FORMAT_TAG_ANY = 1
_FORMAT_KIND_BLOCKED = 2
_FORWARD_INFERENCE = 0x60
_CONVOLUTION_DIRECT = 0x1
_DECONVOLUTION_DIRECT = 0xA
_CPU = 1
ARG_SRC, ARG_DST, ARG_WEIGHTS, ARG_BIAS = 1, 17, 33, 41
ARG_FROM, ARG_TO = ARG_SRC, ARG_DST
ARG_ATTR_SCALES, ARG_ATTR_ZERO_POINTS = 4096, 8192
_Q_IMPL_INFO_STR = 8
_Q_WEIGHTS_MD = 131
_Q_NDIMS, _Q_DIMS, _Q_DATA_TYPE, _Q_OFFSET0 = 256, 257, 258, 259
_Q_PADDED_DIMS, _Q_PADDED_OFFSETS, _Q_FORMAT_KIND = 260, 261, 262
_Q_INNER_NBLKS, _Q_INNER_BLKS, _Q_INNER_IDXS = 263, 264, 265
_Q_STRIDES = 14
# dnnl_cpu_isa_t: each ISA's value contains the bits of every ISA below it
ISA_VALUES = {"sse41": 0x1, "avx": 0x3, "avx2": 0x7, "avx2_vnni": 0xF, "avx2_vnni_2": 0x1F,
              "avx512_core": 0x27, "avx512_core_vnni": 0x67, "avx512_core_bf16": 0xE7,
              "avx10_1_512": 0x1EF, "avx512_core_fp16": 0x1EF,
              "avx10_1_512_amx": 0xFEF, "avx512_core_amx": 0xFE7,
              "avx10_1_512_amx_fp16": 0x1FEF, "avx512_core_amx_fp16": 0x1FEF}
_ISA_NAME = {}
for _n, _v in ISA_VALUES.items():
    _ISA_NAME.setdefault(_v, _n)
_VNNI_BITS = (0x8, 0x40)       # avx2_vnni's and avx512_core_vnni's own bits

Dims = C.c_int64 * MAX_NDIMS
_vp = C.c_void_p


class OnednnError(ConvertError):
    """oneDNN could not be loaded, or refused a layer."""


class _Version(C.Structure):
    _fields_ = [("major", C.c_int), ("minor", C.c_int), ("patch", C.c_int),
                ("hash", C.c_char_p), ("cpu_runtime", C.c_uint), ("gpu_runtime", C.c_uint)]


class ExecArg(C.Structure):
    _fields_ = [("arg", C.c_int), ("memory", _vp)]


def find_library(path=None):
    """The oneDNN library to ask: `path`, else $ONEDNN_LIB, else the libdnnl.so.3 of an
    installed onednn-cpu-gomp (or onednn) wheel; None when there is none."""
    if path:
        return os.fspath(path)
    env = os.environ.get("ONEDNN_LIB")
    if env:
        return env
    import importlib.metadata as md
    for dist in ("onednn-cpu-gomp", "onednn-cpu-iomp", "onednn-cpu-tbb", "onednn"):
        try:
            files = md.distribution(dist).files or ()
        except md.PackageNotFoundError:
            continue
        for f in files:
            if f.name == "libdnnl.so.3":
                p = md.distribution(dist).locate_file(f)
                if os.path.exists(p):
                    return os.path.realpath(p)
    return None


def _status(st, what):
    if st != 0:
        raise OnednnError(f"oneDNN refused {what} (dnnl_status {st})")


class Library:
    """A loaded oneDNN 3.x: its version is checked before any other function is declared or
    called, so a library that is not oneDNN 3.x cannot crash the process through a wrong
    signature."""

    def __init__(self, path):
        self.path = os.fspath(path)
        try:
            lib = C.CDLL(self.path)
        except OSError as exc:
            raise OnednnError(f"cannot load oneDNN from {self.path}: {exc}") from None
        try:
            fn = lib.dnnl_version
        except AttributeError:
            raise OnednnError(f"{self.path} is not oneDNN: it has no dnnl_version(); give "
                              f"--onednn-lib / ONEDNN_LIB the path of libdnnl.so.3") from None
        fn.restype = C.POINTER(_Version)
        fn.argtypes = []
        v = fn().contents
        self.version = (v.major, v.minor, v.patch)
        self.hash = (v.hash or b"").decode(errors="replace")
        if v.major != 3:
            raise OnednnError(f"{self.path} is oneDNN {v.major}.{v.minor}.{v.patch}; the "
                              f"converter speaks oneDNN 3.x's C API only")
        self._lib = lib
        self._declare()
        self._lock = threading.Lock()
        self.engine = _vp()
        _status(lib.dnnl_engine_create(C.byref(self.engine), _CPU, 0), "a CPU engine")
        self.stream = _vp()
        _status(lib.dnnl_stream_create(C.byref(self.stream), self.engine, 1), "a stream")
        self.isa_value = lib.dnnl_get_effective_cpu_isa()
        self.isa = _ISA_NAME.get(self.isa_value, f"isa_0x{self.isa_value:x}")

    @property
    def version_str(self):
        return ".".join(map(str, self.version))

    def _declare(self):
        L, P = self._lib, C.POINTER
        sigs = {
            "dnnl_get_effective_cpu_isa": ([], C.c_int),
            "dnnl_engine_create": ([P(_vp), C.c_int, C.c_size_t], C.c_int),
            "dnnl_stream_create": ([P(_vp), _vp, C.c_uint], C.c_int),
            "dnnl_stream_wait": ([_vp], C.c_int),
            "dnnl_memory_desc_create_with_tag": ([P(_vp), C.c_int, Dims, C.c_int, C.c_int],
                                                 C.c_int),
            "dnnl_memory_desc_create_with_strides": ([P(_vp), C.c_int, Dims, C.c_int, Dims],
                                                     C.c_int),
            "dnnl_memory_desc_clone": ([P(_vp), _vp], C.c_int),
            "dnnl_memory_desc_destroy": ([_vp], C.c_int),
            "dnnl_memory_desc_query": ([_vp, C.c_int, _vp], C.c_int),
            "dnnl_memory_desc_get_size": ([_vp], C.c_size_t),
            "dnnl_primitive_attr_create": ([P(_vp)], C.c_int),
            "dnnl_primitive_attr_destroy": ([_vp], C.c_int),
            "dnnl_primitive_attr_set_scales_mask": ([_vp, C.c_int, C.c_int], C.c_int),
            "dnnl_primitive_attr_set_zero_points_mask": ([_vp, C.c_int, C.c_int], C.c_int),
            "dnnl_convolution_forward_primitive_desc_create": (
                [P(_vp), _vp, C.c_int, C.c_int, _vp, _vp, _vp, _vp, Dims, Dims, Dims, Dims,
                 _vp], C.c_int),
            "dnnl_deconvolution_forward_primitive_desc_create": (
                [P(_vp), _vp, C.c_int, C.c_int, _vp, _vp, _vp, _vp, Dims, Dims, Dims, Dims,
                 _vp], C.c_int),
            "dnnl_inner_product_forward_primitive_desc_create": (
                [P(_vp), _vp, C.c_int, _vp, _vp, _vp, _vp, _vp], C.c_int),
            "dnnl_matmul_primitive_desc_create": ([P(_vp), _vp, _vp, _vp, _vp, _vp, _vp],
                                                  C.c_int),
            "dnnl_reorder_primitive_desc_create": ([P(_vp), _vp, _vp, _vp, _vp, _vp], C.c_int),
            "dnnl_primitive_desc_query_md": ([_vp, C.c_int, C.c_int], _vp),
            "dnnl_primitive_desc_query": ([_vp, C.c_int, C.c_int, _vp], C.c_int),
            "dnnl_primitive_desc_destroy": ([_vp], C.c_int),
            "dnnl_primitive_create": ([P(_vp), _vp], C.c_int),
            "dnnl_primitive_destroy": ([_vp], C.c_int),
            "dnnl_primitive_execute": ([_vp, _vp, C.c_int, _vp], C.c_int),
            "dnnl_memory_create": ([P(_vp), _vp, _vp, _vp], C.c_int),
            "dnnl_memory_destroy": ([_vp], C.c_int),
        }
        for name, (args, res) in sigs.items():
            try:
                f = getattr(L, name)
            except AttributeError:
                raise OnednnError(f"{self.path} (oneDNN {self.version_str}) has no "
                                  f"{name}()") from None
            f.argtypes, f.restype = args, res
        self.L = L

    # -- memory descriptors -------------------------------------------------------------
    def md_strides(self, dims, dtype, strides):
        md = _vp()
        _status(self.L.dnnl_memory_desc_create_with_strides(
            C.byref(md), len(dims), Dims(*dims), _DT[dtype], Dims(*strides)),
            f"a {dtype} memory descriptor of dims {list(dims)}")
        return md

    def md_plain(self, dims, dtype, order=None):
        """A dense descriptor with dims laid out in `order` (outermost first; default row-major)."""
        order = list(range(len(dims))) if order is None else list(order)
        strides, s = [0] * len(dims), 1
        for d in reversed(order):
            strides[d] = s
            s *= max(dims[d], 1)
        return self.md_strides(dims, dtype, strides)

    def md_any(self, dims, dtype):
        md = _vp()
        _status(self.L.dnnl_memory_desc_create_with_tag(
            C.byref(md), len(dims), Dims(*dims), _DT[dtype], _FORMAT_TAG_ANY),
            f"a {dtype} 'any' descriptor of dims {list(dims)}")
        return md

    def md_read(self, md):
        """Every field the 3.x query API gives of a memory descriptor."""
        L = self.L

        def q_int(what):
            r = C.c_int()
            _status(L.dnnl_memory_desc_query(md, what, C.byref(r)), "a descriptor query")
            return r.value

        def q_arr(what, n):
            p = C.POINTER(C.c_int64)()
            _status(L.dnnl_memory_desc_query(md, what, C.byref(p)), "a descriptor query")
            return [int(p[i]) for i in range(n)]
        nd = q_int(_Q_NDIMS)
        off = C.c_int64()
        _status(L.dnnl_memory_desc_query(md, _Q_OFFSET0, C.byref(off)), "a descriptor query")
        out = {"ndims": nd, "dims": q_arr(_Q_DIMS, nd), "data_type": q_int(_Q_DATA_TYPE),
               "format_kind": q_int(_Q_FORMAT_KIND), "padded_dims": q_arr(_Q_PADDED_DIMS, nd),
               "padded_offsets": q_arr(_Q_PADDED_OFFSETS, nd), "offset0": off.value,
               "size": int(L.dnnl_memory_desc_get_size(md))}
        if out["format_kind"] == _FORMAT_KIND_BLOCKED:
            nb = q_int(_Q_INNER_NBLKS)
            out.update(strides=q_arr(_Q_STRIDES, nd), inner_blks=q_arr(_Q_INNER_BLKS, nb),
                       inner_idxs=q_arr(_Q_INNER_IDXS, nb))
        return out

    # -- primitive descriptors ----------------------------------------------------------
    def _attr(self, int8, groups, src_zero_point, weights_kind):
        if not int8:
            return None
        a = _vp()
        _status(self.L.dnnl_primitive_attr_create(C.byref(a)), "an attribute")
        wmask = {"conv": 3 if groups > 1 else 1, "deconv": 3 if groups > 1 else 1,
                 "ip": 1, "matmul": 2}[weights_kind]
        _status(self.L.dnnl_primitive_attr_set_scales_mask(a, ARG_SRC, 0), "the src scale")
        _status(self.L.dnnl_primitive_attr_set_scales_mask(a, ARG_WEIGHTS, wmask),
                "per-output-channel weight scales")
        if src_zero_point:
            _status(self.L.dnnl_primitive_attr_set_zero_points_mask(a, ARG_SRC, 0),
                    "a src zero point")
        return a

    def primitive_desc(self, layer, weights_md=None):
        """A forward-inference primitive descriptor for `layer` (a Layer); the weights
        descriptor is 'any' unless given. Returns (pd, attr, mds) - the caller destroys them
        with free()."""
        L = self.L
        int8 = layer.src_dtype in ("u8", "s8")
        wdt = "s8" if int8 else ("bf16" if layer.src_dtype == "bf16" else "f32")
        ddt = "f32"
        order = _act_order(len(layer.src_dims), layer.src_layout)
        src = self.md_plain(layer.src_dims, layer.src_dtype, order)
        dst = self.md_plain(layer.dst_dims, ddt, order if len(layer.dst_dims) > 2 else None)
        w = weights_md if weights_md is not None else self.md_any(layer.weights_dims, wdt)
        attr = self._attr(int8, layer.groups, layer.src_zero_point, layer.kind)
        pd = _vp()
        what = f"{layer.describe()}"
        if layer.kind in ("conv", "deconv"):
            sp = len(layer.src_dims) - 2
            fn = L.dnnl_convolution_forward_primitive_desc_create if layer.kind == "conv" \
                else L.dnnl_deconvolution_forward_primitive_desc_create
            alg = _CONVOLUTION_DIRECT if layer.kind == "conv" else _DECONVOLUTION_DIRECT
            st = fn(C.byref(pd), self.engine, _FORWARD_INFERENCE, alg, src, w, None, dst,
                    Dims(*layer.strides[:sp]), Dims(*[d - 1 for d in layer.dilations[:sp]]),
                    Dims(*layer.pads[:sp]), Dims(*layer.pads[sp:2 * sp]), attr)
        elif layer.kind == "ip":
            st = L.dnnl_inner_product_forward_primitive_desc_create(
                C.byref(pd), self.engine, _FORWARD_INFERENCE, src, w, None, dst, attr)
        else:
            st = L.dnnl_matmul_primitive_desc_create(C.byref(pd), self.engine, src, w, None, dst,
                                                     attr)
        mds = [src, dst] + ([w] if weights_md is None else [])
        if st != 0:
            self.free(None, attr, mds)
            raise OnednnError(f"oneDNN {self.version_str} has no forward-inference "
                              f"implementation for {what} (dnnl_status {st}); give the tensor "
                              f"a rule with dst, or change --activations / --src-layout")
        return pd, attr, mds

    def free(self, pd, attr, mds):
        if pd is not None:
            self.L.dnnl_primitive_desc_destroy(pd)
        if attr is not None:
            self.L.dnnl_primitive_attr_destroy(attr)
        for md in mds:
            self.L.dnnl_memory_desc_destroy(md)

    def impl_name(self, pd):
        s = C.c_char_p()
        _status(self.L.dnnl_primitive_desc_query(pd, _Q_IMPL_INFO_STR, 0, C.byref(s)),
                "the implementation name")
        return (s.value or b"").decode(errors="replace")

    def weights_md(self, pd):
        """The primitive's weights descriptor (owned by pd)."""
        md = self.L.dnnl_primitive_desc_query_md(pd, _Q_WEIGHTS_MD, 0)
        if not md:
            raise OnednnError("oneDNN returned no weights descriptor")
        return md

    def query(self, layer):
        """The WeightsLayout oneDNN asks for `layer`."""
        with self._lock:
            pd, attr, mds = self.primitive_desc(layer)
            try:
                raw = self.md_read(self.weights_md(pd))
                impl = self.impl_name(pd)
            finally:
                self.free(pd, attr, mds)
        return _layout(self, layer, raw, impl)

    # -- execution (tests and scripts: run a primitive or a reorder on numpy arrays) ------
    def memory(self, md, array):
        m = _vp()
        _status(self.L.dnnl_memory_create(C.byref(m), md, self.engine,
                                          C.c_void_p(array.ctypes.data)), "a memory object")
        return m

    def execute(self, pd, args):
        """Run the primitive of `pd` with args [(arg id, md, numpy array)]."""
        prim = _vp()
        _status(self.L.dnnl_primitive_create(C.byref(prim), pd), "a primitive")
        mems = [(a, self.memory(md, arr)) for a, md, arr in args]
        try:
            arr_t = (ExecArg * len(mems))(*[ExecArg(a, m) for a, m in mems])
            _status(self.L.dnnl_primitive_execute(prim, self.stream, len(mems), arr_t),
                    "executing a primitive")
            _status(self.L.dnnl_stream_wait(self.stream), "waiting for a stream")
        finally:
            for _, m in mems:
                self.L.dnnl_memory_destroy(m)
            self.L.dnnl_primitive_destroy(prim)

    def reorder(self, src_md, src, dst_md, dst, attr=None, extra=()):
        """oneDNN's own reorder src -> dst (numpy arrays), extra: [(arg, md, array)]."""
        pd = _vp()
        _status(self.L.dnnl_reorder_primitive_desc_create(C.byref(pd), src_md, self.engine,
                                                          dst_md, self.engine, attr),
                "a reorder")
        try:
            self.execute(pd, [(ARG_FROM, src_md, src), (ARG_TO, dst_md, dst)] + list(extra))
        finally:
            self.L.dnnl_primitive_desc_destroy(pd)


def _act_order(nd, layout):
    """Memory order of an activation's dims: nhwc = n, spatial..., c; nchw = row-major."""
    if nd <= 2 or layout == "nchw":
        return list(range(nd))
    return [0] + list(range(2, nd)) + [1]


@dataclass(frozen=True)
class Layer:
    """One layer as a runtime creates it: oneDNN's logical dims (src N,C,spatial; weights
    (O,I,...) / (G,O/G,I/G,...); inner product (O,I); matmul B (K,N))."""
    kind: str                     # conv | deconv | ip | matmul
    src_dims: tuple
    weights_dims: tuple
    dst_dims: tuple
    strides: tuple = ()
    pads: tuple = ()              # begins then ends
    dilations: tuple = ()         # ONNX's (1 = dense)
    groups: int = 1
    src_dtype: str = "f32"
    src_layout: str = "nhwc"
    src_zero_point: bool = False

    def describe(self):
        g = f", group {self.groups}" if self.groups > 1 else ""
        return (f"{self.kind} src {list(self.src_dims)} {self.src_dtype} {self.src_layout}, "
                f"weights {list(self.weights_dims)}{g}, dst {list(self.dst_dims)}")


@dataclass(frozen=True)
class WeightsLayout:
    """What oneDNN asks for one layer's weights."""
    tag: str                      # abstract oneDNN tag over `dims`
    dims: tuple                   # oneDNN's logical weights dims
    dtype: str
    padded_dims: tuple
    size: int                     # bytes: dnnl_memory_desc_get_size of the queried descriptor
    data_size: int                # bytes of the weights themselves (padding included)
    compensation: tuple           # ("s8s8",), ("zp",), both or ()
    comp_mask: int
    scale_adjust: float
    implementation: str           # e.g. brgconv_1x1:avx512_core
    version: str                  # oneDNN version
    isa: str                      # the effective ISA oneDNN dispatched for
    library: str
    source: str = "query"

    def as_dict(self):
        return asdict(self)


def md_to_tag(raw):
    """Abstract oneDNN tag of a blocked descriptor: outer dims ordered by stride (largest
    first; a tie only between dims with a single outer block, whose stride is free), then the
    inner blocks in oneDNN's order."""
    nd, dims, pdims = raw["ndims"], raw["dims"], raw["padded_dims"]
    blk = [1] * nd
    for b, i in zip(raw["inner_blks"], raw["inner_idxs"]):
        blk[i] *= b
    strides = raw["strides"]
    # a dim of one outer block may carry any stride; a tensor of no elements any layout
    empty = 0 in pdims
    single = [empty or pdims[d] // blk[d] <= 1 for d in range(nd)]
    inner = "".join(f"{b}{_ABC[i]}" for b, i in zip(raw["inner_blks"], raw["inner_idxs"]))
    dt = _DT_NAME.get(raw["data_type"])
    # by stride, ties by dim; if that order does not reproduce the strides of the dims of
    # several blocks, the dims of one block go innermost
    orders = [sorted(range(nd), key=lambda d: (-strides[d], d)),
              sorted(range(nd), key=lambda d: (single[d], -strides[d], d))]
    for order in orders:
        tag = "".join(_ABC[d].upper() if blk[d] > 1 else _ABC[d] for d in order) + inner
        try:
            desc = Desc(tuple(dims), dt, tag)
        except ReorderError as exc:
            raise OnednnError(f"oneDNN's weights layout (tag {tag!r}) is not one reorder can "
                              f"describe: {exc}") from None
        if all(single[d] or desc.strides[d] == strides[d] for d in range(nd)):
            break
    else:
        raise OnednnError(f"oneDNN's weights descriptor (strides {strides}, blocks "
                          f"{raw['inner_blks']} over {raw['inner_idxs']}) is not the dense "
                          f"tag {tag!r} (strides {list(desc.strides)})")
    if list(desc.padded_dims) != list(pdims) or any(raw["padded_offsets"]) or raw["offset0"]:
        raise OnednnError(f"oneDNN's weights descriptor pads dims {dims} to {pdims}, which "
                          f"the tag {tag!r} does not (padded {list(desc.padded_dims)})")
    return tag, desc


def _layout(lib, layer, raw, impl):
    if raw["format_kind"] != _FORMAT_KIND_BLOCKED:
        raise OnednnError(f"{impl} wants weights of format kind {raw['format_kind']} (not "
                          f"blocked) for {layer.describe()}; reorder writes blocked layouts "
                          f"only; give the tensor a rule with dst")
    tag, desc = md_to_tag(raw)
    dt = desc.dtype.name
    data = desc.nbytes
    extra = raw["size"] - data
    comp, mask, adjust = (), 0, 1.0
    if dt == "s8":
        # oneDNN's rule (x64 int8 kernels): an s8 source needs s8s8 compensation, a source
        # zero point the zero-point one, both per output channel (and group); ISAs without
        # VNNI also halve the weights (scale_adjust 0.5). The query API of 3.x does not expose
        # the extra, so it is derived and checked against the reported size.
        want = (("s8s8",) if layer.src_dtype == "s8" else ()) + \
            (("zp",) if layer.src_zero_point else ())
        g = layer.kind in ("conv", "deconv") and layer.groups > 1
        mask = {"conv": 3 if g else 1, "deconv": 3 if g else 1, "ip": 1, "matmul": 2}[layer.kind]
        if g and layer.weights_dims[1] == 1 and layer.weights_dims[2] == 1:
            mask = 1                          # depthwise: one channel a group, G is the O
        cbytes = 4
        for d in range(len(desc.dims)):
            if mask >> d & 1:
                cbytes *= desc.padded_dims[d]
        base = -(-data // 4) * 4
        if extra == 0:
            want = ()                         # a kernel that computes compensation itself
        elif want:
            blocks = (raw["size"] - base) / cbytes
            # oneDNN 3.2 reports 3 blocks whatever the flags (its size() sums every buffer
            # kind for each flag set; fixed upstream); the convolution reads them after the data
            if blocks not in (len(want), 3):
                raise OnednnError(
                    f"{impl}: the weights descriptor is {raw['size']} bytes, which is not "
                    f"{data} bytes of data + {len(want)} compensation block(s) of {cbytes} "
                    f"bytes (mask {mask}) for {layer.describe()}: the compensation rule does "
                    f"not hold for this oneDNN; give the tensor a rule with dst")
            vnni = any(lib.isa_value & b for b in _VNNI_BITS)
            adjust = 1.0 if vnni or "s8s8" not in want else 0.5
        else:
            raise OnednnError(f"{impl}: the weights descriptor carries {extra} bytes beyond "
                              f"the data for {layer.describe()}, which no known compensation "
                              f"explains; give the tensor a rule with dst")
        comp = want
        if not comp:
            mask = 0
    elif extra:
        raise OnednnError(f"{impl}: {dt} weights descriptor with {extra} extra bytes for "
                          f"{layer.describe()}")
    return WeightsLayout(tag, tuple(desc.dims), dt, tuple(desc.padded_dims), raw["size"], data,
                         comp, mask, adjust, impl, lib.version_str, lib.isa, lib.path)


@functools.lru_cache(maxsize=None)
def open_library(path):
    return Library(path)


def library(path=None, required=False):
    """The Library for `path` / $ONEDNN_LIB / the installed wheel, or None (required=False)
    when none is found."""
    found = find_library(path)
    if found is None:
        if required:
            raise OnednnError("no oneDNN found: pip install onednn-cpu-gomp, or give "
                              "--onednn-lib PATH / ONEDNN_LIB")
        return None
    return open_library(found)


def isa_at_most(isa, top_value):
    """True when ISA `isa` is one the machine (ISA value `top_value`) can run."""
    v = ISA_VALUES.get(isa)
    if v is None:
        raise ValueError(f"unknown ISA {isa!r}; ISAs: {', '.join(ISA_VALUES)}")
    return v & top_value == v


_child_cache = {}
_child_lock = threading.Lock()


def query_with_isa(lib, layers, isa):
    """WeightsLayouts for `layers` with oneDNN limited to `isa` (ONEDNN_MAX_CPU_ISA), in a
    child process because oneDNN reads that variable once per process. None when the machine
    cannot run `isa` (the caller falls back and says so)."""
    if not isa_at_most(isa, lib.isa_value):
        return None
    key = (lib.path, isa, tuple(layers))
    with _child_lock:
        if key in _child_cache:
            return _child_cache[key]
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA=isa.upper())
    payload = json.dumps({"lib": lib.path, "layers": [asdict(l) for l in layers]})
    r = subprocess.run([sys.executable, "-m", __name__], input=payload, env=env,
                       capture_output=True, text=True)
    if r.returncode != 0:
        msg = r.stderr.strip().splitlines()
        raise OnednnError(f"oneDNN limited to {isa}: {msg[-1] if msg else 'child failed'}")
    out = []
    for item in json.loads(r.stdout):
        if "error" in item:
            out.append(OnednnError(item["error"]))
        else:
            for k in ("dims", "padded_dims", "compensation"):
                item[k] = tuple(item[k])
            out.append(WeightsLayout(**item))
    with _child_lock:
        _child_cache[key] = out
    return out


def _child_main():
    req = json.loads(sys.stdin.read())
    lib = Library(req["lib"])
    out = []
    for d in req["layers"]:
        for k in ("src_dims", "weights_dims", "dst_dims", "strides", "pads", "dilations"):
            d[k] = tuple(d[k])
        try:
            out.append(lib.query(Layer(**d)).as_dict())
        except OnednnError as exc:
            out.append({"error": str(exc)})
    json.dump(out, sys.stdout)


def _ints(name, v, n, default):
    if v is None:
        return (default,) * n
    try:
        t = tuple(int(x) for x in ([v] * n if isinstance(v, int) else v))
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an int or a sequence of ints, got {v!r}") from None
    if len(t) != n:
        raise ValueError(f"{name} needs {n} values, got {list(t)}")
    return t


def matrix_nk(kind, weights_dims):
    """(N, K) of an inner product's weights, stored (N, K), or of a matmul's B, stored (K, N)."""
    a, b = weights_dims
    return (a, b) if kind == "ip" else (b, a)


def make_layer(kind, src_dims, weights_dims, strides=None, pads=None, dilations=None, groups=1,
               src_dtype="f32", src_layout="nhwc", src_zero_point=False, dst_dims=None,
               output_padding=None):
    """A Layer from ONNX-style shapes: weights as stored (Conv (O, I/G, k...), ConvTranspose
    (I, O/G, k...), Gemm / inner product (N, K) = (O, I), MatMul B (K, N))."""
    kinds = {"conv": "conv", "deconv": "deconv", "convtranspose": "deconv", "ip": "ip",
             "gemm": "ip", "inner_product": "ip", "matmul": "matmul"}
    if not isinstance(kind, str) or kind.lower() not in kinds:
        raise ValueError(f"kind must be one of {', '.join(kinds)}, got {kind!r}")
    kind = kinds[kind.lower()]
    src = _ints("src_dims", src_dims, len(src_dims) if hasattr(src_dims, "__len__") else 0, 0)
    w = _ints("weights_dims", weights_dims,
              len(weights_dims) if hasattr(weights_dims, "__len__") else 0, 0)
    if src_dtype not in ("f32", "bf16", "u8", "s8"):
        raise ValueError(f"src_dtype must be f32, bf16, u8 or s8, got {src_dtype!r}")
    if src_layout not in ("nhwc", "nchw"):
        raise ValueError(f"src_layout must be nhwc or nchw, got {src_layout!r}")
    if not isinstance(groups, int) or groups < 1:
        raise ValueError(f"groups must be a positive int, got {groups!r}")
    if kind in ("conv", "deconv"):
        if not 3 <= len(src) <= 5 or len(w) != len(src):
            raise ValueError(f"{kind}: src_dims (N, C, spatial...) and weights_dims need the "
                             f"same rank, 3 to 5; got {list(src)} and {list(w)}")
        sp = len(src) - 2
        st = _ints("strides", strides, sp, 1)
        pd = _ints("pads", pads, 2 * sp, 0)
        dl = _ints("dilations", dilations, sp, 1)
        op = _ints("output_padding", output_padding, sp, 0)
        k = w[2:]
        if kind == "conv":
            o, i = w[0], w[1] * groups
            if w[0] % groups:
                raise ValueError(f"groups {groups} does not divide O = {w[0]}")
        else:
            o, i = w[1] * groups, w[0]
            if w[0] % groups:
                raise ValueError(f"groups {groups} does not divide I = {w[0]}")
        if src[1] != i:
            raise ValueError(f"{kind}: the source has {src[1]} channels, the weights "
                             f"{list(w)} with groups {groups} read {i}")
        if dst_dims is None:
            if kind == "conv":
                spd = [(src[2 + d] + pd[d] + pd[sp + d] - dl[d] * (k[d] - 1) - 1) // st[d] + 1
                       for d in range(sp)]
            else:
                spd = [(src[2 + d] - 1) * st[d] - pd[d] - pd[sp + d] + dl[d] * (k[d] - 1) + 1
                       + op[d] for d in range(sp)]
            dst_dims = (src[0], o) + tuple(spd)
        wd = (o, i) + k if groups == 1 else (groups, o // groups, i // groups) + k
        return Layer(kind, src, wd, tuple(int(x) for x in dst_dims), st, pd, dl, groups,
                     src_dtype, src_layout, bool(src_zero_point))
    if len(w) != 2:
        raise ValueError(f"{kind}: weights_dims must be 2-D, got {list(w)}")
    # both flatten the source to (M, K)
    n, kk = matrix_nk(kind, w)
    m = math.prod(src[:-1])
    if src[-1] != kk:
        raise ValueError(f"{kind}: the source's last dim {src[-1]} is not K = {kk}")
    return Layer(kind, (m, kk), tuple(w), (m, n), src_dtype=src_dtype, src_layout="nchw",
                 src_zero_point=bool(src_zero_point))


@functools.lru_cache(maxsize=4096)
def _cached_query(path, layer):
    return open_library(path).query(layer)


def query_layers(layers, lib=None, isa=None):
    """WeightsLayouts (or the OnednnError of a refused layer, in its place) for `layers`,
    cached per (layer, library, ISA). None when no library is found or the machine cannot
    run `isa` (the caller falls back to its tables)."""
    lib = lib if isinstance(lib, Library) else library(lib)
    if lib is None:
        return None
    if isa is not None and isa != lib.isa:
        return query_with_isa(lib, list(layers), isa)
    out = []
    for layer in layers:
        try:
            out.append(_cached_query(lib.path, layer))
        except OnednnError as exc:
            out.append(exc)
    return out


def weights_layout(kind="conv", src_dims=None, weights_dims=None, strides=None, pads=None,
                   dilations=None, groups=1, src_dtype="f32", src_layout="nhwc",
                   src_zero_point=False, dst_dims=None, output_padding=None, lib=None, isa=None):
    """The weights layout oneDNN asks for one layer (see reorder.onednn_weights_layout)."""
    if src_dims is None or weights_dims is None:
        raise ValueError("onednn_weights_layout needs src_dims and weights_dims")
    layer = make_layer(kind, src_dims, weights_dims, strides, pads, dilations, groups,
                       src_dtype, src_layout, src_zero_point, dst_dims, output_padding)
    found = library(lib, required=True) if not isinstance(lib, Library) else lib
    if isa is not None and not isa_at_most(isa, found.isa_value):
        warnings.warn(f"oneDNN cannot be limited to {isa}: this machine runs {found.isa}; "
                      f"no answer (ONEDNN_MAX_CPU_ISA can only lower the ISA)", stacklevel=3)
        return None
    r = query_layers([layer], found, isa)[0]
    if isinstance(r, Exception):
        raise r
    return r


if __name__ == "__main__":
    _child_main()
