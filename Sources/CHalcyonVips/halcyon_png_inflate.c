/*
 * The shrinking PNG loader's inflater (halcyon_png.c) of the zlib stream in a
 * PNG's IDAT chunks. libpng inflates with zlib, so a stream zlib calls damaged
 * must go to libvips: the inflater refuses, as it goes, what zlib refuses. That
 * is an over-subscribed Huffman code; an incomplete one (inftrees.c), except a
 * literal/length or distance code of a single 1-bit code or a distance code of
 * none, and an incomplete code-length code always (a faster inflater such as
 * ISA-L's takes those); a header's counts past 286 and 30; a repeat with no
 * length before it or past the lengths; a symbol that is none (literal/length
 * 286 and 287, distance 30 and 31). It is stricter where being so is cheap: a
 * distance back past the data so far or past the header's window (zlib takes
 * some of those within one output buffer), and a chunk the stream reads that
 * is no IDAT or has a wrong CRC, are refused too, which only sends the file to
 * libvips.
 *
 * Bytes are inflated into a buffer that keeps the 32 KiB before them for the
 * distances to reach into, and read out from there, the Adler-32 summed as
 * they are. A literal, or a length with its distance, whose codes fit in
 * HC_FAST_BITS bits takes one or two table lookups, up to three literals in a
 * row between looks at the bit count; other symbols are decoded bit by bit.
 * On twelve 2560x1600 photographs' PNG copies this took 395 ms of CPU with
 * one literal a lookup and copies 8 bytes at a time (ISA-L's inflate alone
 * 250, zlib's 515, a pass checking zlib's rules followed by ISA-L's inflate
 * 533); with three literals and 16-byte copies, 0.85 of the time before.
 */
#include "halcyon_png_inflate.h"
#include "halcyon_png_bits.h"

#include <isa-l/igzip_lib.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define HC_FAST_BITS 11
/* The history distances reach back into, the bytes inflated between reads out, and room past them for one
 * match (258 bytes) and a copy's overshoot. */
#define HC_WINDOW 32768u
#define HC_CHUNK (256u << 10)
#define HC_SLACK 320u

/* MARK: - Huffman codes */

static const uint16_t hc_length_base[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                            31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t hc_length_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t hc_distance_base[30] = {1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,   65,    97,    129,
                                              193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t hc_distance_extra[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

/* What an entry says of the symbol at the front of the buffer: a literal (its byte in the high 16 bits), or a
 * length (a distance follows) or, in a distance code, a distance (either's base in the high 16 bits); its code's
 * bits are in the low four, its extra bits' in the next four. 0 for the end of the block, a code longer than
 * the table's bits, a symbol that is none (286, 287, 30, 31) and bits that are no code: those take the
 * symbol-by-symbol way. */
enum { HC_ENTRY_LITERAL = 0x100, HC_ENTRY_PAIR = 0x200 };

/* A canonical code: a table of the first HC_FAST_BITS bits (symbol << 4 | length, 0 for a longer code or none)
 * and the same bits' entries, and the counts per length and symbols in code order for the longer ones. */
typedef struct {
    uint16_t fast[1 << HC_FAST_BITS];
    uint32_t entries[1 << HC_FAST_BITS];
    uint16_t count[16];
    uint16_t symbol[320];
} hc_huff;

enum { HC_CODE_LENGTHS, HC_LITERALS, HC_DISTANCES };

/* The entry of symbol `i` of `length` bits in a code of `kind`. */
static uint32_t hc_huff_entry(int kind, int i, int length) {
    if (kind == HC_LITERALS && i < 256) {
        return (uint32_t)i << 16 | HC_ENTRY_LITERAL | (uint32_t)length;
    }
    if (kind == HC_LITERALS && i > 256 && i < 286) {
        return (uint32_t)hc_length_base[i - 257] << 16 | HC_ENTRY_PAIR | (uint32_t)hc_length_extra[i - 257] << 4 | (uint32_t)length;
    }
    if (kind == HC_DISTANCES && i < 30) {
        return (uint32_t)hc_distance_base[i] << 16 | HC_ENTRY_PAIR | (uint32_t)hc_distance_extra[i] << 4 | (uint32_t)length;
    }
    return 0;
}

/* Builds the code of `n` lengths; -1 where zlib's inflate_table refuses it: over-subscribed, or incomplete
 * unless a literal/length or distance code of one 1-bit code, or a distance code of none. */
static int hc_huff_build(hc_huff *h, const uint8_t *lengths, int n, int kind) {
    uint16_t offsets[16];
    memset(h->count, 0, sizeof h->count);
    memset(h->fast, 0, sizeof h->fast);
    memset(h->entries, 0, sizeof h->entries);
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
        uint32_t entry = hc_huff_entry(kind, i, len);
        for (uint32_t fill = reversed; fill < (1u << HC_FAST_BITS); fill += 1u << len) {
            h->fast[fill] = (uint16_t)(i << 4 | len);
            h->entries[fill] = entry;
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

/* Reads a dynamic block's header into the two codes as zlib does; -1 where zlib refuses it. */
static int hc_inflate_dynamic_header(hc_bits *b, hc_huff *literals, hc_huff *distances) {
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
    if (hc_huff_build(literals, code_lengths, 19, HC_CODE_LENGTHS) != 0) {
        return -1;
    }
    for (int have = 0; have < nlen + ndist;) {
        if (hc_bits_overran(b)) {
            return -1;
        }
        hc_bits_fill(b);
        int symbol = hc_huff_decode(b, literals);
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
    if (lengths[256] == 0 || hc_huff_build(literals, lengths, nlen, HC_LITERALS) != 0 ||
        hc_huff_build(distances, lengths + nlen, ndist, HC_DISTANCES) != 0) {
        return -1;
    }
    return 0;
}

/* The fixed codes of RFC 1951, 3.2.6: literal/lengths 0-287, distances 0-31 (286, 287, 30 and 31 are no symbols). */
static void hc_inflate_fixed(hc_huff *literals, hc_huff *distances) {
    uint8_t lengths[288];
    memset(lengths, 8, 144);
    memset(lengths + 144, 9, 112);
    memset(lengths + 256, 7, 24);
    memset(lengths + 280, 8, 8);
    hc_huff_build(literals, lengths, 288, HC_LITERALS);
    memset(lengths, 5, 32);
    hc_huff_build(distances, lengths, 32, HC_DISTANCES);
}

/* MARK: - The inflater */

enum { HC_BLOCK_HEADER, HC_BLOCK_CODES, HC_BLOCK_STORED };

struct hc_inflater {
    hc_bits bits;
    hc_huff literals;
    hc_huff distances;
    uint32_t window;
    int block;
    int last;        /* the current block is the stream's last */
    int ended;       /* the last block has ended */
    uint32_t stored; /* the current stored block's bytes not yet copied */
    uint32_t adler;  /* of the bytes read out */
    uint64_t slid;   /* bytes moved off the buffer's front */
    size_t start;    /* the buffer's bytes [start, end) are inflated and not read out yet */
    size_t end;
    unsigned char buffer[];
};

/* Copies `length` bytes from `distance` back to `out`, overlapping as deflate means. A distance of 16 or more goes
 * 16 bytes at a time, one of 8 to 15 8 bytes at a time (each reading only bytes already written); they may write up
 * to 15 bytes past the copy (into HC_SLACK). */
static inline void hc_inflate_copy(unsigned char *out, uint32_t distance, uint32_t length) {
    const unsigned char *from = out - distance;
    if (distance >= 16) {
        const unsigned char *stop = out + length;
        do {
            unsigned char block[16];
            memcpy(block, from, 16);
            memcpy(out, block, 16);
            from += 16;
            out += 16;
        } while (out < stop);
    } else if (distance >= 8) {
        const unsigned char *stop = out + length;
        do {
            uint64_t word;
            memcpy(&word, from, 8);
            memcpy(out, &word, 8);
            from += 8;
            out += 8;
        } while (out < stop);
    } else if (distance == 1) {
        memset(out, *from, length);
    } else {
        for (uint32_t i = 0; i < length; i++) {
            out[i] = from[i];
        }
    }
}

/* Reads a block's header and its codes; -1 where zlib refuses it. */
static int hc_inflate_header(hc_inflater *d) {
    hc_bits *b = &d->bits;
    if (hc_bits_overran(b)) {
        return -1;
    }
    hc_bits_fill(b);
    d->last = (int)hc_bits_take(b, 1);
    int type = (int)hc_bits_take(b, 2);
    if (type == 0) {
        hc_bits_take(b, b->count & 7);
        hc_bits_fill(b);
        uint32_t length = hc_bits_take(b, 16), inverse = hc_bits_take(b, 16);
        if (length != (~inverse & 0xffffu)) {
            return -1;
        }
        d->stored = length;
        d->block = HC_BLOCK_STORED;
    } else if (type == 1) {
        hc_inflate_fixed(&d->literals, &d->distances);
        d->block = HC_BLOCK_CODES;
    } else if (type == 2 && hc_inflate_dynamic_header(b, &d->literals, &d->distances) == 0) {
        d->block = HC_BLOCK_CODES;
    } else {
        return -1;
    }
    return hc_bits_overran(b) ? -1 : 0;
}

/* The end of the current block. */
static void hc_inflate_block_ended(hc_inflater *d) {
    d->block = HC_BLOCK_HEADER;
    d->ended = d->last;
}

/* Copies a stored block's bytes up to `limit` in the buffer: whole bytes still in the bit buffer first, then
 * straight from the chunks (the bit buffer then empty); -1 when they run past the data. */
static int hc_inflate_stored(hc_inflater *d, size_t limit) {
    hc_bits *b = &d->bits;
    while (d->stored > 0 && d->end < limit && b->count >= 8) {
        d->buffer[d->end++] = (unsigned char)hc_bits_take(b, 8);
        d->stored--;
    }
    if (d->stored > 0 && d->end < limit) {
        b->bits = 0;
    }
    while (d->stored > 0 && d->end < limit) {
        if (b->avail == 0 && !hc_bits_next_chunk(b)) {
            return -1;
        }
        size_t step = b->avail < d->stored ? b->avail : d->stored;
        step = step < limit - d->end ? step : limit - d->end;
        memcpy(d->buffer + d->end, b->in, step);
        b->in += step;
        b->avail -= step;
        d->end += step;
        d->stored -= (uint32_t)step;
    }
    if (hc_bits_overran(b)) {
        return -1;
    }
    if (d->stored == 0) {
        hc_inflate_block_ended(d);
    }
    return 0;
}

/* Inflates the symbol at the front of the bit buffer (48 bits or more in it) bit by bit: 1 at the end of the
 * block, 0 to go on, -1 on a symbol zlib refuses or a distance too far back. */
static int hc_inflate_symbol(hc_inflater *d) {
    hc_bits *b = &d->bits;
    int symbol = hc_huff_decode(b, &d->literals);
    if (symbol < 256) {
        if (symbol < 0) {
            return -1;
        }
        d->buffer[d->end++] = (unsigned char)symbol;
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
    int code = hc_huff_decode(b, &d->distances);
    if (code < 0 || code >= 30) {
        return -1;
    }
    uint32_t distance = hc_distance_base[code] + hc_bits_take(b, hc_distance_extra[code]);
    if (distance > d->window || distance > d->slid + d->end) {
        return -1;
    }
    hc_inflate_copy(d->buffer + d->end, distance, length);
    d->end += length;
    return 0;
}

/* Tops up a decoding loop's bit buffer, held in its locals `bits` and `count`, to 56 bits or more: with one load
 * when 8 bytes are left in the chunk, else through hc_bits_fill; -1 once the reads ran past the stream. */
static inline int hc_bits_refill(hc_bits *b, uint64_t *bits, int *count) {
    if (hc_bits_load(b, bits, count)) {
        return 0;
    }
    b->bits = *bits;
    b->count = *count;
    if (hc_bits_overran(b)) {
        return -1;
    }
    hc_bits_fill(b);
    *bits = b->bits;
    *count = b->count;
    return 0;
}

/* The bits of a length's or distance's entry: its code's and its extra bits'. */
static inline uint32_t hc_entry_bits(uint32_t entry) { return (entry & 15) + (entry >> 4 & 15); }

/* A length's or distance's value: the base in its entry plus the extra bits that follow its code in `bits`. */
static inline uint32_t hc_entry_value(uint32_t entry, uint64_t bits) {
    return (entry >> 16) + (uint32_t)((bits >> (entry & 15)) & ((1u << (entry >> 4 & 15)) - 1));
}

/* Writes the literal of `entry` and up to two more that follow it in `bits` (holding 48 or more), as their codes are
 * in the table (11 bits or fewer each); the buffer's slack takes the two bytes past the limit. A literal's entry has
 * no extra bits: its low six bits are its code's length. Returns the buffer's new end. */
static inline size_t hc_inflate_literals(const uint32_t *literals, uint32_t entry, unsigned char *buffer, size_t end,
                                         uint64_t *bits, int *count) {
    int literal = 0;
    do {
        buffer[end++] = (unsigned char)(entry >> 16);
        *bits >>= entry & 63;
        *count -= (int)(entry & 63);
        entry = literals[*bits & ((1u << HC_FAST_BITS) - 1)];
    } while (++literal < 3 && (entry & HC_ENTRY_LITERAL));
    return end;
}

/* Inflates a Huffman-coded block's symbols until the buffer holds `limit` bytes or the block ends; -1 on a
 * refusal. The bits and the buffer's end are in locals; the struct's are set around hc_inflate_symbol. */
static int hc_inflate_codes(hc_inflater *d, size_t limit) {
    const uint32_t *literals = d->literals.entries, *distances = d->distances.entries;
    const uint64_t mask = (1u << HC_FAST_BITS) - 1;
    hc_bits *b = &d->bits;
    unsigned char *buffer = d->buffer;
    const uint64_t slid = d->slid;
    const uint32_t window = d->window;
    uint64_t bits = b->bits;
    int count = b->count;
    size_t end = d->end;
    while (end < limit) {
        /* A literal and a length with its distance take up to 11 and 40 bits here; hc_inflate_symbol 48. */
        if (count < 48 && hc_bits_refill(b, &bits, &count) != 0) {
            return -1;
        }
        uint32_t entry = literals[bits & mask];
        if (entry & HC_ENTRY_LITERAL) {
            end = hc_inflate_literals(literals, entry, buffer, end, &bits, &count);
            continue;
        }
        if (entry & HC_ENTRY_PAIR) {
            uint32_t taken = hc_entry_bits(entry), length = hc_entry_value(entry, bits);
            uint64_t rest = bits >> taken;
            uint32_t far = distances[rest & mask];
            if (far & HC_ENTRY_PAIR) {
                uint32_t distance = hc_entry_value(far, rest);
                if (distance > window || distance > slid + end) {
                    return -1;
                }
                taken += hc_entry_bits(far);
                bits >>= taken;
                count -= (int)taken;
                hc_inflate_copy(buffer + end, distance, length);
                end += length;
                continue;
            }
        }
        b->bits = bits;
        b->count = count;
        d->end = end;
        int result = hc_inflate_symbol(d);
        if (result != 0) {
            if (result > 0) {
                hc_inflate_block_ended(d);
            }
            return result > 0 ? 0 : -1;
        }
        bits = b->bits;
        count = b->count;
        end = d->end;
    }
    b->bits = bits;
    b->count = count;
    d->end = end;
    return 0;
}

/* Inflates into the emptied buffer, after moving its last 32 KiB to its front, until it holds HC_CHUNK more
 * bytes or the stream's last block ends; -1 on a refusal. */
static int hc_inflate_produce(hc_inflater *d) {
    if (d->end > HC_WINDOW) {
        memmove(d->buffer, d->buffer + d->end - HC_WINDOW, HC_WINDOW);
        d->slid += d->end - HC_WINDOW;
        d->start = d->end = HC_WINDOW;
    }
    const size_t limit = HC_WINDOW + HC_CHUNK;
    while (d->end < limit && !d->ended) {
        int result = d->block == HC_BLOCK_HEADER   ? hc_inflate_header(d)
                     : d->block == HC_BLOCK_STORED ? hc_inflate_stored(d, limit)
                                                   : hc_inflate_codes(d, limit);
        if (result != 0) {
            return -1;
        }
    }
    return 0;
}

/* MARK: - Reading */

hc_inflater *hc_inflate_new(const hc_png_reader *chunks, const unsigned char *first, size_t first_length, uint32_t window) {
    hc_inflater *d = malloc(sizeof(hc_inflater) + HC_WINDOW + HC_CHUNK + HC_SLACK);
    if (d == NULL) {
        return NULL;
    }
    memset(d, 0, sizeof(hc_inflater));
    d->bits = (hc_bits){*chunks, first, first_length, 0, 0, 0};
    d->window = window;
    d->adler = 1;
    d->block = HC_BLOCK_HEADER;
    hc_bits_fill(&d->bits);
    hc_bits_take(&d->bits, 16); /* the zlib header, checked by the caller */
    return d;
}

int hc_inflate_read(hc_inflater *d, unsigned char *out, size_t length) {
    while (length > 0) {
        if (d->start == d->end && (d->ended || hc_inflate_produce(d) != 0 || d->start == d->end)) {
            return -1;
        }
        size_t step = d->end - d->start < length ? d->end - d->start : length;
        memcpy(out, d->buffer + d->start, step);
        d->adler = isal_adler32(d->adler, d->buffer + d->start, step);
        d->start += step;
        out += step;
        length -= step;
    }
    return 0;
}

int hc_inflate_finish(hc_inflater *d) {
    hc_bits *b = &d->bits;
    while (d->start == d->end && !d->ended) {
        if (hc_inflate_produce(d) != 0) {
            return -1;
        }
    }
    if (d->start != d->end || hc_bits_overran(b)) {
        return -1;
    }
    hc_bits_take(b, b->count & 7);
    hc_bits_fill(b);
    uint32_t adler = 0;
    for (int i = 0; i < 4; i++) {
        adler = adler << 8 | hc_bits_take(b, 8);
    }
    return hc_bits_overran(b) || adler != d->adler ? -1 : 0;
}

void hc_inflate_free(hc_inflater *inflater) { free(inflater); }
