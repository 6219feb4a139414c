/*
 * Cancellation of libvips renders.
 *
 * A cancellation is a small reference-counted flag. Installed as the calling
 * thread's current cancellation (hc_cancel_set_current), it guards every
 * render the shim starts on that thread: the image handed to a sink (copy to
 * memory, write to memory, save to a buffer) is wrapped in a pass-through
 * whose tile function fails once the flag is set, so every libvips worker
 * stops at its next tile and the sink returns -1. Decoding to memory checks
 * the flag between strips. hc_cancel_trigger may be called from any thread.
 */
#ifndef HALCYON_CANCEL_H
#define HALCYON_CANCEL_H

#include <vips/vips.h>

typedef struct hc_cancel hc_cancel;

/** A new, untriggered cancellation with one reference. */
hc_cancel *hc_cancel_new(void);
void hc_cancel_retain(hc_cancel *cancel);
void hc_cancel_release(hc_cancel *cancel);
/** Sets the flag; renders guarded by it fail at their next tile or strip. Any thread. */
void hc_cancel_trigger(hc_cancel *cancel);
int hc_cancel_is_triggered(const hc_cancel *cancel);
/** Makes cancel (may be NULL) the calling thread's current one; returns the previous one. */
hc_cancel *hc_cancel_set_current(hc_cancel *cancel);
/** 1 when the calling thread's current cancellation is triggered. */
int hc_cancel_current_triggered(void);
/** A new reference to in, or to a pass-through of in that fails once the
 *  current cancellation is triggered (when the thread has one). Never NULL. */
VipsImage *hc_cancel_guard(VipsImage *in);
/** Counts guarded tiles computed since start (a test hook: work that stopped stops counting). */
unsigned long hc_cancel_guarded_tiles(void);

#endif
