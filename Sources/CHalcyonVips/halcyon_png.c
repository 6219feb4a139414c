/*
 * A PNG loader for the common photographic case that shrinks while it
 * inflates: 8-bit greyscale or RGB, not interlaced, no transparency. Its own
 * inflater (halcyon_png_inflate.c, about 0.8 times zlib's time on photographs)
 * gives one row at a time; each row is unfiltered against the one above and
 * summed into a box of `shrink` × `shrink` source pixels, and each finished
 * row of boxes is written out as their rounded mean. Memory beyond the result
 * is the inflater's 300 KiB, three rows and, when shrinking, a row of 32-bit
 * column sums. Boxes on the right and
 * bottom edges hold fewer pixels when the size is not a multiple of `shrink`:
 * the result is ceil(width / shrink) × ceil(height / shrink).
 *
 * The loader is strict: the CRC of every chunk up to the end of the image
 * data, the zlib header and the stream's Adler-32 are checked, every block
 * header and symbol is inflated by the rules of zlib's inflate (which libpng
 * uses; a faster inflater such as ISA-L's takes some streams zlib refuses,
 * such as an incomplete Huffman code), and anything outside the set above, or
 * damaged in any way, is left to libvips' loader (return 1: Swift then runs
 * libvips' loader) so that it reports the problem, or tolerates it, by the
 * caller's fail-on level. hc_png_load_shrunk_takes answers from the header
 * alone, for Swift's choice of loader (ImageEngines). Like libvips, it reads
 * no chunk after the image data. The loader decodes pixels only: the result's
 * metadata (colour profile, EXIF and the orientation libvips reads from it,
 * text, XMP) and resolution are those of libvips' own header read of the same
 * file, which the caller passes in, so they are libvips' by construction. The
 * current RenderCancellation flag is looked at before each row.
 */
#include "halcyon_vips.h"
#include "halcyon_cancel.h"
#include "halcyon_loaders.h"
#include "halcyon_png_inflate.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HC_PNG_MAX_SHRINK 1024

/* Per thread: a test on one thread counts its own decodes, whatever runs beside it. */
static _Thread_local unsigned long hc_png_runs;

unsigned long hc_png_fast_count(void) { return hc_png_runs; }

/* What IHDR says. */
typedef struct {
    uint32_t width;
    uint32_t height;
    int bands;
} hc_png_header;

/* Reads IHDR and the chunks up to the first IDAT (left in *idat); -1 when the
 * file is outside the loader's set. Chunks that do not change the pixels
 * libvips 8.14 gives for such a file are skipped, metadata chunks among them
 * (their fields come from libvips' header read); any other (tRNS, bKGD,
 * unknown ones) sends the file to libvips. */
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
    for (;;) {
        if (hc_png_next_chunk(reader, &chunk) != 0) {
            return -1;
        }
        switch (chunk.type) {
        case HC_PNG_TYPE('I', 'D', 'A', 'T'):
            *idat = chunk;
            return 0;
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
        case HC_PNG_TYPE('t', 'I', 'M', 'E'):
        case HC_PNG_TYPE('p', 'H', 'Y', 's'):
        case HC_PNG_TYPE('i', 'C', 'C', 'P'):
        case HC_PNG_TYPE('e', 'X', 'I', 'f'):
        case HC_PNG_TYPE('t', 'E', 'X', 't'):
        case HC_PNG_TYPE('z', 'T', 'X', 't'):
        case HC_PNG_TYPE('i', 'T', 'X', 't'):
            break;
        default:
            return -1;
        }
    }
}

/* MARK: - Rows */

/* The Paeth predictor: of left, up and corner, the one nearest left + up - corner (ties in that order). */
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

/* Where rows go: the result, and the column sums of the rows of the current row of boxes. */
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

/* The mean of a box is (sum + count / 2) / count, computed as ((sum + count / 2) * hc_png_reciprocal(count)) >> 50
 * without a divide. Exact for every count up to HC_PNG_MAX_SHRINK² (2^20): with n = sum + count / 2 < 256 * count and
 * m = ceil(2^50 / count), n * m / 2^50 exceeds n / count by less than n / 2^50 < 256 * count / 2^50 < 1 / count, too
 * little to reach the next whole number, and n * m < 2^59 does not overflow. */
#define HC_PNG_MEAN_SHIFT 50

static inline uint64_t hc_png_reciprocal(uint32_t count) { return ((1ull << HC_PNG_MEAN_SHIFT) + count - 1) / count; }

static inline unsigned char hc_png_mean(uint32_t sum, uint32_t count, uint64_t reciprocal) {
    return (unsigned char)(((uint64_t)(sum + count / 2) * reciprocal) >> HC_PNG_MEAN_SHIFT);
}

/* Writes the rounded means of one row of boxes into `line` from the column sums of `rows` rows; `bands` is a
 * constant at each call, so the band loops unroll and the sums stay in registers. Only the last box can be narrower. */
static inline __attribute__((always_inline)) void hc_png_box_means(const hc_png_sink *sink, const int bands) {
    const int shrink = sink->shrink, full_boxes = sink->width / shrink;
    const uint64_t full = hc_png_reciprocal((uint32_t)(shrink * sink->rows));
    for (int ox = 0; ox < sink->out_width; ox++) {
        const int columns = ox < full_boxes ? shrink : sink->width - full_boxes * shrink;
        const uint32_t count = (uint32_t)(columns * sink->rows);
        const uint64_t reciprocal = columns == shrink ? full : hc_png_reciprocal(count);
        const uint32_t *sums = sink->sums + (size_t)ox * shrink * bands;
        uint32_t box[4] = {0, 0, 0, 0};
        for (int x = 0; x < columns; x++, sums += bands) {
            for (int b = 0; b < bands; b++) {
                box[b] += sums[b];
            }
        }
        for (int b = 0; b < bands; b++) {
            sink->line[(size_t)ox * bands + b] = hc_png_mean(box[b], count, reciprocal);
        }
    }
}

/* Adds one unfiltered source row (the last one when `last`) to the column sums; when `shrink` rows are in
 * (or at the last row), writes the row of box means. The add is one pass over the row that the compiler
 * vectorizes; the boxes are summed once per row of output. */
static int hc_png_sink_row(hc_png_sink *sink, const unsigned char *row, int last) {
    if (sink->shrink == 1) {
        /* libvips copies the row; the cast only drops const. */
        return vips_image_write_line(sink->image, sink->out_y++, (VipsPel *)row);
    }
    const size_t rowbytes = (size_t)sink->width * sink->bands;
    uint32_t *restrict sums = sink->sums;
    for (size_t i = 0; i < rowbytes; i++) {
        sums[i] += row[i];
    }
    if (++sink->rows < sink->shrink && !last) {
        return 0;
    }
    if (sink->bands == 1) {
        hc_png_box_means(sink, 1);
    } else {
        hc_png_box_means(sink, 3); /* the header read takes greyscale or RGB only */
    }
    memset(sums, 0, rowbytes * sizeof(uint32_t));
    sink->rows = 0;
    return vips_image_write_line(sink->image, sink->out_y++, sink->line);
}

/* MARK: - Inflating */

/* Whether the stream starts with a zlib header zlib itself takes: deflate, a window of at most 32 KiB (in
 * `window`), no preset dictionary. The two bytes may lie in different IDATs; the reader is not moved. */
static int hc_png_zlib_header_ok(const hc_png_reader *reader, const hc_png_chunk *idat, uint32_t *window) {
    unsigned char header[2];
    size_t have = 0;
    hc_png_reader ahead = *reader;
    hc_png_chunk chunk = *idat;
    for (;;) {
        for (uint32_t i = 0; i < chunk.length && have < 2; i++) {
            header[have++] = chunk.body[i];
        }
        if (have == 2) {
            break;
        }
        if (hc_png_next_chunk(&ahead, &chunk) != 0 || chunk.type != HC_PNG_TYPE('I', 'D', 'A', 'T')) {
            return 0;
        }
    }
    int cmf = header[0], flags = header[1];
    if ((cmf & 0x0f) != 8 || (cmf >> 4) > 7 || (cmf * 256 + flags) % 31 != 0 || (flags & 0x20) != 0) {
        return 0;
    }
    *window = 1u << ((cmf >> 4) + 8);
    return 1;
}

/* MARK: - Loading */

/* The loader's working memory, apart from the result. */
typedef struct {
    hc_inflater *inflater;
    unsigned char *rows;     /* two rows, with their filter bytes */
    unsigned char *previous; /* zeros: the row above the first */
    uint32_t *sums;
    unsigned char *line;
} hc_png_buffers;

static void hc_png_buffers_free(hc_png_buffers *buffers) {
    if (buffers->inflater != NULL) {
        hc_inflate_free(buffers->inflater);
    }
    free(buffers->rows);
    free(buffers->previous);
    free(buffers->sums);
    free(buffers->line);
}

/* Inflates, unfilters and shrinks every row into sink, one row at a time into the two rows of `rows` by turns, so the
 * row above stays where it was read and no band of rows is held; 1 on damage, -1 when cancelled or when libvips could
 * not take a row (its error set). */
static int hc_png_decode_rows(const hc_png_header *header, hc_png_buffers *buffers, hc_png_sink *sink) {
    const size_t rowbytes = (size_t)header->width * header->bands, stride = rowbytes + 1;
    const unsigned char *up = buffers->previous;
    for (uint32_t y = 0; y < header->height; y++) {
        if (hc_cancel_current_triggered()) {
            vips_error("halcyon", "%s", "cancelled");
            return -1;
        }
        unsigned char *row = buffers->rows + (y & 1) * stride;
        if (hc_inflate_read(buffers->inflater, row, stride) != 0) {
            return 1;
        }
        if (hc_png_unfilter(row + 1, up, rowbytes, header->bands, row[0]) != 0) {
            return 1;
        }
        if (hc_png_sink_row(sink, row + 1, y + 1 == header->height) != 0) {
            return -1;
        }
        up = row + 1;
    }
    return hc_inflate_finish(buffers->inflater) == 0 ? 0 : 1;
}

/* vips_image_map's callback for hc_copy_header_fields: sets the field on `a` when `a` has none of that name. */
static void *hc_png_copy_field(VipsImage *image, const char *name, GValue *value, void *a) {
    (void)image;
    VipsImage *to = a;
    if (vips_image_get_typeof(to, name) == 0) {
        vips_image_set(to, name, value);
    }
    return NULL;
}

void hc_copy_header_fields(VipsImage *header, VipsImage *to) { vips_image_map(header, hc_png_copy_field, to); }

/* Decodes into a new memory image of the shrunk size, with libvips' metadata from `libvips_header`; the result codes
 * of hc_png_load_shrunk. */
static int hc_png_decode(hc_png_reader *reader, const hc_png_header *header, const hc_png_chunk *idat, int shrink,
                         VipsImage *libvips_header, VipsImage **out) {
    const size_t rowbytes = (size_t)header->width * header->bands, stride = rowbytes + 1;
    const int out_width = (int)((header->width + (uint32_t)shrink - 1) / (uint32_t)shrink);
    const int out_height = (int)((header->height + (uint32_t)shrink - 1) / (uint32_t)shrink);
    uint32_t window = 0;
    if (!hc_png_zlib_header_ok(reader, idat, &window)) {
        return 1;
    }
    hc_png_buffers buffers = {
        hc_inflate_new(reader, idat->body, idat->length, window),
        malloc(2 * stride), calloc(rowbytes, 1), shrink > 1 ? calloc(rowbytes, sizeof(uint32_t)) : NULL,
        malloc((size_t)out_width * header->bands),
    };
    VipsImage *image = NULL;
    int result = 1;
    if (buffers.inflater != NULL && buffers.rows != NULL && buffers.previous != NULL && (shrink == 1 || buffers.sums != NULL) &&
        buffers.line != NULL && (image = vips_image_new_memory()) != NULL) {
        vips_image_init_fields(image, out_width, out_height, header->bands, VIPS_FORMAT_UCHAR, VIPS_CODING_NONE,
                               header->bands == 3 ? VIPS_INTERPRETATION_sRGB : VIPS_INTERPRETATION_B_W,
                               vips_image_get_xres(libvips_header), vips_image_get_yres(libvips_header));
        if (vips_image_write_prepare(image) != 0) {
            result = -1;
        } else {
            hc_png_sink sink = {image, (int)header->width, header->bands, shrink, out_width, 0, 0, buffers.sums, buffers.line};
            result = hc_png_decode_rows(header, &buffers, &sink);
        }
    }
    hc_png_buffers_free(&buffers);
    if (result != 0) {
        if (image != NULL) {
            g_object_unref(image);
        }
        return result;
    }
    hc_copy_header_fields(libvips_header, image);
    *out = image;
    return 0;
}

int hc_png_load_shrunk_takes(const void *buffer, size_t length, int shrink) {
    hc_png_reader reader = {buffer, length, 0, 0};
    hc_png_header header;
    hc_png_chunk idat;
    return shrink >= 1 && shrink <= HC_PNG_MAX_SHRINK && hc_png_read_header(&reader, &header, &idat) == 0;
}

int hc_png_load_shrunk(const void *buffer, size_t length, int shrink, VipsImage *libvips_header, VipsImage **out) {
    *out = NULL;
    hc_png_reader reader = {buffer, length, 0, 1};
    hc_png_header header;
    hc_png_chunk idat;
    if (shrink < 1 || shrink > HC_PNG_MAX_SHRINK || hc_png_read_header(&reader, &header, &idat) != 0 ||
        vips_image_get_width(libvips_header) != (int)header.width || vips_image_get_height(libvips_header) != (int)header.height) {
        return 1;
    }
    int result = hc_png_decode(&reader, &header, &idat, shrink, libvips_header, out);
    if (result == 0) {
        hc_png_runs++;
    }
    return result;
}
