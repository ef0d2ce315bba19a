/* Low-bit element conversions: f32 -> f8 (e4m3, e5m2), s4/u4/s8/u8 codes with grouped scales
 * and zero points, nibble packing, and the way back. docs/int8.md states the rules and where
 * oneDNN's sources state them.
 *
 * f32 -> f8 is oneDNN's two-step rule: round to f16 first (IEEE, half to even), then round the
 * f16 bits to f8. Both steps are integer arithmetic on the f16 bits here, so the scalar and
 * AVX2 paths give the same bits. The AVX2 path needs F16C for the first step; it is chosen at
 * run time (no -march flags), as in the other kernels.
 */
#ifndef REORDER_LOWBIT_H
#define REORDER_LOWBIT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define LB_X86 1
#include <immintrin.h>
#else
#define LB_X86 0
#endif

enum { LB_S4 = 0, LB_U4 = 1, LB_S8 = 2, LB_U8 = 3, LB_E4M3 = 4, LB_E5M2 = 5 };

typedef struct {
    int code;               /* LB_* of the stored values */
    int pair;               /* 0: one value a byte; 1: nibble pairs along the row; 2: across two rows */
    const float* inv;       /* 1/scale per scale index (f32), or NULL */
    const float* zp;        /* zero point per scale index, as f32, or NULL */
    const int64_t* colidx;  /* scale index of each column, or NULL: colstep * column */
    int64_t colstep;        /* 0 or 1 when colidx is NULL */
    int nt;                 /* rows of one code a byte: streaming stores (whole aligned lines) */
} lb_q_t;

/* Where four rows of codes go instead of rows: the 4a groups of BA{Ta}a{Tb}b4a nibble tiles,
 * tile t of a run at dst + toff[t]; a group's columns l at byte 2 * (l % Tb) of its row. */
typedef struct {
    uint8_t* dst;
    const int64_t* toff;
    int64_t Tb;
    int nt;                 /* streaming stores (whole aligned lines) */
} lb_sink4_t;

static int lb_simd = 0;     /* AVX2 + F16C present and allowed */
static int lb_simd512 = 0;  /* and AVX-512 (F, BW, DQ, VL): the 512-bit rows */

static void lb_detect(void) {
#if LB_X86
    __builtin_cpu_init();
    lb_simd = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
    lb_simd512 = lb_simd && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
                 && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#endif
}

/* The range of an integer code's values, as floats for the clamps. */
static inline void lb_int_range(int code, float* lo, float* hi) {
    switch (code) {
        case LB_S4: *lo = -8.f; *hi = 7.f; break;
        case LB_U4: *lo = 0.f; *hi = 15.f; break;
        case LB_S8: *lo = -128.f; *hi = 127.f; break;
        default: *lo = 0.f; *hi = 255.f; break;
    }
}

static inline uint32_t lb_f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float lb_u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* f32 -> f16 bits as vcvtps2ph with round-to-nearest-even: overflow -> inf, NaN -> quiet
 * (top payload bits kept), f16 subnormals rounded, f32 denormals -> signed 0. */
static inline uint32_t lb_f16_bits(float f) {
    uint32_t i = lb_f2u(f), s = (i >> 16) & 0x8000u, e = (i >> 23) & 0xffu, m = i & 0x7fffffu;
    if (e == 0xffu) return s | 0x7c00u | (m ? 0x200u | (m >> 13) : 0u);
    int ee = (int)e - 127 + 15;
    if (ee >= 0x1f) return s | 0x7c00u;
    if (ee <= 0) {                       /* f16 subnormal or zero: round |f| * 2^24 */
        if (ee < -10) return s;          /* below half the smallest subnormal */
        uint32_t mant = m | 0x800000u;
        int shift = 14 - ee;             /* 14..24 */
        uint32_t q = mant >> shift, rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1u))) q++;
        return s | q;
    }
    uint32_t q = ((uint32_t)ee << 10) | (m >> 13), rem = m & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) q++;   /* a carry may reach inf */
    return s | q;
}

static inline float lb_f16_to_f32(uint32_t h) {
    uint32_t s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1fu) return lb_u2f(s | 0x7f800000u | (m << 13));
    if (e == 0) {                        /* subnormal: m * 2^-24, exact in f32 */
        float v = (float)m * (1.0f / 16777216.0f);
        return s ? -v : v;
    }
    return lb_u2f(s | ((e + 112u) << 23) | (m << 13));
}

/* f16 bits -> f8_e5m2 (oneDNN float8_e5m2_t from float16_t): NaN keeps its top bits and is
 * made quiet, otherwise round half to even on the low 8 bits (inf stays inf, overflow -> inf). */
static inline uint8_t lb_e5m2_of_f16(uint32_t h) {
    uint32_t a = h & 0x7fffu;
    if (a > 0x7c00u) return (uint8_t)((h >> 8) | 0x02u);
    return (uint8_t)(((h & 0x8000u) >> 8) | ((a + 0x7fu + ((a >> 8) & 1u)) >> 8));
}

/* f16 bits -> f8_e4m3 (oneDNN float8_e4m3_t from float16_t): |x| > 464 (and inf, NaN) -> NaN
 * 0x7f with the sign; |x| <= 2^-10 -> signed 0; below 2^-6 the e4m3 subnormals (multiples of
 * 2^-9); else round half to even on the low 7 bits, exponent rebiased by 8. */
static inline uint8_t lb_e4m3_of_f16(uint32_t h) {
    uint32_t s = (h & 0x8000u) >> 8, a = h & 0x7fffu;
    if (a > 0x5f40u) return (uint8_t)(s | 0x7fu);
    if (a <= 0x1400u) return (uint8_t)s;
    if (a < 0x2400u) {                  /* |x| < 2^-6: x * 2^9 rounded to an integer (exact product) */
        float v = lb_f16_to_f32(a) * 512.0f;
        return (uint8_t)(s | (uint32_t)lrintf(v));
    }
    return (uint8_t)(s | (((a + 0x3fu + ((a >> 7) & 1u)) >> 7) - 64u));
}

/* f8 -> f32 through f16 (oneDNN's operator float16_t): e5m2 is the high byte of an f16, a
 * signalling NaN made quiet; e4m3 subnormals become f16 normals, NaN -> f16 0x7e00 with sign. */
static inline float lb_e5m2_to_f32(uint8_t b) {
    uint32_t r = ((b & 0x7du) == 0x7du) ? (b | 0x02u) : b;
    return lb_f16_to_f32(r << 8);
}
static inline float lb_e4m3_to_f32(uint8_t b) {
    uint32_t s = (b & 0x80u) << 8, e = (b >> 3) & 0xfu, m = b & 0x7u;
    if (e == 0xf && m == 0x7) return lb_f16_to_f32(s | 0x7e00u);
    if (e == 0) {
        float v = (float)m * (1.0f / 512.0f);
        return s ? -v : v;
    }
    return lb_f16_to_f32(s | ((e + 8u) << 10) | (m << 7));
}

/* Integer codes: clamp min(hi, .) then max(lo, .) (u8/u4: max first), as the library's s8/u8
 * rule, so NaN gives s8 127, s4 7, u8 0, u4 0; then round half to even. */
static inline int32_t lb_int_code(float v, int code) {
    float lo, hi;
    lb_int_range(code, &lo, &hi);
    if (code == LB_U4 || code == LB_U8) {
        v = (v > lo) ? v : lo;          /* NaN -> lo */
        v = (v < hi) ? v : hi;
    } else {
        v = (v < hi) ? v : hi;          /* NaN -> hi, as minps(NaN, hi) */
        v = (v > lo) ? v : lo;
    }
    return (int32_t)lrintf(v);
}

/* f8 codes see v + 0.0f: oneDNN's reorder adds the dst zero point (0 when none) in f32 before
 * converting, so -0.0 arrives as +0.0 (every other value, NaN included, is unchanged) */
static inline uint8_t lb_code(float v, int code) {
    if (code == LB_E4M3) return lb_e4m3_of_f16(lb_f16_bits(v + 0.0f));
    if (code == LB_E5M2) return lb_e5m2_of_f16(lb_f16_bits(v + 0.0f));
    return (uint8_t)(lb_int_code(v, code) & 0xff);
}

static inline float lb_apply(const lb_q_t* q, float x, int64_t idx) {
    if (q->inv) x = x * q->inv[idx];
    if (q->zp) x = x + q->zp[idx];
    return x;
}

static inline int64_t lb_col(const lb_q_t* q, int64_t l) {
    return q->colidx ? q->colidx[l] : l * q->colstep;
}

/* scalar tail (and the whole row without SIMD) from column l0 */
static void lb_quant_row_scalar(const lb_q_t* q, const float* s0, const float* s1, int64_t b0,
                                int64_t b1, uint8_t* out, int64_t l0, int64_t L) {
    int nib = q->code == LB_S4 || q->code == LB_U4;
    if (q->pair == 1) {
        for (int64_t l = l0; l < L; l += 2) {
            uint8_t lo = lb_code(lb_apply(q, s0[l], b0 + lb_col(q, l)), q->code) & 0xf;
            uint8_t hi = l + 1 < L ? lb_code(lb_apply(q, s0[l + 1], b0 + lb_col(q, l + 1)), q->code) & 0xf : 0;
            out[l >> 1] = (uint8_t)(lo | (hi << 4));
        }
    } else if (q->pair == 2) {
        for (int64_t l = l0; l < L; l++) {
            uint8_t lo = lb_code(lb_apply(q, s0[l], b0 + lb_col(q, l)), q->code) & 0xf;
            uint8_t hi = s1 ? lb_code(lb_apply(q, s1[l], b1 + lb_col(q, l)), q->code) & 0xf : 0;
            out[l] = (uint8_t)(lo | (hi << 4));
        }
    } else {
        for (int64_t l = l0; l < L; l++) {
            uint8_t c = lb_code(lb_apply(q, s0[l], b0 + lb_col(q, l)), q->code);
            /* unpacked 4-bit values are sign-extended bytes, as ml_dtypes stores int4 */
            if (nib && q->code == LB_S4) c = (uint8_t)(int8_t)((int32_t)((c & 0xfu) ^ 8u) - 8);
            out[l] = c;
        }
    }
}

#if LB_X86
#define LB_TGT __attribute__((target("avx2,f16c")))

/* CALL(code) with the code as a constant, so that each body is compiled once a code and
 * tests nothing on it in its loops */
#define LB_BY_CODE(code, CALL)                                                                \
    switch (code) {                                                                           \
        case LB_S4: CALL(LB_S4); break;                                                       \
        case LB_U4: CALL(LB_U4); break;                                                       \
        case LB_S8: CALL(LB_S8); break;                                                       \
        case LB_U8: CALL(LB_U8); break;                                                       \
        case LB_E4M3: CALL(LB_E4M3); break;                                                   \
        default: CALL(LB_E5M2); break;                                                        \
    }

LB_TGT static inline __attribute__((always_inline)) __m256 lb_v_apply(const lb_q_t* q, __m256 x, int64_t base, int64_t l) {
    if (q->inv) {
        __m256 s = q->colstep ? _mm256_loadu_ps(q->inv + base + l) : _mm256_set1_ps(q->inv[base]);
        x = _mm256_mul_ps(x, s);
    }
    if (q->zp) {
        __m256 z = q->colstep ? _mm256_loadu_ps(q->zp + base + l) : _mm256_set1_ps(q->zp[base]);
        x = _mm256_add_ps(x, z);
    }
    return x;
}

/* 16 f8 codes from 16 values (v0: the first 8), in the low byte of 16-bit lanes: the integer
 * steps of lb_e4m3_of_f16 / lb_e5m2_of_f16 on the f16 bits, 16 lanes at a time (every
 * intermediate fits 16 bits) */
LB_TGT static inline __attribute__((always_inline)) __m256i lb_v_f8_16(__m256 v0, __m256 v1, int code) {
    const int rn = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    __m128i h0 = _mm256_cvtps_ph(_mm256_add_ps(v0, _mm256_setzero_ps()), rn);   /* -0 -> +0 */
    __m128i h1 = _mm256_cvtps_ph(_mm256_add_ps(v1, _mm256_setzero_ps()), rn);
    __m256i h = _mm256_inserti128_si256(_mm256_castsi128_si256(h0), h1, 1);
    __m256i a = _mm256_and_si256(h, _mm256_set1_epi16(0x7fff));
    __m256i s = _mm256_srli_epi16(_mm256_and_si256(h, _mm256_set1_epi16((short)0x8000)), 8);
    __m256i one = _mm256_set1_epi16(1);
    if (code == LB_E5M2) {
        __m256i r = _mm256_srli_epi16(_mm256_add_epi16(_mm256_add_epi16(a, _mm256_set1_epi16(0x7f)),
                                      _mm256_and_si256(_mm256_srli_epi16(a, 8), one)), 8);
        __m256i nan = _mm256_or_si256(_mm256_srli_epi16(h, 8), _mm256_set1_epi16(2));
        __m256i isnan = _mm256_cmpgt_epi16(a, _mm256_set1_epi16(0x7c00));
        return _mm256_blendv_epi8(_mm256_or_si256(s, r), nan, isnan);
    }
    __m256i r = _mm256_sub_epi16(_mm256_srli_epi16(_mm256_add_epi16(_mm256_add_epi16(a, _mm256_set1_epi16(0x3f)),
                                 _mm256_and_si256(_mm256_srli_epi16(a, 7), one)), 7), _mm256_set1_epi16(64));
    __m256i issub = _mm256_cmpgt_epi16(_mm256_set1_epi16(0x2400), a);
    if (!_mm256_testz_si256(issub, issub)) {
        /* subnormal e4m3: |f16 value| * 512 rounded (exact product, cvtps rounds half to even) */
        const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
        __m256i s0 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_and_ps(_mm256_cvtph_ps(h0), absm), _mm256_set1_ps(512.0f)));
        __m256i s1 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_and_ps(_mm256_cvtph_ps(h1), absm), _mm256_set1_ps(512.0f)));
        __m256i sub = _mm256_permute4x64_epi64(_mm256_packs_epi32(s0, s1), 0xd8);
        r = _mm256_blendv_epi8(r, sub, issub);
    }
    r = _mm256_andnot_si256(_mm256_cmpgt_epi16(_mm256_set1_epi16(0x1401), a), r);
    r = _mm256_blendv_epi8(r, _mm256_set1_epi16(0x7f), _mm256_cmpgt_epi16(a, _mm256_set1_epi16(0x5f40)));
    return _mm256_or_si256(s, r);
}

/* 8 codes in the low byte of each 32-bit lane (upper bits may be set) */
LB_TGT static inline __attribute__((always_inline)) __m256i lb_v_code(__m256 v, int code) {
    if (code == LB_E4M3 || code == LB_E5M2)    /* the 16-lane rule, half of it used */
        return _mm256_cvtepu16_epi32(_mm256_castsi256_si128(lb_v_f8_16(v, v, code)));
    float lo, hi;
    lb_int_range(code, &lo, &hi);
    if (code == LB_U4 || code == LB_U8)   /* maxps(v, lo) returns lo for NaN */
        v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(lo)), _mm256_set1_ps(hi));
    else                                   /* minps(v, hi) returns hi for NaN */
        v = _mm256_max_ps(_mm256_min_ps(v, _mm256_set1_ps(hi)), _mm256_set1_ps(lo));
    return _mm256_cvtps_epi32(v);
}

/* the low byte of each of 8 lanes, as 8 bytes */
LB_TGT static inline void lb_v_store8(uint8_t* p, __m256i c) {
    c = _mm256_and_si256(c, _mm256_set1_epi32(0xff));
    __m256i w = _mm256_packus_epi32(c, c);             /* per 128-bit lane */
    w = _mm256_packus_epi16(w, w);
    uint32_t lo = (uint32_t)_mm256_extract_epi32(w, 0), hi = (uint32_t)_mm256_extract_epi32(w, 4);
    uint64_t v = (uint64_t)lo | ((uint64_t)hi << 32);
    memcpy(p, &v, 8);
}

/* 32 codes as 32 bytes in order. Integer codes are clamped to their range before the
 * conversion, so saturating packs (signed for s4/s8: the bytes are the sign-extended values)
 * are exact; f8 codes come 16 at a time from lb_v_f8_16. */
LB_TGT static inline __attribute__((always_inline)) __m256i lb_v_codes32_of(const __m256 x[4], int code) {
    if (code == LB_E4M3 || code == LB_E5M2)
        return _mm256_permute4x64_epi64(_mm256_packus_epi16(lb_v_f8_16(x[0], x[1], code),
                                                            lb_v_f8_16(x[2], x[3], code)), 0xd8);
    __m256i c0 = lb_v_code(x[0], code), c1 = lb_v_code(x[1], code);
    __m256i c2 = lb_v_code(x[2], code), c3 = lb_v_code(x[3], code);
    __m256i b = (code == LB_S4 || code == LB_S8)
        ? _mm256_packs_epi16(_mm256_packs_epi32(c0, c1), _mm256_packs_epi32(c2, c3))
        : _mm256_packus_epi16(_mm256_packus_epi32(c0, c1), _mm256_packus_epi32(c2, c3));
    return _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

LB_TGT static inline __attribute__((always_inline)) __m256i lb_v_codes32(const lb_q_t* q, const float* s, int64_t base, int64_t l) {
    __m256 x[4];
    for (int k = 0; k < 4; k++) x[k] = lb_v_apply(q, _mm256_loadu_ps(s + l + 8 * k), base, l + 8 * k);
    return lb_v_codes32_of(x, q->code);
}

/* Two rows of codes one a byte -> nibble pairs, the first row in the low nibbles. */
LB_TGT static inline __attribute__((always_inline)) __m256i lb_v_nib2(__m256i c0, __m256i c1) {
    return _mm256_or_si256(_mm256_and_si256(c0, _mm256_set1_epi8(0x0f)),
                           _mm256_and_si256(_mm256_slli_epi16(c1, 4), _mm256_set1_epi8((char)0xf0)));
}

/* Columns l .. l+31 of the four rows of one `4a` group of a BA{Ta}a{Tb}b4a nibble tile, from
 * their codes one a byte: the 64 bytes at column l of the group's row (see lb_tile_from_stage). */
LB_TGT static inline __attribute__((always_inline)) void
lb_v_store_nib4(uint8_t* o, __m256i c0, __m256i c1, __m256i c2, __m256i c3, int nt) {
    __m256i p0 = lb_v_nib2(c0, c1), p1 = lb_v_nib2(c2, c3);
    __m256i u = _mm256_unpacklo_epi8(p0, p1), v = _mm256_unpackhi_epi8(p0, p1);
    if (nt && ((uintptr_t)o & 63) == 0) {
        _mm256_stream_si256((__m256i*)o, _mm256_permute2x128_si256(u, v, 0x20));
        _mm256_stream_si256((__m256i*)(o + 32), _mm256_permute2x128_si256(u, v, 0x31));
    } else {
        _mm256_storeu_si256((__m256i*)o, _mm256_permute2x128_si256(u, v, 0x20));
        _mm256_storeu_si256((__m256i*)(o + 32), _mm256_permute2x128_si256(u, v, 0x31));
    }
}

/* Rows that share one scale-table row (rows of one group in a strip), one code a byte: the
 * scale and zero-point vectors are loaded once for all of them. With a load of each per
 * source load, a single row's loop kept too few source lines in flight to stream from
 * memory (docs/int8.md). The body at one vector width: NR rows, 32 columns a step in
 * vectors V of W floats; CODES32(x, code) makes a row's 32 codes from its 32 / W scaled
 * vectors. With a tile sink the rows are NR / 4 `4a` groups of the tile, each Tb * 2 bytes
 * after the last. */
#define LB_GROUP_ROWS_BODY(NR, V, W, LOAD, SET1, ZERO, MUL, ADD, CODES32)                        \
    lb_q_t lq = *q0;            /* a constant code, fields kept in registers (as above) */     \
    const lb_q_t* q = &lq;                                                                       \
    lq.code = code;                                                                              \
    int64_t l = 0;                                                                               \
    for (; l + 32 <= L; l += 32) {                                                               \
        V sc[32 / W], z[32 / W], x[32 / W];                                                      \
        for (int k = 0; k < 32 / W; k++) {                                                       \
            int64_t c = base + (q->colstep ? l + W * k : 0);                                     \
            sc[k] = q->inv ? (q->colstep ? LOAD(q->inv + c) : SET1(q->inv[c])) : ZERO();         \
            z[k] = q->zp ? (q->colstep ? LOAD(q->zp + c) : SET1(q->zp[c])) : ZERO();             \
        }                                                                                        \
        __m256i c[NR];                                                                           \
        for (int j = 0; j < NR; j++) {                                                           \
            for (int k = 0; k < 32 / W; k++) {                                                   \
                x[k] = LOAD(s[j] + l + W * k);                                                   \
                if (q->inv) x[k] = MUL(x[k], sc[k]);                                             \
                if (q->zp) x[k] = ADD(x[k], z[k]);                                               \
            }                                                                                    \
            c[j] = CODES32(x, code);                                                             \
            if (!tiles) _mm256_storeu_si256((__m256i*)(out[j] + l), c[j]);                       \
        }                                                                                        \
        if (tiles) {                                                                             \
            uint8_t* o = tiles->dst + tiles->toff[l / tiles->Tb] + 2 * (l % tiles->Tb);         \
            for (int g = 0; g < NR / 4; g++)                                                     \
                lb_v_store_nib4(o + g * tiles->Tb * 2, c[4 * g], c[4 * g + 1], c[4 * g + 2],     \
                                c[4 * g + 3], tiles->nt);                                        \
        }                                                                                        \
    }                                                                                            \
    if (l < L)      /* rows only: a tile sink's runs are whole multiples of 32 columns */       \
        for (int j = 0; j < NR; j++) lb_quant_row_scalar(q, s[j], NULL, base, 0, out[j], l, L);

LB_TGT static inline __attribute__((always_inline)) void
lb_quant_rows4_avx2_body(const lb_q_t* q0, const float* const* s, int64_t base, uint8_t* const* out,
                         const lb_sink4_t* tiles, int64_t L, int code) {
    LB_GROUP_ROWS_BODY(4, __m256, 8, _mm256_loadu_ps, _mm256_set1_ps, _mm256_setzero_ps,
                       _mm256_mul_ps, _mm256_add_ps, lb_v_codes32_of)
}

#define LB_TGT512 __attribute__((target("avx2,f16c,avx512f,avx512bw,avx512dq,avx512vl")))

/* 16 integer codes one a byte (s4 sign-extended) from 16 scaled values: lb_v_code's clamps
 * (the same NaN outcomes), the conversion in the current rounding mode, then a truncating
 * narrow that is exact on the clamped values */
LB_TGT512 static inline __attribute__((always_inline)) __m128i lb_z_code16(__m512 v, int code) {
    float lo, hi;
    lb_int_range(code, &lo, &hi);
    if (code == LB_U4 || code == LB_U8)
        v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(lo)), _mm512_set1_ps(hi));
    else
        v = _mm512_max_ps(_mm512_min_ps(v, _mm512_set1_ps(hi)), _mm512_set1_ps(lo));
    return _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(v));
}

/* lb_v_f8_16 on 512-bit registers: 32 f8 codes from 32 values (v0: the first 16), the same
 * integer steps on the f16 bits with mask registers in place of the blends */
LB_TGT512 static inline __attribute__((always_inline)) __m256i lb_z_f8_32(__m512 v0, __m512 v1, int code) {
    const int rn = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    __m256i h0 = _mm512_cvtps_ph(_mm512_add_ps(v0, _mm512_setzero_ps()), rn);   /* -0 -> +0 */
    __m256i h1 = _mm512_cvtps_ph(_mm512_add_ps(v1, _mm512_setzero_ps()), rn);
    __m512i h = _mm512_inserti64x4(_mm512_castsi256_si512(h0), h1, 1);
    __m512i a = _mm512_and_si512(h, _mm512_set1_epi16(0x7fff));
    __m512i s = _mm512_srli_epi16(_mm512_and_si512(h, _mm512_set1_epi16((short)0x8000)), 8);
    __m512i one = _mm512_set1_epi16(1);
    __m512i res;
    if (code == LB_E5M2) {
        __m512i r = _mm512_srli_epi16(_mm512_add_epi16(_mm512_add_epi16(a, _mm512_set1_epi16(0x7f)),
                                      _mm512_and_si512(_mm512_srli_epi16(a, 8), one)), 8);
        __m512i nan = _mm512_or_si512(_mm512_srli_epi16(h, 8), _mm512_set1_epi16(2));
        __mmask32 isnan = _mm512_cmpgt_epi16_mask(a, _mm512_set1_epi16(0x7c00));
        res = _mm512_mask_mov_epi16(_mm512_or_si512(s, r), isnan, nan);
    } else {
        __m512i r = _mm512_sub_epi16(_mm512_srli_epi16(_mm512_add_epi16(_mm512_add_epi16(a, _mm512_set1_epi16(0x3f)),
                                     _mm512_and_si512(_mm512_srli_epi16(a, 7), one)), 7), _mm512_set1_epi16(64));
        __mmask32 issub = _mm512_cmpgt_epi16_mask(_mm512_set1_epi16(0x2400), a);
        {   /* branchless: a block with a subnormal result is common in real data */
            /* subnormal e4m3: |f16 value| * 512 rounded (exact product, cvtps rounds half to even) */
            const __m512 absm = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
            __m512i s0 = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_and_ps(_mm512_cvtph_ps(h0), absm), _mm512_set1_ps(512.0f)));
            __m512i s1 = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_and_ps(_mm512_cvtph_ps(h1), absm), _mm512_set1_ps(512.0f)));
            __m512i sub = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtsepi32_epi16(s0)),
                                             _mm512_cvtsepi32_epi16(s1), 1);
            r = _mm512_mask_mov_epi16(r, issub, sub);
        }
        r = _mm512_mask_mov_epi16(r, _mm512_cmpgt_epi16_mask(_mm512_set1_epi16(0x1401), a), _mm512_setzero_si512());
        r = _mm512_mask_mov_epi16(r, _mm512_cmpgt_epi16_mask(a, _mm512_set1_epi16(0x5f40)), _mm512_set1_epi16(0x7f));
        res = _mm512_or_si512(s, r);
    }
    return _mm512_cvtepi16_epi8(res);
}

/* 32 codes one a byte from 32 scaled values (x0: the first 16) */
LB_TGT512 static inline __attribute__((always_inline)) __m256i lb_z_codes32(__m512 x0, __m512 x1, int code) {
    if (code == LB_E4M3 || code == LB_E5M2) return lb_z_f8_32(x0, x1, code);
    return _mm256_inserti128_si256(_mm256_castsi128_si256(lb_z_code16(x0, code)), lb_z_code16(x1, code), 1);
}

LB_TGT512 static inline __attribute__((always_inline)) __m256i lb_z_codes32_of(const __m512 x[2], int code) {
    return lb_z_codes32(x[0], x[1], code);
}

LB_TGT512 static inline __attribute__((always_inline)) __m512 lb_z_apply(const lb_q_t* q, __m512 x, int64_t base, int64_t l) {
    if (q->inv) x = _mm512_mul_ps(x, q->colstep ? _mm512_loadu_ps(q->inv + base + l) : _mm512_set1_ps(q->inv[base]));
    if (q->zp) x = _mm512_add_ps(x, q->colstep ? _mm512_loadu_ps(q->zp + base + l) : _mm512_set1_ps(q->zp[base]));
    return x;
}

/* One row, one code a byte (pair 0), on 512-bit registers */
LB_TGT512 static inline __attribute__((always_inline)) void
lb_quant_row_avx512_body(const lb_q_t* q0, const float* s0, int64_t b0, uint8_t* out, int64_t L, int code) {
    lb_q_t lq = *q0;            /* a constant code, fields kept in registers (as above) */
    const lb_q_t* q = &lq;
    lq.code = code;
    int64_t l = 0;
#define LB_Z32(l) lb_z_codes32(lb_z_apply(q, _mm512_loadu_ps(s0 + (l)), b0, (l)),                 \
                               lb_z_apply(q, _mm512_loadu_ps(s0 + (l) + 16), b0, (l) + 16), code)
    if (q->nt) {                /* the lines from the first aligned one, streamed whole */
        int64_t h = (int64_t)((64 - ((uintptr_t)out & 63)) & 63);
        if (h && L >= h + 64) {  /* the head, in ordinary stores that may run past it */
            for (; l < h; l += 32) _mm256_storeu_si256((__m256i*)(out + l), LB_Z32(l));
            l = h;
        }
        for (; l + 64 <= L && ((uintptr_t)(out + l) & 63) == 0; l += 64)
            _mm512_stream_si512((__m512i*)(out + l),
                                _mm512_inserti64x4(_mm512_castsi256_si512(LB_Z32(l)), LB_Z32(l + 32), 1));
    }
    for (; l + 32 <= L; l += 32)
        _mm256_storeu_si256((__m256i*)(out + l), LB_Z32(l));
#undef LB_Z32
    if (l < L) lb_quant_row_scalar(q, s0, NULL, b0, 0, out, l, L);
    if (q->nt) _mm_sfence();    /* before another thread reads the row */
}

LB_TGT512 static void lb_quant_row_avx512(const lb_q_t* q, const float* s0, int64_t b0, uint8_t* out, int64_t L) {
#define LB_CALL(c) lb_quant_row_avx512_body(q, s0, b0, out, L, c)
    LB_BY_CODE(q->code, LB_CALL)
#undef LB_CALL
}

/* Eight rows of one group on 512-bit registers: half the instructions per value, so more
 * source lines in flight. */
LB_TGT512 static inline __attribute__((always_inline)) void
lb_quant_rows8_avx512_body(const lb_q_t* q0, const float* const* s, int64_t base, uint8_t* const* out,
                           const lb_sink4_t* tiles, int64_t L, int code) {
    LB_GROUP_ROWS_BODY(8, __m512, 16, _mm512_loadu_ps, _mm512_set1_ps, _mm512_setzero_ps,
                       _mm512_mul_ps, _mm512_add_ps, lb_z_codes32_of)
}

LB_TGT512 static void lb_quant_rows8_avx512(const lb_q_t* q, const float* const* s, int64_t base,
                                           uint8_t* const* out, const lb_sink4_t* tiles, int64_t L) {
#define LB_CALL(c) lb_quant_rows8_avx512_body(q, s, base, out, tiles, L, c)
    LB_BY_CODE(q->code, LB_CALL)
#undef LB_CALL
}

/* Rows r .. r+n-1 share one scale-table row (or there is none). */
static inline int lb_same_group(const int64_t* qbase, int64_t r, int n) {
    for (int j = 1; qbase && j < n; j++)
        if (qbase[r + j] != qbase[r]) return 0;
    return 1;
}

/* How many rows from r the strip quantizes in one call: eight of one group on AVX-512, four
 * of one group, or one */
static inline int lb_group_rows(const lb_q_t* q, const int64_t* qbase, int64_t r, int64_t left) {
    if (lb_simd512 && left >= 8 && lb_same_group(qbase, r, 8)) return 8;
    if (left >= 4 && lb_same_group(qbase, r, 4)) return 4;
    return 1;
}

LB_TGT static void lb_quant_rows4_avx2(const lb_q_t* q, const float* const* s, int64_t base,
                                       uint8_t* const* out, const lb_sink4_t* tiles, int64_t L) {
#define LB_CALL(c) lb_quant_rows4_avx2_body(q, s, base, out, tiles, L, c)
    LB_BY_CODE(q->code, LB_CALL)
#undef LB_CALL
}

LB_TGT static inline __attribute__((always_inline)) void
lb_quant_row_avx2_body(const lb_q_t* q0, const float* s0, const float* s1, int64_t b0, int64_t b1,
                       uint8_t* out, int64_t L, int code) {
    lb_q_t lq = *q0;            /* a local copy with a constant code: the byte stores below may
                                 * alias *q0, so without it every vector would reload the fields
                                 * and re-dispatch on the code */
    const lb_q_t* q = &lq;
    lq.code = code;
    int64_t l = 0;
    const __m256i m4 = _mm256_set1_epi32(0xf);
    if (q->pair == 1) {
        for (; l + 16 <= L; l += 16) {
            __m256i a = lb_v_code(lb_v_apply(q, _mm256_loadu_ps(s0 + l), b0, l), q->code);
            __m256i b = lb_v_code(lb_v_apply(q, _mm256_loadu_ps(s0 + l + 8), b0, l + 8), q->code);
            /* lanes (even, odd) of a and b -> one nibble pair each */
            __m256i ae = _mm256_and_si256(a, m4), be = _mm256_and_si256(b, m4);
            __m256i ap = _mm256_or_si256(ae, _mm256_srli_epi64(ae, 28));
            __m256i bp = _mm256_or_si256(be, _mm256_srli_epi64(be, 28));
            /* the pair sits in the even 32-bit lane of each 64-bit half */
            __m256i idx = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
            __m256i pa = _mm256_permutevar8x32_epi32(ap, idx), pb = _mm256_permutevar8x32_epi32(bp, idx);
            __m256i c = _mm256_blend_epi32(pa, pb, 0xf0);
            lb_v_store8(out + (l >> 1), c);
        }
    } else if (q->pair == 2) {
        for (; l + 8 <= L; l += 8) {
            __m256i a = _mm256_and_si256(lb_v_code(lb_v_apply(q, _mm256_loadu_ps(s0 + l), b0, l), q->code), m4);
            __m256i b = s1 ? _mm256_and_si256(lb_v_code(lb_v_apply(q, _mm256_loadu_ps(s1 + l), b1, l), q->code), m4)
                           : _mm256_setzero_si256();
            lb_v_store8(out + l, _mm256_or_si256(a, _mm256_slli_epi32(b, 4)));
        }
    } else {
        for (; l + 32 <= L; l += 32)
            _mm256_storeu_si256((__m256i*)(out + l), lb_v_codes32(q, s0, b0, l));
        for (; l + 8 <= L; l += 8) {
            __m256i c = lb_v_code(lb_v_apply(q, _mm256_loadu_ps(s0 + l), b0, l), q->code);
            if (q->code == LB_S4) c = _mm256_srai_epi32(_mm256_slli_epi32(c, 28), 28);
            lb_v_store8(out + l, c);
        }
    }
    if (l < L) lb_quant_row_scalar(q, s0, s1, b0, b1, out, l, L);
}

LB_TGT static void lb_quant_row_avx2(const lb_q_t* q, const float* s0, const float* s1, int64_t b0,
                                     int64_t b1, uint8_t* out, int64_t L) {
#define LB_CALL(c) lb_quant_row_avx2_body(q, s0, s1, b0, b1, out, L, c)
    LB_BY_CODE(q->code, LB_CALL)
#undef LB_CALL
}
#endif

/* One output row: row s0 (and s1 for pairs across rows; NULL = zero nibbles) of L floats. */
static void lb_quant_row(const lb_q_t* q, const float* s0, const float* s1, int64_t b0, int64_t b1,
                         uint8_t* out, int64_t L) {
#if LB_X86
    if (lb_simd512 && q->colidx == NULL && q->pair == 0) { lb_quant_row_avx512(q, s0, b0, out, L); return; }
    if (lb_simd && q->colidx == NULL) { lb_quant_row_avx2(q, s0, s1, b0, b1, out, L); return; }
#endif
    lb_quant_row_scalar(q, s0, s1, b0, b1, out, 0, L);
}

/* One tile of a blocked destination whose inner blocks cover the last two dims (BA16a64b4a:
 * 16 x 64): the tile's rows are quantized one code a byte into `buf` (Ta x Tb, in L1; rows
 * and columns past the tensor's edge are zero, which is the padding), then gathered into the
 * tile's physical order: physical element p of the tile is buf[tab[p]], two a byte (low
 * nibble first) when `nib`. One pass over the source, one write of the destination. */
typedef struct {
    const float* src;        /* f32 rows */
    const int64_t* row_off;  /* element offset of each logical row (C order over dims[:-1]) */
    const int64_t* qbase;    /* scale-table index of each logical row, or NULL */
    const int32_t* tab;      /* Ta * Tb: physical position in the tile -> logical i * Tb + j */
    int64_t Ta, Tb, K, N;    /* tile and the last two dims */
    int nib;
    int fast;                /* X of a BA{Ta}a{Tb}b{X}a tile (2 or 4) with Tb % 32 == 0, packed; else 0 */
    int stream;              /* the tiles written from registers use streaming stores */
} lb_tile_t;

/* buf (Ta x Tb codes in logical order) -> the tile's physical order, two a byte when nib */
static void lb_tile_pack(const lb_tile_t* T, const uint8_t* buf, uint8_t* dst) {
    const int32_t* tab = T->tab;
    int64_t n = T->Ta * T->Tb;
    if (T->nib) {
        for (int64_t k = 0; k < n; k += 2)
            dst[k >> 1] = (uint8_t)((buf[tab[k]] & 0xfu) | (buf[tab[k + 1]] << 4));
    } else {
        for (int64_t k = 0; k < n; k++) dst[k] = buf[tab[k]];
    }
}

static void lb_quant_tile(const lb_q_t* q0, const lb_tile_t* T, int64_t row0, int64_t col0,
                          uint8_t* dst, uint8_t* buf) {
    lb_q_t q = *q0;
    int64_t Ta = T->Ta, Tb = T->Tb;
    int64_t nrows = T->K - row0 % T->K, ncols = T->N - col0;
    if (nrows > Ta) nrows = Ta;
    if (ncols > Tb) ncols = Tb;
    q.pair = 0;
    if (q.colidx) q.colidx += col0;
    for (int64_t i = 0; i < Ta; i++) {
        uint8_t* b = buf + i * Tb;
        if (i >= nrows) { memset(b, 0, (size_t)Tb); continue; }
        int64_t r = row0 + i;
        int64_t base = T->qbase ? T->qbase[r] + (q.colidx ? 0 : col0 * q.colstep) : 0;
        lb_quant_row(&q, T->src + T->row_off[r] + col0, NULL, base, 0, b, ncols);
        if (ncols < Tb) memset(b + ncols, 0, (size_t)(Tb - ncols));
    }
    lb_tile_pack(T, buf, dst);
}

/* A tile from rows of codes one a byte (row i at stage + i * W): rows copied into buf (L1),
 * then gathered through the position table. */
static void lb_tile_gather(const lb_tile_t* T, const uint8_t* stage, int64_t W, uint8_t* dst,
                           uint8_t* buf) {
    for (int64_t i = 0; i < T->Ta; i++) memcpy(buf + i * T->Tb, stage + i * W, (size_t)T->Tb);
    lb_tile_pack(T, buf, dst);
}

#if LB_X86
/* A BA{Ta}a{Tb}b{X}a nibble tile from codes one a byte: row i of the tile is stage + i * W. */
LB_TGT static void lb_tile_from_stage(const uint8_t* stage, int64_t W, int64_t Ta, int64_t Tb,
                                      int64_t X, uint8_t* dst) {
    for (int64_t am = 0; am < Ta / X; am++) {
        const uint8_t* s = stage + am * X * W;
        uint8_t* o = dst + am * Tb * (X / 2);
        for (int64_t b = 0; b < Tb; b += 32) {
            __m256i c0 = _mm256_loadu_si256((const __m256i*)(s + b));
            __m256i c1 = _mm256_loadu_si256((const __m256i*)(s + W + b));
            if (X == 2) {
                _mm256_storeu_si256((__m256i*)(o + b), lb_v_nib2(c0, c1));
                continue;
            }
            lb_v_store_nib4(o + 2 * b, c0, c1, _mm256_loadu_si256((const __m256i*)(s + 2 * W + b)),
                            _mm256_loadu_si256((const __m256i*)(s + 3 * W + b)), 0);
        }
    }
}
#endif

/* The tiles of one strip of Ta rows (tile t at column tcol[t], byte toff[t] of dst), in
 * column order. For BA{Ta}a{Tb}b{X}a nibble tiles with SIMD, runs of whole tiles are done in
 * two steps: each source row of the run is quantized front to back into `stage` (one code a
 * byte, Ta x stage_cols bytes, in L2), then the tiles are built from it. The source is then
 * read one row at a time, a stream the hardware prefetcher follows, instead of Ta rows at
 * once. Other tiles go through lb_quant_tile. */
static void lb_quant_strip(const lb_q_t* q0, const lb_tile_t* T, int64_t row0, const int64_t* toff,
                           const int64_t* tcol, int64_t nt, uint8_t* dst, uint8_t* stage,
                           int64_t stage_cols, uint8_t* buf) {
    int64_t k = 0;
#if LB_X86
    int64_t Ta = T->Ta, Tb = T->Tb;
    if (lb_simd && q0->colidx == NULL && T->K - row0 % T->K >= Ta) {
        lb_q_t q = *q0;
        q.pair = 0;
        while (k < nt) {
            int64_t c0 = tcol[k], n = 0;
            while (k + n < nt && tcol[k + n] == c0 + n * Tb && (n + 1) * Tb <= stage_cols
                   && tcol[k + n] + Tb <= T->N)
                n++;
            if (n == 0) {
                lb_quant_tile(q0, T, row0, tcol[k], dst + toff[k], buf);
                k++;
                continue;
            }
            int64_t W = n * Tb;
            /* BA{Ta}a{Tb}b4a nibble tiles whose 4a groups share their scales: codes go
             * straight from registers into the tiles, with no stage */
            int direct = T->fast == 4 && T->nib && Ta % 4 == 0 && Tb % 32 == 0;
            for (int64_t i = 0; direct && i < Ta; i += 4)
                direct = lb_same_group(T->qbase, row0 + i, 4);
            if (direct) {
                for (int64_t i = 0; i < Ta;) {
                    int64_t r = row0 + i;
                    int64_t base = T->qbase ? T->qbase[r] + c0 * q.colstep : 0;
                    int g = lb_group_rows(&q, T->qbase, r, Ta - i) == 8 ? 8 : 4;
                    const float* sg[8];
                    for (int j = 0; j < g; j++) sg[j] = T->src + T->row_off[r + j] + c0;
                    lb_sink4_t sink = {dst + (i / 4) * Tb * 2, toff + k, Tb, T->stream};
                    if (g == 8) lb_quant_rows8_avx512(&q, sg, base, NULL, &sink, W);
                    else lb_quant_rows4_avx2(&q, sg, base, NULL, &sink, W);
                    i += g;
                }
                k += n;
                continue;
            }
            for (int64_t i = 0; i < Ta;) {
                int64_t r = row0 + i;
                int64_t base = T->qbase ? T->qbase[r] + c0 * q.colstep : 0;
                int g = lb_group_rows(&q, T->qbase, r, Ta - i);
                if (g > 1) {
                    const float* sg[8];
                    uint8_t* og[8];
                    for (int j = 0; j < g; j++) {
                        sg[j] = T->src + T->row_off[r + j] + c0;
                        og[j] = stage + (i + j) * W;
                    }
                    if (g == 8) lb_quant_rows8_avx512(&q, sg, base, og, NULL, W);
                    else lb_quant_rows4_avx2(&q, sg, base, og, NULL, W);
                    i += g;
                } else {
                    lb_quant_row(&q, T->src + T->row_off[r] + c0, NULL, base, 0, stage + i * W, W);
                    i++;
                }
            }
            for (int64_t t = 0; t < n; t++) {
                if (T->fast)
                    lb_tile_from_stage(stage + t * Tb, W, Ta, Tb, T->fast, dst + toff[k + t]);
                else
                    lb_tile_gather(T, stage + t * Tb, W, dst + toff[k + t], buf);
            }
            k += n;
        }
        if (T->stream) _mm_sfence();    /* before another thread reads the tiles */
        return;
    }
#endif
    for (; k < nt; k++) lb_quant_tile(q0, T, row0, tcol[k], dst + toff[k], buf);
}

/* Nibble packing of n one-per-byte codes (element i -> byte i/2, low nibble when i is even). */
static void lb_pack(const uint8_t* c, uint8_t* out, int64_t n) {
    int64_t i = 0;
    for (; i + 1 < n; i += 2) out[i >> 1] = (uint8_t)((c[i] & 0xf) | ((c[i + 1] & 0xf) << 4));
    if (i < n) out[i >> 1] = (uint8_t)(c[i] & 0xf);
}

/* A 4-bit value as the byte ml_dtypes stores: s4 sign-extended (from a nibble, or from a byte
 * whose low nibble is the value), u4 as it is. */
static inline uint8_t lb_nibble_byte(uint32_t v, int is_signed) {
    v &= 0xfu;
    return is_signed ? (uint8_t)((v ^ 8u) - 8u) : (uint8_t)v;
}

#if LB_X86
/* 16 packed bytes -> 32 values in element order (low nibble first) */
LB_TGT static inline void lb_v_unpack32(const uint8_t* p, uint8_t* out, int is_signed) {
    const __m128i lo4 = _mm_set1_epi8(0x0f), eight = _mm_set1_epi8(8);
    __m128i b = _mm_loadu_si128((const __m128i*)p);
    __m128i lo = _mm_and_si128(b, lo4), hi = _mm_and_si128(_mm_srli_epi16(b, 4), lo4);
    __m128i c0 = _mm_unpacklo_epi8(lo, hi), c1 = _mm_unpackhi_epi8(lo, hi);
    if (is_signed) {
        c0 = _mm_sub_epi8(_mm_xor_si128(c0, eight), eight);
        c1 = _mm_sub_epi8(_mm_xor_si128(c1, eight), eight);
    }
    _mm_storeu_si128((__m128i*)out, c0);
    _mm_storeu_si128((__m128i*)(out + 16), c1);
}
#endif

/* The way back: n values from element e0 of a packed buffer p (so a row may start in the high
 * nibble of a byte), one a byte. */
static void lb_unpack_at(const uint8_t* p, int64_t e0, uint8_t* out, int64_t n, int is_signed) {
    int64_t i = 0;
    if (n > 0 && (e0 & 1)) {
        out[0] = lb_nibble_byte(p[e0 >> 1] >> 4, is_signed);
        i = 1;
    }
    const uint8_t* q = p + ((e0 + i) >> 1);      /* element e0 + i is a low nibble */
#if LB_X86
    if (lb_simd)
        for (; i + 32 <= n; i += 32, q += 16) lb_v_unpack32(q, out + i, is_signed);
#endif
    for (int64_t k = 0; i < n; i++, k++)
        out[i] = lb_nibble_byte(q[k >> 1] >> ((k & 1) * 4), is_signed);
}

static void lb_unpack(const uint8_t* p, uint8_t* out, int64_t n, int is_signed) {
    lb_unpack_at(p, 0, out, n, is_signed);
}

/* codes -> f32: v = scale * (float(code) - zp) + 0.0f, in that order and in f32 (oneDNN's
 * reorder ends with + dst zero point, 0: -0.0 comes out as +0.0). Codes are one a byte, s4
 * and s8 as signed bytes. Scale index of column l: base + colidx[l], or base + l * colstep. */
typedef struct {
    int code;
    const float* sc;        /* scale per scale index, or NULL */
    const float* zp;        /* zero point per scale index, as f32, or NULL */
    const int64_t* colidx;  /* or NULL */
    int64_t colstep;        /* 0 or 1 when colidx is NULL */
    int stream;             /* store past the caches (the plan's choice for a large result) */
} lb_dq_t;

static inline float lb_code_value(int code, uint8_t b) {
    switch (code) {
        case LB_E4M3: return lb_e4m3_to_f32(b);
        case LB_E5M2: return lb_e5m2_to_f32(b);
        case LB_S4: case LB_S8: return (float)(int8_t)b;
        default: return (float)b;
    }
}

static void lb_dequant_scalar(const lb_dq_t* d, const uint8_t* c, float* out, int64_t l0, int64_t L,
                              int64_t base) {
    for (int64_t l = l0; l < L; l++) {
        float v = lb_code_value(d->code, c[l]);
        int64_t idx = base + (d->colidx ? d->colidx[l] : l * d->colstep);
        if (d->zp) v = v - d->zp[idx];
        if (d->sc) v = d->sc[idx] * v;
        out[l] = v + 0.0f;
    }
}

#if LB_X86
LB_TGT static void lb_dequant_avx2(const lb_dq_t* d, const uint8_t* c, float* out, int64_t L,
                                   int64_t base) {
    int64_t l = 0;
    int code = d->code;
    if (d->colidx == NULL && (code == LB_S4 || code == LB_U4 || code == LB_S8 || code == LB_U8)) {
        int sgn = code == LB_S4 || code == LB_S8;
        const float* sp = d->sc ? d->sc + base : NULL;
        const float* zq = d->zp ? d->zp + base : NULL;
        int64_t cs = d->colstep;
        const __m256 vs = _mm256_set1_ps(sp ? sp[0] : 1.0f), vz = _mm256_set1_ps(zq ? zq[0] : 0.0f);
/* the 8 results from column i (reads columns i .. i + 7 only) */
#define LB_DQ_V(i) ({                                                                            \
            __m128i b_ = _mm_loadl_epi64((const __m128i*)(c + (i)));                             \
            __m256 v_ = _mm256_cvtepi32_ps(sgn ? _mm256_cvtepi8_epi32(b_) : _mm256_cvtepu8_epi32(b_)); \
            if (zq) v_ = _mm256_sub_ps(v_, cs ? _mm256_loadu_ps(zq + (i)) : vz);                 \
            if (sp) v_ = _mm256_mul_ps(cs ? _mm256_loadu_ps(sp + (i)) : vs, v_);                 \
            _mm256_add_ps(v_, _mm256_setzero_ps()); })
        int64_t head = ((uintptr_t)out & 3) ? L : (int64_t)(((64 - ((uintptr_t)out & 63)) & 63) >> 2);
        if (d->stream && L >= 16 && L - head >= 16) {
            /* whole 64-byte lines with streaming stores; the partial lines at both ends with
             * ordinary (masked) stores, as a line written both ways is slow */
            const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
            if (head > 0) {
                _mm256_maskstore_ps(out, _mm256_cmpgt_epi32(_mm256_set1_epi32((int)head), lane), LB_DQ_V(0));
                if (head > 8) _mm256_storeu_ps(out + head - 8, LB_DQ_V(head - 8));
            }
            int64_t end = head + (L - head) / 16 * 16;
            for (l = head; l < end; l += 8) _mm256_stream_ps(out + l, LB_DQ_V(l));
            int64_t t = L - end;
            if (t >= 8) _mm256_storeu_ps(out + end, LB_DQ_V(end));
            if (t > 0)
                _mm256_maskstore_ps(out + L - 8, _mm256_cmpgt_epi32(lane, _mm256_set1_epi32((int)(7 - t))),
                                    LB_DQ_V(L - 8));
            return;
        }
        for (; l + 8 <= L; l += 8) _mm256_storeu_ps(out + l, LB_DQ_V(l));
#undef LB_DQ_V
    }
    if (l < L) lb_dequant_scalar(d, c, out, l, L, base);
}
#endif

static void lb_dequant(const lb_dq_t* d, const uint8_t* c, float* out, int64_t L, int64_t base) {
#if LB_X86
    if (lb_simd) { lb_dequant_avx2(d, c, out, L, base); return; }
#endif
    lb_dequant_scalar(d, c, out, 0, L, base);
}

/* Kept for the multi-pass path: rows of codes with a column index table. */
static void lb_dequant_row(int code, const uint8_t* c, float* out, int64_t L, const float* sc,
                           const float* zp, const int64_t* colidx, int64_t base) {
    lb_dq_t d = {code, sc, zp, colidx, 0, 0};
    lb_dequant(&d, c, out, L, base);
}

#define LB_CHUNK 1024      /* codes unpacked at a time into a per-thread L1 buffer */

/* One plain source row of L codes at element e0 (packed two a byte when `nib`) -> L f32. */
static void lb_dequant_plain_row(const lb_dq_t* d, const uint8_t* src, int nib, int64_t e0,
                                 int64_t L, float* out, int64_t base, uint8_t* buf) {
    int sgn = d->code == LB_S4;
    for (int64_t l = 0; l < L; l += LB_CHUNK) {
        int64_t n = L - l < LB_CHUNK ? L - l : LB_CHUNK;
        const uint8_t* c = src + e0 + l;
        if (nib) {
            lb_unpack_at(src, e0 + l, buf, n, sgn);
            c = buf;
        } else if (sgn) {                   /* ml_dtypes int4 may hold -1 as 0x0f */
            for (int64_t k = 0; k < n; k++) buf[k] = lb_nibble_byte(c[k], 1);
            c = buf;
        }
        lb_dq_t dd = *d;
        if (dd.colidx) dd.colidx += l;
        lb_dequant(&dd, c, out + l, n, base + (dd.colidx ? 0 : l * dd.colstep));
    }
#if LB_X86
    if (d->stream) _mm_sfence();
#endif
}

#if LB_X86
/* The inverse of lb_tile_from_stage: a BA{Ta}a{Tb}b{X}a nibble tile -> Ta rows of Tb bytes, one
 * value a byte, row i at buf + i * W. */
LB_TGT static void lb_tile_to_rows(const uint8_t* src, int64_t Ta, int64_t Tb, int64_t X, int sgn,
                                   uint8_t* buf, int64_t W) {
    const __m256i lo4 = _mm256_set1_epi8(0x0f), eight = _mm256_set1_epi8(8);
    /* even bytes to the low 8 of each 128-bit lane, odd bytes to the high 8 */
    const __m256i deint = _mm256_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15,
                                           0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
#define LB_NIB(p, sh) ({ __m256i c_ = _mm256_and_si256((sh) ? _mm256_srli_epi16((p), 4) : (p), lo4); \
                         sgn ? _mm256_sub_epi8(_mm256_xor_si256(c_, eight), eight) : c_; })
    for (int64_t am = 0; am < Ta / X; am++) {
        const uint8_t* o = src + am * Tb * (X / 2);
        uint8_t* s = buf + am * X * W;
        for (int64_t b = 0; b < Tb; b += 32) {
            __m256i p0, p1 = _mm256_setzero_si256();
            if (X == 2) {
                p0 = _mm256_loadu_si256((const __m256i*)(o + b));
            } else {
                __m256i A = _mm256_loadu_si256((const __m256i*)(o + 2 * b));
                __m256i B = _mm256_loadu_si256((const __m256i*)(o + 2 * b + 32));
                __m256i u = _mm256_shuffle_epi8(_mm256_permute2x128_si256(A, B, 0x20), deint);
                __m256i v = _mm256_shuffle_epi8(_mm256_permute2x128_si256(A, B, 0x31), deint);
                p0 = _mm256_unpacklo_epi64(u, v);
                p1 = _mm256_unpackhi_epi64(u, v);
            }
            _mm256_storeu_si256((__m256i*)(s + b), LB_NIB(p0, 0));
            _mm256_storeu_si256((__m256i*)(s + W + b), LB_NIB(p0, 1));
            if (X == 4) {
                _mm256_storeu_si256((__m256i*)(s + 2 * W + b), LB_NIB(p1, 0));
                _mm256_storeu_si256((__m256i*)(s + 3 * W + b), LB_NIB(p1, 1));
            }
        }
    }
#undef LB_NIB
}
#endif

/* One source tile (Ta x Tb logical elements at src, physical position p holding logical tab[p];
 * two a byte when T->nib) -> Ta rows of Tb codes one a byte, row i at dst + i * W (buf: a
 * Ta x Tb scratch for the table's scattered writes). */
static void lb_tile_unpack(const lb_tile_t* T, const uint8_t* src, int sgn, uint8_t* dst, int64_t W,
                           uint8_t* buf) {
    int64_t Ta = T->Ta, Tb = T->Tb, n = Ta * Tb;
    const int32_t* tab = T->tab;
#if LB_X86
    if (T->fast && T->nib && lb_simd) {
        lb_tile_to_rows(src, Ta, Tb, T->fast, sgn, dst, W);
        return;
    }
#endif
    if (T->nib) {
        for (int64_t k = 0; k < n; k++) buf[tab[k]] = lb_nibble_byte(src[k >> 1] >> ((k & 1) * 4), sgn);
    } else if (sgn) {
        for (int64_t k = 0; k < n; k++) buf[tab[k]] = lb_nibble_byte(src[k], 1);
    } else {
        for (int64_t k = 0; k < n; k++) buf[tab[k]] = src[k];
    }
    for (int64_t i = 0; i < Ta; i++) memcpy(dst + i * W, buf + i * Tb, (size_t)Tb);
}

/* The tiles of one strip of Ta rows (tile t at column tcol[t], byte toff[t] of src, in column
 * order) -> the f32 rows out + r * ld (r = row0 + i) inside the K x N tensor. Each run of
 * adjacent tiles (at most stage_cols columns) is unpacked into `stage` (Ta rows, in L2), then
 * dequantized a whole row at a time: long rows, whose stores fill whole cache lines even when
 * `out` is not aligned to a tile. T->qbase: scale-table base index of each logical row. */
static void lb_dequant_strip(const lb_dq_t* d, const lb_tile_t* T, const uint8_t* src, int64_t row0,
                             const int64_t* toff, const int64_t* tcol, int64_t nt, float* out,
                             int64_t ld, uint8_t* stage, int64_t stage_cols, uint8_t* buf) {
    int64_t Ta = T->Ta, Tb = T->Tb;
    int sgn = d->code == LB_S4;
    int64_t nrows = T->K - row0 % T->K;
    if (nrows > Ta) nrows = Ta;
    int64_t k = 0;
    while (k < nt) {
        int64_t c0 = tcol[k], n = 1;
        while (k + n < nt && tcol[k + n] == c0 + n * Tb && (n + 1) * Tb <= stage_cols) n++;
        int64_t W = n * Tb;
        for (int64_t t = 0; t < n; t++) lb_tile_unpack(T, src + toff[k + t], sgn, stage + t * Tb, W, buf);
        int64_t ncols = T->N - c0 < W ? T->N - c0 : W;
        lb_dq_t dd = *d;
        if (dd.colidx) dd.colidx += c0;
        for (int64_t i = 0; i < nrows; i++) {
            int64_t r = row0 + i;
            int64_t base = T->qbase ? T->qbase[r] + (dd.colidx ? 0 : c0 * dd.colstep) : 0;
            lb_dequant(&dd, stage + i * W, out + r * ld + c0, ncols, base);
        }
        k += n;
    }
#if LB_X86
    if (d->stream) _mm_sfence();
#endif
}

#endif
