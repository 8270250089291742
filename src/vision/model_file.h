/* model_file.h - the image model's GGUF (docs/formats.md, "edgelora-unet"): the shape and the
 * noise schedule as keys, every tensor of the parameter table as F32. */
#ifndef EL_VISION_MODEL_FILE_H
#define EL_VISION_MODEL_FILE_H

#include "formats/gguf.h"
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

/* The parameter tables' tensors in a GGUF (the UNet's, the digit classifier's): every tensor of
 * tb (parameters p) added to w as F32, a [rows][cols] matrix as ne = {cols, rows}, a vector with
 * one dimension; and read back from f, refusing a missing tensor or one of another type or
 * shape, naming path and the tensor. */
el_status el_ttable_write(gguf_writer *w, const el_ttable *tb, const float *p);
el_status el_ttable_read(const gguf_file *f, const char *path, const el_ttable *tb, float *p);

#endif
