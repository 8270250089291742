/* png.c - grey PNG files through libpng: writing (through core/outfile.h) and reading. */
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>

#include "core/error.h"
#include "core/outfile.h"
#include "edgelora-tools.h"

el_status el_png_write_gray(const char *path, const uint8_t *pixels, int32_t w, int32_t h) {
    if (w <= 0 || h <= 0) return el_error(EL_ERR_INVALID_ARG, "%s: an image of %dx%d", path, w, h);
    el_outfile o;
    el_status st = el_outfile_open(&o, path);
    if (st != EL_OK) return st;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        el_outfile_discard(&o);
        return el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    }
    if (setjmp(png_jmpbuf(png))) { /* libpng reports its errors by longjmp */
        png_destroy_write_struct(&png, &info);
        el_outfile_discard(&o);
        return el_error(EL_ERR_IO, "%s: writing the PNG failed", path);
    }
    png_init_io(png, o.f);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_GRAY,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int32_t y = 0; y < h; y++) png_write_row(png, pixels + (size_t)y * (size_t)w);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return el_outfile_commit(&o);
}

el_status el_png_read_gray(const char *path, uint8_t **pixels, int32_t *w, int32_t *h) {
    *pixels = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return el_error(EL_ERR_IO, "%s: cannot open", path);
    unsigned char sig[8];
    if (fread(sig, 1, 8, f) != 8 || png_sig_cmp(sig, 0, 8)) {
        fclose(f);
        return el_error(EL_ERR_FORMAT, "%s: not a PNG file", path);
    }
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        fclose(f);
        return el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    }
    uint8_t *volatile out = NULL; /* kept across libpng's longjmp */
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        fclose(f);
        free(out);
        return el_error(EL_ERR_FORMAT, "%s: damaged PNG", path);
    }
    png_init_io(png, f);
    png_set_sig_bytes(png, 8);
    png_read_info(png, info);
    png_uint_32 pw = png_get_image_width(png, info), ph = png_get_image_height(png, info);
    int depth = png_get_bit_depth(png, info), type = png_get_color_type(png, info);
    el_status st = EL_OK;
    if (type != PNG_COLOR_TYPE_GRAY || depth != 8 ||
        png_get_interlace_type(png, info) != PNG_INTERLACE_NONE)
        st = el_error(EL_ERR_UNSUPPORTED,
                      "%s: a PNG of colour type %d and %d-bit depth (8-bit "
                      "grey, not interlaced, expected)",
                      path, type, depth);
    else if (pw == 0 || ph == 0 || pw > 4096 || ph > 4096)
        st = el_error(EL_ERR_UNSUPPORTED, "%s: a PNG of %ux%u pixels", path, (unsigned)pw,
                      (unsigned)ph);
    else if (!(out = malloc((size_t)pw * ph)))
        st = el_error(EL_ERR_NOMEM, "%s: out of memory", path);
    for (png_uint_32 y = 0; st == EL_OK && y < ph; y++)
        png_read_row(png, out + (size_t)y * pw, NULL);
    png_destroy_read_struct(&png, &info, NULL);
    fclose(f);
    if (st != EL_OK) {
        free(out);
        return st;
    }
    *pixels = out;
    *w = (int32_t)pw, *h = (int32_t)ph;
    return EL_OK;
}
