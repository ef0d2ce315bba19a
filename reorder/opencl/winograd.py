"""The Winograd filter transform U = G g G^T, one sequence of steps evaluated twice: by numpy
on the host (`winograd_transform`) and as OpenCL C for the device packer (`_winograd_source`)."""
from functools import lru_cache

import numpy as np

from ..core.errors import ReorderError
from .kinds import _fmt

# ----------------------------------------------------------------------------------------------
# Winograd filter transform U = G g G^T, in MACE's operation order
#
# MACE computes U in float32 with hand-ordered sums (winograd_filter_buffer_to_image_{2x2,4x4,
# 6x6} in mace/ops/opencl/cl/buffer_to_image.cl): first along the filter's rows (one 3-vector
# per column), then along the columns of that result. A matrix product sums in another order
# and differs by an ulp in most lanes, and keeps no -0.0. Each step below is one of MACE's
# operations; `o` evaluates them (numpy arrays on the host, OpenCL C for the device packer),
# so both packers give MACE's bits. MACE's mad(x, k, 0) is x * k + 0, which turns -0 into +0;
# its other mads multiply by 2 or 4, exactly, so fused or not they round once.

def _wino2(o, t0, t1, t2, first):
    tt = o.mul(o.add(t0, t2), 0.5)
    half = o.mul(t1, 0.5)
    return [t0, o.add(tt, half), o.sub(tt, half), t2]


def _wino4(o, t0, t1, t2, first):
    a, b, c = o.const(0.25), o.const(-0.166666667), o.const(0.041666667)
    if first:       # MACE's first pass sums left to right, its second pass t1 + (t0 + t2)
        s1, s2 = o.add(o.add(t0, t1), t2), o.add(o.sub(t0, t1), t2)
    else:
        e = o.add(t0, t2)
        s1, s2 = o.add(t1, e), o.sub(e, t1)
    q = o.add(o.mul(t2, 4.0), t0)
    d = o.mul(t1, 2.0)
    return [o.mad0(t0, a), o.mad0(s1, b), o.mad0(s2, b), o.mad0(o.add(q, d), c),
            o.mad0(o.sub(q, d), c), t2]


def _wino6(o, t0, t1, t2, first):
    a, b, c = o.const(-0.222222222), o.const(0.011111111), o.const(0.005555556)
    e = o.add(t0, t2)
    d = o.mad0(t1, 2.0)
    q = o.add(o.mul(t2, 4.0), t0)
    r = o.add(o.mul(t0, 4.0), t2)
    return [t0, o.mad0(o.add(e, t1), a), o.mad0(o.sub(e, t1), a), o.mad0(o.add(q, d), b),
            o.mad0(o.sub(q, d), b), o.mad0(o.add(r, d), c), o.mad0(o.sub(r, d), c), t2]


_WINOGRAD = {2: _wino2, 4: _wino4, 6: _wino6}


def _winograd_steps(o, b, g):
    """U[r][c] (T x T, T = b + 2) from the 3 x 3 filter taps g[kh][kw], evaluated by `o`."""
    step = _WINOGRAD[b]
    cols = [step(o, g[0][j], g[1][j], g[2][j], True) for j in range(3)]      # cols[j][r]
    return [step(o, cols[0][r], cols[1][r], cols[2][r], False) for r in range(b + 2)]


class _NumpyOps:
    """float32 numpy arithmetic, one rounding per operation."""
    @staticmethod
    def const(v):
        return np.float32(v)

    add = staticmethod(np.add)
    sub = staticmethod(np.subtract)

    @staticmethod
    def mul(x, k):
        return x * np.float32(k)

    @staticmethod
    def mad0(x, k):
        return x * np.float32(k) + np.float32(0)


def winograd_transform(g, b):
    """U = G g G^T in float32 for 3x3 filters g of shape (O, I, 3, 3); returns (O, I, T, T),
    T = b + 2, with G the transform of F(b x b, 3 x 3) for b in 2, 4, 6. Computed in MACE's
    operation order, so the bits are MACE's (docs/opencl.md)."""
    if b not in _WINOGRAD:
        raise ReorderError(f"Winograd tile b must be 2, 4 or 6, got {b!r}")
    g = np.asarray(g, dtype=np.float32)
    if g.ndim != 4 or g.shape[2:] != (3, 3):
        raise ReorderError(f"a Winograd filter takes (O, I, 3, 3) filters, got shape {_fmt(g.shape)}")
    taps = [[g[:, :, kh, kw] for kw in range(3)] for kh in range(3)]
    with np.errstate(all="ignore"):             # inf and nan filters give what MACE gives
        rows = _winograd_steps(_NumpyOps, b, taps)
    return np.stack([np.stack(row, axis=-1) for row in rows], axis=-2)


# The Winograd filter on the device: one work item per (4 input channels, output channel)
# computes MACE's transform (the steps above, as OpenCL C) and writes its T*T pixels.

def _cl_float(v):
    return f"({float(np.float32(v)).hex()}f)"


class _OpenCLOps:
    """The Winograd steps as OpenCL C statements on float4 values, one rounding each (the
    program disables contraction into fma)."""

    def __init__(self):
        self.lines = []

    def _let(self, expr):
        name = f"v{len(self.lines)}"
        self.lines.append(f"    float4 {name} = {expr};")
        return name

    @staticmethod
    def const(v):
        return np.float32(v)

    def add(self, x, y):
        return self._let(f"{x} + {y}")

    def sub(self, x, y):
        return self._let(f"{x} - {y}")

    def mul(self, x, k):
        return self._let(f"{x} * {_cl_float(k)}")

    def mad0(self, x, k):
        return self._let(f"{x} * {_cl_float(k)} + 0.0f")


@lru_cache(maxsize=None)
def _winograd_source(b):
    o = _OpenCLOps()
    taps = [[f"g{kh}{kw}" for kw in range(3)] for kh in range(3)]
    rows = _winograd_steps(o, b, taps)
    t = b + 2
    load = "\n".join(
        f"    float4 g{k // 3}{k % 3} = (float4)(w[{k}], i + 1 < I ? w[{9 + k}] : 0.0f, "
        f"i + 2 < I ? w[{18 + k}] : 0.0f, i + 3 < I ? w[{27 + k}] : 0.0f);" for k in range(9))
    body = "\n".join(o.lines)
    out = []
    for name, target, store in (
            ("winograd_image", "__write_only image2d_t img",
             "write_imagef(img, (int2)(px, (k) * O + o), (v))"),
            ("winograd_f16", "__global half *dst, long width",
             "vstore_half4_rte((v), ((long)(k) * O + o) * width + px, dst)")):
        stores = "\n".join(f"    STORE({r * t + c}, {rows[r][c]});"
                           for r in range(t) for c in range(t))
        out.append(f"""
#define STORE(k, v) {store}
__kernel void {name}(__global const float *g, int O, int I, {target}) {{
    int px = get_global_id(0), o = get_global_id(1), i = px * 4;
    __global const float *w = g + ((long)o * I + i) * 9;
{load}
{body}
{stores}
}}
#undef STORE
""")
    return "#pragma OPENCL FP_CONTRACT OFF\n" + "".join(out)


# ----------------------------------------------------------------------------------------------
