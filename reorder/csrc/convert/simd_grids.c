/* The AVX-512 conversion grids: a block's short runs in one call (rq_grid_t), every pair of
 * element types, with one body for the s8 and u8 sources of each destination ("b8") and one
 * for the f16 and bf16 ones ("h16"). The macros are in convert/avx512_grids.h. */
#include "convert/avx512_grids.h"
#include "convert/entry_points.h"
#if RQ_X86
RQ_EACH_DST(RQ_GRIDS_KERNEL, f32, 4) RQ_EACH_DST(RQ_GRIDS_KERNEL, f64, 8)
RQ_EACH_DST(RQ_GRIDS_KERNEL, h16, 2)
RQ_EACH_DST(RQ_GRIDS_KERNEL, s32, 4) RQ_EACH_DST(RQ_GRIDS_KERNEL, b8, 1)
#endif
