/* The AVX-512 conversion grids: a block's short runs in one call (rq_grid_t), every pair of
 * element types, with one body for the s8 and u8 sources of each destination ("b8"). The
 * macros are in convert/avx512_grids.h. */
#include "convert/avx512_grids.h"
#include "convert/entry_points.h"
#if RQ_X86
RQ_EACH_DST(RQ_GRIDS_KERNEL, f32, 4) RQ_EACH_DST(RQ_GRIDS_KERNEL, f64, 8)
RQ_EACH_DST(RQ_GRIDS_KERNEL, f16, 2) RQ_EACH_DST(RQ_GRIDS_KERNEL, bf16, 2)
RQ_EACH_DST(RQ_GRIDS_KERNEL, s32, 4) RQ_EACH_DST(RQ_GRIDS_KERNEL, b8, 1)
/* s8 and u8 sources: the one 1-byte body, told how its bytes widen */
#define RQ_GRIDS_B8_ENTRY(SN, SSIZE, DN, DSIZE, TGT, ST)                                        \
RQ_ENTRY void rq_grids_##SN##_##ST(const void* s, void* d, const rq_grid_t* g,                  \
                                   const rq_math_t* m) {                                        \
    rq_math_t w = *m;                                                                           \
    w.b8mask = RQ_B8MASK_##SN;                                                                 \
    rq_grids_b8_##ST(s, d, g, &w);                                                              \
}
RQ_EACH_DST(RQ_GRIDS_B8_ENTRY, s8, 1) RQ_EACH_DST(RQ_GRIDS_B8_ENTRY, u8, 1)
#endif
