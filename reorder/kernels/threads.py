"""Thread-count policy, resolved once per call and passed to every kernel.

Precedence: the `threads=` argument > `set_num_threads(n)` / `with threads(n):` >
the REORDER_NUM_THREADS environment variable > OpenMP's default (which already reflects
OMP_NUM_THREADS and threadpoolctl limits), capped at the CPUs this process may use.

In a child made by fork() every source resolves to 1 thread unless the OpenMP runtime is
known to start thread teams after fork (LLVM's libomp, Intel's libiomp): GNU libgomp hangs
there. An explicit count > 1 overridden so is reported by one RuntimeWarning per process.
"""
import contextlib
import contextvars
import os
import warnings
from typing import Iterator, Optional

from .. import _kernels
from ..core.errors import ReorderError

_override = contextvars.ContextVar("reorder_threads", default=None)
_global = None
_forked = False     # this process is a child of fork() (of a process that imported reorder)
_warned = False
_cpus = None


def omp_fork_safe() -> bool:
    """True when the OpenMP runtime the kernels call is known to run thread teams in a
    forked child (LLVM libomp, Intel libiomp); False for GNU libgomp and when unknown."""
    name = os.path.basename(_kernels.omp_library())
    return name.startswith(("libomp.", "libomp5", "libiomp"))


_FORK_SAFE = _kernels.OPENMP and omp_fork_safe()


def _after_fork_in_child():
    global _forked, _cpus, _warned
    _forked = not _FORK_SAFE
    _warned = False
    _cpus = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _check(n, what):
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{what} must be a positive int, got {n!r}")
    if n < 1:
        raise ReorderError(f"{what} must be >= 1, got {n}")
    return n


def usable_cpus() -> int:
    """CPUs this process may run on (cgroup/affinity aware); cached, it is a system call."""
    global _cpus
    if _cpus is None:
        try:
            _cpus = len(os.sched_getaffinity(0))
        except AttributeError:  # pragma: no cover - not Linux
            _cpus = os.cpu_count() or 1
    return _cpus


def set_num_threads(n: Optional[int]) -> None:
    """Set the library-wide thread count; None restores the default policy."""
    global _global
    _global = None if n is None else _check(n, "set_num_threads(n)")


def get_num_threads() -> int:
    """The thread count a call without `threads=` would use now."""
    return resolve(None)


@contextlib.contextmanager
def threads(n: int) -> Iterator[None]:
    """`with reorder.threads(1): ...` -- thread count for calls made inside the block
    (per Python thread / asyncio task)."""
    token = _override.set(_check(n, "threads(n)"))
    try:
        yield
    finally:
        _override.reset(token)


def _in_forked_child(n, source):
    """1, with one RuntimeWarning per process when an explicit count > 1 is dropped."""
    global _warned
    if n > 1 and not _warned:
        _warned = True
        warnings.warn(f"reorder: {source} asks for {n} threads, but this process is a child of "
                      f"fork() and its OpenMP runtime cannot start a thread team there; using 1 "
                      f"(use the 'spawn' or 'forkserver' start method for threaded children)",
                      RuntimeWarning, stacklevel=3)
    return 1


def resolve(threads: Optional[int] = None) -> int:
    """Thread count for one call (an explicit count is checked even in a serial build)."""
    if threads is not None:
        n = _check(threads, "threads=")
        if not _kernels.OPENMP:
            return 1
        return _in_forked_child(n, "threads=") if _forked else n
    if not _kernels.OPENMP:
        return 1
    for n, source in ((_override.get(), "threads(n)"), (_global, "set_num_threads(n)")):
        if n is not None:
            return _in_forked_child(n, source) if _forked else n
    env = (_kernels.environ_value("REORDER_NUM_THREADS") or "").strip()
    if env:
        try:
            n = _check(int(env), "REORDER_NUM_THREADS")
        except (ValueError, TypeError):
            raise ReorderError(f"REORDER_NUM_THREADS must be a positive integer, got {env!r}") from None
        return _in_forked_child(n, "REORDER_NUM_THREADS") if _forked else n
    if _forked:
        return 1
    return max(1, min(_kernels.omp_max_threads(), usable_cpus()))
