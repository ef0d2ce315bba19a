"""oneDNN's own memory descriptors through its C API (ctypes): built from a tag or strides,
then sub-memory, reshape and permute_axes, read back with dnnl_memory_desc_query. Test side
only. The offset of every logical index is computed here from the queried blocking (dims,
padded offsets, offset0, strides, inner blocks) with oneDNN's off_v formula, written from the
spec and sharing no code with reorder's Desc."""
import ctypes as C
import re

import numpy as np

from reorder.models import onednn_runtime as R

INVALID_ARGUMENTS, UNIMPLEMENTED = 2, 3

# dnnl_format_tag_t values (oneDNN 3.x dnnl_types.h; the enum only grows at its end within a
# major version). Every descriptor built from one is checked against the tag's own blocking
# before use, so a wrong number fails loudly instead of testing the wrong layout.
TAG_VALUES = {
    "a": 2, "ab": 3, "abc": 4, "abcd": 5, "abcde": 6, "abcdef": 7,
    "ba": 14, "acb": 15, "abdc": 20, "acbd": 21, "acdb": 22, "bacd": 25, "acdeb": 33,
    "aBc16b": 56, "ABc16b16a": 57, "ABc4b16a4b": 61, "aBc8b": 69,
    "Abcd16a": 73, "Abcd8a": 74, "ABcd16a16b": 75, "aBcd16b": 78, "ABcd16b16a": 79,
    "aBCd16c16b": 81, "aBcd4b": 84, "ABcd4b16a4b": 85, "aBcd8b": 102, "ABcd8b16a2b": 104,
    "Abcde16a": 114, "ABcde4b16a4b": 119, "aBcde16b": 121, "ABcde16b16a": 122,
    "aBCde16c16b": 124, "aBcde4b": 128, "aBCde4c16b4c": 134, "Abcde8a": 138, "aBcde8b": 142,
    "aBCdef16c16b": 166, "aCBde16b16c": 209, "BAc16a16b": 222, "BAcd16a16b": 224,
}

_DT = {"f32": 3, "s32": 4, "s8": 5, "u8": 6, "f16": 1, "bf16": 2}


class Refused(Exception):
    """oneDNN returned a status other than success."""

    def __init__(self, what, status):
        super().__init__(f"oneDNN refused {what}: dnnl_status {status}")
        self.status = status


def tag_blocking(tag, dims):
    """(strides, inner_blks, inner_idxs, padded_dims) a tag gives dims, by the spec's rules:
    inner blocks in the order written; outer strides dense from the innermost letter out."""
    tokens = re.findall(r"(\d*)([a-lA-L])", tag)
    outer = [ord(ch.lower()) - 97 for n, ch in tokens if not n]
    inner = [(int(n), ord(ch) - 97) for n, ch in tokens if n]
    blk = [1] * len(dims)
    for b, d in inner:
        blk[d] *= b
    padded = [-(-n // b) * b for n, b in zip(dims, blk)]
    strides, stride = [0] * len(dims), int(np.prod([b for b, _ in inner], dtype=np.int64))
    for d in reversed(outer):
        strides[d] = stride
        if padded[d]:
            stride *= padded[d] // blk[d]
    return strides, [b for b, _ in inner], [d for _, d in inner], padded


class Onednn:
    """The descriptor half of a loaded libdnnl (reorder.models.onednn_runtime.Library)."""

    def __init__(self, lib):
        self.lib, L, P, vp = lib, lib.L, C.POINTER, C.c_void_p
        sigs = {"dnnl_memory_desc_create_submemory": [P(vp), vp, R.Dims, R.Dims],
                "dnnl_memory_desc_reshape": [P(vp), vp, C.c_int, R.Dims],
                "dnnl_memory_desc_permute_axes": [P(vp), vp, P(C.c_int)]}
        for name, args in sigs.items():
            f = getattr(L, name)
            f.argtypes, f.restype = args, C.c_int
        self.L = L
        self._live = []

    def close(self):
        for md in self._live:
            self.L.dnnl_memory_desc_destroy(md)
        self._live.clear()

    def _made(self, st, md, what):
        if st != 0:
            raise Refused(what, st)
        self._live.append(md)
        return md

    def with_tag(self, dims, tag, dtype="f32"):
        md = C.c_void_p()
        st = self.L.dnnl_memory_desc_create_with_tag(C.byref(md), len(dims), R.Dims(*dims),
                                                     _DT[dtype], TAG_VALUES[tag])
        md = self._made(st, md, f"tag {tag} of dims {list(dims)}")
        got = self.read(md)
        want = tag_blocking(tag, dims)
        if (got["strides"], got["inner_blks"], got["inner_idxs"], got["padded_dims"]) != \
                tuple(map(list, want)):
            raise RuntimeError(f"format tag value {TAG_VALUES[tag]} is not {tag} in this oneDNN "
                               f"({self.lib.version_str}): {got}")
        return md

    def with_strides(self, dims, strides, dtype="f32"):
        md = C.c_void_p()
        st = self.L.dnnl_memory_desc_create_with_strides(C.byref(md), len(dims),
                                                         R.Dims(*dims), _DT[dtype],
                                                         R.Dims(*strides))
        return self._made(st, md, f"strides {list(strides)} of dims {list(dims)}")

    def submemory(self, parent, dims, offsets):
        md = C.c_void_p()
        st = self.L.dnnl_memory_desc_create_submemory(C.byref(md), parent, R.Dims(*dims),
                                                      R.Dims(*offsets))
        return self._made(st, md, f"sub-memory {list(dims)} at {list(offsets)}")

    def reshape(self, md_in, dims):
        md = C.c_void_p()
        st = self.L.dnnl_memory_desc_reshape(C.byref(md), md_in, len(dims), R.Dims(*dims))
        return self._made(st, md, f"reshape to {list(dims)}")

    def permute_axes(self, md_in, perm):
        md = C.c_void_p()
        st = self.L.dnnl_memory_desc_permute_axes(C.byref(md), md_in,
                                                  (C.c_int * len(perm))(*perm))
        return self._made(st, md, f"permute_axes {list(perm)}")

    def read(self, md):
        return self.lib.md_read(md)

    def offsets(self, md):
        """int64 array of shape dims: the physical offset of every logical index."""
        return offsets_of(self.read(md))


def offsets_of(info):
    """oneDNN's off_v for every logical index, from a queried descriptor (spec §1.4)."""
    dims = info["dims"]
    idx = np.indices(dims, dtype=np.int64).reshape(len(dims), -1)
    p = idx + np.array(info["padded_offsets"], np.int64)[:, None]
    off = np.full(idx.shape[1], info["offset0"], np.int64)
    bs = 1
    for blk, d in zip(reversed(info["inner_blks"]), reversed(info["inner_idxs"])):
        off += (p[d] % blk) * bs
        p[d] //= blk
        bs *= blk
    off += (p * np.array(info["strides"], np.int64)[:, None]).sum(axis=0)
    return off.reshape(dims)
