internal import COpenBeneath

/// Opens `path`, relative to the directory `directory`, read-only with `openat2`, refusing in the kernel any
/// resolution that leaves the directory or passes through a symlink (`RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`): a
/// component swapped for a symlink between a caller's containment check and the open cannot redirect it.
///
/// - Parameters:
///   - directory: an open directory descriptor.
///   - path: a path relative to it.
/// - Returns: the new descriptor (close-on-exec).
/// - Throws: ``SystemCallError`` for `openat2`: `EXDEV` or `ELOOP` for a path that leaves the directory or meets a
///   symlink, `ENOSYS` where the kernel or platform has no `openat2`, `EPERM` where a seccomp filter refuses it.
public func openBeneath(_ directory: Int32, _ path: String) throws(SystemCallError) -> Int32 {
    try systemCall("openat2") { copen_beneath(directory, path) }
}
