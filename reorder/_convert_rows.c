/* The AVX-512 conversion rows: the strided walk's contiguous runs, every pair of
 * element types. The macros are in _convert_simd_x86.h. */
#include "_convert_simd_x86.h"
#if RQ_X86
RQ_EACH_PAIR(RQ5_ROW)
#endif
