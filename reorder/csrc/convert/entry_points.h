/* The entry points of the x86 conversion kernels, one per family and pair of element types
 * (s8 and u8 are one type, "b8", as sources in every family and as destinations in the
 * AVX-512 ones; f16 and bf16 are one, "h16", on either side of the AVX-512 ones; f32 and s32
 * are one, "x32", as their sources: convert/x86.h; the AVX2 family is one body for every
 * pair), and what the families share:
 * the contract of a tile, and where each family lives.
 *
 * A tile call converts one "lane group" of 16 destination-contiguous elements (lanes a) along
 * a run of a source-contiguous node B (columns b):
 *
 *     dst[b*dB + a] = convert(math(src[soff[a] + b]))      a < 16, b < nbv, lane a valid
 *     dst[b*dB + a] = 0                                    invalid lanes, and nbv <= b < nbw
 *
 * 16 source rows of up to 16 columns are loaded (masked), transposed in registers to 16
 * destination vectors, and converted there, so every load and store is a full vector. The
 * arithmetic is that of the scalar kernels in convert/convert.pyx, in the same order, with the same
 * saturation (NaN -> the bound tested first) and round half to even, so both paths write the
 * same bytes. acc (s8 destinations) receives per-lane sums of the stored values.
 *
 * Each family is written once as macros (a header) and instantiated in its own file, so that
 * a build compiles them side by side:
 *
 *     avx512_tiles.h    simd_tiles_wide.c    AVX-512 tiles from the 4- and 8-byte sources
 *                       simd_tiles_narrow.c  AVX-512 tiles from the 1- and 2-byte sources
 *                       simd_tiles_bf16hw.c  AVX-512 tiles to bf16 through AVX512-BF16's rounding
 *     avx2.h            simd_avx2.c          the tile and row 8 elements wide, without AVX-512
 *     avx512_rows.h     simd_rows.c          AVX-512 rows (the strided walk's contiguous runs)
 *     avx512_grids.h    simd_grids.c         AVX-512 grids (a block's short runs in one call)
 *     avx512_weights.h  simd_weights.c       int8 weights in 4i16o4i blocks (VBMI and VNNI)
 *
 * They share x86.h (targets, type pairs) and avx512_loads_stores.h (the lanes' loads, stores
 * and math); convert/simd_dispatch.h chooses among the entry points at run time.
 * Built with __attribute__((target)), never with -march=native.
 */
#ifndef REORDER_CONVERT_ENTRY_POINTS_H
#define REORDER_CONVERT_ENTRY_POINTS_H
#include "convert/x86.h"
#include "convert/kernel_args.h"

#if RQ_X86
/* ---- the entry points, one per family and pair of element types ------------------------- */
/* declared by their function types (convert/kernel_args.h); the macros above define them */
#define RQ_DECLARE(SN, SSIZE, DN, DSIZE, TGT, ST)                                               \
    RQ_ENTRY rq_block_f rq_block_##SN##_##ST;                                                   \
    RQ_ENTRY rq_row_f rq_rows_##SN##_##ST;                                                      \
    RQ_ENTRY rq_grid_f rq_grids_##SN##_##ST;
RQ_EACH_PAIR(RQ_DECLARE)
/* the AVX2 family: one tile and one row for every pair (the types in rq_math_t) */
RQ_ENTRY rq_block_f rq_avx2_block;
RQ_ENTRY rq_row_f rq_avx2_row;
#define RQ_DECLARE_W(SN) RQ_ENTRY rq_w_f rq_w_##SN##_s8; RQ_ENTRY rq_w_f rq_w_##SN##_u8;
RQ_DECLARE_W(f32) RQ_DECLARE_W(f64) RQ_DECLARE_W(f16) RQ_DECLARE_W(bf16)
RQ_DECLARE_W(s8) RQ_DECLARE_W(u8) RQ_DECLARE_W(s32)
#endif
#endif
