"""Normalisation: a (src, dst) descriptor pair as loop nodes (spec §5.3 is oneDNN's version).

  1. Each logical dim is split into digits at every weight either side uses, so that each
     digit is one strided axis on both sides (`nchw -> nChw16c`: c = 16*C + c16).
     The iteration space of a dim is its size rounded up to the larger blocking; positions
     beyond the logical size are zeros in dst padding, or skipped where dst has no room.
  2. Size-1 nodes are dropped, nodes are sorted by dst stride (outermost first), and nodes
     contiguous on both sides are fused, so `h` and `w` become one run of H*W.
"""
from ..kernels.base import Node, Problem


class Incompatible(Exception):
    """The two blockings of a dim do not nest (e.g. 48c against 32c)."""


def _dim_nodes(d, src, dst):
    n = src.dims[d]
    s_axes = [a for a in src.axes if a.dim == d]
    d_axes = [a for a in dst.axes if a.dim == d]
    blk = max(src.block_size(d), dst.block_size(d))
    if blk % src.block_size(d) or blk % dst.block_size(d):
        raise Incompatible(d)
    full = -(-n // blk) * blk                       # iteration extent of this dim
    weights = sorted({a.weight for a in s_axes + d_axes})
    for lo, hi in zip(weights, weights[1:]):
        if hi % lo:
            raise Incompatible(d)
    nodes = []
    for i, w in enumerate(weights):
        top = weights[i + 1] if i + 1 < len(weights) else full
        extent = top // w
        # each side: the axis holding digit weight w is the one with the largest weight <= w
        sa = max((a for a in s_axes if a.weight <= w), key=lambda a: a.weight)
        da = max((a for a in d_axes if a.weight <= w), key=lambda a: a.weight)
        nodes.append(Node(extent, sa.stride * (w // sa.weight), da.stride * (w // da.weight), d, w))
    return nodes, full


def normalise(src, dst, attrs=None):
    """(src, dst) -> Problem, or raise Incompatible for blockings that do not nest.

    With conversion attributes, each node also gets a scale index stride and a compensation
    index stride (attrs.index_strides), and nodes fuse only where those chain too."""
    nodes, checked = [], []
    noq = ((0, 0),) if attrs is not None else ()
    if 0 in src.dims:       # nothing to move, and dst (padded dims 0 too) holds nothing
        return Problem(src, dst, (Node(0, 0, 0, -1, 1),), (), src.dtype.itemsize, attrs, noq)
    qs = attrs.index_strides(src, dst) if attrs is not None else None
    dst_pad = dst.padded_dims
    for d in range(src.ndim):
        dn, full = _dim_nodes(d, src, dst)
        padded = full > src.dims[d]
        if padded:
            checked.append((d, src.dims[d], dst_pad[d]))
        nodes += [(nd if padded else nd._replace(dim=-1), qs(d, nd.weight) if qs else (0, 0))
                  for nd in dn if nd.extent != 1]
    nodes.sort(key=lambda nq: (-abs(nq[0].ds), -abs(nq[0].ss)))
    fused = []
    for nd, (ks, cs) in nodes:
        if fused:
            prev, (pk, pc) = fused[-1]
            if (prev.ds == nd.ds * nd.extent and prev.ss == nd.ss * nd.extent
                    and pk == ks * nd.extent and pc == cs * nd.extent
                    and prev.dim == nd.dim and (nd.dim < 0 or prev.weight == nd.weight * nd.extent)):
                fused[-1] = (nd._replace(extent=prev.extent * nd.extent), (ks, cs))
                continue
        fused.append((nd, (ks, cs)))
    if not fused:
        fused = [(Node(1, 0, 0, -1, 1), (0, 0))]
    return Problem(src, dst, tuple(nd for nd, _ in fused), tuple(checked), src.dtype.itemsize,
                   attrs, tuple(q for _, q in fused) if attrs is not None else ())
