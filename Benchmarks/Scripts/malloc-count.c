// Counts heap allocations of a process, for allocation-per-request figures that do not move with machine noise.
//
// Build: cc -O2 -shared -fPIC -o /tmp/libmalloc-count.so Benchmarks/Scripts/malloc-count.c
// Use:   LD_PRELOAD=/tmp/libmalloc-count.so PROFILE=halcyon ROUNDS=13 .build/release/DownloadBenchmark
//        prints "mallocs N" to stderr at exit (child processes print their own line). Run twice with
//        different ROUNDS and divide the difference by the downloads it adds (4000 per round) to leave
//        out start-up.
// Counts malloc, calloc, realloc, posix_memalign and aligned_alloc on glibc, forwarding to glibc's own.
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);

static unsigned long long allocations;

static void counted(void) { __atomic_fetch_add(&allocations, 1, __ATOMIC_RELAXED); }

void *malloc(size_t size) { counted(); return __libc_malloc(size); }
void *calloc(size_t count, size_t size) { counted(); return __libc_calloc(count, size); }
void *realloc(void *pointer, size_t size) { counted(); return __libc_realloc(pointer, size); }
void *aligned_alloc(size_t alignment, size_t size) { counted(); return __libc_memalign(alignment, size); }

int posix_memalign(void **result, size_t alignment, size_t size) {
    counted();
    *result = __libc_memalign(alignment, size);
    return *result ? 0 : 12;
}

__attribute__((destructor)) static void report(void) {
    char line[64];
    int length = snprintf(line, sizeof line, "mallocs %llu\n", allocations);
    if (length > 0) write(2, line, (size_t)length);
}
