"""The fallback tables of onednn-f32 / onednn-int8 as measurements: what a real oneDNN asked for
the weights of real networks' layers (onednn_layouts.json, written by tools/onednn_sweep.py),
and the rule that answers a layer nobody measured from its nearest measured one.

The nearest signature (docs/convert.md, "Tables from measurements"): among the rows of the same
ISA, source type and layout, kind (conv, deconv, ip, matmul), class (dense, grouped,
depthwise) and spatial rank, the 1x1-ness of the kernel must agree if any row has it; then the
row of least distance: the |log2| ratios of the output and input channels per group, of the
group count and of the kernel's volume; one for each of the blocks 8, 16, 24, 32 that divides
one output channel count and not the other, a half if the input channel counts' largest
power-of-two divisors (up to 16) differ, one for a different stride, and half the |log2| ratios
of the source's spatial size and of the rows of an inner product or matmul. Ties go to the row
written first. (The weights were chosen by leaving each swept network out in turn and
predicting its rows from the others', never on the held-out networks.)
"""
import functools
import json
import math
import os
from dataclasses import dataclass

from .onednn_runtime import matrix_nk

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "onednn_layouts.json")


@dataclass(frozen=True)
class Signature:
    """What the nearest-row rule compares; None for what is not known (no graph: the spatial
    size, stride and batch rows)."""
    kind: str                      # conv | deconv | ip | matmul
    cls: str                       # dense | grouped | depthwise
    rank: int                      # spatial dims (0 for ip / matmul)
    oc: int                        # output channels per group (ip / matmul: N)
    ic: int                        # input channels per group (ip / matmul: K)
    groups: int = 1
    kernel: tuple = ()
    stride: int = None             # the largest stride
    spatial: int = None            # the source's spatial size (product)
    rows: int = None               # ip / matmul: M

    @property
    def k1(self):
        return all(k == 1 for k in self.kernel)


def signature(kind, weights_dims, groups=1, strides=None, src_dims=None):
    """The Signature of a layer from oneDNN's logical weights dims (conv / deconv (O, I, k...)
    or (G, O/G, I/G, k...); ip (N, K); matmul (K, N)) and what else is known of it."""
    w = tuple(int(x) for x in weights_dims)
    if kind in ("ip", "matmul"):
        n, k = matrix_nk(kind, w)
        return Signature(kind, "dense", 0, n, k, rows=src_dims[0] if src_dims else None)
    if groups > 1:
        g, oc, ic, kern = w[0], w[1], w[2], w[3:]
        cls = "depthwise" if oc == 1 and ic == 1 else "grouped"
    else:
        g, oc, ic, kern, cls = 1, w[0], w[1], w[2:], "dense"
    spatial = math.prod(src_dims[2:]) if src_dims else None
    return Signature(kind, cls, len(kern), oc, ic, g, kern,
                     max(strides) if strides else None, spatial)


def layer_signature(layer):
    """The Signature of an onednn_runtime.Layer."""
    return signature(layer.kind, layer.weights_dims, layer.groups, layer.strides,
                     layer.src_dims)


def _l2(a, b):
    return abs(math.log2(max(a, 1) / max(b, 1)))


_OC_BLOCKS = (8, 16, 24, 32)


def _pow2(x):
    for p in (16, 8, 4, 2):
        if x % p == 0:
            return p
    return 1


def distance(a, b):
    """How far measured signature `b` is from `a` (the module's rule); unknowns count zero."""
    d = _l2(a.oc, b.oc) + _l2(a.ic, b.ic) + _l2(a.groups, b.groups)
    d += _l2(math.prod(a.kernel), math.prod(b.kernel))
    # the blocks oneDNN's kernels split output channels by: which of them divide OC
    d += sum((a.oc % p == 0) != (b.oc % p == 0) for p in _OC_BLOCKS)
    d += 0.5 * (_pow2(a.ic) != _pow2(b.ic))
    if a.stride is not None and b.stride is not None and a.stride != b.stride:
        d += 1
    if a.spatial is not None and b.spatial is not None:
        d += 0.5 * _l2(a.spatial, b.spatial)
    if a.rows is not None and b.rows is not None:
        d += 0.5 * _l2(a.rows, b.rows)
    return d


@dataclass(frozen=True)
class Row:
    isa: str
    src_dtype: str
    src_layout: str
    sig: Signature
    tag: str                       # over oneDNN's logical weights dims
    implementation: str
    compensation: tuple
    scale_adjust: float
    network: str
    layer: dict


class Measurements:
    def __init__(self, data, source=DATA):
        try:
            self.version = data["onednn"]["version"]
            self.isas = tuple(data["isas"])
            rows = data["rows"]
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{source}: not a weights-layout sweep (missing {exc})") from None
        self.data = data
        self.rows = []
        for i, r in enumerate(rows):
            try:
                sig = signature(r["kind"], r["weights_dims"], r["groups"], r["strides"],
                                r["src_dims"])
                self.rows.append(Row(r["isa"], r["src_dtype"], r["src_layout"], sig, r["tag"],
                                     r["implementation"], tuple(r["compensation"]),
                                     float(r["scale_adjust"]), r["network"], r))
            except (KeyError, TypeError, ValueError, IndexError) as exc:
                raise ValueError(f"{source}: row {i}: {exc!r}") from None
        self._by_key, self._nearest = {}, {}
        for r in self.rows:
            self._by_key.setdefault((r.isa, r.src_dtype, r.src_layout, r.sig.kind, r.sig.cls,
                                     r.sig.rank), []).append(r)

    @property
    def sources(self):
        """The (source type, layout) pairs measured for convolutions."""
        return sorted({(r.src_dtype, r.src_layout) for r in self.rows
                       if r.sig.kind in ("conv", "deconv")})

    def covers(self, isa, src_dtype, src_layout):
        return any(r.isa == isa and r.src_dtype == src_dtype and r.src_layout == src_layout
                   for r in self.rows)

    def nearest(self, isa, src_dtype, src_layout, sig):
        """The measured Row nearest `sig`, or None when no row has its ISA, source, kind,
        class and rank."""
        key = (isa, src_dtype, src_layout, sig)
        if key not in self._nearest:                  # a model repeats its layers' shapes
            rows = self._by_key.get((isa, src_dtype, src_layout, sig.kind, sig.cls, sig.rank))
            if rows:
                same = [r for r in rows if r.sig.k1 == sig.k1] or rows
                rows = min(same, key=lambda r: distance(sig, r.sig))
            self._nearest[key] = rows or None
        return self._nearest[key]


@functools.lru_cache(maxsize=None)
def measurements(path=DATA):
    with open(path, encoding="utf-8") as f:
        return Measurements(json.load(f), path)
