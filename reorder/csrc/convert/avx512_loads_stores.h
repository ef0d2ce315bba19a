/* AVX-512 lanes of the conversions: loads of up to 16 elements to f32, stores from f32 with
 * oneDNN's saturation and round half to even, the byte packs and transposes of 1-byte
 * destinations, each element type's traits (RQ_F32_, RQ_B8_, RQ_W16_, ...) and the math of a
 * lane (scales, zero points, sum). Every AVX-512 family builds on these. */
#ifndef REORDER_CONVERT_AVX512_LOADS_STORES_H
#define REORDER_CONVERT_AVX512_LOADS_STORES_H
#include "convert/x86.h"

#if RQ_X86
/* ---- loads: up to 16 elements (mask k) -> f32 ------------------------------------------- */
RQ_TGT static inline __m512 rq_ld_f32(const void* p, __mmask16 k) {
    return _mm512_maskz_loadu_ps(k, p);
}
RQ_TGT static inline __m512 rq_ld_f64(const void* p, __mmask16 k) {
    __m256 lo = _mm512_cvtpd_ps(_mm512_maskz_loadu_pd((__mmask8)k, p));
    __m256 hi = _mm512_cvtpd_ps(_mm512_maskz_loadu_pd((__mmask8)(k >> 8), (const double*)p + 8));
    return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
}
/* 16 words in a register -> f32 (the 16-bit loads below: these after a masked load) */
RQ_TGT static inline __m512 rq_widen_bf16(__m256i h) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
RQ_TGT static inline __m512 rq_widen_f16(__m256i h) { return _mm512_cvtph_ps(h); }
#define rq_widen_f64(h) _mm512_setzero_ps()
#define rq_widen_b8(h) _mm512_setzero_ps()
RQ_TGT static inline __m512 rq_ld_bf16(const void* p, __mmask16 k) {
    return rq_widen_bf16(_mm256_maskz_loadu_epi16(k, p));
}
RQ_TGT static inline __m512 rq_ld_f16(const void* p, __mmask16 k) {
    return rq_widen_f16(_mm256_maskz_loadu_epi16(k, p));
}
RQ_TGT static inline __m512 rq_ld_s8(const void* p, __mmask16 k) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(k, p)));
}
RQ_TGT static inline __m512 rq_ld_u8(const void* p, __mmask16 k) {
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(k, p)));
}
/* "b8", a 1-byte source of either signedness: the tiles, rows and grids compile one body for
   s8 and u8 sources, told at run time how its bytes widen: sign-extended, then masked to
   their low byte or not (kernel_args.h), the same f32 values as rq_ld_s8 / rq_ld_u8 for one
   vpandd more (vpmovsxbd takes the load). The body declares the mask once (RQ_SRC_VARS) from
   rq_math_t, where the caller set it from the source type; the tables of simd_dispatch.h
   name the body in the rows of both sources. A b8 destination's sum with dst widens the same
   way by its own mask (RQ_LDD_b8); rq_ld_s8 / rq_ld_u8 stay for the weights' sources. */
RQ_TGT static inline __m512 rq_ld_b8x(const void* p, __mmask16 k, __m512i mask) {
    return _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(k, p)),
                                               mask));
}
#define rq_ld_b8(p, k) rq_ld_b8x((p), (k), b8mask_)
#define RQ_B8_b8 1
#define RQ_SRC_VARS_b8                                                                          \
    const __m512i b8mask_ = _mm512_set1_epi32(m->b8mask);                                       \
    (void)b8mask_;
/* "h16", a 16-bit float source of either kind: the tiles, rows and grids compile one body for
   f16 and bf16 sources, told at run time which one it reads (rq_math_t.scode). They load the
   same words and widen them by one branch a register, the same way on every call. */
RQ_TGT static inline __attribute__((always_inline)) __m512 rq_widen_h16x(__m256i h, int bf) {
    return bf ? rq_widen_bf16(h) : rq_widen_f16(h);
}
#define rq_widen_h16(h) rq_widen_h16x((h), h16bf_)
#define rq_ld_h16(p, k) rq_widen_h16(_mm256_maskz_loadu_epi16((k), (p)))
#define RQ_SRC_VARS_h16                                                                         \
    const int h16bf_ = m->scode == RQ_CODE_BF16;                                                \
    (void)h16bf_;
RQ_TGT static inline __m512 rq_ld_s32(const void* p, __mmask16 k) {
    return _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(k, p));
}
/* "x32", a 4-byte source of either kind: the tiles, rows and grids compile one body for f32
   and s32 sources, told at run time which one it reads (rq_math_t.scode). They load the
   same dwords, and an s32's convert to f32 by one branch a register, the same way on every
   call. */
RQ_TGT static inline __attribute__((always_inline)) __m512 rq_ld_x32x(const void* p,
                                                                     __mmask16 k, int s32) {
    const __m512i v = _mm512_maskz_loadu_epi32(k, p);
    return s32 ? _mm512_cvtepi32_ps(v) : _mm512_castsi512_ps(v);
}
#define rq_ld_x32(p, k) rq_ld_x32x((p), (k), x32s_)
#define rq_widen_x32(h) _mm512_setzero_ps()
#define RQ_SRC_VARS_x32                                                                         \
    const int x32s_ = m->scode == RQ_CODE_S32;                                                  \
    (void)x32s_;
#define RQ_SRC_VARS_f64
/* A tile converts an x32 source's rows after loading them, by one test for all (RQ_FIX) where
   rq_ld_x32 takes one a row: rq_ldr loads an x32 source's dwords as they are, and every other
   source as rq_ld does (their RQ_FIX does nothing). */
#define rq_ldr_x32(p, k) _mm512_maskz_loadu_ps((k), (p))
#define RQ_FIX_x32(r, n)                                                                        \
    do {                                                                                        \
        if (x32s_) {                                                                            \
            _Pragma("GCC unroll 16")                                                            \
            for (int i_ = 0; i_ < (n); i_++)                                                    \
                (r)[i_] = _mm512_cvtepi32_ps(_mm512_castps_si512((r)[i_]));                     \
        }                                                                                       \
    } while (0)
#define rq_ldr_f64 rq_ld_f64
#define rq_ldr_h16 rq_ld_h16
#define rq_ldr_b8 rq_ld_b8
#define RQ_FIX_f64(r, n) ((void)(r))
#define RQ_FIX_h16(r, n) ((void)(r))
#define RQ_FIX_b8(r, n) ((void)(r))

/* ---- stores: f32 vector -> 16 elements; lanes outside k are written as 0 ---------------- */
RQ_TGT static inline void rq_st_f32(void* p, __m512 v, __mmask16 k, __m512i* acc) {
    (void)acc; _mm512_storeu_ps(p, _mm512_maskz_mov_ps(k, v));
}
RQ_TGT static inline void rq_st_f64(void* p, __m512 v, __mmask16 k, __m512i* acc) {
    (void)acc; v = _mm512_maskz_mov_ps(k, v);
    _mm512_storeu_pd(p, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
    _mm512_storeu_pd((double*)p + 8, _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1)));
}
RQ_TGT static inline __m256i rq_cv_f16(__m512 v, __mmask16 k) {
    return _mm512_cvtps_ph(_mm512_maskz_mov_ps(k, v), RQ_RNE);
}
RQ_TGT static inline void rq_st_f16(void* p, __m512 v, __mmask16 k, __m512i* acc) {
    (void)acc;
    _mm256_storeu_si256((__m256i*)p, _mm512_cvtps_ph(_mm512_maskz_mov_ps(k, v), RQ_RNE));
}
/* bf16 as oneDNN: f32 denormals -> signed 0, NaN -> quiet (bit 6), else round half to even */
RQ_TGT static inline __m512i rq_bf16_bits(__m512 v) {
    __m512i x = _mm512_castps_si512(v);
    __m512i e = _mm512_and_si512(x, _mm512_set1_epi32(0x7f800000));
    __m512i hi = _mm512_srli_epi32(x, 16);
    __m512i odd = _mm512_and_si512(hi, _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7fff)), odd), 16);
    __mmask16 kinf = _mm512_cmpeq_epi32_mask(e, _mm512_set1_epi32(0x7f800000));
    __mmask16 knan = _mm512_mask_test_epi32_mask(kinf, x, _mm512_set1_epi32(0x007fffff));
    __mmask16 kden = _mm512_cmpeq_epi32_mask(e, _mm512_setzero_si512());
    r = _mm512_mask_mov_epi32(r, kinf, hi);
    r = _mm512_mask_mov_epi32(r, knan, _mm512_or_si512(hi, _mm512_set1_epi32(0x40)));
    r = _mm512_mask_mov_epi32(r, kden, _mm512_and_si512(hi, _mm512_set1_epi32(0x8000)));
    return r;
}
RQ_TGT static inline __m256i rq_cv_bf16(__m512 v, __mmask16 k) {
    return _mm512_cvtepi32_epi16(_mm512_maskz_mov_epi32(k, rq_bf16_bits(v)));
}
RQ_TGT static inline void rq_st_bf16(void* p, __m512 v, __mmask16 k, __m512i* acc) {
    (void)acc;
    _mm256_storeu_si256((__m256i*)p, _mm512_cvtepi32_epi16(_mm512_maskz_mov_epi32(k, rq_bf16_bits(v))));
}
#define RQ_TGT_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))
/* vcvtneps2bf16 rounds half to even, treats f32 denormals as zero and quiets NaN (bit 6):
   the same bits as rq_bf16_bits (the tests compare both with the reference). */
RQ_TGT_BF16 static inline __m256i rq_cv_bf16hw(__m512 v, __mmask16 k) {
    return (__m256i)_mm512_maskz_cvtneps_pbh(k, v);
}
RQ_TGT_BF16 static inline void rq_st_bf16hw(void* p, __m512 v, __mmask16 k, __m512i* acc) {
    (void)acc;
    _mm256_storeu_si256((__m256i*)p, (__m256i)_mm512_maskz_cvtneps_pbh(k, v));
}
RQ_TGT static inline void rq_st_s8(void* p, __m512 v, __mmask16 k, __m512i* acc) {
    v = _mm512_min_ps(v, _mm512_set1_ps(127.0f));                 /* NaN -> 127 */
    __m512i q = _mm512_cvt_roundps_epi32(v, RQ_RNE);              /* <= -2^31 -> INT_MIN */
    q = _mm512_maskz_max_epi32(k, q, _mm512_set1_epi32(-128));
    *acc = _mm512_add_epi32(*acc, q);
    _mm_storeu_si128((__m128i*)p, _mm512_cvtepi32_epi8(q));
}
RQ_TGT static inline void rq_st_u8(void* p, __m512 v, __mmask16 k, __m512i* acc) {
    (void)acc;
    v = _mm512_max_ps(v, _mm512_setzero_ps());                    /* NaN -> 0 */
    v = _mm512_min_ps(v, _mm512_set1_ps(255.0f));
    __m512i q = _mm512_maskz_cvt_roundps_epi32(k, v, RQ_RNE);
    _mm_storeu_si128((__m128i*)p, _mm512_cvtepi32_epi8(q));
}
/* "b8" destinations: the tiles, rows and grids compile one body for s8 and u8 outputs, told
   at run time which one it stores (RQ_DST_VARS, from rq_math_t.dst_u8). Their clamps and packs
   differ (a NaN goes to 127 as s8, to 0 as u8), so a store takes its type's by one branch,
   the same way on every call. */
RQ_TGT static inline __attribute__((always_inline)) void
rq_st_b8x(void* p, __m512 v, __mmask16 k, __m512i* acc, int u8) {
    if (u8) rq_st_u8(p, v, k, acc);
    else rq_st_s8(p, v, k, acc);
}
#define rq_st_b8(p, v, k, acc) rq_st_b8x((p), (v), (k), (acc), dst_u8_)
/* "h16" destinations: one body for f16 and bf16 outputs too, told at run time which one it
   stores (RQ_DST_VARS, from rq_math_t.dcode); each conversion to words takes its type's by
   one branch, the same way on every call. The hardware bf16 keeps its own bodies. */
RQ_TGT static inline __attribute__((always_inline)) __m256i rq_cv_h16x(__m512 v, __mmask16 k,
                                                                      int bf) {
    return bf ? rq_cv_bf16(v, k) : rq_cv_f16(v, k);
}
RQ_TGT static inline __attribute__((always_inline)) void
rq_st_h16x(void* p, __m512 v, __mmask16 k, __m512i* acc, int bf) {
    (void)acc;
    _mm256_storeu_si256((__m256i*)p, rq_cv_h16x(v, k, bf));
}
#define rq_st_h16(p, v, k, acc) rq_st_h16x((p), (v), (k), (acc), dst_bf_)
RQ_TGT static inline void rq_st_s32(void* p, __m512 v, __mmask16 k, __m512i* acc) {
    (void)acc;
    v = _mm512_min_ps(v, _mm512_set1_ps(2147483520.0f));          /* NaN -> 2147483520 */
    _mm512_storeu_si512(p, _mm512_maskz_cvt_roundps_epi32(k, v, RQ_RNE));
}

/* 4 x 16 values -> 64 bytes: rq_st_s8 / rq_st_u8's clamps on the floats, then the
   saturating packs, which clamp the int32 as their max / truncation would. The packs leave
   128-bit lane k holding elements 4k..4k+3 of v[0], v[1], v[2], v[3] in turn. */
RQ_TGT static inline __attribute__((always_inline)) __m512i rq_pack4_s8(const __m512 v[4]) {
    const __m512 hi = _mm512_set1_ps(127.0f);                     /* NaN -> 127 */
    __m512i q[4];
    for (int u = 0; u < 4; u++) q[u] = _mm512_cvt_roundps_epi32(_mm512_min_ps(v[u], hi), RQ_RNE);
    return _mm512_packs_epi16(_mm512_packs_epi32(q[0], q[1]), _mm512_packs_epi32(q[2], q[3]));
}
/* u8: no max with 0, which costs a vector op of four in the cache: min(255, v) returns v
   when it is NaN (vminps gives its second operand then), v converts to INT_MIN when it is
   NaN or below -2^31, and the unsigned packs turn every negative int32 to 0 */
RQ_TGT static inline __attribute__((always_inline)) __m512i rq_pack4_u8(const __m512 v[4]) {
    const __m512 hi = _mm512_set1_ps(255.0f);
    __m512i q[4];
    for (int u = 0; u < 4; u++)
        q[u] = _mm512_cvt_roundps_epi32(_mm512_min_ps(hi, v[u]), RQ_RNE);
    return _mm512_packus_epi16(_mm512_packus_epi32(q[0], q[1]), _mm512_packus_epi32(q[2], q[3]));
}
RQ_TGT static inline __attribute__((always_inline)) __m512i rq_pack4_b8(const __m512 v[4], int u8) {
    return u8 ? rq_pack4_u8(v) : rq_pack4_s8(v);
}
/* one dword permute undoes the packs' interleave: v[0..3] in order, 16 bytes each */
RQ_TGT static inline __m512i rq_unpack_lanes(__m512i x) {
    return _mm512_permutexvar_epi32(
        _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), x);
}
/* v[k] = lane k of a[0], a[1], a[2], a[3] (a 4 x 4 transpose of 128-bit lanes) */
RQ_TGT static inline __attribute__((always_inline)) void
rq_tr4x4_lanes(const __m512i a[4], __m512i v[4]) {
    const __m512i w0 = _mm512_shuffle_i32x4(a[0], a[1], 0x44);
    const __m512i w1 = _mm512_shuffle_i32x4(a[0], a[1], 0xee);
    const __m512i w2 = _mm512_shuffle_i32x4(a[2], a[3], 0x44);
    const __m512i w3 = _mm512_shuffle_i32x4(a[2], a[3], 0xee);
    v[0] = _mm512_shuffle_i32x4(w0, w2, 0x88);
    v[1] = _mm512_shuffle_i32x4(w0, w2, 0xdd);
    v[2] = _mm512_shuffle_i32x4(w1, w3, 0x88);
    v[3] = _mm512_shuffle_i32x4(w1, w3, 0xdd);
}
RQ_TGT static inline __attribute__((always_inline)) void
rq_put4(char* d, const __m512i v[4], int nt) {
    if (nt) {
        for (int k = 0; k < 4; k++) _mm512_stream_si512((__m512i*)(d + 64 * k), v[k]);
    } else {
        for (int k = 0; k < 4; k++) _mm512_storeu_si512(d + 64 * k, v[k]);
    }
}
/* A 16 x 16 tile of converted values, row a = lane a's 16 columns b, to bytes transposed:
   column 4k + j's 16 lanes in 128-bit lane k of u[j]. Four packs make 4 x 4 blocks (rows x
   columns) in each 128-bit lane; a byte shuffle turns each block to columns, so dword b of
   pack g holds column b's lanes 4g..4g+3; two rounds of unpacks gather the packs' dwords.
   u8: the type stored, u8 or s8 (rq_pack4_b8). */
RQ_TGT static inline __attribute__((always_inline)) void
rq_tr8_b8(const __m512 r[16], __m512i u[4], int u8) {
    const __m512i cols = _mm512_broadcast_i32x4(
        _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
    __m512i z[4], t[4];
    for (int g = 0; g < 4; g++) z[g] = _mm512_shuffle_epi8(rq_pack4_b8(r + 4 * g, u8), cols);
    t[0] = _mm512_unpacklo_epi32(z[0], z[1]);
    t[1] = _mm512_unpackhi_epi32(z[0], z[1]);
    t[2] = _mm512_unpacklo_epi32(z[2], z[3]);
    t[3] = _mm512_unpackhi_epi32(z[2], z[3]);
    u[0] = _mm512_unpacklo_epi64(t[0], t[2]);
    u[1] = _mm512_unpackhi_epi64(t[0], t[2]);
    u[2] = _mm512_unpacklo_epi64(t[1], t[3]);
    u[3] = _mm512_unpackhi_epi64(t[1], t[3]);
}
/* the tile's columns b to d + b * step (streamed when nt: step 16, d 64-byte aligned) */
RQ_TGT static inline __attribute__((always_inline)) void
rq_tr8_put_b8(const __m512 r[16], char* d, int64_t step, int nt, int u8) {
    __m512i u[4];
    rq_tr8_b8(r, u, u8);
    if (step == 16) {
        __m512i v[4];
        rq_tr4x4_lanes(u, v);
        rq_put4(d, v, nt && ((uintptr_t)d & 63) == 0);
        return;
    }
    for (int j = 0; j < 4; j++) {
        _mm_storeu_si128((__m128i*)(d + j * step), _mm512_castsi512_si128(u[j]));
        _mm_storeu_si128((__m128i*)(d + (4 + j) * step), _mm512_extracti32x4_epi32(u[j], 1));
        _mm_storeu_si128((__m128i*)(d + (8 + j) * step), _mm512_extracti32x4_epi32(u[j], 2));
        _mm_storeu_si128((__m128i*)(d + (12 + j) * step), _mm512_extracti32x4_epi32(u[j], 3));
    }
}
#define RQ_TR8_b8(r, d, step, nt) rq_tr8_put_b8((r), (d), (step), (nt), dst_u8_)
#define RQ_TR8U_b8(r, u) rq_tr8_b8((r), (u), dst_u8_)
#define RQ_TR8_NONE(r, d, step, nt) ((void)(r), (void)(d), (void)(step), (void)(nt))
#define RQ_TR8U_NONE(r, u) ((void)(r), (void)(u))
#define RQ_TR8U_f32 RQ_TR8U_NONE
#define RQ_TR8U_f64 RQ_TR8U_NONE
#define RQ_TR8U_h16 RQ_TR8U_NONE
#define RQ_TR8U_bf16hw RQ_TR8U_NONE
#define RQ_TR8U_s32 RQ_TR8U_NONE
#define RQ_TR8_f32 RQ_TR8_NONE
#define RQ_TR8_f64 RQ_TR8_NONE
#define RQ_TR8_h16 RQ_TR8_NONE
#define RQ_TR8_bf16hw RQ_TR8_NONE
#define RQ_TR8_s32 RQ_TR8_NONE
/* 1-byte types go through a byte transpose instead of the f32 one: RQ_B8 marks them, RQ_TR8
   converts and transposes a tile to them, RQ_WIDEN widens a register of them to f32 */
#define RQ_F32_f32 1
#define RQ_F32_f64 0
#define RQ_F32_h16 0
#define RQ_F32_bf16hw 0
#define RQ_F32_b8 0
#define RQ_F32_s32 0
#define RQ_B8_f32 0
#define RQ_B8_f64 0
#define RQ_B8_h16 0
#define RQ_B8_bf16hw 0
#define RQ_B8_s32 0
#define RQ_B8_x32 0
#define RQ_WIDEN_b8(x)                                                                          \
    _mm512_cvtepi32_ps(_mm512_and_si512(_mm512_cvtepi8_epi32(x), b8mask_))
#define RQ_WIDEN_f64(x) _mm512_setzero_ps()
#define RQ_WIDEN_h16(x) _mm512_setzero_ps()
#define RQ_WIDEN_x32(x) _mm512_setzero_ps()
/* RQ_TILE_MATH for source row A before the transpose: its lane's scales as scalars */
#define RQ_ROW_MATH(V, A) ({                                                                    \
        __m512 w_ = (V);                                                                        \
        if (hz || rq_any) w_ = _mm512_sub_ps(w_, szp);                                          \
        if (hs || rq_any) w_ = _mm512_mul_ps(w_, _mm512_set1_ps(ssc[A]));                       \
        if (hd || rq_any) w_ = _mm512_mul_ps(w_, _mm512_set1_ps(dinv[A]));                      \
        if (hdz || rq_any) w_ = _mm512_add_ps(w_, dzp);                                         \
        if (ha || rq_any) w_ = _mm512_mul_ps(w_, adj);                                          \
        w_; })

/* arithmetic of one destination vector, in the order of the scalar code (no sum here). The
   RQ_ANY bodies run every step, an absent one with its identity (rq_math_t's zero points +0
   and -0, adj 1; an absent scale reads 1.0): exact for every input, and no test a vector */
#define RQ_TILE_MATH(V) ({                                                                      \
        __m512 w_ = (V);                                                                        \
        if (hz || rq_any) w_ = _mm512_sub_ps(w_, szp);                                          \
        if (hs || rq_any) w_ = _mm512_mul_ps(w_, vs);                                           \
        if (hd || rq_any) w_ = _mm512_mul_ps(w_, vd);                                           \
        if (hdz || rq_any) w_ = _mm512_add_ps(w_, dzp);                                         \
        if (ha || rq_any) w_ = _mm512_mul_ps(w_, adj);                                          \
        w_; })
/* The arithmetic a body is compiled for: none, one src or dst scale alone (int8 activations
   in and out), a dst or src scale with a zero point (u8 activations out and in), or any
   (every step, absent ones with their identities: RQ_TILE_MATH).
   sk / dk: the scales step along a run (rows, grids), whose bodies with a scale take one
   common value; the tiles read per-lane scale vectors either way and pass 0. A zero point
   without its scale takes the zero point's body: an absent scale reads 1.0 (Arith), and
   multiplying by 1.0 is exact. */
enum { RQ_PURE, RQ_SSCALE, RQ_DSCALE, RQ_DSCALE_ZP, RQ_SSCALE_ZP, RQ_ANY };
static inline int rq_mode(const rq_math_t* m, int64_t sk, int64_t dk) {
    const int rest = m->has_szp || m->has_sum || m->has_dzp || m->has_adj;
    if (!(rest || m->has_sscale || m->has_dscale)) return RQ_PURE;
    if (!rest && m->has_sscale && !m->has_dscale && !sk) return RQ_SSCALE;
    if (!rest && m->has_dscale && !m->has_sscale && !dk) return RQ_DSCALE;
    if (m->has_dzp && !dk && !(m->has_szp || m->has_sum || m->has_adj || m->has_sscale))
        return RQ_DSCALE_ZP;
    if (m->has_szp && !sk && !(m->has_dzp || m->has_sum || m->has_adj || m->has_dscale))
        return RQ_SSCALE_ZP;
    return RQ_ANY;
}
/* the flags of a body compiled for MODE: constants but in RQ_ANY */
#define RQ_MODE_FLAGS(MODE)                                                                     \
    const int rq_any = (MODE) == RQ_ANY;                                                        \
    const int hz = (MODE) == RQ_SSCALE_ZP || (rq_any && m->has_szp);                            \
    const int hm = rq_any && m->has_sum, ha = rq_any && m->has_adj;                             \
    const int hs = (MODE) == RQ_SSCALE || (MODE) == RQ_SSCALE_ZP || (rq_any && m->has_sscale);  \
    const int hd = (MODE) == RQ_DSCALE || (MODE) == RQ_DSCALE_ZP || (rq_any && m->has_dscale);  \
    const int hdz = (MODE) == RQ_DSCALE_ZP || (rq_any && m->has_dzp);
#define RQ_CV_h16(v, k) rq_cv_h16x((v), (k), dst_bf_)
#define RQ_CV_bf16hw rq_cv_bf16hw
#define RQ_CV_f32(v, k) _mm256_setzero_si256()
#define RQ_CV_f64(v, k) _mm256_setzero_si256()
#define RQ_CV_b8(v, k) _mm256_setzero_si256()
#define RQ_CV_s32(v, k) _mm256_setzero_si256()
/* 16-bit destinations: converted before the transpose (tr16x16_w16), and streamed as 64-byte
   lines when large. RQ_PACK2: two source rows -> one register of 16-bit outputs, row x in
   words 0..15 and y in 16..31 (the layout tr16x16_w16 takes); 0 for other destinations. */
#define RQ_W16_h16 1
#define RQ_W16_bf16hw 1
#define RQ_W16_f32 0
#define RQ_W16_f64 0
#define RQ_W16_b8 0
#define RQ_W16_s32 0
#define RQ_W16_x32 0
#define RQ_PACK2_CV(ST, x, y)                                                                   \
    _mm512_inserti64x4(_mm512_castsi256_si512(RQ_CV_##ST((x), 0xffff)), RQ_CV_##ST((y), 0xffff), 1)
#define RQ_PACK2_h16(x, y) RQ_PACK2_CV(h16, x, y)
#define RQ_PACK2_bf16hw(x, y) ((__m512i)_mm512_cvtne2ps_pbh((y), (x)))
#define RQ_PACK2_f32(x, y) ((void)(x), (void)(y), _mm512_setzero_si512())
#define RQ_PACK2_f64(x, y) ((void)(x), (void)(y), _mm512_setzero_si512())
#define RQ_PACK2_b8(x, y) ((void)(x), (void)(y), _mm512_setzero_si512())
#define RQ_PACK2_s32(x, y) ((void)(x), (void)(y), _mm512_setzero_si512())
/* a destination's own values, for the sum with dst; a b8 destination widens by its mask */
#define RQ_LDD_f32 rq_ld_f32
#define RQ_LDD_f64 rq_ld_f64
#define RQ_LDD_h16(p, k) rq_widen_h16x(_mm256_maskz_loadu_epi16((k), (p)), dst_bf_)
#define RQ_LDD_bf16 rq_ld_bf16   /* the hardware bf16 in the rows and grids, whose DN is bf16 */
#define RQ_LDD_bf16hw rq_ld_bf16
#define RQ_LDD_s32 rq_ld_s32
#define RQ_LDD_b8(p, k) rq_ld_b8x((p), (k), dst_b8mask_)
/* what a b8 destination's body declares once: which type it stores, and its widening */
#define RQ_DST_VARS_b8                                                                          \
    const int dst_u8_ = m->dst_u8;                                                              \
    const __m512i dst_b8mask_ = _mm512_set1_epi32(dst_u8_ ? RQ_B8MASK_u8 : RQ_B8MASK_s8);       \
    (void)dst_u8_; (void)dst_b8mask_;
#define RQ_DST_VARS_f32
#define RQ_DST_VARS_f64
#define RQ_DST_VARS_h16                                                                         \
    const int dst_bf_ = m->dcode == RQ_CODE_BF16;                                               \
    (void)dst_bf_;
#define RQ_DST_VARS_bf16hw
#define RQ_DST_VARS_s32
/* arithmetic of one destination vector (same order as the scalar code), then the store */
#define RQ_TILE_OUT(DN, ST, V, D)                                                               \
    do {                                                                                        \
        __m512 v_ = (V);                                                                        \
        char* d_ = (D);                                                                         \
        if (hz || rq_any) v_ = _mm512_sub_ps(v_, szp);                                          \
        if (hs || rq_any) v_ = _mm512_mul_ps(v_, vs);                                           \
        if (hm) v_ = _mm512_add_ps(v_, _mm512_mul_ps(beta, RQ_LDD_##DN(d_, 0xffff)));           \
        if (hd || rq_any) v_ = _mm512_mul_ps(v_, vd);                                           \
        if (hdz || rq_any) v_ = _mm512_add_ps(v_, dzp);                                         \
        if (ha || rq_any) v_ = _mm512_mul_ps(v_, adj);                                          \
        rq_st_##ST(d_, v_, kl, &vacc);                                                          \
    } while (0)
/* 8 registers to 512 contiguous bytes; `nt`: streaming stores (d 64-byte aligned) */
RQ_TGT static inline __attribute__((always_inline)) void
rq_put8(char* d, const __m512i w[8], int nt) {
    if (nt) {
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) _mm512_stream_si512((__m512i*)(d + 64 * j), w[j]);
    } else {
#pragma GCC unroll 8
        for (int j = 0; j < 8; j++) _mm512_storeu_si512(d + 64 * j, w[j]);
    }
}
/* bf16 with hardware rounding loads as bf16 */
#define rq_ld_bf16hw rq_ld_bf16

/* one line of 64 bytes from the vectors of 64 / DSIZE values (a streamed row) */
#define RQ_NTL_f32 1
#define RQ_NTL_s32 1
#define RQ_NTL_h16 1
#define RQ_NTL_bf16hw 1
#define RQ_NTL_b8 1
#define RQ_NTL_f64 0
#define RQ_LINE_f32(v) _mm512_castps_si512((v)[0])
#define RQ_LINE_s32(v)                                                                          \
    _mm512_cvt_roundps_epi32(_mm512_min_ps((v)[0], _mm512_set1_ps(2147483520.0f)), RQ_RNE)
#define RQ_LINE_h16(v) RQ_PACK2_h16((v)[0], (v)[1])
#define RQ_LINE_bf16hw(v) RQ_PACK2_bf16hw((v)[0], (v)[1])
#define RQ_LINE_b8(v) rq_unpack_lanes(rq_pack4_b8((v), dst_u8_))
#define RQ_LINE_f64(v) ((void)(v), _mm512_setzero_si512())   /* never streamed (RQ_NTL_f64) */
#endif
#endif
