/* AVX2 + F16C conversion tiles and rows, 8 elements wide, for CPUs without AVX-512
 * (RQ_AVX2_TILE, RQ_AVX2_ROW, RQ_AVX2_FOR). */
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
#define RQ_AVX2_B8VARS_b8                                                                       \
    const __m256i b8mask_ = _mm256_set1_epi32(m->b8mask);
#define RQ_AVX2_B8VARS_f32
#define RQ_AVX2_B8VARS_f64
#define RQ_AVX2_B8VARS_f16
#define RQ_AVX2_B8VARS_bf16
#define RQ_AVX2_B8VARS_s32
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

/* arithmetic of one vector in the scalar code's order; vs/vd: the lanes' scales */
#define RQ_AVX2_MATH(V, VS, VD, DN, D)                                                              \
    ({ __m256 w_ = (V);                                                                         \
       if (hz) w_ = _mm256_sub_ps(w_, szp);                                                     \
       if (hs) w_ = _mm256_mul_ps(w_, (VS));                                                    \
       if (hm) w_ = _mm256_add_ps(w_, _mm256_mul_ps(beta, rq_avx2_ld_##DN(D)));                     \
       if (hd) w_ = _mm256_mul_ps(w_, (VD));                                                    \
       if (hdz) w_ = _mm256_add_ps(w_, dzp);                                                    \
       if (ha) w_ = _mm256_mul_ps(w_, adj);                                                     \
       w_; })
#define RQ_AVX2_FLAGS(PURE)                                                                         \
    const __m256 szp = _mm256_set1_ps(m->szp), dzp = _mm256_set1_ps(m->dzp);                    \
    const __m256 beta = _mm256_set1_ps(m->beta), adj = _mm256_set1_ps(m->adj);                  \
    const int hz = !(PURE) && m->has_szp, hs = !(PURE) && m->has_sscale;                        \
    const int hm = !(PURE) && m->has_sum, hd = !(PURE) && m->has_dscale;                        \
    const int hdz = !(PURE) && m->has_dzp, ha = !(PURE) && m->has_adj;                          \
    (void)szp; (void)dzp; (void)beta; (void)adj;

/* The AVX2 tile: 16 rows x 8 columns per step, two 8x8 transposes, then per column the 16
   lanes as two vectors, converted and stored as 16 contiguous elements. Invalid lanes read
   a zero row and are masked to 0 after the arithmetic; the last columns go through a zeroed
   stack copy, so every load is a full vector. */
#define RQ_AVX2_TILE(SN, SSIZE, DN, DSIZE)                                                          \
RQ_TGT_AVX2 static inline __attribute__((always_inline)) void                                      \
rq_avx2_chunk_##SN##_##DN(const char* const rp[16], char* d, int64_t dstep, int nb, __m256 vs0,     \
        __m256 vs1, __m256 vd0, __m256 vd1, __m256 mk0, __m256 mk1, int masked,                 \
        const rq_math_t* m, __m256i acc[2], int nt, const int PURE) {                           \
    RQ_AVX2_FLAGS(PURE)                                                                             \
    RQ_AVX2_B8VARS_##SN                                                                         \
    __m256 lo[8], hi[8];                                                                        \
    _Pragma("GCC unroll 8")                                                                     \
    for (int a = 0; a < 8; a++) { lo[a] = rq_avx2_ld_##SN(rp[a]); hi[a] = rq_avx2_ld_##SN(rp[8 + a]); } \
    avx2_tr8x8_ps(lo);                                                                          \
    avx2_tr8x8_ps(hi);                                                                          \
    _Pragma("GCC unroll 8")                                                                     \
    for (int b = 0; b < 8; b++) {                                                               \
        if (b >= nb) break;                                                                     \
        char* q = d + b * dstep;                                                                \
        __m256 x = RQ_AVX2_MATH(lo[b], vs0, vd0, DN, q);                                            \
        __m256 y = RQ_AVX2_MATH(hi[b], vs1, vd1, DN, q + 8 * DSIZE);                                \
        if (masked) { x = _mm256_and_ps(x, mk0); y = _mm256_and_ps(y, mk1); }                   \
        if (nt) rq_avx2_nt16_##DN(q, x, y, acc); else rq_avx2_st16_##DN(q, x, y, acc);                  \
    }                                                                                           \
}                                                                                               \
RQ_TGT_AVX2 static inline __attribute__((always_inline)) void                                      \
rq_avx2_tile_##SN##_##DN(const char* src, const int64_t* soff, char* dst, int64_t dB, int64_t nbv,  \
        int64_t nbw, uint32_t lanes, const float* ssc, const float* dinv, const rq_math_t* m,   \
        int32_t* acc, int nt, const int PURE) {                                                 \
    const int64_t dstep = dB * DSIZE;                                                           \
    const __m256 vs0 = _mm256_loadu_ps(ssc), vs1 = _mm256_loadu_ps(ssc + 8);                    \
    const __m256 vd0 = _mm256_loadu_ps(dinv), vd1 = _mm256_loadu_ps(dinv + 8);                  \
    const __m256i li = _mm256_set_epi32(128, 64, 32, 16, 8, 4, 2, 1);                           \
    const __m256 mk0 = _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(                 \
        _mm256_set1_epi32((int)(lanes & 0xff)), li), li));                                      \
    const __m256 mk1 = _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(                 \
        _mm256_set1_epi32((int)(lanes >> 8 & 0xff)), li), li));                                 \
    const int masked = lanes != 0xffffu;                                                        \
    /* stream whole lines only: the 8 columns of a chunk are one contiguous run of lines     \
       (nChw16c), or each column is a line of its own (16 lanes of 4 bytes) */                 \
    const int snt = nt && !m->has_sum && ((uintptr_t)dst & 63) == 0                             \
                    && (dstep == 16 * DSIZE || (DSIZE == 4 && dstep % 64 == 0));                \
    __m256i vacc[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};                         \
    const char* rows[16];                                                                       \
    int64_t step[16];                                                                           \
    for (int a = 0; a < 16; a++) {                                                              \
        int ok = lanes >> a & 1u;                                                               \
        rows[a] = ok ? src + soff[a] * SSIZE : rq_zero_row;                                     \
        step[a] = ok ? SSIZE : 0;                                                               \
    }                                                                                           \
    int64_t b0 = 0;                                                                             \
    const char* rp[16];                                                                         \
    if (!masked) {                                                                              \
        for (; b0 + 8 <= nbv; b0 += 8) {                                                        \
            _Pragma("GCC unroll 16")                                                            \
            for (int a = 0; a < 16; a++) rp[a] = rows[a] + b0 * SSIZE;                          \
            rq_avx2_chunk_##SN##_##DN(rp, dst + b0 * dstep, dstep, 8, vs0, vs1, vd0, vd1, mk0, mk1, \
                                  0, m, vacc, snt, PURE);                                       \
        }                                                                                       \
    } else {                                                                                    \
        for (; b0 + 8 <= nbv; b0 += 8) {                                                        \
            for (int a = 0; a < 16; a++) rp[a] = rows[a] + b0 * step[a];                        \
            rq_avx2_chunk_##SN##_##DN(rp, dst + b0 * dstep, dstep, 8, vs0, vs1, vd0, vd1, mk0, mk1, \
                                  1, m, vacc, snt, PURE);                                       \
        }                                                                                       \
    }                                                                                           \
    if (b0 < nbv) {                                                                             \
        char tb[16][8 * SSIZE];                                                                 \
        int nb = (int)(nbv - b0);                                                               \
        memset(tb, 0, sizeof(tb));                                                              \
        for (int a = 0; a < 16; a++) {                                                          \
            if (step[a]) memcpy(tb[a], rows[a] + b0 * SSIZE, (size_t)nb * SSIZE);               \
            rp[a] = tb[a];                                                                      \
        }                                                                                       \
        rq_avx2_chunk_##SN##_##DN(rp, dst + b0 * dstep, dstep, nb, vs0, vs1, vd0, vd1, mk0, mk1,    \
                              masked, m, vacc, 0, PURE);                                        \
    }                                                                                           \
    for (int64_t b = nbv < 0 ? 0 : nbv; b < nbw; b++)                                           \
        memset(dst + b * dstep, 0, 16 * DSIZE);                                                 \
    if (acc) {                                                                                  \
        _mm256_storeu_si256((__m256i*)acc, _mm256_add_epi32(_mm256_loadu_si256((__m256i*)acc), vacc[0])); \
        _mm256_storeu_si256((__m256i*)(acc + 8), _mm256_add_epi32(_mm256_loadu_si256((__m256i*)(acc + 8)), vacc[1])); \
    }                                                                                           \
}                                                                                               \
RQ_TGT_AVX2 RQ_ENTRY void                                                                       \
rq_avx2_block_##SN##_##DN(const void* src, void* dst, const rq_block_t* k, const rq_math_t* m) { \
    const int pure = !(m->has_szp || m->has_sscale || m->has_sum || m->has_dscale               \
                       || m->has_dzp || m->has_adj);                                            \
    for (int64_t g = 0; g < k->ngroups; g++) {                                                  \
        int32_t* acc = k->acc ? k->acc + 16 * g : (int32_t*)0;                                  \
        char* d = (char*)dst + (g == k->ngroups - 1 ? k->last : 16 * g) * DSIZE;                \
        if (pure)                                                                               \
            rq_avx2_tile_##SN##_##DN((const char*)src, k->soff + 16 * g, d, k->dB, k->nbv, k->nbw,  \
                                 k->lanes[g], k->ssc + 16 * g, k->dinv + 16 * g, m, acc,        \
                                 (int)k->nt, 1);                                                \
        else                                                                                    \
            rq_avx2_tile_##SN##_##DN((const char*)src, k->soff + 16 * g, d, k->dB, k->nbv, k->nbw,  \
                                 k->lanes[g], k->ssc + 16 * g, k->dinv + 16 * g, m, acc,        \
                                 (int)k->nt, 0);                                                \
    }                                                                                           \
    if (k->nt) _mm_sfence();                                                                    \
}

/* Rows: a contiguous run of n elements, 32 per step (four vectors), the rest through a zeroed
   stack copy. Scales: one value (kI 0) or one per element (kI 1). */
#define RQ_AVX2_ROW(SN, SSIZE, DN, DSIZE)                                                           \
/* r <= 8 elements through zeroed stack copies, so the loads and stores are whole vectors */   \
RQ_TGT_AVX2 static inline __attribute__((always_inline)) void                                      \
rq_avx2_row_part_##SN##_##DN(const char* s, char* d, int64_t r, const float* ssc, int64_t sk,       \
        const float* dinv, int64_t dk, const rq_math_t* m, const int PURE) {                    \
    RQ_AVX2_FLAGS(PURE)                                                                             \
    RQ_AVX2_B8VARS_##SN                                                                         \
    __m256i acc = _mm256_setzero_si256();                                                       \
    char sb[8 * SSIZE], db[8 * DSIZE];                                                          \
    float fs[8], fd[8];                                                                         \
    memset(sb, 0, sizeof(sb)); memset(db, 0, sizeof(db));                                       \
    memset(fs, 0, sizeof(fs)); memset(fd, 0, sizeof(fd));                                       \
    memcpy(sb, s, (size_t)r * SSIZE);                                                           \
    if (hm) memcpy(db, d, (size_t)r * DSIZE);                                                   \
    __m256 vs = _mm256_set1_ps(hs ? ssc[0] : 1.0f), vd = _mm256_set1_ps(hd ? dinv[0] : 1.0f);   \
    if (hs && sk) { memcpy(fs, ssc, (size_t)r * 4); vs = _mm256_loadu_ps(fs); }                 \
    if (hd && dk) { memcpy(fd, dinv, (size_t)r * 4); vd = _mm256_loadu_ps(fd); }                 \
    __m256 v = RQ_AVX2_MATH(rq_avx2_ld_##SN(sb), vs, vd, DN, db);                                       \
    rq_avx2_st_##DN(db, v, &acc);                                                                   \
    memcpy(d, db, (size_t)r * DSIZE);                                                           \
}                                                                                               \
RQ_TGT_AVX2 static inline __attribute__((always_inline)) void                                      \
rq_avx2_row_body_##SN##_##DN(const char* s, char* d, int64_t n, const float* ssc, int64_t sk,       \
        const float* dinv, int64_t dk, const rq_math_t* m, const int PURE) {                    \
    RQ_AVX2_FLAGS(PURE)                                                                             \
    RQ_AVX2_B8VARS_##SN                                                                         \
    __m256i acc = _mm256_setzero_si256();                                                       \
    __m256i acc2[2];                 /* the s8 streaming store's (rows carry no sums) */        \
    const __m256 vs1 = _mm256_set1_ps(hs ? ssc[0] : 1.0f), vd1 = _mm256_set1_ps(hd ? dinv[0] : 1.0f); \
    int64_t j = 0;                                                                              \
    acc2[0] = acc2[1] = acc;                                                                    \
    /* streaming (large outputs of 1, 2 or 4 bytes): up to the first 64-byte boundary         \
       through the partial path, then 16 elements per step into aligned streaming stores */   \
    if (m->nt && !hm && DSIZE <= 4 && n >= 64 && ((uintptr_t)d % DSIZE) == 0) {                 \
        while (j < n && ((uintptr_t)(d + j * DSIZE) & 63)) {                                    \
            int64_t r = (int64_t)((64 - ((uintptr_t)(d + j * DSIZE) & 63)) / DSIZE);            \
            if (r > 8) r = 8;                                                                   \
            if (r > n - j) r = n - j;                                                           \
            rq_avx2_row_part_##SN##_##DN(s + j * SSIZE, d + j * DSIZE, r, ssc + (sk ? j : 0), sk,   \
                                     dinv + (dk ? j : 0), dk, m, PURE);                         \
            j += r;                                                                             \
        }                                                                                       \
        for (; j + 16 <= n; j += 16) {                                                          \
            __m256 vs0 = vs1, vs_ = vs1, vd0 = vd1, vd_ = vd1;                                  \
            if (hs && sk) { vs0 = _mm256_loadu_ps(ssc + j); vs_ = _mm256_loadu_ps(ssc + j + 8); } \
            if (hd && dk) { vd0 = _mm256_loadu_ps(dinv + j); vd_ = _mm256_loadu_ps(dinv + j + 8); } \
            __m256 x = RQ_AVX2_MATH(rq_avx2_ld_##SN(s + j * SSIZE), vs0, vd0, DN, d);                   \
            __m256 y = RQ_AVX2_MATH(rq_avx2_ld_##SN(s + (j + 8) * SSIZE), vs_, vd_, DN, d);             \
            rq_avx2_nt16_##DN(d + j * DSIZE, x, y, acc2);                                           \
        }                                                                                       \
        _mm_sfence();                                                                           \
    }                                                                                           \
    for (; j + 32 <= n; j += 32) {                                                              \
        __m256 v4[4];                                                                           \
        _Pragma("GCC unroll 4")                                                                 \
        for (int u = 0; u < 4; u++) {                                                           \
            const int64_t e = j + 8 * u;                                                        \
            __m256 vs = vs1, vd = vd1;                                                          \
            if (hs && sk) vs = _mm256_loadu_ps(ssc + e);                                        \
            if (hd && dk) vd = _mm256_loadu_ps(dinv + e);                                       \
            v4[u] = RQ_AVX2_MATH(rq_avx2_ld_##SN(s + e * SSIZE), vs, vd, DN, d + e * DSIZE);            \
            if (!RQ_AVX2_PACK32_##DN) rq_avx2_st_##DN(d + e * DSIZE, v4[u], &acc);                      \
        }                                                                                       \
        if (RQ_AVX2_PACK32_##DN) rq_avx2_st32_##DN(d + j * DSIZE, v4);                                  \
    }                                                                                           \
    for (; j < n; j += 8) {                                                                     \
        const int64_t r = n - j < 8 ? n - j : 8;                                                \
        rq_avx2_row_part_##SN##_##DN(s + j * SSIZE, d + j * DSIZE, r, ssc + (sk ? j : 0), sk,       \
                                 dinv + (dk ? j : 0), dk, m, PURE);                             \
    }                                                                                           \
}                                                                                               \
RQ_TGT_AVX2 RQ_ENTRY void                                                                       \
rq_avx2_row_##SN##_##DN(const void* s, void* d, int64_t n, const float* ssc, int64_t sk,         \
                        const float* dinv, int64_t dk, const rq_math_t* m) {                    \
    if (!(m->has_szp || m->has_sscale || m->has_sum || m->has_dscale || m->has_dzp || m->has_adj)) \
        rq_avx2_row_body_##SN##_##DN((const char*)s, (char*)d, n, ssc, sk, dinv, dk, m, 1);         \
    else                                                                                        \
        rq_avx2_row_body_##SN##_##DN((const char*)s, (char*)d, n, ssc, sk, dinv, dk, m, 0);         \
}

#define RQ_AVX2_FOR(SN, SSIZE)                                                                     \
    RQ_AVX2_TILE(SN, SSIZE, f32, 4) RQ_AVX2_TILE(SN, SSIZE, f64, 8) RQ_AVX2_TILE(SN, SSIZE, f16, 2)        \
    RQ_AVX2_TILE(SN, SSIZE, bf16, 2) RQ_AVX2_TILE(SN, SSIZE, s8, 1) RQ_AVX2_TILE(SN, SSIZE, u8, 1)         \
    RQ_AVX2_TILE(SN, SSIZE, s32, 4)                                                                 \
    RQ_AVX2_ROW(SN, SSIZE, f32, 4) RQ_AVX2_ROW(SN, SSIZE, f64, 8) RQ_AVX2_ROW(SN, SSIZE, f16, 2)           \
    RQ_AVX2_ROW(SN, SSIZE, bf16, 2) RQ_AVX2_ROW(SN, SSIZE, s8, 1) RQ_AVX2_ROW(SN, SSIZE, u8, 1)            \
    RQ_AVX2_ROW(SN, SSIZE, s32, 4)
#endif
#endif
