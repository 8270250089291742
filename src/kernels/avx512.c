/* avx512.c - AVX-512 kernels with VNNI (vpdpbusd: 4 unsigned x signed byte products summed
 * into each 32-bit lane in one instruction) for q8_0 and q4_0 weights: dot products two blocks
 * per 512-bit register (one at a time on 256 bits for the last few), and 4x4 tiles on 256-bit
 * registers (AVX512-VL). Other types keep the
 * AVX2 kernels, which the dispatcher installs first.
 * Built with -mavx512f -mavx512bw -mavx512vl -mavx512vnni (and AVX2's flags) on x86 (see
 * Makefile) and used only when the CPU and the OS support them. */
#include "kernels/dispatch.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__F16C__)

#include <cpuid.h>
#include <immintrin.h>
#include <string.h>

#include "kernels/blocks.h"

static float fp16(uint16_t h) { return _cvtsh_ss(h); }

/* The 32 quants of blocks b[0] and b[1] in the two halves of a register. */
static inline __m512i load2_q8_0(const el_block_q8_0 *b) {
    __m256i lo = _mm256_loadu_si256((const __m256i *)b[0].qs);
    return _mm512_inserti64x4(_mm512_castsi256_si512(lo),
                              _mm256_loadu_si256((const __m256i *)b[1].qs), 1);
}

/* Signed x . signed y per lane of 4 bytes: vpdpbusd wants x unsigned, so the sign of x moves
 * onto y (exact for |y| <= 127, which holds for activations quantized by el_*_from_float). */
static inline __m512i dot_i8(__m512i x, __m512i y) {
    __m512i sy = _mm512_mask_sub_epi8(y, _mm512_movepi8_mask(x), _mm512_setzero_si512(), y);
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(x), sy);
}

/* Blocks k and k+1 of a q8_0 pair: int32 lanes 0-7 belong to block k, 8-15 to block k+1. */
static inline __m512i q8_0_dot2(const el_block_q8_0 *a, const el_block_q8_0 *b) {
    return dot_i8(load2_q8_0(a), load2_q8_0(b));
}

/* Blocks k and k+1 of a q4_0 pair, arranged by 128-bit lanes as [lo_k lo_k+1 hi_k hi_k+1]
 * (nibbles: the 16 bytes of both blocks, then the same shifted by 4) against the activations
 * rearranged to match; so int32 lanes 0-3 and 8-11 belong to block k, 4-7 and 12-15 to k+1.
 * sum (u - 8) y = sum u y - sum 8 y with u unsigned. */
static inline __m512i q4_0_dot2(const el_block_q4_0 *a, const el_block_q8_0 *b) {
    __m256i q = _mm256_set_m128i(_mm_loadu_si128((const __m128i *)a[1].qs),
                                 _mm_loadu_si128((const __m128i *)a[0].qs));
    __m512i shifts = _mm512_inserti64x4(_mm512_setzero_si512(), _mm256_set1_epi16(4), 1);
    __m512i u = _mm512_and_si512(_mm512_srlv_epi16(_mm512_broadcast_i64x4(q), shifts),
                                 _mm512_set1_epi8(0x0F));
    __m512i y = load2_q8_0(b); /* [y_k lo, y_k hi, y_k+1 lo, y_k+1 hi] */
    y = _mm512_shuffle_i64x2(y, y, _MM_SHUFFLE(3, 1, 2, 0));
    __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, y);
    return _mm512_sub_epi32(p, _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(8), y));
}

/* One block pair on 256 bits (the tails): the integer dots as 8 int32 lanes. */
static inline __m256i q8_0_dot1(const el_block_q8_0 *a, const el_block_q8_0 *b) {
    __m256i x = _mm256_loadu_si256((const __m256i *)a->qs);
    __m256i y = _mm256_loadu_si256((const __m256i *)b->qs);
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
}

static inline __m256i q4_0_dot1(const el_block_q4_0 *a, const el_block_q8_0 *b) {
    __m128i q = _mm_loadu_si128((const __m128i *)a->qs);
    __m256i u = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), _mm256_set1_epi8(0x0F));
    __m256i y = _mm256_loadu_si256((const __m256i *)b->qs);
    __m256i p = _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, y);
    return _mm256_sub_epi32(p, _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(8), y));
}

static float hsum256_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* The fp16 scales d of 8 consecutive blocks stride bytes apart (d first in each), as floats. */
static inline __m256 fp16x8(const void *blocks, size_t stride) {
    const char *p = blocks;
    uint16_t h[8];
    for (int k = 0; k < 8; k++) memcpy(&h[k], p + k * stride, sizeof h[k]);
    return _mm256_cvtph_ps(_mm_setr_epi16((short)h[0], (short)h[1], (short)h[2], (short)h[3],
                                          (short)h[4], (short)h[5], (short)h[6], (short)h[7]));
}

/* Groups of 8 blocks share one conversion of their 16 scales, spread to the lanes of each pair
 * by a permute; two accumulators hide the fmadd latency; the last nb % 8 blocks go one by one
 * on 256 bits. x is q4_0 (q4) or q8_0 blocks, y q8_0 blocks. */
static inline __attribute__((always_inline)) float dot_blocks32(int64_t nb, const void *x,
                                                                size_t x_block, const void *y,
                                                                bool q4) {
    const char *xa = x;
    const el_block_q8_0 *b = y;
    /* lane -> block of the pair: q8_0 pairs are 8 + 8 lanes, q4_0 pairs 4 + 4 + 4 + 4 */
    const __m512i pick0 = q4 ? _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1)
                             : _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    int64_t i = 0;
    for (; i + 8 <= nb; i += 8) {
        __m512 d = _mm512_castps256_ps512(
            _mm256_mul_ps(fp16x8(xa + i * x_block, x_block), fp16x8(b + i, sizeof *b)));
        #pragma GCC unroll 4
        for (int k = 0; k < 8; k += 2) {
            const void *xb = xa + (i + k) * x_block;
            __m512i p = q4 ? q4_0_dot2(xb, b + i + k) : q8_0_dot2(xb, b + i + k);
            __m512 dk = _mm512_permutexvar_ps(_mm512_add_epi32(pick0, _mm512_set1_epi32(k)), d);
            acc[(k / 2) & 1] = _mm512_fmadd_ps(dk, _mm512_cvtepi32_ps(p), acc[(k / 2) & 1]);
        }
    }
    __m256 tail = _mm256_setzero_ps();
    for (; i < nb; i++) {
        const void *xb = xa + i * x_block;
        uint16_t dx;
        memcpy(&dx, xb, sizeof dx);
        __m256i p = q4 ? q4_0_dot1(xb, b + i) : q8_0_dot1(xb, b + i);
        tail = _mm256_fmadd_ps(_mm256_set1_ps(fp16(dx) * fp16(b[i].d)), _mm256_cvtepi32_ps(p), tail);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(acc[0], acc[1])) + hsum256_ps(tail);
}

static void vec_dot_q8_0(int64_t n, float *s, const void *x, const void *y) {
    *s = dot_blocks32(n / EL_QK8_0, x, sizeof(el_block_q8_0), y, false);
}

static void vec_dot_q4_0(int64_t n, float *s, const void *x, const void *y) {
    *s = dot_blocks32(n / EL_QK4_0, x, sizeof(el_block_q4_0), y, true);
}

/* Folds the 8 int32 lanes of four dots into [d0 d1 d2 d3 | d0 d1 d2 d3], each half a partial
 * sum (two rounds of hadd). */
static inline __m256i fold4(__m256i p0, __m256i p1, __m256i p2, __m256i p3) {
    return _mm256_hadd_epi32(_mm256_hadd_epi32(p0, p1), _mm256_hadd_epi32(p2, p3));
}

/* The four fp16 scales of a tile's weight rows for one block, in both halves. */
static inline __m256 tile_scales(const uint16_t wd[EL_TILE]) {
    __m128 d = _mm_cvtph_ps(_mm_setr_epi16((short)wd[0], (short)wd[1], (short)wd[2],
                                           (short)wd[3], 0, 0, 0, 0));
    return _mm256_set_m128(d, d);
}

/* The 4x4 tiles: as avx2.c's, with vpdpbusd doing the byte products. For q4_0 the quants stay
 * unsigned and the offset 8 * sum y comes off once per activation row; for q8_0 the sign trick
 * moves the weight's sign onto the activation. Loops over the tile are unrolled so its arrays
 * live in registers. */
static inline __attribute__((always_inline)) void tile_b32(int64_t n, float *y, int64_t ldy,
                                                           const void *w, size_t w_stride,
                                                           const void *a, size_t a_stride,
                                                           bool q4) {
    const __m256i low4 = _mm256_set1_epi8(0x0F), eight = _mm256_set1_epi8(8);
    const __m256i zero = _mm256_setzero_si256();
    const size_t w_block = q4 ? sizeof(el_block_q4_0) : sizeof(el_block_q8_0);
    __m256 acc[EL_TILE];
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) acc[r] = _mm256_setzero_ps();
    const char *wp = w;
    for (int64_t i = 0; i < n / EL_QK8_0; i++, wp += w_block) {
        __m256i wq[EL_TILE], wu[EL_TILE]; /* signed quants (q8_0) and the unsigned operand */
        uint16_t wd[EL_TILE];
        #pragma GCC unroll 4
        for (int o = 0; o < EL_TILE; o++) {
            const char *blk = wp + (size_t)o * w_stride;
            if (q4) {
                __m128i q = _mm_loadu_si128((const __m128i *)((const el_block_q4_0 *)blk)->qs);
                wu[o] = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(q, 4), q), low4);
                wq[o] = zero;
                wd[o] = ((const el_block_q4_0 *)blk)->d;
            } else {
                wq[o] = _mm256_loadu_si256((const __m256i *)((const el_block_q8_0 *)blk)->qs);
                wu[o] = _mm256_sign_epi8(wq[o], wq[o]);
                wd[o] = ((const el_block_q8_0 *)blk)->d;
            }
        }
        const __m256 dw = tile_scales(wd);
        #pragma GCC unroll 4
        for (int r = 0; r < EL_TILE; r++) {
            const el_block_q8_0 *ab = (const el_block_q8_0 *)((const char *)a + r * a_stride) + i;
            __m256i yq = _mm256_loadu_si256((const __m256i *)ab->qs);
            __m256i p[EL_TILE];
            #pragma GCC unroll 4
            for (int o = 0; o < EL_TILE; o++)
                p[o] = _mm256_dpbusd_epi32(zero, wu[o], q4 ? yq : _mm256_sign_epi8(yq, wq[o]));
            __m256i dots = fold4(p[0], p[1], p[2], p[3]);
            if (q4) {
                __m256i off = _mm256_dpbusd_epi32(zero, eight, yq);
                dots = _mm256_sub_epi32(dots, fold4(off, off, off, off));
            }
            __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(fp16(ab->d)));
            acc[r] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots), d, acc[r]);
        }
    }
    #pragma GCC unroll 4
    for (int r = 0; r < EL_TILE; r++) {
        __m128 v = _mm_add_ps(_mm256_castps256_ps128(acc[r]), _mm256_extractf128_ps(acc[r], 1));
        _mm_storeu_ps(y + r * ldy, v);
    }
}

static void tile_q8_0(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                      const void *a, size_t a_stride) {
    tile_b32(n, y, ldy, w, w_stride, a, a_stride, false);
}

static void tile_q4_0(int64_t n, float *y, int64_t ldy, const void *w, size_t w_stride,
                      const void *a, size_t a_stride) {
    tile_b32(n, y, ldy, w, w_stride, a, a_stride, true);
}

/* cpuid leaf 7 ebx: AVX512F (bit 16), AVX512BW (30), AVX512VL (31); ecx: AVX512_VNNI (11).
 * The OS must save the opmask and ZMM state: xgetbv(0) bits 1, 2 and 5-7. */
static bool cpu_has_avx512_vnni(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || (c & (1u << 27)) == 0) return false; /* OSXSAVE */
    unsigned xcr0_lo, xcr0_hi;
    __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
    if ((xcr0_lo & 0xE6) != 0xE6) return false;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    const unsigned need_b = (1u << 16) | (1u << 30) | (1u << 31);
    return (b & need_b) == need_b && (c & (1u << 11)) != 0;
}

bool el_kernels_avx512(el_kernels *k) {
    if (!cpu_has_avx512_vnni()) return false;
    k->isa = "avx512vnni";
    k->vec_dot[EL_TYPE_Q8_0] = vec_dot_q8_0;
    k->vec_dot[EL_TYPE_Q4_0] = vec_dot_q4_0;
    k->tile[EL_TYPE_Q8_0] = tile_q8_0;
    k->tile[EL_TYPE_Q4_0] = tile_q4_0;
    return true;
}

#else

/* Built without AVX-512 code generation (not x86, or without the Makefile's per-file flags). */
bool el_kernels_avx512(el_kernels *k) {
    (void)k;
    return false;
}

#endif
