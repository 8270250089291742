/* test_kernels_simd.c - every ISA-specific dot product against the portable reference, on blocks
 * of random bytes (every bit pattern of quants and scales) and awkward lengths. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/blocks.h"
#include "kernels/dispatch.h"
#include "testutil.h"

/* Random bytes for a weight row, with its block scales replaced by sane fp16 values (random
 * bits there would mostly be huge, inf or nan). */
static void random_weights(el_type type, void *data, int64_t n, test_rng *r) {
    size_t bytes = el_row_size(type, n);
    uint8_t *p = data;
    for (size_t i = 0; i < bytes; i++) p[i] = (uint8_t)test_rand_u32(r);
    int64_t nb = n / el_type_get(type)->block_size;
    for (int64_t b = 0; b < nb; b++) {
        uint16_t d = el_fp32_to_fp16(test_rand_uniform(r, -0.02f, 0.02f));
        uint16_t dmin = el_fp32_to_fp16(test_rand_uniform(r, 0.0f, 0.01f));
        switch (type) {
        case EL_TYPE_Q8_0: ((el_block_q8_0 *)data)[b].d = d; break;
        case EL_TYPE_Q4_0: ((el_block_q4_0 *)data)[b].d = d; break;
        case EL_TYPE_Q4_K:
            ((el_block_q4_k *)data)[b].d = d;
            ((el_block_q4_k *)data)[b].dmin = dmin;
            break;
        case EL_TYPE_Q6_K: ((el_block_q6_k *)data)[b].d = d; break;
        default: break;
        }
    }
    if (type == EL_TYPE_F32 || type == EL_TYPE_F16 || type == EL_TYPE_BF16) {
        float *f = malloc((size_t)n * sizeof *f);
        for (int64_t i = 0; i < n; i++) f[i] = test_rand_uniform(r, -1.0f, 1.0f);
        el_type_get(type)->from_float(f, data, n);
        free(f);
    }
}

static int compare_tables(const el_kernels *simd) {
    static const el_type types[] = {EL_TYPE_F32, EL_TYPE_F16, EL_TYPE_BF16, EL_TYPE_Q8_0,
                                    EL_TYPE_Q4_0, EL_TYPE_Q4_K, EL_TYPE_Q6_K};
    test_rng r = {99};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        const el_type_traits *wt = el_type_get(types[ti]);
        const el_type_traits *at = el_type_get(wt->vec_dot_type);
        int64_t unit = wt->block_size == 256 ? 256 : 32;
        for (int blocks = 1; blocks <= 9; blocks++) {
            for (int extra = 0; extra < (wt->block_size == 1 ? 16 : 1); extra += 5) {
                int64_t n = unit * blocks + extra;
                void *w = malloc(el_row_size(types[ti], n) + 1);
                float *a = malloc((size_t)n * sizeof *a);
                void *aq = malloc(el_row_size(EL_TYPE_F32, n));
                float *ad = malloc((size_t)n * sizeof *ad);
                float *wd = malloc((size_t)n * sizeof *wd);
                CHECK(w && a && aq && ad && wd);
                random_weights(types[ti], w, n, &r);
                for (int64_t i = 0; i < n; i++) a[i] = test_rand_uniform(&r, -4.0f, 4.0f);
                a[r.s % n] = 9.0f; /* an outlier: some quants at +-127 */
                at->from_float(a, aq, n);
                at->to_float(aq, ad, n);
                wt->to_float(w, wd, n);
                double mag = 0.0;
                for (int64_t i = 0; i < n; i++) mag += fabs((double)wd[i] * ad[i]);
                float want = NAN, got = NAN;
                wt->vec_dot(n, &want, w, aq);
                simd->vec_dot[types[ti]](n, &got, w, aq);
                if (!(fabs((double)got - want) <= 2e-5 * mag + 1e-6)) {
                    test_note("%s %s n=%lld: got %.9g, reference %.9g", simd->isa, wt->name,
                              (long long)n, got, want);
                    return TEST_FAIL;
                }
                free(w), free(a), free(aq), free(ad), free(wd);
            }
        }
    }
    return TEST_PASS;
}

static int test_avx2(void) {
    el_kernels k;
    el_kernels_reference(&k);
    if (!el_kernels_avx2(&k)) return test_skip("no AVX2 on this CPU or in this build");
    return compare_tables(&k);
}

/* Whatever the dispatcher picked (also under EL_FORCE_REFERENCE=1) must agree too. */
static int test_dispatched(void) {
    test_note("kernels in use: %s", el_kernels_get()->isa);
    return compare_tables(el_kernels_get());
}

int main(void) {
    run_test("avx2", test_avx2);
    run_test("dispatched", test_dispatched);
    return tests_exit_code();
}
