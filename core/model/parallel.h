/*
 * parallel.h — the CPU backend's parallel loops (core/model/parallel.c);
 * not installed.
 *
 * A loop over n rows is cut into chunks of `grain` rows (the last one
 * shorter): chunk k covers rows [k grain, min(n, (k + 1) grain)). The cut
 * depends on n and grain only, never on the thread count, so a kernel that
 * writes one partial result per chunk and sums the partials in chunk order
 * gets the same bits on 1 or 64 threads, inside a host or outside it
 * (issue #17). The calling thread claims chunks like the workers do: a
 * worker that is slow to wake only helps less, the caller never waits for
 * it to start. n <= grain runs inline on the caller (one chunk: a small
 * mesh pays no wake-up).
 */
#ifndef SSK_PARALLEL_H
#define SSK_PARALLEL_H

#include <stdint.h>

/* Rows per chunk of the per-vertex kernels (skinning, records, normals):
 * about 50-100 us of work, well above a worker's wake-up. */
#define SSK_PARALLEL_GRAIN 4096

/* fn(ctx, begin, end, chunk): rows [begin, end) of chunk number `chunk`. */
typedef void (*ssk_chunk_fn)(void *ctx, int64_t begin, int64_t end, uint32_t chunk);

/* Chunks of a loop over n rows (0 for n <= 0). */
static inline uint32_t ssk_parallel_chunk_count(int64_t n, int64_t grain)
{
    return n > 0 ? (uint32_t)((n + grain - 1) / grain) : 0u;
}

/* Runs fn on every chunk of [0, n) exactly once and returns when all are
 * done. Called from inside a chunk, or while another thread's loop runs,
 * it runs its chunks inline in order (no nesting, no deadlock). */
void ssk_parallel_for(int64_t n, int64_t grain, ssk_chunk_fn fn, void *ctx);

/* The number of threads a loop may use (workers + the caller). */
uint32_t ssk_parallel_threads(void);

/* Inside a chunk: the running thread's slot, 0 (the caller, or any thread
 * running a loop inline) .. ssk_parallel_threads() - 1, for per-thread
 * scratch memory (never for results: which thread runs a chunk varies). */
uint32_t ssk_parallel_slot(void);

#endif /* SSK_PARALLEL_H */
