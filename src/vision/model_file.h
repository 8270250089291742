/* model_file.h - the image model's GGUF (docs/formats.md, "edgelora-unet"): the shape and the
 * noise schedule as keys, every tensor of the parameter table as F32. */
#ifndef EL_VISION_MODEL_FILE_H
#define EL_VISION_MODEL_FILE_H

#include "vision/unet.h"

typedef struct el_unet_file_info {
    float beta_1, beta_T;
} el_unet_file_info;

el_status el_unet_save(const char *path, const el_unet *u, const float *p,
                       const el_unet_file_info *info);
/* Reads the shape into u (el_unet_init) and the parameters into *p (malloc'd); refuses a file
 * of another architecture (an LLM, an adapter) or with a tensor missing or misshapen, naming the
 * file and the tensor. */
el_status el_unet_load(const char *path, el_unet *u, float **p, el_unet_file_info *info);

#endif
