/* Tile transposes and copies for the reorder kernels, with run-time CPU dispatch.
 *
 * The wide paths are compiled with __attribute__((target(...))) and chosen by the features
 * _cpu.h detects once, so the extension builds and runs on any x86-64 or ARM machine
 * without -march=native. Every path writes exactly the same bytes.
 *
 * tile_tN(src, A, na, dst, rows, b0, nbv, nbw, nt) moves an A x B tile:
 *     for b < nbw, a < na:  dst[row(b0 + b) + a] = src[srow(a) + b]  where row a holds data and
 *     b < nbv; 0 where row a or column b is dst padding; nothing where row a is not written.
 * dst is contiguous along a, src along b. Either side may span two axes: B rows go to
 * row(b) = (b / nlo) * dhi + (b % nlo) * dlo (hw then i16 in oihw -> OIhw16i16o), and A rows
 * come from srow(a) = (a / nlo) * shi + (a % nlo) * slo (i4 then o16 in OIhw4i16o4i), with
 * data/write limits per level. nt asks for non-temporal stores of full, aligned 64-byte
 * lines (the caller issues reorder_sfence() before the data is read by another thread).
 */
#ifndef REORDER_SIMD_H
#define REORDER_SIMD_H
#include <stdint.h>
#include <string.h>
#include "_cpu.h"

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define REORDER_X86 1
#include <immintrin.h>
#ifndef REORDER_TR16_ALWAYS_INLINE
#define REORDER_TR16_ALWAYS_INLINE 1     /* _transpose_avx512.h: the move kernels' many sites */
#endif
#include "_transpose_avx512.h"
#include "_transpose_avx2.h"
#else
#define REORDER_X86 0
#endif

#define TILE 16

/* B rows in dst: row b at b * dlo (nlo == 0) or (b / nlo) * dhi + (b % nlo) * dlo. `ahead`:
 * the byte tiles fetch the lines their next row group writes a group early (the plan's
 * choice: the dst lies in L3, its rows too far apart for the hardware to fetch them).
 * `cols_first`: the AVX-512 tiles' uniform loops walk B's columns outermost and all of A's
 * rows at each, so dst rows are written whole, one after another, rather than one line of
 * each of the slice's rows a pass: with cached stores where COLS_FIRST_CACHED is set, with
 * streaming ones where COLS_FIRST_STREAMED is (the plan's choice). */
typedef struct { int64_t nlo, dlo, dhi; int ahead, cols_first; } rows_t;
enum { COLS_FIRST_CACHED = 1, COLS_FIRST_STREAMED = 2 };
static inline int cols_first_on(const rows_t* r, int nt) {
    return (r->cols_first & (nt ? COLS_FIRST_STREAMED : COLS_FIRST_CACHED)) != 0;
}
static inline int64_t row_off(const rows_t* r, int64_t b) {
    return r->nlo == 0 ? b * r->dlo : (b / r->nlo) * r->dhi + (b % r->nlo) * r->dlo;
}

/* A rows: nlo == 0 is one level (row a at a * slo, data below nv_lo, written below nw_lo);
 * otherwise a = hi * nlo + lo, with limits per level. */
typedef struct { int64_t nlo, slo, shi, nv_lo, nw_lo, nv_hi, nw_hi; } arows_t;

/* dst offsets of rows bs .. bs+n-1; 1 when they are adjacent rows of `len` elements. */
static inline int row_offsets(const rows_t* rows, int64_t bs, int n, int64_t* off, int64_t len) {
    if (rows->nlo == 0) {
        for (int j = 0; j < n; j++) off[j] = (bs + j) * rows->dlo;
        return rows->dlo == len;
    }
    int64_t q = bs / rows->nlo, m = bs % rows->nlo;
    for (int j = 0; j < n; j++) {
        off[j] = q * rows->dhi + m * rows->dlo;
        if (++m == rows->nlo) { m = 0; q++; }
    }
    return 0;
}

/* Rows a0 .. a0+n-1 (n <= 16): src offsets, and bit masks of rows with data / rows written. */
static inline uint32_t low_bits(int64_t k, int n) {
    k = k < 0 ? 0 : (k > n ? n : k);
    return k >= 32 ? 0xffffffffu : (1u << k) - 1u;
}

static inline void arow_block(const arows_t* A, int64_t a0, int n, int64_t* soff,
                              uint32_t* vmask, uint32_t* wmask) {
    if (A->nlo == 0) {          /* one level: the masks are prefixes, no per-row tests */
        int64_t o = a0 * A->slo;
        for (int i = 0; i < n; i++, o += A->slo) soff[i] = o;
        int64_t nv = A->nv_lo < A->nw_lo ? A->nv_lo : A->nw_lo;
        *wmask = A->nw_hi > 0 ? low_bits(A->nw_lo - a0, n) : 0;
        *vmask = A->nw_hi > 0 && A->nv_hi > 0 ? low_bits(nv - a0, n) : 0;
        return;
    }
    int64_t q = A->nlo ? a0 / A->nlo : 0, m = A->nlo ? a0 % A->nlo : a0;
    uint32_t v = 0, w = 0;
    for (int i = 0; i < n; i++) {
        soff[i] = q * A->shi + m * A->slo;
        if (m < A->nw_lo && q < A->nw_hi) {
            w |= 1u << i;
            if (m < A->nv_lo && q < A->nv_hi) v |= 1u << i;
        }
        if (++m == A->nlo) { m = 0; q++; }
    }
    *vmask = v;
    *wmask = w;
}

/* The rows a < this bound, rounded down to whole blocks of `blk`, are all data and all
 * written, and A and the dst rows are one level each: the uniform fast paths below take
 * them with pointer strides instead of per-row offsets and masks. */
static inline int64_t uniform_rows(const arows_t* A, const rows_t* rows, int64_t na, int blk) {
    if (A->nlo != 0 || rows->nlo != 0 || A->nw_hi <= 0 || A->nv_hi <= 0) return 0;
    int64_t n = A->nv_lo < A->nw_lo ? A->nv_lo : A->nw_lo;
    n = n < na ? n : na;
    return n > 0 ? n / blk * blk : 0;
}

/* Where one more uniform block starts that ends at row na, overlapping the block before it
 * (whose last rows it writes again, the same bytes), or -1. It needs cached stores, B
 * without edge columns, and every row of A data and written: a 7x7 plane's 49 rows then
 * take four blocks of 16 instead of three and a tail through masked or element-wise
 * stores. `afast`: the rows uniform_rows gave (0: none, so na may be under a block). */
static inline int64_t uniform_tail(const arows_t* A, int64_t na, int64_t afast, int blk,
                                   int whole_b, int nt) {
    return afast > 0 && afast < na && whole_b && !nt && A->nv_lo >= na && A->nw_lo >= na
        ? na - blk : -1;
}
/* uniform_rows, extended to na when the overlapping tail block applies (its start in *tail,
 * else -1): the rows the uniform loops take. */
static inline int64_t uniform_rows_tail(const arows_t* A, const rows_t* rows, int64_t na,
                                        int blk, int whole_b, int nt, int64_t* tail) {
    int64_t afast = uniform_rows(A, rows, na, blk);
    *tail = uniform_tail(A, na, afast, blk, whole_b, nt);
    return *tail >= 0 ? na : afast;
}
/* The start of uniform block k * blk, or of the overlapping tail for the last one. */
#define UNIFORM_BLOCK(a, blk, aend, tail) ((a) + (blk) <= (aend) ? (a) : (tail))

/* ---- portable path: cache-blocked scalar loops the compiler can vectorise -------------- */
#define REORDER_SCALAR_TILE(T, NAME)                                                       \
static void NAME(const T* src, const arows_t* A, int64_t na, T* dst, const rows_t* rows,  \
                 int64_t bs, int64_t nbv, int64_t nbw) {                                  \
    int64_t soff[TILE];                                                                   \
    uint32_t vm, wm;                                                                      \
    for (int64_t a0 = 0; a0 < na; a0 += TILE) {                                           \
        int n = na - a0 < TILE ? (int)(na - a0) : TILE;                                   \
        arow_block(A, a0, n, soff, &vm, &wm);                                             \
        if (!wm) continue;                                                                \
        for (int64_t b = 0; b < nbw; b++) {                                               \
            T* d = dst + row_off(rows, bs + b) + a0;                                      \
            for (int i = 0; i < n; i++) {                                                 \
                if (!((wm >> i) & 1u)) continue;                                          \
                if (b < nbv && ((vm >> i) & 1u)) d[i] = src[soff[i] + b];                 \
                else memset(d + i, 0, sizeof(T));                                         \
            }                                                                             \
        }                                                                                 \
    }                                                                                     \
}
REORDER_SCALAR_TILE(uint8_t, tile_scalar_u8)
REORDER_SCALAR_TILE(uint16_t, tile_scalar_u16)
REORDER_SCALAR_TILE(uint32_t, tile_scalar_u32)
REORDER_SCALAR_TILE(uint64_t, tile_scalar_u64)

#if REORDER_X86
/* ---- AVX-512 tiles, with the 16x16 register transpose of _transpose_avx512.h ------------ */
/* The uniform rows of tile_avx512_u32 (below): pointer strides alone. `nt`: every store is
 * a whole aligned line, streamed; each kind of store has its own loop, as a branch inside
 * the loop cost the cached one its gain. */
#define UNIFORM_U32_512_TILE(STORE)                                                         \
    {                                                                                       \
        const int64_t a0 = UNIFORM_BLOCK(k, 16, afast, tail);                               \
        const uint32_t* s = src + a0 * slo + b0;                                            \
        for (int i = 0; i < 16; i++) t[i] = _mm512_loadu_ps(s + i * slo);                   \
        tr16x16(t);                                                                         \
        uint32_t* d = dst + (bs + b0) * dlo + a0;                                           \
        for (int j = 0; j < 16; j++) STORE((float*)(d + j * dlo), t[j]);                    \
    }
#define UNIFORM_U32_512_LOOP(STORE)                                                         \
    for (int64_t k = 0; k < afast; k += 16)                                                 \
        for (int64_t b0 = 0; b0 < bfull; b0 += 16) UNIFORM_U32_512_TILE(STORE)
#define UNIFORM_U32_512_COLS_FIRST(STORE)                                                   \
    for (int64_t b0 = 0; b0 < bfull; b0 += 16)                                              \
        for (int64_t k = 0; k < afast; k += 16) UNIFORM_U32_512_TILE(STORE)
__attribute__((target("avx512f"))) REORDER_ROW_LOOP
static void uniform_u32_512(const uint32_t* src, int64_t slo, int64_t afast, int64_t tail,
                            uint32_t* dst, int64_t dlo, int64_t bs, int64_t bfull, int nt,
                            int cols_first) {
    __m512 t[16];
    if (nt && cols_first) {
        UNIFORM_U32_512_COLS_FIRST(_mm512_stream_ps)
    } else if (nt) {
        UNIFORM_U32_512_LOOP(_mm512_stream_ps)
    } else if (cols_first) {
        UNIFORM_U32_512_COLS_FIRST(_mm512_storeu_ps)
    } else {
        UNIFORM_U32_512_LOOP(_mm512_storeu_ps)
    }
}
#undef UNIFORM_U32_512_COLS_FIRST
#undef UNIFORM_U32_512_TILE
#undef UNIFORM_U32_512_LOOP

/* A blocks of 16 rows are outermost (each streams through B with 16 read streams). With
 * cached stores, the uniform rows (uniform_rows: one level, all data) and full B blocks run
 * with pointer strides alone, no offset tables or masks: a third less time a tile on
 * nChw16c -> nchw in the L3 (docs/kernels.md). Elsewhere full B blocks run straight-line:
 * the 16 dst row offsets cost one division, rows without data load as zero vectors
 * (padding), rows not written are masked off. Ragged B edges use masked loads. */
__attribute__((target("avx512f")))
static void tile_avx512_u32(const uint32_t* src, const arows_t* A, int64_t na, uint32_t* dst,
                            const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw, int nt) {
    __m512 r[16];
    int64_t soff[16], off[16];
    uint32_t vm, wm;
    int64_t bfull = (nbv < nbw ? nbv : nbw) & ~(int64_t)15;
    int dst_aligned = ((uintptr_t)dst & 63) == 0;
    /* streamed only where every store of the uniform rows is a whole aligned line */
    int64_t tail = -1;
    int uniform_nt = nt && dst_aligned && (rows->dlo & 15) == 0;
    int64_t afast = bfull && nt == uniform_nt
        ? uniform_rows_tail(A, rows, na, 16, bfull == nbw, nt, &tail) : 0;
    if (afast) uniform_u32_512(src, A->slo, afast, tail, dst, rows->dlo, bs, bfull, nt,
                               cols_first_on(rows, nt));
    /* the rows the uniform loop took need only their ragged columns, if any */
    for (int64_t a0 = bfull < nbw ? 0 : afast; a0 < na; a0 += 16) {
        int n = na - a0 < 16 ? (int)(na - a0) : 16;
        arow_block(A, a0, n, soff, &vm, &wm);
        if (!wm) continue;
        __mmask16 wmask = (__mmask16)wm;
        int allw = wm == 0xFFFFu;
        for (int64_t b0 = a0 < afast ? bfull : 0; b0 < bfull; b0 += 16) {
            int stream = nt && dst_aligned && allw;
            if (rows->nlo == 0) {
                for (int j = 0; j < 16; j++) off[j] = (bs + b0 + j) * rows->dlo;
                stream &= (rows->dlo & 15) == 0;
            } else {
                int64_t q = (bs + b0) / rows->nlo, m = (bs + b0) % rows->nlo;
                for (int j = 0; j < 16; j++) {
                    off[j] = q * rows->dhi + m * rows->dlo;
                    stream &= (off[j] & 15) == 0;
                    if (++m == rows->nlo) { m = 0; q++; }
                }
            }
            for (int i = 0; i < 16; i++)
                r[i] = (vm >> i) & 1u ? _mm512_loadu_ps(src + soff[i] + b0) : _mm512_setzero_ps();
            tr16x16(r);
            if (stream)
                for (int j = 0; j < 16; j++) _mm512_stream_ps((float*)(dst + off[j] + a0), r[j]);
            else if (allw)
                for (int j = 0; j < 16; j++) _mm512_storeu_ps((float*)(dst + off[j] + a0), r[j]);
            else
                for (int j = 0; j < 16; j++)
                    _mm512_mask_storeu_ps((float*)(dst + off[j] + a0), wmask, r[j]);
        }
        for (int64_t b0 = bfull; b0 < nbw; b0 += 16) {
            int64_t nb = nbw - b0 < 16 ? nbw - b0 : 16;
            int64_t nbd = nbv - b0 < 0 ? 0 : (nbv - b0 < nb ? nbv - b0 : nb);
            __mmask16 lmask = (__mmask16)((1u << nbd) - 1u);
            for (int i = 0; i < 16; i++)
                r[i] = (vm >> i) & 1u ? _mm512_maskz_loadu_ps(lmask, src + soff[i] + b0)
                                      : _mm512_setzero_ps();
            tr16x16(r);
            for (int64_t j = 0; j < nb; j++)
                _mm512_mask_storeu_ps((float*)(dst + row_off(rows, bs + b0 + j) + a0), wmask, r[j]);
        }
    }
}

/* The uniform rows of tile_avx512_u64 (below). */
__attribute__((target("avx512f"))) REORDER_ROW_LOOP
static void uniform_u64_512(const uint64_t* src, int64_t slo, int64_t afast, int64_t tail,
                            uint64_t* dst, int64_t dlo, int64_t bs, int64_t bfull) {
    __m512i r[8];
    for (int64_t k = 0; k < afast; k += 8)
        for (int64_t b0 = 0; b0 < bfull; b0 += 8) {
            const int64_t a0 = UNIFORM_BLOCK(k, 8, afast, tail);
            const uint64_t* s = src + a0 * slo + b0;
            for (int i = 0; i < 8; i++) r[i] = _mm512_loadu_si512(s + i * slo);
            tr8x8_q(r);
            uint64_t* d = dst + (bs + b0) * dlo + a0;
            for (int j = 0; j < 8; j++) _mm512_storeu_si512(d + j * dlo, r[j]);
        }
}

/* 64-bit elements: the same walk over 8 x 8 tiles of qwords (tr8x8_q), each dst row piece
 * one 64-byte line, streamed as the 32-bit tiles stream theirs (AVX2: tile_avx2_u64). */
__attribute__((target("avx512f")))
static void tile_avx512_u64(const uint64_t* src, const arows_t* A, int64_t na, uint64_t* dst,
                            const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw, int nt) {
    __m512i r[8];
    int64_t soff[8], off[8];
    uint32_t vm, wm;
    int64_t bfull = (nbv < nbw ? nbv : nbw) & ~(int64_t)7;
    int dst_aligned = ((uintptr_t)dst & 63) == 0;
    int64_t tail = -1;
    int64_t afast = bfull && !nt ? uniform_rows_tail(A, rows, na, 8, bfull == nbw, 0, &tail) : 0;
    if (afast) uniform_u64_512(src, A->slo, afast, tail, dst, rows->dlo, bs, bfull);
    for (int64_t a0 = bfull < nbw ? 0 : afast; a0 < na; a0 += 8) {
        int n = na - a0 < 8 ? (int)(na - a0) : 8;
        arow_block(A, a0, n, soff, &vm, &wm);
        if (!wm) continue;
        __mmask8 wmask = (__mmask8)wm;
        int allw = wm == 0xFFu;
        for (int64_t b0 = a0 < afast ? bfull : 0; b0 < bfull; b0 += 8) {
            int stream = nt && dst_aligned && allw;
            row_offsets(rows, bs + b0, 8, off, -1);
            for (int j = 0; j < 8; j++) stream &= (off[j] & 7) == 0;
            for (int i = 0; i < 8; i++)
                r[i] = (vm >> i) & 1u ? _mm512_loadu_si512(src + soff[i] + b0)
                                      : _mm512_setzero_si512();
            tr8x8_q(r);
            if (stream)
                for (int j = 0; j < 8; j++) _mm512_stream_si512((__m512i*)(dst + off[j] + a0), r[j]);
            else if (allw)
                for (int j = 0; j < 8; j++) _mm512_storeu_si512(dst + off[j] + a0, r[j]);
            else
                for (int j = 0; j < 8; j++) _mm512_mask_storeu_epi64(dst + off[j] + a0, wmask, r[j]);
        }
        for (int64_t b0 = bfull; b0 < nbw; b0 += 8) {
            int64_t nb = nbw - b0 < 8 ? nbw - b0 : 8;
            int64_t nbd = nbv - b0 < 0 ? 0 : (nbv - b0 < nb ? nbv - b0 : nb);
            __mmask8 lmask = (__mmask8)((1u << nbd) - 1u);
            for (int i = 0; i < 8; i++)
                r[i] = (vm >> i) & 1u ? _mm512_maskz_loadu_epi64(lmask, src + soff[i] + b0)
                                      : _mm512_setzero_si512();
            tr8x8_q(r);
            for (int64_t j = 0; j < nb; j++)
                _mm512_mask_storeu_epi64(dst + row_off(rows, bs + b0 + j) + a0, wmask, r[j]);
        }
    }
}

/* Columns b0 .. nbw-1 of the A rows a0 .. a0+n-1 element by element (the AVX2 tiles' edges:
 * partial row blocks and ragged columns), zeros where a row or column is padding. */
#define REORDER_EDGE_COLUMNS(T, b0)                                                       \
    for (int64_t b = (b0); b < nbw; b++) {                                                \
        T* d_ = dst + row_off(rows, bs + b) + a0;                                         \
        for (int i = 0; i < n; i++) {                                                     \
            if (!((wm >> i) & 1u)) continue;                                              \
            d_[i] = (b < nbv && ((vm >> i) & 1u)) ? src[soff[i] + b] : 0;                 \
        }                                                                                 \
    }

/* ---- AVX2: 8x8 f32 register transposes, the SIMD path for CPUs without AVX-512 ---------
 * Stores are always cached: a 32-byte streaming store fills only half a line (docs/kernels.md). */
__attribute__((target("avx2")))
static void tile_avx2_u32(const uint32_t* src, const arows_t* A, int64_t na, uint32_t* dst,
                          const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw) {
    __m256 r[8];
    int64_t soff[8], off[8];
    uint32_t vm, wm;
    int64_t bfull = (nbv < nbw ? nbv : nbw) & ~(int64_t)7;
    int64_t tail;
    int64_t afast = uniform_rows_tail(A, rows, na, 8, bfull == nbw, 0, &tail);
    const int64_t slo = A->slo, dlo = rows->dlo;    /* locals: stores may alias the structs */
    /* A short A (nchw -> nChw16c: c16) is walked inside each column block, so every dst
     * line is finished while it is in L1; a long A outside, so src lines are. */
    int64_t a_in = afast <= 32 ? afast : 8;
    for (int64_t a1 = 0; a1 < afast; a1 += a_in)
        for (int64_t b0 = 0; b0 < bfull; b0 += 8)
            for (int64_t k = a1; k < a1 + a_in && k < afast; k += 8) {
                const int64_t a0 = UNIFORM_BLOCK(k, 8, afast, tail);
                const uint32_t* s = src + a0 * slo + b0;
                for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps((const float*)(s + i * slo));
                avx2_tr8x8_ps(r);
                uint32_t* d = dst + (bs + b0) * dlo + a0;
                for (int j = 0; j < 8; j++) _mm256_storeu_ps((float*)(d + j * dlo), r[j]);
            }
    /* the rows the uniform loop took need only their edge columns, if any */
    for (int64_t a0 = bfull < nbw ? 0 : afast; a0 < na; a0 += 8) {
        int n = na - a0 < 8 ? (int)(na - a0) : 8;
        arow_block(A, a0, n, soff, &vm, &wm);
        if (!wm) continue;
        int64_t bvec = wm == 0xFFu ? bfull : 0;     /* partial row blocks go element-wise */
        for (int64_t b0 = a0 < afast ? bvec : 0; b0 < bvec; b0 += 8) {
            row_offsets(rows, bs + b0, 8, off, 0);
            for (int i = 0; i < 8; i++)
                r[i] = (vm >> i) & 1u ? _mm256_loadu_ps((const float*)(src + soff[i] + b0))
                                      : _mm256_setzero_ps();
            avx2_tr8x8_ps(r);
            for (int j = 0; j < 8; j++) _mm256_storeu_ps((float*)(dst + off[j] + a0), r[j]);
        }
        REORDER_EDGE_COLUMNS(uint32_t, bvec);
    }
}

/* 64-bit elements: 8 A rows x 4 B columns a step, two 4x4 transposes, so each dst row piece
 * is one 64-byte line in two stores; otherwise the same walk as the 32-bit tile. */
__attribute__((target("avx2")))
static void tile_avx2_u64(const uint64_t* src, const arows_t* A, int64_t na, uint64_t* dst,
                          const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw) {
    __m256i r[8];
    int64_t soff[8], off[4];
    uint32_t vm, wm;
    int64_t bfull = (nbv < nbw ? nbv : nbw) & ~(int64_t)3;
    int64_t tail;
    int64_t afast = uniform_rows_tail(A, rows, na, 8, bfull == nbw, 0, &tail);
    const int64_t slo = A->slo, dlo = rows->dlo;    /* locals: stores may alias the structs */
    int64_t a_in = afast <= 32 ? afast : 8;
    for (int64_t a1 = 0; a1 < afast; a1 += a_in)
        for (int64_t b0 = 0; b0 < bfull; b0 += 4)
            for (int64_t k = a1; k < a1 + a_in && k < afast; k += 8) {
                const int64_t a0 = UNIFORM_BLOCK(k, 8, afast, tail);
                const uint64_t* s = src + a0 * slo + b0;
                for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_si256((const __m256i*)(s + i * slo));
                avx2_tr4x4_epi64(r);
                avx2_tr4x4_epi64(r + 4);
                uint64_t* d = dst + (bs + b0) * dlo + a0;
                for (int j = 0; j < 4; j++) {
                    _mm256_storeu_si256((__m256i*)(d + j * dlo), r[j]);
                    _mm256_storeu_si256((__m256i*)(d + j * dlo + 4), r[4 + j]);
                }
            }
    for (int64_t a0 = bfull < nbw ? 0 : afast; a0 < na; a0 += 8) {
        int n = na - a0 < 8 ? (int)(na - a0) : 8;
        arow_block(A, a0, n, soff, &vm, &wm);
        if (!wm) continue;
        int64_t bvec = wm == 0xFFu ? bfull : 0;     /* partial row blocks go element-wise */
        for (int64_t b0 = a0 < afast ? bvec : 0; b0 < bvec; b0 += 4) {
            row_offsets(rows, bs + b0, 4, off, 0);
            for (int i = 0; i < 8; i++)
                r[i] = (vm >> i) & 1u ? _mm256_loadu_si256((const __m256i*)(src + soff[i] + b0))
                                      : _mm256_setzero_si256();
            avx2_tr4x4_epi64(r);
            avx2_tr4x4_epi64(r + 4);
            for (int j = 0; j < 4; j++) {
                _mm256_storeu_si256((__m256i*)(dst + off[j] + a0), r[j]);
                _mm256_storeu_si256((__m256i*)(dst + off[j] + a0 + 4), r[4 + j]);
            }
        }
        REORDER_EDGE_COLUMNS(uint64_t, bvec);
    }
}

#include "_tiles_narrow.h"
#include "_tiles_narrow512.h"
#include "_tiles_few.h"

/* Non-temporal copy: aligns dst to 64 bytes, streams whole lines, copies the tail. */
__attribute__((target("avx512f")))
static void copy_nt_avx512(void* dst, const void* src, int64_t nbytes) {
    char* d = (char*)dst;
    const char* s = (const char*)src;
    int64_t head = (int64_t)((64 - ((uintptr_t)d & 63)) & 63);
    if (head > nbytes) head = nbytes;
    memcpy(d, s, (size_t)head);
    d += head; s += head; nbytes -= head;
    for (; nbytes >= 256; nbytes -= 256, d += 256, s += 256) {
        __m512 x0 = _mm512_loadu_ps(s), x1 = _mm512_loadu_ps(s + 64);
        __m512 x2 = _mm512_loadu_ps(s + 128), x3 = _mm512_loadu_ps(s + 192);
        _mm512_stream_ps((float*)d, x0);
        _mm512_stream_ps((float*)(d + 64), x1);
        _mm512_stream_ps((float*)(d + 128), x2);
        _mm512_stream_ps((float*)(d + 192), x3);
    }
    for (; nbytes >= 64; nbytes -= 64, d += 64, s += 64)
        _mm512_stream_ps((float*)d, _mm512_loadu_ps(s));
    memcpy(d, s, (size_t)nbytes);
}

static inline void reorder_sfence(void) { _mm_sfence(); }
#else
static inline void reorder_sfence(void) {}
#endif
static inline int reorder_have_avx512(void) { return reorder_cpu.avx512; }
static inline int reorder_have_avx2(void) { return reorder_cpu.avx2; }
static inline int reorder_have_avx512bw(void) { return reorder_cpu.avx512_bw; }

/* ---- dispatch -------------------------------------------------------------------------- */
static int reorder_simd_disabled = 0;   /* set from Python to test the portable path */
/* Which register transpose the 4-byte tiles use: 512 (16x16) or 256 (8x8); set at import
 * (AVX-512 where available) and switched by tests to check every path. */
static int reorder_tile_bits = 0;

#define REORDER_TILE_ENTRY(N, T, SCALAR)                                                   \
static inline void tile_t##N(const T* s, const arows_t* A, int64_t na, T* d,              \
                             const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw,    \
                             int nt) {                                                    \
    (void)nt; SCALAR(s, A, na, d, rows, bs, nbv, nbw);                                    \
}
/* 4- and 8-byte elements: the AVX-512 tile (which may stream), else the AVX2 one, else the
 * portable loops. */
#if REORDER_X86
#define REORDER_TILE_WIDE_ENTRY(N, T, BITS)                                                \
static inline void tile_t##N(const T* s, const arows_t* A, int64_t na, T* d,              \
                             const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw,    \
                             int nt) {                                                    \
    if (!reorder_simd_disabled && reorder_tile_bits == 512 && reorder_have_avx512()) {    \
        tile_avx512_u##BITS(s, A, na, d, rows, bs, nbv, nbw, nt);                         \
        return;                                                                           \
    }                                                                                     \
    if (!reorder_simd_disabled && reorder_tile_bits >= 256 && reorder_have_avx2()) {      \
        tile_avx2_u##BITS(s, A, na, d, rows, bs, nbv, nbw);                               \
        return;                                                                           \
    }                                                                                     \
    tile_scalar_u##BITS(s, A, na, d, rows, bs, nbv, nbw);                                 \
}
#else
#define REORDER_TILE_WIDE_ENTRY(N, T, BITS) REORDER_TILE_ENTRY(N, T, tile_scalar_u##BITS)
#endif
REORDER_TILE_WIDE_ENTRY(4, uint32_t, 32)
REORDER_TILE_WIDE_ENTRY(8, uint64_t, 64)

/* 1- and 2-byte elements: the few-rows path where it fits (_tiles_few.h), else AVX2
 * register transposes (_tiles_narrow.h) on every SIMD path, except words on the 512-bit path
 * of a CPU with BW, where the AVX-512 tiles (_tiles_narrow512.h) take the shapes they
 * measured faster on. */
#if REORDER_X86
static inline int narrow512_on(void) {
    return !reorder_simd_disabled && reorder_tile_bits == 512 && reorder_have_avx512bw();
}
static inline int narrow256_on(void) {
    return !reorder_simd_disabled && reorder_tile_bits >= 256 && reorder_have_avx2();
}
/* A padded block with few data rows (nchw C=3 -> nChw16c) skips the transpose. */
static inline int tile_few(const void* s, const arows_t* A, int64_t na, void* d,
                           const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw, int nt,
                           int size) {
    int nv = few_rows(A, na, rows, size);
    if (!nv) return 0;
    if (narrow512_on())
        tile_few512((const char*)s, A, na, (char*)d, bs, nbv, nbw, nt, size, nv);
    else if (narrow256_on())
        tile_few2((const char*)s, A, na, (char*)d, bs, nbv, nbw, size, nv);
    else
        return 0;
    return 1;
}
static inline void tile_t1(const uint8_t* s, const arows_t* A, int64_t na, uint8_t* d,
                           const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw, int nt) {
    if (tile_few(s, A, na, d, rows, bs, nbv, nbw, nt, 1)) return;
    if (narrow512_on() && narrow512_bytes(A, na, nbw, rows)) {
        tile_avx512_u8_square(s, A, na, d, rows, bs, nbv, nbw, nt);
        return;
    }
    if (narrow512_on() && narrow_tall(A, na, nbw, 1)) {
        tile_avx512_u8_tall(s, A, na, d, rows, bs, nbv, nbw);
        return;
    }
    if (narrow256_on()) {
        tile_avx2_u8(s, A, na, d, rows, bs, nbv, nbw, nt);
        return;
    }
    tile_scalar_u8(s, A, na, d, rows, bs, nbv, nbw);
}
static inline void tile_t2(const uint16_t* s, const arows_t* A, int64_t na, uint16_t* d,
                           const rows_t* rows, int64_t bs, int64_t nbv, int64_t nbw, int nt) {
    if (tile_few(s, A, na, d, rows, bs, nbv, nbw, nt, 2)) return;
    if (narrow512_on() && narrow512_words(A, na, nt)) {
        tile_avx512_u16(s, A, na, d, rows, bs, nbv, nbw, nt);
        return;
    }
    if (narrow256_on()) {
        tile_avx2_u16(s, A, na, d, rows, bs, nbv, nbw, nt);
        return;
    }
    tile_scalar_u16(s, A, na, d, rows, bs, nbv, nbw);
}
#else
REORDER_TILE_ENTRY(1, uint8_t, tile_scalar_u8)
REORDER_TILE_ENTRY(2, uint16_t, tile_scalar_u16)
#endif

/* Copy one contiguous run (copy_bytes, after copy_grid below). Short runs of a fixed size
 * (a 16-float block row) become a few inlined vector moves instead of a memcpy call. */
#if REORDER_X86
__attribute__((target("avx512f")))
static inline void stream_line(void* d, const void* s) {
    _mm512_stream_ps((float*)d, _mm512_loadu_ps(s));
}
#endif

/* A grid of nr x nc runs of nbytes each (byte strides: rss/rds between rows, css/cds between
 * the columns of a row): nhwc -> nChw16c copies, per pixel, one 16-lane run into each channel
 * block. A fixed run size makes each copy a few inlined vector moves. */
#define REORDER_GRID_LOOP(N)                                                        \
    for (int64_t r = 0; r < nr; r++) {                                              \
        const char* sr = s + r * rss;                                               \
        char* dr = d + r * rds;                                                     \
        for (int64_t c = 0; c < nc; c++)                                            \
            memcpy(dr + c * cds, sr + c * css, N);                                  \
    }

#if REORDER_X86
/* One 64-byte line from 64 / nbytes runs (16, 32 or 64 bytes each) at p, p + step, ... */
__attribute__((target("avx512f")))
static inline __m512i grid_line(const char* p, int64_t step, int64_t nbytes) {
    if (nbytes == 64)
        return _mm512_loadu_si512(p);
    if (nbytes == 32)
        return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256((const __m256i*)p)),
                                  _mm256_loadu_si256((const __m256i*)(p + step)), 1);
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i*)p));
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i*)(p + step)), 1);
    v = _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i*)(p + 2 * step)), 2);
    return _mm512_inserti32x4(v, _mm_loadu_si128((const __m128i*)(p + 3 * step)), 3);
}

/* The grid with streamed stores, when each run is whole aligned lines (f64 nhwc -> nChw16c),
 * or dst runs on along the columns (nChw16c -> nhwc: a pixel's channels) or along the rows
 * (nhwc -> nChw16c: a channel block's pixels) in whole aligned lines; returns 0, having
 * written nothing, when the shape does not allow it. */
__attribute__((target("avx512f")))
static int copy_grid_nt(char* d, const char* s, int64_t nr, int64_t rss, int64_t rds,
                        int64_t nc, int64_t css, int64_t cds, int64_t nbytes) {
    int64_t g = 64 / (nbytes > 0 ? nbytes : 1);
    if ((uintptr_t)d & 63)
        return 0;
    if ((nbytes == 128 || nbytes == 256) && rds % 64 == 0 && cds % 64 == 0) {
        /* runs of whole lines (an f64 block of 16, f32 of 32) */
        for (int64_t r = 0; r < nr; r++)
            for (int64_t c = 0; c < nc; c++)
                copy_nt_avx512(d + r * rds + c * cds, s + r * rss + c * css, nbytes);
        return 1;
    }
    if (nbytes != 16 && nbytes != 32 && nbytes != 64)
        return 0;
    if (cds == nbytes && rds % 64 == 0) {
        int64_t whole = nc - nc % g;
        for (int64_t r = 0; r < nr; r++) {
            for (int64_t c = 0; c < whole; c += g)
                _mm512_stream_si512((__m512i*)(d + r * rds + c * nbytes),
                                    grid_line(s + r * rss + c * css, css, nbytes));
            for (int64_t c = whole; c < nc; c++)
                memcpy(d + r * rds + c * nbytes, s + r * rss + c * css, (size_t)nbytes);
        }
        return 1;
    }
    if (rds == nbytes && cds % 64 == 0) {
        /* a line of each column per g rows: the reads stay sequential */
        int64_t whole = nr - nr % g;
        for (int64_t r = 0; r < whole; r += g)
            for (int64_t c = 0; c < nc; c++)
                _mm512_stream_si512((__m512i*)(d + c * cds + r * nbytes),
                                    grid_line(s + c * css + r * rss, rss, nbytes));
        for (int64_t r = whole; r < nr; r++)
            for (int64_t c = 0; c < nc; c++)
                memcpy(d + c * cds + r * nbytes, s + c * css + r * rss, (size_t)nbytes);
        return 1;
    }
    return 0;
}

/* The grid with cached stores where dst runs on along the rows in 16- or 32-byte runs
 * (nhwc -> nChw16c bytes in the cache: a block's pixels): a line of each column per g rows,
 * one store where a store per run measured slower. Returns the rows done (a multiple of
 * g); the caller copies the rest. */
__attribute__((target("avx512f")))
static int64_t copy_grid_row_lines(char* d, const char* s, int64_t nr, int64_t rss, int64_t nc,
                                   int64_t css, int64_t cds, int64_t nbytes) {
    int64_t g = 64 / nbytes, whole = nr - nr % g;
    for (int64_t r = 0; r < whole; r += g)
        for (int64_t c = 0; c < nc; c++)
            _mm512_storeu_si512(d + c * cds + r * nbytes, grid_line(s + c * css + r * rss, rss, nbytes));
    return whole;
}
#endif

#if REORDER_X86
/* The two-source qword permutes that interleave two columns' 64 bytes of q-qword runs: the
 * first 64 interleaved bytes from idx_lo, the next from idx_hi. */
static inline void pair_tables(int64_t q, int64_t* idx_lo, int64_t* idx_hi) {
    for (int j = 0; j < 8; j++) {                          /* run j / q of column (j / q) & 1 */
        int64_t run = j / q, col = run & 1, pos = (run >> 1) * q + j % q;
        idx_lo[j] = col * 8 + pos;
        idx_hi[j] = col * 8 + pos + 4;
    }
}

/* 64 bytes of each column (a, b) interleaved into 128 bytes at o. */
__attribute__((target("avx512f")))
static inline void pair_store(char* o, __m512i a, __m512i b, __m512i lo, __m512i hi, int stream) {
    __m512i x = _mm512_permutex2var_epi64(a, lo, b), y = _mm512_permutex2var_epi64(a, hi, b);
    if (stream) {
        _mm512_stream_si512((__m512i*)o, x);
        _mm512_stream_si512((__m512i*)(o + 64), y);
    } else {
        _mm512_storeu_si512(o, x);
        _mm512_storeu_si512(o + 64, y);
    }
}
#endif

#if REORDER_X86
/* Two columns of 8- or 16-byte runs that one side holds interleaved and the other as two
 * dense columns (nChw8c <-> nChw16c of bytes and words: a pixel's two 8-lane halves): 64
 * bytes of each column against 128 interleaved, two two-source permutes per 128 bytes,
 * where the grid loop would copy each run alone. 32-byte runs measured slower this way than
 * as the loop's two moves a line. The caller checks nc == 2 and nbytes 8 or 16; returns 0,
 * having written nothing, for other shapes. */
__attribute__((target("avx512f")))
static int copy_grid_pair(char* d, const char* s, int64_t nr, int64_t rss, int64_t rds,
                          int64_t nc, int64_t css, int64_t cds, int64_t nbytes, int nt) {
    int64_t k = 64 / (nbytes > 0 ? nbytes : 1);          /* rows in 64 bytes of a column */
    if (nr < k)
        return 0;
    int64_t q = nbytes / 8;                                /* qwords a run */
    __m512i lo, hi;
    int64_t idx_lo[8], idx_hi[8];
    pair_tables(q, idx_lo, idx_hi);
    lo = _mm512_loadu_si512(idx_lo);
    hi = _mm512_loadu_si512(idx_hi);
    int64_t whole = nr - nr % k, r;
    if (cds == nbytes && rds == 2 * nbytes && rss == nbytes) {          /* to interleaved */
        int stream = nt && ((uintptr_t)d & 63) == 0;
        for (r = 0; r < whole; r += k)
            pair_store(d + r * rds, _mm512_loadu_si512(s + r * rss),
                       _mm512_loadu_si512(s + css + r * rss), lo, hi, stream);
    } else if (css == nbytes && rss == 2 * nbytes && rds == nbytes) {   /* from interleaved */
        /* the inverse permutes: column c's 64 bytes from the 128 interleaved ones */
        int64_t idx_a[8], idx_b[8];
        for (int j = 0; j < 8; j++) {
            idx_a[j] = -1;
            idx_b[j] = -1;
        }
        for (int j = 0; j < 16; j++) {                     /* interleaved qword j */
            int64_t run = (j % 8) / q + (j / 8) * (8 / q), col = run & 1;
            int64_t pos = (run >> 1) * q + j % q;
            if (col == 0) idx_a[pos] = j; else idx_b[pos] = j;
        }
        lo = _mm512_loadu_si512(idx_a);
        hi = _mm512_loadu_si512(idx_b);
        int stream = nt && ((uintptr_t)d & 63) == 0 && cds % 64 == 0;
        for (r = 0; r < whole; r += k) {
            const char* i = s + r * rss;
            __m512i x = _mm512_loadu_si512(i), y = _mm512_loadu_si512(i + 64);
            __m512i c0 = _mm512_permutex2var_epi64(x, lo, y);
            __m512i c1 = _mm512_permutex2var_epi64(x, hi, y);
            if (stream) {
                _mm512_stream_si512((__m512i*)(d + r * rds), c0);
                _mm512_stream_si512((__m512i*)(d + cds + r * rds), c1);
            } else {
                _mm512_storeu_si512(d + r * rds, c0);
                _mm512_storeu_si512(d + cds + r * rds, c1);
            }
        }
    } else {
        return 0;
    }
    for (r = whole; r < nr; r++) {
        memcpy(d + r * rds, s + r * rss, (size_t)nbytes);
        memcpy(d + r * rds + cds, s + r * rss + css, (size_t)nbytes);
    }
    return 1;
}
#endif

#if REORDER_X86
/* The two-column pair into interleaved runs (as copy_grid_pair) where the columns' runs hold
 * nv0 and nv1 valid bytes, the rest zeros (nChw8c -> nChw16c at C=19: dst's last block takes
 * src's block of 3 channels and one past the data): each column's 64 bytes load under its
 * run mask repeated, and a column with no data loads nothing. The per-run masked copies
 * this replaces stored 8 bytes at a time. The caller checks AVX-512BW; returns 0, having
 * written nothing, for other shapes. */
__attribute__((target("avx512f,avx512bw")))
static int copy_grid_pair_part(char* d, const char* s, int64_t nr, int64_t rss, int64_t rds,
                               int64_t css, int64_t cds, int64_t nbytes, int64_t nv0,
                               int64_t nv1, int nt) {
    if (!(nbytes == 8 || nbytes == 16) || cds != nbytes || rds != 2 * nbytes || rss != nbytes
            || nr < 64 / nbytes)
        return 0;
    const int64_t k = 64 / nbytes, q = nbytes / 8, whole = nr - nr % k;
    uint64_t m0 = (1ULL << nv0) - 1, m1 = (1ULL << nv1) - 1;    /* nv < 64 */
    for (int64_t w = nbytes; w < 64; w *= 2) {
        m0 |= m0 << w;
        m1 |= m1 << w;
    }
    int64_t idx_lo[8], idx_hi[8];
    pair_tables(q, idx_lo, idx_hi);
    const __m512i lo = _mm512_loadu_si512(idx_lo), hi = _mm512_loadu_si512(idx_hi);
    const int stream = nt && ((uintptr_t)d & 63) == 0;
    int64_t r;
    for (r = 0; r < whole; r += k)
        pair_store(d + r * rds, _mm512_maskz_loadu_epi8(m0, s + r * rss),
                   _mm512_maskz_loadu_epi8(m1, s + css + r * rss), lo, hi, stream);
    for (; r < nr; r++) {
        char* o = d + r * rds;
        memcpy(o, s + r * rss, (size_t)nv0);
        memset(o + nv0, 0, (size_t)(nbytes - nv0));
        memcpy(o + nbytes, s + css + r * rss, (size_t)nv1);
        memset(o + nbytes + nv1, 0, (size_t)(nbytes - nv1));
    }
    return 1;
}
#endif

static inline int copy_grid_pair_padded(char* d, const char* s, int64_t nr, int64_t rss,
                                        int64_t rds, int64_t css, int64_t cds, int64_t nbytes,
                                        int64_t nv0, int64_t nv1, int nt) {
#if REORDER_X86
    return !reorder_simd_disabled && reorder_have_avx512bw()
        && copy_grid_pair_part(d, s, nr, rss, rds, css, cds, nbytes, nv0, nv1, nt);
#else
    (void)d; (void)s; (void)nr; (void)rss; (void)rds; (void)css; (void)cds; (void)nbytes;
    (void)nv0; (void)nv1; (void)nt;
    return 0;
#endif
}

/* nr rows of nc runs of nbytes each: the two-column or streamed form where the shape allows
 * it, else the loop for the run size. */
static inline void copy_grid(char* d, const char* s, int64_t nr, int64_t rss, int64_t rds,
                             int64_t nc, int64_t css, int64_t cds, int64_t nbytes, int nt) {
#if REORDER_X86
    /* (the shape first: copy_bytes comes here for every short run) */
    if (nc == 2 && (nbytes == 8 || nbytes == 16) && !reorder_simd_disabled && reorder_have_avx512()
            && copy_grid_pair(d, s, nr, rss, rds, nc, css, cds, nbytes, nt))
        return;
    if (nt && !reorder_simd_disabled && reorder_have_avx512()
            && copy_grid_nt(d, s, nr, rss, rds, nc, css, cds, nbytes))
        return;
    if (!nt && (nbytes == 16 || nbytes == 32) && rds == nbytes && nr >= 64 / nbytes
            && !reorder_simd_disabled && reorder_have_avx512()) {
        int64_t done = copy_grid_row_lines(d, s, nr, rss, nc, css, cds, nbytes);
        d += done * rds;
        s += done * rss;
        nr -= done;
    }
#endif
    (void)nt;
    switch (nbytes) {
    case 4: REORDER_GRID_LOOP(4) return;
    case 8: REORDER_GRID_LOOP(8) return;
    case 16: REORDER_GRID_LOOP(16) return;
    case 32: REORDER_GRID_LOOP(32) return;
    case 64: REORDER_GRID_LOOP(64) return;
    case 128: REORDER_GRID_LOOP(128) return;
    case 256: REORDER_GRID_LOOP(256) return;
    default: REORDER_GRID_LOOP((size_t)nbytes) return;
    }
}

static inline void copy_bytes(void* d, const void* s, int64_t nbytes, int nt) {
#if REORDER_X86
    if (nt && nbytes == 64 && ((uintptr_t)d & 63) == 0 && !reorder_simd_disabled
            && reorder_have_avx512()) {
        stream_line(d, s);          /* one block row of 16 floats */
        return;
    }
    if (nt && nbytes >= 64 && !reorder_simd_disabled && reorder_have_avx512()) {
        copy_nt_avx512(d, s, nbytes);
        return;
    }
#endif
    copy_grid((char*)d, (const char*)s, 1, 0, 0, 1, 0, 0, nbytes, 0);   /* one fixed-size run */
}

/* nr runs of a padded column (byte strides rss/rds): nvalid bytes copied, then zeros up to
 * nwrite. With AVX-512BW a masked load reads only the valid bytes, so a 64-byte chunk is
 * one load and one store instead of a memcpy and a memset call. */
#if REORDER_X86
__attribute__((target("avx512f,avx512bw")))
static void copy_part_avx512(char* d, const char* s, int64_t nr, int64_t rss, int64_t rds,
                             int64_t nvalid, int64_t nwrite) {
    if (rss == nwrite && rds == nwrite && (nwrite == 16 || nwrite == 32 || nwrite == 64)) {
        /* runs dense on both sides (a padded block's rows, nChw16c -> nChw16c): 64 bytes at a
           time under the runs' mask repeated, as fast as a copy */
        uint64_t m = nvalid >= 64 ? ~0ULL : (1ULL << nvalid) - 1;
        for (int64_t w = nwrite; w < 64; w *= 2) m |= m << w;
        const int64_t n = nr * nwrite, whole = n - n % 64;
        for (int64_t k = 0; k < whole; k += 64)
            _mm512_storeu_si512(d + k, _mm512_maskz_loadu_epi8(m, s + k));
        if (whole < n) {
            const __mmask64 t = (1ULL << (n - whole)) - 1;
            _mm512_mask_storeu_epi8(d + whole, t, _mm512_maskz_loadu_epi8(m & t, s + whole));
        }
        return;
    }
    for (int64_t k = 0; k < nwrite; k += 64) {
        int64_t v = nvalid - k < 0 ? 0 : nvalid - k > 64 ? 64 : nvalid - k;
        int64_t w = nwrite - k > 64 ? 64 : nwrite - k;
        __mmask64 mv = v == 64 ? ~0ULL : (1ULL << v) - 1, mw = w == 64 ? ~0ULL : (1ULL << w) - 1;
        const char* sk = s + k;
        char* dk = d + k;
        if (w == 64) {
            for (int64_t r = 0; r < nr; r++)
                _mm512_storeu_si512(dk + r * rds, _mm512_maskz_loadu_epi8(mv, sk + r * rss));
        } else if (w == 32) {
            for (int64_t r = 0; r < nr; r++)
                _mm256_storeu_si256((__m256i*)(dk + r * rds),
                    _mm512_castsi512_si256(_mm512_maskz_loadu_epi8(mv, sk + r * rss)));
        } else if (w == 16) {
            int64_t r = 0;
            if (rds == 16) {
                /* rows that run on in dst (nhwc -> nChw16c bytes): four to a line */
                for (; r + 4 <= nr; r += 4) {
                    __m512i x = _mm512_maskz_loadu_epi8(mv, sk + r * rss);
                    x = _mm512_inserti32x4(x, _mm512_castsi512_si128(
                            _mm512_maskz_loadu_epi8(mv, sk + (r + 1) * rss)), 1);
                    x = _mm512_inserti32x4(x, _mm512_castsi512_si128(
                            _mm512_maskz_loadu_epi8(mv, sk + (r + 2) * rss)), 2);
                    x = _mm512_inserti32x4(x, _mm512_castsi512_si128(
                            _mm512_maskz_loadu_epi8(mv, sk + (r + 3) * rss)), 3);
                    _mm512_storeu_si512(dk + r * 16, x);
                }
            }
            for (; r < nr; r++)
                _mm_storeu_si128((__m128i*)(dk + r * rds),
                    _mm512_castsi512_si128(_mm512_maskz_loadu_epi8(mv, sk + r * rss)));
        } else {
            for (int64_t r = 0; r < nr; r++)
                _mm512_mask_storeu_epi8(dk + r * rds, mw, _mm512_maskz_loadu_epi8(mv, sk + r * rss));
        }
    }
}
#endif

/* True when copy_part runs its masked loads (AVX-512BW), not the memcpy and memset per run */
static inline int copy_part_masked(void) {
#if REORDER_X86
    return !reorder_simd_disabled && reorder_have_avx512bw();
#else
    return 0;
#endif
}

static inline void copy_part(char* d, const char* s, int64_t nr, int64_t rss, int64_t rds,
                             int64_t nvalid, int64_t nwrite) {
#if REORDER_X86
    if (!reorder_simd_disabled && reorder_have_avx512bw()) {
        copy_part_avx512(d, s, nr, rss, rds, nvalid, nwrite);
        return;
    }
#endif
    for (int64_t r = 0; r < nr; r++) {
        memcpy(d + r * rds, s + r * rss, (size_t)nvalid);
        memset(d + r * rds + nvalid, 0, (size_t)(nwrite - nvalid));
    }
}

/* The tile path tile_tN takes now for elements of `size` bytes and `na` tile rows (tests
 * assert it, so a path that silently falls back is caught). */
static const char* reorder_tile_name(int size, const arows_t* A, int64_t na, int64_t nb,
                                     const rows_t* rows, int nt) {
    int on = REORDER_X86 && !reorder_simd_disabled;
    int avx512 = on && reorder_tile_bits == 512 && reorder_have_avx512();
    int avx2 = on && reorder_tile_bits >= 256 && reorder_have_avx2();
#if REORDER_X86
    if ((size == 1 || size == 2) && few_rows(A, na, rows, size)) {   /* as tile_few */
        if (narrow512_on()) return "avx512 few rows";
        if (narrow256_on()) return "avx2 few rows";
    }
    int w512 = avx512 && reorder_have_avx512bw() && size == 2 ? narrow512_words(A, na, nt) : 0;
    if (w512) return w512 == 2 ? "avx512 words 32x16" : "avx512 words 16x32";
    if (size == 1 && narrow512_on() && narrow512_bytes(A, na, nb, rows)) return "avx512 bytes 64x16";
    if (size == 1 && narrow512_on() && narrow_tall(A, na, nb, 1))
        return "avx2 bytes 32x16, avx512 edges";   /* tile_avx512_u8_tall */
    if (avx2 && size == 1) return narrow_tall(A, na, nb, 1) ? "avx2 bytes 32x16" : "avx2 bytes 16x16";
    if (avx2 && size == 2) return narrow_tall(A, na, nb, 2) ? "avx2 words 16x8" : "avx2 words 16x16";
#endif
    (void)A; (void)na; (void)nb; (void)rows;
    switch (size) {
    case 4: return avx512 ? "avx512 16x16" : avx2 ? "avx2 8x8" : "portable";
    case 8: return avx512 ? "avx512 qwords 8x8" : avx2 ? "avx2 qwords 8x4" : "portable";
    default: return "portable";
    }
}

static const char* reorder_simd_name(void) {
    if (reorder_simd_disabled) return "portable C (SIMD disabled)";
    if (reorder_tile_bits == 512 && reorder_have_avx512()) return "avx512f (16x16 tiles)";
    if (reorder_tile_bits >= 256 && reorder_have_avx2()) return "avx2 (8x8 tiles)";
    return "portable C";
}
#endif
