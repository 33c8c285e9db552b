// The calls SystemCalls needs from C: `openat2` has no libc wrapper in glibc 2.36, and its `struct open_how` and
// RESOLVE_ flags come from a Linux header Swift does not import by itself; nor does Swift's Glibc import `fstatfs`.
// They have nothing to do with libmicrohttpd, so they live apart from CMicroHTTPD's shims.
#ifndef COPENBENEATH_H
#define COPENBENEATH_H

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
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

/// 1 when the open file `fd` lives on a local file system whose every change passes through this kernel, so inotify
/// reports it (ext2/3/4, XFS, Btrfs, tmpfs, overlayfs, F2FS); 0 for any other (NFS, CIFS, FUSE, ...: changes made by
/// another machine or a user-space server are never reported), or -1 with errno set.
static inline int cfile_system_is_local(int fd) {
#ifdef __linux__
    struct statfs info;
    if (fstatfs(fd, &info) != 0) return -1;
    switch ((unsigned long)info.f_type) {
    case EXT4_SUPER_MAGIC:  // ext2 and ext3 share the number
    case XFS_SUPER_MAGIC:
    case BTRFS_SUPER_MAGIC:
    case TMPFS_MAGIC:
    case OVERLAYFS_SUPER_MAGIC:
    case F2FS_SUPER_MAGIC:
        return 1;
    default:
        return 0;
    }
#else
    (void)fd;
    return 0;
#endif
}

#endif
