"""A tensor of an input file as the readers list it: its name, shape and stored dtype, and a
loader that reads its bytes only when it is converted."""
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .errors import ConvertError


@dataclass
class SourceTensor:
    name: str
    shape: tuple
    dtype: np.dtype           # of the stored bytes (little-endian)
    nbytes: int
    load: Callable            # () -> read-only ndarray, memory-mapped where possible
    bf16: bool = False        # uint16 words holding bf16
    meta: dict = None         # extra metadata of its outputs (an ONNX fold: what was folded)
    extra_cost: int = 0       # bytes load() allocates (a folded Transpose's copy)
    aliases: tuple = ()       # other names a rule may match it by (the ONNX initializer's)


def memmap_region(path, offset, dtype, shape):
    """Loader mapping `shape` elements of `dtype` at byte `offset` of `path`, read-only."""
    shape = tuple(int(s) for s in shape)

    def load():
        if 0 in shape:
            return np.zeros(shape, dtype)
        try:
            return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape)
        except (OSError, ValueError) as exc:
            raise ConvertError(f"cannot map {path} at byte {offset}: "
                               f"{getattr(exc, 'strerror', None) or exc}") from None
    return load
