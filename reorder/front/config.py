"""show_config(): what the kernels were built with and what they will use now."""
import platform
import sys
from typing import Optional, TextIO

import numpy as np

from .. import _kernels
from ..core import machine
from .._version import __version__
from ..kernels.threads import get_num_threads, usable_cpus


def _cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _openmp_runtime():
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "unknown (install threadpoolctl to see it)"
    libs = [i for i in threadpool_info() if i.get("user_api") == "openmp"]
    if not libs:
        return "none loaded"
    return ", ".join(f"{i['prefix']} {i.get('version') or ''} ({i['filepath']})".replace("  ", " ")
                     for i in libs)


def config_dict() -> dict:
    return {
        "reorder": __version__,
        "python": sys.version.split()[0],
        "numpy": np.__version__,
        "openmp": "on" if _kernels.OPENMP else "off (serial kernels)",
        "openmp version": str(_kernels.OPENMP_VERSION) if _kernels.OPENMP else "-",
        "openmp runtime": _openmp_runtime() if _kernels.OPENMP else "-",
        "threads": f"{get_num_threads()} (usable CPUs {usable_cpus()})",
        "build flags": _kernels.BUILD_FLAGS or "-",
        "simd": _kernels.simd_name(),
        "last-level cache": (f"{machine.LLC_BYTES >> 10} KiB ({machine.LLC_SOURCE})"
                             if machine.LLC_BYTES else "unknown"),
        "streaming stores": (f"never ({machine.STREAM_MIN_SOURCE})"
                             if machine.STREAM_MIN_BYTES >= machine.NEVER_STREAM else
                             f"source + destination >= {machine.STREAM_MIN_BYTES} bytes "
                             f"({machine.STREAM_MIN_SOURCE})"),
        "cpu": f"{_cpu_name()} ({platform.machine()})",
    }


def show_config(file: Optional[TextIO] = None) -> None:
    """Print the version, OpenMP build and runtime, thread count, build flags and CPU."""
    cfg = config_dict()
    width = max(map(len, cfg))
    print("\n".join(f"{k:>{width}}: {v}" for k, v in cfg.items()), file=file or sys.stdout)
