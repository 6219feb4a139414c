/* The bits of the zlib stream in a PNG's IDAT chunks, least significant first, as the shrinking PNG loader's inflater
 * reads them (halcyon_png_inflate.c, its only user). */
#ifndef HALCYON_PNG_BITS_H
#define HALCYON_PNG_BITS_H

#include "halcyon_png_chunks.h"

#include <stdint.h>
#include <string.h>

/* The stream's bits, least significant first, read from the IDAT chunks of the file in turn. */
typedef struct {
    hc_png_reader chunks;     /* at the chunk after the current one */
    const unsigned char *in;  /* the current chunk's unread bytes */
    size_t avail;
    uint64_t bits;
    int count;                /* bits in the buffer, the padding included */
    int padded;               /* zero bits put in past the last IDAT; more than `count` once the reads ran past it */
} hc_bits;

/* Whether the reads went past the stream's last byte. */
static inline int hc_bits_overran(const hc_bits *b) { return b->count < b->padded; }

/* Moves to the next chunk when it is an IDAT that fits the file with a right CRC; 0 when there is none, the
 * reader then left where it was. */
static inline int hc_bits_next_chunk(hc_bits *b) {
    hc_png_reader ahead = b->chunks;
    hc_png_chunk chunk;
    if (hc_png_next_chunk(&ahead, &chunk) != 0 || chunk.type != HC_PNG_TYPE('I', 'D', 'A', 'T')) {
        return 0;
    }
    b->chunks = ahead;
    b->in = chunk.body;
    b->avail = chunk.length;
    return 1;
}

/* With 8 bytes left in the chunk, takes as many whole bytes as fit into `bits` (holding `count`, 56 or fewer) in
 * one load, and 1; else 0. The bits above `count` are then the next bytes of the chunk, which the next load puts
 * in again at the same place. */
static inline int hc_bits_load(hc_bits *b, uint64_t *bits, int *count) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (b->avail >= 8) {
        uint64_t word;
        memcpy(&word, b->in, 8);
        *bits |= word << *count;
        size_t bytes = (size_t)(63 - *count) >> 3;
        b->in += bytes;
        b->avail -= bytes;
        *count += (int)bytes * 8;
        return 1;
    }
#endif
    return 0;
}

/* Fills the buffer to at least 56 bits; past the last IDAT, with zero bytes counted in `padded`. */
static inline void hc_bits_fill(hc_bits *b) {
    if (b->count <= 56 && hc_bits_load(b, &b->bits, &b->count)) {
        return;
    }
    while (b->count <= 56) {
        if (b->avail == 0) {
            /* The next chunk, which may be empty too; or a zero byte. */
            if (!hc_bits_next_chunk(b)) {
                b->padded += 8;
                b->count += 8;
            }
            continue;
        }
        b->bits |= (uint64_t)*b->in++ << b->count;
        b->avail--;
        b->count += 8;
    }
}

static inline uint32_t hc_bits_take(hc_bits *b, int n) {
    uint32_t value = (uint32_t)(b->bits & ((1ull << n) - 1));
    b->bits >>= n;
    b->count -= n;
    return value;
}

#endif
