/* The AVX2 (+F16C) conversion tiles and rows, 8 elements wide, for CPUs
 * without AVX-512, with one body for the s8 and u8 sources of each destination ("b8"). The
 * macros are in convert/avx2.h. */
#include "convert/avx2.h"
#include "convert/entry_points.h"
#if RQ_X86
RQ_AVX2_FOR(f32, 4)
RQ_AVX2_FOR(f64, 8)
RQ_AVX2_FOR(f16, 2)
RQ_AVX2_FOR(bf16, 2)
RQ_AVX2_FOR(b8, 1)
RQ_AVX2_FOR(s32, 4)
#endif
