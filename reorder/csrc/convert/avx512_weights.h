/* AVX-512 VBMI + VNNI: int8 weights in `4i16o4i` inner blocks with their compensation (RQ_W). */
#ifndef REORDER_CONVERT_AVX512_WEIGHTS_H
#define REORDER_CONVERT_AVX512_WEIGHTS_H
#include "convert/x86.h"
#include "convert/avx512_loads_stores.h"

#if RQ_X86
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
#endif
#endif
