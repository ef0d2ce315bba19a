"""Thread-count precedence: threads= > set_num_threads / threads() > REORDER_NUM_THREADS >
OpenMP default; and the OpenMP build is reported."""
import os
import subprocess
import sys

import numpy as np
import pytest

import reorder as ro
from reorder import _kernels

needs_openmp = pytest.mark.skipif(not _kernels.OPENMP, reason="serial build: always 1 thread")


@pytest.fixture(autouse=True)
def _reset(monkeypatch):
    monkeypatch.delenv("REORDER_NUM_THREADS", raising=False)
    ro.set_num_threads(None)
    yield
    ro.set_num_threads(None)


@needs_openmp
def test_precedence(monkeypatch):
    monkeypatch.setenv("REORDER_NUM_THREADS", "3")
    assert ro.get_num_threads() == 3
    ro.set_num_threads(5)
    assert ro.get_num_threads() == 5
    with ro.threads(7):
        assert ro.get_num_threads() == 7
        p = ro.plan(ro.Desc((64, 64, 64), "f32", "abc"), ro.Desc((64, 64, 64), "f32", "cba"))
        assert p.nthreads() == 7
        assert p.nthreads(threads=2) == 2
    assert ro.get_num_threads() == 5


@needs_openmp
def test_environment_is_read_at_each_call(monkeypatch):
    """os.environ writes reach the C environment the count is read from, both ways."""
    default = ro.get_num_threads()
    monkeypatch.setenv("REORDER_NUM_THREADS", str(default + 2))
    assert ro.get_num_threads() == default + 2
    os.environ["REORDER_NUM_THREADS"] = " 4 "
    assert ro.get_num_threads() == 4
    monkeypatch.delenv("REORDER_NUM_THREADS")
    assert ro.get_num_threads() == default


@pytest.mark.parametrize("bad", [0, 2.5])
def test_small_plans_still_check_an_explicit_count(bad):
    p = ro.plan(ro.Desc((2, 3), "f32", "ab"), ro.Desc((2, 3), "f32", "ba"))
    assert p.nthreads() == 1
    with pytest.raises((ValueError, TypeError), match="threads="):
        p.nthreads(threads=bad)
    with pytest.raises((ValueError, TypeError), match="threads="):
        p(np.zeros((2, 3), np.float32), threads=bad)


@needs_openmp
def test_default_is_capped_at_usable_cpus():
    from reorder.kernels.threads import usable_cpus
    assert 1 <= ro.get_num_threads() <= usable_cpus()


@pytest.mark.parametrize("bad", [0, -1])
def test_bad_counts_are_value_errors(bad):
    with pytest.raises(ValueError):
        ro.set_num_threads(bad)
    with pytest.raises(ValueError):
        with ro.threads(bad):
            pass


def test_non_int_count_is_type_error():
    with pytest.raises(TypeError):
        ro.set_num_threads(1.5)


@needs_openmp
def test_bad_environment_variable(monkeypatch):
    monkeypatch.setenv("REORDER_NUM_THREADS", "many")
    with pytest.raises(ValueError, match="REORDER_NUM_THREADS"):
        ro.get_num_threads()


def test_build_reports_openmp():
    """CI builds with OpenMP; REORDER_SKIP_OPENMP_TEST=1 allows a deliberate serial build."""
    if os.environ.get("REORDER_SKIP_OPENMP_TEST") == "1":
        pytest.skip("serial build requested")
    assert _kernels.OPENMP, "the kernels were built without OpenMP"


@needs_openmp
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_defaults_to_one_thread():
    code = (
        "import os, numpy as np, reorder as ro\n"
        "x = np.ones((8, 64, 64, 64), np.float32)\n"
        "ro.reorder(x, 'nchw', 'nChw16c', threads=2)\n"      # parent starts a thread team
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    ok = ro.get_num_threads() == 1\n"
        "    ro.reorder(x, 'nchw', 'nChw16c')\n"              # must not deadlock
        "    os._exit(0 if ok else 3)\n"
        "_, status = os.waitpid(pid, 0)\n"
        "raise SystemExit(os.waitstatus_to_exitcode(status))\n")
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0


# A child of fork() must not start an OpenMP team when the runtime cannot (GNU libgomp hangs
# there), whichever source asked for threads. The parent starts a team first, as a training
# script does before its DataLoader forks workers.
_FORK_CHILD = """
import os, signal, sys, warnings
import numpy as np
import reorder as ro
try:
    from reorder.kernels.threads import omp_fork_safe
except ImportError:
    omp_fork_safe = lambda: False
{parent}
x = np.arange(8 * 64 * 56 * 56, dtype=np.float32).reshape(8, 64, 56, 56)
expected = x.reshape(8, 4, 16, 56, 56).transpose(0, 1, 3, 4, 2)
ro.reorder(x, "nchw", "nChw16c", **{kw})
pid = os.fork()
if pid == 0:
    signal.alarm(40)            # a hung child must not outlive the test
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        n = ro.get_num_threads() if not {kw} else None
        ok = True
        for _ in range(2):
            {child}
                y = ro.reorder(x, "nchw", "nChw16c", **{kw})
            ok = ok and np.array_equal(y, expected)
    runtime = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    want = 0 if omp_fork_safe() else 1
    if not ok:
        os._exit(3)
    if n not in (None, 1) and not omp_fork_safe():
        os._exit(4)
    if len(runtime) != want:
        os._exit(5)
    if want and "fork" not in str(runtime[0].message):
        os._exit(6)
    os._exit(0)
_, status = os.waitpid(pid, 0)
code = os.waitstatus_to_exitcode(status)
raise SystemExit(7 if code < 0 else code)      # 7: the child died of a signal (its alarm)
"""


@needs_openmp
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.parametrize("source", ["set_num_threads", "threads=", "threads()", "environment"])
def test_forked_child_runs_one_thread_whatever_asked(source, monkeypatch):
    """Every thread source resolves to 1 in a forked child (unless the OpenMP runtime is known
    to survive fork), with exactly one RuntimeWarning for an explicit count > 1; the child's
    reorders finish and are right. A hang fails by the timeout."""
    parent, kw, child = "", "{}", "if True:"
    env = dict(os.environ)
    env.pop("REORDER_NUM_THREADS", None)
    if source == "set_num_threads":
        parent = "ro.set_num_threads(2)"
    elif source == "threads=":
        kw = "{'threads': 2}"
    elif source == "threads()":
        parent, child = "ro.set_num_threads(1)", "with ro.threads(2):"
        kw = "{}"
    else:
        env["REORDER_NUM_THREADS"] = "2"
    code = _FORK_CHILD.format(parent=parent, kw=kw, child=child)
    if source == "threads()":      # the parent's team comes from the same context manager
        code = code.replace('ro.reorder(x, "nchw", "nChw16c", **{})\npid',
                            'with ro.threads(2):\n    ro.reorder(x, "nchw", "nChw16c")\npid')
    try:
        r = subprocess.run([sys.executable, "-c", code], env=env, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the forked child hung ({source})")
    assert r.returncode == 0, {3: "wrong result", 4: "more than one thread",
                               5: "not exactly one RuntimeWarning",
                               6: "the warning does not say why",
                               7: "the child hung"}.get(r.returncode, r.returncode)


@needs_openmp
def test_thread_count_is_capped_by_the_plans_work_size():
    """A plan keeps at most one thread per PARALLEL_MIN_BYTES moved, whatever is asked."""
    from reorder.kernels.base import PARALLEL_MIN_BYTES
    dims = (1, 16, 64, 64)                     # 256 KiB each side: 2 threads' worth of work
    p = ro.plan(ro.Desc(dims, "f32", "nchw"), ro.Desc(dims, "f32", "nChw16c"))
    assert p.max_threads == p.moved_bytes // PARALLEL_MIN_BYTES == 2
    assert p.nthreads(threads=8) == 2 and p.nthreads(threads=1) == 1
    assert "at most 2" in p.explain()
    x = np.arange(np.prod(dims), dtype=np.float32).reshape(dims)
    assert np.array_equal(p(x, threads=8), p(x, threads=1))
