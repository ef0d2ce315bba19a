/* The contract every tile of the move kernels follows.
 *
 * The wide paths are compiled with __attribute__((target(...))) and chosen by the features
 * common/cpu_features.h detects once, so the extension builds and runs on any x86-64 or ARM
 * machine without -march=native. Every path writes exactly the same bytes.
 *
 * tile_tN(src, A, na, dst, rows, b0, nbv, nbw, nt) moves an A x B tile:
 *     for b < nbw, a < na:  dst[row(b0 + b) + a] = src[srow(a) + b]  where row a holds data and
 *     b < nbv; 0 where row a or column b is dst padding; nothing where row a is not written.
 * dst is contiguous along a, src along b. Either side may span two axes: B rows go to
 * row(b) = (b / nlo) * dhi + (b % nlo) * dlo (hw then i16 in oihw -> OIhw16i16o), and A rows
 * come from srow(a) = (a / nlo) * shi + (a % nlo) * slo (i4 then o16 in OIhw4i16o4i), with
 * data/write limits per level. nt asks for non-temporal stores of full, aligned 64-byte
 * lines (the caller issues reorder_sfence() before the data is read by another thread).
 * This header holds that contract: the row arithmetic of A and B, the write limits and the
 * helpers every tile (tiles_*.h) shares.
 */
#ifndef REORDER_MOVE_TILE_ROWS_H
#define REORDER_MOVE_TILE_ROWS_H
#include <stdint.h>
#include <string.h>

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
#endif
