/* The AVX2 (+F16C) conversion tiles and rows, 8 elements wide, for CPUs
 * without AVX-512. The macros are in _convert_simd_x86.h. */
#include "_convert_simd_x86.h"
#if RQ_X86
RQ2_FOR(f32, 4)
RQ2_FOR(f64, 8)
RQ2_FOR(f16, 2)
RQ2_FOR(bf16, 2)
RQ2_FOR(s8, 1)
RQ2_FOR(u8, 1)
RQ2_FOR(s32, 4)
#endif
