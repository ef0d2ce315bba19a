"""What quantize() returns: int8 weights with their compensation (`Quantized`, oneDNN's
int8 convolution and matmul weights), and low-bit weights with per-group scales and zero
points (`QuantizedLowBit`, oneDNN's matmul weight decompression). Two types because the two
carry different things: multipliers applied at quantization time with a compensation sum,
against dequantization scales per group."""
import numpy as np

from ..core.attrs import _mask_text
from ..core.desc import _fmt


class Quantized:
    """The result of `quantize()`.

    data             int8 array in the destination's physical shape, padding zero
    compensation     int32 s8s8 compensation (-128 * sum of q), flat in comp_desc's order, or None
    zp_compensation  int32 zero-point compensation (-sum of q), same layout, or None
    desc             the destination Desc
    comp_desc        the compensation layout (dst trimmed to the masked dims), or None
    comp_mask, scale_adjust
    """
    __slots__ = ("data", "compensation", "zp_compensation", "desc", "comp_desc", "comp_mask",
                 "scale_adjust")

    def __init__(self, data, compensation, zp_compensation, desc, comp_desc, comp_mask,
                 scale_adjust):
        self.data, self.compensation, self.zp_compensation = data, compensation, zp_compensation
        self.desc, self.comp_desc, self.comp_mask = desc, comp_desc, comp_mask
        self.scale_adjust = scale_adjust

    @property
    def offsets(self):
        """Byte offsets in to_onednn_buffer(): data, s8s8 block, zp block, total size."""
        data = self.data.nbytes
        s8s8 = -(-data // 4) * 4
        zp = s8s8 + (self.compensation.nbytes if self.compensation is not None else 0)
        end = zp + (self.zp_compensation.nbytes if self.zp_compensation is not None else 0)
        return {"data": 0, "s8s8": s8s8 if self.compensation is not None else None,
                "zp": zp if self.zp_compensation is not None else None, "size": end}

    def to_onednn_buffer(self):
        """One uint8 buffer laid out as oneDNN's weights memory with an extra descriptor:
        the s8 data, zeros up to a multiple of 4 bytes, the s8s8 block, then the zp block
        (little-endian int32)."""
        off = self.offsets
        buf = np.zeros(off["size"], dtype=np.uint8)
        buf[:self.data.nbytes] = self.data.reshape(-1).view(np.uint8)
        if self.compensation is not None:
            blk = self.compensation.astype("<i4", copy=False).view(np.uint8)
            buf[off["s8s8"]:off["s8s8"] + blk.size] = blk
        if self.zp_compensation is not None:
            blk = self.zp_compensation.astype("<i4", copy=False).view(np.uint8)
            buf[off["zp"]:off["zp"] + blk.size] = blk
        return buf

    def __repr__(self):
        comp = "+".join(k for k, v in (("s8s8", self.compensation), ("zp", self.zp_compensation))
                        if v is not None) or "no"
        return (f"Quantized({self.desc!r}, {comp} compensation"
                + (f" over {_mask_text(self.comp_mask, self.desc.ndim)}" if self.comp_desc else "")
                + (f", scale_adjust {self.scale_adjust:g}" if self.scale_adjust != 1.0 else "") + ")")


class QuantizedLowBit:
    """The result of a low-bit `quantize()`.

    data         packed uint8 buffer (s4/u4, oneDNN's nibble order) or the f8 / int4 array
    scales       f32 (or bf16/f16) dequantization scales, shape (..., K // group_size, N):
                 w ~= scales * (q - zero_points)
    zero_points  int8 / uint8 (s4, u4 values) or int32, same shape, or None (symmetric)
    desc         the destination Desc; group_size; scale_mask (all dims); groups (G, 1)
    """
    __slots__ = ("data", "scales", "zero_points", "desc", "group_size", "scale_mask", "groups")

    def __init__(self, data, scales, zero_points, desc, group_size, scale_mask, groups):
        self.data, self.scales, self.zero_points, self.desc = data, scales, zero_points, desc
        self.group_size, self.scale_mask, self.groups = group_size, scale_mask, groups

    def __repr__(self):
        zp = "no zero points" if self.zero_points is None else "zero points"
        return (f"QuantizedLowBit({self.desc!r}, groups of {self.group_size} along dim "
                f"{'abcdefghijkl'[self.desc.ndim - 2]}, scales {_fmt(self.scales.shape)}, {zp})")
