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
