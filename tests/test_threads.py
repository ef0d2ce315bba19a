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
    from reorder.threads import usable_cpus
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
