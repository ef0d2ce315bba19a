/* The AVX-512 conversion tiles from s8, u8 and s32 sources to every destination
 * type. The macros are in _convert_simd_x86.h. */
#include "_convert_simd_x86.h"
#if RQ_X86
RQ_TILES_FOR(s8, 1)
RQ_TILES_FOR(u8, 1)
RQ_TILES_FOR(s32, 4)
#endif
