/* gemm_avx512.h - what the AVX-512 packed products (gemm_avx512.c, and the K-quants' own in
 * gemm_kquant_avx512.c) share: the 16-row transpose that packs a panel, and the inner loop of
 * one scale group against 8 activation rows. Included inside their AVX-512 guard. */
#ifndef EL_KERNELS_GEMM_AVX512_H
#define EL_KERNELS_GEMM_AVX512_H

#include <immintrin.h>
#include <stdint.h>
#include <string.h>

/* The 16 bytes at off of rows p[4j .. 4j+3], one row per 128-bit lane. */
static inline __m512i load_rows4(const char *const *p, size_t off) {
    __m512i x = _mm512_castsi128_si512(_mm_loadu_si128((const __m128i *)(p[0] + off)));
    x = _mm512_inserti32x4(x, _mm_loadu_si128((const __m128i *)(p[1] + off)), 1);
    x = _mm512_inserti32x4(x, _mm_loadu_si128((const __m128i *)(p[2] + off)), 2);
    return _mm512_inserti32x4(x, _mm_loadu_si128((const __m128i *)(p[3] + off)), 3);
}

/* 16 rows x 4 dwords (the 16 bytes at off of each row) into out[c] = dword c of rows 0..15.
 * After the in-lane transposes, dword c of row 4p + l sits at position 4l + p of out[c]; one
 * permute puts it at position 4p + l. */
static inline void transpose16x4(const char *const *rows, size_t off, __m512i out[4]) {
    __m512i x0 = load_rows4(rows, off), x1 = load_rows4(rows + 4, off);
    __m512i x2 = load_rows4(rows + 8, off), x3 = load_rows4(rows + 12, off);
    __m512i t0 = _mm512_unpacklo_epi32(x0, x1), t1 = _mm512_unpackhi_epi32(x0, x1);
    __m512i t2 = _mm512_unpacklo_epi32(x2, x3), t3 = _mm512_unpackhi_epi32(x2, x3);
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    out[0] = _mm512_permutexvar_epi32(order, _mm512_unpacklo_epi64(t0, t2));
    out[1] = _mm512_permutexvar_epi32(order, _mm512_unpackhi_epi64(t0, t2));
    out[2] = _mm512_permutexvar_epi32(order, _mm512_unpacklo_epi64(t1, t3));
    out[3] = _mm512_permutexvar_epi32(order, _mm512_unpackhi_epi64(t1, t3));
}

static inline __m512i broadcast_i32(const char *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return _mm512_set1_epi32(v);
}

/* One scale group for 8 activation rows: acc[r] += dpbusd(q[s], 4 bytes of a[r] at 4s) for
 * s < dwords (even: 4 for a Q6_K group of 16, 8 or more for the others), the activation bytes
 * taken by embedded broadcast. In assembly: with the intrinsics, gcc copies every accumulator
 * to another register and back at each step. */
static inline void group8(__m512i acc[8], const __m512i *q, const char *const a[8],
                          int64_t dwords) {
    __m512i w;
    int64_t off = 0;
    __asm__("1:\n\t"
            "vmovdqa64 (%[q]), %[w]\n\t"
            "vpdpbusd (%[a0],%[off])%{1to16%}, %[w], %[c0]\n\t"
            "vpdpbusd (%[a1],%[off])%{1to16%}, %[w], %[c1]\n\t"
            "vpdpbusd (%[a2],%[off])%{1to16%}, %[w], %[c2]\n\t"
            "vpdpbusd (%[a3],%[off])%{1to16%}, %[w], %[c3]\n\t"
            "vpdpbusd (%[a4],%[off])%{1to16%}, %[w], %[c4]\n\t"
            "vpdpbusd (%[a5],%[off])%{1to16%}, %[w], %[c5]\n\t"
            "vpdpbusd (%[a6],%[off])%{1to16%}, %[w], %[c6]\n\t"
            "vpdpbusd (%[a7],%[off])%{1to16%}, %[w], %[c7]\n\t"
            "vmovdqa64 64(%[q]), %[w]\n\t"
            "vpdpbusd 4(%[a0],%[off])%{1to16%}, %[w], %[c0]\n\t"
            "vpdpbusd 4(%[a1],%[off])%{1to16%}, %[w], %[c1]\n\t"
            "vpdpbusd 4(%[a2],%[off])%{1to16%}, %[w], %[c2]\n\t"
            "vpdpbusd 4(%[a3],%[off])%{1to16%}, %[w], %[c3]\n\t"
            "vpdpbusd 4(%[a4],%[off])%{1to16%}, %[w], %[c4]\n\t"
            "vpdpbusd 4(%[a5],%[off])%{1to16%}, %[w], %[c5]\n\t"
            "vpdpbusd 4(%[a6],%[off])%{1to16%}, %[w], %[c6]\n\t"
            "vpdpbusd 4(%[a7],%[off])%{1to16%}, %[w], %[c7]\n\t"
            "add $128, %[q]\n\t"
            "add $8, %[off]\n\t"
            "cmp %[end], %[off]\n\t"
            "jb 1b"
            : [c0] "+v"(acc[0]), [c1] "+v"(acc[1]), [c2] "+v"(acc[2]), [c3] "+v"(acc[3]),
              [c4] "+v"(acc[4]), [c5] "+v"(acc[5]), [c6] "+v"(acc[6]), [c7] "+v"(acc[7]),
              [w] "=&v"(w), [q] "+r"(q), [off] "+r"(off)
            : [a0] "r"(a[0]), [a1] "r"(a[1]), [a2] "r"(a[2]), [a3] "r"(a[3]), [a4] "r"(a[4]),
              [a5] "r"(a[5]), [a6] "r"(a[6]), [a7] "r"(a[7]), [end] "r"(4 * dwords)
            : "cc", "memory");
}

/* f[r] += the integer sums acc[r] of group g times (weight scales dw x activation scale), for n
 * rows: every path scales in this order, so a row's results are the same bits in each. Group 0
 * is a product, not a multiply-add onto zero (which makes a zero product +0), so that a per-row
 * type's one group gives its gemv's bits: (row scale x activation scale) x sum, zeros' signs
 * included. */
static inline __attribute__((always_inline)) void scale_group(__m512 f[], const __m512i acc[],
                                                              __m512 dw,
                                                              const el_gemm_aux *const ax[],
                                                              int64_t g, const int n) {
    #pragma GCC unroll 8
    for (int r = 0; r < n; r++) {
        __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(ax[r][g].d));
        __m512 s = _mm512_cvtepi32_ps(acc[r]);
        f[r] = g == 0 ? _mm512_mul_ps(s, d) : _mm512_fmadd_ps(s, d, f[r]);
    }
}

#endif
