"""The machine the plans are made for, read once at import: the size of the last-level cache,
and from it the bytes moved (source read + destination written) from which the kernels store
past the caches (streaming, non-temporal stores). A leaf: it imports nothing from the package
but `errors`.

Cached stores read each destination line before writing it, and win while source and
destination fit in the cache beside each other and the next layer finds the output there.
Once the two together pass half the last-level cache, the stores evict lines the reorder
still needs and the output would go to memory anyway: streaming wins from there, on one
thread by 10-30% with the next layer's read counted, and on two from twice that
(problem.stream_threads; docs/kernels/index.md#constants-every-kernel-reads).
On Intel CPUs (measured on one Xeon kind, 2 cores reporting a 300 MiB L3) cached stores were
as fast or faster at every size, up to 2.7 times that L3 on one thread (streamed f32
`nchw -> nhwc` took 1.3-1.6 times as long): there stores stay cached unless the environment
says otherwise.
REORDER_STREAM_MIN_BYTES overrides it for the process, and every plan takes its own
`stream_min_bytes`.
"""
import glob
import os
from typing import NamedTuple

from .errors import ReorderError

# When the cache size cannot be read: half the 32 MiB L3 of the machines it was measured on.
FALLBACK_STREAM_MIN_BYTES = 16 << 20
ENV_STREAM_MIN_BYTES = "REORDER_STREAM_MIN_BYTES"
# Reorders moving this fraction of the last-level cache or more stream their stores.
LLC_DIVISOR = 2
# A threshold no step reaches: stores stay cached (the byte tiles' fetch ahead, a fraction
# of the threshold, is off with them: on the same Xeon it measured slower on three layouts
# of four, docs/kernels/transpose.md#tuning-constants).
NEVER_STREAM = 1 << 62
# CPU vendors whose streamed stores measured slower than cached ones at every size.
CACHED_VENDORS = {"GenuineIntel": "Intel"}


class TileRules(NamedTuple):
    """Tile choices that measured faster on one CPU kind and slower on another
    (docs/kernels/transpose.md#tuning-constants), read by the planner when it prepares a plan.
    copy_out_rows: tiles of 4- and 8-byte elements writing many short dst rows build them in a
        scratch and copy them out whole (an Intel Xeon: 1.04-1.4 times as fast; a Zen 5, with
        the stores cached there: 0.77-1.0).
    slice_widening_planes: widening tiles into f32 take far dst planes in slices where the
        planes start at many 4 KiB offsets (the Xeon: 1.1-3 times as fast; the Zen 5:
        0.80-0.95 of B whole). Planes on few offsets take slices on every kind
        (problem.far_plane_slice)."""
    copy_out_rows: bool
    slice_widening_planes: bool


# CPU vendors on which the TileRules were measured to pay.
TILE_RULE_VENDORS = {"GenuineIntel"}


def tile_rules(vendor=""):
    """The TileRules for a CPU vendor: on where they measured faster, else off."""
    on = vendor in TILE_RULE_VENDORS
    return TileRules(copy_out_rows=on, slice_widening_planes=on)


def _parse_size(text):
    """'32768K' / '1M' / '512' (sysfs cache sizes) -> bytes, or None."""
    text = text.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    digits = text[:-1] if mult > 1 else text
    return int(digits) * mult if digits.isdigit() else None


def _sysfs_llc(root="/sys/devices/system/cpu/cpu0/cache"):
    """(bytes, description) of the highest-level data or unified cache sysfs lists, or None."""
    best = None
    for d in glob.glob(os.path.join(root, "index*")):
        try:
            with open(os.path.join(d, "level")) as f:
                level = int(f.read())
            with open(os.path.join(d, "type")) as f:
                kind = f.read().strip()
            with open(os.path.join(d, "size")) as f:
                size = _parse_size(f.read())
        except (OSError, ValueError):
            continue
        if kind in ("Data", "Unified") and size and (best is None or level > best[0]):
            best = (level, size)
    return (best[1], f"L{best[0]}, sysfs") if best else None


def _sysconf_llc():
    """The largest of L3 and L2 that sysconf reports, or None (some C libraries report the
    whole package's L3, or 0; sysfs, which is per CPU, is asked first)."""
    for level in (3, 2):
        try:
            size = os.sysconf(f"SC_LEVEL{level}_CACHE_SIZE")
        except (ValueError, OSError):
            continue
        if size and size > 0:
            return size, f"L{level}, sysconf"
    return None


def detect_llc():
    """(bytes, where it came from) of the last-level cache, or (0, 'unknown')."""
    return _sysfs_llc() or _sysconf_llc() or (0, "unknown")


def detect_vendor(path="/proc/cpuinfo"):
    """The CPU's vendor string ('GenuineIntel', 'AuthenticAMD'), or '' when unknown."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("vendor_id"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def stream_min_bytes_for(llc_bytes, env_value=None, vendor=""):
    """The default streaming threshold: the environment's value when set, else none on a
    vendor whose streamed stores measured slower (NEVER_STREAM), else half the last-level
    cache, else the fallback."""
    if env_value is not None and env_value.strip():
        try:
            n = int(env_value.strip())
        except ValueError:
            n = -1
        if n < 0:
            raise ReorderError(f"{ENV_STREAM_MIN_BYTES} must be an integer number of bytes >= 0, "
                               f"got {env_value!r}")
        return n
    if vendor in CACHED_VENDORS:
        return NEVER_STREAM
    return llc_bytes // LLC_DIVISOR if llc_bytes > 0 else FALLBACK_STREAM_MIN_BYTES


def stream_min_source(llc_bytes, env_value=None, vendor=""):
    """Where stream_min_bytes_for's value comes from, in words."""
    if env_value is not None and env_value.strip():
        return f"${ENV_STREAM_MIN_BYTES}"
    if vendor in CACHED_VENDORS:
        return f"{CACHED_VENDORS[vendor]} CPU: cached stores measured faster"
    return f"1/{LLC_DIVISOR} of the last-level cache" if llc_bytes else "fallback"


LLC_BYTES, LLC_SOURCE = detect_llc()
CPU_VENDOR = detect_vendor()
STREAM_MIN_BYTES = stream_min_bytes_for(LLC_BYTES, os.environ.get(ENV_STREAM_MIN_BYTES), CPU_VENDOR)
STREAM_MIN_SOURCE = stream_min_source(LLC_BYTES, os.environ.get(ENV_STREAM_MIN_BYTES), CPU_VENDOR)
TILE_RULES = tile_rules(CPU_VENDOR)
