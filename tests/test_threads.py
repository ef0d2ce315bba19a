"""Thread-count precedence: threads= > set_num_threads / threads() > REORDER_NUM_THREADS >
OpenMP default; and the OpenMP build is reported."""
import os
import subprocess
import sys

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
