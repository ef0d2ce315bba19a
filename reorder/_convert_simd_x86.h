/* The x86 conversion kernels: AVX-512 and AVX2 building blocks, and the macros that write each
 * kernel family for every pair of element types.
 *
 * A tile call converts one "lane group" of 16 destination-contiguous elements (lanes a) along
 * a run of a source-contiguous node B (columns b):
 *
 *     dst[b*dB + a] = convert(math(src[soff[a] + b]))      a < 16, b < nbv, lane a valid
 *     dst[b*dB + a] = 0                                    invalid lanes, and nbv <= b < nbw
 *
 * 16 source rows of up to 16 columns are loaded (masked), transposed in registers to 16
 * destination vectors, and converted there, so every load and store is a full vector. The
 * arithmetic is that of the scalar kernels in _convert.pyx, in the same order, with the same
 * saturation (NaN -> the bound tested first) and round half to even, so both paths write the
 * same bytes. acc (s8 destinations) receives per-lane sums of the stored values.
 *
 * Each family is instantiated in its own file, so that a build compiles them side by side:
 *
 *     _convert_tiles_float.c   AVX-512 tiles from f32, f64, f16 and bf16 sources
 *     _convert_tiles_int.c     AVX-512 tiles from s8, u8 and s32 sources
 *     _convert_tiles_bf16hw.c  AVX-512 tiles to bf16 through AVX512-BF16's own rounding
 *     _convert_avx2.c          the tiles and rows 8 elements wide, for CPUs without AVX-512
 *     _convert_rows.c          AVX-512 rows (the strided walk's contiguous runs)
 *     _convert_grids.c         AVX-512 grids (a block's short runs in one call)
 *     _convert_weights.c       int8 weights in 4i16o4i blocks (AVX-512 VBMI and VNNI)
 *
 * Their entry points are declared at the end; _convert_simd.h chooses among them at run time.
 * Built with __attribute__((target)), never with -march=native.
 */
#ifndef REORDER_CONVERT_SIMD_X86_H
#define REORDER_CONVERT_SIMD_X86_H
#include <string.h>
#include "_convert_args.h"
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define RQ_X86 1
/* A kernel's entry point: defined in its family's file, reached through the tables of
   _convert_simd.h, and not exported from the module. */
#define RQ_ENTRY __attribute__((visibility("hidden")))
#include <immintrin.h>
#include "_transpose_avx512.h"
#include "_transpose_avx2.h"
#define RQ_TGT __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
/* Tells the compiler that the pointers may have changed: a loop that says so each
   iteration reads its tables (lane offsets, scales) at displacements from them, where gcc
   would hoist the address of every entry out of the loop and spill them all (a reload from
   the stack before each load of a tile's rows; docs/kernels.md has the measurements). */
#define RQ_OPAQUE2(a, b) __asm__("" : "+r"(a), "+r"(b))
#define RQ_OPAQUE3(a, b, c) __asm__("" : "+r"(a), "+r"(b), "+r"(c))

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
#define rq_widen_f32(h) _mm512_setzero_ps()
#define rq_widen_f64(h) _mm512_setzero_ps()
#define rq_widen_s8(h) _mm512_setzero_ps()
#define rq_widen_u8(h) _mm512_setzero_ps()
#define rq_widen_s32(h) _mm512_setzero_ps()
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
RQ_TGT static inline __m512 rq_ld_s32(const void* p, __mmask16 k) {
    return _mm512_cvtepi32_ps(_mm512_maskz_loadu_epi32(k, p));
}

/* ---- stores: f32 vector -> 16 elements; lanes outside k are written as 0 ---------------- */
#define RQ_RNE (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)
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
   pack g holds column b's lanes 4g..4g+3; two rounds of unpacks gather the packs' dwords. */
#define RQ_TR8(DN)                                                                              \
RQ_TGT static inline __attribute__((always_inline)) void                                        \
rq_tr8_##DN(const __m512 r[16], __m512i u[4]) {                                                 \
    const __m512i cols = _mm512_broadcast_i32x4(                                                \
        _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));                   \
    __m512i z[4], t[4];                                                                         \
    for (int g = 0; g < 4; g++) z[g] = _mm512_shuffle_epi8(rq_pack4_##DN(r + 4 * g), cols);     \
    t[0] = _mm512_unpacklo_epi32(z[0], z[1]);                                                   \
    t[1] = _mm512_unpackhi_epi32(z[0], z[1]);                                                   \
    t[2] = _mm512_unpacklo_epi32(z[2], z[3]);                                                   \
    t[3] = _mm512_unpackhi_epi32(z[2], z[3]);                                                   \
    u[0] = _mm512_unpacklo_epi64(t[0], t[2]);                                                   \
    u[1] = _mm512_unpackhi_epi64(t[0], t[2]);                                                   \
    u[2] = _mm512_unpacklo_epi64(t[1], t[3]);                                                   \
    u[3] = _mm512_unpackhi_epi64(t[1], t[3]);                                                   \
}                                                                                               \
/* the tile's columns b to d + b * step (streamed when nt: step 16, d 64-byte aligned) */       \
RQ_TGT static inline __attribute__((always_inline)) void                                        \
rq_tr8_put_##DN(const __m512 r[16], char* d, int64_t step, int nt) {                            \
    __m512i u[4];                                                                               \
    rq_tr8_##DN(r, u);                                                                          \
    if (step == 16) {                                                                           \
        __m512i v[4];                                                                           \
        rq_tr4x4_lanes(u, v);                                                                   \
        rq_put4(d, v, nt && ((uintptr_t)d & 63) == 0);                                          \
        return;                                                                                 \
    }                                                                                           \
    for (int j = 0; j < 4; j++) {                                                               \
        _mm_storeu_si128((__m128i*)(d + j * step), _mm512_castsi512_si128(u[j]));               \
        _mm_storeu_si128((__m128i*)(d + (4 + j) * step), _mm512_extracti32x4_epi32(u[j], 1));   \
        _mm_storeu_si128((__m128i*)(d + (8 + j) * step), _mm512_extracti32x4_epi32(u[j], 2));   \
        _mm_storeu_si128((__m128i*)(d + (12 + j) * step), _mm512_extracti32x4_epi32(u[j], 3));  \
    }                                                                                           \
}
RQ_TR8(s8)
RQ_TR8(u8)
#define RQ_TR8_s8 rq_tr8_put_s8
#define RQ_TR8_u8 rq_tr8_put_u8
#define RQ_TR8U_s8 rq_tr8_s8
#define RQ_TR8U_u8 rq_tr8_u8
#define RQ_TR8_NONE(r, d, step, nt) ((void)(r), (void)(d), (void)(step), (void)(nt))
#define RQ_TR8U_NONE(r, u) ((void)(r), (void)(u))
#define RQ_TR8U_f32 RQ_TR8U_NONE
#define RQ_TR8U_f64 RQ_TR8U_NONE
#define RQ_TR8U_f16 RQ_TR8U_NONE
#define RQ_TR8U_bf16 RQ_TR8U_NONE
#define RQ_TR8U_bf16hw RQ_TR8U_NONE
#define RQ_TR8U_s32 RQ_TR8U_NONE
#define RQ_TR8_f32 RQ_TR8_NONE
#define RQ_TR8_f64 RQ_TR8_NONE
#define RQ_TR8_f16 RQ_TR8_NONE
#define RQ_TR8_bf16 RQ_TR8_NONE
#define RQ_TR8_bf16hw RQ_TR8_NONE
#define RQ_TR8_s32 RQ_TR8_NONE
/* 1-byte types go through a byte transpose instead of the f32 one: RQ_B8 marks them, RQ_TR8
   converts and transposes a tile to them, RQ_WIDEN widens a register of them to f32 */
#define RQ_F32_f32 1
#define RQ_F32_f64 0
#define RQ_F32_f16 0
#define RQ_F32_bf16 0
#define RQ_F32_bf16hw 0
#define RQ_F32_s8 0
#define RQ_F32_u8 0
#define RQ_F32_s32 0
#define RQ_B8_s8 1
#define RQ_B8_u8 1
#define RQ_B8_f32 0
#define RQ_B8_f64 0
#define RQ_B8_f16 0
#define RQ_B8_bf16 0
#define RQ_B8_bf16hw 0
#define RQ_B8_s32 0
#define RQ_WIDEN_s8(x) _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(x))
#define RQ_WIDEN_u8(x) _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(x))
#define RQ_WIDEN_f32(x) _mm512_setzero_ps()
#define RQ_WIDEN_f64(x) _mm512_setzero_ps()
#define RQ_WIDEN_f16(x) _mm512_setzero_ps()
#define RQ_WIDEN_bf16(x) _mm512_setzero_ps()
#define RQ_WIDEN_s32(x) _mm512_setzero_ps()
/* RQ_TILE_MATH for source row A before the transpose: its lane's scales as scalars */
#define RQ_ROW_MATH(V, A) ({                                                                    \
        __m512 w_ = (V);                                                                        \
        if (hz) w_ = _mm512_sub_ps(w_, szp);                                                    \
        if (hs) w_ = _mm512_mul_ps(w_, _mm512_set1_ps(ssc[A]));                                 \
        if (hd) w_ = _mm512_mul_ps(w_, _mm512_set1_ps(dinv[A]));                                \
        if (hdz) w_ = _mm512_add_ps(w_, dzp);                                                   \
        if (ha) w_ = _mm512_mul_ps(w_, adj);                                                    \
        w_; })

/* arithmetic of one destination vector, in the order of the scalar code (no sum here) */
#define RQ_TILE_MATH(V) ({                                                                      \
        __m512 w_ = (V);                                                                        \
        if (hz) w_ = _mm512_sub_ps(w_, szp);                                                    \
        if (hs) w_ = _mm512_mul_ps(w_, vs);                                                     \
        if (hd) w_ = _mm512_mul_ps(w_, vd);                                                     \
        if (hdz) w_ = _mm512_add_ps(w_, dzp);                                                   \
        if (ha) w_ = _mm512_mul_ps(w_, adj);                                                    \
        w_; })
/* The arithmetic a body is compiled for: none, one src or dst scale alone (int8 activations
   in and out), a dst or src scale with a zero point (u8 activations out and in), or any
   (flags read at run time: their tests in unrolled loops cost more than the conversion).
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
#define RQ_CV_f16 rq_cv_f16
#define RQ_CV_bf16 rq_cv_bf16
#define RQ_CV_bf16hw rq_cv_bf16hw
#define RQ_CV_f32(v, k) _mm256_setzero_si256()
#define RQ_CV_f64(v, k) _mm256_setzero_si256()
#define RQ_CV_s8(v, k) _mm256_setzero_si256()
#define RQ_CV_u8(v, k) _mm256_setzero_si256()
#define RQ_CV_s32(v, k) _mm256_setzero_si256()
/* 16-bit destinations: converted before the transpose (tr16x16_w16), and streamed as 64-byte
   lines when large. RQ_PACK2: two source rows -> one register of 16-bit outputs, row x in
   words 0..15 and y in 16..31 (the layout tr16x16_w16 takes); 0 for other destinations. */
#define RQ_W16_f16 1
#define RQ_W16_bf16 1
#define RQ_W16_bf16hw 1
#define RQ_W16_f32 0
#define RQ_W16_f64 0
#define RQ_W16_s8 0
#define RQ_W16_u8 0
#define RQ_W16_s32 0
#define RQ_PACK2_CV(ST, x, y)                                                                   \
    _mm512_inserti64x4(_mm512_castsi256_si512(RQ_CV_##ST((x), 0xffff)), RQ_CV_##ST((y), 0xffff), 1)
#define RQ_PACK2_f16(x, y) RQ_PACK2_CV(f16, x, y)
#define RQ_PACK2_bf16(x, y) RQ_PACK2_CV(bf16, x, y)
#define RQ_PACK2_bf16hw(x, y) ((__m512i)_mm512_cvtne2ps_pbh((y), (x)))
#define RQ_PACK2_f32(x, y) ((void)(x), (void)(y), _mm512_setzero_si512())
#define RQ_PACK2_f64(x, y) ((void)(x), (void)(y), _mm512_setzero_si512())
#define RQ_PACK2_s8(x, y) ((void)(x), (void)(y), _mm512_setzero_si512())
#define RQ_PACK2_u8(x, y) ((void)(x), (void)(y), _mm512_setzero_si512())
#define RQ_PACK2_s32(x, y) ((void)(x), (void)(y), _mm512_setzero_si512())
/* arithmetic of one destination vector (same order as the scalar code), then the store */
#define RQ_TILE_OUT(DN, ST, V, D)                                                               \
    do {                                                                                        \
        __m512 v_ = (V);                                                                        \
        char* d_ = (D);                                                                         \
        if (hz) v_ = _mm512_sub_ps(v_, szp);                                                    \
        if (hs) v_ = _mm512_mul_ps(v_, vs);                                                     \
        if (hm) v_ = _mm512_add_ps(v_, _mm512_mul_ps(beta, rq_ld_##DN(d_, 0xffff)));            \
        if (hd) v_ = _mm512_mul_ps(v_, vd);                                                     \
        if (hdz) v_ = _mm512_add_ps(v_, dzp);                                                   \
        if (ha) v_ = _mm512_mul_ps(v_, adj);                                                    \
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
/* the first `n` lane groups from g all valid */
static inline int rq_full_groups(const uint16_t* lanes, int64_t g, int64_t n) {
    uint16_t all = 0xffff;
    for (int64_t i = 0; i < n; i++) all &= lanes[g + i];
    return all == 0xffff;
}
/* whole chunks of columns, no padding columns, every lane of the position valid */
static inline int rq_whole(const rq_block_t* k) {
    return k->nbv == k->nbw && k->nbv > 0 && k->nbv % 16 == 0
           && rq_full_groups(k->lanes, 0, k->ngroups);
}
/* whether a whole position's lane groups go in pairs (16-bit outputs, the plan's choice), in
   fours (1-byte outputs, the plan's choice; no compensation sums, no sum with dst) or one at a
   time through the widening chunks (f32 outputs; 16-bit ones from scaled 1-byte sources) */
static inline int rq_pairs_fit(const rq_block_t* k) {
    return k->groups == 2 && k->ngroups % 2 == 0 && rq_whole(k);
}
static inline int rq_quads_fit(const rq_block_t* k, const rq_math_t* m) {
    return k->groups == 4 && k->ngroups % 4 == 0 && !k->acc && !m->has_sum && rq_whole(k);
}
static inline int rq_singles_fit(const rq_block_t* k) { return !k->acc && rq_whole(k); }
/* A position whose last group overlaps the one before (see rq_block_t), where the group
   bodies take it: the whole groups in one call of `fn`, the last group in another */
static inline void rq_block_split(rq_block_fn fn, const void* src, void* dst, const rq_block_t* k,
                                  const rq_math_t* m, int64_t dsize) {
    const int64_t g = k->ngroups - 1;
    rq_block_t head = *k, tail = *k;
    head.ngroups = g;
    head.last = 16 * (g - 1);
    tail.ngroups = tail.groups = 1;
    tail.last = 0;
    tail.soff += 16 * g;
    tail.lanes += g;
    tail.ssc += 16 * g;
    tail.dinv += 16 * g;
    tail.acc = k->acc ? k->acc + 16 * g : (int32_t*)0;
    fn(src, dst, &head, m);
    fn(src, (char*)dst + k->last * dsize, &tail, m);
}
#define RQ_SINGLES(SN, DN, DSIZE, MODE)                                                         \
    for (int64_t g = 0; g < ngroups; g++, soff += 16, ssc += 16, dinv += 16,                   \
                                     dst += 16 * DSIZE) {                                       \
        const __m512 vs = _mm512_loadu_ps(ssc), vd = _mm512_loadu_ps(dinv);                     \
        __m512i acc_ = _mm512_setzero_si512();                                                  \
        for (int64_t b0 = 0; b0 < nbv; b0 += 16) {                                              \
            char* d0_ = dst + b0 * dB * DSIZE;                                                  \
            if (RQ_W16_##SN)                                                                    \
                rq_w16f32_##SN##_##DN(src, soff, b0, d0_, dB * DSIZE, nt);                      \
            else                                                                                \
                rq_b8cols_##SN##_##DN(src, soff, b0, d0_, dB * DSIZE, nt, vs, vd, m, &acc_,     \
                                      (MODE));                                                  \
        }                                                                                       \
    }
/* the same chunks, the columns outermost: each dst row is written whole, in order */
#define RQ_SINGLES_COLS_FIRST(SN, DN, DSIZE, MODE)                                              \
    for (int64_t b0 = 0; b0 < nbv; b0 += 16)                                                    \
        for (int64_t g = 0; g < ngroups; g++) {                                                 \
            const __m512 vs = _mm512_loadu_ps(ssc + 16 * g), vd = _mm512_loadu_ps(dinv + 16 * g); \
            __m512i acc_ = _mm512_setzero_si512();                                              \
            char* d0_ = dst + (16 * g + b0 * dB) * DSIZE;                                       \
            if (RQ_W16_##SN)                                                                    \
                rq_w16f32_##SN##_##DN(src, soff + 16 * g, b0, d0_, dB * DSIZE, nt);             \
            else                                                                                \
                rq_b8cols_##SN##_##DN(src, soff + 16 * g, b0, d0_, dB * DSIZE, nt, vs, vd, m,   \
                                      &acc_, (MODE));                                           \
        }
#define RQ_QUADS(SN, DN, MODE)                                                                  \
    for (int64_t q = 0; q < nquads; q++, soff += 64, ssc += 64, dinv += 64, dst += 64)         \
        rq_tile4_##SN##_##DN(src, soff, dst, dB, nbv, ssc, dinv, m, nt, (MODE),                 \
                             q == nquads - 1 ? t4 : 48, (MODE) != RQ_ANY);
/* all lane groups of one outer position (see rq_block_t), the body compiled for MODE; 1-byte
   outputs four groups at a time and 16-bit ones two, where the plan asks */
#define RQ_TILE_GROUPS(SN, SSIZE, DN, DSIZE, ST, MODE)                                          \
    for (int64_t g = 0; g < k->ngroups; g++) {                                                  \
        int64_t b0 = 0;                                                                         \
        if (RQ_B8_##ST && k->groups == 4 && g + 4 <= k->ngroups && k->nbv >= 16 && !k->acc      \
                && !((MODE) == RQ_ANY && m->has_sum) && rq_full_groups(k->lanes, g, 4)) {       \
            b0 = rq_tile4_##SN##_##DN((const char*)src, k->soff + 16 * g,                       \
                                      (char*)dst + 16 * g, k->dB, k->nbv, k->ssc + 16 * g,      \
                                      k->dinv + 16 * g, m, (int)k->nt, MODE, 48, 0);            \
            for (int64_t e = g + 3; g < e; g++)                                                 \
                rq_tile_##SN##_##DN((const char*)src + b0 * SSIZE, k->soff + 16 * g,            \
                                    (char*)dst + 16 * g + b0 * k->dB, k->dB, k->nbv - b0,       \
                                    k->nbw - b0, 0xffff, k->ssc + 16 * g, k->dinv + 16 * g, m,  \
                                    (int32_t*)0, (int)k->nt, MODE);                             \
        }                                                                                       \
        if (RQ_W16_##ST && (MODE) == RQ_PURE && k->groups == 2 && g + 2 <= k->ngroups           \
                && k->nbv >= 16 && rq_full_groups(k->lanes, g, 2)) {                            \
            b0 = rq_tile2_##SN##_##DN((const char*)src, k->soff + 16 * g,                       \
                                      (char*)dst + 32 * g, k->dB, k->nbv, (int)k->nt);          \
            rq_tile_##SN##_##DN((const char*)src + b0 * SSIZE, k->soff + 16 * g,                \
                                (char*)dst + (16 * g + b0 * k->dB) * DSIZE, k->dB, k->nbv - b0, \
                                k->nbw - b0, 0xffff, k->ssc + 16 * g, k->dinv + 16 * g, m,      \
                                (int32_t*)0, (int)k->nt, MODE);                                 \
            g++;                                                                                \
        }                                                                                       \
        rq_tile_##SN##_##DN((const char*)src + b0 * SSIZE, k->soff + 16 * g,                    \
                            (char*)dst + (16 * g + b0 * k->dB) * DSIZE, k->dB, k->nbv - b0,     \
                            k->nbw - b0, k->lanes[g], k->ssc + 16 * g, k->dinv + 16 * g, m,     \
                            k->acc ? k->acc + 16 * g : (int32_t*)0, (int)k->nt, MODE);          \
    }
#define RQ_TILE(SN, SSIZE, DN, DSIZE) RQ_TILE_T(SN, SSIZE, DN, DSIZE, RQ_TGT, DN)
#define RQ_TILE_T(SN, SSIZE, DN, DSIZE, TGT, ST)                                               \
/* The common case of the 16-bit path below: all 16 rows valid, one row stride, dense        \
   output lines (nChw16c). Its own function, so that the loop keeps two row bases and a      \
   stride in registers instead of 16 pointers spilled beside the tile's other state        \
   (docs/int8.md has the measurements). */                                                    \
TGT static inline __attribute__((always_inline)) void                                          \
rq_rows16_put_##SN##_##DN(const char* p0, const char* p8, int64_t rs, char* d, int nt) {       \
    __m512i w[8];                                                                               \
    _Pragma("GCC unroll 4")                                                                     \
    for (int k = 0; k < 4; k++) {                                                               \
        w[k] = RQ_PACK2_##ST(rq_ld_##SN(p0 + 2 * k * rs, 0xffff),                               \
                             rq_ld_##SN(p0 + (2 * k + 1) * rs, 0xffff));                        \
        w[4 + k] = RQ_PACK2_##ST(rq_ld_##SN(p8 + 2 * k * rs, 0xffff),                           \
                                 rq_ld_##SN(p8 + (2 * k + 1) * rs, 0xffff));                    \
    }                                                                                           \
    tr16x16_w16(w);                                                                             \
    rq_put8(d, w, nt);                                                                          \
}                                                                                               \
/* Two chunks per step: each row is then read 128 bytes at a time, two whole lines. */        \
TGT static __attribute__((noinline)) void                                                      \
rq_rows16_##SN##_##DN(const char* p0, int64_t rs, char* d, int64_t nchunks, int nt) {          \
    const char* p8 = p0 + 8 * rs;                                                               \
    int64_t c = 0;                                                                              \
    for (; c + 2 <= nchunks; c += 2, p0 += 32 * SSIZE, p8 += 32 * SSIZE, d += 1024) {           \
        rq_rows16_put_##SN##_##DN(p0, p8, rs, d, nt);                                           \
        rq_rows16_put_##SN##_##DN(p0 + 16 * SSIZE, p8 + 16 * SSIZE, rs, d + 512, nt);           \
    }                                                                                           \
    if (c < nchunks) rq_rows16_put_##SN##_##DN(p0, p8, rs, d, nt);                              \
}                                                                                               \
/* Two lane groups of 16-bit outputs at once, full chunks of 16 columns, no arithmetic: a      \
   column's 2 x 16 words are one 64-byte line of its dst row (the same scheme as rq_tile4).     \
   Returns the columns done. */                                                                 \
TGT static inline __attribute__((always_inline)) int64_t                                        \
rq_tile2_##SN##_##DN(const char* src, const int64_t* soff, char* dst, int64_t dB, int64_t nbv,  \
                     int nt) {                                                                  \
    const int64_t dstep = dB * 2;                                                               \
    nt = nt && ((uintptr_t)dst & 63) == 0 && (dstep & 63) == 0;                                 \
    int64_t b0 = 0;                                                                             \
    for (; b0 + 16 <= nbv; b0 += 16) {                                                          \
        __m512i w[2][8];                                                                        \
        _Pragma("GCC unroll 2")                                                                 \
        for (int g = 0; g < 2; g++) {                                                           \
            _Pragma("GCC unroll 8")                                                             \
            for (int k = 0; k < 8; k++)                                                         \
                w[g][k] = RQ_PACK2_##ST(                                                        \
                    rq_ld_##SN(src + (soff[16 * g + 2 * k] + b0) * SSIZE, 0xffff),              \
                    rq_ld_##SN(src + (soff[16 * g + 2 * k + 1] + b0) * SSIZE, 0xffff));         \
            tr16x16_w16(w[g]);                                                                  \
        }                                                                                       \
        char* d0 = dst + b0 * dstep;                                                            \
        _Pragma("GCC unroll 8")                                                                 \
        for (int j = 0; j < 8; j++) {                                                           \
            /* w[g][j] holds columns 2j (low half) and 2j+1 (high half) of group g */          \
            const __m512i lo = _mm512_shuffle_i64x2(w[0][j], w[1][j], 0x44);                    \
            const __m512i hi = _mm512_shuffle_i64x2(w[0][j], w[1][j], 0xee);                    \
            if (nt) {                                                                           \
                _mm512_stream_si512((__m512i*)(d0 + 2 * j * dstep), lo);                        \
                _mm512_stream_si512((__m512i*)(d0 + (2 * j + 1) * dstep), hi);                  \
            } else {                                                                            \
                _mm512_storeu_si512(d0 + 2 * j * dstep, lo);                                    \
                _mm512_storeu_si512(d0 + (2 * j + 1) * dstep, hi);                              \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
    return b0;                                                                                  \
}                                                                                               \
/* Four lane groups of 1-byte outputs at once, full chunks of 16 columns (every lane valid,     \
   no sum, no sums): a column's 4 x 16 lanes are 64 contiguous bytes of its dst row, stored     \
   whole, where single groups would leave each line to four calls. t4: the fourth group's      \
   place in the column, 48, or less where it overlaps the third (see rq_block_t): the first     \
   48 bytes then go under a mask and its 16 at t4. common: the scales are one value each       \
   (rq_block_t), held in a register instead of one broadcast load a row. Returns the columns   \
   done. */                                                                                     \
TGT static inline __attribute__((always_inline)) int64_t                                        \
rq_tile4_##SN##_##DN(const char* src, const int64_t* soff, char* dst, int64_t dB, int64_t nbv,  \
        const float* ssc, const float* dinv, const rq_math_t* m, int nt, const int MODE,        \
        int64_t t4, const int common) {                                                         \
    RQ_MODE_FLAGS(MODE)                                                                         \
    const __m512 szp = _mm512_set1_ps(m->szp), dzp = _mm512_set1_ps(m->dzp);                    \
    const __m512 adj = _mm512_set1_ps(m->adj);                                                  \
    const __m512 vs = _mm512_set1_ps(ssc[0]), vd = _mm512_set1_ps(dinv[0]);                     \
    (void)hm;                                                                                   \
    nt = nt && t4 == 48 && ((uintptr_t)dst & 63) == 0 && (dB & 63) == 0;                       \
    int64_t b0 = 0;                                                                             \
    for (; b0 + 16 <= nbv; b0 += 16) {                                                          \
        RQ_OPAQUE3(soff, ssc, dinv);                                                            \
        __m512i u[4][4];                                                                        \
        _Pragma("GCC unroll 4")                                                                 \
        for (int g = 0; g < 4; g++) {                                                           \
            __m512 r[16];                                                                       \
            _Pragma("GCC unroll 16")                                                            \
            for (int a = 0; a < 16; a++)                                                        \
                r[a] = common ? RQ_TILE_MATH(rq_ld_##SN(src + (soff[16 * g + a] + b0) * SSIZE,  \
                                                        0xffff))                                \
                              : RQ_ROW_MATH(rq_ld_##SN(src + (soff[16 * g + a] + b0) * SSIZE,   \
                                                       0xffff), 16 * g + a);                    \
            RQ_TR8U_##ST(r, u[g]);                                                              \
        }                                                                                       \
        _Pragma("GCC unroll 4")                                                                 \
        for (int j = 0; j < 4; j++) {                                                           \
            const __m512i a4[4] = {u[0][j], u[1][j], u[2][j], u[3][j]};                         \
            __m512i v[4];                                                                       \
            rq_tr4x4_lanes(a4, v);                                                              \
            _Pragma("GCC unroll 4")                                                             \
            for (int k = 0; k < 4; k++) {                                                       \
                char* d = dst + (b0 + 4 * k + j) * dB;                                          \
                if (nt) {                                                                       \
                    _mm512_stream_si512((__m512i*)d, v[k]);                                     \
                } else if (t4 == 48) {                                                          \
                    _mm512_storeu_si512(d, v[k]);                                               \
                } else {                                                                        \
                    /* the fourth group overlaps the third: nothing past its last lane */      \
                    _mm512_mask_storeu_epi8(d, 0xffffffffffffull, v[k]);                        \
                    _mm_storeu_si128((__m128i*)(d + t4), _mm512_extracti32x4_epi32(v[k], 3));   \
                }                                                                               \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
    return b0;                                                                                  \
}                                                                                               \
/* One chunk of 16 columns of 16 valid lanes, 16-bit sources to f32 (no arithmetic): the        \
   words transposed first, two rows a register (24 permutes where the f32 transpose takes 64    \
   shuffles), then each column widened; column b to d0 + b * dstep */                           \
TGT static inline __attribute__((always_inline)) void                                           \
rq_w16f32_##SN##_##DN(const char* src, const int64_t* soff, int64_t b0, char* d0,               \
                      int64_t dstep, int nt) {                                                  \
    __m512i w[8];                                                                               \
    _Pragma("GCC unroll 8")                                                                     \
    for (int k = 0; k < 8; k++)                                                                 \
        w[k] = _mm512_inserti64x4(                                                              \
            _mm512_castsi256_si512(_mm256_loadu_si256(                                          \
                (const __m256i*)(src + (soff[2 * k] + b0) * SSIZE))),                           \
            _mm256_loadu_si256((const __m256i*)(src + (soff[2 * k + 1] + b0) * SSIZE)), 1);     \
    tr16x16_w16(w);                                                                             \
    const int st = nt && ((uintptr_t)d0 & 63) == 0 && (dstep & 63) == 0;                        \
    _Pragma("GCC unroll 8")                                                                     \
    for (int j = 0; j < 8; j++) {                                                               \
        const __m512 lo = rq_widen_##SN(_mm512_castsi512_si256(w[j]));                          \
        const __m512 hi = rq_widen_##SN(_mm512_extracti64x4_epi64(w[j], 1));                    \
        if (st) {                                                                               \
            _mm512_stream_ps((float*)(d0 + 2 * j * dstep), lo);                                 \
            _mm512_stream_ps((float*)(d0 + (2 * j + 1) * dstep), hi);                           \
        } else {                                                                                \
            _mm512_storeu_ps((float*)(d0 + 2 * j * dstep), lo);                                 \
            _mm512_storeu_ps((float*)(d0 + (2 * j + 1) * dstep), hi);                           \
        }                                                                                       \
    }                                                                                           \
}                                                                                               \
/* One chunk of 16 columns of 16 valid lanes, 1-byte sources: the byte transpose first, then    \
   each column widened, the arithmetic of MODE (lane scales vs, vd) and stored to d0 + b *      \
   dstep, adding s8 outputs to *pacc */                                                         \
TGT static inline __attribute__((always_inline)) void                                           \
rq_b8cols_##SN##_##DN(const char* src, const int64_t* soff, int64_t b0, char* d0,               \
                      int64_t dstep, int nt, const __m512 vs, const __m512 vd,                  \
                      const rq_math_t* m, __m512i* pacc, const int MODE) {                      \
    RQ_MODE_FLAGS(MODE)                                                                         \
    const __m512 szp = _mm512_set1_ps(m->szp), dzp = _mm512_set1_ps(m->dzp);                    \
    const __m512 beta = _mm512_set1_ps(m->beta), adj = _mm512_set1_ps(m->adj);                  \
    const __mmask16 kl = 0xffff;                                                                \
    __m512i vacc = *pacc;                                                                       \
    __m256i y[8];                                                                               \
    _Pragma("GCC unroll 8")                                                                     \
    for (int a = 0; a < 8; a++)                                                                 \
        y[a] = _mm256_inserti128_si256(                                                         \
            _mm256_castsi128_si256(_mm_loadu_si128((const __m128i*)(src + soff[a] + b0))),      \
            _mm_loadu_si128((const __m128i*)(src + soff[a + 8] + b0)), 1);                      \
    avx2_tr16x16_epi8(y);                                                                       \
    int64_t step = dstep;                                                                       \
    RQ_OPAQUE2(d0, step);                                                                       \
    if (RQ_F32_##ST && nt && !hm && ((uintptr_t)d0 & 63) == 0 && (step & 63) == 0) {            \
        /* f32 columns are whole 64-byte lines: streamed */                                     \
        _Pragma("GCC unroll 8")                                                                 \
        for (int q = 0; q < 8; q++) {                                                           \
            _mm512_stream_ps((float*)(d0 + 2 * q * step), RQ_TILE_MATH(                         \
                RQ_WIDEN_##SN(_mm256_castsi256_si128(y[q]))));                                  \
            _mm512_stream_ps((float*)(d0 + (2 * q + 1) * step), RQ_TILE_MATH(                   \
                RQ_WIDEN_##SN(_mm256_extracti128_si256(y[q], 1))));                             \
        }                                                                                       \
        return;                                                                                 \
    }                                                                                           \
    _Pragma("GCC unroll 8")                                                                     \
    for (int q = 0; q < 8; q++) {                                                               \
        RQ_TILE_OUT(DN, ST, RQ_WIDEN_##SN(_mm256_castsi256_si128(y[q])), d0 + 2 * q * step);    \
        RQ_TILE_OUT(DN, ST, RQ_WIDEN_##SN(_mm256_extracti128_si256(y[q], 1)),                   \
                    d0 + (2 * q + 1) * step);                                                   \
    }                                                                                           \
    *pacc = vacc;                                                                               \
}                                                                                               \
TGT static inline __attribute__((always_inline)) void                                          \
rq_tile_##SN##_##DN(const void* src_, const int64_t* soff, void* dst_,                          \
        int64_t dB, int64_t nbv, int64_t nbw, uint32_t lanes, const float* ssc,                 \
        const float* dinv, const rq_math_t* m, int32_t* acc, int nt, const int MODE) {          \
    const char* src = (const char*)src_;                                                        \
    char* dst = (char*)dst_;                                                                    \
    const __mmask16 kl = (__mmask16)lanes;                                                      \
    const __m512 vs = _mm512_loadu_ps(ssc), vd = _mm512_loadu_ps(dinv);                         \
    const __m512 szp = _mm512_set1_ps(m->szp), dzp = _mm512_set1_ps(m->dzp);                    \
    const __m512 beta = _mm512_set1_ps(m->beta), adj = _mm512_set1_ps(m->adj);                  \
    RQ_MODE_FLAGS(MODE)                                                                         \
    const int64_t dstep = dB * DSIZE;                                                           \
    const char* rows[16];                                                                       \
    __m512i vacc = _mm512_setzero_si512();                                                      \
    __m512 r[16];                                                                               \
    for (int a = 0; a < 16; a++) rows[a] = src + soff[a] * SSIZE;                               \
    int64_t b0 = 0;                                                                             \
    if (MODE == RQ_PURE && RQ_W16_##ST && dstep == 32 && lanes == 0xffffu && nbv >= 16) {       \
        const int64_t rs = (soff[1] - soff[0]) * SSIZE;                                         \
        int uni = 1;                                                                            \
        for (int a = 2; a < 16; a++) uni &= rows[a] - rows[0] == a * rs;                        \
        if (uni) {                                                                              \
            b0 = nbv / 16 * 16;                                                                 \
            rq_rows16_##SN##_##DN(rows[0], rs, dst, nbv / 16, nt && ((uintptr_t)dst & 63) == 0); \
        }                                                                                       \
    }                                                                                           \
    for (; b0 + 16 <= nbv; b0 += 16) {          /* full chunks: fully unrolled */              \
        if (MODE == RQ_PURE && RQ_W16_##ST) {                                                   \
            /* 16-bit outputs: convert first, then transpose words, two rows per register      \
               (24 permutes where the f32 transpose takes 64 shuffles) */                      \
            __m512i w[8];                                                                       \
            const int64_t o = b0 * SSIZE;                                                       \
            if (lanes == 0xffffu) {                                                             \
                /* no per-lane tests: gcc makes them 32 taken branches per chunk */             \
                _Pragma("GCC unroll 8")                                                         \
                for (int k = 0; k < 8; k++)                                                     \
                    w[k] = RQ_PACK2_##ST(rq_ld_##SN(rows[2 * k] + o, 0xffff),                   \
                                         rq_ld_##SN(rows[2 * k + 1] + o, 0xffff));              \
            } else {                                                                            \
                _Pragma("GCC unroll 8")                                                         \
                for (int k = 0; k < 8; k++) {                                                   \
                    __m512 x = _mm512_setzero_ps(), y = _mm512_setzero_ps();                    \
                    if (lanes >> (2 * k) & 1u) x = rq_ld_##SN(rows[2 * k] + o, 0xffff);          \
                    if (lanes >> (2 * k + 1) & 1u) y = rq_ld_##SN(rows[2 * k + 1] + o, 0xffff);  \
                    w[k] = RQ_PACK2_##ST(x, y);                                                 \
                }                                                                               \
            }                                                                                   \
            tr16x16_w16(w);                                                                     \
            char* d0 = dst + b0 * dstep;                                                        \
            if (dstep == 32) {                                                                  \
                rq_put8(d0, w, nt && ((uintptr_t)d0 & 63) == 0);                                \
            } else {                                                                            \
                _Pragma("GCC unroll 8")                                                         \
                for (int j = 0; j < 8; j++) {                                                   \
                    _mm256_storeu_si256((__m256i*)(d0 + 2 * j * dstep),                         \
                                        _mm512_castsi512_si256(w[j]));                          \
                    _mm256_storeu_si256((__m256i*)(d0 + (2 * j + 1) * dstep),                   \
                                        _mm512_extracti64x4_epi64(w[j], 1));                    \
                }                                                                               \
            }                                                                                   \
            continue;                                                                           \
        }                                                                                       \
        if (MODE == RQ_PURE && RQ_W16_##SN && RQ_F32_##ST && lanes == 0xffffu) {                \
            rq_w16f32_##SN##_##DN(src, soff, b0, dst + b0 * dstep, dstep, nt);                  \
            continue;                                                                           \
        }                                                                                       \
        if (RQ_B8_##ST && lanes == 0xffffu && !hm && !acc) {                                    \
            /* 1-byte outputs: each source row converted, then packed and transposed as         \
               bytes (rq_tr8_put) instead of by the f32 transpose's 64 shuffles */              \
            _Pragma("GCC unroll 16")                                                            \
            for (int a = 0; a < 16; a++)                                                        \
                r[a] = RQ_ROW_MATH(rq_ld_##SN(rows[a] + b0 * SSIZE, 0xffff), a);                \
            char* d8 = dst + b0 * dstep;                                                        \
            int64_t step8 = dstep;                                                              \
            RQ_OPAQUE2(d8, step8);                                                              \
            RQ_TR8_##ST(r, d8, step8, nt);                                                      \
            continue;                                                                           \
        }                                                                                       \
        if (RQ_B8_##SN && lanes == 0xffffu) {                                                   \
            rq_b8cols_##SN##_##DN(src, soff, b0, dst + b0 * dstep, dstep, nt, vs, vd, m, &vacc, \
                                  MODE);                                                        \
            continue;                                                                           \
        }                                                                                       \
        if (lanes == 0xffffu) {                                                                 \
            _Pragma("GCC unroll 16")                                                            \
            for (int a = 0; a < 16; a++) r[a] = rq_ld_##SN(rows[a] + b0 * SSIZE, 0xffff);        \
        } else {                                                                                \
            _Pragma("GCC unroll 16")                                                            \
            for (int a = 0; a < 16; a++)                                                        \
                r[a] = (lanes >> a & 1u) ? rq_ld_##SN(rows[a] + b0 * SSIZE, 0xffff)              \
                                         : _mm512_setzero_ps();                                 \
        }                                                                                       \
        tr16x16(r);                                                                             \
        char* d0 = dst + b0 * dstep;                                                            \
        if (RQ_W16_##ST && nt && dstep == 32 && ((uintptr_t)d0 & 63) == 0 && !hm) {             \
            /* 16-bit outputs b, b+1 are one 64-byte line: stream it */                        \
            _Pragma("GCC unroll 8")                                                             \
            for (int b = 0; b < 16; b += 2) {                                                   \
                __m256i lo = RQ_CV_##ST(RQ_TILE_MATH(r[b]), kl);                                \
                __m256i hi = RQ_CV_##ST(RQ_TILE_MATH(r[b + 1]), kl);                            \
                _mm512_stream_si512((__m512i*)(d0 + b * 32),                                    \
                                    _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1));     \
            }                                                                                   \
            continue;                                                                           \
        }                                                                                       \
        if (RQ_F32_##ST && nt && !hm && ((uintptr_t)d0 & 63) == 0 && (dstep & 63) == 0) {       \
            _Pragma("GCC unroll 16")                                                            \
            for (int b = 0; b < 16; b++)                                                        \
                _mm512_stream_ps((float*)(d0 + b * dstep),                                      \
                                 _mm512_maskz_mov_ps(kl, RQ_TILE_MATH(r[b])));                  \
            continue;                                                                           \
        }                                                                                       \
        _Pragma("GCC unroll 16")                                                                \
        for (int b = 0; b < 16; b++) RQ_TILE_OUT(DN, ST, r[b], d0 + b * dstep);                 \
    }                                                                                           \
    if (b0 < nbv) {                             /* the last, partial chunk */                  \
        int nb = (int)(nbv - b0);                                                               \
        __mmask16 kb = (__mmask16)((1u << nb) - 1u);                                            \
        for (int a = 0; a < 16; a++)                                                            \
            r[a] = (lanes >> a & 1u) ? rq_ld_##SN(rows[a] + b0 * SSIZE, kb)                      \
                                     : _mm512_setzero_ps();                                     \
        tr16x16(r);                                                                             \
        for (int b = 0; b < nb; b++) RQ_TILE_OUT(DN, ST, r[b], dst + (b0 + b) * dstep);         \
    }                                                                                           \
    for (int64_t b = nbv < 0 ? 0 : nbv; b < nbw; b++)                                           \
        memset(dst + b * dstep, 0, 16 * DSIZE);                                                 \
    if (acc) {                                                                                  \
        __m512i old = _mm512_loadu_si512(acc);                                                  \
        _mm512_storeu_si512(acc, _mm512_add_epi32(old, vacc));                                  \
    }                                                                                           \
}                                                                                               \
/* Every lane group of a position in pairs (16-bit outputs, no arithmetic, see rq_pairs_fit):   \
   its own function, so that the loop keeps its few pointers in registers where the tile        \
   body's state spills them (docs/kernels.md). */                                               \
TGT static __attribute__((noinline)) void                                                       \
rq_pairs_##SN##_##DN(const char* src, const int64_t* soff, char* dst, int64_t dB,               \
                     int64_t npairs, int64_t nbv, int nt) {                                     \
    for (int64_t g = 0; g < npairs; g++, soff += 32, dst += 64)                                 \
        rq_tile2_##SN##_##DN(src, soff, dst, dB, nbv, nt);                                      \
}                                                                                               \
/* A position's lane groups one at a time, each chunk through rq_w16f32 / rq_b8cols (16-bit     \
   sources to f32; 1-byte ones to f32, and scaled to 16-bit outputs, which go in pairs when     \
   unscaled: see rq_singles_fit and docs/kernels.md), and four at a time through rq_tile4       \
   (1-byte outputs, see rq_quads_fit): their own functions, for the reason of rq_pairs; one     \
   loop per arithmetic mode, the tiles' mode constants */                                       \
TGT static __attribute__((noinline)) void                                                       \
rq_singles_##SN##_##DN(const char* src, const int64_t* soff, char* dst, int64_t dB,             \
                       int64_t ngroups, int64_t nbv, const float* ssc, const float* dinv,       \
                       const rq_math_t* m, int nt, int mode, int cols_first) {                  \
    /* rq_block's condition: 1-byte sources come unscaled only to f32 (to 16-bit outputs they  \
       go in pairs), so no such body is compiled */                                             \
    if (cols_first) {                                                                           \
        if (!RQ_B8_##SN || (RQ_F32_##DN && mode == RQ_PURE))                                    \
            RQ_SINGLES_COLS_FIRST(SN, DN, DSIZE, RQ_PURE)                                       \
        else if (mode == RQ_SSCALE) RQ_SINGLES_COLS_FIRST(SN, DN, DSIZE, RQ_SSCALE)             \
        else RQ_SINGLES_COLS_FIRST(SN, DN, DSIZE, RQ_SSCALE_ZP)                                 \
    }                                                                                           \
    else if (!RQ_B8_##SN || (RQ_F32_##DN && mode == RQ_PURE)) RQ_SINGLES(SN, DN, DSIZE, RQ_PURE) \
    else if (mode == RQ_SSCALE) RQ_SINGLES(SN, DN, DSIZE, RQ_SSCALE)                            \
    else RQ_SINGLES(SN, DN, DSIZE, RQ_SSCALE_ZP)                                                \
}                                                                                               \
TGT static __attribute__((noinline)) void                                                       \
rq_quads_##SN##_##DN(const char* src, const int64_t* soff, char* dst, int64_t dB,               \
                     int64_t nquads, int64_t nbv, const float* ssc, const float* dinv,          \
                     const rq_math_t* m, int nt, int mode, int64_t t4) {                        \
    if (mode == RQ_PURE) RQ_QUADS(SN, DN, RQ_PURE)                                              \
    else if (mode == RQ_DSCALE) RQ_QUADS(SN, DN, RQ_DSCALE)                                     \
    else if (mode == RQ_DSCALE_ZP) RQ_QUADS(SN, DN, RQ_DSCALE_ZP)                               \
    else if (RQ_B8_##SN && mode == RQ_SSCALE) RQ_QUADS(SN, DN, RQ_SSCALE)                       \
    else if (RQ_B8_##SN && mode == RQ_SSCALE_ZP) RQ_QUADS(SN, DN, RQ_SSCALE_ZP)                 \
    else RQ_QUADS(SN, DN, RQ_ANY)                                                               \
}                                                                                               \
/* bodies with a scale only where a side is 1-byte (the int8 activations): the others take      \
   RQ_ANY, which keeps the code size down */                                                    \
TGT RQ_ENTRY void rq_block_##SN##_##DN(const void* src, void* dst, const rq_block_t* k,           \
                                     const rq_math_t* m) {                                      \
    int mode = rq_mode(m, 0, 0);                                                                \
    if (((mode == RQ_SSCALE || mode == RQ_SSCALE_ZP) && !RQ_B8_##SN)                            \
            || ((mode == RQ_DSCALE || mode == RQ_DSCALE_ZP) && !RQ_B8_##ST))                    \
        mode = RQ_ANY;                                                                          \
    const char* s = (const char*)src;                                                           \
    char* d = (char*)dst;                                                                       \
    const int quads = RQ_B8_##ST && rq_quads_fit(k, m);                                         \
    if (k->last != 16 * (k->ngroups - 1) && !quads) {                                           \
        rq_block_split(rq_block_##SN##_##DN, src, dst, k, m, DSIZE);                            \
        return;                                                                                 \
    }                                                                                           \
    if (quads) {                                                                                \
        /* the last quad's fourth group in its column: 48, or where it overlaps the third; the  \
           fours' bodies with a scale hold it in a register: a scale per lane takes any */      \
        if (!k->common && mode != RQ_PURE) mode = RQ_ANY;                                       \
        rq_quads_##SN##_##DN(s, k->soff, d, k->dB, k->ngroups / 4, k->nbv, k->ssc, k->dinv, m,  \
                             (int)k->nt, mode, k->last - 16 * (k->ngroups - 4));                \
    } else if (rq_singles_fit(k)                                                                \
               && (RQ_W16_##SN ? RQ_F32_##ST && mode == RQ_PURE                                 \
                               : RQ_B8_##SN && (mode == RQ_SSCALE || mode == RQ_SSCALE_ZP       \
                                                || (RQ_F32_##ST && mode == RQ_PURE))            \
                                 && (RQ_F32_##ST || RQ_W16_##ST))) {                            \
        rq_singles_##SN##_##DN(s, k->soff, d, k->dB, k->ngroups, k->nbv, k->ssc, k->dinv, m,    \
                               (int)k->nt, mode, (int)k->cols_first);                           \
    } else if (RQ_W16_##ST && mode == RQ_PURE && rq_pairs_fit(k)) {                             \
        rq_pairs_##SN##_##DN(s, k->soff, d, k->dB, k->ngroups / 2, k->nbv, (int)k->nt);         \
    } else {                                                                                    \
        switch (mode) {                                                                         \
        case RQ_PURE: RQ_TILE_GROUPS(SN, SSIZE, DN, DSIZE, ST, RQ_PURE); break;                 \
        case RQ_SSCALE:                                                                         \
            if (RQ_B8_##SN) RQ_TILE_GROUPS(SN, SSIZE, DN, DSIZE, ST, RQ_SSCALE); break;         \
        case RQ_SSCALE_ZP:                                                                      \
            if (RQ_B8_##SN) RQ_TILE_GROUPS(SN, SSIZE, DN, DSIZE, ST, RQ_SSCALE_ZP); break;      \
        case RQ_DSCALE:                                                                         \
            if (RQ_B8_##ST) RQ_TILE_GROUPS(SN, SSIZE, DN, DSIZE, ST, RQ_DSCALE); break;         \
        case RQ_DSCALE_ZP:                                                                      \
            if (RQ_B8_##ST) RQ_TILE_GROUPS(SN, SSIZE, DN, DSIZE, ST, RQ_DSCALE_ZP); break;      \
        default: RQ_TILE_GROUPS(SN, SSIZE, DN, DSIZE, ST, RQ_ANY);                              \
        }                                                                                       \
    }                                                                                           \
    if (k->nt) _mm_sfence();                                                                    \
}

#define RQ_TILES_FOR(SN, SSIZE)                                                                \
    RQ_TILE(SN, SSIZE, f32, 4) RQ_TILE(SN, SSIZE, f64, 8) RQ_TILE(SN, SSIZE, f16, 2)           \
    RQ_TILE(SN, SSIZE, bf16, 2) RQ_TILE(SN, SSIZE, s8, 1) RQ_TILE(SN, SSIZE, u8, 1)            \
    RQ_TILE(SN, SSIZE, s32, 4)

#define RQ_TILE_BF16HW(SN, SSIZE) RQ_TILE_T(SN, SSIZE, bf16hw, 2, RQ_TGT_BF16, bf16hw)
#define rq_ld_bf16hw rq_ld_bf16

/* ---- int8 weights, `4i16o4i` inner blocks (OIhw4i16o4i, gOIhw4i16o4i, OIdhw4i16o4i, ...) ---
 * One outer position = 16 output channels o x 16 input channels i x S spatial points, where
 * the source holds, for each o, one contiguous row of 16*S elements ([i][s]) and the
 * destination is S blocks of 256 bytes [i/4][o][i%4]. Per o: the row is converted at full
 * vector width (scale per o), byte-transposed to [s][i] with vpermi2b, and parked in a
 * 256-byte-per-s buffer [s][o][i]. Then four s at a time are one 16x16 dword transpose whose
 * 16 result lines are the next 1024 destination bytes; the last S % 4 points are 16x4 dword
 * transposes. Compensation sums the stored lines with vpdpbusd (dword lane = o). Needs
 * AVX-512 VBMI and VNNI (every CPU with VBMI but Cannon Lake); S <= 12 (a row fits three
 * registers). */
#define RQ_TGT_VBMI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vbmi,avx512vnni")))

/* The row is converted 64 bytes at a time: four f32 vectors -> int32 -> packssdw/packsswb
   (packuswb for u8), which saturate exactly like the scalar clamp. The packs interleave the
   four vectors per 128-bit lane, so byte (vector v, element e) sits at (v/4)*64 + (e/4)*16 +
   (v%4)*4 + e%4; the vpermi2b index table already accounts for that. */
/* Four output lines l[j] at d + j*step; with `sum`, line j's four signed bytes per dword lane
   go into acc[j] (four sums, so the vpdpbusd do not form one latency chain). */
RQ_TGT_VBMI static inline __attribute__((always_inline)) void
rq_w_put4(const __m512i l[4], uint8_t* d, int64_t step, int sum, __m512i* acc) {
    for (int j = 0; j < 4; j++) {
        _mm512_storeu_si512(d + j * step, l[j]);
        if (sum) acc[j] = _mm512_dpbusd_epi32(acc[j], _mm512_set1_epi8(1), l[j]);
    }
}
/* A 4x4 transpose of 128-bit lanes: line j = lane j of a, b, c, e, in that order, stored at
   d + j*step; with `sum`, each line's four signed bytes per dword lane go into acc[j]. */
RQ_TGT_VBMI static inline __attribute__((always_inline)) void
rq_w_lines4(__m512i a, __m512i b, __m512i c, __m512i e, uint8_t* d, int64_t step, int sum,
            __m512i* acc) {
    const __m512i x0 = _mm512_shuffle_i32x4(a, b, 0x44), x1 = _mm512_shuffle_i32x4(a, b, 0xEE);
    const __m512i x2 = _mm512_shuffle_i32x4(c, e, 0x44), x3 = _mm512_shuffle_i32x4(c, e, 0xEE);
    const __m512i l[4] = {_mm512_shuffle_i32x4(x0, x2, 0x88), _mm512_shuffle_i32x4(x0, x2, 0xDD),
                          _mm512_shuffle_i32x4(x1, x3, 0x88), _mm512_shuffle_i32x4(x1, x3, 0xDD)};
    rq_w_put4(l, d, step, sum, acc);
}

/* 128-bit lane t (0-3) of P. The intrinsic takes an immediate; a loop index is one only
   once the loop is unrolled, which -O1 (the sanitizer build) does not do. */
RQ_TGT_VBMI static inline __attribute__((always_inline)) __m128i rq_w_lane(__m512i P, int t) {
    switch (t) {
    case 0: return _mm512_castsi512_si128(P);
    case 1: return _mm512_extracti32x4_epi32(P, 1);
    case 2: return _mm512_extracti32x4_epi32(P, 2);
    default: return _mm512_extracti32x4_epi32(P, 3);
    }
}

#define RQ_W(SN, SSIZE, DN)                                                                     \
RQ_TGT_VBMI static inline __attribute__((always_inline)) void                                   \
rq_w_body_##SN##_##DN(const void* src_, void* dst_, const rq_w_t* k, const rq_math_t* m,         \
                      const int64_t S, const int FULL, const int HS, const int HD, const int HA) { \
    const char* src = (const char*)src_;                                                        \
    uint8_t* dst = (uint8_t*)dst_;                                                              \
    __attribute__((aligned(64))) uint8_t buf[3 * 16 * 64];   /* [q][o][4 s x 16 i] */          \
    __attribute__((aligned(64))) uint8_t tb[3 * 16 * 16];    /* the last S % 4: [s][o][16 i] */ \
    const int64_t L = 16 * S, nvec = (L + 15) / 16, nvalid = k->nvi * S;                        \
    __mmask16 km[12];                                                                           \
    for (int v = 0; v < 12; v++) {                                                              \
        int64_t left = nvalid - 16 * v;                                                         \
        km[v] = left >= 16 ? (__mmask16)0xffff                                                  \
              : left <= 0 ? (__mmask16)0 : (__mmask16)((1u << left) - 1u);                      \
    }                                                                                           \
    const __m512 adj = _mm512_set1_ps(m->adj);                                                  \
    /* four sums, one per line of a lines4 group: one chain of 36 vpdpbusd per block was        \
       latency-bound */                                                                         \
    __m512i vacc[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(),                          \
                       _mm512_setzero_si512(), _mm512_setzero_si512()};                         \
    const __m512i i0 = _mm512_loadu_si512(k->idx), i1 = _mm512_loadu_si512(k->idx + 64);        \
    const __m512i i2 = _mm512_loadu_si512(k->idx + 128);                                        \
    /* HS, HD, HA: the scale flags as constants, or -1 to read them */                         \
    const int hs = HS >= 0 ? HS : m->has_sscale, hd = HD >= 0 ? HD : m->has_dscale;             \
    const int ha = HA >= 0 ? HA : m->has_adj;                                                   \
    const int64_t nvo = k->nvo, so = k->so;                                                     \
    int32_t* const kacc = k->acc;                                                               \
    for (int o = 0; o < 16; o++) {                                                              \
        __m512i R[3] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512()}; \
        if (o < nvo) {                                                                          \
            const char* row = src + (int64_t)o * so * SSIZE;                                    \
            const __m512 sc = _mm512_set1_ps(k->ssc[o]), di = _mm512_set1_ps(k->dinv[o]);       \
            _Pragma("GCC unroll 3")                                                             \
            for (int r = 0; r < 3; r++) {                                                       \
                if (4 * r >= nvec) break;                                                       \
                __m512i c0, c1, c2, c3;                                                         \
                RQ_W_VEC(SN, SSIZE, DN, c0, 4 * r + 0);                                         \
                RQ_W_VEC(SN, SSIZE, DN, c1, 4 * r + 1);                                         \
                RQ_W_VEC(SN, SSIZE, DN, c2, 4 * r + 2);                                         \
                RQ_W_VEC(SN, SSIZE, DN, c3, 4 * r + 3);                                         \
                R[r] = RQ_W_PACK_##DN(_mm512_packs_epi32(c0, c1), _mm512_packs_epi32(c2, c3));  \
            }                                                                                   \
        }                                                                                       \
        _Pragma("GCC unroll 3")                                                                 \
        for (int q = 0; q < 3; q++) {                                                           \
            if (4 * q >= S) break;                                                              \
            __m512i id = q == 0 ? i0 : q == 1 ? i1 : i2;                                        \
            __m512i P = _mm512_permutex2var_epi8(R[0], id, R[1]);                               \
            if (L > 128)                                                                        \
                P = _mm512_mask_permutexvar_epi8(P, _mm512_movepi8_mask(id), id, R[2]);         \
            if (4 * q + 4 <= S)                                                                 \
                _mm512_store_si512(buf + (q * 16 + o) * 64, P);                                 \
            else                                                                                \
                for (int t = 0; t < S - 4 * q; t++)                                             \
                    _mm_store_si128((__m128i*)(tb + (t * 16 + o) * 16),                         \
                                    rq_w_lane(P, t));                                           \
        }                                                                                       \
    }                                                                                           \
    /* four s at a time: 16 o registers of [s'][i4] dwords, a 16x16 dword transpose, and the  \
       16 result lines (s', i4) are the next 1024 contiguous destination bytes */              \
    for (int64_t q = 0; q < S / 4; q++) {                                                       \
        __m512i r[16], a[16], b[16];                                                            \
        _Pragma("GCC unroll 16")                                                                 \
        for (int o = 0; o < 16; o++) r[o] = _mm512_load_si512(buf + (q * 16 + o) * 64);       \
        _Pragma("GCC unroll 16")                                                                 \
        for (int i = 0; i < 8; i++) {                                                           \
            a[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);                           \
            a[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);                       \
        }                                                                                       \
        _Pragma("GCC unroll 16")                                                                 \
        for (int i = 0; i < 4; i++) {                                                           \
            b[4 * i + 0] = _mm512_unpacklo_epi64(a[4 * i], a[4 * i + 2]);                       \
            b[4 * i + 1] = _mm512_unpackhi_epi64(a[4 * i], a[4 * i + 2]);                       \
            b[4 * i + 2] = _mm512_unpacklo_epi64(a[4 * i + 1], a[4 * i + 3]);                   \
            b[4 * i + 3] = _mm512_unpackhi_epi64(a[4 * i + 1], a[4 * i + 3]);                   \
        }                                                                                       \
        uint8_t* d = dst + q * 1024;                                                            \
        _Pragma("GCC unroll 16")                                                                 \
        for (int c = 0; c < 4; c++) {                                                           \
            rq_w_lines4(b[c], b[4 + c], b[8 + c], b[12 + c], d + c * 64, 256, kacc != 0, vacc); \
        }                                                                                       \
    }                                                                                           \
    /* the last S % 4 points: a 16x4 dword transpose of four registers z[h] (rows 4h..4h+3 x   \
       their 4 dwords ib) in two levels of two-source permutes: x0, x1 (y0, y1) hold ib 0-1 and \
       2-3 of rows 0-7 (8-15), and line ib takes its rows 0-7 from x, 8-15 from y. Replaces    \
       16 narrow loads and 24 inserts and shuffles per point. */                               \
    for (int64_t s = S / 4 * 4; s < S; s++) {                                                   \
        const uint8_t* b = tb + (s % 4) * 256;                                                  \
        const __m512i t1a = _mm512_set_epi32(29,25,21,17,13,9,5,1,28,24,20,16,12,8,4,0);        \
        const __m512i t1b = _mm512_set_epi32(31,27,23,19,15,11,7,3,30,26,22,18,14,10,6,2);      \
        const __m512i t2a = _mm512_set_epi32(23,22,21,20,19,18,17,16,7,6,5,4,3,2,1,0);          \
        const __m512i t2b = _mm512_set_epi32(31,30,29,28,27,26,25,24,15,14,13,12,11,10,9,8);    \
        const __m512i z0 = _mm512_load_si512(b), z1 = _mm512_load_si512(b + 64);                \
        const __m512i z2 = _mm512_load_si512(b + 128), z3 = _mm512_load_si512(b + 192);         \
        const __m512i x0 = _mm512_permutex2var_epi32(z0, t1a, z1);                              \
        const __m512i x1 = _mm512_permutex2var_epi32(z0, t1b, z1);                              \
        const __m512i y0 = _mm512_permutex2var_epi32(z2, t1a, z3);                              \
        const __m512i y1 = _mm512_permutex2var_epi32(z2, t1b, z3);                              \
        const __m512i l[4] = {_mm512_permutex2var_epi32(x0, t2a, y0),                           \
                              _mm512_permutex2var_epi32(x0, t2b, y0),                           \
                              _mm512_permutex2var_epi32(x1, t2a, y1),                           \
                              _mm512_permutex2var_epi32(x1, t2b, y1)};                          \
        rq_w_put4(l, dst + s * 256, 64, kacc != 0, vacc);                                       \
    }                                                                                           \
    if (kacc)                                                                                   \
        _mm512_storeu_si512(kacc, _mm512_add_epi32(_mm512_loadu_si512(kacc),                    \
            _mm512_add_epi32(_mm512_add_epi32(vacc[0], vacc[1]),                                \
                             _mm512_add_epi32(vacc[2], vacc[3]))));                             \
}                                                                                               \
RQ_TGT_VBMI RQ_ENTRY void rq_w_##SN##_##DN(const void* src, void* dst, const rq_w_t* k,            \
                                         const rq_math_t* m) {                                  \
    /* FULL (all 16 i valid): plain loads, masked ones only for the last, padded I block;  \
       quantize()'s case (3x3, per-o scales alone) gets an unrolled copy with constant flags  \
       (docs/int8.md has the measurements). */                                                \
    if (k->nvi == 16 && k->S == 9 && m->has_sscale && !m->has_dscale && !m->has_adj)            \
        rq_w_body_##SN##_##DN(src, dst, k, m, 9, 1, 1, 0, 0);                                   \
    else if (k->nvi == 16)                                                                      \
        rq_w_body_##SN##_##DN(src, dst, k, m, k->S, 1, -1, -1, -1);                             \
    else                                                                                        \
        rq_w_body_##SN##_##DN(src, dst, k, m, k->S, 0, -1, -1, -1);                             \
}
/* one f32 vector v of the row -> int32 in C (zeros past the row) */
#define RQ_W_VEC(SN, SSIZE, DN, C, V)                                                           \
    do {                                                                                        \
        if ((V) >= nvec) { C = _mm512_setzero_si512(); break; }                                 \
        __m512 x_ = rq_ld_##SN(row + 16 * (V) * SSIZE, FULL ? (__mmask16)0xffff : km[(V)]);      \
        if (hs) x_ = _mm512_mul_ps(x_, sc);                                                     \
        if (hd) x_ = _mm512_mul_ps(x_, di);                                                     \
        if (ha) x_ = _mm512_mul_ps(x_, adj);                                                    \
        C = RQ_W_Q_##DN(x_);                                                                    \
    } while (0)
/* f32 vector -> int32 that the packs saturate exactly like the scalar clamp: NaN -> 127
   (s8) / 0 (u8); values below -2^31 convert to INT_MIN, which saturates to -128 */
#define RQ_W_Q_s8(x)                                                                            \
    _mm512_cvt_roundps_epi32(_mm512_min_ps((x), _mm512_set1_ps(127.0f)), RQ_RNE)
#define RQ_W_Q_u8(x) _mm512_cvt_roundps_epi32(                                                  \
    _mm512_min_ps(_mm512_max_ps((x), _mm512_setzero_ps()), _mm512_set1_ps(255.0f)), RQ_RNE)
#define RQ_W_PACK_s8(ab, cd) _mm512_packs_epi16((ab), (cd))
#define RQ_W_PACK_u8(ab, cd) _mm512_packus_epi16((ab), (cd))


/* ---- AVX2 (+F16C): the same tiles and rows 8 elements wide, for CPUs without AVX-512 ------
 * Same arithmetic in the same order as the scalar code; integer stores clamp with minps /
 * maxps before the conversion (NaN takes the bound tested first) and then saturate in the
 * packs, so the bytes equal the portable path's. Used when reorder_cpu.avx2_f16c is set. */
#define RQ_TGT2 __attribute__((target("avx2,f16c")))
RQ_TGT2 static inline __m256 rq2_ld_f32(const void* p) { return _mm256_loadu_ps((const float*)p); }
RQ_TGT2 static inline __m256 rq2_ld_f64(const void* p) {
    const double* q = (const double*)p;
    return _mm256_set_m128(_mm256_cvtpd_ps(_mm256_loadu_pd(q + 4)), _mm256_cvtpd_ps(_mm256_loadu_pd(q)));
}
RQ_TGT2 static inline __m256 rq2_ld_f16(const void* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p));
}
RQ_TGT2 static inline __m256 rq2_ld_bf16(const void* p) {
    __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
RQ_TGT2 static inline __m256 rq2_ld_s8(const void* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i*)p)));
}
RQ_TGT2 static inline __m256 rq2_ld_u8(const void* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i*)p)));
}
RQ_TGT2 static inline __m256 rq2_ld_s32(const void* p) {
    return _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i*)p));
}
/* bf16 bits (in the low half of each dword) as oneDNN rounds: see rq_bf16_bits */
RQ_TGT2 static inline __m256i rq2_bf16_bits(__m256 v) {
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
RQ_TGT2 static inline __m256i rq2_q_s8(__m256 v) {
    __m256i q = _mm256_cvtps_epi32(_mm256_min_ps(v, _mm256_set1_ps(127.0f)));  /* <-2^31: INT_MIN */
    return _mm256_max_epi32(q, _mm256_set1_epi32(-128));
}
RQ_TGT2 static inline __m256i rq2_q_u8(__m256 v) {
    v = _mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()), _mm256_set1_ps(255.0f));
    return _mm256_cvtps_epi32(v);
}
/* 8 elements -> dst; `acc` (s8) receives the stored values */
RQ_TGT2 static inline void rq2_st_f32(void* p, __m256 v, __m256i* acc) { (void)acc; _mm256_storeu_ps((float*)p, v); }
RQ_TGT2 static inline void rq2_st_f64(void* p, __m256 v, __m256i* acc) {
    (void)acc;
    _mm256_storeu_pd((double*)p, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    _mm256_storeu_pd((double*)p + 4, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
}
RQ_TGT2 static inline void rq2_st_f16(void* p, __m256 v, __m256i* acc) {
    (void)acc; _mm_storeu_si128((__m128i*)p, _mm256_cvtps_ph(v, RQ_RNE));
}
RQ_TGT2 static inline void rq2_st_bf16(void* p, __m256 v, __m256i* acc) {
    (void)acc;
    __m256i r = rq2_bf16_bits(v);
    _mm_storeu_si128((__m128i*)p, _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)));
}
RQ_TGT2 static inline void rq2_st_s8(void* p, __m256 v, __m256i* acc) {
    __m256i q = rq2_q_s8(v);
    *acc = _mm256_add_epi32(*acc, q);
    __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storel_epi64((__m128i*)p, _mm_packs_epi16(w, w));
}
RQ_TGT2 static inline void rq2_st_u8(void* p, __m256 v, __m256i* acc) {
    (void)acc;
    __m256i q = rq2_q_u8(v);
    __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storel_epi64((__m128i*)p, _mm_packus_epi16(w, w));
}
RQ_TGT2 static inline void rq2_st_s32(void* p, __m256 v, __m256i* acc) {
    (void)acc;
    _mm256_storeu_si256((__m256i*)p, _mm256_cvtps_epi32(_mm256_min_ps(v, _mm256_set1_ps(2147483520.0f))));
}
/* 16 lanes (two vectors) -> 16 contiguous dst elements, one or two full-width stores */
RQ_TGT2 static inline void rq2_st16_f32(void* p, __m256 a, __m256 b, __m256i* acc) {
    (void)acc; _mm256_storeu_ps((float*)p, a); _mm256_storeu_ps((float*)p + 8, b);
}
RQ_TGT2 static inline void rq2_st16_f64(void* p, __m256 a, __m256 b, __m256i* acc) {
    rq2_st_f64(p, a, acc); rq2_st_f64((double*)p + 8, b, acc);
}
RQ_TGT2 static inline void rq2_st16_s32(void* p, __m256 a, __m256 b, __m256i* acc) {
    rq2_st_s32(p, a, acc); rq2_st_s32((int32_t*)p + 8, b, acc);
}
RQ_TGT2 static inline void rq2_st16_f16(void* p, __m256 a, __m256 b, __m256i* acc) {
    (void)acc;
    _mm256_storeu_si256((__m256i*)p, _mm256_set_m128i(_mm256_cvtps_ph(b, RQ_RNE), _mm256_cvtps_ph(a, RQ_RNE)));
}
RQ_TGT2 static inline void rq2_st16_bf16(void* p, __m256 a, __m256 b, __m256i* acc) {
    (void)acc;
    __m256i w = _mm256_packus_epi32(rq2_bf16_bits(a), rq2_bf16_bits(b));   /* a0-3 b0-3 | a4-7 b4-7 */
    _mm256_storeu_si256((__m256i*)p, _mm256_permute4x64_epi64(w, 0xD8));
}
/* 16 lanes as bytes in lane order; the s8 ones' values added to acc */
RQ_TGT2 static inline __m128i rq2_pack16_s8(__m256 a, __m256 b, __m256i* acc) {
    __m256i qa = rq2_q_s8(a), qb = rq2_q_s8(b);
    acc[0] = _mm256_add_epi32(acc[0], qa);
    acc[1] = _mm256_add_epi32(acc[1], qb);
    __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(qa, qb), 0xD8);
    return _mm_packs_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
}
RQ_TGT2 static inline __m128i rq2_pack16_u8(__m256 a, __m256 b) {
    __m256i w = _mm256_permute4x64_epi64(_mm256_packs_epi32(rq2_q_u8(a), rq2_q_u8(b)), 0xD8);
    return _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
}
RQ_TGT2 static inline void rq2_st16_s8(void* p, __m256 a, __m256 b, __m256i* acc) {
    _mm_storeu_si128((__m128i*)p, rq2_pack16_s8(a, b, acc));
}
RQ_TGT2 static inline void rq2_st16_u8(void* p, __m256 a, __m256 b, __m256i* acc) {
    (void)acc;
    _mm_storeu_si128((__m128i*)p, rq2_pack16_u8(a, b));
}
/* the same 16 lanes with streaming stores (p aligned to the store width) */
RQ_TGT2 static inline void rq2_nt16_f32(void* p, __m256 a, __m256 b, __m256i* acc) {
    (void)acc; _mm256_stream_ps((float*)p, a); _mm256_stream_ps((float*)p + 8, b);
}
RQ_TGT2 static inline void rq2_nt16_s32(void* p, __m256 a, __m256 b, __m256i* acc) {
    (void)acc;
    const __m256 hi = _mm256_set1_ps(2147483520.0f);
    _mm256_stream_si256((__m256i*)p, _mm256_cvtps_epi32(_mm256_min_ps(a, hi)));
    _mm256_stream_si256((__m256i*)p + 1, _mm256_cvtps_epi32(_mm256_min_ps(b, hi)));
}
RQ_TGT2 static inline void rq2_nt16_f64(void* p, __m256 a, __m256 b, __m256i* acc) {
    rq2_st16_f64(p, a, b, acc);
}
RQ_TGT2 static inline void rq2_nt16_f16(void* p, __m256 a, __m256 b, __m256i* acc) {
    (void)acc;
    _mm256_stream_si256((__m256i*)p, _mm256_set_m128i(_mm256_cvtps_ph(b, RQ_RNE), _mm256_cvtps_ph(a, RQ_RNE)));
}
RQ_TGT2 static inline void rq2_nt16_bf16(void* p, __m256 a, __m256 b, __m256i* acc) {
    (void)acc;
    __m256i w = _mm256_packus_epi32(rq2_bf16_bits(a), rq2_bf16_bits(b));
    _mm256_stream_si256((__m256i*)p, _mm256_permute4x64_epi64(w, 0xD8));
}
RQ_TGT2 static inline void rq2_nt16_s8(void* p, __m256 a, __m256 b, __m256i* acc) {
    _mm_stream_si128((__m128i*)p, rq2_pack16_s8(a, b, acc));
}
RQ_TGT2 static inline void rq2_nt16_u8(void* p, __m256 a, __m256 b, __m256i* acc) {
    (void)acc;
    _mm_stream_si128((__m128i*)p, rq2_pack16_u8(a, b));
}
/* rows of bytes: 32 values per store, the clamped int32 packed in two steps (the packs
   saturate as the clamps would; no accumulator: rows never carry compensation) and the
   128-bit-lane interleave of the packs undone with one dword permute */
#define RQ2_PACK32_s8 1
#define RQ2_PACK32_u8 1
#define RQ2_PACK32_f32 0
#define RQ2_PACK32_f64 0
#define RQ2_PACK32_f16 0
#define RQ2_PACK32_bf16 0
#define RQ2_PACK32_s32 0
RQ_TGT2 static inline void rq2_st32_s8(void* p, const __m256 v[4]) {
    const __m256 hi = _mm256_set1_ps(127.0f);
    __m256i a = _mm256_packs_epi32(_mm256_cvtps_epi32(_mm256_min_ps(v[0], hi)),
                                   _mm256_cvtps_epi32(_mm256_min_ps(v[1], hi)));
    __m256i b = _mm256_packs_epi32(_mm256_cvtps_epi32(_mm256_min_ps(v[2], hi)),
                                   _mm256_cvtps_epi32(_mm256_min_ps(v[3], hi)));
    __m256i q = _mm256_packs_epi16(a, b);
    _mm256_storeu_si256((__m256i*)p,
                        _mm256_permutevar8x32_epi32(q, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}
RQ_TGT2 static inline void rq2_st32_u8(void* p, const __m256 v[4]) {
    __m256i a = _mm256_packs_epi32(rq2_q_u8(v[0]), rq2_q_u8(v[1]));
    __m256i b = _mm256_packs_epi32(rq2_q_u8(v[2]), rq2_q_u8(v[3]));
    __m256i q = _mm256_packus_epi16(a, b);
    _mm256_storeu_si256((__m256i*)p,
                        _mm256_permutevar8x32_epi32(q, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}
#define RQ2_ST32_NONE(DN)                                                                      \
    RQ_TGT2 static inline void rq2_st32_##DN(void* p, const __m256 v[4]) { (void)p; (void)v; }
RQ2_ST32_NONE(f32) RQ2_ST32_NONE(f64) RQ2_ST32_NONE(f16) RQ2_ST32_NONE(bf16) RQ2_ST32_NONE(s32)
static const char rq_zero_row[64] __attribute__((aligned(64))) = {0};

/* arithmetic of one vector in the scalar code's order; vs/vd: the lanes' scales */
#define RQ2_MATH(V, VS, VD, DN, D)                                                              \
    ({ __m256 w_ = (V);                                                                         \
       if (hz) w_ = _mm256_sub_ps(w_, szp);                                                     \
       if (hs) w_ = _mm256_mul_ps(w_, (VS));                                                    \
       if (hm) w_ = _mm256_add_ps(w_, _mm256_mul_ps(beta, rq2_ld_##DN(D)));                     \
       if (hd) w_ = _mm256_mul_ps(w_, (VD));                                                    \
       if (hdz) w_ = _mm256_add_ps(w_, dzp);                                                    \
       if (ha) w_ = _mm256_mul_ps(w_, adj);                                                     \
       w_; })
#define RQ2_FLAGS(PURE)                                                                         \
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
#define RQ2_TILE(SN, SSIZE, DN, DSIZE)                                                          \
RQ_TGT2 static inline __attribute__((always_inline)) void                                      \
rq2_chunk_##SN##_##DN(const char* const rp[16], char* d, int64_t dstep, int nb, __m256 vs0,     \
        __m256 vs1, __m256 vd0, __m256 vd1, __m256 mk0, __m256 mk1, int masked,                 \
        const rq_math_t* m, __m256i acc[2], int nt, const int PURE) {                           \
    RQ2_FLAGS(PURE)                                                                             \
    __m256 lo[8], hi[8];                                                                        \
    _Pragma("GCC unroll 8")                                                                     \
    for (int a = 0; a < 8; a++) { lo[a] = rq2_ld_##SN(rp[a]); hi[a] = rq2_ld_##SN(rp[8 + a]); } \
    avx2_tr8x8_ps(lo);                                                                          \
    avx2_tr8x8_ps(hi);                                                                          \
    _Pragma("GCC unroll 8")                                                                     \
    for (int b = 0; b < 8; b++) {                                                               \
        if (b >= nb) break;                                                                     \
        char* q = d + b * dstep;                                                                \
        __m256 x = RQ2_MATH(lo[b], vs0, vd0, DN, q);                                            \
        __m256 y = RQ2_MATH(hi[b], vs1, vd1, DN, q + 8 * DSIZE);                                \
        if (masked) { x = _mm256_and_ps(x, mk0); y = _mm256_and_ps(y, mk1); }                   \
        if (nt) rq2_nt16_##DN(q, x, y, acc); else rq2_st16_##DN(q, x, y, acc);                  \
    }                                                                                           \
}                                                                                               \
RQ_TGT2 static inline __attribute__((always_inline)) void                                      \
rq2_tile_##SN##_##DN(const char* src, const int64_t* soff, char* dst, int64_t dB, int64_t nbv,  \
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
            rq2_chunk_##SN##_##DN(rp, dst + b0 * dstep, dstep, 8, vs0, vs1, vd0, vd1, mk0, mk1, \
                                  0, m, vacc, snt, PURE);                                       \
        }                                                                                       \
    } else {                                                                                    \
        for (; b0 + 8 <= nbv; b0 += 8) {                                                        \
            for (int a = 0; a < 16; a++) rp[a] = rows[a] + b0 * step[a];                        \
            rq2_chunk_##SN##_##DN(rp, dst + b0 * dstep, dstep, 8, vs0, vs1, vd0, vd1, mk0, mk1, \
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
        rq2_chunk_##SN##_##DN(rp, dst + b0 * dstep, dstep, nb, vs0, vs1, vd0, vd1, mk0, mk1,    \
                              masked, m, vacc, 0, PURE);                                        \
    }                                                                                           \
    for (int64_t b = nbv < 0 ? 0 : nbv; b < nbw; b++)                                           \
        memset(dst + b * dstep, 0, 16 * DSIZE);                                                 \
    if (acc) {                                                                                  \
        _mm256_storeu_si256((__m256i*)acc, _mm256_add_epi32(_mm256_loadu_si256((__m256i*)acc), vacc[0])); \
        _mm256_storeu_si256((__m256i*)(acc + 8), _mm256_add_epi32(_mm256_loadu_si256((__m256i*)(acc + 8)), vacc[1])); \
    }                                                                                           \
}                                                                                               \
RQ_TGT2 RQ_ENTRY void rq2_block_##SN##_##DN(const void* src, void* dst, const rq_block_t* k,      \
                                          const rq_math_t* m) {                                 \
    const int pure = !(m->has_szp || m->has_sscale || m->has_sum || m->has_dscale               \
                       || m->has_dzp || m->has_adj);                                            \
    for (int64_t g = 0; g < k->ngroups; g++) {                                                  \
        int32_t* acc = k->acc ? k->acc + 16 * g : (int32_t*)0;                                  \
        char* d = (char*)dst + (g == k->ngroups - 1 ? k->last : 16 * g) * DSIZE;                \
        if (pure)                                                                               \
            rq2_tile_##SN##_##DN((const char*)src, k->soff + 16 * g, d, k->dB, k->nbv, k->nbw,  \
                                 k->lanes[g], k->ssc + 16 * g, k->dinv + 16 * g, m, acc,        \
                                 (int)k->nt, 1);                                                \
        else                                                                                    \
            rq2_tile_##SN##_##DN((const char*)src, k->soff + 16 * g, d, k->dB, k->nbv, k->nbw,  \
                                 k->lanes[g], k->ssc + 16 * g, k->dinv + 16 * g, m, acc,        \
                                 (int)k->nt, 0);                                                \
    }                                                                                           \
    if (k->nt) _mm_sfence();                                                                    \
}

/* Rows: a contiguous run of n elements, 32 per step (four vectors), the rest through a zeroed
   stack copy. Scales: one value (kI 0) or one per element (kI 1). */
#define RQ2_ROW(SN, SSIZE, DN, DSIZE)                                                           \
/* r <= 8 elements through zeroed stack copies, so the loads and stores are whole vectors */   \
RQ_TGT2 static inline __attribute__((always_inline)) void                                      \
rq2_row_part_##SN##_##DN(const char* s, char* d, int64_t r, const float* ssc, int64_t sk,       \
        const float* dinv, int64_t dk, const rq_math_t* m, const int PURE) {                    \
    RQ2_FLAGS(PURE)                                                                             \
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
    __m256 v = RQ2_MATH(rq2_ld_##SN(sb), vs, vd, DN, db);                                       \
    rq2_st_##DN(db, v, &acc);                                                                   \
    memcpy(d, db, (size_t)r * DSIZE);                                                           \
}                                                                                               \
RQ_TGT2 static inline __attribute__((always_inline)) void                                      \
rq2_row_body_##SN##_##DN(const char* s, char* d, int64_t n, const float* ssc, int64_t sk,       \
        const float* dinv, int64_t dk, const rq_math_t* m, const int PURE) {                    \
    RQ2_FLAGS(PURE)                                                                             \
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
            rq2_row_part_##SN##_##DN(s + j * SSIZE, d + j * DSIZE, r, ssc + (sk ? j : 0), sk,   \
                                     dinv + (dk ? j : 0), dk, m, PURE);                         \
            j += r;                                                                             \
        }                                                                                       \
        for (; j + 16 <= n; j += 16) {                                                          \
            __m256 vs0 = vs1, vs_ = vs1, vd0 = vd1, vd_ = vd1;                                  \
            if (hs && sk) { vs0 = _mm256_loadu_ps(ssc + j); vs_ = _mm256_loadu_ps(ssc + j + 8); } \
            if (hd && dk) { vd0 = _mm256_loadu_ps(dinv + j); vd_ = _mm256_loadu_ps(dinv + j + 8); } \
            __m256 x = RQ2_MATH(rq2_ld_##SN(s + j * SSIZE), vs0, vd0, DN, d);                   \
            __m256 y = RQ2_MATH(rq2_ld_##SN(s + (j + 8) * SSIZE), vs_, vd_, DN, d);             \
            rq2_nt16_##DN(d + j * DSIZE, x, y, acc2);                                           \
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
            v4[u] = RQ2_MATH(rq2_ld_##SN(s + e * SSIZE), vs, vd, DN, d + e * DSIZE);            \
            if (!RQ2_PACK32_##DN) rq2_st_##DN(d + e * DSIZE, v4[u], &acc);                      \
        }                                                                                       \
        if (RQ2_PACK32_##DN) rq2_st32_##DN(d + j * DSIZE, v4);                                  \
    }                                                                                           \
    for (; j < n; j += 8) {                                                                     \
        const int64_t r = n - j < 8 ? n - j : 8;                                                \
        rq2_row_part_##SN##_##DN(s + j * SSIZE, d + j * DSIZE, r, ssc + (sk ? j : 0), sk,       \
                                 dinv + (dk ? j : 0), dk, m, PURE);                             \
    }                                                                                           \
}                                                                                               \
RQ_TGT2 RQ_ENTRY void rq2_row_##SN##_##DN(const void* s, void* d, int64_t n, const float* ssc,    \
        int64_t sk, const float* dinv, int64_t dk, const rq_math_t* m) {                        \
    if (!(m->has_szp || m->has_sscale || m->has_sum || m->has_dscale || m->has_dzp || m->has_adj)) \
        rq2_row_body_##SN##_##DN((const char*)s, (char*)d, n, ssc, sk, dinv, dk, m, 1);         \
    else                                                                                        \
        rq2_row_body_##SN##_##DN((const char*)s, (char*)d, n, ssc, sk, dinv, dk, m, 0);         \
}

#define RQ2_FOR(SN, SSIZE)                                                                     \
    RQ2_TILE(SN, SSIZE, f32, 4) RQ2_TILE(SN, SSIZE, f64, 8) RQ2_TILE(SN, SSIZE, f16, 2)        \
    RQ2_TILE(SN, SSIZE, bf16, 2) RQ2_TILE(SN, SSIZE, s8, 1) RQ2_TILE(SN, SSIZE, u8, 1)         \
    RQ2_TILE(SN, SSIZE, s32, 4)                                                                 \
    RQ2_ROW(SN, SSIZE, f32, 4) RQ2_ROW(SN, SSIZE, f64, 8) RQ2_ROW(SN, SSIZE, f16, 2)           \
    RQ2_ROW(SN, SSIZE, bf16, 2) RQ2_ROW(SN, SSIZE, s8, 1) RQ2_ROW(SN, SSIZE, u8, 1)            \
    RQ2_ROW(SN, SSIZE, s32, 4)

/* ---- AVX-512 rows: 16 elements per vector, the loads and stores of the tiles ------------- */
/* one line of 64 bytes from the vectors of 64 / DSIZE values (a streamed row) */
#define RQ_NTL_f32 1
#define RQ_NTL_s32 1
#define RQ_NTL_f16 1
#define RQ_NTL_bf16 1
#define RQ_NTL_bf16hw 1
#define RQ_NTL_s8 1
#define RQ_NTL_u8 1
#define RQ_NTL_f64 0
#define RQ_LINE_f32(v) _mm512_castps_si512((v)[0])
#define RQ_LINE_s32(v)                                                                          \
    _mm512_cvt_roundps_epi32(_mm512_min_ps((v)[0], _mm512_set1_ps(2147483520.0f)), RQ_RNE)
#define RQ_LINE_f16(v) RQ_PACK2_f16((v)[0], (v)[1])
#define RQ_LINE_bf16(v) RQ_PACK2_bf16((v)[0], (v)[1])
#define RQ_LINE_bf16hw(v) RQ_PACK2_bf16hw((v)[0], (v)[1])
#define RQ_LINE_s8(v) rq_unpack_lanes(rq_pack4_s8(v))
#define RQ_LINE_u8(v) rq_unpack_lanes(rq_pack4_u8(v))
#define RQ_LINE_f64(v) ((void)(v), _mm512_setzero_si512())   /* never streamed (RQ_NTL_f64) */
/* the r < 16 elements from j through buffers */
#define RQ5_PART(SN, SSIZE, DN, DSIZE, ST, J, R)                                                \
    do {                                                                                        \
        const int64_t j_ = (J), r_ = (R);                                                       \
        char sb[16 * SSIZE], db[16 * DSIZE];                                                    \
        float fs[16], fd[16];                                                                   \
        memset(sb, 0, sizeof(sb)); memset(db, 0, sizeof(db));                                   \
        memset(fs, 0, sizeof(fs)); memset(fd, 0, sizeof(fd));                                   \
        memcpy(sb, s + j_ * SSIZE, (size_t)r_ * SSIZE);                                         \
        if (hm) memcpy(db, d + j_ * DSIZE, (size_t)r_ * DSIZE);                                 \
        __m512 vs = vs1, vd = vd1;                                                              \
        if (hs && sk) { memcpy(fs, ssc + j_, (size_t)r_ * 4); vs = _mm512_loadu_ps(fs); }       \
        if (hd && dk) { memcpy(fd, dinv + j_, (size_t)r_ * 4); vd = _mm512_loadu_ps(fd); }       \
        RQ_TILE_OUT(DN, ST, rq_ld_##SN(sb, 0xffff), db);                                        \
        memcpy(d + j_ * DSIZE, db, (size_t)r_ * DSIZE);                                         \
    } while (0)
#define RQ5_ROW(SN, SSIZE, DN, DSIZE, TGT, ST)                                                  \
TGT static inline __attribute__((always_inline)) void                                          \
rq5_row_body_##SN##_##ST(const char* s, char* d, int64_t n, const float* ssc, int64_t sk,       \
        const float* dinv, int64_t dk, const rq_math_t* m, const int MODE) {                    \
    const __m512 szp = _mm512_set1_ps(m->szp), dzp = _mm512_set1_ps(m->dzp);                    \
    const __m512 beta = _mm512_set1_ps(m->beta), adj = _mm512_set1_ps(m->adj);                  \
    RQ_MODE_FLAGS(MODE)                                                                         \
    if (!rq_any) sk = dk = 0;                                                                   \
    const __mmask16 kl = 0xffff;                                                                \
    __m512i vacc = _mm512_setzero_si512();                                                      \
    const __m512 vs1 = _mm512_set1_ps(hs ? ssc[0] : 1.0f), vd1 = _mm512_set1_ps(hd ? dinv[0] : 1.0f); \
    int64_t j = 0;                                                                              \
    /* streaming (large outputs): up to the first 64-byte boundary through buffers, then      \
       whole lines of 64 / DSIZE elements into aligned streaming stores (no sum: dst is     \
       never read) */                                                                     \
    if (RQ_NTL_##ST && m->nt && !hm && n >= 128 && ((uintptr_t)d % DSIZE) == 0) {              \
        while (j < n && ((uintptr_t)(d + j * DSIZE) & 63)) {                                    \
            int64_t r = (int64_t)((64 - ((uintptr_t)(d + j * DSIZE) & 63)) / DSIZE);            \
            if (r > 16) r = 16;                                                                 \
            if (r > n - j) r = n - j;                                                           \
            RQ5_PART(SN, SSIZE, DN, DSIZE, ST, j, r);                                           \
            j += r;                                                                             \
        }                                                                                       \
        for (; j + 64 / DSIZE <= n; j += 64 / DSIZE) {                                          \
            __m512 v4[4];                                                                       \
            _Pragma("GCC unroll 4")                                                             \
            for (int u = 0; u < 4; u++) {                                                       \
                if (u >= 64 / DSIZE / 16) break;                                                \
                __m512 vs = vs1, vd = vd1;                                                      \
                if (hs && sk) vs = _mm512_loadu_ps(ssc + j + 16 * u);                           \
                if (hd && dk) vd = _mm512_loadu_ps(dinv + j + 16 * u);                          \
                v4[u] = RQ_TILE_MATH(rq_ld_##SN(s + (j + 16 * u) * SSIZE, 0xffff));                \
            }                                                                                   \
            _mm512_stream_si512((__m512i*)(d + j * DSIZE), RQ_LINE_##ST(v4));                   \
        }                                                                                       \
        _mm_sfence();                                                                           \
    }                                                                                           \
    /* cached 1-byte outputs: four vectors packed into one 64-byte store, where one store     \
       of 16 bytes each (vpmovdb) measured slower */                                         \
    if (RQ_B8_##ST && !hm) {                                                                    \
        for (; j + 64 <= n; j += 64) {                                                          \
            __m512 v4[4];                                                                       \
            _Pragma("GCC unroll 4")                                                             \
            for (int u = 0; u < 4; u++) {                                                       \
                __m512 vs = vs1, vd = vd1;                                                      \
                if (hs && sk) vs = _mm512_loadu_ps(ssc + j + 16 * u);                           \
                if (hd && dk) vd = _mm512_loadu_ps(dinv + j + 16 * u);                          \
                v4[u] = RQ_TILE_MATH(rq_ld_##SN(s + (j + 16 * u) * SSIZE, 0xffff));             \
            }                                                                                   \
            _mm512_storeu_si512(d + j * DSIZE, RQ_LINE_##ST(v4));                               \
        }                                                                                       \
    }                                                                                           \
    for (; j + 16 <= n; j += 16) {                                                              \
        __m512 vs = vs1, vd = vd1;                                                              \
        if (hs && sk) vs = _mm512_loadu_ps(ssc + j);                                            \
        if (hd && dk) vd = _mm512_loadu_ps(dinv + j);                                           \
        RQ_TILE_OUT(DN, ST, rq_ld_##SN(s + j * SSIZE, 0xffff), d + j * DSIZE);                  \
    }                                                                                           \
    if (j < n) RQ5_PART(SN, SSIZE, DN, DSIZE, ST, j, n - j);                                    \
    (void)vacc;                                                                                 \
}                                                                                               \
TGT RQ_ENTRY void rq5_row_##SN##_##ST(const void* s, void* d, int64_t n, const float* ssc,        \
        int64_t sk, const float* dinv, int64_t dk, const rq_math_t* m) {                        \
    const char* s_ = (const char*)s;                                                            \
    char* d_ = (char*)d;                                                                        \
    int mode = rq_mode(m, sk, dk);                                                              \
    if (mode == RQ_SSCALE_ZP && !RQ_B8_##SN) mode = RQ_ANY;    /* u8 activations in only */    \
    switch (mode) {                                                                             \
    case RQ_PURE: rq5_row_body_##SN##_##ST(s_, d_, n, ssc, sk, dinv, dk, m, RQ_PURE); break;     \
    case RQ_SSCALE: rq5_row_body_##SN##_##ST(s_, d_, n, ssc, sk, dinv, dk, m, RQ_SSCALE); break; \
    case RQ_SSCALE_ZP:                                                                          \
        if (RQ_B8_##SN) rq5_row_body_##SN##_##ST(s_, d_, n, ssc, sk, dinv, dk, m, RQ_SSCALE_ZP); \
        break;                                                                                  \
    case RQ_DSCALE: rq5_row_body_##SN##_##ST(s_, d_, n, ssc, sk, dinv, dk, m, RQ_DSCALE); break; \
    case RQ_DSCALE_ZP:                                                                          \
        rq5_row_body_##SN##_##ST(s_, d_, n, ssc, sk, dinv, dk, m, RQ_DSCALE_ZP); break;         \
    default: rq5_row_body_##SN##_##ST(s_, d_, n, ssc, sk, dinv, dk, m, RQ_ANY);                 \
    }                                                                                           \
}
/* M(SN, SSIZE, DN, DSIZE, TGT, ST) for every pair of types (the hardware bf16 among the
   destinations), and a kernel table's row for source SN / column for destination DN */
#define RQ_EACH_DST(M, SN, SSIZE)                                                               \
    M(SN, SSIZE, f32, 4, RQ_TGT, f32) M(SN, SSIZE, f64, 8, RQ_TGT, f64)                         \
    M(SN, SSIZE, f16, 2, RQ_TGT, f16) M(SN, SSIZE, bf16, 2, RQ_TGT, bf16)                       \
    M(SN, SSIZE, s8, 1, RQ_TGT, s8) M(SN, SSIZE, u8, 1, RQ_TGT, u8)                             \
    M(SN, SSIZE, s32, 4, RQ_TGT, s32) M(SN, SSIZE, bf16, 2, RQ_TGT_BF16, bf16hw)
#define RQ_EACH_PAIR(M)                                                                         \
    RQ_EACH_DST(M, f32, 4) RQ_EACH_DST(M, f64, 8) RQ_EACH_DST(M, f16, 2)                        \
    RQ_EACH_DST(M, bf16, 2) RQ_EACH_DST(M, s8, 1) RQ_EACH_DST(M, u8, 1) RQ_EACH_DST(M, s32, 4)
#define RQ_TABLE_ROW(P, SN) { P##SN##_f32, P##SN##_f64, P##SN##_f16, P##SN##_bf16, P##SN##_s8,    \
                              P##SN##_u8, P##SN##_s32 }
#define RQ_TABLE(P) { RQ_TABLE_ROW(P, f32), RQ_TABLE_ROW(P, f64), RQ_TABLE_ROW(P, f16),          \
                      RQ_TABLE_ROW(P, bf16), RQ_TABLE_ROW(P, s8), RQ_TABLE_ROW(P, u8),           \
                      RQ_TABLE_ROW(P, s32) }
#define RQ_TABLE_BF16HW(P) { P##f32_bf16hw, P##f64_bf16hw, P##f16_bf16hw, P##bf16_bf16hw,       \
                             P##s8_bf16hw, P##u8_bf16hw, P##s32_bf16hw }

/* ---- AVX-512 grids: a block's short runs in one call (see rq_grid_t) -------------------- */
/* lanes J.. of a run at SP / DP, scales from SSC / DSC: KV the lanes to convert, NWJ the
   lanes to write (a part of a vector goes through a buffer, so nothing past the run is
   touched) */
#define RQ6_VEC(SN, SSIZE, DN, DSIZE, ST, SP, DP, SSC, DSC, J, KV, NWJ)                         \
    do {                                                                                        \
        const int64_t j6_ = (J), nwj_ = (NWJ);                                                  \
        const __mmask16 kl = (KV);                                                              \
        __m512 vs = vs1, vd = vd1;                                                              \
        if (hs && sk) vs = _mm512_maskz_loadu_ps(kl, (SSC) + j6_);                              \
        if (hd && dk) vd = _mm512_maskz_loadu_ps(kl, (DSC) + j6_);                              \
        const __m512 x6_ = rq_ld_##SN((SP) + j6_ * SSIZE, kl);                                  \
        if (nwj_ >= 16) {                                                                       \
            RQ_TILE_OUT(DN, ST, x6_, (DP) + j6_ * DSIZE);                                       \
        } else {                                                                                \
            char db6_[16 * DSIZE];                                                              \
            memset(db6_, 0, sizeof(db6_));                                                      \
            if (hm) memcpy(db6_, (DP) + j6_ * DSIZE, (size_t)nwj_ * DSIZE);                     \
            RQ_TILE_OUT(DN, ST, x6_, db6_);                                                     \
            memcpy((DP) + j6_ * DSIZE, db6_, (size_t)nwj_ * DSIZE);                             \
        }                                                                                       \
    } while (0)
#define RQ6_MASK(n) ((n) >= 16 ? (__mmask16)0xffff : (n) <= 0 ? (__mmask16)0                   \
                     : (__mmask16)((1u << (n)) - 1u))
/* the rows r0.. of column c up to the last, each one vector of 16 lanes, KL the lanes of data
   (the rest written as zeros): 4 rows at a time; 1-byte rows that follow each other in dst
   (nChw16c) packed four to a 64-byte store, as the rows do */
#define RQ6_ROWS16(SN, SSIZE, DN, DSIZE, ST, SP, DP, KL)                                        \
    do {                                                                                        \
        const __mmask16 kl = (KL);                                                              \
        if (RQ_B8_##ST && !hm && rdb == 16) {                                                   \
            for (; r0 + 4 < g->rows; r0 += 4) {                                                 \
                __m512 v4[4];                                                                   \
                _Pragma("GCC unroll 4")                                                         \
                for (int u = 0; u < 4; u++) {                                                   \
                    __m512 vs = vs1, vd = vd1;                                                  \
                    if (hs && sk) vs = _mm512_maskz_loadu_ps(kl, ssc + (r0 + u) * g->rks);      \
                    if (hd && dk) vd = _mm512_maskz_loadu_ps(kl, dinv + (r0 + u) * g->rks);     \
                    v4[u] = _mm512_maskz_mov_ps(kl, RQ_TILE_MATH(                               \
                        rq_ld_##SN((SP) + (r0 + u) * rsb, kl)));                                \
                }                                                                               \
                _mm512_storeu_si512((DP) + r0 * rdb, RQ_LINE_##ST(v4));                         \
            }                                                                                   \
        }                                                                                       \
        _Pragma("GCC unroll 4")                                                                 \
        for (; r0 < g->rows - 1; r0++) {                                                       \
            __m512 vs = vs1, vd = vd1;                                                          \
            if (hs && sk) vs = _mm512_maskz_loadu_ps(kl, ssc + r0 * g->rks);                    \
            if (hd && dk) vd = _mm512_maskz_loadu_ps(kl, dinv + r0 * g->rks);                   \
            RQ_TILE_OUT(DN, ST, rq_ld_##SN((SP) + r0 * rsb, kl), (DP) + r0 * rdb);              \
        }                                                                                       \
    } while (0)
/* column c, every row, with cached stores: rows of 16 lanes (a padded block's under the mask
   of its data lanes: a constant one, so the rows keep the unrolled loop) first, and a last
   row of 16 whose data lanes may end earlier */
#define RQ6_COL(SN, SSIZE, DN, DSIZE, ST, C)                                                    \
    int64_t r0 = 0;                                                                             \
    if (g->L == 16 && g->nw == 16) {                                                            \
        const char* sp = s + (C) * csb;                                                         \
        char* dp = d + (C) * cdb;                                                               \
        if (g->nv == 16)                                                                        \
            RQ6_ROWS16(SN, SSIZE, DN, DSIZE, ST, sp, dp, 0xffff);                               \
        else                                                                                    \
            RQ6_ROWS16(SN, SSIZE, DN, DSIZE, ST, sp, dp, RQ6_MASK(g->nv));                      \
        if (g->nwl == 16) {                                                                     \
            const __mmask16 kl = RQ6_MASK(g->nvl);                                              \
            __m512 vs = vs1, vd = vd1;                                                          \
            if (hs && sk) vs = _mm512_maskz_loadu_ps(kl, ssc + r0 * g->rks);                    \
            if (hd && dk) vd = _mm512_maskz_loadu_ps(kl, dinv + r0 * g->rks);                   \
            RQ_TILE_OUT(DN, ST, rq_ld_##SN(sp + r0 * rsb, kl), dp + r0 * rdb);                  \
            r0++;                                                                               \
        }                                                                                       \
    }                                                                                           \
    for (int64_t r = r0; r < g->rows; r++) {                                                    \
        const char* sp = s + (C) * csb + r * rsb;                                               \
        char* dp = d + (C) * cdb + r * rdb;                                                     \
        const int64_t nv_ = r == g->rows - 1 ? g->nvl : g->nv;                                  \
        const int64_t nw_ = r == g->rows - 1 ? g->nwl : g->nw;                                  \
        for (int64_t j = 0; j < nw_; j += 16)                                                   \
            RQ6_VEC(SN, SSIZE, DN, DSIZE, ST, sp, dp, ssc + r * g->rks, dinv + r * g->rks, j,   \
                    RQ6_MASK(nv_ - j), nw_ - j);                                                \
    }
#define RQ6_GRID(SN, SSIZE, DN, DSIZE, TGT, ST)                                                 \
TGT static inline __attribute__((always_inline)) void                                          \
rq6_grid_body_##SN##_##ST(const char* s, char* d, const rq_grid_t* g, const rq_math_t* m,       \
                          const int MODE) {                                                     \
    const __m512 szp = _mm512_set1_ps(m->szp), dzp = _mm512_set1_ps(m->dzp);                    \
    const __m512 beta = _mm512_set1_ps(m->beta), adj = _mm512_set1_ps(m->adj);                  \
    RQ_MODE_FLAGS(MODE)                                                                         \
    const float* ssc = g->ssc;                                                                  \
    const float* dinv = g->dinv;                                                                \
    const int64_t sk = rq_any ? g->sk : 0, dk = rq_any ? g->dk : 0;                             \
    /* per-lane scales are read under the lanes' mask only (a run of padding has none) */     \
    const __m512 vs1 = _mm512_set1_ps(hs && !sk ? ssc[0] : 1.0f);                              \
    const __m512 vd1 = _mm512_set1_ps(hd && !dk ? dinv[0] : 1.0f);                             \
    __m512i vacc = _mm512_setzero_si512();                                                      \
    const int64_t csb = g->css * SSIZE, cdb = g->cds * DSIZE;                                   \
    const int64_t rsb = g->rss * SSIZE, rdb = g->rds * DSIZE;                                   \
    const int64_t NV = 64 / DSIZE / 16;                                                         \
    int64_t c = 0;                                                                              \
    /* runs of 16 lanes that continue each other in dst across the columns: NV columns make   \
       a 64-byte line of each row, stored past the caches (the columns go through in groups  \
       of NV, their rows inside, so the source is read in order) */                         \
    if (RQ_NTL_##ST && m->nt && !hm && g->L == 16 && g->cds == 16 && g->nw == 16               \
            && g->nwl == 16 && g->cols >= 2 * NV && (rdb & 63) == 0                             \
            && ((uintptr_t)d % (16 * DSIZE)) == 0) {                                            \
        for (; c < g->cols && ((uintptr_t)(d + c * cdb) & 63); c++) {                           \
            RQ6_COL(SN, SSIZE, DN, DSIZE, ST, c)                                                \
        }                                                                                       \
        for (; c + NV <= g->cols; c += NV) {                                                    \
            for (int64_t r = 0; r < g->rows; r++) {                                             \
                const __mmask16 kv = RQ6_MASK(r == g->rows - 1 ? g->nvl : g->nv);              \
                __m512 vs = vs1, vd = vd1;                                                      \
                if (hs && sk) vs = _mm512_maskz_loadu_ps(kv, ssc + r * g->rks);                 \
                if (hd && dk) vd = _mm512_maskz_loadu_ps(kv, dinv + r * g->rks);                \
                __m512 v4[4];                                                                   \
                _Pragma("GCC unroll 4")                                                         \
                for (int u = 0; u < 4; u++) {                                                   \
                    if (u >= NV) break;                                                         \
                    v4[u] = _mm512_maskz_mov_ps(kv, RQ_TILE_MATH(                               \
                        rq_ld_##SN(s + (c + u) * csb + r * rsb, kv)));                          \
                }                                                                               \
                _mm512_stream_si512((__m512i*)(d + c * cdb + r * rdb), RQ_LINE_##ST(v4));       \
            }                                                                                   \
        }                                                                                       \
        _mm_sfence();                                                                           \
    }                                                                                           \
    for (; c < g->cols; c++) {                                                                  \
        RQ6_COL(SN, SSIZE, DN, DSIZE, ST, c)                                                    \
    }                                                                                           \
    (void)vacc;                                                                                 \
}                                                                                               \
TGT RQ_ENTRY void rq6_grid_##SN##_##ST(const void* s, void* d, const rq_grid_t* g,                \
                                     const rq_math_t* m) {                                      \
    int mode = rq_mode(m, g->sk, g->dk);                                                        \
    if (mode == RQ_SSCALE_ZP && !RQ_B8_##SN) mode = RQ_ANY;    /* u8 activations in only */    \
    switch (mode) {                                                                             \
    case RQ_PURE: rq6_grid_body_##SN##_##ST((const char*)s, (char*)d, g, m, RQ_PURE); break;    \
    case RQ_SSCALE: rq6_grid_body_##SN##_##ST((const char*)s, (char*)d, g, m, RQ_SSCALE); break; \
    case RQ_SSCALE_ZP:                                                                          \
        if (RQ_B8_##SN) rq6_grid_body_##SN##_##ST((const char*)s, (char*)d, g, m, RQ_SSCALE_ZP); \
        break;                                                                                  \
    case RQ_DSCALE: rq6_grid_body_##SN##_##ST((const char*)s, (char*)d, g, m, RQ_DSCALE); break; \
    case RQ_DSCALE_ZP:                                                                          \
        rq6_grid_body_##SN##_##ST((const char*)s, (char*)d, g, m, RQ_DSCALE_ZP); break;         \
    default: rq6_grid_body_##SN##_##ST((const char*)s, (char*)d, g, m, RQ_ANY);                 \
    }                                                                                           \
}

/* ---- the entry points, one per family and pair of element types ------------------------- */
/* declared by their function types (_convert_args.h); the macros above define them */
#define RQ_DECLARE(SN, SSIZE, DN, DSIZE, TGT, ST)                                               \
    RQ_ENTRY rq_block_f rq_block_##SN##_##ST;                                                   \
    RQ_ENTRY rq_row_f rq5_row_##SN##_##ST;                                                      \
    RQ_ENTRY rq_grid_f rq6_grid_##SN##_##ST;
RQ_EACH_PAIR(RQ_DECLARE)
#define RQ_DECLARE2(SN, DN)                                                                     \
    RQ_ENTRY rq_block_f rq2_block_##SN##_##DN;                                                  \
    RQ_ENTRY rq_row_f rq2_row_##SN##_##DN;
#define RQ_DECLARE2_FOR(SN)                                                                     \
    RQ_DECLARE2(SN, f32) RQ_DECLARE2(SN, f64) RQ_DECLARE2(SN, f16) RQ_DECLARE2(SN, bf16)        \
    RQ_DECLARE2(SN, s8) RQ_DECLARE2(SN, u8) RQ_DECLARE2(SN, s32)
RQ_DECLARE2_FOR(f32) RQ_DECLARE2_FOR(f64) RQ_DECLARE2_FOR(f16) RQ_DECLARE2_FOR(bf16)
RQ_DECLARE2_FOR(s8) RQ_DECLARE2_FOR(u8) RQ_DECLARE2_FOR(s32)
#define RQ_DECLARE_W(SN) RQ_ENTRY rq_w_f rq_w_##SN##_s8; RQ_ENTRY rq_w_f rq_w_##SN##_u8;
RQ_DECLARE_W(f32) RQ_DECLARE_W(f64) RQ_DECLARE_W(f16) RQ_DECLARE_W(bf16)
RQ_DECLARE_W(s8) RQ_DECLARE_W(u8) RQ_DECLARE_W(s32)

#else
#define RQ_X86 0
#endif
#endif
