#include "halcyon_cancel.h"

#include <stdatomic.h>

struct hc_cancel {
    atomic_int triggered;
    atomic_int references;
};

static _Thread_local hc_cancel *hc_current = NULL;
static atomic_ulong hc_tiles = 0;

hc_cancel *hc_cancel_new(void) {
    hc_cancel *cancel = g_new0(hc_cancel, 1);
    /* Atomic stores, not atomic_init (a plain store): libvips hands the flag to
     * its workers through glib's thread pool, an ordering ThreadSanitizer does
     * not see, so a plain store here would be reported against their loads. */
    atomic_store(&cancel->triggered, 0);
    atomic_store(&cancel->references, 1);
    return cancel;
}

void hc_cancel_retain(hc_cancel *cancel) { atomic_fetch_add(&cancel->references, 1); }

void hc_cancel_release(hc_cancel *cancel) {
    if (cancel != NULL && atomic_fetch_sub(&cancel->references, 1) == 1) {
        g_free(cancel);
    }
}

void hc_cancel_trigger(hc_cancel *cancel) { atomic_store(&cancel->triggered, 1); }

int hc_cancel_is_triggered(const hc_cancel *cancel) {
    return cancel != NULL && atomic_load(&((hc_cancel *)cancel)->triggered) != 0;
}

hc_cancel *hc_cancel_set_current(hc_cancel *cancel) {
    hc_cancel *previous = hc_current;
    hc_current = cancel;
    return previous;
}

int hc_cancel_current_triggered(void) { return hc_cancel_is_triggered(hc_current); }

unsigned long hc_cancel_guarded_tiles(void) { return atomic_load(&hc_tiles); }

/* The pass-through's tile function: what vips_copy does, after a look at the flag. */
static int hc_cancel_gen(VipsRegion *out, void *seq, void *a, void *b, gboolean *stop) {
    VipsRegion *input = (VipsRegion *)seq;
    hc_cancel *cancel = (hc_cancel *)b;
    (void)a;
    (void)stop;
    if (hc_cancel_is_triggered(cancel)) {
        vips_error("halcyon", "%s", "cancelled");
        return -1;
    }
    atomic_fetch_add(&hc_tiles, 1);
    VipsRect *rect = &out->valid;
    if (vips_region_prepare(input, rect) != 0) {
        return -1;
    }
    return vips_region_region(out, input, rect, rect->left, rect->top);
}

static void hc_cancel_close(VipsImage *image, void *data) {
    (void)image;
    hc_cancel_release((hc_cancel *)data);
}

VipsImage *hc_cancel_guard(VipsImage *in) {
    hc_cancel *cancel = hc_current;
    if (cancel == NULL) {
        g_object_ref(in);
        return in;
    }
    VipsImage *out = vips_image_new();
    if (vips_image_pipelinev(out, VIPS_DEMAND_STYLE_THINSTRIP, in, NULL) != 0) {
        g_object_unref(out);
        vips_error_clear();
        g_object_ref(in);
        return in;
    }
    /* out keeps in and the flag until it closes. */
    g_object_ref(in);
    vips_object_local(out, in);
    hc_cancel_retain(cancel);
    g_signal_connect(out, "close", G_CALLBACK(hc_cancel_close), cancel);
    if (vips_image_generate(out, vips_start_one, hc_cancel_gen, vips_stop_one, in, cancel) != 0) {
        g_object_unref(out);
        vips_error_clear();
        g_object_ref(in);
        return in;
    }
    return out;
}
