internal import COpenBeneath

/// Whether the open file `descriptor` lives on a local file system whose every change passes through this kernel
/// (ext2/3/4, XFS, Btrfs, tmpfs, overlayfs, F2FS), so that a change notification such as inotify's reports each one.
///
/// False for any other file system (NFS, CIFS, FUSE: another machine or a user-space server changes its files
/// unseen), where the file system cannot be told, and off Linux.
public func isOnLocalFileSystem(_ descriptor: Int32) -> Bool {
    cfile_system_is_local(descriptor) == 1
}
