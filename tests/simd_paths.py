"""Fixtures that run a test once per SIMD path of an extension (those this CPU lacks are
skipped) and once on its portable code, putting the default path back afterwards. Each test
module names the fixture it gets, e.g. `simd = kernel_paths("avx512", "avx2")`."""
import pytest

from reorder import _kernels


def kernel_paths(*paths):
    """A fixture over the move kernels' `paths` ("avx512", "avx2") and False (portable); its
    value is the path."""
    @pytest.fixture(params=[*paths, False], ids=[*paths, "portable"])
    def simd(request):
        if request.param and request.param not in _kernels.simd_paths():
            pytest.skip(f"this CPU has no {request.param}")
        _kernels.set_simd(request.param)
        yield request.param
        _kernels.set_simd(True)
    return simd
