/* image_model.h - what the public image model, adapter and profile (edgelora-tools.h) hold, for
 * the files of src/vision that implement them. */
#ifndef EL_VISION_IMAGE_MODEL_H
#define EL_VISION_IMAGE_MODEL_H

#include "vision/lora.h"
#include "vision/quant.h"
#include "vision/schedule.h"
#include "vision/tasks.h"

struct el_image_model {
    el_unet u;
    float *p;
    el_schedule sched;
};

struct el_image_adapter {
    const el_image_model *m; /* the model it was loaded for */
    el_vlora l;
    const el_vtask *task;
};

struct el_image_profile {
    const el_image_model *m; /* the model it was made for */
    float *amax;             /* by tensor index: each convolution's input range (0 elsewhere) */
    el_unet_quant q;         /* the integer weights, at amax's scales */
};

/* A profile of m at precision with the ranges amax [tensors] (taken over: freed on failure too). */
el_status el_image_profile_from_ranges(el_image_model *m, el_image_precision precision,
                                       float *amax, el_image_profile **out);

/* el_image_generate, in float, raising amax [tensors] (if not NULL) to the largest |input| each
 * convolution sees. */
el_status el_image_generate_observed(el_image_model *m, const el_image_params *p, int32_t n,
                                     uint8_t *out, float *amax);

#endif
