/* The AVX-512 conversion rows: the strided walk's contiguous runs, every pair of
 * element types. The macros are in convert/avx512_rows.h. */
#include "convert/avx512_rows.h"
#include "convert/entry_points.h"
#if RQ_X86
RQ_EACH_PAIR(RQ_ROWS_KERNEL)
#endif
