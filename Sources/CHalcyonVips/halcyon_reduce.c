/*
 * A Lanczos-3 reduce for 8-bit images held in memory, reduced by factors down
 * to 1/4 (Swift picks it over vips_resize where hc_reduce_supports says so):
 * the same output size as vips_resize, pixels within 8-bit rounding of an
 * exact Lanczos-3 (where rounding makes the size ratio 4 or more,
 * vips_resize's reduce halves first and this one widens its kernel instead),
 * at a fraction of the cost of libvips 8.14's scalar reducev and reduceh
 * loops. Fixed point (14-bit weights), one output row at a time: the vertical
 * pass sums its input rows along the row (this loop vectorizes; on x86-64 an
 * AVX2 build of it is taken when the CPU has AVX2) into one line of scratch,
 * and the horizontal pass, built for the band count, reduces that line into
 * the output. Each band is reduced on its own, as vips_resize does. Beyond the
 * output image it holds one input row of scratch and the weights. The work
 * runs on the calling thread and looks at the current RenderCancellation flag
 * every 16 output rows.
 */
#include "halcyon_vips.h"
#include "halcyon_cancel.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HC_REDUCE_BITS 14
#define HC_REDUCE_ONE (1 << HC_REDUCE_BITS)

/* Per thread, so a test can tell which path its own call took while others run beside it. */
static _Thread_local unsigned long hc_reduce_runs;

unsigned long hc_fast_reduce_count(void) { return hc_reduce_runs; }

/* The weights of one axis: for each output sample, a window of `taps`
 * consecutive input samples starting at `start`, and their weights. Taps that
 * fall outside the input are folded onto the edge sample (libvips' copy
 * extension), so every window lies inside the input. */
typedef struct {
    int taps;
    int *start;
    int16_t *weight;
} hc_axis;

static double hc_lanczos3(double x) {
    if (x == 0.0) {
        return 1.0;
    }
    if (x <= -3.0 || x >= 3.0) {
        return 0.0;
    }
    const double px = M_PI * x;
    return 3.0 * sin(px) * sin(px / 3.0) / (px * px);
}

static void hc_axis_free(hc_axis *axis) {
    free(axis->start);
    free(axis->weight);
    axis->start = NULL;
    axis->weight = NULL;
}

/* Quantizes one output's weights to 14 bits; the rounding error goes to the
 * largest weight, so a flat image stays flat. */
static void hc_axis_quantize(const double *raw, int taps, double sum, int16_t *weight) {
    int total = 0, largest = 0;
    for (int t = 0; t < taps; t++) {
        weight[t] = (int16_t)lrint(raw[t] / sum * HC_REDUCE_ONE);
        total += weight[t];
        if (weight[t] > weight[largest]) {
            largest = t;
        }
    }
    weight[largest] += (int16_t)(HC_REDUCE_ONE - total);
}

/* Weights for reducing `in` samples to `out`, `shrink` (in / out, >= 1) input samples per output sample. */
static int hc_axis_make(hc_axis *axis, int in, int out, double shrink) {
    const double support = 3.0 * shrink;
    /* The kernel's span; an input shorter than that folds onto `in` taps. */
    const int span = (int)ceil(2.0 * support) + 1;
    axis->taps = VIPS_MIN(span, in);
    axis->start = malloc(sizeof(int) * (size_t)out);
    axis->weight = malloc(sizeof(int16_t) * (size_t)out * (size_t)axis->taps);
    double *raw = malloc(sizeof(double) * (size_t)axis->taps);
    if (axis->start == NULL || axis->weight == NULL || raw == NULL) {
        free(raw);
        hc_axis_free(axis);
        return -1;
    }
    for (int o = 0; o < out; o++) {
        const double centre = ((double)o + 0.5) * shrink;
        const int first = (int)floor(centre - support + 0.5);
        const int start = VIPS_CLIP(0, first, in - axis->taps);
        double sum = 0.0;
        memset(raw, 0, sizeof(double) * (size_t)axis->taps);
        for (int t = 0; t < span; t++) {
            const double w = hc_lanczos3(((double)(first + t) + 0.5 - centre) / shrink);
            raw[VIPS_CLIP(0, first + t, in - 1) - start] += w;
            sum += w;
        }
        axis->start[o] = start;
        hc_axis_quantize(raw, axis->taps, sum, axis->weight + (size_t)o * (size_t)axis->taps);
    }
    free(raw);
    return 0;
}

static inline uint8_t hc_clamp8(int32_t acc) {
    const int32_t v = (acc + (HC_REDUCE_ONE >> 1)) >> HC_REDUCE_BITS;
    return (uint8_t)(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// MARK: the two passes, one output row at a time

/* One row reduced vertically: the weighted sum of `taps` input rows, along the row (this loop vectorizes). */
static inline __attribute__((always_inline)) void hc_vertical_row(const uint8_t *src, size_t stride, int samples,
                                                                  const hc_axis *axis, int y, int32_t *acc,
                                                                  uint8_t *line) {
    memset(acc, 0, sizeof(int32_t) * (size_t)samples);
    const int16_t *weight = axis->weight + (size_t)y * (size_t)axis->taps;
    for (int t = 0; t < axis->taps; t++) {
        const int32_t w = weight[t];
        const uint8_t *row = src + (size_t)(axis->start[y] + t) * stride;
        for (int x = 0; x < samples; x++) {
            acc[x] += w * row[x];
        }
    }
    for (int x = 0; x < samples; x++) {
        line[x] = hc_clamp8(acc[x]);
    }
}

/* One row of `BANDS`-band pixels reduced horizontally; the band count is a constant, so the tap loop has no branches. */
#define HC_HORIZONTAL_ROW(BANDS)                                                                                \
    static inline __attribute__((always_inline)) void hc_horizontal_row_##BANDS(const uint8_t *row, int out_w,  \
                                                                                const hc_axis *axis,            \
                                                                                uint8_t *line) {                \
        for (int x = 0; x < out_w; x++) {                                                                       \
            const uint8_t *p = row + (size_t)axis->start[x] * BANDS;                                            \
            const int16_t *weight = axis->weight + (size_t)x * (size_t)axis->taps;                              \
            int32_t acc[BANDS] = {0};                                                                           \
            for (int t = 0; t < axis->taps; t++) {                                                              \
                for (int b = 0; b < BANDS; b++) {                                                               \
                    acc[b] += weight[t] * p[t * BANDS + b];                                                     \
                }                                                                                               \
            }                                                                                                   \
            for (int b = 0; b < BANDS; b++) {                                                                   \
                line[x * BANDS + b] = hc_clamp8(acc[b]);                                                        \
            }                                                                                                   \
        }                                                                                                       \
    }
HC_HORIZONTAL_ROW(1)
HC_HORIZONTAL_ROW(2)
HC_HORIZONTAL_ROW(3)
HC_HORIZONTAL_ROW(4)

/* One reduce: the input, both axes (NULL where that axis keeps its size) and the output. */
typedef struct {
    const uint8_t *src;
    size_t src_stride;
    int in_w, bands, out_w;
    const hc_axis *vertical, *horizontal;
    uint8_t *dst;
    size_t dst_stride;
    int32_t *acc;  /* in_w * bands sums */
    uint8_t *line; /* in_w * bands samples: one row after the vertical pass */
} hc_reduce_job;

/* Output rows y0..<y1: each input window reduced vertically into `line`, then horizontally into the output. */
static inline __attribute__((always_inline)) void hc_reduce_rows_body(const hc_reduce_job *job, int y0, int y1) {
    const int samples = job->in_w * job->bands;
    for (int y = y0; y < y1; y++) {
        const uint8_t *row = job->src + (size_t)y * job->src_stride;
        uint8_t *out = job->dst + (size_t)y * job->dst_stride;
        if (job->vertical != NULL) {
            row = job->horizontal != NULL ? job->line : out;
            hc_vertical_row(job->src, job->src_stride, samples, job->vertical, y, job->acc, (uint8_t *)row);
        }
        if (job->horizontal == NULL) {
            if (row != out) {
                memcpy(out, row, (size_t)samples);
            }
            continue;
        }
        switch (job->bands) {
        case 1: hc_horizontal_row_1(row, job->out_w, job->horizontal, out); break;
        case 2: hc_horizontal_row_2(row, job->out_w, job->horizontal, out); break;
        case 3: hc_horizontal_row_3(row, job->out_w, job->horizontal, out); break;
        default: hc_horizontal_row_4(row, job->out_w, job->horizontal, out); break;
        }
    }
}

static void hc_reduce_rows(const hc_reduce_job *job, int y0, int y1) { hc_reduce_rows_body(job, y0, y1); }

#if defined(__x86_64__)
/* The same rows built for AVX2, taken when the CPU has it. */
__attribute__((target("avx2"))) static void hc_reduce_rows_avx2(const hc_reduce_job *job, int y0, int y1) {
    hc_reduce_rows_body(job, y0, y1);
}
#endif

/* Runs the job over `out_h` rows, 16 at a time, looking at the current RenderCancellation between blocks. */
static int hc_reduce_run(const hc_reduce_job *job, int out_h) {
#if defined(__x86_64__)
    const int avx2 = __builtin_cpu_supports("avx2");
#endif
    for (int y = 0; y < out_h; y += 16) {
        if (hc_cancel_current_triggered()) {
            return -1;
        }
        const int end = VIPS_MIN(y + 16, out_h);
#if defined(__x86_64__)
        if (avx2) {
            hc_reduce_rows_avx2(job, y, end);
            continue;
        }
#endif
        hc_reduce_rows(job, y, end);
    }
    return 0;
}

/* Whether the fixed-point reduce takes `in`: 8-bit, 1-4 bands, pixels already in memory, factors in (1/4, 1], one
 * below 1. Swift asks this before choosing the engine (ImageEngines). */
int hc_reduce_supports(VipsImage *in, double hscale, double vscale) {
    return in->BandFmt == VIPS_FORMAT_UCHAR && in->Coding == VIPS_CODING_NONE && in->Bands >= 1 && in->Bands <= 4 &&
           (in->dtype == VIPS_IMAGE_SETBUF || in->dtype == VIPS_IMAGE_SETBUF_FOREIGN) && in->data != NULL &&
           hscale > 0.25 && hscale <= 1.0 && vscale > 0.25 && vscale <= 1.0 && (hscale < 1.0 || vscale < 1.0);
}

/* The reduce of an image hc_reduce_supports took. */
static int hc_reduce_supported(VipsImage *in, double hscale, double vscale, VipsImage **out) {
    /* vips_resize's output size: the input divided by the shrink, rounded. */
    const double hshrink = 1.0 / hscale, vshrink = 1.0 / vscale;
    const int out_w = hscale < 1.0 ? VIPS_MAX(1, (int)((double)in->Xsize / hshrink + 0.5)) : in->Xsize;
    const int out_h = vscale < 1.0 ? VIPS_MAX(1, (int)((double)in->Ysize / vshrink + 0.5)) : in->Ysize;
    const int bands = in->Bands;
    /* Taps are placed by the sizes, so the first and last output pixels sit on the image's edges. */
    const double hstep = (double)in->Xsize / out_w, vstep = (double)in->Ysize / out_h;
    VipsImage *image = vips_image_new_memory();
    if (vips_image_pipelinev(image, VIPS_DEMAND_STYLE_THINSTRIP, in, NULL) != 0) {
        g_object_unref(image);
        return -1;
    }
    image->Xsize = out_w;
    image->Ysize = out_h;
    if (vips_image_write_prepare(image) != 0) {
        g_object_unref(image);
        return -1;
    }
    const int samples = in->Xsize * bands;
    hc_axis vertical = {0}, horizontal = {0};
    hc_reduce_job job = {
        .src = (const uint8_t *)in->data, .src_stride = (size_t)VIPS_IMAGE_SIZEOF_LINE(in),
        .in_w = in->Xsize, .bands = bands, .out_w = out_w,
        .vertical = vscale < 1.0 ? &vertical : NULL, .horizontal = hscale < 1.0 ? &horizontal : NULL,
        .dst = (uint8_t *)image->data, .dst_stride = (size_t)VIPS_IMAGE_SIZEOF_LINE(image),
        .acc = malloc(sizeof(int32_t) * (size_t)samples), .line = malloc((size_t)samples),
    };
    int status = job.acc == NULL || job.line == NULL ? -1 : 0;
    if (status == 0 && job.vertical != NULL) {
        status = hc_axis_make(&vertical, in->Ysize, out_h, vstep);
    }
    if (status == 0 && job.horizontal != NULL) {
        status = hc_axis_make(&horizontal, in->Xsize, out_w, hstep);
    }
    if (status == 0) {
        status = hc_reduce_run(&job, out_h);
    }
    hc_axis_free(&vertical);
    hc_axis_free(&horizontal);
    free(job.acc);
    free(job.line);
    if (status != 0) {
        vips_error("halcyon", "%s", hc_cancel_current_triggered() ? "cancelled" : "out of memory in reduce");
        g_object_unref(image);
        return -1;
    }
    hc_reduce_runs += 1;
    *out = image;
    return 0;
}

int hc_reduce_memory(VipsImage *in, double hscale, double vscale, VipsImage **out) {
    if (!hc_reduce_supports(in, hscale, vscale)) {
        vips_error("halcyon", "%s", "the fixed-point reduce takes 8-bit images in memory reduced by (1/4, 1]");
        return -1;
    }
    return hc_reduce_supported(in, hscale, vscale, out);
}

int hc_vips_resize(VipsImage *in, double hscale, double vscale, VipsImage **out) {
    return vips_resize(in, out, hscale, "vscale", vscale, NULL);
}
