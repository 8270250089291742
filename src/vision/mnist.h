/* mnist.h - the MNIST files (IDX format, gzip-compressed or not, read through zlib): images of
 * 28 x 28 bytes and their labels. */
#ifndef EL_VISION_MNIST_H
#define EL_VISION_MNIST_H

#include <stdint.h>

#include "edgelora.h"

typedef struct el_mnist {
    int32_t n;       /* images */
    uint8_t *pixels; /* [n][28 * 28], 0 background .. 255 ink */
    uint8_t *labels; /* [n], 0..9 */
} el_mnist;

/* Reads an images file (magic 2051, 28 x 28) and its labels file (magic 2049, the same count,
 * labels 0..9); errors name the file and what is wrong. */
el_status el_mnist_load(const char *images_path, const char *labels_path, el_mnist *out);
void el_mnist_free(el_mnist *m);

#endif
