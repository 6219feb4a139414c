/*
 * A WebP loader for a still image that libwebp scales while it decodes, on the calling thread.
 *
 * libvips 8.14's loader, which vips_thumbnail uses with the same scale, has libwebp decode with its filtering
 * thread (`use_threads`) into an RGBA frame, alpha or not, which it then copies out a row at a time; measured on 12
 * photographs of 2560x1600 scaled to 512 pixels, that took 42-47 ms of CPU an image where libwebp alone, on one
 * thread, took 34-36 ms. Here libwebp writes the scaled rows straight into the result's memory, as RGB, or as RGBA
 * (not premultiplied, as libvips gives it) when the image has alpha. The scaling is libwebp's own rescaler, the one
 * libvips' loader asks for, to the same size: the pixels are libvips', byte for byte (the twelve photographs, and
 * the tests' images but one whose side libvips' loader rounds to 0).
 *
 * The stream is handed to libwebp's incremental decoder 64 KiB at a time, and the current RenderCancellation flag
 * is looked at between the steps. A stream libwebp refuses or does not finish (damaged, truncated, animated) is
 * left to libvips' loader (return 1), so that it reports the problem; the metadata (colour profile, EXIF and the
 * orientation libvips reads from it, XMP) and resolution are those of libvips' own header read of the same file,
 * which the caller passes in.
 */
#include "halcyon_vips.h"
#include "halcyon_cancel.h"
#include "halcyon_loaders.h"

#include <webp/decode.h>

#define HC_WEBP_STEP_BYTES (64u << 10)

static _Thread_local unsigned long hc_webpload_runs;

unsigned long hc_webp_load_count(void) { return hc_webpload_runs; }

int hc_webp_load_scaled_takes(const void *buffer, size_t length) {
    WebPBitstreamFeatures features;
    return buffer != NULL && WebPGetFeatures(buffer, length, &features) == VP8_STATUS_OK && !features.has_animation;
}

/* Feeds the stream to libwebp's incremental decoder, writing into `config`'s output; 0 when it decoded, 1 when
 * libwebp refused it or it ended first, -1 with libvips' error set when cancelled. */
static int hc_webp_decode_steps(const uint8_t *data, size_t length, WebPDecoderConfig *config) {
    WebPIDecoder *decoder = WebPIDecode(NULL, 0, config);
    if (decoder == NULL) {
        return 1;
    }
    VP8StatusCode status = VP8_STATUS_SUSPENDED;
    size_t given = 0;
    while (status == VP8_STATUS_SUSPENDED && given < length) {
        if (hc_cancel_current_triggered()) {
            WebPIDelete(decoder);
            vips_error("halcyon", "%s", "cancelled");
            return -1;
        }
        given = length - given > HC_WEBP_STEP_BYTES ? given + HC_WEBP_STEP_BYTES : length;
        status = WebPIUpdate(decoder, data, given);
    }
    WebPIDelete(decoder);
    return status == VP8_STATUS_OK ? 0 : 1;
}

int hc_webp_load_scaled(const void *buffer, size_t length, int width, int height, VipsImage *libvips_header,
                        VipsImage **out) {
    *out = NULL;
    WebPDecoderConfig config;
    if (buffer == NULL || width < 1 || height < 1 || !WebPInitDecoderConfig(&config) ||
        WebPGetFeatures(buffer, length, &config.input) != VP8_STATUS_OK || config.input.has_animation ||
        config.input.width != vips_image_get_width(libvips_header) ||
        config.input.height != vips_image_get_height(libvips_header) || width > config.input.width ||
        height > config.input.height) {
        return 1;
    }
    const int bands = config.input.has_alpha ? 4 : 3;
    VipsImage *image = vips_image_new_memory();
    if (image == NULL) {
        return -1;
    }
    vips_image_init_fields(image, width, height, bands, VIPS_FORMAT_UCHAR, VIPS_CODING_NONE, VIPS_INTERPRETATION_sRGB,
                           vips_image_get_xres(libvips_header), vips_image_get_yres(libvips_header));
    if (vips_image_write_prepare(image) != 0) {
        g_object_unref(image);
        return -1;
    }
    config.options.use_threads = 0;
    if (width != config.input.width || height != config.input.height) {
        config.options.use_scaling = 1;
        config.options.scaled_width = width;
        config.options.scaled_height = height;
    }
    config.output.colorspace = bands == 4 ? MODE_RGBA : MODE_RGB;
    config.output.is_external_memory = 1;
    config.output.u.RGBA.rgba = VIPS_IMAGE_ADDR(image, 0, 0);
    config.output.u.RGBA.stride = (int)VIPS_IMAGE_SIZEOF_LINE(image);
    config.output.u.RGBA.size = VIPS_IMAGE_SIZEOF_IMAGE(image);
    int result = hc_webp_decode_steps(buffer, length, &config);
    WebPFreeDecBuffer(&config.output);
    if (result != 0) {
        g_object_unref(image);
        return result;
    }
    hc_copy_header_fields(libvips_header, image);
    hc_webpload_runs++;
    *out = image;
    return 0;
}
