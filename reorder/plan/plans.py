"""`Plan`: an immutable recipe for moving data from one descriptor to another, built once
(the kernel chosen, its runner prepared) and applied to arrays many times."""
import numpy as np

from ..kernels.convert import arith_for, widened_columns_cached
from ..kernels.threads import resolve
from .._kernels import data_address
from .binding import OutRegion, aligned_empty, bind_source, check_dst, check_out, is_whole
from ..core.desc import _bytes, _fmt
from ..core.errors import ReorderError
from .planner import plan_steps
from ..kernels.base import PARALLEL_MIN_BYTES, STREAM_MIN_BYTES, stream_threads
from ..core.tags import ABC

__all__ = ["Plan"]


class Plan:
    """An immutable, cached recipe for moving data from `src` to `dst`.

    plan(x, out=None)   run it on array x (laid out as `src`); returns out or a new array
    plan.empty()        a 64-byte-aligned output array of dst's physical shape
    plan.explain()      which kernel, why, the nodes, threads and bytes moved
    plan.kernel         the kernel name ('transpose', 'convert', 'generic+convert', ...)

    `stream_min_bytes`: a step that reads and writes at least this many bytes (source plus
    destination) writes with streaming (non-temporal) stores where the kernel has them.
    """

    def __init__(self, src, dst, threads=None, attrs=None, stream_min_bytes=STREAM_MIN_BYTES, *,
                 steps=None):
        check_dst(dst)
        # a sub-memory or a strided destination is written into the caller's out= only
        self._whole = is_whole(dst)
        self._region = None if self._whole else OutRegion(dst)
        self.src, self.dst, self.threads, self.attrs = src, dst, threads, attrs
        self.stream_min_bytes = stream_min_bytes
        # `sum` adds beta * the old destination, which the caller must pass as out=
        self._reads_dst = attrs is not None and attrs.sum_beta is not None
        # `steps`: the planner's (steps, via) for this pair, from the plan cache's table
        self.steps, self.via = steps if steps is not None else plan_steps(
            src, dst, None if attrs is None else attrs.structure(), stream_min_bytes)
        # this plan's scales, zero points and beta, as the conversion runner takes them
        self._values = None if attrs is None else arith_for(attrs)
        # everything a call needs, computed once; an offset descriptor never takes the fast
        # path (its element 0 is not an array's first element)
        self._in_shape = src.physical_shape if src.offset0 == 0 else None
        self._in_strides = tuple(s * src.dtype.itemsize for s in src.physical_strides)
        self._in_dtypes = src.dtype.numpy_dtypes
        self._out_shape = dst.physical_shape
        self._storage = dst.dtype.storage
        self._out_dtypes = dst.dtype.numpy_dtypes
        self._runners = tuple(st.runner for st in self.steps)
        # the step that converts takes the call's values and compensation
        self._converts = next((i for i, st in enumerate(self.steps) if st.problem.attrs is not None), 0)
        # per step, the most threads a call may run on and still stream (runner.nt says
        # whether it streams on one)
        self._stream_upto = tuple(st.kernel.stream_threads(st.problem, st.runner, stream_min_bytes)
                                  for st in self.steps)
        # one step: __call__ runs it directly (with the plan's own conversion values) once
        # the arrays pass the bind checks inline (a small tensor's call is mostly this
        # overhead). The source's bytes from its data pointer (lo, hi) and the output's size
        # give the overlap test.
        self._direct = (self._runners[0].run, self._stream_upto[0], self._values) \
            if self.via is None and not self._reads_dst and self._whole else None
        shape, size = self._in_shape or (), src.dtype.itemsize
        self._in_span = (0, 0) if 0 in shape else (
            sum(min(0, (n - 1) * st) for n, st in zip(shape, self._in_strides)),
            sum(max(0, (n - 1) * st) for n, st in zip(shape, self._in_strides)) + size)
        self._out_nbytes = int(np.prod(self._out_shape)) * dst.dtype.itemsize
        # a flat contiguous buffer holds the source from its first element (bind_source):
        # the direct path takes one of at least the source's span, as it takes the array
        lo, hi = self._in_span
        self._flat_nbytes = hi if self._in_shape is not None and hi > 0 and lo == 0 else None
        self._flat_strides = (size,)
        self.moved_bytes = sum(st.problem.moved_bytes for st in self.steps)
        # the most threads this much work keeps busy: each needs PARALLEL_MIN_BYTES of it
        self.max_threads = max(1, self.moved_bytes // PARALLEL_MIN_BYTES)

    def __setattr__(self, name, value):
        if name in self.__dict__:
            raise AttributeError("Plan is immutable")
        object.__setattr__(self, name, value)

    @property
    def kernel(self):
        return "+".join(st.kernel.name for st in self.steps)

    @property
    def runners(self):
        """The prepared runners, one per step (their type names the runner; `nt` says whether
        it streams its stores)."""
        return self._runners

    def nthreads(self, threads=None):
        """Threads a call would use: the count asked for (threads=, the plan's, or the
        library's policy), at most `max_threads`, which the plan set from its work size
        (1 for small tensors: no thread team is started). An explicit count is validated
        even then."""
        if threads is None:
            threads = self.threads
            if self.max_threads == 1 and threads is None:
                return 1
        n = resolve(threads)
        return n if n <= self.max_threads else self.max_threads

    def streams(self, threads=None):
        """Per step, whether a call on `threads` (as for nthreads) writes with streaming
        stores: where the runner streams (`nt`) and the step moves enough for that many
        threads (problem.stream_threads)."""
        n = self.nthreads(threads)
        return tuple(bool(r.nt) and n <= upto for r, upto in zip(self._runners, self._stream_upto))

    def empty(self):
        """A zero-copy-friendly output: C-contiguous, dst's physical shape, 64-byte aligned."""
        if not self._whole:
            raise ReorderError(f"{self.dst!r} is a region of a larger array (offset0="
                               f"{self.dst.offset0}, strides {self.dst.physical_strides}); "
                               f"pass that array as out=")
        return aligned_empty(self._out_shape, self._storage)

    def __call__(self, x, out=None, threads=None):
        direct = self._direct
        if direct is not None and type(x) is np.ndarray and type(out) is np.ndarray \
                and (x.shape == self._in_shape and x.strides == self._in_strides
                     or x.ndim == 1 and x.strides == self._flat_strides
                     and self._flat_nbytes is not None and x.nbytes >= self._flat_nbytes) \
                and out.shape == self._out_shape and x.dtype in self._in_dtypes \
                and out.dtype in self._out_dtypes and out.flags.carray:
            # bind's fast checks and execute's single step, inline; anything else (an
            # unaligned or overlapping out, a view to rebind) takes the full path below
            a, b = data_address(x), data_address(out)
            lo, hi = self._in_span
            if x.ndim == 1 and x.nbytes > hi:
                hi = x.nbytes       # a flat buffer's unread tail is the caller's input too
            if b + self._out_nbytes <= a + lo or a + hi <= b:
                n = self.nthreads(threads)
                run, upto, values = direct
                if values is None:
                    run(a, b, n, stream=n <= upto)
                else:
                    run(a, b, n, 0, values, n <= upto)
                return out
        x, bound = self.bind(x, out)
        self.execute(x, bound, self.nthreads(threads))
        return bound if out is None else out

    def bind(self, x, out=None):
        """`x` as a view whose data pointer is src's element 0, and a checked output (a new
        one for None) whose data pointer is dst's element 0 (a view of out= for a sub-memory
        or strided dst, which the caller hands back as it was given); raises with the reason
        when either does not fit. The fast tests come first: a repeated call passes them
        without building anything."""
        if not (type(x) is np.ndarray and x.shape == self._in_shape and x.dtype in self._in_dtypes
                and (x.strides == self._in_strides or x.size <= 1)):
            x = bind_source(x, self.src)
        if out is None:
            if self._reads_dst:
                raise ReorderError(f"this plan adds {self.attrs.sum_beta} * the old destination "
                                   f"(sum); pass that destination as out=")
            out = self.empty()
        elif not self._whole:
            out = self._region.bind(out, x)
        elif not (type(out) is np.ndarray and out.shape == self._out_shape and out.dtype in self._out_dtypes
                  and out.flags.c_contiguous and out.flags.writeable
                  and not np.may_share_memory(x, out)):
            check_out(out, self.dst, x)     # raises with the reason (or finds no real overlap)
        return x, out

    def execute(self, x, out, nthreads, acc=0, values=None):
        """Run the steps on a source bound to self.src and a checked output; `acc`: address
        of the int32 compensation sums the conversion step adds to (0: none); `values`: the
        call's conversion values (conversion.call_values; the plan's own when None)."""
        src, dst = data_address(x), data_address(out)
        if self._values is not None:
            last = (nthreads, acc, self._values if values is None else values)
        else:
            last = (nthreads, acc) if acc else (nthreads,)
        stream = self._stream_upto
        if self.via is None:
            self._runners[0].run(src, dst, *last, stream=nthreads <= stream[0])
        else:
            tmp = aligned_empty(self.via.physical_shape, self.via.dtype.storage)
            mid = data_address(tmp)
            first, second = ((nthreads,), last) if self._converts else (last, (nthreads,))
            self._runners[0].run(src, mid, *first, stream=nthreads <= stream[0])
            self._runners[1].run(mid, dst, *second, stream=nthreads <= stream[1])

    def __repr__(self):
        return (f"Plan({self.src.name} -> {self.dst.name}, {_fmt(self.src.dims)} {self.src.dtype.name}, "
                f"kernel={self.kernel}, threads={self.nthreads()}, "
                f"{_bytes(self.src.nbytes)} -> {_bytes(self.dst.nbytes)})")

    def explain(self):
        lines = [repr(self), f"  src: {self.src!r}", f"  dst: {self.dst!r}"]
        if self.via is not None and self.via.tag == self.dst.tag and self.via.dtype != self.dst.dtype:
            lines.append(f"  the conversion across layouts runs as a move and a conversion on an "
                         f"unchanged layout: the data moves into {self.via!r} first and "
                         f"converts there")
        elif self.via is not None and self.via.tag == self.src.tag and self.via.dtype == self.dst.dtype:
            lines.append(f"  the conversion across layouts runs as a conversion on an unchanged "
                         f"layout and a move: it narrows into {self.via!r} first, and the move "
                         f"carries the narrower type")
        elif self.via is not None:
            lines.append(f"  the blockings do not nest, so the data goes through {self.via!r}")
        for st, upto in zip(self.steps, self._stream_upto):
            prob, kernel = st.problem, st.kernel
            lines.append(f"  kernel {kernel.name}: {kernel.why}")
            if prob.attrs is not None:
                lines.append(f"  conversion: {self.attrs.describe(prob.src, prob.dst)}")
            lines += [f"  {line}" for line in kernel.explain(prob, st.runner, self.stream_min_bytes)]
            if st.runner.nt:
                moved, smb = _bytes(prob.moved_bytes), _bytes(self.stream_min_bytes)
                by_bytes = stream_threads(prob.moved_bytes, self.stream_min_bytes, prob.dst_bytes)
                if upto > 1 and by_bytes == 1:
                    lines.append(f"  streaming stores ({moved} read and written, >= {smb}; on "
                                 f"every thread count: tiles of {prob.itemsize}-byte elements "
                                 f"into far planes)")
                elif upto > 1:
                    lines.append(f"  streaming stores ({moved} read and written, "
                                 f"{_bytes(prob.dst_bytes)} of it written; >= {smb})")
                elif widened_columns_cached(prob, st.runner):
                    lines.append(f"  streaming stores on 1 thread ({moved} read and written, "
                                 f">= {smb}); cached on more (f32 columns widened in a tile)")
                else:
                    lines.append(f"  streaming stores on 1 thread ({moved} read and written, "
                                 f">= {smb}); cached on more (< 2 x {smb}, and "
                                 f"{_bytes(prob.dst_bytes)} written < {smb})")
            lines.append("  nodes, outermost first (extent, src stride, dst stride [, dim/weight]):")
            for nd in prob.nodes:
                tail = f", {ABC[nd.dim]}/{nd.weight}" if nd.dim >= 0 else ""
                lines.append(f"    {nd.extent:>8} {nd.ss:>10} {nd.ds:>10}{tail}")
            for d, n, pad in prob.checked:
                lines.append(f"  dim {ABC[d]}: {n} valid, zeros up to {pad}")
        lines.append(f"  threads: {self.nthreads()} (at most {self.max_threads}: one per "
                     f"{_bytes(PARALLEL_MIN_BYTES)} moved); bytes moved: {_bytes(self.moved_bytes)}")
        return "\n".join(lines)
