/* avx2.c - AVX2 dot products; built with -mavx2 -mfma -mf16c on x86 (see Makefile) and used only
 * when the CPU has them (el_kernels_avx2). */
#include "kernels/dispatch.h"

bool el_kernels_avx2(el_kernels *k) {
    (void)k;
    return false;
}
