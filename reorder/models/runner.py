"""Converting files: tensors in parallel threads under a memory budget, many files locally or
over a Dask cluster."""
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from .._version import __version__
from . import progress as prog
from .buffers import BufferPool
from .cluster import run_on_cluster
from .errors import ConvertError, LayerError
from .presets import make_target
from .query import answers
from .readers import read
from .rules import load_rules
from .tasks import build
from .writer import Writer, check_destination

FORMAT = "reorder-convert/1"
# tensors above this run with every core; smaller ones run one thread each, side by side
_BIG = 32 << 20


@dataclass
class Result:
    name: str
    src: str
    dst: str
    target: str
    tensors: int
    bytes_in: int
    bytes_out: int
    seconds: float
    peak_budget: int            # the memory budget tensors were admitted under
    largest: int                # the largest input tensor, bytes
    layers: list = None         # per weight oneDNN was asked about: explain lines' fields

    def explain(self):
        """One line per layer: the weight, its layer, the implementation, the layout and
        where the layout came from (query or table)."""
        lines = []
        for e in self.layers or ():
            impl = e.get("implementation") or "-"
            lines.append(f"{e['name']}: {e['layer']} -> {impl} {e['tag']} ({e['decision']})")
        return lines

    @property
    def gbps(self):
        return (self.bytes_in + self.bytes_out) / self.seconds / 1e9 if self.seconds else 0.0


def _cpus():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:                      # pragma: no cover - not Linux
        return os.cpu_count() or 1


def plan_file(src, target, rules=None):
    """(tasks, format) for one input file, from its index alone (no tensor data is read)."""
    fmt, tensors, roles = read(src)
    rules = load_rules(rules)
    asked = answers(src, fmt, tensors, target)
    tasks, layer_error = [], None
    for t in tensors:
        # a fold's result named by the graph tensor is still found by its initializer's name
        rule = rules.find(t.name)
        for alias in t.aliases:
            rule = rule or rules.find(alias)
        try:
            task = build(t, roles.get(t.name), rule, target, src, asked.get(t.name))
        except LayerError as exc:
            layer_error = layer_error or exc      # the file's own errors first
            continue
        tasks.append(task)
    if layer_error is not None:
        raise layer_error
    return tasks, fmt


def convert_file(src, dst, target="onednn-f32", *, rules=None, isa=None, activations=None,
                 dtype=None, force=False, workers=None, memory=None, progress=None,
                 position=0, src_layout=None, onednn_lib=None, input_shapes=None):
    """Convert one file; returns a Result."""
    src, dst = os.fspath(src), os.fspath(dst)
    t = target if not isinstance(target, str) else make_target(
        target, isa, activations, dtype, src_layout, onednn_lib, input_shapes)
    if not os.path.isfile(src):
        raise ConvertError(f"{src}: no such file")
    check_destination(dst, force, [src])
    start = time.perf_counter()
    tasks, fmt = plan_file(src, t, rules)
    outputs = [o for task in tasks for o in task.outputs]
    layers = [dict(name=o.name, tag=o.meta.get("tag"), **o.meta["onednn"]) for o in outputs
              if o.meta.get("onednn") and o.meta.get("part") in ("weights", "image")]
    asked = [e for e in layers if e["decision"] == "query"]
    isa = asked[0]["isa"] if asked else (t.isa if t.family == "onednn-int8" else None)
    meta = {"format": FORMAT, "preset": t.name, "isa": isa,
            "activations": t.src_dtype if t.family in ("onednn-int8", "onednn-f32") and asked
            else (t.activations if t.family == "onednn-int8" else None),
            "src_layout": t.src_layout if asked else None,
            "onednn_version": asked[0]["version"] if asked else None,
            "source_file": os.path.basename(src), "source_format": fmt,
            "reorder_version": __version__, "tensors": {o.name: o.meta for o in outputs}}
    largest = max((task.source.nbytes for task in tasks), default=0)
    budget = max([memory or 0] + [task.cost for task in tasks])
    bytes_in = sum(task.source.nbytes for task in tasks)
    bar = prog.Bar(bytes_in, os.path.basename(src), prog.wanted(progress), position)
    try:
        with Writer(dst, outputs, meta, force=force) as w:
            _run(tasks, w, budget, workers or _cpus(), bar)
            size = w.size
    finally:
        bar.close()
    return Result(os.path.basename(src), src, dst, t.name, len(tasks), bytes_in, size,
                  time.perf_counter() - start, budget, largest, layers)


def _run(tasks, writer, budget, workers, bar):
    """Run tasks on `workers` threads; a task starts only when the costs of the tasks running
    fit in `budget` (or nothing else runs), so memory stays bounded."""
    ncpu = _cpus()
    buffers = BufferPool()
    cond = threading.Condition()
    state = {"inflight": 0, "error": None}

    def one(task):
        held = []
        try:
            a = task.source.load()
            held = [buffers.take(o.nbytes) for o in task.outputs]
            arrays = [h.array(o.dtype, o.shape) for h, o in zip(held, task.outputs)]
            task.fill(a, arrays, ncpu if task.cost > _BIG else 1)
            del a                               # unmap the input now
            for o, arr in zip(task.outputs, arrays):
                writer.write(o, arr)
            del arrays
            bar.update(task.source.nbytes)
        except BaseException as exc:            # noqa: BLE001 - handed to the main thread
            with cond:
                state["error"] = state["error"] or exc
        finally:
            for h in held:
                buffers.give(h)
            with cond:
                state["inflight"] -= task.cost
                cond.notify_all()

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for task in tasks:
            with cond:
                while (state["inflight"] and state["inflight"] + task.cost > budget
                       and state["error"] is None):
                    cond.wait()
                if state["error"] is not None:
                    break
                state["inflight"] += task.cost
            pool.submit(one, task)
    buffers.close()
    if state["error"] is not None:
        raise state["error"]


def output_path(src, out_dir):
    base = os.path.splitext(os.path.basename(os.fspath(src)))[0]
    return os.path.join(os.fspath(out_dir), base + ".safetensors")


def make_out_dir(out_dir):
    """Create the output directory and its missing parents, as `mkdir -p` does (the inputs
    are checked first, so a bad call leaves no new directory behind)."""
    try:
        os.makedirs(out_dir, exist_ok=True)
    except (FileExistsError, NotADirectoryError):     # a file on the way
        part = os.path.abspath(out_dir)
        while not os.path.exists(part) and os.path.dirname(part) != part:
            part = os.path.dirname(part)
        raise ConvertError(f"{out_dir}: cannot create the output directory: {part} is a "
                           f"file") from None
    except OSError as exc:
        raise ConvertError(f"{out_dir}: cannot create the output directory: "
                           f"{exc.strerror or exc}") from None


def convert_many(srcs, out_dir, target="onednn-f32", *, client=None, progress=None, **kw):
    """Convert every file of `srcs` into out_dir/<name>.safetensors; with a
    dask.distributed.Client, one file per Dask task. Returns the Results in input order."""
    srcs = [os.fspath(s) for s in srcs]
    out_dir = os.fspath(out_dir)
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise ConvertError(f"{out_dir}: the output directory is a file")
    dsts = [output_path(s, out_dir) for s in srcs]
    seen = {}
    for s, d in zip(srcs, dsts):
        if d in seen:
            raise ConvertError(f"{s} and {seen[d]} would both be written to {d}")
        seen[d] = s
    t = make_target(target, kw.pop("isa", None), kw.pop("activations", None), kw.pop("dtype", None),
                    kw.pop("src_layout", None), kw.pop("onednn_lib", None),
                    kw.pop("input_shapes", None))
    for s in srcs:                          # refuse before any work is done
        if not os.path.isfile(s):
            raise ConvertError(f"{s}: no such file")
    make_out_dir(out_dir)
    for s, d in zip(srcs, dsts):
        check_destination(d, kw.get("force", False), [s])
    if client is not None:
        return run_on_cluster(client, _convert_on_worker, srcs, dsts, t, progress, kw)
    show = prog.wanted(progress)
    files = prog.Bar(len(srcs), "files", show and len(srcs) > 1, position=0, unit="file")
    results = []
    try:
        for s, d in zip(srcs, dsts):
            results.append(convert_file(s, d, t, progress=show, position=1 if len(srcs) > 1 else 0,
                                        **kw))
            files.update(1)
    finally:
        files.close()
    return results


def _convert_on_worker(src, dst, target, kw):
    """One file on a Dask worker: no progress bars there."""
    return convert_file(src, dst, target, progress=False, **kw)


def convert_on_cluster(client, src, dst, target, progress, kw):
    """One file converted on a worker of `client`."""
    t = make_target(target, kw.pop("isa"), kw.pop("activations"), kw.pop("dtype"),
                    kw.pop("src_layout"), kw.pop("onednn_lib"), kw.pop("input_shapes"))
    check_destination(dst, kw.get("force", False), [src])
    return run_on_cluster(client, _convert_on_worker, [os.fspath(src)], [os.path.abspath(dst)], t,
                          progress, kw)[0]
