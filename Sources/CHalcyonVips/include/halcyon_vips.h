/*
 * CHalcyonVips: fixed-arity wrappers of the libvips calls Halcyon needs.
 *
 * Swift cannot call C variadic functions, so every libvips operation that takes
 * optional arguments gets a wrapper here with the arguments spelled out. This
 * is the only C in the package. Conventions:
 *   - Every function that makes an image returns 0 on success and writes a new
 *     reference into *out; the caller owns it and releases it with hc_unref.
 *   - On failure the function returns -1 and libvips' error buffer holds the
 *     reason: read it at once with hc_error_copy.
 *   - Buffers written by the save functions are freed with hc_free.
 */
#ifndef HALCYON_VIPS_H
#define HALCYON_VIPS_H

#include <stddef.h>
#include <vips/vips.h>

/* MARK: - Life cycle and errors */

/** Receives libvips' log messages: the GLib level (G_LOG_LEVEL_WARNING, ...) and the text.
 *  Called from any thread, libvips' workers included. */
typedef void (*hc_log_sink)(int level, const char *message);
/** Sets where the messages of GLib's "VIPS" log domain go (NULL drops them). hc_init
 *  installs the GLib handler, so no libvips warning reaches stderr raw; set the sink
 *  before hc_init to see the messages of libvips' start-up too. */
void hc_set_log_sink(hc_log_sink sink);
/** Starts libvips once for the process; later calls return the first result and ignore their argument.
 *  vector_paths = 1 leaves libvips' orc vector code on (benchmarks only: orc 0.4.33 is not thread-safe). */
int hc_init(int vector_paths);
/** Copies and clears libvips' error buffer; free the result with hc_free. */
char *hc_error_copy(void);
void hc_unref(VipsImage *image);
void hc_free(void *pointer);
/** The libvips version, such as "8.14.1". */
const char *hc_version_string(void);
/** 1 when libvips can save through the named operation (for example "heifsave_buffer"). */
int hc_has_operation(const char *name);

/** Caps glibc's malloc arenas (mallopt M_ARENA_MAX); 0 on success. */
int hc_malloc_set_arena_max(int count);
/** Fixes glibc's mmap threshold (mallopt M_MMAP_THRESHOLD), which also stops its growth; 0 on success. */
int hc_malloc_set_mmap_threshold(int bytes);
/** Fixes how much free memory at the top of a malloc heap is kept before free() hands it back (mallopt
 *  M_TRIM_THRESHOLD); 0 on success. */
int hc_malloc_set_trim_threshold(int bytes);
/** Returns free heap memory to the system (malloc_trim). */
void hc_malloc_trim(void);

/* MARK: - Loading */

/** Name of the libvips loader for the buffer, or NULL when none claims it. */
const char *hc_find_loader(const void *buffer, size_t length);
/* fail_on below is a VipsFailOn (0 none, 1 truncated, 2 error, 3 warning): how
 * much damage the loader tolerates before it fails. */

/** Opens a buffer lazily: only the header is read. The buffer must outlive the image. */
int hc_load_buffer(const void *buffer, size_t length, int all_frames, int fail_on, VipsImage **out);
/** Opens a buffer for one top-to-bottom read (access=sequential). With random
 *  access libvips decodes into a temporary image through its thread pool,
 *  which can lose a loader error; read this with hc_decode_to_memory instead. */
int hc_load_buffer_sequential(const void *buffer, size_t length, int all_frames, int fail_on,
                              VipsImage **out);
/** Shrink-on-load thumbnail of a buffer to fit width x height (never upsizes). */
int hc_thumbnail_buffer(const void *buffer, size_t length, int width, int height,
                        int all_frames, int fail_on, VipsImage **out);
/** Opens a JPEG buffer for one top-to-bottom read, decoded at 1/shrink of its
 *  size by the JPEG decoder itself (shrink is 1, 2, 4 or 8). */
int hc_load_jpeg_buffer_shrunk(const void *buffer, size_t length, int shrink, int fail_on,
                               VipsImage **out);
/** Thumbnail of an image already in memory, to fit width x height (never upsizes). */
int hc_thumbnail_image(VipsImage *in, int width, int height, VipsImage **out);
/* The shrinking PNG loader (halcyon_png.c); Swift chooses it or libvips' loader (ImageEngines). */
/** 1 when the shrinking loader takes the PNG in `buffer` by its header, with this shrink (1...1024): 8-bit greyscale or
 *  RGB, not interlaced, no transparency, background or unknown chunk before the image data; else 0.
 *  Only the chunks before the image data are read and their CRCs are not checked: damage is for the loader to find. */
int hc_png_load_shrunk_takes(const void *buffer, size_t length, int shrink);
/** Decodes a PNG hc_png_load_shrunk_takes took, box-shrunk by `shrink` while it inflates: 0 and a new image in memory,
 *  ceil(width / shrink) x ceil(height / shrink), with the metadata and resolution of `libvips_header` (libvips' header
 *  read of the same bytes, not changed); 1 for a PNG outside that set, damaged (a wrong CRC, a stream zlib would refuse)
 *  or of another size than `libvips_header`, with no error set: the caller decodes it with libvips' loader, which
 *  reports or tolerates the damage by its fail-on level; -1 with libvips' error set when the current
 *  RenderCancellation flag is raised ("cancelled") or libvips could not take the result. */
int hc_png_load_shrunk(const void *buffer, size_t length, int shrink, VipsImage *libvips_header, VipsImage **out);
/** How many PNGs hc_png_load_shrunk decoded on the calling thread (for tests). */
unsigned long hc_png_fast_count(void);
/* The scaling WebP loader (halcyon_webpload.c); Swift chooses it or libvips' loader (ImageEngines). */
/** 1 when the scaling loader takes the WebP in `buffer` by its header: a still image (lossy or lossless, with or
 *  without alpha) whose features libwebp reads; else 0. Damage past the header is for the loader to find. */
int hc_webp_load_scaled_takes(const void *buffer, size_t length);
/** Decodes a WebP hc_webp_load_scaled_takes took with libwebp on the calling thread, scaled by libwebp's rescaler to
 *  width x height (at most the stored size): 0 and a new 8-bit sRGB image in memory, 3 bands or 4 with alpha, with
 *  the metadata and resolution of `libvips_header` (libvips' header read of the same bytes, not changed); 1 for a
 *  WebP outside that set, one libwebp refuses or that ends early, or of another size than `libvips_header`, with no
 *  error set: the caller decodes it with libvips' loader, which reports the damage; -1 with libvips' error set when
 *  the current RenderCancellation flag is raised ("cancelled", looked at every 64 KiB of the stream) or libvips
 *  could not take the result. */
int hc_webp_load_scaled(const void *buffer, size_t length, int width, int height, VipsImage *libvips_header,
                        VipsImage **out);
/** How many WebPs hc_webp_load_scaled decoded on the calling thread (for tests). */
unsigned long hc_webp_load_count(void);
/** Renders `in` into a memory buffer through libvips' thread pool, stopping when the current RenderCancellation
 *  flag is raised; an image whose pixels are in a buffer already comes back itself, with one more reference. */
int hc_copy_memory(VipsImage *in, VipsImage **out);
/** Renders a freshly loaded pipeline into memory from the calling thread, so
 *  every loader error is reported (see the comment in halcyon_vips.c). */
int hc_decode_to_memory(VipsImage *in, VipsImage **out);
int hc_new_from_memory(const void *pixels, size_t length, int width, int height,
                       int bands, VipsImage **out);
/** Writes the pixels of an 8-bit image to a new buffer; free it with hc_free. */
void *hc_write_to_memory(VipsImage *in, size_t *length);

/* MARK: - Metadata */

int hc_width(const VipsImage *image);
int hc_height(const VipsImage *image);
int hc_bands(const VipsImage *image);
int hc_page_height(VipsImage *image);
int hc_n_pages(VipsImage *image);
int hc_is_uchar_srgb(const VipsImage *image);
/** The EXIF orientation, 1 to 8 (1 when absent or invalid). */
int hc_orientation(VipsImage *image);
/** The resolution in pixels per millimetre. */
double hc_xres(const VipsImage *image);
double hc_yres(const VipsImage *image);
/** libvips' name of the image's colour interpretation (srgb, b-w, cmyk, rgb16, …); never NULL. */
const char *hc_interpretation(VipsImage *image);
/** 1 when the image carries metadata field `name` (exif-data, xmp-data, icc-profile-data, …). */
int hc_has_field(VipsImage *image, const char *name);
/** Points *out at the image's string field `name` (owned by the image) and returns 0; -1 when it has none. */
int hc_string_field(VipsImage *image, const char *name, const char **out);
/** Copies up to capacity frame delays (ms) into delays; returns how many exist. */
int hc_delays(VipsImage *image, int *delays, int capacity);
/** Loop count of an animation (0 = forever), or 0 when absent. */
int hc_loop(VipsImage *image);
/** A copy of in carrying page-height, per-frame delays (ms) and loop count. */
int hc_with_animation(VipsImage *in, int page_height, const int *delays, int n,
                      int loop, VipsImage **out);

/* MARK: - Operations */

int hc_autorot(VipsImage *in, VipsImage **out);
int hc_to_srgb8(VipsImage *in, VipsImage **out);
/* Resizing has two engines; Swift chooses (ImageEngines), C never does. */
/** 1 when Halcyon's fixed-point Lanczos-3 reduce (halcyon_reduce.c) takes `in` with these factors: 8-bit, 1-4 bands,
 *  pixels already in memory, both factors in (1/4, 1] and one below 1; else 0. */
int hc_reduce_supports(VipsImage *in, double hscale, double vscale);
/** Halcyon's fixed-point reduce on the calling thread: the same size as vips_resize, pixels within 8-bit rounding of
 *  an exact Lanczos-3. Fails for what hc_reduce_supports refuses, and with "cancelled" when the current
 *  RenderCancellation flag is raised. */
int hc_reduce_memory(VipsImage *in, double hscale, double vscale, VipsImage **out);
/** vips_resize itself (Lanczos-3), whatever the image. */
int hc_vips_resize(VipsImage *in, double hscale, double vscale, VipsImage **out);
/** Loads libvips' module `name` (e.g. "vips-heif") from the vips-modules folder beside the loaded
 * libvips, for a process that started libvips without its modules. 0, or -1 with libvips' error set. */
int hc_load_module(const char *name);
/** How many times the fixed-point reduce ran on the calling thread (for tests). */
unsigned long hc_fast_reduce_count(void);
int hc_extract_area(VipsImage *in, int left, int top, int width, int height, VipsImage **out);
int hc_extract_bands(VipsImage *in, int first, int count, VipsImage **out);
int hc_embed(VipsImage *in, int x, int y, int width, int height,
             const double *background, int n, VipsImage **out);
int hc_gaussblur(VipsImage *in, double sigma, VipsImage **out);
/** Turned clockwise by quarter_turns × 90°. */
int hc_rot(VipsImage *in, int quarter_turns, VipsImage **out);
/** Mirrored left-right, or top-bottom when vertical is 1. */
int hc_flip(VipsImage *in, int vertical, VipsImage **out);
/** libvips' unsharp-mask sharpen with the given sigma. */
int hc_sharpen(VipsImage *in, double sigma, VipsImage **out);
/** Blocks of size × size pixels, each the average of its block; same size as in (edges copied). */
int hc_pixelate(VipsImage *in, int size, VipsImage **out);
/** out = in * a + b per band; uchar = 1 rounds and clips to 8 bit. */
int hc_linear(VipsImage *in, const double *a, const double *b, int n, int uchar,
              VipsImage **out);
int hc_bandjoin_const(VipsImage *in, double value, VipsImage **out);
int hc_bandjoin2(VipsImage *a, VipsImage *b, VipsImage **out);
int hc_flatten(VipsImage *in, const double *background, int n, VipsImage **out);
int hc_composite2(VipsImage *base, VipsImage *overlay, int mode, int x, int y,
                  VipsImage **out);
/** out = 3x3 colour matrix applied to the first three bands of an RGB(A) image. */
int hc_recomb3(VipsImage *in, const double *matrix, VipsImage **out);
int hc_cast_uchar(VipsImage *in, VipsImage **out);
int hc_multiply(VipsImage *a, VipsImage *b, VipsImage **out);
/** An image the size of like with every pixel set to the n constants. */
int hc_constant_like(VipsImage *like, const double *values, int n, VipsImage **out);
/** Joins images top to bottom (frames of an animation). */
int hc_join_vertical(VipsImage **images, int n, VipsImage **out);

/* MARK: - Trimming, metadata, watermark (halcyon_compose.c) */

/** The box of what differs from the background (n values; n = 0 takes the top-left pixel's
 *  colour) by more than threshold; width or height is 0 when everything is background. */
int hc_find_trim(VipsImage *in, double threshold, const double *background, int n, int *left,
                 int *top, int *width, int *height);
/** A copy of in without EXIF, XMP, IPTC and comments; keeps EXIF copyright and artist when
 *  keep_copyright, and the ICC profile when keep_icc. */
int hc_strip_metadata(VipsImage *in, int keep_copyright, int keep_icc, VipsImage **out);
/** overlay (8-bit RGBA) over base at (x, y), its alpha scaled by opacity (0...1); tile = 1 repeats
 *  it across all of base from the top-left. The result keeps base's bands. */
int hc_watermark(VipsImage *base, VipsImage *overlay, double opacity, int x, int y, int tile,
                 VipsImage **out);

/** The width x height part of in that libvips' attention model finds most interesting
 *  (edges, skin tones, saturated colour). */
int hc_smartcrop(VipsImage *in, int width, int height, VipsImage **out);

/* MARK: - Saving */

/* JPEG has two encoders too; Swift chooses. */
/** libvips' JPEG saver, whatever the image. */
int hc_jpegsave(VipsImage *in, int quality, int interlace, void **buffer, size_t *length);
/** 1 when hc_jpegsave_inline takes `in`: 8-bit, uncoded, 3-band sRGB or 1-band (written as grey), at most 65500 pixels a side; else
 *  0. Nothing is rendered. */
int hc_jpegsave_takes(VipsImage *in);
/** libjpeg's encoding on the calling thread (halcyon_jpegsave.c) of an image hc_jpegsave_takes took, quality 1-100,
 *  progressive when `progressive` is 1: the bytes libvips' saver writes for it, metadata included. 0 and a buffer for
 *  hc_free; -1 with libvips' error set for any other image or quality (before rendering it), when cancelled, when
 *  rendering failed or when libjpeg failed. */
int hc_jpegsave_inline(VipsImage *in, int quality, int progressive, void **buffer, size_t *length);
/** How many images hc_jpegsave_inline encoded on the calling thread (for tests). */
unsigned long hc_jpeg_save_count(void);
/* PNG has two encoders; Swift chooses (ImageEngines), C never does. */
/** libvips' PNG saver (libpng) at zlib level `compression` with the sub row filter, whatever the image. */
int hc_pngsave_libpng(VipsImage *in, int compression, int interlace, void **buffer, size_t *length);
/** 1 when hc_png_save_fast takes `in` at zlib level `level`: an 8-bit sRGB or grey image of 1-4 bands, at most 16 MiB of
 *  pixels, with no ICC profile, EXIF, XMP, IPTC or comments, and a level of 0-9; else 0. Nothing is rendered. */
int hc_pngsave_takes(VipsImage *in, int level);
/** libdeflate's PNG encoding (halcyon_pngsave.c), not interlaced, with the sub row filter, of an image
 *  hc_pngsave_takes took: 0 and a buffer for hc_free; -1 with libvips' error set for any other image or level (before
 *  rendering it), when cancelled, when rendering failed or when memory ran out. */
int hc_png_save_fast(VipsImage *in, int level, void **buffer, size_t *length);
/** How many images hc_png_save_fast encoded on the calling thread (for tests). */
unsigned long hc_png_save_count(void);
int hc_gifsave(VipsImage *in, void **buffer, size_t *length);
/* WebP has two encoders too; Swift chooses. */
/** libvips' WebP saver, whatever the image. */
int hc_webpsave(VipsImage *in, int quality, int lossless, void **buffer, size_t *length);
/** 1 when hc_webpsave_inline takes `in`: a still (one page), 8-bit, uncoded, sRGB image of 3 or 4 bands, at most
 *  16383 pixels a side; else 0. */
int hc_webpsave_takes(VipsImage *in);
/** libwebp's encoding on the calling thread (halcyon_webpsave.c) of an image hc_webpsave_takes took, quality 0-100:
 *  the bytes hc_webpsave writes for it, metadata included. 0 and a buffer for hc_free; -1 with libvips' error set for
 *  any other image or quality (before rendering it), when cancelled, when rendering failed or when libwebp failed. */
int hc_webpsave_inline(VipsImage *in, int quality, int lossless, void **buffer, size_t *length);
/** How many images hc_webpsave_inline encoded on the calling thread (for tests). */
unsigned long hc_webp_save_count(void);
/* AVIF has two encoders too; Swift chooses. */
/** libvips' HEIF saver as AVIF at effort 0, whatever the image. */
int hc_avifsave(VipsImage *in, int quality, int lossless, void **buffer, size_t *length);
/** 1 when hc_avifsave_inline takes `in`: a still (one page), 8-bit, uncoded, sRGB image of 3 or 4 bands; else 0. */
int hc_avifsave_takes(VipsImage *in);
/** libheif's AVIF encoding on the calling thread, libaom on one thread (halcyon_avifsave.c), of an image
 *  hc_avifsave_takes took, quality 1-100: the bytes hc_avifsave writes for it, metadata included. 0 and a buffer for
 *  hc_free; -1 with libvips' error set for any other image or quality (before rendering it), when cancelled, when
 *  rendering failed or when libheif failed (no AV1 encoder among them). */
int hc_avifsave_inline(VipsImage *in, int quality, int lossless, void **buffer, size_t *length);
/** How many images hc_avifsave_inline encoded on the calling thread (for tests). */
unsigned long hc_avif_save_count(void);
int hc_tiffsave(VipsImage *in, void **buffer, size_t *length);

#endif
