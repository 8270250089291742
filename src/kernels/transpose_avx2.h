/* transpose_avx2.h - the in-lane transpose the AVX2 and AVX-512 gemms share to take 8 weight
 * rows' bytes by 4-byte words. Include only from files built with -mavx2 (see Makefile). */
#ifndef EL_KERNELS_TRANSPOSE_AVX2_H
#define EL_KERNELS_TRANSPOSE_AVX2_H

#include <immintrin.h>

/* The 16 bytes at a and at b, in the low and high halves. */
static inline __m256i el_rows2_avx2(const char *a, const char *b) {
    return _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)a)),
                                   _mm_loadu_si128((const __m128i *)b), 1);
}

/* x[r] = el_rows2_avx2(row r, row r + 4) for r < 4 into out[j] = dword j of rows 0..7: rows r
 * and r + 4 share a register (one per 128-bit lane), so in-lane unpacks leave every row in its
 * place. */
static inline void el_transpose8x4_avx2(__m256i x0, __m256i x1, __m256i x2, __m256i x3,
                                        __m256i out[4]) {
    __m256i t0 = _mm256_unpacklo_epi32(x0, x1), t1 = _mm256_unpackhi_epi32(x0, x1);
    __m256i t2 = _mm256_unpacklo_epi32(x2, x3), t3 = _mm256_unpackhi_epi32(x2, x3);
    out[0] = _mm256_unpacklo_epi64(t0, t2);
    out[1] = _mm256_unpackhi_epi64(t0, t2);
    out[2] = _mm256_unpacklo_epi64(t1, t3);
    out[3] = _mm256_unpackhi_epi64(t1, t3);
}

/* The 16 bytes at off of rows[0..7] as out[j] = dword j of the 8 rows. */
static inline void el_transpose_rows8x4_avx2(const char *const *rows, size_t off, __m256i out[4]) {
    el_transpose8x4_avx2(el_rows2_avx2(rows[0] + off, rows[4] + off),
                         el_rows2_avx2(rows[1] + off, rows[5] + off),
                         el_rows2_avx2(rows[2] + off, rows[6] + off),
                         el_rows2_avx2(rows[3] + off, rows[7] + off), out);
}

/* A chunk of 32 bytes (one byte an element, in element order) of 16 rows as the AVX2 gemms'
 * int4 registers: dst[2s + k] holds elements 4s..4s+3 of rows 8k..8k+7. */
static inline void el_pack_bytes16_avx2(const char *const rows[16], __m256i *dst) {
    for (int half = 0; half < 2; half++)
        for (int k = 0; k < 2; k++) {
            __m256i t[4];
            el_transpose_rows8x4_avx2(rows + 8 * k, 16 * (size_t)half, t);
            for (int s = 0; s < 4; s++) _mm256_store_si256(dst + 2 * (4 * half + s) + k, t[s]);
        }
}

#endif
