"""The safetensors file format, read and written without the `safetensors` package.

A file is: 8 bytes little-endian header length N, N bytes of JSON, then the data. The JSON maps
each tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the
first data byte) and may hold "__metadata__", a str -> str map. The data must be covered
without holes, so the 64-byte alignment this converter guarantees is made with small u8 filler
tensors named `__pad__.N`, and the JSON is padded with spaces so the data starts at a multiple
of 64 bytes.
"""
import json
import os
import struct

import numpy as np

from .errors import ConvertError

ALIGN = 64
PAD_PREFIX = "__pad__."
MAX_HEADER = 100 * 1024 * 1024          # the reference implementation's limit

DTYPES = {"BOOL": np.dtype(np.bool_), "U8": np.dtype(np.uint8), "I8": np.dtype(np.int8),
          "I16": np.dtype("<i2"), "U16": np.dtype("<u2"), "F16": np.dtype("<f2"),
          "I32": np.dtype("<i4"), "U32": np.dtype("<u4"), "F32": np.dtype("<f4"),
          "F64": np.dtype("<f8"), "I64": np.dtype("<i8"), "U64": np.dtype("<u8"),
          "BF16": np.dtype("<u2")}          # bf16 words; the Desc says what they mean
NAMES = {np.dtype(np.bool_): "BOOL", np.dtype(np.uint8): "U8", np.dtype(np.int8): "I8",
         np.dtype("<i2"): "I16", np.dtype("<u2"): "U16", np.dtype("<f2"): "F16",
         np.dtype("<i4"): "I32", np.dtype("<u4"): "U32", np.dtype("<f4"): "F32",
         np.dtype("<f8"): "F64", np.dtype("<i8"): "I64", np.dtype("<u8"): "U64"}


try:                                    # f8 tensors (the onednn-f8 preset) as ml_dtypes arrays
    import ml_dtypes as _ml
    for _name, _t in (("F8_E4M3", _ml.float8_e4m3fn), ("F8_E5M2", _ml.float8_e5m2)):
        DTYPES[_name] = np.dtype(_t)
        NAMES[np.dtype(_t)] = _name
except ImportError:                     # pragma: no cover - without ml_dtypes no f8 arrays
    pass


def dtype_name(dtype, bf16=False):
    """safetensors name of a numpy dtype (bf16=True: uint16 words or ml_dtypes.bfloat16)."""
    if bf16 or np.dtype(dtype).name == "bfloat16":
        return "BF16"
    try:
        return NAMES[np.dtype(dtype).newbyteorder("<") if np.dtype(dtype).byteorder == ">"
                     else np.dtype(dtype)]
    except KeyError:
        raise ConvertError(f"safetensors has no type for numpy dtype {np.dtype(dtype)}") from None


def read_header(path):
    """(tensors {name: (dtype name, shape, begin, end)} in file order, metadata dict,
    absolute offset of the data). Every offset is checked against the file size."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) < 8:
                raise ConvertError(f"{path}: not a safetensors file ({size} bytes, shorter than "
                                   f"the 8-byte header length)")
            (n,) = struct.unpack("<Q", head)
            if n > min(MAX_HEADER, size - 8):
                raise ConvertError(f"{path}: corrupt or truncated safetensors file: header "
                                   f"length {n} but the file has {size - 8} bytes after it")
            text = f.read(n)
    except OSError as exc:
        raise ConvertError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        header = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConvertError(f"{path}: corrupt safetensors header (not JSON: {exc})") from None
    if not isinstance(header, dict):
        raise ConvertError(f"{path}: corrupt safetensors header (not a JSON object)")
    meta = header.pop("__metadata__", None) or {}
    if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
        raise ConvertError(f"{path}: __metadata__ must map strings to strings")
    start = 8 + n
    tensors = {}
    for name, info in header.items():
        try:
            dt, shape, (begin, end) = info["dtype"], tuple(info["shape"]), info["data_offsets"]
            shape = tuple(int(s) for s in shape)
            begin, end = int(begin), int(end)
        except (KeyError, TypeError, ValueError):
            raise ConvertError(f"{path}: tensor {name!r} has a malformed header entry "
                               f"{info!r}") from None
        if dt not in DTYPES:
            raise ConvertError(f"{path}: tensor {name!r} has unsupported dtype {dt!r} "
                               f"(supported: {', '.join(DTYPES)})")
        want = int(np.prod(shape, dtype=np.int64)) * DTYPES[dt].itemsize
        if min(shape, default=0) < 0 or end - begin != want or begin < 0:
            raise ConvertError(f"{path}: tensor {name!r} ({dt}, shape {list(shape)}) needs "
                               f"{want} bytes but its data_offsets are [{begin}, {end}]")
        if start + end > size:
            raise ConvertError(f"{path}: truncated: tensor {name!r} ends at byte {start + end} "
                               f"but the file has {size} bytes")
        tensors[name] = (dt, shape, begin, end)
    return dict(sorted(tensors.items(), key=lambda kv: kv[1][2])), meta, start


def layout(entries):
    """Offsets for `entries` [(name, dtype name, shape, nbytes)] with every tensor's data at a
    multiple of ALIGN, filler tensors between them. Returns (header bytes padded so that the
    data starts at a multiple of ALIGN, {name: absolute offset}, total file size)."""
    header, offsets, pos = {}, {}, 0
    for name, dt, shape, nbytes in entries:
        gap = -pos % ALIGN
        if gap:
            header[f"{PAD_PREFIX}{len(header)}"] = {"dtype": "U8", "shape": [gap],
                                                    "data_offsets": [pos, pos + gap]}
            pos += gap
        header[name] = {"dtype": dt, "shape": [int(s) for s in shape],
                        "data_offsets": [pos, pos + nbytes]}
        offsets[name] = pos
        pos += nbytes
    return header, offsets, pos


def encode_header(header, metadata):
    """The 8-byte length and the JSON, padded with spaces to a multiple of ALIGN."""
    body = dict(header)
    body["__metadata__"] = metadata
    text = json.dumps(body, separators=(",", ":")).encode("utf-8")
    text += b" " * (-(8 + len(text)) % ALIGN)
    return struct.pack("<Q", len(text)) + text
