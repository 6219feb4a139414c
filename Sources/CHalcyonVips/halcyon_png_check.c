/*
 * A pass over a PNG's deflate stream that refuses what zlib's inflate refuses
 * and ISA-L's takes, for the shrinking PNG loader (halcyon_png.c): libpng
 * inflates with zlib, so a stream zlib calls damaged must go to libvips.
 *
 * ISA-L checks a Huffman code for over-subscription only; zlib (inftrees.c)
 * also refuses an incomplete one, except a literal/length or distance code of
 * a single 1-bit code (and a distance code of no codes at all), and an
 * incomplete code-length code always ("invalid distances set" and its kin).
 * This pass reads every block header as zlib does and walks each block's
 * symbols to find where the next one starts, writing nothing; it is stricter
 * than zlib where being so is cheap (a distance back past the data so far or
 * past the header's window is refused; zlib takes some of those within one
 * output buffer), which only sends such a file to libvips. The rest (stored
 * blocks' lengths, the Adler-32, the data's length) is left to ISA-L's pass.
 * Past the first 32 KiB, where every distance is within reach, a block is
 * walked by its codes' step tables: only the lengths of codes and extra bits
 * count. Cost on twelve 2560x1600 photographs' PNG copies: about 1.05 times
 * ISA-L's inflate of the same streams (270 ms of CPU against 260 ms); 1.4
 * times when every symbol was decoded in full. zlib's inflate, the other way
 * to agree with libpng, takes some 2.1 times ISA-L's.
 */
#include "halcyon_png_check.h"

#include <stdint.h>
#include <string.h>

#define HC_FAST_BITS 11

/* MARK: - Bits across IDAT chunks */

/* The stream's bits, least significant first, read from the IDAT chunks of the file in turn. */
typedef struct {
    const unsigned char *file;
    size_t length;
    size_t next;              /* the offset of the chunk after the current one */
    const unsigned char *in;  /* the current chunk's unread bytes */
    size_t avail;
    uint64_t bits;
    int count;                /* bits in the buffer, the padding included */
    int padded;               /* zero bits put in past the last IDAT; more than `count` once the reads ran past it */
} hc_bits;

/* Whether the reads went past the stream's last byte. */
static inline int hc_bits_overran(const hc_bits *b) { return b->count < b->padded; }

static uint32_t hc_check_be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Moves to the next chunk when it is an IDAT that fits the file; 0 when there is none. */
static int hc_bits_next_chunk(hc_bits *b) {
    if (b->length - b->next < 12) {
        return 0;
    }
    const unsigned char *p = b->file + b->next;
    uint32_t length = hc_check_be32(p);
    if (memcmp(p + 4, "IDAT", 4) != 0 || length > b->length - b->next - 12) {
        return 0;
    }
    b->in = p + 8;
    b->avail = length;
    b->next += 12 + (size_t)length;
    return 1;
}

/* Fills the buffer to at least 57 bits; past the last IDAT, with zero bytes counted in `padded`. With 8 bytes
 * left in the chunk, one load takes as many whole bytes as fit; the bits above `count` are then the next bytes
 * of the chunk, which the next fill puts in again at the same place. */
static void hc_bits_fill(hc_bits *b) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (b->count <= 56 && b->avail >= 8) {
        uint64_t word;
        memcpy(&word, b->in, 8);
        b->bits |= word << b->count;
        size_t bytes = (size_t)(63 - b->count) >> 3;
        b->in += bytes;
        b->avail -= bytes;
        b->count += (int)bytes * 8;
        return;
    }
#endif
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

/* MARK: - Huffman codes */

static const uint16_t hc_length_base[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                            31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t hc_length_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t hc_distance_base[30] = {1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,   65,    97,    129,
                                              193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t hc_distance_extra[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

/* What a step entry says of the symbol at the front of the buffer: a literal, or a length (a distance follows)
 * or, in a distance code, a distance; the bits of its code and extra bits are in the low six. 0 for the end of
 * the block, a code longer than the table's bits, a symbol that is none (286, 287, 30, 31) and bits that are no
 * code: those take the symbol-by-symbol way. */
enum { HC_STEP_LITERAL = 0x100, HC_STEP_PAIR = 0x200 };

/* A canonical code: a table of the first HC_FAST_BITS bits (symbol << 4 | length, 0 for a longer code or none)
 * and the same bits' steps, and the counts per length and symbols in code order for the longer ones. */
typedef struct {
    uint16_t fast[1 << HC_FAST_BITS];
    uint16_t steps[1 << HC_FAST_BITS];
    uint16_t count[16];
    uint16_t symbol[320];
} hc_huff;

enum { HC_CODE_LENGTHS, HC_LITERALS, HC_DISTANCES };

/* The step entry of symbol `i` of `length` bits in a code of `kind`. */
static uint16_t hc_huff_step(int kind, int i, int length) {
    if (kind == HC_LITERALS) {
        return i < 256                ? (uint16_t)(HC_STEP_LITERAL | length)
               : i > 256 && i < 286 ? (uint16_t)(HC_STEP_PAIR | (length + hc_length_extra[i - 257]))
                                    : 0;
    }
    return kind == HC_DISTANCES && i < 30 ? (uint16_t)(HC_STEP_PAIR | (length + hc_distance_extra[i])) : 0;
}

/* Builds the code of `n` lengths; -1 where zlib's inflate_table refuses it: over-subscribed, or incomplete
 * unless a literal/length or distance code of one 1-bit code, or a distance code of none. */
static int hc_huff_build(hc_huff *h, const uint8_t *lengths, int n, int kind) {
    uint16_t offsets[16];
    memset(h->count, 0, sizeof h->count);
    memset(h->fast, 0, sizeof h->fast);
    memset(h->steps, 0, sizeof h->steps);
    for (int i = 0; i < n; i++) {
        h->count[lengths[i]]++;
    }
    h->count[0] = 0;
    int max = 15;
    while (max > 0 && h->count[max] == 0) {
        max--;
    }
    if (max == 0) {
        return kind == HC_DISTANCES ? 0 : -1;
    }
    int left = 1;
    for (int len = 1; len <= 15; len++) {
        left = (left << 1) - h->count[len];
        if (left < 0) {
            return -1;
        }
    }
    if (left > 0 && (kind == HC_CODE_LENGTHS || max != 1)) {
        return -1;
    }
    offsets[1] = 0;
    for (int len = 1; len < 15; len++) {
        offsets[len + 1] = (uint16_t)(offsets[len] + h->count[len]);
    }
    for (int i = 0; i < n; i++) {
        if (lengths[i] != 0) {
            h->symbol[offsets[lengths[i]]++] = (uint16_t)i;
        }
    }
    /* Canonical codes in symbol order, bit-reversed into the fast table. */
    uint32_t code = 0, next[16];
    for (int len = 1; len <= 15; len++) {
        code = (code + (len > 1 ? h->count[len - 1] : 0)) << 1;
        next[len] = code;
    }
    for (int i = 0; i < n; i++) {
        int len = lengths[i];
        if (len == 0 || len > HC_FAST_BITS) {
            continue;
        }
        uint32_t c = next[len]++, reversed = 0;
        for (int bit = 0; bit < len; bit++) {
            reversed = reversed << 1 | (c >> bit & 1);
        }
        uint16_t step = hc_huff_step(kind, i, len);
        for (uint32_t fill = reversed; fill < (1u << HC_FAST_BITS); fill += 1u << len) {
            h->fast[fill] = (uint16_t)(i << 4 | len);
            h->steps[fill] = step;
        }
    }
    return 0;
}

/* The next symbol (the buffer holding at least 15 bits), or -1 for bits that are no code. */
static inline int hc_huff_decode(hc_bits *b, const hc_huff *h) {
    uint16_t entry = h->fast[b->bits & ((1u << HC_FAST_BITS) - 1)];
    if (entry != 0) {
        hc_bits_take(b, entry & 15);
        return entry >> 4;
    }
    int code = 0, first = 0, index = 0;
    for (int len = 1; len <= 15; len++) {
        code |= (int)((b->bits >> (len - 1)) & 1);
        int count = h->count[len];
        if (code - count < first) {
            hc_bits_take(b, len);
            return h->symbol[index + (code - first)];
        }
        index += count;
        first = (first + count) << 1;
        code <<= 1;
    }
    return -1;
}

/* MARK: - Blocks */

/* The two codes of a block and what the stream has produced so far. */
typedef struct {
    hc_huff literals;
    hc_huff distances;
    uint64_t produced;
    uint32_t window;
} hc_check;

/* Takes the symbol at the front of the buffer (48 bits or more in it), a length with its distance if it is one:
 * 1 at the end of the block, 0 to go on, -1 on a symbol zlib refuses or a distance too far back. */
static int hc_check_symbol(hc_bits *b, hc_check *c) {
    int symbol = hc_huff_decode(b, &c->literals);
    if (symbol < 256) {
        if (symbol < 0) {
            return -1;
        }
        c->produced++;
        return 0;
    }
    if (symbol == 256) {
        return 1;
    }
    symbol -= 257;
    if (symbol >= 29) {
        return -1;
    }
    uint32_t length = hc_length_base[symbol] + hc_bits_take(b, hc_length_extra[symbol]);
    int code = hc_huff_decode(b, &c->distances);
    if (code < 0 || code >= 30) {
        return -1;
    }
    uint32_t distance = hc_distance_base[code] + hc_bits_take(b, hc_distance_extra[code]);
    if (distance > c->window || distance > c->produced) {
        return -1;
    }
    c->produced += length;
    return 0;
}

/* Walks a block symbol by symbol, counting what it produces: for the stream's first window, where a distance
 * can reach back past its start, and for a window under 32 KiB. 0 at the end-of-block, -1 on a refusal. */
static int hc_check_codes_counting(hc_bits *b, hc_check *c) {
    for (;;) {
        if (b->count < 48) {
            if (hc_bits_overran(b)) {
                return -1;
            }
            hc_bits_fill(b);
        }
        int result = hc_check_symbol(b, c);
        if (result != 0) {
            return result > 0 ? 0 : -1;
        }
    }
}

/* Walks a block once 32 KiB or more came before it under a 32 KiB window, where every distance is within reach:
 * only the codes' and extra bits' lengths count, read from the codes' step tables with the bits in locals. A
 * code longer than the tables' bits, and every refusal, takes hc_check_symbol's way. */
static int hc_check_codes_reaching(hc_bits *b, hc_check *c) {
    const uint16_t *literals = c->literals.steps, *distances = c->distances.steps;
    const uint64_t mask = (1u << HC_FAST_BITS) - 1;
    uint64_t bits = b->bits;
    int count = b->count;
    for (;;) {
        /* A literal takes up to 11 bits here, a length and its distance up to 16 and 24. */
        if (count < 40) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            if (b->avail >= 8) {
                uint64_t word;
                memcpy(&word, b->in, 8);
                bits |= word << count;
                size_t bytes = (size_t)(63 - count) >> 3;
                b->in += bytes;
                b->avail -= bytes;
                count += (int)bytes * 8;
            } else
#endif
            {
                b->bits = bits;
                b->count = count;
                if (hc_bits_overran(b)) {
                    return -1;
                }
                hc_bits_fill(b);
                bits = b->bits;
                count = b->count;
            }
        }
        uint16_t step = literals[bits & mask];
        if (step & HC_STEP_LITERAL) {
            bits >>= step & 63;
            count -= step & 63;
            continue;
        }
        if (step & HC_STEP_PAIR) {
            uint16_t distance = distances[(bits >> (step & 63)) & mask];
            if (distance & HC_STEP_PAIR) {
                bits >>= (step & 63) + (distance & 63);
                count -= (step & 63) + (distance & 63);
                continue;
            }
        }
        b->bits = bits;
        b->count = count;
        if (count < 48) {
            if (hc_bits_overran(b)) {
                return -1;
            }
            hc_bits_fill(b);
        }
        int result = hc_check_symbol(b, c);
        if (result != 0) {
            return result > 0 ? 0 : -1;
        }
        bits = b->bits;
        count = b->count;
    }
}

/* Walks one Huffman-coded block to its end-of-block; -1 on a symbol zlib refuses or a distance too far back. */
static int hc_check_codes(hc_bits *b, hc_check *c) {
    return c->window >= 32768 && c->produced >= 32768 ? hc_check_codes_reaching(b, c) : hc_check_codes_counting(b, c);
}

/* Reads a dynamic block's header into the two codes as zlib does; -1 where zlib refuses it. */
static int hc_check_dynamic_header(hc_bits *b, hc_check *c) {
    static const uint8_t order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
    uint8_t lengths[286 + 30];
    uint8_t code_lengths[19] = {0};
    hc_bits_fill(b);
    int nlen = (int)hc_bits_take(b, 5) + 257, ndist = (int)hc_bits_take(b, 5) + 1, ncode = (int)hc_bits_take(b, 4) + 4;
    if (nlen > 286 || ndist > 30) {
        return -1;
    }
    for (int i = 0; i < ncode; i++) {
        if (b->count < 3) {
            hc_bits_fill(b);
        }
        code_lengths[order[i]] = (uint8_t)hc_bits_take(b, 3);
    }
    if (hc_huff_build(&c->literals, code_lengths, 19, HC_CODE_LENGTHS) != 0) {
        return -1;
    }
    for (int have = 0; have < nlen + ndist;) {
        if (hc_bits_overran(b)) {
            return -1;
        }
        hc_bits_fill(b);
        int symbol = hc_huff_decode(b, &c->literals);
        if (symbol < 0) {
            return -1;
        }
        if (symbol < 16) {
            lengths[have++] = (uint8_t)symbol;
            continue;
        }
        if (symbol == 16 && have == 0) {
            return -1;
        }
        uint8_t value = symbol == 16 ? lengths[have - 1] : 0;
        int repeat = symbol == 16 ? 3 + (int)hc_bits_take(b, 2) : symbol == 17 ? 3 + (int)hc_bits_take(b, 3) : 11 + (int)hc_bits_take(b, 7);
        if (have + repeat > nlen + ndist) {
            return -1;
        }
        while (repeat-- > 0) {
            lengths[have++] = value;
        }
    }
    if (lengths[256] == 0 || hc_huff_build(&c->literals, lengths, nlen, HC_LITERALS) != 0 ||
        hc_huff_build(&c->distances, lengths + nlen, ndist, HC_DISTANCES) != 0) {
        return -1;
    }
    return 0;
}

/* The fixed codes of RFC 1951, 3.2.6: literal/lengths 0-287, distances 0-31 (286, 287, 30 and 31 are no symbols). */
static void hc_check_fixed(hc_check *c) {
    uint8_t lengths[288];
    memset(lengths, 8, 144);
    memset(lengths + 144, 9, 112);
    memset(lengths + 256, 7, 24);
    memset(lengths + 280, 8, 8);
    hc_huff_build(&c->literals, lengths, 288, HC_LITERALS);
    memset(lengths, 5, 32);
    hc_huff_build(&c->distances, lengths, 32, HC_DISTANCES);
}

/* Skips a stored block's bytes; -1 when its lengths disagree or it runs past the data. */
static int hc_check_stored(hc_bits *b, hc_check *c) {
    hc_bits_take(b, b->count & 7);
    hc_bits_fill(b);
    uint32_t length = hc_bits_take(b, 16), inverse = hc_bits_take(b, 16);
    if (length != (~inverse & 0xffffu)) {
        return -1;
    }
    c->produced += length;
    /* Whole bytes still in the buffer first, then straight from the chunks (the buffer then empty). */
    while (length > 0 && b->count >= 8) {
        hc_bits_take(b, 8);
        length--;
    }
    if (length > 0) {
        b->bits = 0;
    }
    while (length > 0) {
        if (b->avail == 0 && !hc_bits_next_chunk(b)) {
            return -1;
        }
        size_t step = b->avail < length ? b->avail : length;
        b->in += step;
        b->avail -= step;
        length -= (uint32_t)step;
    }
    return hc_bits_overran(b) ? -1 : 0;
}

int hc_png_deflate_check(const unsigned char *file, size_t length, size_t idat, uint32_t window) {
    hc_check check;
    hc_bits b = {file, length, idat, NULL, 0, 0, 0, 0};
    if (!hc_bits_next_chunk(&b)) {
        return -1;
    }
    hc_bits_fill(&b);
    hc_bits_take(&b, 16); /* the zlib header, checked by the loader */
    check.produced = 0;
    check.window = window;
    for (int last = 0; !last;) {
        hc_bits_fill(&b);
        last = (int)hc_bits_take(&b, 1);
        int type = (int)hc_bits_take(&b, 2), result;
        if (type == 0) {
            result = hc_check_stored(&b, &check);
        } else if (type == 1) {
            hc_check_fixed(&check);
            result = hc_check_codes(&b, &check);
        } else if (type == 2) {
            result = hc_check_dynamic_header(&b, &check) == 0 ? hc_check_codes(&b, &check) : -1;
        } else {
            result = -1;
        }
        if (result != 0 || hc_bits_overran(&b)) {
            return -1;
        }
    }
    return 0;
}
