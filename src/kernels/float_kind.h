/* float_kind.h - the element kinds of the float weight types (F32, F16, BF16), as the SIMD
 * float kernels' shared sequences (float_<isa>.h) take them: a constant argument of an inline
 * function, so each kind compiles to its own loop. */
#ifndef EL_KERNELS_FLOAT_KIND_H
#define EL_KERNELS_FLOAT_KIND_H

typedef enum el_float_kind { EL_FLOAT_F32, EL_FLOAT_F16, EL_FLOAT_BF16 } el_float_kind;

#endif
