/* rope.h - rotary position embedding of the heads of one row, with or without a pair index. */
#ifndef EL_KERNELS_ROPE_H
#define EL_KERNELS_ROPE_H

#include <stdbool.h>
#include <stdint.h>

/* Rotates the first n_rot dims of each of n_heads heads (hd floats apart) of one row: pair i is
 * dims (2i, 2i+1), or (i, i + n_rot/2) when neox, turned by the angle whose cos and sin are
 * cs[f], sn[f] with f = i, or with a pair index, f = pairs[(h / group) * n_rot/2 + i]: the
 * frequency of the pair's original place, for heads whose pairs were reordered (RoPE with index,
 * UniQL's sorted Q/K; heads of one KV group share their KV head's order). pairs may be NULL. */
void el_rope_rotate(float *vec, int n_heads, int hd, int n_rot, bool neox, const float *cs,
                    const float *sn, const int32_t *pairs, int group);

#endif
