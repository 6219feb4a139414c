/* The shrinking PNG loader's inflater of the zlib stream in a PNG's IDAT chunks, by zlib's rules (halcyon_png_inflate.c). */
#ifndef HALCYON_PNG_INFLATE_H
#define HALCYON_PNG_INFLATE_H

#include "halcyon_png_chunks.h"

#include <stddef.h>
#include <stdint.h>

typedef struct hc_inflater hc_inflater;

/** An inflater of the stream in a PNG's IDAT chunks: from the first one's body (`first`, its CRC checked by the
 *  caller) on through `chunks`, a reader at the chunk after it. The caller has checked the stream's 2-byte zlib
 *  header, whose window is `window` bytes. NULL when out of memory. */
hc_inflater *hc_inflate_new(const hc_png_reader *chunks, const unsigned char *first, size_t first_length, uint32_t window);

/** Fills `length` bytes at `out` with the stream's next bytes: 0, or -1 where zlib's inflate would refuse the
 *  stream, where it ends first, or where a chunk it reads is no IDAT or has a wrong CRC. */
int hc_inflate_read(hc_inflater *inflater, unsigned char *out, size_t length);

/** 0 when the stream ends after the bytes read, with its final block and a right Adler-32; -1 otherwise. */
int hc_inflate_finish(hc_inflater *inflater);

void hc_inflate_free(hc_inflater *inflater);

#endif
