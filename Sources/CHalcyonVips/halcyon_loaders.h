/*
 * Private to CHalcyonVips: what the loaders of its own (halcyon_png.c, halcyon_webpload.c) share.
 */
#ifndef HALCYON_LOADERS_H
#define HALCYON_LOADERS_H

#include <vips/vips.h>

/** Sets on `to` (a loader's image) each metadata field of `header` (libvips' header read of the same file) that `to`
 *  has no field of that name for: every field but the built-in ones (size, format, resolution, file name). */
void hc_copy_header_fields(VipsImage *header, VipsImage *to);

#endif
