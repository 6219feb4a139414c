/*
 * JPEG encoding on the calling thread, for an 8-bit sRGB (3 bands) or one-band image of at most 65500
 * pixels a side: what hc_jpegsave_takes says, which Swift asks before choosing this encoder or libvips' saver
 * (ImageEngines). libvips' saver renders the image through its thread pool and compresses it on a pool thread
 * while the calling thread waits; here the rows are rendered in strips and compressed by libjpeg on the calling
 * thread, so an encode costs no hand-off between threads.
 *
 * The file is the one libvips 8.14's saver writes for the same image and settings: libjpeg's defaults, the
 * quality, progressive scans when asked, no chroma subsampling from quality 90, no JFIF header; then the APP
 * markers in libvips' order: the EXIF block libvips rebuilds from the image's fields (vips__exif_update, run on a
 * copy so the caller's image is untouched), XMP, IPTC, and the ICC profile split over APP2 markers. Strips are
 * rendered through the cancellation guard, so a triggered cancellation fails the encode at the next strip.
 */
#include "halcyon_cancel.h"
#include "halcyon_savers.h"
#include "halcyon_vips.h"

#include <jpeglib.h>
#include <jerror.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#define HC_JPEG_STRIP 64
#define HC_JPEG_MAX_SIDE 65500
/* libvips' limits: the data of one marker, the ICC marker's own bytes, and the XMP it writes. */
#define HC_JPEG_MAX_MARKER 65533
#define HC_JPEG_ICC_OVERHEAD 14
#define HC_JPEG_MAX_XMP 60000
#define HC_JPEG_XMP_URL "http://ns.adobe.com/xap/1.0/"

static _Thread_local unsigned long hc_jpegsave_runs;

unsigned long hc_jpeg_save_count(void) { return hc_jpegsave_runs; }

int hc_jpegsave_takes(VipsImage *in) {
    int bands = vips_image_get_bands(in);
    VipsInterpretation interpretation = vips_image_get_interpretation(in);
    if (vips_image_get_format(in) != VIPS_FORMAT_UCHAR || in->Coding != VIPS_CODING_NONE ||
        in->Xsize > HC_JPEG_MAX_SIDE || in->Ysize > HC_JPEG_MAX_SIDE) {
        return 0;
    }
    /* libvips' saver writes one 8-bit band as grey whatever it is called; three it converts to sRGB unless they are. */
    return bands == 1 || (bands == 3 && interpretation == VIPS_INTERPRETATION_sRGB);
}

/* MARK: - libjpeg plumbing */

typedef struct {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
} hc_jpeg_error;

/* libjpeg's fatal errors: the message goes to libvips' error buffer, then back to the setjmp. */
static void hc_jpeg_error_exit(j_common_ptr cinfo) {
    char message[JMSG_LENGTH_MAX];
    cinfo->err->format_message(cinfo, message);
    vips_error("hc_jpegsave", "%s", message);
    longjmp(((hc_jpeg_error *)cinfo->err)->jump, 1);
}

/* libjpeg's warnings, which libvips' saver logs and goes on from. */
static void hc_jpeg_output_message(j_common_ptr cinfo) {
    char message[JMSG_LENGTH_MAX];
    cinfo->err->format_message(cinfo, message);
    g_warning("hc_jpegsave: %s", message);
}

/* The file in memory: a buffer that doubles as libjpeg fills it, owned here so that a failed encode frees it too
 * (libjpeg's own memory destination drops track of its buffer once it has grown). */
typedef struct {
    struct jpeg_destination_mgr pub;
    unsigned char *data;
    size_t capacity;
    size_t length;
} hc_jpeg_file;

static void hc_jpeg_file_start(j_compress_ptr cinfo) {
    hc_jpeg_file *file = (hc_jpeg_file *)cinfo->dest;
    file->capacity = 64 * 1024;
    file->data = g_try_malloc(file->capacity);
    if (file->data == NULL) {
        ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 0);
    }
    file->pub.next_output_byte = file->data;
    file->pub.free_in_buffer = file->capacity;
}

static boolean hc_jpeg_file_grow(j_compress_ptr cinfo) {
    hc_jpeg_file *file = (hc_jpeg_file *)cinfo->dest;
    unsigned char *grown = g_try_realloc(file->data, file->capacity * 2);
    if (grown == NULL) {
        ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 1);
    }
    /* libjpeg calls this only when the buffer is full. */
    file->pub.next_output_byte = grown + file->capacity;
    file->pub.free_in_buffer = file->capacity;
    file->data = grown;
    file->capacity *= 2;
    return TRUE;
}

static void hc_jpeg_file_end(j_compress_ptr cinfo) {
    hc_jpeg_file *file = (hc_jpeg_file *)cinfo->dest;
    file->length = file->capacity - file->pub.free_in_buffer;
}

/* MARK: - Markers */

/* A blob field as one marker, as libvips writes it: left out, with a warning, when over a marker's size. */
static void hc_jpeg_blob(j_compress_ptr cinfo, VipsImage *image, const char *field, int marker) {
    const void *data;
    size_t length;
    if (!vips_image_get_typeof(image, field) || vips_image_get_blob(image, field, &data, &length) != 0) {
        return;
    }
    if (length > HC_JPEG_MAX_MARKER) {
        g_warning("hc_jpegsave: field \"%s\" is too large for a single JPEG marker, ignoring", field);
        return;
    }
    jpeg_write_marker(cinfo, marker, data, (unsigned int)length);
}

/* XMP behind its namespace URL and a NUL, when at most 60000 bytes. */
static void hc_jpeg_xmp(j_compress_ptr cinfo, VipsImage *image) {
    const void *data;
    size_t length;
    if (!vips_image_get_typeof(image, VIPS_META_XMP_NAME) ||
        vips_image_get_blob(image, VIPS_META_XMP_NAME, &data, &length) != 0) {
        return;
    }
    if (length > HC_JPEG_MAX_XMP) {
        g_warning("hc_jpegsave: large XMP not saved");
        return;
    }
    size_t prefix = strlen(HC_JPEG_XMP_URL) + 1;
    unsigned char *marker = g_malloc(prefix + length);
    memcpy(marker, HC_JPEG_XMP_URL, prefix);
    memcpy(marker + prefix, data, length);
    jpeg_write_marker(cinfo, JPEG_APP0 + 1, marker, (unsigned int)(prefix + length));
    g_free(marker);
}

/* The ICC profile over as many APP2 markers as it needs, each "ICC_PROFILE", its number and the count. */
static void hc_jpeg_icc(j_compress_ptr cinfo, VipsImage *image) {
    const unsigned char *data;
    size_t length;
    if (!vips_image_get_typeof(image, VIPS_META_ICC_NAME) ||
        vips_image_get_blob(image, VIPS_META_ICC_NAME, (const void **)&data, &length) != 0 || length == 0) {
        return;
    }
    const size_t room = HC_JPEG_MAX_MARKER - HC_JPEG_ICC_OVERHEAD;
    unsigned int count = (unsigned int)((length + room - 1) / room);
    for (unsigned int number = 1; length > 0; number++) {
        size_t part = length < room ? length : room;
        jpeg_write_m_header(cinfo, JPEG_APP0 + 2, (unsigned int)(part + HC_JPEG_ICC_OVERHEAD));
        const char *name = "ICC_PROFILE";
        for (size_t i = 0; i <= strlen(name); i++) {
            jpeg_write_m_byte(cinfo, name[i]);
        }
        jpeg_write_m_byte(cinfo, (int)number);
        jpeg_write_m_byte(cinfo, (int)count);
        for (size_t i = 0; i < part; i++) {
            jpeg_write_m_byte(cinfo, data[i]);
        }
        data += part;
        length -= part;
    }
}

/* The APP markers libvips' saver writes after the header, in its order, from `copy`, a copy of the image whose
 * EXIF block is rebuilt from its fields here. */
static int hc_jpeg_markers(j_compress_ptr cinfo, VipsImage *copy) {
    if (vips__exif_update(copy) != 0) {
        return -1;
    }
    hc_jpeg_blob(cinfo, copy, VIPS_META_EXIF_NAME, JPEG_APP0 + 1);
    hc_jpeg_xmp(cinfo, copy);
    hc_jpeg_blob(cinfo, copy, VIPS_META_IPTC_NAME, JPEG_APP0 + 13);
    hc_jpeg_icc(cinfo, copy);
    return 0;
}

/* MARK: - Encoding */

/* The settings libvips' saver makes for `quality` and `progressive` with its other options at their defaults. */
static void hc_jpeg_settings(j_compress_ptr cinfo, VipsImage *in, int quality, int progressive) {
    cinfo->image_width = (JDIMENSION)in->Xsize;
    cinfo->image_height = (JDIMENSION)in->Ysize;
    cinfo->input_components = in->Bands;
    cinfo->in_color_space = in->Bands == 3 ? JCS_RGB : JCS_GRAYSCALE;
    jpeg_set_defaults(cinfo);
    cinfo->optimize_coding = FALSE;
    jpeg_set_quality(cinfo, quality, TRUE);
    if (progressive) {
        jpeg_simple_progression(cinfo);
    }
    if (quality >= 90) {
        for (int i = 0; i < in->Bands; i++) {
            cinfo->comp_info[i].h_samp_factor = 1;
            cinfo->comp_info[i].v_samp_factor = 1;
        }
    }
    cinfo->write_JFIF_header = FALSE;
}

/* Hands a strip's rows to libjpeg (`context`). */
static int hc_jpeg_strip(VipsRegion *region, const VipsRect *strip, void *context) {
    JSAMPROW rows[HC_JPEG_STRIP];
    for (int y = 0; y < strip->height; y++) {
        rows[y] = (JSAMPROW)VIPS_REGION_ADDR(region, 0, strip->top + y);
    }
    jpeg_write_scanlines((j_compress_ptr)context, rows, (JDIMENSION)strip->height);
    return 0;
}

/* What hc_jpegsave_inline holds while libjpeg may jump back to it. */
typedef struct {
    VipsImage *guarded;
    VipsImage *copy;
    VipsRegion *region;
    hc_jpeg_file file;
} hc_jpeg_work;

static void hc_jpeg_release(hc_jpeg_work *work) {
    VIPS_UNREF(work->region);
    VIPS_UNREF(work->copy);
    VIPS_UNREF(work->guarded);
    g_free(work->file.data);
}

int hc_jpegsave_inline(VipsImage *in, int quality, int progressive, void **buffer, size_t *length) {
    if (!hc_jpegsave_takes(in) || quality < 1 || quality > 100) {
        vips_error("hc_jpegsave", "%s", "the image or quality is not one this encoder takes");
        return -1;
    }
    /* On the heap: what a longjmp must find as it was (locals changed after the setjmp would need volatile). */
    hc_jpeg_work *work = g_new0(hc_jpeg_work, 1);
    struct jpeg_compress_struct cinfo;
    hc_jpeg_error error;
    cinfo.err = jpeg_std_error(&error.pub);
    error.pub.error_exit = hc_jpeg_error_exit;
    error.pub.output_message = hc_jpeg_output_message;
    if (setjmp(error.jump)) {
        jpeg_destroy_compress(&cinfo);
        hc_jpeg_release(work);
        g_free(work);
        return -1;
    }
    jpeg_create_compress(&cinfo);
    work->file.pub.init_destination = hc_jpeg_file_start;
    work->file.pub.empty_output_buffer = hc_jpeg_file_grow;
    work->file.pub.term_destination = hc_jpeg_file_end;
    cinfo.dest = &work->file.pub;
    work->guarded = hc_cancel_guard(in);
    work->region = vips_region_new(work->guarded);
    int result = vips_copy(in, &work->copy, NULL);
    if (result == 0) {
        hc_jpeg_settings(&cinfo, in, quality, progressive);
        jpeg_start_compress(&cinfo, TRUE);
        result = hc_jpeg_markers(&cinfo, work->copy);
    }
    if (result == 0) {
        result = hc_render_strips(work->region, HC_JPEG_STRIP, hc_jpeg_strip, &cinfo);
    }
    if (result == 0) {
        jpeg_finish_compress(&cinfo);
        *buffer = g_steal_pointer(&work->file.data);
        *length = work->file.length;
        hc_jpegsave_runs++;
    }
    jpeg_destroy_compress(&cinfo);
    hc_jpeg_release(work);
    g_free(work);
    return result;
}
