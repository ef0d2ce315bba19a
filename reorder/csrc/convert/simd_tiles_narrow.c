/* The AVX-512 conversion tiles from the 1- and 2-byte sources to every destination type: one
 * body for the s8 and u8 sources of each destination ("b8"), and one for the f16 and bf16
 * ones ("h16"). The macros are in convert/avx512_tiles.h. */
#include "convert/avx512_tiles.h"
#include "convert/entry_points.h"
#if RQ_X86
RQ_TILES_FOR(b8, 1)
RQ_TILES_FOR(h16, 2)
#endif
