"""reorder.load(): a converted file back as {name: (array, Desc)}, memory-mapped, no copies."""
import json

import numpy as np

from ..core.desc import Desc
from ..core.dtypes import as_dtype
from ..core.errors import ReorderError
from . import safetensors_format as stf
from .errors import ConvertError


class Loaded(dict):
    """{name: (array, Desc)} with the file's metadata. Arrays are read-only views of one
    memory map of the file; nothing is read until it is touched."""

    def __init__(self, path, items, metadata, spans, data):
        super().__init__(items)
        self.path, self.metadata, self._spans, self._data = path, metadata, spans, data

    @property
    def preset(self):
        return self.metadata.get("preset")

    def meta(self, name):
        """The metadata of tensor `name` (dims, tag, dtype, padded_dims, role, part, ...)."""
        return self.metadata.get("tensors", {}).get(name, {})

    def onednn_buffer(self, name):
        """The uint8 bytes oneDNN keeps as the weights memory of quantized `name`: the s8 data,
        zeros to a multiple of 4 bytes, then the s8s8 and zero-point compensation blocks. A
        view of the file when they lie that way in it, else a new array."""
        if name not in self or self.meta(name).get("part") != "weights" or \
                self[name][0].dtype != np.int8:
            raise ConvertError(f"{self.path}: {name!r} is not a quantized weight")
        parts = [name] + [f"{name}.{p}" for p in ("compensation", "zp_compensation")
                          if f"{name}.{p}" in self]
        start, end = self._spans[name]
        pos, pieces = start, []
        for p in parts:
            b, e = self._spans[p]
            want = pos if p == name else -(-pos // 4) * 4
            pieces.append((want - start, b, e))
            pos = want + (e - b)
        # a layout oneDNN was asked for: exactly dnnl_memory_desc_get_size bytes (oneDNN 3.2
        # counts more compensation blocks than it reads; they are zeros)
        size = max(pos - start, int((self.meta(name).get("onednn") or {}).get("size") or 0))
        if size == pos - start and all(off == b - start for off, b, _ in pieces):
            return self._data[start:pos]
        buf = np.zeros(size, np.uint8)
        for off, b, e in pieces:
            buf[off:off + e - b] = self._data[b:e]
        return buf


def load(path):
    """Open a file written by reorder.convert(): {name: (array, Desc)}."""
    path = str(path)
    tensors, meta, start = stf.read_header(path)
    try:
        info = json.loads(meta.get("reorder", "{}"))
    except json.JSONDecodeError as exc:
        raise ConvertError(f"{path}: corrupt reorder metadata ({exc})") from None
    described = info.get("tensors", {})
    data = np.memmap(path, dtype=np.uint8, mode="r") if tensors else np.zeros(0, np.uint8)
    items, spans = {}, {}
    for name, (dt, shape, begin, end) in tensors.items():
        if name.startswith(stf.PAD_PREFIX) and name not in described:
            continue
        m = described.get(name, {})
        dtype = stf.DTYPES[dt]
        if dt == "BF16" or m.get("dtype") == "bf16":
            dtype = np.dtype(as_dtype("bf16").storage)
        elif m.get("dtype") in ("f8_e4m3", "f8_e5m2") and dt == "U8":
            dtype = np.dtype(as_dtype(m["dtype"]).storage)
        arr = data[start + begin:start + end].view(dtype).reshape(shape)
        spans[name] = (start + begin, start + end)
        items[name] = (arr, _desc(arr, m))
    return Loaded(path, items, info, spans, data)


def _desc(arr, m):
    try:
        if m.get("tag") and m.get("dims") is not None:
            return Desc(tuple(m["dims"]), m["dtype"], m["tag"])
        return Desc.of(arr) if arr.ndim else None
    except (ReorderError, TypeError):
        return None
