/* spooky.c — SpookyHash V2 (Bob Jenkins, 2012; the 128-bit hash Alembic
 * uses for its object and property hashes, ../shared/reference/
 * alembic-ogawa-layout.md section 4; issue #19). Written for the core from
 * the algorithm's description: a 12-word state mixed per 96-byte block,
 * messages under 192 bytes through the 4-word short path; words are read
 * little-endian, as the reference reads them on the little-endian hosts
 * Alembic files come from. Debian packages no SpookyHash library.
 * tests/c/test_abc.c checks it against values of the reference
 * implementation (Alembic 1.8.12's Util/SpookyV2). */
#include "io/spooky.h"

#include <string.h>

/* The constant of the state's unseeded words. */
#define SPOOKY_CONST 0xdeadbeefdeadbeefULL

static inline uint64_t rot(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static inline uint64_t load64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

static inline uint32_t load32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* One 96-byte block into the 12-word state. */
static void mix(const uint8_t *block, uint64_t h[SSK_SPOOKY_WORDS])
{
    static const int r[SSK_SPOOKY_WORDS] = {11, 32, 43, 31, 17, 28, 39, 57, 55, 54, 22, 46};
    for (int i = 0; i < SSK_SPOOKY_WORDS; ++i) {
        h[i] += load64(block + 8 * i);
        h[(i + 2) % SSK_SPOOKY_WORDS] ^= h[(i + 10) % SSK_SPOOKY_WORDS];
        h[(i + 11) % SSK_SPOOKY_WORDS] ^= h[i];
        h[i] = rot(h[i], r[i]);
        h[(i + 11) % SSK_SPOOKY_WORDS] += h[(i + 1) % SSK_SPOOKY_WORDS];
    }
}

static void end_partial(uint64_t h[SSK_SPOOKY_WORDS])
{
    static const int r[SSK_SPOOKY_WORDS] = {44, 15, 34, 21, 38, 33, 10, 13, 38, 53, 42, 54};
    for (int i = 0; i < SSK_SPOOKY_WORDS; ++i) {
        const int a = (i + 11) % SSK_SPOOKY_WORDS, b = (i + 1) % SSK_SPOOKY_WORDS,
                  c = (i + 2) % SSK_SPOOKY_WORDS;
        h[a] += h[b];
        h[c] ^= h[a];
        h[b] = rot(h[b], r[i]);
    }
}

/* The last (zero-padded, length-tagged) block and three end rounds. */
static void end_block(const uint8_t *block, uint64_t h[SSK_SPOOKY_WORDS])
{
    for (int i = 0; i < SSK_SPOOKY_WORDS; ++i) h[i] += load64(block + 8 * i);
    end_partial(h);
    end_partial(h);
    end_partial(h);
}

static void short_mix(uint64_t *h0, uint64_t *h1, uint64_t *h2, uint64_t *h3)
{
    uint64_t *w[4] = {h0, h1, h2, h3};
    static const int r[12] = {50, 52, 30, 41, 54, 48, 38, 37, 62, 34, 5, 36};
    for (int i = 0; i < 12; ++i) {
        /* rotate word (i + 2) % 4, add the next, fold into the one after */
        uint64_t *x = w[(i + 2) % 4], *y = w[(i + 3) % 4], *z = w[i % 4];
        *x = rot(*x, r[i]);
        *x += *y;
        *z ^= *x;
    }
}

void ssk_spooky_short_end(uint64_t *h0, uint64_t *h1, uint64_t *h2, uint64_t *h3)
{
    uint64_t *w[4] = {h0, h1, h2, h3};
    static const int r[11] = {15, 52, 26, 51, 28, 9, 47, 54, 32, 25, 63};
    for (int i = 0; i < 11; ++i) {
        /* word (i + 3) % 4 takes (i + 2) % 4, rotated, then adds it */
        uint64_t *x = w[(i + 3) % 4], *y = w[(i + 2) % 4];
        *x ^= *y;
        *y = rot(*y, r[i]);
        *x += *y;
    }
}

/* Messages shorter than two blocks. */
static void short_hash(const uint8_t *p, size_t length, uint64_t *hash1, uint64_t *hash2)
{
    uint64_t a = *hash1, b = *hash2, c = SPOOKY_CONST, d = SPOOKY_CONST;
    size_t remainder = length % 32;
    if (length > 15) {
        for (const uint8_t *end = p + (length / 32) * 32; p < end; p += 32) {
            c += load64(p);
            d += load64(p + 8);
            short_mix(&a, &b, &c, &d);
            a += load64(p + 16);
            b += load64(p + 24);
        }
        if (remainder >= 16) {
            c += load64(p);
            d += load64(p + 8);
            short_mix(&a, &b, &c, &d);
            p += 16;
            remainder -= 16;
        }
    }
    d += (uint64_t)length << 56;
    /* the last 0..15 bytes: up to 8 into c, the rest into d */
    if (remainder == 0) {
        c += SPOOKY_CONST;
        d += SPOOKY_CONST;
    } else if (remainder >= 12) {
        for (size_t i = 12; i < remainder; ++i) d += (uint64_t)p[i] << (8 * (i - 8));
        d += load32(p + 8);
        c += load64(p);
    } else if (remainder >= 8) {
        for (size_t i = 8; i < remainder; ++i) d += (uint64_t)p[i] << (8 * (i - 8));
        c += load64(p);
    } else if (remainder >= 4) {
        for (size_t i = 4; i < remainder; ++i) c += (uint64_t)p[i] << (8 * i);
        c += load32(p);
    } else {
        for (size_t i = 0; i < remainder; ++i) c += (uint64_t)p[i] << (8 * i);
    }
    ssk_spooky_short_end(&a, &b, &c, &d);
    *hash1 = a;
    *hash2 = b;
}

void ssk_spooky_init(ssk_spooky *s, uint64_t seed1, uint64_t seed2)
{
    memset(s, 0, sizeof *s);
    s->state[0] = seed1;
    s->state[1] = seed2;
}

void ssk_spooky_update(ssk_spooky *s, const void *message, size_t length)
{
    const uint8_t *p = message;
    const size_t total = length + s->remainder;
    if (total < SSK_SPOOKY_BUFFER) {
        memcpy(s->data + s->remainder, p, length);
        s->length += length;
        s->remainder = total;
        return;
    }
    uint64_t h[SSK_SPOOKY_WORDS];
    if (s->length < SSK_SPOOKY_BUFFER) {
        for (int i = 0; i < SSK_SPOOKY_WORDS; ++i)
            h[i] = i % 3 == 0 ? s->state[0] : i % 3 == 1 ? s->state[1] : SPOOKY_CONST;
    } else {
        memcpy(h, s->state, sizeof h);
    }
    s->length += length;
    if (s->remainder) {
        /* the stashed bytes completed to two blocks */
        const size_t prefix = SSK_SPOOKY_BUFFER - s->remainder;
        memcpy(s->data + s->remainder, p, prefix);
        mix(s->data, h);
        mix(s->data + SSK_SPOOKY_BLOCK, h);
        p += prefix;
        length -= prefix;
    }
    const size_t whole = (length / SSK_SPOOKY_BLOCK) * SSK_SPOOKY_BLOCK;
    for (size_t i = 0; i < whole; i += SSK_SPOOKY_BLOCK) mix(p + i, h);
    s->remainder = length - whole;
    memcpy(s->data, p + whole, s->remainder);
    memcpy(s->state, h, sizeof h);
}

void ssk_spooky_final(const ssk_spooky *s, uint64_t *hash1, uint64_t *hash2)
{
    if (s->length < SSK_SPOOKY_BUFFER) {
        *hash1 = s->state[0];
        *hash2 = s->state[1];
        short_hash(s->data, s->length, hash1, hash2);
        return;
    }
    uint64_t h[SSK_SPOOKY_WORDS];
    memcpy(h, s->state, sizeof h);
    uint8_t block[SSK_SPOOKY_BLOCK];
    const uint8_t *data = s->data;
    size_t remainder = s->remainder;
    if (remainder >= SSK_SPOOKY_BLOCK) {
        mix(data, h);
        data += SSK_SPOOKY_BLOCK;
        remainder -= SSK_SPOOKY_BLOCK;
    }
    memset(block, 0, sizeof block);
    memcpy(block, data, remainder);
    block[SSK_SPOOKY_BLOCK - 1] = (uint8_t)remainder;
    end_block(block, h);
    *hash1 = h[0];
    *hash2 = h[1];
}
