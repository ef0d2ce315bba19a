"""Run a real oneDNN primitive on weight bytes: the converted ones, or those oneDNN's own
reorder makes of the plain weights. Used by the tests that prove the converter writes what the
runtime reads (they compare the outputs bit for bit)."""
import ctypes as C

import numpy as np

from reorder.models import onednn_runtime as R


def np_dtype(dt):
    return {"f32": np.float32, "u8": np.uint8, "s8": np.int8, "s32": np.int32,
            "bf16": np.uint16}[dt]


def weight_mask(layer):
    """Scale mask over oneDNN's logical weights dims (as the primitive's attribute)."""
    if layer.kind in ("conv", "deconv"):
        return 3 if layer.groups > 1 else 1
    return 1 if layer.kind == "ip" else 2


def onednn_reordered(lib, layer, w_plain, mult=None):
    """oneDNN's own reorder of the plain (row-major over the logical dims) f32 weights into
    the weights descriptor its primitive asks for; int8: with src scales `mult` per output
    channel, which the reorder multiplies by (and compensates for) itself."""
    pd, attr, mds = lib.primitive_desc(layer)
    try:
        wmd = lib.weights_md(pd)
        try:
            return _reorder_into(lib, layer, wmd, w_plain, mult)
        except R.OnednnError:
            if mult is None:
                raise
            # oneDNN 3.2 has no reorder with per-channel scales into some compensated layouts
            # (AB16a64b4a with s8s8 at avx512_core_vnni and above): scale in f32 first, the
            # same IEEE product its reorder forms, and let it round, saturate and compensate
            mask = weight_mask(layer)
            per = tuple(n if mask >> d & 1 else 1 for d, n in enumerate(w_plain.shape))
            scaled = (w_plain * mult.reshape(per)).astype(np.float32)
            return _reorder_into(lib, layer, wmd, scaled, None)
    finally:
        lib.free(pd, attr, mds)


def _reorder_into(lib, layer, wmd, w_plain, mult):
    """oneDNN's reorder of plain f32 `w_plain` into `wmd`, with src scales `mult` if given."""
    out = np.zeros(lib.L.dnnl_memory_desc_get_size(wmd), np.uint8)
    src_md = lib.md_plain(w_plain.shape, "f32")
    rattr, extra = None, []
    try:
        if mult is not None:
            rattr = C.c_void_p()
            R._status(lib.L.dnnl_primitive_attr_create(C.byref(rattr)), "attr")
            R._status(lib.L.dnnl_primitive_attr_set_scales_mask(rattr, R.ARG_FROM,
                                                                weight_mask(layer)), "mask")
            smd = lib.md_plain((mult.size,), "f32")
            extra = [(R.ARG_ATTR_SCALES | R.ARG_FROM, smd, mult)]
        lib.reorder(src_md, np.ascontiguousarray(w_plain), wmd, out, rattr, extra)
    finally:
        lib.L.dnnl_memory_desc_destroy(src_md)
        for _, md, _ in extra:
            lib.L.dnnl_memory_desc_destroy(md)
        if rattr is not None:
            lib.L.dnnl_primitive_attr_destroy(rattr)
    return out


def run(lib, layer, weight_bytes, src, src_scale=None, wei_scales=None):
    """dst (f32, in the primitive's layout order) of `layer` run on `src` (an array in the
    layer's source layout order) with the weights memory `weight_bytes`."""
    pd, attr, mds = lib.primitive_desc(layer)
    try:
        wmd = lib.weights_md(pd)
        src_md, dst_md = mds[0], mds[1]
        dst = np.full(int(np.prod(layer.dst_dims)), np.nan, np.float32)
        args = [(R.ARG_SRC, src_md, np.ascontiguousarray(src)), (R.ARG_WEIGHTS, wmd,
                                                                   weight_bytes),
                (R.ARG_DST, dst_md, dst)]
        extra_mds = []
        if src_scale is not None:
            s = np.array([src_scale], np.float32)
            m1 = lib.md_plain((1,), "f32")
            m2 = lib.md_plain((wei_scales.size,), "f32")
            extra_mds = [m1, m2]
            args += [(R.ARG_ATTR_SCALES | R.ARG_SRC, m1, s),
                     (R.ARG_ATTR_SCALES | R.ARG_WEIGHTS, m2, wei_scales)]
        try:
            lib.execute(pd, args)
        finally:
            for m in extra_mds:
                lib.L.dnnl_memory_desc_destroy(m)
        return dst
    finally:
        lib.free(pd, attr, mds)


def random_src(layer, rng):
    n = int(np.prod(layer.src_dims))
    if layer.src_dtype == "u8":
        return rng.integers(0, 256, n).astype(np.uint8)
    if layer.src_dtype == "s8":
        return rng.integers(-128, 128, n).astype(np.int8)
    return rng.standard_normal(n).astype(np.float32)
