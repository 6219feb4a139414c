/*
 * PNG helpers beside the shrinking loader (halcyon_png.c) and the encoder (halcyon_pngsave.c).
 */
#ifndef HALCYON_PNG_H
#define HALCYON_PNG_H

#include <vips/vips.h>

/** `in` without the text metadata libvips' PNG saver cannot write: the `png-comment-N-KEY` fields whose KEY is
 *  not a PNG keyword libpng takes as it is (1 to 79 bytes, each a printable Latin-1 character, no space at either
 *  end or two in a row), which fail the whole save. 0 and a new reference in *out (a copy when a field was
 *  dropped, else `in` itself); -1 with libvips' error set. */
int hc_png_writable_comments(VipsImage *in, VipsImage **out);

#endif
