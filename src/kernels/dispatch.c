/* dispatch.c - fills the kernel table once, from the CPU's features and EL_FORCE_REFERENCE. */
#include "kernels/dispatch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static el_kernels kernels;
static pthread_once_t kernels_once = PTHREAD_ONCE_INIT;

void el_kernels_reference(el_kernels *k) {
    k->isa = "reference";
    k->attend = el_attend_ref;
    k->swiglu = el_swiglu_ref;
    for (uint32_t t = 0; t < EL_TYPE_COUNT; t++) {
        const el_type_kernels *tr = el_type_kernels_get(t);
        k->vec_dot[t] = tr ? tr->vec_dot : NULL;
        k->quantize[t] = tr ? tr->from_float : NULL;
        k->tile[t] = NULL;
        k->gemm[t] = NULL;
        k->gemv[t] = NULL;
        k->gemv_multi[t] = NULL;
    }
    k->gemm_signed = false;
}

void el_kernels_set_gemm(el_kernels *k, el_gemm_fn fn, bool signed_weights) {
    static const el_type covered[] = {EL_TYPE_Q4_0, EL_TYPE_Q8_0,  EL_TYPE_W4,    EL_TYPE_W8,
                                      EL_TYPE_W4G32, EL_TYPE_W4G64, EL_TYPE_W4G128};
    for (size_t i = 0; i < sizeof covered / sizeof covered[0]; i++) k->gemm[covered[i]] = fn;
    k->gemm_signed = signed_weights;
}

/* AVX-512 VNNI: the tiles and dot products, the packed products, attention and the W4G gemvs. */
static bool avx512_all(el_kernels *k) {
    return el_kernels_avx512(k) && el_gemm_avx512(k) && el_attend_avx512(k) &&
           el_gemv_w4g_avx512(k);
}

/* NEON (every aarch64 CPU): the dot products, tiles and gemvs, and attention. */
static bool neon_all(el_kernels *k) {
    return el_kernels_neon(k) && el_attend_neon(k);
}

/* NEON with the dot product instructions: the dot products, tiles and gemvs, and the packed
 * products (attention stays the NEON level's). */
static bool neon_dotprod_all(el_kernels *k) {
    return el_kernels_neon_dotprod(k) && el_gemm_neon(k);
}

/* Per-ISA setters in order of preference, the best last. */
static const struct {
    const char *name;
    bool (*apply)(el_kernels *k);
} isa_levels[] = {
    {"avx2", el_kernels_avx2},
    {"avx512", avx512_all},
    {"neon", neon_all},
    {"neon-dotprod", neon_dotprod_all},
};

static bool env_set(const char *name) {
    const char *v = getenv(name);
    return v != NULL && strcmp(v, "") != 0 && strcmp(v, "0") != 0;
}

/* EL_ISA_MAX=avx2 (say) stops after that level, to compare ISAs on one machine; EL_NO_GEMM=1
 * leaves the packed products out, to compare them with the tiles they replace. */
static void kernels_init(void) {
    el_kernels_reference(&kernels);
    if (env_set("EL_FORCE_REFERENCE")) return;
    const char *max = getenv("EL_ISA_MAX");
    for (size_t i = 0; i < sizeof isa_levels / sizeof isa_levels[0]; i++) {
        isa_levels[i].apply(&kernels);
        if (max != NULL && strcmp(max, isa_levels[i].name) == 0) break;
    }
    if (env_set("EL_NO_GEMM"))
        for (uint32_t t = 0; t < EL_TYPE_COUNT; t++) kernels.gemm[t] = NULL;
}

const el_kernels *el_kernels_get(void) {
    pthread_once(&kernels_once, kernels_init);
    return &kernels;
}
