/*
 * What the encoders on the calling thread (halcyon_jpegsave.c, halcyon_webpsave.c, halcyon_avifsave.c) share and
 * Swift need not see: libvips' EXIF rebuild, the image kind two of them take, and the strip loop they render with.
 */
#ifndef HALCYON_SAVERS_H
#define HALCYON_SAVERS_H

#include <vips/vips.h>

/* libvips' rebuild of the "exif-data" blob from the image's exif fields, resolution and size. libvips exports it but
 * declares it in a private header; its savers run it on the image they write. */
int vips__exif_update(VipsImage *image);

/* Whether `in` is one still 8-bit sRGB image of 3 or 4 bands, pixels not coded: what the WebP and AVIF encoders take
 * (each adds its own limits). */
static inline int hc_saver_takes_rgb8(VipsImage *in) {
    int bands = vips_image_get_bands(in);
    return vips_image_get_format(in) == VIPS_FORMAT_UCHAR && in->Coding == VIPS_CODING_NONE &&
           vips_image_get_interpretation(in) == VIPS_INTERPRETATION_sRGB && (bands == 3 || bands == 4) &&
           vips_image_get_page_height(in) == in->Ysize;
}

/* Takes one strip of `region`'s image, the rows `strip` names, as rendered into `region`; 0 to go on. */
typedef int (*hc_strip_sink)(VipsRegion *region, const VipsRect *strip, void *context);

/* Renders `region`'s image top to bottom in strips of `rows` rows on the calling thread, handing each to `sink`. Stops
 * at the first strip that fails to render, at a sink's failure, and before a strip once the calling thread's
 * cancellation is triggered ("cancelled" in libvips' error buffer); 0 when every strip went to the sink. The caller
 * owns the region (a sink may leave by longjmp, as libjpeg's errors do, and nothing here is left to free). */
int hc_render_strips(VipsRegion *region, int rows, hc_strip_sink sink, void *context);

#endif
