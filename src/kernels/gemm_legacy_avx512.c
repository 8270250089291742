/* gemm_legacy_avx512.c - the panels of gemm.h for Q5_0, Q4_1, Q5_1, IQ4_NL and IQ4_XS, whose
 * quants do not lie as el_gemm_layout describes (fifth bits apart from the nibbles, levels looked
 * up in a table, 6-bit sub-block scales, a min): each weight row's group of 32 is unpacked into
 * 32 unsigned bytes (Q5_0's 5-bit levels, offset 16; Q4_1's and Q5_1's levels, no offset; IQ4's
 * levels + 128, offset 128) and the 16 rows transposed into the panel's [k/4][16 rows][4 bytes];
 * the group scales are d, for IQ4_XS d * (ls - 32), and Q4_1's and Q5_1's mins follow them (the
 * tiles add min * Q8_1's scaled block sum per group). gemm_avx512.c's tiles then run on the
 * panel as on any other. A panel serves a whole prompt's rows, so its unpacking is not where the
 * time goes. */
#include "kernels/avx512.h"

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && \
    defined(__AVX512VNNI__) && defined(__F16C__)

#include <immintrin.h>
#include <string.h>

#include "kernels/blocks.h"
#include "kernels/gemm.h"
#include "kernels/legacy_x86_simd.h"

bool el_gemm_legacy_type(el_type t) {
    return t == EL_TYPE_Q5_0 || t == EL_TYPE_Q4_1 || t == EL_TYPE_Q5_1 || t == EL_TYPE_IQ4_NL ||
           t == EL_TYPE_IQ4_XS;
}

bool el_gemm_has_min(el_type t) { return t == EL_TYPE_Q4_1 || t == EL_TYPE_Q5_1; }

/* Group g of a row as 32 unsigned bytes in element order, its scale, and its min (Q4_1, Q5_1). */
static inline __m256i unpack_group(el_type t, const char *row, int64_t g, __m256i table,
                                   float *scale, float *min) {
    if (t == EL_TYPE_Q4_1) {
        const el_block_q4_1 *b = (const el_block_q4_1 *)row + g;
        *scale = _cvtsh_ss(b->d);
        *min = _cvtsh_ss(b->m);
        return legacy_nibbles((const char *)b->qs);
    }
    if (t == EL_TYPE_Q5_1) {
        const el_block_q5_1 *b = (const el_block_q5_1 *)row + g;
        uint32_t qh;
        memcpy(&qh, b->qh, sizeof qh);
        *scale = _cvtsh_ss(b->d);
        *min = _cvtsh_ss(b->m);
        return legacy_add_fifth(legacy_nibbles((const char *)b->qs), qh);
    }
    if (t == EL_TYPE_Q5_0) {
        const el_block_q5_0 *b = (const el_block_q5_0 *)row + g;
        uint32_t qh;
        memcpy(&qh, b->qh, sizeof qh);
        *scale = _cvtsh_ss(b->d);
        return legacy_add_fifth(legacy_nibbles((const char *)b->qs), qh);
    }
    if (t == EL_TYPE_IQ4_NL) {
        const el_block_iq4_nl *b = (const el_block_iq4_nl *)row + g;
        *scale = _cvtsh_ss(b->d);
        return _mm256_shuffle_epi8(table, legacy_nibbles((const char *)b->qs));
    }
    const el_block_iq4_xs *b = (const el_block_iq4_xs *)row + g / 8;
    *scale = _cvtsh_ss(b->d) * (float)el_iq4_xs_scale(b, (int)(g % 8));
    return _mm256_shuffle_epi8(table, legacy_nibbles((const char *)b->qs + 16 * (g % 8)));
}

void el_gemm_pack_legacy_avx512(const el_weight *w, const char *const rows[EL_GEMM_PANEL],
                                void *panel) {
    const __m256i table = legacy_iq4_table();
    const __m512i dword = _mm512_setr_epi32(0, 8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 88, 96,
                                            104, 112, 120);
    __m512i *q = panel;
    float *scales = (float *)((char *)panel + (size_t)w->k_in * EL_GEMM_PANEL);
    float *mins = scales + w->k_in / 32 * EL_GEMM_PANEL, unused[EL_GEMM_PANEL];
    bool has_min = el_gemm_has_min(w->type);
    for (int64_t g = 0; g < w->k_in / 32; g++, q += 8, scales += EL_GEMM_PANEL) {
        _Alignas(64) uint32_t bytes[EL_GEMM_PANEL][8]; /* [row][dword]: the unpacked group */
        float *m = has_min ? mins + g * EL_GEMM_PANEL : unused;
        for (int o = 0; o < EL_GEMM_PANEL; o++)
            _mm256_store_si256((__m256i *)bytes[o], unpack_group(w->type, rows[o], g, table,
                                                                 &scales[o], &m[o]));
        /* dword j (elements 4j..4j+3) of every row into register j */
        for (int j = 0; j < 8; j++)
            _mm512_store_si512(q + j, _mm512_i32gather_epi32(dword, &bytes[0][j], 4));
    }
}

#endif
