/* lora_avx2.c - the B products of a LoRA term in AVX2: float B (el_lora_packed) and the int8 B
 * under a profile (el_lora_packed_i8).
 *
 * Float B: per block of 32 outputs, four 8-wide float sums, each rank's 32 values converted by
 * F16C (f16), a shift (bf16) or loaded (f32) and multiplied into them with one fused
 * multiply-add. The plain loop of lora.c, even vectorized, converted a half with six integer and
 * float operations and did not fuse, and was bound by that work rather than by B's bytes.
 *
 * Int8 B: B is packed in blocks of 32 outputs, P[b][k][j] (lora.h). Two ranks at a time, the 32 values
 * of row k and of row k + 1 are widened to int16 and interleaved, so that one vpmaddwd per 8
 * outputs multiplies both by the broadcast pair (t[k], t[k + 1]) and adds the two products into
 * int32: 64 multiply-adds in 16 instructions, where the compiler's widening to int32 and vpmulld
 * took twice as many. The sums are exact, and the float step after them is the reference's
 * (y += c * sum, a multiply then an add), so the bytes are the portable kernel's. */
#include "kernels/avx2.h"

#if defined(__AVX2__)

#include <immintrin.h>

#include "kernels/lora.h"

/* 8 values of B at p (the i-th 8 of a rank's 32) as floats. */
static inline __m256 float8(el_type type, const void *p, int i) {
    if (type == EL_TYPE_F16)
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + 8 * i)));
    if (type == EL_TYPE_BF16) {
        __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)p + 8 * i));
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
    return _mm256_loadu_ps((const float *)p + 8 * i);
}

static inline __attribute__((always_inline)) void packed_float(el_type type, int64_t rank,
                                                               int64_t n_blocks, const float *t,
                                                               const void *p, float *y) {
    size_t esz = type == EL_TYPE_F32 ? 4 : 2;
    const char *blk = p;
    for (int64_t b = 0; b < n_blocks; b++, y += EL_LORA_PACK) {
        /* named accumulators: as an array indexed in a loop, GCC kept them in memory */
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
        for (int64_t k = 0; k < rank; k++, blk += EL_LORA_PACK * esz) {
            __m256 tk = _mm256_broadcast_ss(t + k);
            a0 = _mm256_fmadd_ps(tk, float8(type, blk, 0), a0);
            a1 = _mm256_fmadd_ps(tk, float8(type, blk, 1), a1);
            a2 = _mm256_fmadd_ps(tk, float8(type, blk, 2), a2);
            a3 = _mm256_fmadd_ps(tk, float8(type, blk, 3), a3);
        }
        _mm256_storeu_ps(y, _mm256_add_ps(_mm256_loadu_ps(y), a0));
        _mm256_storeu_ps(y + 8, _mm256_add_ps(_mm256_loadu_ps(y + 8), a1));
        _mm256_storeu_ps(y + 16, _mm256_add_ps(_mm256_loadu_ps(y + 16), a2));
        _mm256_storeu_ps(y + 24, _mm256_add_ps(_mm256_loadu_ps(y + 24), a3));
    }
}

void el_lora_packed_avx2(el_type type, int64_t rank, int64_t n_blocks, const float *t,
                         const void *p, float *y) {
    if (type == EL_TYPE_F16) packed_float(EL_TYPE_F16, rank, n_blocks, t, p, y);
    else if (type == EL_TYPE_BF16) packed_float(EL_TYPE_BF16, rank, n_blocks, t, p, y);
    else packed_float(EL_TYPE_F32, rank, n_blocks, t, p, y);
}

/* The pair (t[k], t[k + 1]) in every 32-bit lane, as two int16. */
static inline __m256i pair_of(int8_t t0, int8_t t1) {
    return _mm256_set1_epi32((int32_t)((uint32_t)(uint16_t)t0 | (uint32_t)(uint16_t)t1 << 16));
}

/* acc_a (outputs 0-3 and 8-11 of the 16 at p) and acc_b (4-7, 12-15) += rows k and k + 1 (16
 * int8 each, 32 bytes apart) against the pair tp. */
static inline void pair_madd(const int8_t *p, __m256i tp, __m256i *acc_a, __m256i *acc_b) {
    __m256i r0 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)p));
    __m256i r1 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(p + EL_LORA_PACK)));
    *acc_a = _mm256_add_epi32(*acc_a, _mm256_madd_epi16(_mm256_unpacklo_epi16(r0, r1), tp));
    *acc_b = _mm256_add_epi32(*acc_b, _mm256_madd_epi16(_mm256_unpackhi_epi16(r0, r1), tp));
}

/* y[0..n) += c * the 16 sums, given in acc_a/acc_b's order (above). */
static inline void store16(__m256i acc_a, __m256i acc_b, __m256 c, float *y, int n) {
    __m256i lo = _mm256_permute2x128_si256(acc_a, acc_b, 0x20); /* outputs 0-7 */
    __m256i hi = _mm256_permute2x128_si256(acc_a, acc_b, 0x31); /* outputs 8-15 */
    float v[16];
    _mm256_storeu_ps(v, _mm256_mul_ps(c, _mm256_cvtepi32_ps(lo)));
    _mm256_storeu_ps(v + 8, _mm256_mul_ps(c, _mm256_cvtepi32_ps(hi)));
    if (n == 16) {
        _mm256_storeu_ps(y, _mm256_add_ps(_mm256_loadu_ps(y), _mm256_loadu_ps(v)));
        _mm256_storeu_ps(y + 8, _mm256_add_ps(_mm256_loadu_ps(y + 8), _mm256_loadu_ps(v + 8)));
        return;
    }
    for (int j = 0; j < n; j++) y[j] += v[j];
}

void el_lora_packed_i8_avx2(int64_t rank, int64_t n_out, const int8_t *t, const int8_t *p,
                            float c, float *y) {
    __m256 cv = _mm256_set1_ps(c);
    for (int64_t o0 = 0; o0 < n_out; o0 += EL_LORA_PACK, p += rank * EL_LORA_PACK) {
        __m256i a0 = _mm256_setzero_si256(), b0 = a0, a1 = a0, b1 = a0;
        int64_t k = 0;
        for (; k + 1 < rank; k += 2) {
            __m256i tp = pair_of(t[k], t[k + 1]);
            const int8_t *row = p + k * EL_LORA_PACK;
            pair_madd(row, tp, &a0, &b0);
            pair_madd(row + 16, tp, &a1, &b1);
        }
        if (k < rank) { /* an odd rank's last row, paired with zeros */
            int8_t last[2 * EL_LORA_PACK] = {0};
            for (int j = 0; j < EL_LORA_PACK; j++) last[j] = p[k * EL_LORA_PACK + j];
            __m256i tp = pair_of(t[k], 0);
            pair_madd(last, tp, &a0, &b0);
            pair_madd(last + 16, tp, &a1, &b1);
        }
        int n = n_out - o0 < EL_LORA_PACK ? (int)(n_out - o0) : EL_LORA_PACK;
        store16(a0, b0, cv, y + o0, n < 16 ? n : 16);
        if (n > 16) store16(a1, b1, cv, y + o0 + 16, n - 16);
    }
}

#endif
