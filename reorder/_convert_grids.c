/* The AVX-512 conversion grids: a block's short runs in one call (rq_grid_t),
 * every pair of element types. The macros are in _convert_simd_x86.h. */
#include "_convert_simd_x86.h"
#if RQ_X86
RQ_EACH_PAIR(RQ6_GRID)
#endif
