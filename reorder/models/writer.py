"""Writing the output file safely: a temporary name beside the destination, space reserved up
front, each tensor written at its offset (pwrite) as it finishes, renamed at the end.
Any failure removes the temporary file, so no half-written output is ever left behind."""
import errno
import json
import os
import tempfile

import numpy as np

from . import safetensors_format as stf
from .errors import ConvertError


def check_destination(dst, force, sources=()):
    """Refuse an existing destination (without force) and writing over an input."""
    dst = os.path.abspath(dst)
    for s in sources:
        if os.path.exists(dst) and os.path.samefile(dst, s):
            raise ConvertError(f"{dst}: the output would overwrite its input")
    if os.path.isdir(dst):
        raise ConvertError(f"{dst}: is a directory; give a file name or use --out-dir")
    if os.path.exists(dst) and not force:
        raise ConvertError(f"{dst}: exists; refusing to overwrite it (use --force / force=True)")
    parent = os.path.dirname(dst)
    if not os.path.isdir(parent):
        raise ConvertError(f"{dst}: the directory {parent} does not exist")


def _disk_error(dst, exc, what):
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return ConvertError(f"{dst}: no space left on the device while {what}; nothing was "
                            f"written (the partial file was removed)")
    return ConvertError(f"{dst}: {exc.strerror or exc} while {what}; the partial file was "
                        f"removed")


class Writer:
    """with Writer(dst, outputs, metadata) as w: w.write(output, array); the file appears
    under `dst` only when the block ends without an exception."""

    def __init__(self, dst, outputs, metadata, force=False):
        self.dst = os.path.abspath(dst)
        self.force = force
        entries = [(o.name, o.st_dtype, o.shape, o.nbytes) for o in outputs]
        names = [e[0] for e in entries]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise ConvertError(f"{dst}: two output tensors would be named {dup[0]!r}")
        header, self.offsets, data_size = stf.layout(entries)
        meta = {"reorder": json.dumps(metadata, separators=(",", ":"))}
        self.head = stf.encode_header(header, meta)
        self.size = len(self.head) + data_size
        self.tmp = None
        self.file = None

    def __enter__(self):
        parent, base = os.path.split(self.dst)
        fd, self.tmp = tempfile.mkstemp(prefix=f".{base}.", suffix=".tmp", dir=parent)
        self.file = os.fdopen(fd, "r+b")
        try:
            if self.size:
                # reserve the space now: a full disk fails here, before any tensor is converted
                reserve(self.file.fileno(), self.size)
            pwrite_all(self.file.fileno(), self.head, 0)
        except OSError as exc:
            self._discard()
            raise _disk_error(self.dst, exc, f"reserving {self.size} bytes") from None
        except BaseException:
            self._discard()
            raise
        return self

    def write(self, out, array):
        """Write the C-contiguous `array` as the data of `out` (at its aligned offset)."""
        # as bytes: the buffer protocol has no format for ml_dtypes types (f8)
        data = memoryview(np.ascontiguousarray(array).reshape(-1).view(np.uint8))
        if data.nbytes != out.nbytes:
            raise ConvertError(f"{self.dst}: tensor {out.name!r} has {data.nbytes} bytes, "
                               f"expected {out.nbytes}")
        pwrite_all(self.file.fileno(), data, len(self.head) + self.offsets[out.name])

    def __exit__(self, etype, exc, tb):
        if etype is not None:
            self._discard()
            if isinstance(exc, OSError):
                raise _disk_error(self.dst, exc, "writing") from None
            return False
        try:
            self.file.flush()
            self.file.close()
            if os.path.exists(self.dst) and not self.force:
                raise ConvertError(f"{self.dst}: appeared while converting; refusing to "
                                   f"overwrite it (use --force)")
            os.replace(self.tmp, self.dst)
        except OSError as exc:
            self._discard()
            raise _disk_error(self.dst, exc, "finishing the file") from None
        except BaseException:
            self._discard()
            raise
        return False

    def _discard(self):
        try:
            if self.file is not None and not self.file.closed:
                self.file.close()
        finally:
            if self.tmp and os.path.exists(self.tmp):
                os.unlink(self.tmp)


def pwrite_all(fd, data, pos):
    """pwrite() until every byte is written (a write may be short)."""
    data = memoryview(data).cast("B")
    while data:
        n = os.pwrite(fd, data, pos)
        data, pos = data[n:], pos + n


def reserve(fd, size):
    """Allocate `size` bytes of disk for fd (ENOSPC here, before anything is converted)."""
    if hasattr(os, "posix_fallocate"):
        os.posix_fallocate(fd, 0, size)
    else:                                            # no fallocate: write the zeros
        chunk = b"\0" * (1 << 20)
        pos = 0
        while pos < size:
            n = min(len(chunk), size - pos)
            pwrite_all(fd, chunk[:n], pos)
            pos += n
