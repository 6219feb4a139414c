/*
 * WebP encoding on the calling thread, for a still 8-bit sRGB image of 3 or 4 bands, at most 16383 pixels a side:
 * what hc_webpsave_takes says, which Swift asks before choosing this encoder or libvips' saver (ImageEngines).
 * libvips' saver renders the image through its thread pool and has libwebp encode it on a pool thread while the
 * calling thread waits; here the rows are rendered in strips on the calling thread into one frame in memory (as a
 * decode is, by hc_decode_to_memory), which libwebp encodes there.
 *
 * The file is libvips 8.14's saver's for the same call (hc_webpsave): libwebp's default preset at the quality, or
 * lossless at it, alpha quality 100, method 4 (libvips' effort 4); then the stream goes through libwebp's mux with the
 * ICC profile, the EXIF block libvips rebuilds from the image's fields (vips__exif_update, run on a copy so the
 * caller's image is untouched) and the XMP, as chunks, as libvips adds them. The calling thread's cancellation is
 * looked at between strips, so a triggered cancellation fails the encode at the next strip.
 */
#include "halcyon_savers.h"
#include "halcyon_vips.h"

#include <string.h>
#include <webp/encode.h>
#include <webp/mux.h>

#define HC_WEBP_MAX_SIDE 16383

static _Thread_local unsigned long hc_webpsave_runs;

unsigned long hc_webp_save_count(void) { return hc_webpsave_runs; }

int hc_webpsave_takes(VipsImage *in) {
    return hc_saver_takes_rgb8(in) && in->Xsize <= HC_WEBP_MAX_SIDE && in->Ysize <= HC_WEBP_MAX_SIDE;
}

/* libwebp's encoding of `frame` with libvips' settings into `writer`; 0, or -1 with libvips' error set. */
static int hc_webp_encode(VipsImage *in, const unsigned char *frame, int quality, int lossless, WebPMemoryWriter *writer) {
    WebPConfig config;
    if (!WebPConfigInit(&config) || (!lossless && !WebPConfigPreset(&config, WEBP_PRESET_DEFAULT, (float)quality))) {
        vips_error("hc_webpsave", "%s", "config version error");
        return -1;
    }
    config.lossless = lossless;
    config.alpha_quality = 100;
    config.method = 4;
    if (lossless) {
        config.quality = (float)quality;
    }
    WebPPicture picture;
    if (!WebPValidateConfig(&config) || !WebPPictureInit(&picture)) {
        vips_error("hc_webpsave", "%s", "invalid configuration");
        return -1;
    }
    picture.writer = WebPMemoryWrite;
    picture.custom_ptr = writer;
    picture.use_argb = lossless;
    picture.width = in->Xsize;
    picture.height = in->Ysize;
    int stride = in->Xsize * in->Bands;
    int imported = in->Bands == 4 ? WebPPictureImportRGBA(&picture, frame, stride) : WebPPictureImportRGB(&picture, frame, stride);
    int encoded = imported && WebPEncode(&config, &picture);
    WebPPictureFree(&picture);
    if (!encoded) {
        vips_error("hc_webpsave", "%s", imported ? "unable to encode" : "picture memory error");
        return -1;
    }
    return 0;
}

/* The stream with libvips' chunks (ICC profile, rebuilt EXIF, XMP) through libwebp's mux, into `file`. */
static int hc_webp_assemble(VipsImage *copy, const WebPMemoryWriter *writer, WebPData *file) {
    static const char *const fields[3][2] = {{VIPS_META_ICC_NAME, "ICCP"}, {VIPS_META_EXIF_NAME, "EXIF"},
                                             {VIPS_META_XMP_NAME, "XMP "}};
    WebPData stream = {writer->mem, writer->size};
    WebPMux *mux = WebPMuxCreate(&stream, 1);
    int result = mux != NULL && vips__exif_update(copy) == 0 ? 0 : -1;
    for (int i = 0; i < 3 && result == 0; i++) {
        const void *data;
        size_t length;
        if (vips_image_get_typeof(copy, fields[i][0])) {
            WebPData chunk = {NULL, 0};
            result = vips_image_get_blob(copy, fields[i][0], &data, &length);
            chunk.bytes = data;
            chunk.size = length;
            if (result == 0 && WebPMuxSetChunk(mux, fields[i][1], &chunk, 1) != WEBP_MUX_OK) {
                result = -1;
            }
        }
    }
    if (result == 0 && WebPMuxAssemble(mux, file) != WEBP_MUX_OK) {
        result = -1;
    }
    WebPMuxDelete(mux);
    if (result != 0) {
        vips_error("hc_webpsave", "%s", "mux error");
    }
    return result;
}

int hc_webpsave_inline(VipsImage *in, int quality, int lossless, void **buffer, size_t *length) {
    if (!hc_webpsave_takes(in) || quality < 0 || quality > 100) {
        vips_error("hc_webpsave", "%s", "the image or quality is not one this encoder takes");
        return -1;
    }
    /* The frame: the image rendered in strips on this thread into memory, the current cancellation looked at
     * between strips (hc_decode_to_memory). */
    VipsImage *frame = NULL;
    VipsImage *copy = NULL;
    if (hc_decode_to_memory(in, &frame) != 0 || vips_copy(in, &copy, NULL) != 0) {
        VIPS_UNREF(frame);
        return -1;
    }
    WebPMemoryWriter writer;
    WebPMemoryWriterInit(&writer);
    WebPData file = {NULL, 0};
    int result = hc_webp_encode(in, VIPS_IMAGE_ADDR(frame, 0, 0), quality, lossless ? 1 : 0, &writer);
    g_object_unref(frame);
    if (result == 0) {
        result = hc_webp_assemble(copy, &writer, &file);
    }
    WebPMemoryWriterClear(&writer);
    g_object_unref(copy);
    if (result == 0) {
        *buffer = g_memdup2(file.bytes, file.size);
        *length = file.size;
        hc_webpsave_runs++;
    }
    WebPDataClear(&file);
    return result;
}
