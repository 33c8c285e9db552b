// The one call SystemCalls needs from C: `openat2` has no libc wrapper in glibc 2.36, and its `struct open_how`
// and RESOLVE_ flags come from a Linux header Swift does not import by itself. It has nothing to do with
// libmicrohttpd, so it lives apart from CMicroHTTPD's shims.
#ifndef COPENBENEATH_H
#define COPENBENEATH_H

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/openat2.h>
#include <sys/syscall.h>
#endif

/// Opens `path` (relative to the directory `dir_fd`) read-only, refusing in the kernel any resolution that
/// leaves `dir_fd` or passes through a symlink (`openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`), so
/// a component swapped for a symlink between a containment check and the open cannot redirect it.
/// Returns the descriptor, or -1 with errno set; errno is ENOSYS where the kernel or platform lacks openat2.
static inline int copen_beneath(int dir_fd, const char *path) {
#if defined(__linux__) && defined(SYS_openat2)
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS;
    return (int)syscall(SYS_openat2, dir_fd, path, &how, sizeof how);
#else
    (void)dir_fd;
    (void)path;
    errno = ENOSYS;
    return -1;
#endif
}

#endif
