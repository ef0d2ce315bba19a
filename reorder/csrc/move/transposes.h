/* The register transposes the move headers take, and whether the x86 SIMD paths compile here.
 * REORDER_X86 is 1 with gcc or clang on x86 (the wide paths are compiled with
 * __attribute__((target(...))) and chosen at run time), else 0 and only the portable paths
 * exist. */
#ifndef REORDER_MOVE_TRANSPOSES_H
#define REORDER_MOVE_TRANSPOSES_H

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define REORDER_X86 1
#include <immintrin.h>
#ifndef REORDER_TR16_ALWAYS_INLINE
#define REORDER_TR16_ALWAYS_INLINE 1     /* common/transpose_avx512.h: the move kernels' many sites */
#endif
#include "common/transpose_avx512.h"
#include "common/transpose_avx2.h"
#else
#define REORDER_X86 0
#endif

#endif
