"""Device side: pack into and read back pyopencl images. pyopencl is imported when a function
is called. A gather kernel, generated per kind and source layout, packs float32 tensors on the
device; a device that cannot build it is remembered per context and `pack='auto'` falls back
to the host packer."""
import threading
import warnings
import weakref

import numpy as np

from ..front.api import reorder
from ..core.desc import Desc
from ..core.errors import ReorderError
from .host import _as_numpy, _dtype_name, _invertible, _map_dims, _pack, _source, from_image_array
from .kinds import _check_dims, _fmt, _geometry, _kind
from .winograd import _winograd_source


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
    arr = _as_numpy(x)
    k = _kind(kind, engine, _map_dims(kind, arr, layout, dims))
    dt = _image_dtype(dtype)
    if pack not in ("auto", "host", "device"):
        raise ReorderError(f"pack must be 'auto', 'host' or 'device', got {pack!r}")
    ctx, queue, devices = _context_queue(cl, ctx_or_queue)
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
    k = _kind(kind, engine, dims)
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

