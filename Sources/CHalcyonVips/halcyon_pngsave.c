/*
 * PNG encoding with libdeflate for the common case: an 8-bit sRGB or greyscale
 * image of 1 to 4 bands, at most 16 MiB of pixels, carrying none of the
 * metadata libvips' saver would write besides the resolution (no ICC profile,
 * EXIF, XMP or comments), not interlaced: what hc_pngsave_takes says, which
 * Swift asks before choosing this encoder or libvips' (ImageEngines). Rows
 * take the sub filter, as hc_pngsave_libpng asks of libpng, and the filtered
 * image is compressed in one call: on photographic 512 px results,
 * libdeflate's level 4 takes about half the time of zlib's level 4 behind
 * libpng and writes about 3% fewer bytes. The file holds IHDR, pHYs (from the
 * image's resolution, as libvips writes it), one IDAT and IEND; the stream is
 * compressed straight into the file, so the peak is the rendered pixels, then
 * the filtered rows and the file. Any other image, or a level outside zlib's
 * 0-9, is refused with an error before anything is rendered. The pixels are
 * rendered on the calling thread in strips (hc_decode_to_memory, as the WebP
 * encoder renders them), the cancellation flag looked at before each, and
 * again before compressing.
 */
#include "halcyon_vips.h"
#include "halcyon_cancel.h"
#include "halcyon_png.h"

#include <libdeflate.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HC_PNGSAVE_MAX_PIXEL_BYTES (16u << 20)

static _Thread_local unsigned long hc_pngsave_runs;

unsigned long hc_png_save_count(void) { return hc_pngsave_runs; }

/* Whether libvips' PNG saver would write anything for `in` beyond pixels and resolution. */
static int hc_pngsave_has_metadata(VipsImage *in) {
    gchar **fields = vips_image_get_fields(in);
    int found = 0;
    for (int i = 0; fields[i] != NULL && !found; i++) {
        const char *name = fields[i];
        found = strcmp(name, VIPS_META_ICC_NAME) == 0 || strcmp(name, VIPS_META_EXIF_NAME) == 0 ||
                strcmp(name, VIPS_META_XMP_NAME) == 0 || strcmp(name, VIPS_META_IPTC_NAME) == 0 ||
                strncmp(name, "png-comment-", 12) == 0;
    }
    g_strfreev(fields);
    return found;
}

int hc_pngsave_takes(VipsImage *in, int level) {
    if (level < 0 || level > 9) {
        return 0;
    }
    int bands = vips_image_get_bands(in);
    VipsInterpretation interpretation = vips_image_get_interpretation(in);
    if (vips_image_get_format(in) != VIPS_FORMAT_UCHAR || in->Coding != VIPS_CODING_NONE || bands < 1 || bands > 4) {
        return 0;
    }
    /* libvips' saver writes one or two bands as grey whatever they are called; three or four it converts to sRGB. */
    if (interpretation != VIPS_INTERPRETATION_sRGB &&
        (bands >= 3 || (interpretation != VIPS_INTERPRETATION_B_W && interpretation != VIPS_INTERPRETATION_MULTIBAND))) {
        return 0;
    }
    return VIPS_IMAGE_SIZEOF_IMAGE(in) <= HC_PNGSAVE_MAX_PIXEL_BYTES && !hc_pngsave_has_metadata(in);
}

static unsigned char *hc_put32(unsigned char *p, uint32_t value) {
    p[0] = (unsigned char)(value >> 24);
    p[1] = (unsigned char)(value >> 16);
    p[2] = (unsigned char)(value >> 8);
    p[3] = (unsigned char)value;
    return p + 4;
}

/* Writes a chunk of `length` bytes whose body is already at p + 8; returns the end of the chunk. */
static unsigned char *hc_pngsave_close_chunk(unsigned char *p, const char *type, uint32_t length) {
    hc_put32(p, length);
    memcpy(p + 4, type, 4);
    uint32_t crc = libdeflate_crc32(0, p + 4, (size_t)length + 4);
    return hc_put32(p + 8 + length, crc);
}

/* The rows of `pixels`, each behind the sub filter's byte and filtered; NULL without memory. */
static unsigned char *hc_pngsave_filter(const unsigned char *pixels, size_t rowbytes, int height, int bands) {
    unsigned char *out = malloc((rowbytes + 1) * (size_t)height);
    if (out == NULL) {
        return NULL;
    }
    for (int y = 0; y < height; y++) {
        const unsigned char *row = pixels + (size_t)y * rowbytes;
        unsigned char *to = out + (size_t)y * (rowbytes + 1);
        to[0] = 1;
        memcpy(to + 1, row, (size_t)bands);
        for (size_t i = (size_t)bands; i < rowbytes; i++) {
            to[1 + i] = (unsigned char)(row[i] - row[i - bands]);
        }
    }
    return out;
}

/* A resolution in pixels per millimetre as pixels per metre, rounded as libvips does; 0 outside what the
 * chunk holds (where libvips' own cast is undefined). */
static uint32_t hc_pngsave_per_metre(double per_millimetre) {
    double value = VIPS_RINT(per_millimetre * 1000.0);
    return value > 0 && value <= 2147483647.0 ? (uint32_t)value : 0;
}

/* The file's chunks before and after the image data: signature, IHDR and pHYs, then the IDAT's length and type. */
#define HC_PNGSAVE_HEAD (8 + 25 + 21 + 8)
/* The IDAT's CRC and IEND. */
#define HC_PNGSAVE_TAIL (4 + 12)

/* Writes the signature, IHDR and pHYs at `file`. */
static void hc_pngsave_head(VipsImage *in, unsigned char *file) {
    static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    static const unsigned char colour_types[5] = {0, 0, 4, 2, 6};
    memcpy(file, signature, 8);
    unsigned char *p = file + 8;
    unsigned char *body = hc_put32(hc_put32(p + 8, (uint32_t)in->Xsize), (uint32_t)in->Ysize);
    body[0] = 8;
    body[1] = colour_types[in->Bands];
    body[2] = body[3] = body[4] = 0;
    p = hc_pngsave_close_chunk(p, "IHDR", 13);
    body = hc_put32(hc_put32(p + 8, hc_pngsave_per_metre(in->Xres)), hc_pngsave_per_metre(in->Yres));
    body[0] = 1;
    hc_pngsave_close_chunk(p, "pHYs", 9);
}

/* The PNG file of the filtered rows, compressed at `level` straight into its one IDAT; NULL without memory. */
static unsigned char *hc_pngsave_compress(VipsImage *in, const unsigned char *filtered, size_t raw, int level,
                                          size_t *length) {
    struct libdeflate_compressor *compressor = libdeflate_alloc_compressor(level);
    if (compressor == NULL) {
        return NULL;
    }
    size_t bound = libdeflate_zlib_compress_bound(compressor, raw);
    unsigned char *file = g_try_malloc(HC_PNGSAVE_HEAD + bound + HC_PNGSAVE_TAIL);
    size_t stream = file != NULL ? libdeflate_zlib_compress(compressor, filtered, raw, file + HC_PNGSAVE_HEAD, bound) : 0;
    libdeflate_free_compressor(compressor);
    if (stream == 0) {
        g_free(file);
        return NULL;
    }
    hc_pngsave_head(in, file);
    unsigned char *end = hc_pngsave_close_chunk(file + HC_PNGSAVE_HEAD - 8, "IDAT", (uint32_t)stream);
    end = hc_pngsave_close_chunk(end, "IEND", 0);
    *length = (size_t)(end - file);
    return file;
}

/* Encodes `in`: 0 and a buffer for hc_free; -1 with libvips' error set, before any rendering, when the image or level
 * is not one this encoder takes, and when cancelled, when rendering the pixels failed or when memory ran out. */
int hc_png_save_fast(VipsImage *in, int level, void **buffer, size_t *length) {
    if (!hc_pngsave_takes(in, level)) {
        vips_error("halcyon", "%s", "the libdeflate PNG encoder takes plain 8-bit images of at most 16 MiB, levels 0-9");
        return -1;
    }
    VipsImage *rendered = NULL;
    if (hc_decode_to_memory(in, &rendered) != 0) {
        return -1;
    }
    const int bands = in->Bands, height = in->Ysize;
    const size_t rowbytes = (size_t)in->Xsize * bands, raw = (rowbytes + 1) * (size_t)height;
    unsigned char *filtered = VIPS_IMAGE_SIZEOF_IMAGE(rendered) == rowbytes * (size_t)height
                                  ? hc_pngsave_filter(VIPS_IMAGE_ADDR(rendered, 0, 0), rowbytes, height, bands)
                                  : NULL;
    g_object_unref(rendered);
    if (hc_cancel_current_triggered()) {
        free(filtered);
        vips_error("halcyon", "%s", "cancelled");
        return -1;
    }
    unsigned char *file = filtered != NULL ? hc_pngsave_compress(in, filtered, raw, level, length) : NULL;
    free(filtered);
    if (file == NULL) {
        vips_error("halcyon", "%s", "out of memory for the PNG encoder");
        return -1;
    }
    hc_pngsave_runs++;
    *buffer = file;
    return 0;
}

/* MARK: - Comments */

/* Whether `name`, a png-comment field, is "png-comment-", a number, "-" and a keyword libpng writes as it is: 1 to 79
 * bytes of printable Latin-1 (32-126, 161-255), no space first, last or after another. libvips' saver refuses a
 * name of another form ("bad png comment key"), and libpng fails the save on a keyword it cannot mend (empty, or
 * only spaces and control characters); a longer one it cuts short. */
static int hc_png_comment_writable(const char *name) {
    const char *p = name + 12;
    if (*p < '0' || *p > '9') {
        return 0;
    }
    while (*p >= '0' && *p <= '9') {
        p++;
    }
    if (*p++ != '-') {
        return 0;
    }
    size_t n = strlen(p);
    if (n == 0 || n > 79 || p[0] == ' ' || p[n - 1] == ' ') {
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (!((c >= 32 && c <= 126) || c >= 161) || (c == ' ' && p[i + 1] == ' ')) {
            return 0;
        }
    }
    return 1;
}

int hc_png_writable_comments(VipsImage *in, VipsImage **out) {
    *out = NULL;
    gchar **fields = vips_image_get_fields(in);
    GPtrArray *drops = g_ptr_array_new();
    for (int i = 0; fields[i] != NULL; i++) {
        if (strncmp(fields[i], "png-comment-", 12) == 0 && !hc_png_comment_writable(fields[i])) {
            g_ptr_array_add(drops, fields[i]);
        }
    }
    int result = 0;
    if (drops->len == 0) {
        g_object_ref(in);
        *out = in;
    } else if (vips_copy(in, out, NULL) != 0) {
        result = -1;
    } else {
        for (guint i = 0; i < drops->len; i++) {
            vips_image_remove(*out, g_ptr_array_index(drops, i));
        }
    }
    g_ptr_array_free(drops, TRUE);
    g_strfreev(fields);
    return result;
}
