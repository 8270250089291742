/* avx512.c - AVX-512 VNNI kernels (placeholder until written). */
#include "kernels/dispatch.h"

bool el_kernels_avx512(el_kernels *k) {
    (void)k;
    return false;
}
