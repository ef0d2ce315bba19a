"""The planner: which kernel runs a (src, dst) pair, and its runner.

The kernels are tried in the order of `KERNELS`; the first whose `is_usable_for` accepts the
normalised problem prepares a runner. The conversion kernel comes first and takes exactly the
problems with conversion attributes; the block kernel comes before transpose and takes weights
blocked in two dims (OIhw16i16o, OIhw4i16o4i) whose blocks fit its scratch; the generic kernel
accepts everything, so every valid
pair has a plan. Blockings that do not nest (48c against 32c) are planned as two steps through
the plain layout.
"""
from .conversion import ConversionKernel
from .desc import Desc
from .move_kernels import BlockKernel, CopyKernel, GenericKernel, TransposeKernel
from .normalise import Incompatible, normalise, widen

TRANSPOSE = TransposeKernel()
KERNELS = (ConversionKernel(), CopyKernel(), BlockKernel(), TRANSPOSE, GenericKernel())


class Step:
    """One pass over memory: the normalised problem, the kernel chosen and its runner."""
    __slots__ = ("problem", "kernel", "runner")

    def __init__(self, problem, kernel, runner):
        self.problem, self.kernel, self.runner = problem, kernel, runner


def choose(prob, stream_min_bytes):
    """The Step that runs `prob`."""
    wide = widen(prob)
    if wide is not None and TRANSPOSE.is_usable_for(wide):
        prob = wide
    for k in KERNELS:
        if k.is_usable_for(prob):
            return Step(prob, k, k.prepare(prob, stream_min_bytes))
    raise AssertionError("the generic kernel accepts every problem")  # pragma: no cover


def plan_steps(src, dst, attrs, stream_min_bytes):
    """(steps, via): one Step, or two through `via` (the plain layout) when the blockings do
    not nest; a conversion happens in the second."""
    try:
        return (choose(normalise(src, dst, attrs), stream_min_bytes),), None
    except Incompatible:
        via = Desc(src.dims, src.dtype)
        return (choose(normalise(src, via), stream_min_bytes),
                choose(normalise(via, dst, attrs), stream_min_bytes)), via
