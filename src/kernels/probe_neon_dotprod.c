/* probe_neon_dotprod.c - probe_neon.h's int8 peak probe over SDOT. */
#include "kernels/neon.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)

#include "kernels/probe_neon.h"

uint32_t el_int8_probe_neon_dotprod(int64_t iters, int8_t one)
    __attribute__((alias("int8_probe")));

#endif
