# The CPU features of common/cpu_features.h, declared once for every extension that cimports them. Each
# module has its own copy of `reorder_cpu` (a static in the header), so each must call
# reorder_cpu_detect() when it is imported, before any of its kernels can run.
cdef extern from "common/cpu_features.h" nogil:
    ctypedef struct reorder_cpu_t:
        int avx2, avx512, avx512_bw, avx512_conv, avx512_bf16, avx512_int8w, avx2_f16c
    reorder_cpu_t reorder_cpu
    void reorder_cpu_detect()


cdef inline dict cpu_feature_flags():
    """The CPU features the SIMD paths use, as this module detected them (common/cpu_features.h)."""
    return {"avx2": bool(reorder_cpu.avx2), "avx512f": bool(reorder_cpu.avx512),
            "avx512 f+bw": bool(reorder_cpu.avx512_bw),
            "avx512 f+bw+vl+dq": bool(reorder_cpu.avx512_conv),
            "avx512 bf16": bool(reorder_cpu.avx512_bf16),
            "avx512 vbmi+vnni": bool(reorder_cpu.avx512_int8w)}
