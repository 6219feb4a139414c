/*
 * PNGLoaderFuzzer: a libFuzzer target with a differential oracle, Halcyon's shrinking PNG loader
 * (hc_png_load_shrunk, Sources/CHalcyonVips/halcyon_png.c, compiled in with it by Fuzz/png/run.sh) against
 * libvips' PNG loader at the library's default fail_on (truncated).
 *
 * An input's first byte chooses the box shrink (1 + its low 3 bits) and whether the Adler-32 of the image data is
 * made right (bit 3); the rest is a PNG. A mutated PNG almost never keeps its chunk CRCs or its Adler-32 right,
 * and either sends it to libvips at once; so the CRCs are always made right, and on request the Adler-32 too, from
 * ISA-L's reading of the stream (which inflates to the same bytes as the loader's inflater wherever both take it):
 * what is left to find is where the loader's inflater and zlib (behind libpng) disagree, and where the loader's
 * rows, filters or box means go wrong. Where the loader returns an image,
 * libvips must decode the file too, to the same size, bands and resolution, and the loader's pixels must be
 * libvips' box means, with libvips' colour profile and EXIF; otherwise the oracle prints the difference and aborts
 * (libFuzzer keeps the input). The loader is given libvips' header read, as Halcyon gives it: an input whose header
 * libvips refuses is not a case (Halcyon refuses it before any decode).
 * Where libvips refuses a file, the loader must therefore have refused it or left it to libvips.
 */
#include <isa-l/crc.h>
#include <isa-l/igzip_lib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vips/vips.h>

/* In Halcyon's C shim (halcyon_png.c): 0 and an image, 1 to leave the file to libvips, -1 on an error. */
int hc_png_load_shrunk(const void *buffer, size_t length, int shrink, VipsImage *libvips_header, VipsImage **out);

#define ORACLE_MAX_INFLATE (16u << 20)
#define ORACLE_MAX_PIXELS (4u << 20)

static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

static void put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* Writes the right CRC into every whole chunk of png. */
static void fix_crcs(uint8_t *png, size_t length) {
    for (size_t at = 8; length >= 12 && at <= length - 12;) {
        uint32_t n = be32(png + at);
        if (n > length - at - 12) {
            return;
        }
        put32(png + at + 8 + n, crc32_gzip_refl(0, png + at + 4, (uint64_t)n + 4));
        at += 12 + (size_t)n;
    }
}

/* The Adler-32 of what ISA-L inflates from the image data, written after the deflate stream's end (in the IDAT
 * chunks, which must hold it already); nothing when ISA-L does not reach the end. */
/* The image data of png gathered into stream, with where each byte lies in the file; how many bytes. */
static size_t gather_idat(const uint8_t *png, size_t length, uint8_t *stream, size_t *where) {
    size_t have = 0;
    for (size_t at = 8; length >= 12 && at <= length - 12;) {
        uint32_t n = be32(png + at);
        if (n > length - at - 12) {
            break;
        }
        if (memcmp(png + at + 4, "IDAT", 4) == 0) {
            for (uint32_t i = 0; i < n; i++) {
                where[have] = at + 8 + i;
                stream[have++] = png[at + 8 + i];
            }
        }
        at += 12 + (size_t)n;
    }
    return have;
}

static void fix_adler(uint8_t *png, size_t length) {
    uint8_t *stream = malloc(length);
    size_t *where = malloc(length * sizeof(size_t));
    size_t have = stream != NULL && where != NULL ? gather_idat(png, length, stream, where) : 0;
    /* One inflater and output buffer for the process: a fresh 16 MiB a run costs more than the run. */
    static struct inflate_state *state;
    static uint8_t *out;
    if (state == NULL) {
        state = malloc(sizeof *state);
        out = malloc(ORACLE_MAX_INFLATE);
    }
    if (have > 2 && state != NULL && out != NULL) {
        isal_inflate_init(state);
        state->crc_flag = ISAL_DEFLATE;
        state->hist_bits = (stream[0] >> 4) + 8 > 15 ? 15 : (stream[0] >> 4) + 8;
        state->next_in = stream + 2;
        state->avail_in = (uint32_t)(have - 2);
        state->next_out = out;
        state->avail_out = ORACLE_MAX_INFLATE;
        if (isal_inflate(state) == ISAL_DECOMP_OK && state->block_state == ISAL_BLOCK_FINISH) {
            size_t end = have - state->avail_in;
            uint32_t adler = isal_adler32(1, out, ORACLE_MAX_INFLATE - state->avail_out);
            for (int i = 0; i < 4 && end + i < have; i++) {
                png[where[end + i]] = (uint8_t)(adler >> (24 - 8 * i));
            }
        }
    }
    free(where);
    free(stream);
}

/* Whether a chunk other than IDAT runs past the end of png. libpng allocates and zeroes a chunk's declared length
 * before reading it (up to 2 GiB); Halcyon cuts such a file before libvips sees it (PNGChunkOverrun.swift), so
 * libvips' header read, and the loader after it, never see the chunk: not a case here either. */
static int chunk_overruns(const uint8_t *png, size_t length) {
    for (size_t at = 8; length >= 8 && at <= length - 8;) {
        uint64_t n = be32(png + at);
        if (at + 12 + n > length) {
            return memcmp(png + at + 4, "IDAT", 4) != 0;
        }
        if (memcmp(png + at + 4, "IEND", 4) == 0) {
            return 0;
        }
        at += 12 + (size_t)n;
    }
    return 0;
}

/* The rounded mean of every shrink × shrink box of an 8-bit image of `bands` bands (smaller boxes at the edges). */
static uint8_t *box_means(const uint8_t *pixels, int width, int height, int bands, int shrink, int out_width,
                          int out_height) {
    uint8_t *out = malloc((size_t)out_width * out_height * bands);
    for (int oy = 0; out != NULL && oy < out_height; oy++) {
        for (int ox = 0; ox < out_width; ox++) {
            int x1 = ox * shrink + shrink < width ? ox * shrink + shrink : width;
            int y1 = oy * shrink + shrink < height ? oy * shrink + shrink : height;
            uint32_t count = (uint32_t)((x1 - ox * shrink) * (y1 - oy * shrink));
            for (int b = 0; b < bands; b++) {
                uint32_t sum = 0;
                for (int y = oy * shrink; y < y1; y++) {
                    for (int x = ox * shrink; x < x1; x++) {
                        sum += pixels[((size_t)y * width + x) * bands + b];
                    }
                }
                out[((size_t)oy * out_width + ox) * bands + b] = (uint8_t)((sum + count / 2) / count);
            }
        }
    }
    return out;
}

static void disagree(const char *what) {
    fprintf(stderr, "PNG oracle: %s\n", what);
    abort();
}

/* The loader gave `fast` for `png`: libvips must decode it to the same thing. */
static void compare(const uint8_t *png, size_t length, int shrink, VipsImage *fast) {
    VipsImage *full = NULL;
    if (vips_pngload_buffer((void *)png, length, &full, "fail_on", VIPS_FAIL_ON_TRUNCATED, NULL) != 0) {
        fprintf(stderr, "libvips: %s", vips_error_buffer());
        disagree("the loader decoded a file libvips refuses");
    }
    size_t full_size = 0, fast_size = 0;
    uint8_t *pixels = vips_image_write_to_memory(full, &full_size);
    uint8_t *mine = vips_image_write_to_memory(fast, &fast_size);
    if (pixels == NULL) {
        fprintf(stderr, "libvips: %s", vips_error_buffer());
        disagree("the loader decoded a file whose pixels libvips refuses");
    }
    int width = full->Xsize, height = full->Ysize, bands = full->Bands;
    int out_width = (width + shrink - 1) / shrink, out_height = (height + shrink - 1) / shrink;
    if (full->BandFmt != VIPS_FORMAT_UCHAR || bands != fast->Bands || out_width != fast->Xsize || out_height != fast->Ysize) {
        fprintf(stderr, "libvips %dx%d %d bands (format %d), loader %dx%d %d bands, shrink %d\n", width, height, bands,
                full->BandFmt, fast->Xsize, fast->Ysize, fast->Bands, shrink);
        disagree("the sizes differ");
    }
    if (full->Xres != fast->Xres || full->Yres != fast->Yres) {
        fprintf(stderr, "libvips %g x %g, loader %g x %g\n", full->Xres, full->Yres, fast->Xres, fast->Yres);
        disagree("the resolutions differ");
    }
    if (vips_image_get_typeof(full, VIPS_META_ICC_NAME) != vips_image_get_typeof(fast, VIPS_META_ICC_NAME) ||
        vips_image_get_typeof(full, VIPS_META_EXIF_NAME) != vips_image_get_typeof(fast, VIPS_META_EXIF_NAME) ||
        vips_image_get_orientation(full) != vips_image_get_orientation(fast)) {
        disagree("the colour profile, EXIF or orientation differ");
    }
    uint8_t *means = box_means(pixels, width, height, bands, shrink, out_width, out_height);
    if (means == NULL || mine == NULL || fast_size != (size_t)out_width * out_height * bands ||
        memcmp(means, mine, fast_size) != 0) {
        disagree("the pixels differ from libvips' box means");
    }
    free(means);
    g_free(mine);
    g_free(pixels);
    g_object_unref(full);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* How many inputs ran, and how many of them the loader decoded (each then compared with libvips). */
static unsigned long oracle_runs, oracle_compared;

static void oracle_report(void) {
    fprintf(stderr, "PNG oracle: %lu inputs, %lu decoded by the loader and compared with libvips\n", oracle_runs,
            oracle_compared);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int ready = 0;
    if (!ready) {
        if (VIPS_INIT("png-oracle") != 0) {
            abort();
        }
        vips_cache_set_max(0);
        atexit(oracle_report);
        ready = 1;
    }
    oracle_runs++;
    if (size < 9) {
        return 0;
    }
    int shrink = 1 + (data[0] & 7);
    size_t length = size - 1;
    uint8_t *png = malloc(length);
    if (png == NULL) {
        return 0;
    }
    memcpy(png, data + 1, length);
    if (data[0] & 8) {
        fix_adler(png, length);
    }
    fix_crcs(png, length);
    /* Halcyon checks the header's size against its pixel limit before it decodes: so does this. */
    uint64_t pixels = length >= 24 ? (uint64_t)be32(png + 16) * be32(png + 20) : 0;
    VipsImage *fast = NULL, *header = NULL;
    if (pixels <= ORACLE_MAX_PIXELS && !chunk_overruns(png, length) &&
        vips_pngload_buffer(png, length, &header, "fail_on", VIPS_FAIL_ON_TRUNCATED, NULL) == 0 &&
        hc_png_load_shrunk(png, length, shrink, header, &fast) == 0) {
        oracle_compared++;
        compare(png, length, shrink, fast);
        g_object_unref(fast);
    }
    if (header != NULL) {
        g_object_unref(header);
    }
    vips_error_clear();
    free(png);
    return 0;
}
