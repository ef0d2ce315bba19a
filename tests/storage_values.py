"""Sources and destinations for the move-kernel tests, in each dtype's numpy storage (bf16 as
its 16-bit pattern): random values, and outputs filled with a sentinel byte so that an
element the kernel fails to write shows."""
import numpy as np

from quant_reference import NUMPY as STORAGE


def random_storage(dims, dtype, rng):
    """Normal values for the float dtypes, any bit pattern for bf16 and the integers."""
    st = STORAGE[dtype]
    if st in (np.float64, np.float32, np.float16):
        return rng.standard_normal(dims).astype(st)
    return rng.integers(0, 1 << (8 * np.dtype(st).itemsize), dims, dtype=np.uint64).astype(st)


def sentinel(shape, storage):
    """An array of `shape` whose every byte is 0x5A."""
    return np.full(shape, 0x5A, np.uint8).view(np.uint8).repeat(np.dtype(storage).itemsize) \
        .view(storage).reshape(shape) if shape else np.empty(shape, storage)
