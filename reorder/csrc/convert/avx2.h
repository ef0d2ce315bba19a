/* AVX2 + F16C conversions, 8 elements wide, for CPUs without AVX-512: each type's loads and
 * stores, the arithmetic, and the switches on the type codes by which the one tile and the one
 * row of convert/simd_avx2.c take every pair. */
#ifndef REORDER_CONVERT_AVX2_H
#define REORDER_CONVERT_AVX2_H
#include "convert/x86.h"

#if RQ_X86
/* ---- AVX2 (+F16C): the same tiles and rows 8 elements wide, for CPUs without AVX-512 ------
 * Same arithmetic in the same order as the scalar code; integer stores clamp with minps /
 * maxps before the conversion (NaN takes the bound tested first) and then saturate in the
 * packs, so the bytes equal the portable path's. Used when reorder_cpu.avx2_f16c is set. */
#define RQ_TGT_AVX2 __attribute__((target("avx2,f16c")))
RQ_TGT_AVX2 static inline __m256 rq_avx2_ld_f32(const void* p) { return _mm256_loadu_ps((const float*)p); }
RQ_TGT_AVX2 static inline __m256 rq_avx2_ld_f64(const void* p) {
    const double* q = (const double*)p;
    return _mm256_set_m128(_mm256_cvtpd_ps(_mm256_loadu_pd(q + 4)), _mm256_cvtpd_ps(_mm256_loadu_pd(q)));
}
RQ_TGT_AVX2 static inline __m256 rq_avx2_ld_f16(const void* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p));
}
RQ_TGT_AVX2 static inline __m256 rq_avx2_ld_bf16(const void* p) {
    __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
/* 1-byte destinations' loads, for the sum with dst */
RQ_TGT_AVX2 static inline __m256 rq_avx2_ld_s8(const void* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)p)));
}
RQ_TGT_AVX2 static inline __m256 rq_avx2_ld_u8(const void* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)p)));
}
/* "b8": either 1-byte source in one body, as the AVX-512 families (avx512_loads_stores.h) */
RQ_TGT_AVX2 static inline __m256 rq_avx2_ld_b8x(const void* p, __m256i mask) {
    return _mm256_cvtepi32_ps(_mm256_and_si256(
        _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)p)), mask));
}
#define rq_avx2_ld_b8(p) rq_avx2_ld_b8x((p), b8mask_)
RQ_TGT_AVX2 static inline __m256 rq_avx2_ld_s32(const void* p) {
    return _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i*)p));
}
/* bf16 bits (in the low half of each dword) as oneDNN rounds: see rq_bf16_bits */
RQ_TGT_AVX2 static inline __m256i rq_avx2_bf16_bits(__m256 v) {
    /* Inf needs no case of its own (its rounding adds nothing); NaN keeps its top bits and
     * is made quiet; zero exponents keep the sign only. Equal to the scalar rule on all
     * 2^32 inputs. Few constants: this runs inside 16-register tiles. */
    const __m256i x = _mm256_castps_si256(v);
    const __m256i hi = _mm256_srli_epi32(x, 16);
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)),
                                                   _mm256_and_si256(hi, _mm256_set1_epi32(1))), 16);
    const __m256i ab = _mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff));
    const __m256i knan = _mm256_cmpgt_epi32(ab, _mm256_set1_epi32(0x7f800000));
    const __m256i kden = _mm256_cmpgt_epi32(_mm256_set1_epi32(0x00800000), ab);
    r = _mm256_blendv_epi8(r, _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), knan);
    return _mm256_andnot_si256(_mm256_and_si256(kden, _mm256_set1_epi32(0x7fff)), r);
}
/* f32 -> saturated int32, as the scalar clamps order them (NaN -> 127 / 0 / 2147483520) */
RQ_TGT_AVX2 static inline __m256i rq_avx2_q_s8(__m256 v) {
    __m256i q = _mm256_cvtps_epi32(_mm256_min_ps(v, _mm256_set1_ps(127.0f)));  /* <-2^31: INT_MIN */
    return _mm256_max_epi32(q, _mm256_set1_epi32(-128));
}
RQ_TGT_AVX2 static inline __m256i rq_avx2_q_u8(__m256 v) {
    v = _mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()), _mm256_set1_ps(255.0f));
    return _mm256_cvtps_epi32(v);
}
/* 8 elements -> dst; `acc` (s8) receives the stored values */
RQ_TGT_AVX2 static inline void rq_avx2_st_f32(void* p, __m256 v, __m256i* acc) { (void)acc; _mm256_storeu_ps((float*)p, v); }
RQ_TGT_AVX2 static inline void rq_avx2_st_f64(void* p, __m256 v, __m256i* acc) {
    (void)acc;
    _mm256_storeu_pd((double*)p, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    _mm256_storeu_pd((double*)p + 4, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}
RQ_TGT_AVX2 static inline void rq_avx2_st_f16(void* p, __m256 v, __m256i* acc) {
    (void)acc; _mm_storeu_si128((__m128i*)p, _mm256_cvtps_ph(v, RQ_RNE));
}
RQ_TGT_AVX2 static inline void rq_avx2_st_bf16(void* p, __m256 v, __m256i* acc) {
    (void)acc;
    __m256i r = rq_avx2_bf16_bits(v);
    _mm_storeu_si128((__m128i*)p, _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)));
}
RQ_TGT_AVX2 static inline void rq_avx2_st_s8(void* p, __m256 v, __m256i* acc) {
    __m256i q = rq_avx2_q_s8(v);
    *acc = _mm256_add_epi32(*acc, q);
    __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storel_epi64((__m128i*)p, _mm_packs_epi16(w, w));
}
RQ_TGT_AVX2 static inline void rq_avx2_st_u8(void* p, __m256 v, __m256i* acc) {
    (void)acc;
    __m256i q = rq_avx2_q_u8(v);
    __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storel_epi64((__m128i*)p, _mm_packus_epi16(w, w));
}
RQ_TGT_AVX2 static inline void rq_avx2_st_s32(void* p, __m256 v, __m256i* acc) {
    (void)acc;
    _mm256_storeu_si256((__m256i*)p, _mm256_cvtps_epi32(_mm256_min_ps(v, _mm256_set1_ps(2147483520.0f))));
}
/* 16 lanes (two vectors) -> 16 contiguous dst elements, one or two full-width stores */
RQ_TGT_AVX2 static inline void rq_avx2_st16_f32(void* p, __m256 a, __m256 b, __m256i* acc) {
    (void)acc; _mm256_storeu_ps((float*)p, a); _mm256_storeu_ps((float*)p + 8, b);
}
RQ_TGT_AVX2 static inline void rq_avx2_st16_f64(void* p, __m256 a, __m256 b, __m256i* acc) {
    rq_avx2_st_f64(p, a, acc); rq_avx2_st_f64((double*)p + 8, b, acc);
}
RQ_TGT_AVX2 static inline void rq_avx2_st16_s32(void* p, __m256 a, __m256 b, __m256i* acc) {
    rq_avx2_st_s32(p, a, acc); rq_avx2_st_s32((int32_t*)p + 8, b, acc);
}
RQ_TGT_AVX2 static inline void rq_avx2_st16_f16(void* p, __m256 a, __m256 b, __m256i* acc) {
    (void)acc;
    _mm256_storeu_si256((__m256i*)p, _mm256_set_m128i(_mm256_cvtps_ph(b, RQ_RNE), _mm256_cvtps_ph(a, RQ_RNE)));
}
RQ_TGT_AVX2 static inline void rq_avx2_st16_bf16(void* p, __m256 a, __m256 b, __m256i* acc) {
    (void)acc;
    __m256i w = _mm256_packus_epi32(rq_avx2_bf16_bits(a), rq_avx2_bf16_bits(b));   /* a0-3 b0-3 | a4-7 b4-7 */
    _mm256_storeu_si256((__m256i*)p, _mm256_permute4x64_epi64(w, 0xD8));
}
/* 16 lanes as bytes in lane order; the s8 ones' values added to acc */
RQ_TGT_AVX2 static inline __m128i rq_avx2_pack16_s8(__m256 a, __m256 b, __m256i* acc) {
    __m256i qa = rq_avx2_q_s8(a), qb = rq_avx2_q_s8(b);
    acc[0] = _mm256_add_epi32(acc[0], qa);
    acc[1] = _mm256_add_epi32(acc[1], qb);
    __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(qa, qb), 0xD8);
    return _mm_packs_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
}
RQ_TGT_AVX2 static inline __m128i rq_avx2_pack16_u8(__m256 a, __m256 b) {
    __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(rq_avx2_q_u8(a), rq_avx2_q_u8(b)), 0xD8);
    return _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
}
RQ_TGT_AVX2 static inline void rq_avx2_st16_s8(void* p, __m256 a, __m256 b, __m256i* acc) {
    _mm_storeu_si128((__m128i*)p, rq_avx2_pack16_s8(a, b, acc));
}
RQ_TGT_AVX2 static inline void rq_avx2_st16_u8(void* p, __m256 a, __m256 b, __m256i* acc) {
    (void)acc;
    _mm_storeu_si128((__m128i*)p, rq_avx2_pack16_u8(a, b));
}
/* the same 16 lanes with streaming stores (p aligned to the store width) */
RQ_TGT_AVX2 static inline void rq_avx2_nt16_f32(void* p, __m256 a, __m256 b, __m256i* acc) {
    (void)acc; _mm256_stream_ps((float*)p, a); _mm256_stream_ps((float*)p + 8, b);
}
RQ_TGT_AVX2 static inline void rq_avx2_nt16_s32(void* p, __m256 a, __m256 b, __m256i* acc) {
    (void)acc;
    const __m256 hi = _mm256_set1_ps(2147483520.0f);
    _mm256_stream_si256((__m256i*)p, _mm256_cvtps_epi32(_mm256_min_ps(a, hi)));
    _mm256_stream_si256((__m256i*)p + 1, _mm256_cvtps_epi32(_mm256_min_ps(b, hi)));
}
RQ_TGT_AVX2 static inline void rq_avx2_nt16_f64(void* p, __m256 a, __m256 b, __m256i* acc) {
    rq_avx2_st16_f64(p, a, b, acc);
}
RQ_TGT_AVX2 static inline void rq_avx2_nt16_f16(void* p, __m256 a, __m256 b, __m256i* acc) {
    (void)acc;
    _mm256_stream_si256((__m256i*)p, _mm256_set_m128i(_mm256_cvtps_ph(b, RQ_RNE), _mm256_cvtps_ph(a, RQ_RNE)));
}
RQ_TGT_AVX2 static inline void rq_avx2_nt16_bf16(void* p, __m256 a, __m256 b, __m256i* acc) {
    (void)acc;
    __m256i w = _mm256_packus_epi32(rq_avx2_bf16_bits(a), rq_avx2_bf16_bits(b));
    _mm256_stream_si256((__m256i*)p, _mm256_permute4x64_epi64(w, 0xD8));
}
RQ_TGT_AVX2 static inline void rq_avx2_nt16_s8(void* p, __m256 a, __m256 b, __m256i* acc) {
    _mm_stream_si128((__m128i*)p, rq_avx2_pack16_s8(a, b, acc));
}
RQ_TGT_AVX2 static inline void rq_avx2_nt16_u8(void* p, __m256 a, __m256 b, __m256i* acc) {
    (void)acc;
    _mm_stream_si128((__m128i*)p, rq_avx2_pack16_u8(a, b));
}
/* rows of bytes: 32 values per store, the clamped int32 packed in two steps (the packs
   saturate as the clamps would; no accumulator: rows never carry compensation) and the
   128-bit-lane interleave of the packs undone with one dword permute */
#define RQ_AVX2_PACK32_s8 1
#define RQ_AVX2_PACK32_u8 1
#define RQ_AVX2_PACK32_f32 0
#define RQ_AVX2_PACK32_f64 0
#define RQ_AVX2_PACK32_f16 0
#define RQ_AVX2_PACK32_bf16 0
#define RQ_AVX2_PACK32_s32 0
RQ_TGT_AVX2 static inline void rq_avx2_st32_s8(void* p, const __m256 v[4]) {
    const __m256 hi = _mm256_set1_ps(127.0f);
    __m256i a = _mm256_packs_epi32(_mm256_cvtps_epi32(_mm256_min_ps(v[0], hi)),
                                   _mm256_cvtps_epi32(_mm256_min_ps(v[1], hi)));
    __m256i b = _mm256_packs_epi32(_mm256_cvtps_epi32(_mm256_min_ps(v[2], hi)),
                                   _mm256_cvtps_epi32(_mm256_min_ps(v[3], hi)));
    __m256i q = _mm256_packs_epi16(a, b);
    _mm256_storeu_si256((__m256i*)p,
                        _mm256_permutevar8x32_epi32(q, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}
RQ_TGT_AVX2 static inline void rq_avx2_st32_u8(void* p, const __m256 v[4]) {
    __m256i a = _mm256_packs_epi32(rq_avx2_q_u8(v[0]), rq_avx2_q_u8(v[1]));
    __m256i b = _mm256_packs_epi32(rq_avx2_q_u8(v[2]), rq_avx2_q_u8(v[3]));
    __m256i q = _mm256_packus_epi16(a, b);
    _mm256_storeu_si256((__m256i*)p,
                        _mm256_permutevar8x32_epi32(q, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}
#define RQ_AVX2_ST32_NONE(DN)                                                                      \
    RQ_TGT_AVX2 static inline void rq_avx2_st32_##DN(void* p, const __m256 v[4]) { (void)p; (void)v; }
RQ_AVX2_ST32_NONE(f32) RQ_AVX2_ST32_NONE(f64) RQ_AVX2_ST32_NONE(f16) RQ_AVX2_ST32_NONE(bf16) RQ_AVX2_ST32_NONE(s32)
static const char rq_zero_row[64] __attribute__((aligned(64))) = {0};

/* arithmetic of one vector in the scalar code's order; vs/vd: the lanes' scales. Outside the
   pure mode every step runs, an absent one with its identity (rq_math_t holds them: zero
   points +0 subtracted and -0 added, adj 1; the scales are 1 here): exact for every input,
   -0 and NaN payloads included. A branch a step would stay in the loops, which a body of
   every pair is too large for the compiler to unswitch. Only the sum, which reads dst,
   branches. */
#define RQ_AVX2_MATH(V, VS, VD, DN, D)                                                          \
    ({ __m256 w_ = (V);                                                                         \
       if (!PURE_) {                                                                            \
           w_ = _mm256_mul_ps(_mm256_sub_ps(w_, szp), (VS));                                    \
           if (hm) w_ = _mm256_add_ps(w_, _mm256_mul_ps(beta, rq_avx2_ld_##DN(D)));             \
           w_ = _mm256_mul_ps(_mm256_add_ps(_mm256_mul_ps(w_, (VD)), dzp), adj);                \
       }                                                                                        \
       w_; })
#define RQ_AVX2_FLAGS(PURE)                                                                     \
    const int PURE_ = (PURE);                                                                   \
    const __m256 szp = _mm256_set1_ps(m->szp), dzp = _mm256_set1_ps(m->dzp);                    \
    const __m256 beta = _mm256_set1_ps(m->beta), adj = _mm256_set1_ps(m->adj);                  \
    const int hs = !(PURE) && m->has_sscale, hd = !(PURE) && m->has_dscale;                     \
    const int hm = !(PURE) && m->has_sum;                                                       \
    const __m256i b8mask_ = _mm256_set1_epi32(m->b8mask);                                       \
    (void)szp; (void)dzp; (void)beta; (void)adj; (void)b8mask_; (void)hs; (void)hd;

/* One body for every pair of types: the source's loads and the destination's stores are the
   arms of a switch on the type codes (rq_math_t.scode / dcode, which the caller sets, so
   the compiler cannot clone the body per pair). Each arm handles a whole step (a tile's
   16 x 8 chunk, a row's 32 elements), and the two halves meet in registers: the loads'
   vectors are what the stores' arm converts. X(NAME, SIZE) is the step for one type; the
   s8 and u8 sources share the b8 load (its mask), the destinations keep an arm each. */
#define RQ_AVX2_SRC_SWITCH(ST, X)                                                               \
    switch (ST) {                                                                               \
    case RQ_CODE_F32: X(f32, 4) break;                                                          \
    case RQ_CODE_F64: X(f64, 8) break;                                                          \
    case RQ_CODE_F16: X(f16, 2) break;                                                          \
    case RQ_CODE_BF16: X(bf16, 2) break;                                                        \
    case RQ_CODE_S8: case RQ_CODE_U8: X(b8, 1) break;                                           \
    default: X(s32, 4) break;                                                                   \
    }
#define RQ_AVX2_DST_SWITCH(DT, X)                                                               \
    switch (DT) {                                                                               \
    case RQ_CODE_F32: X(f32, 4) break;                                                          \
    case RQ_CODE_F64: X(f64, 8) break;                                                          \
    case RQ_CODE_F16: X(f16, 2) break;                                                          \
    case RQ_CODE_BF16: X(bf16, 2) break;                                                        \
    case RQ_CODE_S8: X(s8, 1) break;                                                            \
    case RQ_CODE_U8: X(u8, 1) break;                                                            \
    default: X(s32, 4) break;                                                                   \
    }
/* element sizes by type code: f32, f64, f16, bf16, s8, u8, s32 */
static const int rq_avx2_size[7] = {4, 8, 2, 2, 1, 1, 4};
#endif
#endif
