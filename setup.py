"""Build the Cython kernels, with OpenMP when the compiler can compile *and link* it.

REORDER_OPENMP=auto (default) probes and falls back to serial kernels; 0 forces serial;
1 fails loudly if OpenMP is unavailable. REORDER_DEBUG=1 builds with bounds checks on.
REORDER_SANITIZE=1 (gcc/clang) adds AddressSanitizer and UBSan, stopping at the first error;
load the result with LD_PRELOAD of the compiler's libasan (.ci/checked-build shows how).
REORDER_BUILD_JOBS=N runs N compilers at once (default: the CPUs this process may use): the
source files of one module, and the modules, compile side by side.
"""
import os
import sys
import tempfile
import textwrap
from concurrent.futures import ThreadPoolExecutor

from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

PROBE = textwrap.dedent("""
    #include <omp.h>
    int main(void) {
        int n = 0;
        #pragma omp parallel reduction(+:n)
        n += 1;
        return n == omp_get_max_threads() ? 0 : 1;
    }
""")

EMPTY_PROGRAM = "int main(void) { return 0; }\n"

# Any out-of-bounds access or undefined behaviour aborts the process instead of printing on.
# -O1 (after -O3, so it wins): gcc takes many minutes on the instrumented kernels at -O3.
# -g1: line tables for the reports' stack traces, without the full debug information.
# Every UBSan check but two whose faults AddressSanitizer traps on the same accesses, to the
# byte: pointer-overflow (a pointer sum that wraps the address space) and object-size (an
# access past an object whose size the compiler can see). They took an eighth and then a
# third of the instrumented build (docs/testing.md#the-checked-build).
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize=pointer-overflow,object-size",
            "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g1", "-O1"]


def build_jobs():
    """How many compilers run at once: REORDER_BUILD_JOBS, else the CPUs this process may use."""
    env = os.environ.get("REORDER_BUILD_JOBS", "").strip()
    if env:
        if not env.isdigit() or int(env) < 1:
            raise RuntimeError(f"REORDER_BUILD_JOBS must be a whole number >= 1, got {env!r}")
        return int(env)
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:              # not Linux
        return os.cpu_count() or 1


def compile_side_by_side(compile, pool):
    """`compile` (a CCompiler's) with each source of a call a task of `pool`, at most its workers
    at once across every call: distutils compiles one module's sources in turn, and the
    conversion kernels are eight files."""
    def compile_all(sources, **kwargs):
        tasks = [pool.submit(compile, [source], **kwargs) for source in sources]
        return [obj for task in tasks for obj in task.result()]
    return compile_all


def openmp_flags(compiler_type):
    if compiler_type == "msvc":
        return ["/openmp"], []
    if sys.platform == "darwin":            # Apple clang with Homebrew's libomp
        return ["-Xpreprocessor", "-fopenmp"], ["-lomp"]
    return ["-fopenmp"], ["-fopenmp"]


class BuildExt(build_ext):
    def build_extensions(self):
        mode = os.environ.get("REORDER_OPENMP", "auto").strip().lower()
        if mode not in ("auto", "0", "1"):
            raise RuntimeError(f"REORDER_OPENMP must be auto, 0 or 1, got {mode!r}")
        cflags, ldflags = openmp_flags(self.compiler.compiler_type)
        enabled = mode != "0" and self._probe(cflags, ldflags)
        if mode == "1" and not enabled:
            raise RuntimeError("REORDER_OPENMP=1 but this compiler cannot compile and link OpenMP code")
        print(f"reorder: OpenMP {'on' if enabled else 'OFF (serial kernels)'}")
        sanitize = os.environ.get("REORDER_SANITIZE", "0").strip() == "1"
        if sanitize and self.compiler.compiler_type == "msvc":
            raise RuntimeError("REORDER_SANITIZE=1 needs gcc or clang")
        # Every loop of the move kernels starts on a 64-byte line of code: where a hot loop
        # fell across one, a case read up to a third slower in one build than in another of
        # the same source (docs/kernels/copy.md#choices-in-the-code).
        align = ["-falign-loops=64"]
        if self.compiler.compiler_type == "msvc" or not self._probe(align, [], EMPTY_PROGRAM):
            align = []
        for ext in self.extensions:
            if enabled:
                ext.extra_compile_args += cflags
                ext.extra_link_args += ldflags
            if ext.name == "reorder._kernels":
                ext.extra_compile_args += align
            if sanitize:
                ext.extra_compile_args += SANITIZE
                ext.extra_link_args += SANITIZE
            # Recorded in the module so show_config() can print what the kernels were built with.
            flags = " ".join(ext.extra_compile_args + (["REORDER_DEBUG=1"] if debug else []))
            flags = flags.replace('"', "")
            ext.define_macros.append(("REORDER_BUILD_FLAGS", f'"{flags}"'))
        jobs = build_jobs()
        if jobs == 1:
            super().build_extensions()
            return
        with ThreadPoolExecutor(jobs) as pool:
            self.compiler.compile = compile_side_by_side(self.compiler.compile, pool)
            if not self.parallel:
                self.parallel = jobs        # the modules side by side too, in the same pool
            super().build_extensions()

    def _probe(self, cflags, ldflags, source=PROBE):
        """Whether `source` (by default the OpenMP probe) compiles and links with these flags."""
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "probe.c")
            with open(src, "w") as f:
                f.write(source)
            try:
                objs = self.compiler.compile([src], output_dir=tmp, extra_postargs=cflags)
                self.compiler.link_executable(objs, "probe", output_dir=tmp, extra_postargs=ldflags)
            except Exception:       # any compile or link failure (an unknown flag is one)
                return False
        return True


debug = os.environ.get("REORDER_DEBUG") == "1"
directives = dict(language_level=3, boundscheck=debug, wraparound=debug, initializedcheck=debug,
                  cdivision=not debug, embedsignature=True)
# -O3 lets gcc vectorise the fixed-size block loops; never -march=native (wheels run anywhere)
# and never -ffast-math (reorders and rounding must be bit-exact). -g0 overrides the -g of
# Python's own CFLAGS: debug information for the kernels' macro-written code took most of
# their compile time (one kernel file: 96 s without, over 5 minutes with) and made the
# conversion module 73 MB instead of 8.
opt = ["/O2"] if os.name == "nt" else ["-O3", "-g0"]
# The kernels are written as macros over the element types: a trait or helper that one of
# them names and no header defines would compile as a call to an undeclared function, a
# warning, and fail only when the module is imported. An error instead.
if os.name != "nt":
    opt.append("-Werror=implicit-function-declaration")
# The C and Cython sources live in reorder/csrc/ by family: common/ (CPU features, OpenMP,
# register transposes, the walker nodes), move/, convert/ and lowbit/. Headers include each
# other by their path below csrc/ ("common/cpu.h"), so csrc/ is the one include directory;
# the .pxd files of common/ are cimported by their bare names.
CSRC = "reorder/csrc"
CIMPORTS = [f"{CSRC}/common"]


def family(name, *files):
    return [f"{CSRC}/{name}/{f}" for f in files]


common = family("common", "cpu_features.h", "transpose_avx2.h", "transpose_avx512.h", "omp.pxd",
                "nodes.pxd", "cpu_features.pxd")
# Each module's sources and the headers it includes (depends: an edit to one rebuilds it). The
# module names stay reorder._kernels, _convert and _lowbit: the Python side imports them.
extensions = [
    # Conversions must round exactly as written: no a*b+c contraction into FMA.
    # The SIMD kernels compile in files of their own (convert/entry_points.h lists them), so that
    # the build runs them side by side; this module first, as its compile is the longest.
    Extension("reorder._convert",
              family("convert", "convert.pyx", "simd_tiles_narrow.c", "simd_tiles_wide.c",
                     "simd_tiles_bf16hw.c", "simd_avx2.c", "simd_rows.c", "simd_grids.c",
                     "simd_weights.c"),
              depends=common + family("convert", "kernel_args.h", "simd_dispatch.h", "x86.h",
                                      "entry_points.h", "avx512_loads_stores.h", "avx512_tiles.h",
                                      "avx2.h", "avx512_rows.h", "avx512_grids.h",
                                      "avx512_weights.h"),
              include_dirs=[CSRC],
              extra_compile_args=list(opt) + ([] if os.name == "nt" else ["-ffp-contract=off"])),
    Extension("reorder._kernels", family("move", "kernels.pyx"), extra_compile_args=list(opt),
              depends=common + family("move", "simd_dispatch.h", "tiles_narrow_avx2.h",
                                      "tiles_narrow_avx512.h", "tiles_few_rows.h", "blocks.h",
                                      "interleave.h"),
              include_dirs=[CSRC]),
    Extension("reorder._lowbit", family("lowbit", "lowbit.pyx"),
              depends=common + family("lowbit", "lowbit.h"), include_dirs=[CSRC],
              extra_compile_args=list(opt) + ([] if os.name == "nt" else ["-ffp-contract=off"])),
]
# Cython's memoryview and buffer support is one module the three import, instead of a copy
# compiled into each: 0.23 MB of code and 2.4 s of compile less. Cython names the module's
# init function after the C file, so the file carries the module's name.
CYUTILITY = "reorder._cyutility"
extensions.append(Extension(CYUTILITY, [f"{CSRC}/common/_cyutility.c"], extra_compile_args=list(opt)))


def cython_jobs():
    """Cython translates the .pyx files in a process each, on as many CPUs as the compilers
    get, where new processes are forked: spawned or forkserver ones would start by importing
    the process's main module, which may be this file."""
    import multiprocessing
    return build_jobs() if multiprocessing.get_start_method() == "fork" else 0


setup(ext_modules=cythonize(extensions, compiler_directives=directives, include_path=CIMPORTS,
                            shared_utility_qualified_name=CYUTILITY, nthreads=cython_jobs()),
      cmdclass={"build_ext": BuildExt})
