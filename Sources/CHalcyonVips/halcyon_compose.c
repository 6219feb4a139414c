/* Trimming, metadata stripping and watermarking: the shims behind the imgproxy-style
 * `t`, `sm`/`kcr`/`scp` and `wm` options. Same conventions as halcyon_vips.c. */
#include "halcyon_vips.h"

#include <string.h>

int hc_find_trim(VipsImage *in, double threshold, const double *background, int n, int *left,
                 int *top, int *width, int *height) {
    double *corner = NULL;
    int corner_n = 0;
    if (n == 0) {
        /* No colour given: the top-left pixel's. */
        if (vips_getpoint(in, &corner, &corner_n, 0, 0, NULL) != 0) {
            return -1;
        }
        background = corner;
        n = corner_n;
    }
    /* find_trim flattens alpha away first: the background has the colour bands only. */
    if (vips_image_hasalpha(in) && n == in->Bands && n > 1) {
        n -= 1;
    }
    VipsArrayDouble *array = vips_array_double_new(background, n);
    int result = vips_find_trim(in, left, top, width, height, "threshold", threshold, "background",
                                array, NULL);
    vips_area_unref(VIPS_AREA(array));
    g_free(corner);
    return result;
}

/* MARK: - Metadata */

typedef struct {
    GPtrArray *names;
    int keep_copyright;
    int keep_icc;
} hc_strip_plan;

static int hc_is_copyright(const char *name) {
    return strcmp(name, "exif-ifd0-Copyright") == 0 || strcmp(name, "exif-ifd0-Artist") == 0;
}

/* The fields stripping removes. "jpeg-thumbnail-data" is the source's EXIF thumbnail: libvips' savers
 * write it back into the EXIF block they rebuild, kept copyright or not. */
static void *hc_collect_field(VipsImage *image, const char *name, GValue *value, void *a) {
    (void)image;
    (void)value;
    hc_strip_plan *plan = a;
    int removes = strcmp(name, "xmp-data") == 0 || strcmp(name, "iptc-data") == 0 ||
                  strncmp(name, "png-comment-", 12) == 0 || strcmp(name, "gif-comment") == 0 ||
                  strcmp(name, "exif-data") == 0 || strcmp(name, "jpeg-thumbnail-data") == 0 ||
                  (strncmp(name, "exif-", 5) == 0 && !(plan->keep_copyright && hc_is_copyright(name))) ||
                  (strcmp(name, "icc-profile-data") == 0 && !plan->keep_icc);
    if (removes) {
        g_ptr_array_add(plan->names, g_strdup(name));
    }
    return NULL;
}

int hc_strip_metadata(VipsImage *in, int keep_copyright, int keep_icc, VipsImage **out) {
    if (vips_copy(in, out, NULL) != 0) {
        return -1;
    }
    hc_strip_plan plan = {g_ptr_array_new_with_free_func(g_free), keep_copyright, keep_icc};
    vips_image_map(*out, hc_collect_field, &plan);
    for (guint i = 0; i < plan.names->len; i++) {
        vips_image_remove(*out, g_ptr_array_index(plan.names, i));
    }
    g_ptr_array_free(plan.names, TRUE);
    return 0;
}

/* MARK: - Watermark */

/* overlay's alpha scaled by opacity, as 8-bit RGBA. */
static int hc_faded(VipsImage *overlay, double opacity, VipsImage **out) {
    if (opacity >= 1) {
        g_object_ref(overlay);
        *out = overlay;
        return 0;
    }
    double a[4] = {1, 1, 1, opacity};
    double b[4] = {0, 0, 0, 0};
    return vips_linear(overlay, out, a, b, 4, "uchar", TRUE, NULL);
}

/* overlay repeated to cover width x height. */
static int hc_tiled(VipsImage *overlay, int width, int height, VipsImage **out) {
    VipsImage *repeated = NULL;
    int across = width / overlay->Xsize + 1, down = height / overlay->Ysize + 1;
    if (vips_replicate(overlay, &repeated, across, down, NULL) != 0) {
        return -1;
    }
    int result = vips_extract_area(repeated, out, 0, 0, width, height, NULL);
    g_object_unref(repeated);
    return result;
}

int hc_watermark(VipsImage *base, VipsImage *overlay, double opacity, int x, int y, int tile,
                 VipsImage **out) {
    VipsImage *faded = NULL, *placed = NULL, *mixed = NULL;
    if (overlay->Bands != 4 || hc_faded(overlay, opacity, &faded) != 0) {
        if (overlay->Bands != 4) {
            vips_error("hc_watermark", "the watermark must be RGBA");
        }
        return -1;
    }
    int result = tile ? hc_tiled(faded, base->Xsize, base->Ysize, &placed) : 0;
    if (!tile) {
        placed = faded;
        g_object_ref(placed);
    }
    g_object_unref(faded);
    if (result != 0) {
        return -1;
    }
    result = vips_composite2(base, placed, &mixed, VIPS_BLEND_MODE_OVER, "x", tile ? 0 : x, "y",
                             tile ? 0 : y, NULL);
    g_object_unref(placed);
    if (result != 0) {
        return -1;
    }
    /* Back to the base's bands (composite always adds alpha) and 8 bits. */
    VipsImage *bands = NULL;
    if (base->Bands < mixed->Bands) {
        result = vips_extract_band(mixed, &bands, 0, "n", base->Bands, NULL);
        g_object_unref(mixed);
        if (result != 0) {
            return -1;
        }
    } else {
        bands = mixed;
    }
    result = vips_cast(bands, out, VIPS_FORMAT_UCHAR, NULL);
    g_object_unref(bands);
    return result;
}

/* MARK: - Smart crop */

int hc_smartcrop(VipsImage *in, int width, int height, VipsImage **out) {
    return vips_smartcrop(in, out, width, height, "interesting", VIPS_INTERESTING_ATTENTION, NULL);
}
