"""The planner: which kernel runs a (src, dst) pair, and its runner.

The kernels are tried in the order of `KERNELS`; the first whose `is_usable_for` accepts the
normalised problem prepares a runner. The conversion kernel comes first and takes exactly the
problems with conversion attributes; the block kernel comes before transpose and takes weights
blocked in two dims (OIhw16i16o, OIhw4i16o4i) whose blocks fit its scratch, and, where the CPU
has AVX-512 VBMI, 1- and 2-byte activations of small planes blocked by 16 channels; the
interleave kernel, next, takes rows of pixels with 2 to 15 channels against one plane a channel
(nhwc <-> nchw of images) where the CPU has its AVX-512 permutes; the generic kernel accepts
everything, so every valid pair has a plan. Blockings that do not nest (48c
against 32c) are planned as two steps through the plain layout, and a conversion across
layouts that only the strided walk could take (19 channels, nchw -> nhwc, into s8), or whose
move alone takes the interleave kernel (images between nhwc and nchw), as a move and a
conversion on an unchanged layout (a narrowing conversion first, so that the move carries the
narrower type).
"""
import math

from .. import _convert
from ..kernels.convert import ConversionKernel
from ..core.desc import Desc
from ..kernels.move import (BlockKernel, CopyKernel, GenericKernel, InterleaveKernel,
                           TransposeKernel)
from .normalise import Incompatible, normalise

KERNELS = (ConversionKernel(), CopyKernel(), BlockKernel(), InterleaveKernel(), TransposeKernel(),
           GenericKernel())


class Step:
    """One pass over memory: the normalised problem, the kernel chosen and its runner."""
    __slots__ = ("problem", "kernel", "runner")

    def __init__(self, problem, kernel, runner):
        self.problem, self.kernel, self.runner = problem, kernel, runner


def choose(prob, stream_min_bytes):
    """The Step that runs `prob`."""
    for k in KERNELS:
        if k.is_usable_for(prob, stream_min_bytes):
            return Step(prob, k, k.prepare(prob, stream_min_bytes))
    raise AssertionError("the generic kernel accepts every problem")  # pragma: no cover


# The conversion walk's SIMD rows pay their set-up back from runs of this many elements.
_WALK_MIN_RUN = 64


def _walk_run(step):
    """For a conversion on the element walk, the elements its innermost node runs contiguous
    on both sides (0: strided on one side), or all the rows (and columns) the walk takes in
    one call (Convert.slab, Convert.grid, from the nodes in the order the runner walks them,
    Convert.walked); None for any other runner."""
    if type(step.runner) is not _convert.Convert or not step.problem.nodes:
        return None
    walked = step.runner.walked
    if step.runner.slab:
        return walked[-1][0] * walked[-2][0]
    if step.runner.grid:
        return math.prod(ext for ext, _, _ in walked[-1 - step.runner.grid:])
    ext, ss, ds = walked[-1]
    return ext if ss == 1 and ds == 1 else 0


def _slow_walk(step):
    """A conversion on the element walk whose innermost node is strided on one side, or a
    contiguous run too short for the SIMD rows and not taken as a grid (nChw16c -> nhwc at
    C=19: 16): the tiles did not take it."""
    run = _walk_run(step)
    return run is not None and run < _WALK_MIN_RUN and step.runner.walked[-1][0] > 1


def plan_steps(src, dst, attrs, stream_min_bytes):
    """(steps, via): one Step, or two through `via`: the plain layout when the blockings do
    not nest (the conversion in the second step), or, when a conversion across layouts would
    take the element walk, a move and a conversion on an unchanged layout. A narrowing
    conversion (f32 -> s8) runs first where that gives it longer runs, into src's layout in
    dst's type, so the move carries the narrower type; otherwise the data moves first, into
    dst's layout in src's type. The Step whose problem has attrs is the one that converts."""
    try:
        step = choose(normalise(src, dst, attrs), stream_min_bytes)
    except Incompatible:
        via = Desc(src.dims, src.dtype)
        return (choose(normalise(src, via), stream_min_bytes),
                choose(normalise(via, dst, attrs), stream_min_bytes)), via
    slow = attrs is not None and dst.tag is not None and _slow_walk(step)
    pixels = attrs is not None and dst.tag is not None and not slow \
        and _interleaved_move(src, dst, stream_min_bytes)
    if slow or pixels:
        # the move takes the tiles, the grid or the interleave kernel, the conversion
        # contiguous rows (docs/int8.md); a destination read back (sum), and compensation
        # laid out by dst's blocking, keep the conversion last
        first = (dst.dtype.itemsize < src.dtype.itemsize and src.tag is not None
                 and attrs.sum_beta is None and not attrs.comp)
        for conv_first in (True, False) if first else (False,):
            via = (Desc(src.dims, dst.dtype, src.tag) if conv_first
                   else Desc(dst.dims, src.dtype, dst.tag))
            a1, a2 = (attrs, None) if conv_first else (None, attrs)
            try:
                steps = (choose(normalise(src, via, a1), stream_min_bytes),
                         choose(normalise(via, dst, a2), stream_min_bytes))
            except Incompatible:
                continue
            if pixels and steps[conv_first].kernel.name == InterleaveKernel.name:
                return steps, via
            if slow and (_walk_run(steps[1 - conv_first]) or _WALK_MIN_RUN) > _walk_run(step):
                return steps, via
    return (step,), None


def _interleaved_move(src, dst, stream_min_bytes):
    """Whether src's data moved into dst's layout, in src's type, takes the interleave
    kernel (nhwc <-> nchw of images): that move and a conversion on an unchanged layout ran
    2.4-4.9 times as fast as the conversion tiles across the layouts (u8 -> f32 with a
    scale, f32 -> bf16, bf16 -> f32 at 8x3x224x224; docs/kernels/conversion.md#choices-in-the-code)."""
    try:
        prob = normalise(src, Desc(dst.dims, src.dtype, dst.tag))
    except Incompatible:
        return False
    return _INTERLEAVE.is_usable_for(prob, stream_min_bytes)


_INTERLEAVE = next(k for k in KERNELS if isinstance(k, InterleaveKernel))
