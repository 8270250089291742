/* neon_dot.c - the quantized kernels of neon_q.h over SDOT (4 byte products summed into each
 * 32-bit lane in one instruction). Built with -march=armv8.2-a+dotprod on aarch64 (see Makefile)
 * and used only if the kernel reports the dot product extension (HWCAP_ASIMDDP). */
#include "kernels/dispatch.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)

#include <arm_neon.h>
#include <sys/auxv.h>

static inline int32x4_t dot_s8(int32x4_t acc, int8x16_t a, int8x16_t b) {
    return vdotq_s32(acc, a, b);
}

#include "kernels/neon_q.h"
#include "kernels/neon_gemv.h"

#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20) /* from the Linux arm64 uapi, for older headers */
#endif

bool el_kernels_neon_dotprod(el_kernels *k) {
    if ((getauxval(AT_HWCAP) & HWCAP_ASIMDDP) == 0) return false;
    k->isa = "neon-dotprod";
    neon_set_quantized(k);
    neon_set_gemv(k);
    return true;
}

#else

/* Not aarch64, or built without the dot product extension. */
bool el_kernels_neon_dotprod(el_kernels *k) {
    (void)k;
    return false;
}

#endif
