/*
 * AVIF encoding on the calling thread, for a still 8-bit sRGB image of 3 or 4 bands: what hc_avifsave_takes says,
 * which Swift asks before choosing this encoder or libvips' saver (ImageEngines). libvips' saver renders the image
 * through its thread pool and has libheif encode it on a pool thread while the calling thread waits, and libheif
 * gives libaom 4 threads of its own; here the rows are rendered in strips on the calling thread and libaom runs on
 * it too, with one thread, so an encode costs no hand-off between threads.
 *
 * The settings are libvips 8.14's saver's for the same call (hc_avifsave): AV1, the quality, lossless or not,
 * libaom's speed 9 (libvips' effort 0), chroma 4:2:0 below quality 90 and 4:4:4 from it, 8 bits, alpha saved when
 * there is one; the ICC profile as a raw colour profile; after the encode, the EXIF block libvips rebuilds from the
 * image's fields (vips__exif_update, run on a copy so the caller's image is untouched) and the XMP. libaom writes
 * the same stream whatever its thread count, so the file is libvips' saver's byte for byte. Strips are rendered
 * through the cancellation guard, so a triggered cancellation fails the encode at the next strip.
 */
#include "halcyon_cancel.h"
#include "halcyon_savers.h"
#include "halcyon_vips.h"

#include <libheif/heif.h>
#include <string.h>

#define HC_AVIF_STRIP 64

static _Thread_local unsigned long hc_avifsave_runs;

unsigned long hc_avif_save_count(void) { return hc_avifsave_runs; }

int hc_avifsave_takes(VipsImage *in) {
    return hc_saver_takes_rgb8(in) && !vips_image_get_typeof(in, "heif-primary");
}

/* What hc_avifsave_inline holds; released whatever happened. */
typedef struct {
    VipsImage *guarded;
    VipsImage *copy;
    VipsRegion *region;
    struct heif_context *context;
    struct heif_encoder *encoder;
    struct heif_image *image;
    struct heif_image_handle *handle;
    GByteArray *file;
} hc_avif_work;

static void hc_avif_release(hc_avif_work *work) {
    VIPS_FREEF(heif_image_handle_release, work->handle);
    VIPS_FREEF(heif_image_release, work->image);
    VIPS_FREEF(heif_encoder_release, work->encoder);
    VIPS_FREEF(heif_context_free, work->context);
    VIPS_UNREF(work->region);
    VIPS_UNREF(work->copy);
    VIPS_UNREF(work->guarded);
    if (work->file != NULL) {
        g_byte_array_unref(work->file);
    }
}

/* 0, or -1 with libheif's message in libvips' error buffer. */
static int hc_avif_check(struct heif_error error) {
    if (error.code == heif_error_Ok) {
        return 0;
    }
    vips_error("hc_avifsave", "%s", error.message != NULL ? error.message : "libheif failed");
    return -1;
}

/* A parameter's setting: an encoder without the parameter is no error, as libvips' saver has it. */
static int hc_avif_parameter(struct heif_error error) {
    return error.code != heif_error_Ok && error.subcode == heif_suberror_Unsupported_parameter ? 0 : hc_avif_check(error);
}

/* The AV1 encoder with libvips' settings for `quality` and `lossless` at effort 0, on one libaom thread. */
static int hc_avif_encoder(hc_avif_work *work, int quality, int lossless) {
    if (hc_avif_check(heif_context_get_encoder_for_format(work->context, heif_compression_AV1, &work->encoder)) ||
        hc_avif_check(heif_encoder_set_lossy_quality(work->encoder, quality)) ||
        hc_avif_check(heif_encoder_set_lossless(work->encoder, lossless))) {
        return -1;
    }
    struct heif_error speed = heif_encoder_set_parameter_integer(work->encoder, "speed", 9);
    struct heif_error chroma = heif_encoder_set_parameter_string(work->encoder, "chroma", quality >= 90 ? "444" : "420");
    struct heif_error threads = heif_encoder_set_parameter_integer(work->encoder, "threads", 1);
    return hc_avif_parameter(speed) || hc_avif_parameter(chroma) || hc_avif_parameter(threads) ? -1 : 0;
}

/* Where hc_avif_strip copies rows to. */
typedef struct {
    uint8_t *plane;
    size_t stride;
    size_t row;
} hc_avif_plane;

/* Copies a strip's rows into libheif's interleaved plane (`context`). */
static int hc_avif_strip(VipsRegion *region, const VipsRect *strip, void *context) {
    hc_avif_plane *target = context;
    for (int y = strip->top; y < VIPS_RECT_BOTTOM(strip); y++) {
        memcpy(target->plane + (size_t)y * target->stride, VIPS_REGION_ADDR(region, 0, y), target->row);
    }
    return 0;
}

/* The image's rows, rendered in strips on this thread, copied into libheif's interleaved plane. */
static int hc_avif_pixels(hc_avif_work *work, VipsImage *in) {
    int alpha = in->Bands == 4;
    if (hc_avif_check(heif_image_create(in->Xsize, in->Ysize, heif_colorspace_RGB,
                                        alpha ? heif_chroma_interleaved_RGBA : heif_chroma_interleaved_RGB,
                                        &work->image)) ||
        hc_avif_check(heif_image_add_plane(work->image, heif_channel_interleaved, in->Xsize, in->Ysize, 8))) {
        return -1;
    }
    int stride = 0;
    uint8_t *plane = heif_image_get_plane(work->image, heif_channel_interleaved, &stride);
    hc_avif_plane target = {plane, (size_t)stride, (size_t)VIPS_IMAGE_SIZEOF_LINE(in)};
    return hc_render_strips(work->region, HC_AVIF_STRIP, hc_avif_strip, &target);
}

/* The ICC profile before the encode; the encode; then the rebuilt EXIF block and the XMP, as libvips attaches them. */
static int hc_avif_encode(hc_avif_work *work) {
    const void *data;
    size_t length;
    VipsImage *copy = work->copy;
    if (vips_image_get_typeof(copy, VIPS_META_ICC_NAME) &&
        (vips_image_get_blob(copy, VIPS_META_ICC_NAME, &data, &length) != 0 ||
         hc_avif_check(heif_image_set_raw_color_profile(work->image, "rICC", data, length)))) {
        return -1;
    }
    struct heif_encoding_options *options = heif_encoding_options_alloc();
    options->save_alpha_channel = vips_image_hasalpha(copy) ? 1 : 0;
    int result = hc_avif_check(heif_context_encode_image(work->context, work->image, work->encoder, options, &work->handle));
    heif_encoding_options_free(options);
    if (result != 0 || vips__exif_update(copy) != 0) {
        return -1;
    }
    if (vips_image_get_typeof(copy, VIPS_META_EXIF_NAME) &&
        (vips_image_get_blob(copy, VIPS_META_EXIF_NAME, &data, &length) != 0 ||
         hc_avif_check(heif_context_add_exif_metadata(work->context, work->handle, data, (int)length)))) {
        return -1;
    }
    if (vips_image_get_typeof(copy, VIPS_META_XMP_NAME) &&
        (vips_image_get_blob(copy, VIPS_META_XMP_NAME, &data, &length) != 0 ||
         hc_avif_check(heif_context_add_XMP_metadata(work->context, work->handle, data, (int)length)))) {
        return -1;
    }
    return 0;
}

static struct heif_error hc_avif_write(struct heif_context *context, const void *data, size_t size, void *file) {
    (void)context;
    g_byte_array_append((GByteArray *)file, data, (guint)size);
    struct heif_error ok = {heif_error_Ok, heif_suberror_Unspecified, "Success"};
    return ok;
}

int hc_avifsave_inline(VipsImage *in, int quality, int lossless, void **buffer, size_t *length) {
    if (!hc_avifsave_takes(in) || quality < 1 || quality > 100) {
        vips_error("hc_avifsave", "%s", "the image or quality is not one this encoder takes");
        return -1;
    }
    hc_avif_work work = {0};
    work.guarded = hc_cancel_guard(in);
    work.region = vips_region_new(work.guarded);
    work.context = heif_context_alloc();
    int result = vips_copy(in, &work.copy, NULL);
    if (result == 0) {
        result = hc_avif_encoder(&work, quality, lossless) || hc_avif_pixels(&work, in) || hc_avif_encode(&work) ? -1 : 0;
    }
    if (result == 0) {
        work.file = g_byte_array_new();
        struct heif_writer writer = {.writer_api_version = 1, .write = hc_avif_write};
        result = hc_avif_check(heif_context_write(work.context, &writer, work.file));
    }
    if (result == 0) {
        *length = work.file->len;
        *buffer = g_byte_array_free(work.file, FALSE);
        work.file = NULL;
        hc_avifsave_runs++;
    }
    hc_avif_release(&work);
    return result;
}
