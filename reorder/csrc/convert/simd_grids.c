/* The AVX-512 conversion grids: a block's short runs in one call (rq_grid_t), every pair of
 * element types, with one body for the sources of each size ("b8": s8 and u8,
 * "h16": f16 and bf16, "x32": f32 and s32) of each destination. The macros are in
 * convert/avx512_grids.h. */
#include "convert/avx512_grids.h"
#include "convert/entry_points.h"
#if RQ_X86
RQ_EACH_DST(RQ_GRIDS_KERNEL, x32, 4) RQ_EACH_DST(RQ_GRIDS_KERNEL, f64, 8)
RQ_EACH_DST(RQ_GRIDS_KERNEL, h16, 2) RQ_EACH_DST(RQ_GRIDS_KERNEL, b8, 1)
#endif
