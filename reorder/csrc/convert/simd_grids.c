/* The AVX-512 conversion grids: a block's short runs in one call (rq_grid_t),
 * every pair of element types. The macros are in convert/avx512_grids.h. */
#include "convert/avx512_grids.h"
#include "convert/entry_points.h"
#if RQ_X86
RQ_EACH_PAIR(RQ_GRIDS_KERNEL)
#endif
