/* spooky.h — SpookyHash V2, the 128-bit hash of Alembic's object and
 * property hashes (spooky.c); internal to the core. */
#ifndef SSK_SPOOKY_H
#define SSK_SPOOKY_H

#include <stddef.h>
#include <stdint.h>

#define SSK_SPOOKY_WORDS 12
#define SSK_SPOOKY_BLOCK (8 * SSK_SPOOKY_WORDS)
#define SSK_SPOOKY_BUFFER (2 * SSK_SPOOKY_BLOCK)

/* An incremental hash: ssk_spooky_init, any number of ssk_spooky_update,
 * then ssk_spooky_final, which leaves the state as it was (Alembic updates
 * a hash again after reading it out). */
typedef struct ssk_spooky {
    uint8_t data[SSK_SPOOKY_BUFFER]; /* bytes not yet mixed */
    uint64_t state[SSK_SPOOKY_WORDS];
    size_t length;                   /* bytes so far */
    size_t remainder;                /* bytes in data */
} ssk_spooky;

void ssk_spooky_init(ssk_spooky *s, uint64_t seed1, uint64_t seed2);
void ssk_spooky_update(ssk_spooky *s, const void *message, size_t length);
void ssk_spooky_final(const ssk_spooky *s, uint64_t *hash1, uint64_t *hash2);
/* The short hash's final mix of four words (Alembic folds a sample's
 * digest into a property's running hash with it). */
void ssk_spooky_short_end(uint64_t *h0, uint64_t *h1, uint64_t *h2, uint64_t *h3);

#endif
