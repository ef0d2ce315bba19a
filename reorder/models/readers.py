"""Input files: ONNX, safetensors, .npz and .npy. Each reader lists the tensors (name, shape,
dtype, bytes) from the file's index alone; a tensor's data is read only when it is converted,
memory-mapped read-only wherever the format stores it uncompressed."""
import os
import zipfile

import numpy as np

from . import safetensors_format as stf
from .errors import ConvertError
from .source import SourceTensor, memmap_region


def detect(path):
    """'onnx', 'safetensors', 'npz' or 'npy', from the extension, checked against the bytes."""
    ext = os.path.splitext(path)[1].lower()
    kinds = {".onnx": "onnx", ".safetensors": "safetensors", ".npz": "npz", ".npy": "npy"}
    if ext not in kinds:
        raise ConvertError(f"{path}: unknown input format {ext or '(no extension)'!r}; the "
                           f"converter reads .onnx, .safetensors, .npz and .npy")
    if not os.path.isfile(path):
        raise ConvertError(f"{path}: no such file")
    return kinds[ext]


def read(path):
    """(format, [SourceTensor], {name: Role} decided by the file itself, possibly empty)."""
    fmt = detect(path)
    if fmt == "onnx":
        from . import onnx_reader
        tensors, roles = onnx_reader.read(path)
        return fmt, tensors, roles
    return fmt, {"safetensors": _safetensors, "npz": _npz, "npy": _npy}[fmt](path), {}


def _safetensors(path):
    tensors, _, start = stf.read_header(path)
    out = []
    for name, (dt, shape, begin, end) in tensors.items():
        dtype = stf.DTYPES[dt]
        out.append(SourceTensor(name, shape, dtype, end - begin,
                                memmap_region(path, start + begin, dtype, shape),
                                bf16=dt == "BF16"))
    return out


def _npy_header(f, where):
    try:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise ValueError(f"unsupported .npy version {version}")
    except ValueError as exc:
        raise ConvertError(f"{where}: corrupt .npy data ({exc})") from None
    if dtype.hasobject:
        raise ConvertError(f"{where}: holds Python objects, not numbers (refused: loading "
                           f"them would run pickled code)")
    return shape, fortran, dtype


def _check_dtype(where, dtype):
    if dtype.byteorder == ">":
        raise ConvertError(f"{where}: big-endian data ({dtype}) is not supported")
    if dtype.kind not in "biuf":
        raise ConvertError(f"{where}: dtype {dtype} is not a number type")
    return dtype


def _npy(path):
    try:
        with open(path, "rb") as f:
            shape, fortran, dtype = _npy_header(f, path)
            start = f.tell()
        size = os.path.getsize(path)
    except OSError as exc:
        raise ConvertError(f"cannot read {path}: {exc.strerror or exc}") from None
    _check_dtype(path, dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if start + nbytes > size:
        raise ConvertError(f"{path}: truncated: shape {list(shape)} of {dtype} needs {nbytes} "
                           f"bytes after the header, the file has {size - start}")
    name = os.path.splitext(os.path.basename(path))[0]
    return [SourceTensor(name, tuple(shape), dtype, nbytes,
                         _fortran(memmap_region(path, start, dtype, shape[::-1] if fortran else shape),
                                  fortran))]


def _fortran(load, fortran):
    """A Fortran-ordered array is mapped as its reversed shape and transposed back (a view)."""
    return (lambda: load().T) if fortran else load


def _npz(path):
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ConvertError(f"{path}: corrupt or truncated .npz ({exc})") from None
    out = []
    with zf, open(path, "rb") as raw:
        for info in zf.infolist():
            if not info.filename.endswith(".npy"):
                continue
            name = info.filename[:-4]
            where = f"{path}: member {info.filename!r}"
            try:
                with zf.open(info) as member:
                    shape, fortran, dtype = _npy_header(member, where)
                    header_len = member.tell() if info.compress_type == zipfile.ZIP_STORED else None
            except (zipfile.BadZipFile, OSError, EOFError) as exc:
                raise ConvertError(f"{where}: corrupt ({exc})") from None
            _check_dtype(where, dtype)
            nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            if info.compress_type == zipfile.ZIP_STORED:
                # stored uncompressed: map it in place, after the local header and .npy header
                raw.seek(info.header_offset)
                local = raw.read(30)
                if len(local) < 30 or local[:4] != b"PK\x03\x04":
                    raise ConvertError(f"{where}: corrupt zip local header")
                nlen = int.from_bytes(local[26:28], "little")
                xlen = int.from_bytes(local[28:30], "little")
                start = info.header_offset + 30 + nlen + xlen + header_len
                if info.file_size - header_len != nbytes or start + nbytes > os.path.getsize(path):
                    raise ConvertError(f"{where}: truncated: shape {list(shape)} of {dtype} "
                                       f"needs {nbytes} bytes")
                load = memmap_region(path, start, dtype, shape[::-1] if fortran else shape)
                out.append(SourceTensor(name, tuple(shape), dtype, nbytes, _fortran(load, fortran)))
            else:
                out.append(SourceTensor(name, tuple(shape), dtype, nbytes,
                                        _compressed(path, info.filename, where)))
    return out


def _compressed(path, member, where):
    """Loader that decompresses one member (compressed archives cannot be mapped)."""
    def load():
        try:
            with zipfile.ZipFile(path) as zf, zf.open(member) as f:
                return np.lib.format.read_array(f, allow_pickle=False)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
            raise ConvertError(f"{where}: corrupt or truncated ({exc})") from None
    return load
