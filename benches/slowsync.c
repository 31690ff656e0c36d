/*
 * Makes every fsync and fdatasync of a process slower, to measure the
 * broker as on a disk whose syncs cost more than this machine's (~0.2 ms).
 * Measurement only; not built by cargo.
 *
 *   gcc -shared -fPIC -O2 -o /tmp/slowsync.so benches/slowsync.c -ldl
 *   LD_PRELOAD=/tmp/slowsync.so SLOW_SYNC_US=1000 cargo bench --bench dedup -- ...
 *
 * The bench's broker inherits the environment; SLOW_SYNC_US is the delay
 * added before each sync, in microseconds (default 1000).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

static useconds_t delay_us(void) {
    const char *s = getenv("SLOW_SYNC_US");
    return s ? (useconds_t)atoi(s) : 1000;
}

int fsync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    usleep(delay_us());
    return real(fd);
}

int fdatasync(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    usleep(delay_us());
    return real(fd);
}
