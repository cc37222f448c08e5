/* A write-failure shim for fault tests, loaded with LD_PRELOAD.
 *
 * Writes to files whose path ends in $FAILWRITE_SUFFIX fail with EDQUOT once the process
 * has written $FAILWRITE_AFTER bytes to such files (0 or unset: the first write fails),
 * while statvfs still reports room: a user over quota on a shared file system. Every other
 * file is untouched. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

typedef ssize_t (*write_fn)(int, const void*, size_t);
typedef ssize_t (*pwrite_fn)(int, const void*, size_t, off_t);
typedef ssize_t (*writev_fn)(int, const struct iovec*, int);
typedef ssize_t (*pwritev_fn)(int, const struct iovec*, int, off_t);

static long long written = 0;

static int matches(int fd) {
    const char* suffix = getenv("FAILWRITE_SUFFIX");
    if (!suffix || !*suffix) return 0;
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    const ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0) return 0;
    path[n] = 0;
    const size_t ls = strlen(suffix);
    return (size_t)n >= ls && strcmp(path + n - ls, suffix) == 0;
}

/* 1 (errno set) when this write must fail. */
static int refuse(int fd, size_t count) {
    if (!matches(fd)) return 0;
    const char* after = getenv("FAILWRITE_AFTER");
    const long long limit = after ? atoll(after) : 0;
    if (written + (long long)count > limit) {
        errno = EDQUOT;
        return 1;
    }
    written += (long long)count;
    return 0;
}

static size_t total(const struct iovec* v, int n) {
    size_t s = 0;
    for (int i = 0; i < n; ++i) s += v[i].iov_len;
    return s;
}

static void* next(const char* name) { return dlsym(RTLD_NEXT, name); }

ssize_t write(int fd, const void* b, size_t c) {
    if (refuse(fd, c)) return -1;
    return ((write_fn)next("write"))(fd, b, c);
}
ssize_t pwrite(int fd, const void* b, size_t c, off_t o) {
    if (refuse(fd, c)) return -1;
    return ((pwrite_fn)next("pwrite"))(fd, b, c, o);
}
ssize_t pwrite64(int fd, const void* b, size_t c, off_t o) {
    if (refuse(fd, c)) return -1;
    return ((pwrite_fn)next("pwrite64"))(fd, b, c, o);
}
ssize_t writev(int fd, const struct iovec* v, int n) {
    if (refuse(fd, total(v, n))) return -1;
    return ((writev_fn)next("writev"))(fd, v, n);
}
ssize_t pwritev(int fd, const struct iovec* v, int n, off_t o) {
    if (refuse(fd, total(v, n))) return -1;
    return ((pwritev_fn)next("pwritev"))(fd, v, n, o);
}
ssize_t pwritev64(int fd, const struct iovec* v, int n, off_t o) {
    if (refuse(fd, total(v, n))) return -1;
    return ((pwritev_fn)next("pwritev64"))(fd, v, n, o);
}
