/* A PNG's chunks as the shrinking loader reads them (halcyon_png.c) and its inflater follows the image data
 * through them (halcyon_png_inflate.c). */
#ifndef HALCYON_PNG_CHUNKS_H
#define HALCYON_PNG_CHUNKS_H

#include <isa-l/crc.h>
#include <stddef.h>
#include <stdint.h>

#define HC_PNG_TYPE(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (uint32_t)(d))

/* The big-endian 32-bit number at p. */
static inline uint32_t hc_be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* The file, the offset of the next chunk in it, and whether chunks' CRCs are checked. */
typedef struct {
    const unsigned char *data;
    size_t length;
    size_t next;
    int check_crc;
} hc_png_reader;

/* One chunk: its type as a big-endian number, and its body inside the file. */
typedef struct {
    uint32_t type;
    uint32_t length;
    const unsigned char *body;
} hc_png_chunk;

/* The chunk at reader->next, moving past it; -1 when it runs past the buffer or (when checked) its CRC is wrong. */
static inline int hc_png_next_chunk(hc_png_reader *reader, hc_png_chunk *chunk) {
    if (reader->length - reader->next < 12) {
        return -1;
    }
    const unsigned char *p = reader->data + reader->next;
    uint32_t length = hc_be32(p);
    if (length > 0x7fffffffu || length > reader->length - reader->next - 12) {
        return -1;
    }
    if (reader->check_crc && crc32_gzip_refl(0, p + 4, (uint64_t)length + 4) != hc_be32(p + 8 + length)) {
        return -1;
    }
    chunk->type = hc_be32(p + 4);
    chunk->length = length;
    chunk->body = p + 8;
    reader->next += 12 + (size_t)length;
    return 0;
}

#endif
