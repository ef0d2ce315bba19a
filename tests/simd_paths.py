"""Fixtures that run a test once per SIMD path of an extension (those this CPU lacks are
skipped) and once on its portable code, putting the default path back afterwards. Each test
module names the fixture it gets, e.g. `simd = kernel_paths("avx512", "avx2")`."""
import pytest

from reorder import _convert, _kernels, _lowbit

# _convert.set_simd modes: 1 the widest SIMD (AVX-512 with hardware bf16 if present, else
# AVX2), 2 AVX-512 with emulated bf16, 3 AVX2 where AVX-512 also exists, 0 portable
CONVERT_MODES = ([1, 2, 3] if _convert.simd_available() else [1] if _convert.avx2_available()
                 else []) + [0]


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


# Mode 2 differs from mode 1 in one choice only (convert/simd_dispatch.h, rq_isa): a bf16
# destination on a CPU with AVX512-BF16. Elsewhere both run the same functions.
HARDWARE_BF16 = _convert.cpu_features()["avx512 bf16"]


def convert_modes(ids):
    """A fixture over CONVERT_MODES, test ids from `ids` (mode -> id); its value is the mode.
    Mode 2 is skipped where it would run mode 1's code again: on a CPU without AVX512-BF16,
    and in a test whose `ddt` parameter is a destination other than bf16."""
    @pytest.fixture(params=CONVERT_MODES, ids=ids.get)
    def mode(request):
        if request.param == 2:
            ddt = request.node.callspec.params.get("ddt")
            if not HARDWARE_BF16 or ddt not in (None, "bf16"):
                pytest.skip("mode 2 runs mode 1's code here: it differs only for bf16 outputs "
                            "on a CPU with AVX512-BF16")
        _convert.set_simd(request.param)
        yield request.param
        _convert.set_simd(1)
    return mode


def lowbit_rows():
    """A fixture over the low-bit kernels' rows: "avx512" (the integer-code group rows on
    AVX-512, AVX2 + F16C for the rest), "simd" (AVX2 + F16C only) and "scalar"; its value is
    the name."""
    @pytest.fixture(params=["avx512", "simd", "scalar"])
    def rows(request):
        if request.param == "avx512" and not _lowbit.simd512_available():
            pytest.skip("no AVX-512 F/BW/DQ/VL")
        if request.param == "simd" and not _lowbit.simd_available():
            pytest.skip("no AVX2 + F16C")
        _lowbit.set_simd({"avx512": True, "simd": "avx2", "scalar": False}[request.param])
        yield request.param
        _lowbit.set_simd(True)
    return rows
