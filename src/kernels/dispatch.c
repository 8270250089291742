/* dispatch.c - fills the kernel table once, from the CPU's features and EL_FORCE_REFERENCE. */
#include "kernels/dispatch.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static el_kernels kernels;
static pthread_once_t kernels_once = PTHREAD_ONCE_INIT;

void el_kernels_reference(el_kernels *k) {
    k->isa = "reference";
    for (uint32_t t = 0; t < EL_TYPE_COUNT; t++) {
        const el_type_traits *tr = el_type_get(t);
        k->vec_dot[t] = tr ? tr->vec_dot : NULL;
        k->quantize[t] = tr ? tr->from_float : NULL;
        k->tile[t] = NULL;
    }
}

static void kernels_init(void) {
    el_kernels_reference(&kernels);
    const char *force = getenv("EL_FORCE_REFERENCE");
    if (force != NULL && strcmp(force, "") != 0 && strcmp(force, "0") != 0) return;
    el_kernels_avx2(&kernels);
    el_kernels_avx512(&kernels);
    el_kernels_neon(&kernels);
    el_kernels_neon_dotprod(&kernels);
}

const el_kernels *el_kernels_get(void) {
    pthread_once(&kernels_once, kernels_init);
    return &kernels;
}
