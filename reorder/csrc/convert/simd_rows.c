/* The AVX-512 conversion rows: the strided walk's contiguous runs, every pair of element
 * types, with one body for the sources of each size ("b8": s8 and u8,
 * "h16": f16 and bf16, "x32": f32 and s32) of each destination. The macros are in
 * convert/avx512_rows.h. */
#include "convert/avx512_rows.h"
#include "convert/entry_points.h"
#if RQ_X86
RQ_EACH_DST(RQ_ROWS_KERNEL, x32, 4) RQ_EACH_DST(RQ_ROWS_KERNEL, f64, 8)
RQ_EACH_DST(RQ_ROWS_KERNEL, h16, 2) RQ_EACH_DST(RQ_ROWS_KERNEL, b8, 1)
#endif
