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


def check_on_threads(p, x, expected, storage, context):
    """Plan p on x into a sentinel out= on 1, 2 and 3 threads: the result is out itself and
    bit for bit `expected` (context goes into the failure message)."""
    from reorder.testing.reference import uint_view
    for threads in (1, 2, 3):
        out = sentinel(p.dst.physical_shape, storage)
        got = p(x, out=out, threads=threads)
        assert got is out
        assert np.array_equal(uint_view(out), uint_view(expected)), \
            (context, threads, p.explain())
