/* The conversion kernels' run-time choice. rq_block_kernel(scode, dcode) returns the tile that
 * runs all lane groups of one outer position for a dtype pair, rq_row_kernel the row,
 * rq_grid_kernel the grid and rq_w_kernel the int8 weight block: the widest code this CPU runs
 * (reorder_cpu, detected once at import), or NULL, and callers then use the portable loops of
 * convert/convert.pyx. The kernels themselves are
 * in the files convert/entry_points.h lists.
 */
#ifndef REORDER_CONVERT_SIMD_DISPATCH_H
#define REORDER_CONVERT_SIMD_DISPATCH_H
#include <stdint.h>
#include <string.h>
#include "common/cpu_features.h"
#include "convert/kernel_args.h"
#include "convert/x86.h"
#include "convert/avx512_loads_stores.h"   /* rq_cv_bf16: the 16-bit float rows below */
#include "convert/entry_points.h"

static inline int rq_have_avx512(void) { return reorder_cpu.avx512_conv; }
static inline int rq_have_avx2(void) { return reorder_cpu.avx2_f16c; }

/* 1: the widest SIMD (AVX-512 with hardware bf16 when present, else AVX2); 2: AVX-512 with
   the emulated bf16; 3: AVX2 even where AVX-512 exists; 0: portable loops only. Tests
   switch between them to compare every path with the reference. */
static int rq_simd_enabled = 1;

/* which code a tile or row of this dtype pair runs now: 0 portable, 1 AVX2, 2 AVX-512,
   3 AVX-512 with hardware bf16 */
static inline int rq_isa(int scode, int dcode) {
#if RQ_X86
    if (scode < 0 || scode >= 7 || dcode < 0 || dcode >= 7 || !rq_simd_enabled) return 0;
    if ((rq_simd_enabled == 1 || rq_simd_enabled == 2) && rq_have_avx512())
        return dcode == 3 && reorder_cpu.avx512_bf16 && rq_simd_enabled == 1 ? 3 : 2;
    if (rq_have_avx2()) return 1;
#endif
    (void)scode; (void)dcode;
    return 0;
}
static inline rq_block_fn rq_block_kernel(int scode, int dcode) {
#if RQ_X86
    static const rq_block_fn avx512[7][7] = RQ_TABLE(rq_block_, RQ_TABLE_ROW_B8);
    static const rq_block_fn avx512_bf16hw[7] = RQ_TABLE_BF16HW(rq_block_);
    switch (rq_isa(scode, dcode)) {
    case 3: return avx512_bf16hw[scode];
    case 2: return avx512[scode][dcode];
    case 1: return rq_avx2_block;
    }
#endif
    (void)scode; (void)dcode;
    return (rq_block_fn)0;
}
static inline rq_row_fn rq_row_kernel(int scode, int dcode) {
#if RQ_X86
    static const rq_row_fn avx512[7][7] = RQ_TABLE(rq_rows_, RQ_TABLE_ROW_B8);
    static const rq_row_fn avx512_bf16hw[7] = RQ_TABLE_BF16HW(rq_rows_);
    switch (rq_isa(scode, dcode)) {
    case 3: return avx512_bf16hw[scode];
    case 2: return avx512[scode][dcode];
    case 1: return rq_avx2_row;
    }
#endif
    (void)scode; (void)dcode;
    return (rq_row_fn)0;
}
/* the AVX-512 grid for this dtype pair, or NULL: the walk then takes the rows one at a time */
static inline rq_grid_fn rq_grid_kernel(int scode, int dcode) {
#if RQ_X86
    static const rq_grid_fn avx512[7][7] = RQ_TABLE(rq_grids_, RQ_TABLE_ROW_B8);
    static const rq_grid_fn avx512_bf16hw[7] = RQ_TABLE_BF16HW(rq_grids_);
    switch (rq_isa(scode, dcode)) {
    case 3: return avx512_bf16hw[scode];
    case 2: return avx512[scode][dcode];
    }
#endif
    (void)scode; (void)dcode;
    return (rq_grid_fn)0;
}
static inline int rq_simd_available(void) { return rq_have_avx512(); }
static inline int rq_avx2_available(void) { return rq_have_avx2(); }
static inline rq_w_fn rq_w_kernel(int scode, int dcode) {
#if RQ_X86
#define RQ_W_ROW(SN) {rq_w_##SN##_s8, rq_w_##SN##_u8}
    static const rq_w_fn rq_ws[7][2] = {RQ_W_ROW(f32), RQ_W_ROW(f64), RQ_W_ROW(f16),
                                        RQ_W_ROW(bf16), RQ_W_ROW(s8), RQ_W_ROW(u8), RQ_W_ROW(s32)};
    if ((rq_simd_enabled == 1 || rq_simd_enabled == 2) && reorder_cpu.avx512_int8w
            && scode >= 0 && scode < 7 && (dcode == 4 || dcode == 5))
        return rq_ws[scode][dcode - 4];
#endif
    (void)scode; (void)dcode;
    return (rq_w_fn)0;
}
static inline void rq_set_simd(int on) { rq_simd_enabled = on; }


/* ---- rows of the strided walk: contiguous 16-bit float rows convert 16 at a time --------
 * (the same bits as the scalar routines; the portable path is the scalar loop). Return 0
 * when the SIMD path is off, so the caller runs its loop. */
#if RQ_X86
RQ_TGT static void rq_row_f32_to_f16_simd(const float* t, uint16_t* d, int64_t m) {
    int64_t j = 0;
    for (; j + 16 <= m; j += 16)
        _mm256_storeu_si256((__m256i*)(d + j), _mm512_cvtps_ph(_mm512_loadu_ps(t + j), RQ_RNE));
    if (j < m) {
        __mmask16 k = (__mmask16)((1u << (m - j)) - 1u);
        _mm256_mask_storeu_epi16(d + j, k, _mm512_cvtps_ph(_mm512_maskz_loadu_ps(k, t + j), RQ_RNE));
    }
}
RQ_TGT static void rq_row_f32_to_bf16_simd(const float* t, uint16_t* d, int64_t m) {
    for (int64_t j = 0; j < m; j += 16) {
        __mmask16 k = m - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (m - j)) - 1u);
        _mm256_mask_storeu_epi16(d + j, k, rq_cv_bf16(_mm512_maskz_loadu_ps(k, t + j), k));
    }
}
RQ_TGT static void rq_row_f16_to_f32_simd(const uint16_t* s, float* t, int64_t m) {
    for (int64_t j = 0; j < m; j += 16) {
        __mmask16 k = m - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (m - j)) - 1u);
        _mm512_mask_storeu_ps(t + j, k, rq_ld_f16(s + j, k));
    }
}
RQ_TGT static void rq_row_bf16_to_f32_simd(const uint16_t* s, float* t, int64_t m) {
    for (int64_t j = 0; j < m; j += 16) {
        __mmask16 k = m - j >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (m - j)) - 1u);
        _mm512_mask_storeu_ps(t + j, k, rq_ld_bf16(s + j, k));
    }
}
#endif
#define RQ_ROW(NAME)                                                                         \
static inline int NAME(const void* a, void* b, int64_t m) {                                  \
    (void)a; (void)b; (void)m;                                                               \
    RQ_ROW_BODY(NAME)                                                                        \
    return 0;                                                                                \
}
#if RQ_X86
#define RQ_ROW_BODY(NAME) if ((rq_simd_enabled == 1 || rq_simd_enabled == 2) && rq_have_avx512()) { NAME##_simd(a, b, m); return 1; }
#else
#define RQ_ROW_BODY(NAME)
#endif
RQ_ROW(rq_row_f32_to_f16)
RQ_ROW(rq_row_f32_to_bf16)
RQ_ROW(rq_row_f16_to_f32)
RQ_ROW(rq_row_bf16_to_f32)
#endif
