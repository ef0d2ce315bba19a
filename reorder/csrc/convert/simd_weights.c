/* The int8 weight blocks, `4i16o4i` (OIhw4i16o4i and its kin), with AVX-512
 * VBMI and VNNI, from every source type to s8 and u8. The macros are in convert/avx512_weights.h. */
#include "convert/avx512_weights.h"
#include "convert/entry_points.h"
#if RQ_X86
RQ_W(f32, 4, s8) RQ_W(f32, 4, u8) RQ_W(f64, 8, s8) RQ_W(f64, 8, u8)
RQ_W(f16, 2, s8) RQ_W(f16, 2, u8) RQ_W(bf16, 2, s8) RQ_W(bf16, 2, u8)
RQ_W(s8, 1, s8) RQ_W(s8, 1, u8) RQ_W(u8, 1, s8) RQ_W(u8, 1, u8)
RQ_W(s32, 4, s8) RQ_W(s32, 4, u8)
#endif
