/* dispatch.c - composes the kernel table: the reference kernels, then the ISA levels' tables
 * (el_kernel_level), chosen once from the CPU's features and the environment. */
#include "kernels/blocks.h"
#include "kernels/dispatch.h"
#include "kernels/edge.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static el_kernels kernels;
static pthread_once_t kernels_once = PTHREAD_ONCE_INIT;

/* In order of preference, the best last. */
static const el_kernel_level *const levels[] = {&el_level_avx2, &el_level_avx512, &el_level_neon,
                                                &el_level_neon_dotprod};

void el_kernels_reference(el_kernels *k) {
    k->isa = "reference";
    k->attend = el_attend_ref;
    k->swiglu = el_swiglu_ref;
    k->geglu = el_geglu_ref;
    for (uint32_t t = 0; t < EL_TYPE_COUNT; t++) {
        const el_type_kernels *tr = el_type_kernels_get(t);
        k->vec_dot[t] = tr ? tr->vec_dot : NULL;
        k->quantize[t] = tr ? tr->from_float : NULL;
        k->quantize_static[t] = NULL;
        k->tile[t] = NULL;
        k->gemm[t] = NULL;
        k->gemm_min_rows[t] = 0;
        k->gemv[t] = NULL;
        k->gemv_multi[t] = NULL;
        k->gemv_few[t] = NULL;
    }
    k->quantize_static[EL_TYPE_A8] = el_a8_from_float_static;
    k->quantize_static[EL_TYPE_A16] = el_a16_from_float_static;
    k->quantize_static[EL_TYPE_Q8_0] = el_q8_0_from_float_static;
    k->quantize_static[EL_TYPE_Q8_1] = el_q8_1_from_float_static;
    k->quantize_static[EL_TYPE_Q8_K] = el_q8_k_from_float_static;
    k->gemm_signed = false;
    k->int8_probe = (el_int8_probe){0};
}

/* Built in, and this CPU runs it and every level it builds on (whose instructions it uses). */
static bool level_runs(const el_kernel_level *l) {
    return l->supported != NULL && l->supported() && (l->base == NULL || level_runs(l->base));
}

/* l's own entries over k (dispatch.h: a type's multi-row and few-row gemvs come with its gemv). */
static void take(el_kernels *k, const el_kernels *l) {
    k->isa = l->isa;
    bool gemm = false;
    for (uint32_t t = 0; t < EL_TYPE_COUNT; t++) {
        if (l->vec_dot[t]) k->vec_dot[t] = l->vec_dot[t];
        if (l->quantize[t]) k->quantize[t] = l->quantize[t];
        if (l->quantize_static[t]) k->quantize_static[t] = l->quantize_static[t];
        if (l->tile[t]) k->tile[t] = l->tile[t];
        if (l->gemm[t]) {
            k->gemm[t] = l->gemm[t];
            k->gemm_min_rows[t] = l->gemm_min_rows[t];
            gemm = true;
        }
        if (l->gemv[t]) {
            k->gemv[t] = l->gemv[t];
            k->gemv_multi[t] = l->gemv_multi[t];
            k->gemv_few[t] = l->gemv_few[t];
        }
    }
    if (l->attend) k->attend = l->attend;
    if (l->swiglu) k->swiglu = l->swiglu;
    if (l->geglu) k->geglu = l->geglu;
    if (l->int8_probe.run) k->int8_probe = l->int8_probe;
    k->few_rows_by_multi = l->few_rows_by_multi;
    if (gemm) k->gemm_signed = l->gemm_signed;
}

/* The reference kernels, l's bases from the first, then l. */
static void compose(const el_kernel_level *l, el_kernels *k) {
    if (l->base) compose(l->base, k);
    else el_kernels_reference(k);
    take(k, &l->kernels);
}

const char *el_kernels_level_name(size_t i) {
    return i < sizeof levels / sizeof levels[0] ? levels[i]->name : NULL;
}

bool el_kernels_level(const char *name, el_kernels *k) {
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        if (strcmp(levels[i]->name, name) != 0) continue;
        if (!level_runs(levels[i])) return false;
        compose(levels[i], k);
        return true;
    }
    return false;
}

static bool env_set(const char *name) {
    const char *v = getenv(name);
    return v != NULL && strcmp(v, "") != 0 && strcmp(v, "0") != 0;
}

/* The best level this CPU runs; EL_ISA_MAX=avx2 (say) looks no further than that level, to
 * compare ISAs on one machine; EL_NO_GEMM=1 leaves the packed products out, to compare them
 * with the tiles they replace. */
static void kernels_init(void) {
    el_kernels_reference(&kernels);
    if (env_set("EL_FORCE_REFERENCE")) return;
    const char *max = getenv("EL_ISA_MAX");
    const el_kernel_level *best = NULL;
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        if (level_runs(levels[i])) best = levels[i];
        if (max != NULL && strcmp(max, levels[i]->name) == 0) break;
    }
    if (best) compose(best, &kernels);
    if (env_set("EL_NO_GEMM"))
        for (uint32_t t = 0; t < EL_TYPE_COUNT; t++) kernels.gemm[t] = NULL;
}

const el_kernels *el_kernels_get(void) {
    pthread_once(&kernels_once, kernels_init);
    return &kernels;
}
