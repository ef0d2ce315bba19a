"""Scratch buffers that tensors are converted into before they are written to the output file.

Converting straight into a shared mapping of the new file faults once per page (each fault
allocates a page-cache page and marks it dirty); converting into a reused anonymous buffer and
writing it with pwrite() costs one kernel copy instead (docs/convert.md, Speed). Buffers are
page-aligned anonymous mappings, reused from tensor to tensor, and unmapped (not merely freed)
when they are dropped, so resident memory follows the tensors in flight.
"""
import mmap
import threading

import numpy as np


class BufferPool:
    """take(nbytes) -> a page-aligned uint8 array of at least nbytes; give(array) returns it.
    A buffer is reused by a later take() that fits in it; when none of the free buffers fits,
    they are all unmapped before a larger one is mapped, so the pool never holds more than one
    buffer per tensor in flight, each no larger than the largest output."""

    def __init__(self):
        self._free = []                      # (capacity, mmap)
        self._lock = threading.Lock()

    def take(self, nbytes):
        nbytes = max(int(nbytes), 1)
        with self._lock:
            fits = [i for i, (cap, _) in enumerate(self._free) if cap >= nbytes]
            if fits:
                i = min(fits, key=lambda j: self._free[j][0])
                cap, m = self._free.pop(i)
            else:
                for _, m in self._free:
                    _close(m)
                self._free.clear()
                m = None
        if m is None:
            cap = -(-nbytes // mmap.PAGESIZE) * mmap.PAGESIZE
            m = mmap.mmap(-1, cap)
        return _Held(m, cap)

    def give(self, held):
        with self._lock:
            self._free.append((held.capacity, held.map))

    def close(self):
        with self._lock:
            for _, m in self._free:
                _close(m)
            self._free.clear()


class _Held:
    """A buffer on loan: array(dtype, shape) views its first bytes."""

    def __init__(self, m, capacity):
        self.map, self.capacity = m, capacity

    def array(self, dtype, shape):
        dtype = np.dtype(dtype)
        n = int(np.prod(shape, dtype=np.int64))
        if n == 0:
            return np.zeros(shape, dtype)
        return np.frombuffer(self.map, dtype=dtype, count=n).reshape(shape)


def _close(m):
    try:
        m.close()
    except BufferError:                      # a view is still alive; the GC unmaps it later
        pass
