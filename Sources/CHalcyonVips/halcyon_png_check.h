/* The shrinking PNG loader's check of a deflate stream against zlib's rules (halcyon_png_check.c). */
#ifndef HALCYON_PNG_CHECK_H
#define HALCYON_PNG_CHECK_H

#include <stddef.h>
#include <stdint.h>

/** Walks the zlib stream in the IDAT chunks of the PNG `file` from the chunk at offset `idat` (its 2-byte header
 *  already checked) with a window of `window` bytes: 0 when zlib's inflate would take every block header and
 *  symbol, -1 otherwise. */
int hc_png_deflate_check(const unsigned char *file, size_t length, size_t idat, uint32_t window);

#endif
