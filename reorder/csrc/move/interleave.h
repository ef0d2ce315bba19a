/* Interleave kernel: pixels of a few channels side by side <-> one plane a channel
 * (nhwc <-> nchw of images: RGB, RGBA, two to fifteen channels).
 *
 * A row is n pixels of C channels. On the interleaved side the row is n * C contiguous
 * elements, channel fastest; on the planar side channel c's n pixels are contiguous, c * ps
 * elements from the first plane (ps: the plane stride, any sign).
 *
 * AVX-512 (F, BW; VBMI for bytes): a step is V = 64 / esize pixels, C registers of the
 * interleaved side against one register a plane. Each output register is a masked merge of
 * two-source permutes over the pairs of input registers (a single-source permute for an odd
 * C's last), through tables built once a plan (ilv_prepare): ceil(C / 2) permutes and one
 * blend fewer an output register, two and one for RGB. C is a compile-time constant of each
 * row function, so the inputs stay in registers; so is the permutes' lane size, 8-byte
 * elements taking the 4-byte functions as pairs of lanes (ilv_unit). The last partial step
 * takes masked loads and stores, which touch no byte outside the row. Streaming stores (nt)
 * where a store is a whole, aligned 64-byte line; the caller issues the sfence. simd = 0,
 * and CPUs without those extensions, take a portable loop that writes the same bytes (the
 * planner leaves such CPUs' images to the other kernels).
 */
#ifndef REORDER_MOVE_INTERLEAVE_H
#define REORDER_MOVE_INTERLEAVE_H
#include <stdint.h>
#include <string.h>
#include "common/cpu_features.h"
#include "move/transposes.h"     /* REORDER_X86 and the intrinsics */

#define ILV_MAX_C 15
#define ILV_MAX_SRC ((ILV_MAX_C + 1) / 2)  /* pairs of input registers an output draws from */

typedef struct {
    /* permute indices of each output register and source pair, in lanes of ilv_unit bytes */
    uint8_t idx[ILV_MAX_C][ILV_MAX_SRC][64];
    uint64_t mask[ILV_MAX_C][ILV_MAX_SRC];  /* the bytes of the output each pair fills */
    int C, esize, to_planes;
    int64_t ps;                             /* plane stride of the planar side, elements */
} ilv_t;

/* The permutes' lane size for an element size: 8-byte elements move as pairs of 4-byte
   lanes (vpermt2d costs what vpermt2q does), so they share the 4-byte row functions. */
static inline int ilv_unit(int esize) { return esize < 4 ? esize : 4; }

/* The tables of one (C, esize, direction), C in 2..ILV_MAX_C, esize 1, 2, 4 or 8: for output
   register o and pair k of input registers (2k, 2k + 1; 2k alone for an odd C's last), the
   two-source permute's indices (in lanes of ilv_unit(esize) bytes) and the output bytes
   whose elements the pair holds. */
static void ilv_prepare(ilv_t* t, int C, int esize, int to_planes, int64_t ps) {
    const int V = 64 / esize, u = ilv_unit(esize), per = esize / u;
    memset(t, 0, sizeof(*t));
    t->C = C;
    t->esize = esize;
    t->to_planes = to_planes;
    t->ps = ps;
    for (int o = 0; o < C; o++) {
        for (int l = 0; l < V; l++) {
            /* lane l of output o comes from lane s of input register r, of pair r / 2 */
            int r, s;
            if (to_planes) {                 /* output o: channel o, pixel l */
                const int g = l * C + o;
                r = g / V;
                s = g % V;
            } else {                         /* output o: elements o*V + l of the pixels */
                const int g = o * V + l;
                r = g % C;
                s = g / C;
            }
            for (int j = 0; j < per; j++) {      /* the element's lanes of u bytes */
                const uint64_t li = (uint64_t)(((r % 2) * V + s) * per + j);
                /* little endian */
                memcpy(t->idx[o][r / 2] + l * esize + j * u, &li, (size_t)u);
            }
            t->mask[o][r / 2] |= ((1ull << esize) - 1) << (l * esize);
        }
    }
}

/* The portable loop: rows of n pixels. */
#define ILV_LOOP(T)                                                                            \
    do {                                                                                       \
        const T* s_ = (const T*)src;                                                           \
        T* d_ = (T*)dst;                                                                       \
        if (t->to_planes) {                                                                    \
            for (int c = 0; c < C; c++)                                                        \
                for (int64_t p = 0; p < n; p++) d_[c * ps + p] = s_[p * C + c];                \
        } else {                                                                               \
            for (int64_t p = 0; p < n; p++)                                                    \
                for (int c = 0; c < C; c++) d_[p * C + c] = s_[c * ps + p];                    \
        }                                                                                      \
    } while (0)

static void ilv_portable(const ilv_t* t, const char* src, char* dst, int64_t n) {
    const int C = t->C;
    const int64_t ps = t->ps;
    switch (t->esize) {
    case 1: ILV_LOOP(uint8_t); break;
    case 2: ILV_LOOP(uint16_t); break;
    case 4: ILV_LOOP(uint32_t); break;
    default: ILV_LOOP(uint64_t); break;
    }
}

#if REORDER_X86
#define ILV_TGT __attribute__((target("avx512f,avx512bw")))
#define ILV_TGT_VBMI __attribute__((target("avx512f,avx512bw,avx512vbmi")))

static inline int ilv_have_avx512(int esize) {
    return esize == 1 ? reorder_cpu.avx512_vbmi : reorder_cpu.avx512_bw;
}

/* the first nbytes bytes of a register (all of it from 64 on, none at 0 or less) */
static inline uint64_t ilv_bytes(int64_t nbytes) {
    return nbytes >= 64 ? ~0ull : nbytes <= 0 ? 0ull : (1ull << nbytes) - 1;
}

/* One step of V pixels (rem of them when tail), C a constant: input register r at
   sp + r * sr bytes, output register o to dp + o * dr bytes (the interleaved side 64 bytes
   a register, the planar side the plane stride). Every output draws on every pair of input
   registers, the pairs that hold none of its lanes with an empty mask, so the loops unroll
   and the inputs stay in registers. */
#define ILV_ROW(U, C, TGT)                                                                     \
TGT static inline __attribute__((always_inline)) void                                         \
ilv_step_##U##_##C(const ilv_t* t, const char* sp, int64_t sr, char* dp, int64_t dr,         \
                   int tail, int64_t rem, int nt) {                                          \
    const int64_t E = t->esize;                                                                \
    __m512i in[C];                                                                             \
    _Pragma("GCC unroll 16")                                                                   \
    for (int r = 0; r < C; r++) {                                                              \
        if (tail) {                                                                            \
            const uint64_t m = t->to_planes ? ilv_bytes(rem * C * E - 64 * r)                  \
                                            : ilv_bytes(rem * E);                              \
            in[r] = _mm512_maskz_loadu_epi8(m, sp + r * sr);                                   \
        } else {                                                                               \
            in[r] = _mm512_loadu_si512((const void*)(sp + r * sr));                            \
        }                                                                                      \
    }                                                                                          \
    _Pragma("GCC unroll 16")                                                                   \
    for (int o = 0; o < C; o++) {                                                              \
        __m512i acc = _mm512_setzero_si512();                                                  \
        _Pragma("GCC unroll 8")                                                                \
        for (int k = 0; k < (C + 1) / 2; k++) {                                                \
            const __m512i ix = _mm512_loadu_si512((const void*)t->idx[o][k]);                  \
            const __m512i v = 2 * k + 1 < C ? ILV_P2_##U(in[2 * k], ix, in[(2 * k + 1) % C])  \
                                            : ILV_P1_##U(ix, in[2 * k]);                       \
            acc = k ? _mm512_mask_blend_epi8(t->mask[o][k], acc, v) : v;                       \
        }                                                                                      \
        char* q = dp + o * dr;                                                                 \
        if (tail) {                                                                            \
            const uint64_t m = t->to_planes ? ilv_bytes(rem * E)                               \
                                            : ilv_bytes(rem * C * E - 64 * o);                 \
            _mm512_mask_storeu_epi8(q, m, acc);                                                \
        } else if (nt && ((uintptr_t)q & 63) == 0) {                                           \
            _mm512_stream_si512((__m512i*)q, acc);                                             \
        } else {                                                                               \
            _mm512_storeu_si512((void*)q, acc);                                                \
        }                                                                                      \
    }                                                                                          \
}                                                                                              \
TGT static void ilv_row_##U##_##C(const ilv_t* t, const char* src, char* dst, int64_t n,     \
                                  int nt) {                                                   \
    const int64_t E = t->esize, V = 64 / E, pb = t->ps * E;                                   \
    /* interleaved side: C * 64 bytes a step, 64 a register; planar: 64 bytes a step */       \
    const int64_t s_step = t->to_planes ? C * 64 : 64, d_step = t->to_planes ? 64 : C * 64;   \
    const int64_t sr = t->to_planes ? 64 : pb, dr = t->to_planes ? pb : 64;                   \
    int64_t p = 0;                                                                             \
    for (; p + V <= n; p += V, src += s_step, dst += d_step)                                  \
        ilv_step_##U##_##C(t, src, sr, dst, dr, 0, 0, nt);                                    \
    if (p < n)                                                                                 \
        ilv_step_##U##_##C(t, src, sr, dst, dr, 1, n - p, 0);                                 \
}

typedef void (*ilv_row_fn)(const ilv_t*, const char*, char*, int64_t, int);
#define ILV_ROWS(U, TGT)                                                                       \
    ILV_ROW(U, 2, TGT) ILV_ROW(U, 3, TGT) ILV_ROW(U, 4, TGT) ILV_ROW(U, 5, TGT)               \
    ILV_ROW(U, 6, TGT) ILV_ROW(U, 7, TGT) ILV_ROW(U, 8, TGT) ILV_ROW(U, 9, TGT)               \
    ILV_ROW(U, 10, TGT) ILV_ROW(U, 11, TGT) ILV_ROW(U, 12, TGT) ILV_ROW(U, 13, TGT)           \
    ILV_ROW(U, 14, TGT) ILV_ROW(U, 15, TGT)                                                   \
    static const ilv_row_fn ilv_rows_##U[ILV_MAX_C + 1] = {                                    \
        0, 0, ilv_row_##U##_2, ilv_row_##U##_3, ilv_row_##U##_4, ilv_row_##U##_5,              \
        ilv_row_##U##_6, ilv_row_##U##_7, ilv_row_##U##_8, ilv_row_##U##_9, ilv_row_##U##_10,  \
        ilv_row_##U##_11, ilv_row_##U##_12, ilv_row_##U##_13, ilv_row_##U##_14,                \
        ilv_row_##U##_15};

#define ILV_P2_1(a, i, b) _mm512_permutex2var_epi8((a), (i), (b))
#define ILV_P2_2(a, i, b) _mm512_permutex2var_epi16((a), (i), (b))
#define ILV_P2_4(a, i, b) _mm512_permutex2var_epi32((a), (i), (b))
#define ILV_P1_1(i, a) _mm512_permutexvar_epi8((i), (a))
#define ILV_P1_2(i, a) _mm512_permutexvar_epi16((i), (a))
#define ILV_P1_4(i, a) _mm512_permutexvar_epi32((i), (a))

ILV_ROWS(1, ILV_TGT_VBMI)
ILV_ROWS(2, ILV_TGT)
ILV_ROWS(4, ILV_TGT)      /* 4- and 8-byte elements */
#else
static inline int ilv_have_avx512(int esize) { (void)esize; return 0; }
#endif

/* A row of n pixels: src and dst at its first element on each side. simd = 1 takes the
   AVX-512 path where the CPU has it. */
static void ilv_row(const ilv_t* t, const char* src, char* dst, int64_t n, int simd, int nt) {
#if REORDER_X86
    if (simd && ilv_have_avx512(t->esize)) {
        switch (t->esize) {
        case 1: ilv_rows_1[t->C](t, src, dst, n, nt); return;
        case 2: ilv_rows_2[t->C](t, src, dst, n, nt); return;
        default: ilv_rows_4[t->C](t, src, dst, n, nt); return;   /* 4 and 8 */
        }
    }
#endif
    (void)simd; (void)nt;
    ilv_portable(t, src, dst, n);
}

#endif
