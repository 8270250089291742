/* mnist.c - reading IDX image and label files through zlib's gz reader, which also reads an
 * uncompressed file as it is. */
#include "vision/mnist.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/error.h"

/* Reads exactly n bytes; false at a short read. */
static bool read_all(gzFile f, void *buf, size_t n) {
    unsigned char *p = buf;
    while (n > 0) {
        unsigned chunk = n > (1u << 30) ? 1u << 30 : (unsigned)n;
        int got = gzread(f, p, chunk);
        if (got <= 0) return false;
        p += got;
        n -= (size_t)got;
    }
    return true;
}

static uint32_t be32(const unsigned char *b) {
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/* Opens an IDX file, checks its magic and reads the header's sizes (dims after the count). */
static el_status open_idx(const char *path, uint32_t magic, int n_dims, gzFile *out,
                          uint32_t *count, uint32_t *dims) {
    gzFile f = gzopen(path, "rb");
    if (!f) return el_error(EL_ERR_IO, "%s: cannot open", path);
    unsigned char h[16];
    if (!read_all(f, h, (size_t)(8 + 4 * n_dims))) {
        gzclose(f);
        return el_error(EL_ERR_FORMAT, "%s: truncated IDX header", path);
    }
    if (be32(h) != magic) {
        gzclose(f);
        return el_error(EL_ERR_FORMAT, "%s: not an IDX %s file (magic 0x%08x, expected 0x%08x)",
                        path, magic == 2051 ? "images" : "labels", be32(h), magic);
    }
    *count = be32(h + 4);
    for (int i = 0; i < n_dims; i++) dims[i] = be32(h + 8 + 4 * i);
    *out = f;
    return EL_OK;
}

el_status el_mnist_load(const char *images_path, const char *labels_path, el_mnist *out) {
    memset(out, 0, sizeof *out);
    gzFile fi, fl;
    uint32_t n, nl, dims[2];
    el_status st = open_idx(images_path, 2051, 2, &fi, &n, dims);
    if (st != EL_OK) return st;
    if (dims[0] != 28 || dims[1] != 28 || n == 0 || n > (1u << 24)) {
        gzclose(fi);
        return el_error(EL_ERR_FORMAT, "%s: %u images of %ux%u (28x28 expected)", images_path, n,
                        dims[0], dims[1]);
    }
    if ((st = open_idx(labels_path, 2049, 0, &fl, &nl, dims)) != EL_OK) {
        gzclose(fi);
        return st;
    }
    if (nl != n) {
        gzclose(fi), gzclose(fl);
        return el_error(EL_ERR_MISMATCH, "%s: %u labels for the %u images of %s", labels_path, nl,
                        n, images_path);
    }
    out->n = (int32_t)n;
    out->pixels = malloc((size_t)n * 784);
    out->labels = malloc(n);
    if (!out->pixels || !out->labels) {
        st = el_error(EL_ERR_NOMEM, "%s: out of memory for %u images", images_path, n);
    } else if (!read_all(fi, out->pixels, (size_t)n * 784)) {
        st = el_error(EL_ERR_FORMAT, "%s: truncated (fewer than %u images)", images_path, n);
    } else if (!read_all(fl, out->labels, n)) {
        st = el_error(EL_ERR_FORMAT, "%s: truncated (fewer than %u labels)", labels_path, n);
    } else {
        for (uint32_t i = 0; i < n && st == EL_OK; i++)
            if (out->labels[i] > 9)
                st = el_error(EL_ERR_FORMAT, "%s: label %u of image %u is not a digit", labels_path,
                              out->labels[i], i);
    }
    gzclose(fi), gzclose(fl);
    if (st != EL_OK) el_mnist_free(out);
    return st;
}

void el_mnist_free(el_mnist *m) {
    free(m->pixels);
    free(m->labels);
    memset(m, 0, sizeof *m);
}
