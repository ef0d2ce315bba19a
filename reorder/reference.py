"""A slow, obviously correct reorder used by the demo and the CLI to check the fast path.

It indexes every element through numpy fancy indexing on the physical axes, sharing nothing
with the planner or the kernels. (The test suite keeps its own, independent reference.)
"""
import numpy as np


def physical_index(desc, logical):
    """Physical (array-axis) index tuple of logical index arrays `logical` (one per dim)."""
    out = []
    for a in desc.axes:
        q = logical[a.dim] // a.weight
        out.append(q if a.block == 0 else q % a.extent)
    return tuple(out)


def reference_reorder(x, src, dst):
    """x: array in src's physical shape. Returns dst's physical array, padding zero."""
    result = np.zeros(dst.physical_shape, dtype=x.dtype)
    if 0 in src.dims:
        return result
    logical = np.indices(src.dims, dtype=np.int64).reshape(src.ndim, -1)
    result[physical_index(dst, logical)] = x[physical_index(src, logical)]
    return result
