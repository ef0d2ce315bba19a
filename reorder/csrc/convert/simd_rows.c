/* The AVX-512 conversion rows: the strided walk's contiguous runs, every pair of element
 * types, with one body for the s8 and u8 sources of each destination ("b8"). The macros are
 * in convert/avx512_rows.h. */
#include "convert/avx512_rows.h"
#include "convert/entry_points.h"
#if RQ_X86
RQ_EACH_DST(RQ_ROWS_KERNEL, f32, 4) RQ_EACH_DST(RQ_ROWS_KERNEL, f64, 8)
RQ_EACH_DST(RQ_ROWS_KERNEL, f16, 2) RQ_EACH_DST(RQ_ROWS_KERNEL, bf16, 2)
RQ_EACH_DST(RQ_ROWS_KERNEL, s32, 4) RQ_EACH_DST(RQ_ROWS_KERNEL, b8, 1)
/* s8 and u8 sources: the one 1-byte body, told how its bytes widen */
#define RQ_ROWS_B8_ENTRY(SN, SSIZE, DN, DSIZE, TGT, ST)                                         \
RQ_ENTRY void rq_rows_##SN##_##ST(const void* s, void* d, int64_t n, const float* ssc,          \
                                  int64_t sk, const float* dinv, int64_t dk,                    \
                                  const rq_math_t* m) {                                         \
    rq_math_t w = *m;                                                                           \
    w.b8mask = RQ_B8MASK_##SN;                                                                 \
    rq_rows_b8_##ST(s, d, n, ssc, sk, dinv, dk, &w);                                            \
}
RQ_EACH_DST(RQ_ROWS_B8_ENTRY, s8, 1) RQ_EACH_DST(RQ_ROWS_B8_ENTRY, u8, 1)
#endif
