/*
 * A PNG loader for the common photographic case that shrinks while it
 * inflates: 8-bit greyscale or RGB, not interlaced, no transparency, colour
 * profile or EXIF. ISA-L's inflate (about twice zlib's speed on these
 * streams) fills a band of at most 32 rows at a time; each row is unfiltered
 * against the one above and summed into a box of `shrink` × `shrink` source
 * pixels, and each finished row of boxes is written out as their rounded
 * mean. Memory beyond the result is the band, one row and one row of sums,
 * whatever the source's size. Boxes on the right and bottom edges hold fewer
 * pixels when the size is not a multiple of `shrink`: the result is
 * ceil(width / shrink) × ceil(height / shrink).
 *
 * The loader is strict: every chunk's CRC and the stream's Adler-32 are
 * checked, and anything outside the set above, or damaged in any way, is
 * left to libvips' loader (return 1) so that it reports the problem, or
 * tolerates it, by the caller's fail-on level. The current RenderCancellation
 * flag is looked at before each band.
 */
#include "halcyon_vips.h"
#include "halcyon_cancel.h"

#include <isa-l/crc.h>
#include <isa-l/igzip_lib.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HC_PNG_TYPE(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (uint32_t)(d))
#define HC_PNG_BAND_ROWS 32
#define HC_PNG_BAND_BYTES (4u << 20)
#define HC_PNG_MAX_SHRINK 1024

/* Per thread: a test on one thread counts its own decodes, whatever runs beside it. */
static _Thread_local unsigned long hc_png_runs;

unsigned long hc_png_fast_count(void) { return hc_png_runs; }

static uint32_t hc_be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* MARK: - Chunks */

typedef struct {
    const unsigned char *data;
    size_t length;
    size_t next;
} hc_png_reader;

typedef struct {
    uint32_t type;
    uint32_t length;
    const unsigned char *body;
} hc_png_chunk;

/* The chunk at reader->next, moving past it; -1 when it runs past the buffer or its CRC is wrong. */
static int hc_png_next_chunk(hc_png_reader *reader, hc_png_chunk *chunk) {
    if (reader->length - reader->next < 12) {
        return -1;
    }
    const unsigned char *p = reader->data + reader->next;
    uint32_t length = hc_be32(p);
    if (length > 0x7fffffffu || length > reader->length - reader->next - 12) {
        return -1;
    }
    if (crc32_gzip_refl(0, p + 4, (uint64_t)length + 4) != hc_be32(p + 8 + length)) {
        return -1;
    }
    chunk->type = hc_be32(p + 4);
    chunk->length = length;
    chunk->body = p + 8;
    reader->next += 12 + (size_t)length;
    return 0;
}

typedef struct {
    uint32_t width;
    uint32_t height;
    int bands;
    double xres;
    double yres;
} hc_png_header;

/* Reads IHDR and the chunks up to the first IDAT (left in *idat); -1 when the
 * file is outside the loader's set. Chunks that change nothing libvips would
 * give for such a file are skipped; any other (tRNS, iCCP, eXIf, text, unknown
 * ones) sends the file to libvips. */
static int hc_png_read_header(hc_png_reader *reader, hc_png_header *header, hc_png_chunk *idat) {
    static const unsigned char signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    if (reader->length < 8 || memcmp(reader->data, signature, 8) != 0) {
        return -1;
    }
    reader->next = 8;
    hc_png_chunk chunk;
    if (hc_png_next_chunk(reader, &chunk) != 0 || chunk.type != HC_PNG_TYPE('I', 'H', 'D', 'R') || chunk.length != 13) {
        return -1;
    }
    const unsigned char *ihdr = chunk.body;
    header->width = hc_be32(ihdr);
    header->height = hc_be32(ihdr + 4);
    int depth = ihdr[8], colour = ihdr[9];
    if (header->width == 0 || header->height == 0 || header->width > VIPS_MAX_COORD || header->height > VIPS_MAX_COORD ||
        depth != 8 || (colour != 0 && colour != 2) || ihdr[10] != 0 || ihdr[11] != 0 || ihdr[12] != 0) {
        return -1;
    }
    header->bands = colour == 2 ? 3 : 1;
    header->xres = header->yres = 1.0;
    for (;;) {
        if (hc_png_next_chunk(reader, &chunk) != 0) {
            return -1;
        }
        switch (chunk.type) {
        case HC_PNG_TYPE('I', 'D', 'A', 'T'):
            *idat = chunk;
            return 0;
        case HC_PNG_TYPE('p', 'H', 'Y', 's'):
            /* Pixels per metre, as libvips reads it: pixels per millimetre. */
            if (chunk.length == 9 && chunk.body[8] == 1) {
                header->xres = hc_be32(chunk.body) / 1000.0;
                header->yres = hc_be32(chunk.body + 4) / 1000.0;
            }
            break;
        case HC_PNG_TYPE('P', 'L', 'T', 'E'):
            /* A suggested palette is allowed with RGB only. */
            if (colour != 2) {
                return -1;
            }
            break;
        case HC_PNG_TYPE('g', 'A', 'M', 'A'):
        case HC_PNG_TYPE('c', 'H', 'R', 'M'):
        case HC_PNG_TYPE('s', 'R', 'G', 'B'):
        case HC_PNG_TYPE('s', 'B', 'I', 'T'):
        case HC_PNG_TYPE('b', 'K', 'G', 'D'):
        case HC_PNG_TYPE('t', 'I', 'M', 'E'):
            break;
        default:
            return -1;
        }
    }
}

/* MARK: - Rows */

static inline unsigned char hc_paeth(int left, int up, int corner) {
    int estimate = left + up - corner;
    int dl = abs(estimate - left), du = abs(estimate - up), dc = abs(estimate - corner);
    return (unsigned char)(dl <= du && dl <= dc ? left : du <= dc ? up : corner);
}

/* Undoes a row's filter in place; `up` is the row above, unfiltered (zeros above the first). */
static int hc_png_unfilter(unsigned char *row, const unsigned char *up, size_t n, int bpp, int filter) {
    switch (filter) {
    case 0:
        return 0;
    case 1:
        for (size_t i = (size_t)bpp; i < n; i++) {
            row[i] = (unsigned char)(row[i] + row[i - bpp]);
        }
        return 0;
    case 2:
        for (size_t i = 0; i < n; i++) {
            row[i] = (unsigned char)(row[i] + up[i]);
        }
        return 0;
    case 3:
        for (size_t i = 0; i < (size_t)bpp; i++) {
            row[i] = (unsigned char)(row[i] + (up[i] >> 1));
        }
        for (size_t i = (size_t)bpp; i < n; i++) {
            row[i] = (unsigned char)(row[i] + ((row[i - bpp] + up[i]) >> 1));
        }
        return 0;
    case 4:
        for (size_t i = 0; i < (size_t)bpp; i++) {
            row[i] = (unsigned char)(row[i] + up[i]);
        }
        for (size_t i = (size_t)bpp; i < n; i++) {
            row[i] = (unsigned char)(row[i] + hc_paeth(row[i - bpp], up[i], up[i - bpp]));
        }
        return 0;
    default:
        return -1;
    }
}

/* MARK: - Shrinking */

typedef struct {
    VipsImage *image;
    int width;
    int bands;
    int shrink;
    int out_width;
    int out_y;
    int rows;
    uint32_t *sums;
    unsigned char *line;
} hc_png_sink;

/* Adds one unfiltered source row (the last one when `last`) to the boxes; writes a row of means when they are full. */
static int hc_png_sink_row(hc_png_sink *sink, const unsigned char *row, int last) {
    if (sink->shrink == 1) {
        return vips_image_write_line(sink->image, sink->out_y++, (VipsPel *)row);
    }
    const int bands = sink->bands, shrink = sink->shrink;
    for (int ox = 0; ox < sink->out_width; ox++) {
        int x0 = ox * shrink, x1 = x0 + shrink < sink->width ? x0 + shrink : sink->width;
        for (int b = 0; b < bands; b++) {
            uint32_t sum = 0;
            for (int x = x0; x < x1; x++) {
                sum += row[(size_t)x * bands + b];
            }
            sink->sums[(size_t)ox * bands + b] += sum;
        }
    }
    if (++sink->rows < shrink && !last) {
        return 0;
    }
    for (int ox = 0; ox < sink->out_width; ox++) {
        int x0 = ox * shrink, columns = (x0 + shrink < sink->width ? shrink : sink->width - x0);
        uint32_t count = (uint32_t)(columns * sink->rows);
        for (int b = 0; b < bands; b++) {
            size_t i = (size_t)ox * bands + b;
            sink->line[i] = (unsigned char)((sink->sums[i] + count / 2) / count);
        }
    }
    memset(sink->sums, 0, (size_t)sink->out_width * bands * sizeof(uint32_t));
    sink->rows = 0;
    return vips_image_write_line(sink->image, sink->out_y++, sink->line);
}

/* MARK: - Inflating */

typedef struct {
    hc_png_reader *reader;
    struct inflate_state *state;
} hc_png_stream;

/* Fills `length` bytes at `out` from the IDAT stream; -1 on a damaged or short stream. */
static int hc_png_inflate(hc_png_stream *stream, unsigned char *out, size_t length) {
    struct inflate_state *state = stream->state;
    state->next_out = out;
    state->avail_out = (uint32_t)length;
    while (state->avail_out > 0) {
        if (state->block_state == ISAL_BLOCK_FINISH) {
            return -1;
        }
        if (state->avail_in == 0) {
            hc_png_chunk chunk;
            if (hc_png_next_chunk(stream->reader, &chunk) != 0 || chunk.type != HC_PNG_TYPE('I', 'D', 'A', 'T')) {
                return -1;
            }
            state->next_in = (uint8_t *)chunk.body;
            state->avail_in = chunk.length;
            continue;
        }
        uint32_t in_before = state->avail_in, out_before = state->avail_out;
        int status = isal_inflate(state);
        if (status < 0 || status == ISAL_NEED_DICT) {
            return -1;
        }
        if (state->avail_in == in_before && state->avail_out == out_before && state->block_state != ISAL_BLOCK_FINISH) {
            return -1;
        }
    }
    return 0;
}

/* After the last row: the stream must end here, with its Adler-32 right. */
static int hc_png_finish(hc_png_stream *stream) {
    unsigned char extra[64];
    struct inflate_state *state = stream->state;
    while (state->block_state != ISAL_BLOCK_FINISH) {
        if (state->avail_in == 0) {
            hc_png_chunk chunk;
            if (hc_png_next_chunk(stream->reader, &chunk) != 0 || chunk.type != HC_PNG_TYPE('I', 'D', 'A', 'T')) {
                return -1;
            }
            state->next_in = (uint8_t *)chunk.body;
            state->avail_in = chunk.length;
            continue;
        }
        uint32_t in_before = state->avail_in;
        state->next_out = extra;
        state->avail_out = sizeof extra;
        int status = isal_inflate(state);
        if (status < 0 || status == ISAL_NEED_DICT || state->avail_out != sizeof extra) {
            return -1;
        }
        if (state->avail_in == in_before && state->block_state != ISAL_BLOCK_FINISH) {
            return -1;
        }
    }
    return 0;
}

/* MARK: - Loading */

typedef struct {
    struct inflate_state *state;
    unsigned char *band;
    unsigned char *previous;
    uint32_t *sums;
    unsigned char *line;
} hc_png_buffers;

static void hc_png_buffers_free(hc_png_buffers *buffers) {
    free(buffers->state);
    free(buffers->band);
    free(buffers->previous);
    free(buffers->sums);
    free(buffers->line);
}

/* Inflates, unfilters and shrinks every row into sink; 1 on damage, -1 when cancelled. */
static int hc_png_decode_rows(hc_png_stream *stream, const hc_png_header *header, hc_png_buffers *buffers,
                              size_t band_rows, hc_png_sink *sink) {
    const size_t rowbytes = (size_t)header->width * header->bands, stride = rowbytes + 1;
    const unsigned char *up = buffers->previous;
    for (uint32_t y = 0; y < header->height;) {
        if (hc_cancel_current_triggered()) {
            vips_error("halcyon", "%s", "cancelled");
            return -1;
        }
        size_t rows = header->height - y < band_rows ? header->height - y : band_rows;
        if (hc_png_inflate(stream, buffers->band, rows * stride) != 0) {
            return 1;
        }
        for (size_t r = 0; r < rows; r++) {
            unsigned char *row = buffers->band + r * stride;
            if (hc_png_unfilter(row + 1, up, rowbytes, header->bands, row[0]) != 0 ||
                hc_png_sink_row(sink, row + 1, y + r + 1 == header->height) != 0) {
                return 1;
            }
            up = row + 1;
        }
        memcpy(buffers->previous, up, rowbytes);
        up = buffers->previous;
        y += (uint32_t)rows;
    }
    return hc_png_finish(stream) == 0 ? 0 : 1;
}

int hc_png_load_shrunk(const void *buffer, size_t length, int shrink, VipsImage **out) {
    hc_png_reader reader = {buffer, length, 0};
    hc_png_header header;
    hc_png_chunk idat;
    if (shrink < 1 || shrink > HC_PNG_MAX_SHRINK || hc_png_read_header(&reader, &header, &idat) != 0) {
        return 1;
    }
    const size_t rowbytes = (size_t)header.width * header.bands, stride = rowbytes + 1;
    size_t band_rows = HC_PNG_BAND_BYTES / stride;
    band_rows = band_rows < 1 ? 1 : band_rows > HC_PNG_BAND_ROWS ? HC_PNG_BAND_ROWS : band_rows;
    const int out_width = (int)((header.width + (uint32_t)shrink - 1) / (uint32_t)shrink);
    const int out_height = (int)((header.height + (uint32_t)shrink - 1) / (uint32_t)shrink);

    hc_png_buffers buffers = {
        malloc(sizeof(struct inflate_state)), malloc(band_rows * stride), calloc(rowbytes, 1),
        calloc((size_t)out_width * header.bands, sizeof(uint32_t)), malloc((size_t)out_width * header.bands),
    };
    VipsImage *image = vips_image_new_memory();
    if (buffers.state == NULL || buffers.band == NULL || buffers.previous == NULL || buffers.sums == NULL ||
        buffers.line == NULL) {
        hc_png_buffers_free(&buffers);
        g_object_unref(image);
        return 1;
    }
    vips_image_init_fields(image, out_width, out_height, header.bands, VIPS_FORMAT_UCHAR, VIPS_CODING_NONE,
                           header.bands == 3 ? VIPS_INTERPRETATION_sRGB : VIPS_INTERPRETATION_B_W, header.xres,
                           header.yres);
    int result = 1;
    if (vips_image_write_prepare(image) == 0) {
        isal_inflate_init(buffers.state);
        buffers.state->crc_flag = ISAL_ZLIB;
        buffers.state->next_in = (uint8_t *)idat.body;
        buffers.state->avail_in = idat.length;
        hc_png_stream stream = {&reader, buffers.state};
        hc_png_sink sink = {image, (int)header.width, header.bands, shrink, out_width, 0, 0, buffers.sums, buffers.line};
        result = hc_png_decode_rows(&stream, &header, &buffers, band_rows, &sink);
    }
    hc_png_buffers_free(&buffers);
    if (result != 0) {
        g_object_unref(image);
        return result;
    }
    hc_png_runs++;
    *out = image;
    return 0;
}
