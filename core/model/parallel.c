/*
 * parallel.c — the CPU backend's thread pool and parallel loops
 * (model/parallel.h; the public settings: ssk_threading_set, springskin.h).
 *
 * Why not OpenMP: libgomp reads its wait policy from the environment once,
 * when it is loaded, and a host such as Blender loads it at startup, so an
 * extension module cannot ask for passive waiting; its default spins every
 * worker for about a millisecond after each parallel region, on the cores
 * the host's own threads need (issue #17 measured a 100k-vertex Blender
 * frame 4 ms slower for it: bench/blender_spring_skin.py). OpenMP's static
 * schedule also makes the caller wait for each worker's share, however
 * late the host lets that worker run, and its reductions add partials in
 * an order that depends on the thread count.
 *
 * Here: one process-wide pool (the only process-wide state of the core,
 * like the OpenMP runtime it replaces), started on the first loop that has
 * more than one chunk. A job is a ticket, generation << 32 | next chunk,
 * claimed by compare-and-swap, so a worker that wakes after its job ended
 * cannot claim a chunk of the next one. Idle workers spin for at most
 * spin_microseconds, then sleep on a condition variable; the caller does
 * the same while it waits for chunks that workers are finishing.
 */
#define _GNU_SOURCE
#include "model/parallel.h"

#include "model/internal.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* Threads above this are refused by ssk_threading_set (a likely mistake). */
#define SSK_THREADS_MAX 256u
/* Longest accepted spin (1 s: anything longer is a busy pool). */
#define SSK_SPIN_MAX_MICROSECONDS 1000000u

typedef struct pool {
    pthread_mutex_t lock;
    pthread_cond_t wake; /* idle workers sleep on it */
    pthread_cond_t done; /* a caller waiting for its last chunks sleeps on it */
    atomic_int busy;     /* a loop (or a reconfiguration) owns the pool */
    int started, quit;
    uint32_t worker_count;
    pthread_t *workers;
    uint32_t sleepers;   /* workers in pthread_cond_wait (under lock) */
    ssk_threading config;
    uint32_t threads;    /* resolved: workers + the caller */
    uint32_t generation; /* of the last job (the owner's) */
    /* the job, written before its ticket is published */
    ssk_chunk_fn fn;
    void *ctx;
    int64_t n, grain;
    uint32_t chunks;
    _Atomic uint64_t ticket; /* generation << 32 | next unclaimed chunk */
    atomic_uint finished;    /* chunks of the job done */
} pool;

static pool g_pool = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .done = PTHREAD_COND_INITIALIZER,
    .config = {0, SSK_THREADING_DEFAULT_SPIN_MICROSECONDS},
};
static pthread_once_t g_atfork_once = PTHREAD_ONCE_INIT;
static _Thread_local int t_inside;     /* this thread is running a chunk */
static _Thread_local uint32_t t_slot;  /* 0, or a worker's 1 + index */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static uint32_t cpu_count(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        const int n = CPU_COUNT(&set);
        if (n > 0) return (uint32_t)n;
    }
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (uint32_t)n : 1u;
}

static uint32_t resolved_threads(const ssk_threading *c)
{
    uint32_t t = c->threads ? c->threads : cpu_count();
    return t > SSK_THREADS_MAX ? SSK_THREADS_MAX : t;
}

/* Claims and runs chunks of job `gen` until none is left (or the job is
 * no longer current). */
static void run_chunks(pool *p, uint32_t gen, ssk_chunk_fn fn, void *ctx, int64_t n,
                       int64_t grain, uint32_t chunks)
{
    uint64_t t = atomic_load_explicit(&p->ticket, memory_order_acquire);
    for (;;) {
        if ((uint32_t)(t >> 32) != gen || (uint32_t)t >= chunks) return;
        if (!atomic_compare_exchange_weak_explicit(&p->ticket, &t, t + 1, memory_order_acq_rel,
                                                   memory_order_acquire))
            continue;
        const uint32_t k = (uint32_t)t;
        const int64_t begin = (int64_t)k * grain;
        const int64_t end = begin + grain < n ? begin + grain : n;
        t_inside = 1;
        fn(ctx, begin, end, k);
        t_inside = 0;
        if (atomic_fetch_add_explicit(&p->finished, 1u, memory_order_acq_rel) + 1u == chunks) {
            pthread_mutex_lock(&p->lock);
            pthread_cond_broadcast(&p->done);
            pthread_mutex_unlock(&p->lock);
        }
        t = atomic_load_explicit(&p->ticket, memory_order_acquire);
    }
}

typedef struct worker_start {
    pool *p;
    uint32_t slot;
} worker_start;

static void *worker_main(void *arg)
{
    const worker_start start = *(worker_start *)arg;
    free(arg);
    pool *p = start.p;
    t_slot = start.slot;
    uint32_t seen = (uint32_t)(atomic_load_explicit(&p->ticket, memory_order_acquire) >> 32);
    for (;;) {
        const uint64_t spin_ns = (uint64_t)p->config.spin_microseconds * 1000u;
        uint32_t gen = seen;
        if (spin_ns > 0) {
            const uint64_t until = now_ns() + spin_ns;
            for (unsigned i = 0;; ++i) {
                gen = (uint32_t)(atomic_load_explicit(&p->ticket, memory_order_acquire) >> 32);
                if (gen != seen || ((i & 63u) == 0 && now_ns() >= until)) break;
                cpu_relax();
            }
        }
        if (gen == seen) {
            pthread_mutex_lock(&p->lock);
            ++p->sleepers;
            while (!p->quit &&
                   (gen = (uint32_t)(atomic_load_explicit(&p->ticket, memory_order_acquire) >>
                                     32)) == seen)
                pthread_cond_wait(&p->wake, &p->lock);
            --p->sleepers;
            const int quit = p->quit;
            pthread_mutex_unlock(&p->lock);
            if (quit) return NULL;
        }
        seen = gen;
        /* the job's fields belong to `gen` while any of its chunks is
         * unclaimed; run_chunks claims only chunks of `gen` */
        run_chunks(p, gen, p->fn, p->ctx, p->n, p->grain, p->chunks);
    }
}

/* In a child of fork() the workers do not exist: start again lazily. */
static void atfork_child(void)
{
    g_pool.started = 0;
    g_pool.worker_count = 0;
    g_pool.workers = NULL; /* the parent's array; not freed in the child */
    g_pool.sleepers = 0;
    atomic_store(&g_pool.busy, 0);
    pthread_mutex_init(&g_pool.lock, NULL);
    pthread_cond_init(&g_pool.wake, NULL);
    pthread_cond_init(&g_pool.done, NULL);
}

static void register_atfork(void) { pthread_atfork(NULL, NULL, atfork_child); }

/* Owner only: start the workers (fewer when threads cannot be created:
 * the caller does the rest). */
static void start(pool *p)
{
    pthread_once(&g_atfork_once, register_atfork);
    p->threads = resolved_threads(&p->config);
    p->started = 1;
    p->quit = 0;
    p->worker_count = 0;
    if (p->threads <= 1) return;
    p->workers = malloc((p->threads - 1) * sizeof *p->workers);
    if (!p->workers) return;
    for (uint32_t i = 0; i + 1 < p->threads; ++i) {
        worker_start *ws = malloc(sizeof *ws);
        if (!ws) break;
        ws->p = p;
        ws->slot = i + 1;
        if (pthread_create(&p->workers[i], NULL, worker_main, ws) != 0) {
            free(ws);
            break;
        }
        ++p->worker_count;
    }
}

/* Owner only: stop and join the workers. */
static void stop(pool *p)
{
    if (!p->started) return;
    pthread_mutex_lock(&p->lock);
    p->quit = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    for (uint32_t i = 0; i < p->worker_count; ++i) pthread_join(p->workers[i], NULL);
    free(p->workers);
    p->workers = NULL;
    p->worker_count = 0;
    p->started = 0;
    p->quit = 0;
}

static void run_inline(int64_t n, int64_t grain, ssk_chunk_fn fn, void *ctx, uint32_t chunks)
{
    const int outer = t_inside;
    t_inside = 1;
    for (uint32_t k = 0; k < chunks; ++k) {
        const int64_t begin = (int64_t)k * grain;
        fn(ctx, begin, begin + grain < n ? begin + grain : n, k);
    }
    t_inside = outer;
}

void ssk_parallel_for(int64_t n, int64_t grain, ssk_chunk_fn fn, void *ctx)
{
    if (grain < 1) grain = 1;
    const uint32_t chunks = ssk_parallel_chunk_count(n, grain);
    if (chunks == 0) return;
    pool *p = &g_pool;
    int expected = 0;
    if (chunks == 1 || t_inside ||
        !atomic_compare_exchange_strong_explicit(&p->busy, &expected, 1, memory_order_acquire,
                                                 memory_order_relaxed)) {
        run_inline(n, grain, fn, ctx, chunks);
        return;
    }
    if (!p->started) start(p);
    if (p->worker_count == 0) {
        run_inline(n, grain, fn, ctx, chunks);
        atomic_store_explicit(&p->busy, 0, memory_order_release);
        return;
    }
    const uint32_t gen = ++p->generation;
    p->fn = fn;
    p->ctx = ctx;
    p->n = n;
    p->grain = grain;
    p->chunks = chunks;
    atomic_store_explicit(&p->finished, 0u, memory_order_relaxed);
    atomic_store_explicit(&p->ticket, (uint64_t)gen << 32, memory_order_release);
    pthread_mutex_lock(&p->lock);
    if (p->sleepers) pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);

    run_chunks(p, gen, fn, ctx, n, grain, chunks);

    /* the chunks that workers claimed: spin, then sleep */
    const uint64_t spin_ns = (uint64_t)p->config.spin_microseconds * 1000u;
    if (atomic_load_explicit(&p->finished, memory_order_acquire) < chunks && spin_ns > 0) {
        const uint64_t until = now_ns() + spin_ns;
        for (unsigned i = 0; atomic_load_explicit(&p->finished, memory_order_acquire) < chunks;
             ++i) {
            if ((i & 63u) == 0 && now_ns() >= until) break;
            cpu_relax();
        }
    }
    if (atomic_load_explicit(&p->finished, memory_order_acquire) < chunks) {
        pthread_mutex_lock(&p->lock);
        while (atomic_load_explicit(&p->finished, memory_order_acquire) < chunks)
            pthread_cond_wait(&p->done, &p->lock);
        pthread_mutex_unlock(&p->lock);
    }
    atomic_store_explicit(&p->busy, 0, memory_order_release);
}

uint32_t ssk_parallel_slot(void) { return t_slot; }

uint32_t ssk_parallel_threads(void)
{
    pool *p = &g_pool;
    return p->started ? p->worker_count + 1u : resolved_threads(&p->config);
}

/* Waits until no loop owns the pool and takes it. */
static void acquire(pool *p)
{
    for (;;) {
        int expected = 0;
        if (atomic_compare_exchange_weak_explicit(&p->busy, &expected, 1, memory_order_acquire,
                                                  memory_order_relaxed))
            return;
        sched_yield();
    }
}

void ssk_threading_default(ssk_threading *out)
{
    out->threads = 0;
    out->spin_microseconds = SSK_THREADING_DEFAULT_SPIN_MICROSECONDS;
}

ssk_status ssk_threading_set(const ssk_threading *threading, ssk_error *err)
{
    if (!threading)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT, "threading: NULL settings");
    if (threading->threads > SSK_THREADS_MAX)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "threading: threads = %u is above %u (0 means one per CPU)",
                             threading->threads, SSK_THREADS_MAX);
    if (threading->spin_microseconds > SSK_SPIN_MAX_MICROSECONDS)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "threading: spin_microseconds = %u is above %u",
                             threading->spin_microseconds, SSK_SPIN_MAX_MICROSECONDS);
    if (t_inside)
        return ssk_error_set(err, SSK_ERROR_INVALID_ARGUMENT,
                             "threading: cannot be changed from inside a parallel loop");
    pool *p = &g_pool;
    acquire(p);
    stop(p); /* the workers read the spin setting: restart them lazily */
    p->config = *threading;
    atomic_store_explicit(&p->busy, 0, memory_order_release);
    return ssk_error_ok(err);
}

void ssk_threading_get(ssk_threading *out)
{
    pool *p = &g_pool;
    out->threads = ssk_parallel_threads();
    out->spin_microseconds = p->config.spin_microseconds;
}
