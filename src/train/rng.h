/* rng.h - the training's random numbers: xorshift64* with a splitmix64-scrambled seed. Its whole
 * state is one uint64, so a checkpoint stores it and a resumed run draws the same numbers. */
#ifndef EL_TRAIN_RNG_H
#define EL_TRAIN_RNG_H

#include <math.h>
#include <stdint.h>

typedef struct el_rng {
    uint64_t s;
} el_rng;

static inline void el_rng_seed(el_rng *r, uint64_t seed) {
    uint64_t z = seed + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    r->s = (z ^ (z >> 31)) | 1; /* never 0: xorshift would stay there */
}

static inline uint64_t el_rng_u64(el_rng *r) {
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545f4914f6cdd1dull;
}

/* [0, 1) with 24 random bits */
static inline float el_rng_uniform(el_rng *r) { return (float)(el_rng_u64(r) >> 40) / 16777216.0f; }

/* N(0, 1) by Box-Muller */
static inline float el_rng_normal(el_rng *r) {
    float u1 = el_rng_uniform(r), u2 = el_rng_uniform(r);
    return sqrtf(-2.0f * logf(u1 + 1e-12f)) * cosf(6.2831853f * u2);
}

#endif
