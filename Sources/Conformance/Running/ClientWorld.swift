import Foundation
import NIOConcurrencyHelpers
import SystemCalls

#if canImport(Glibc)
import Glibc
#endif

/// The client's own world, which two kinds of row change: a filesystem that fills up (`disk-full-at`) and a name
/// whose IPv6 address is dead (`entry: dead-ipv6`).
///
/// Both changes are mounts, and they are made only inside a private mount namespace of the harness's own:
/// `rangecheck` starts itself again under `unshare --mount --propagation private` when its rows need one
/// (``reexecArguments(executable:arguments:)``), then ``prepare()`` bind-mounts a hosts file over `/etc/hosts` there
/// and the runner mounts each `disk-full-at` row's tmpfs there. The machine's own `/etc/hosts` is never written and no
/// mount is visible outside: the namespace, and every mount in it, ends with the last process in it (the harness and
/// the clients it started), also after a SIGKILL, so there is nothing to clean up by hand.
///
/// Where no private namespace can be made (not root, no `unshare`, a library user such as `swift test` running the
/// matrix in process), ``unavailableReason`` says why and those rows are n/a, never a pass.
package enum ClientWorld {
    /// The name a `dead-ipv6` row hands out: `::1` first, `127.0.0.1` second, in the private namespace's hosts file.
    /// Under `.test` (RFC 6761), which no resolver outside answers.
    public static let dualStackName = "dead-ipv6.rangecheck.test"

    /// Set by the harness for the process it starts in the private namespace: the mount namespace it left
    /// (`mnt:[N]`), so the new process can check it is in another one.
    public static let environmentKey = "RANGECHECK_PRIVATE_MOUNTS"

    private enum State {
        case unprepared
        case ready
        case unavailable(String)
    }

    private static let state = NIOLockedValueBox(State.unprepared)

    /// Why this process cannot change the client's world, or nil when it can.
    public static var unavailableReason: String? {
        switch state.withLockedValue({ $0 }) {
        case .ready: nil
        case .unavailable(let reason): reason
        case .unprepared:
            "the harness is not in a private mount namespace of its own (rangecheck makes one as root; "
                + "a library user runs these rows through rangecheck)"
        }
    }

    /// Records why the world cannot be changed (the re-exec was not possible), for the rows' n/a.
    ///
    /// - Parameters:
    ///   - reason: one line.
    public static func markUnavailable(_ reason: String) {
        state.withLockedValue { $0 = .unavailable(reason) }
    }

    /// The mount namespace of this process, as `/proc/self/ns/mnt` names it (`mnt:[4026531841]`); nil off Linux.
    public static var currentNamespace: String? {
        try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/ns/mnt")
    }

    /// Why a private mount namespace cannot be made here, or nil when it can: tries `unshare --mount` on `true`.
    ///
    /// - Returns: one line, or nil.
    public static func namespaceProblem() async -> String? {
        guard geteuid() == 0 else { return "mounting needs root, and rangecheck runs as uid \(geteuid())" }
        guard let unshare = unsharePath else { return "unshare (util-linux) is not installed" }
        guard currentNamespace != nil else { return "no /proc/self/ns/mnt: not Linux" }
        guard let result = await ChildProcess.capture(unshare, ["--mount", "--propagation", "private", "--", "true"])
        else { return "unshare could not be started" }
        guard result.status == 0 else {
            let line = result.output.split(separator: "\n").last.map(String.init) ?? "exit \(result.status)"
            return "unshare --mount failed: \(line)"
        }
        return nil
    }

    /// The command that starts `executable` with `arguments` again in a private mount namespace, with
    /// ``environmentKey`` to set to ``currentNamespace``; nil without `unshare`.
    ///
    /// - Parameters:
    ///   - executable: this program's path.
    ///   - arguments: its arguments, without the program.
    /// - Returns: the program to exec and its full argument list (program first).
    public static func reexecArguments(executable: String, arguments: [String]) -> [String]? {
        guard let unshare = unsharePath else { return nil }
        return [unshare, "--mount", "--propagation", "private", "--", executable] + arguments
    }

    /// Replaces this process with `executable` and `arguments` run in a private mount namespace
    /// (``reexecArguments(executable:arguments:)``), with ``environmentKey`` set to the namespace it leaves. Returns
    /// only when that could not be done, with why.
    ///
    /// - Parameters:
    ///   - executable: this program's path.
    ///   - arguments: its arguments, without the program.
    /// - Returns: why the process could not be replaced.
    public static func reexec(executable: String, arguments: [String]) -> String {
        guard let command = reexecArguments(executable: executable, arguments: arguments),
            let left = currentNamespace
        else { return "unshare (util-linux) is not installed" }
        var environment = ProcessInfo.processInfo.environment
        environment[environmentKey] = left
        let argv = command.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        execve(command[0], argv, envp)
        let reason = String(cString: strerror(errno))
        for pointer in argv + envp { free(pointer) }
        return "cannot start \(command[0]): \(reason)"
    }

    private static var unsharePath: String? {
        ["/usr/bin/unshare", "/bin/unshare", "/usr/sbin/unshare"].first {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    /// In the process the harness started in its private namespace: checks the namespace is another one than the one
    /// it left, then bind-mounts a copy of `/etc/hosts` with ``dualStackName`` added over it. On failure the world is
    /// marked unavailable with the reason.
    ///
    /// - Parameters:
    ///   - leftNamespace: the value of ``environmentKey``: the namespace the harness left.
    public static func prepare(leftNamespace: String) {
        do {
            guard let current = currentNamespace, current != leftNamespace else {
                throw ConformanceError.io("still in the machine's mount namespace \(leftNamespace)")
            }
            try overrideHosts()
            state.withLockedValue { $0 = .ready }
        } catch {
            markUnavailable("cannot prepare the private mount namespace: \(error)")
        }
    }

    /// The hosts file of the private namespace: the machine's, then ``dualStackName`` on `::1` and on `127.0.0.1`,
    /// in that order (glibc sorts `::1` first either way, RFC 6724).
    static func hostsText(original: String) -> String {
        var text = original
        if !text.isEmpty && !text.hasSuffix("\n") { text += "\n" }
        return text
            + "# rangecheck's private mount namespace only (dead-ipv6 rows): a dead IPv6 address beside a live IPv4 one\n"
            + "::1 \(dualStackName)\n127.0.0.1 \(dualStackName)\n"
    }

    private static func overrideHosts() throws {
        let original = (try? String(contentsOfFile: "/etc/hosts", encoding: .utf8)) ?? ""
        let directory = try makeTemporaryDirectory(prefix: "rangecheck-hosts")
        let file = "\(directory)/hosts"
        // Removed once mounted: the mount keeps the file, and nothing is left in /tmp even after a SIGKILL.
        defer {
            unlink(file)
            rmdir(directory)
        }
        try hostsText(original: original).write(toFile: file, atomically: false, encoding: .utf8)
        try systemCall("mount") { mount(file, "/etc/hosts", nil, UInt(MS_BIND), nil) }
    }

    /// Mounts a tmpfs of `size` bytes (rounded up to whole pages by the kernel) at `path`, an existing directory.
    ///
    /// - Throws: ``ConformanceError/io(_:)`` naming the path and the reason; without a private namespace, why not.
    static func mountFilesystem(at path: String, size: UInt64) throws {
        if let reason = unavailableReason { throw ConformanceError.io(reason) }
        do {
            try systemCall("mount") {
                mount("tmpfs", path, "tmpfs", UInt(MS_NOSUID | MS_NODEV), "size=\(size),mode=0755")
            }
        } catch {
            throw ConformanceError.io("cannot mount a \(size)-byte tmpfs at \(path): \(error)")
        }
    }

    /// Gives the tmpfs at `path` a new size, keeping its files.
    static func resizeFilesystem(at path: String, size: UInt64) throws {
        do {
            try systemCall("mount") {
                mount("tmpfs", path, "tmpfs", UInt(MS_REMOUNT | MS_NOSUID | MS_NODEV), "size=\(size)")
            }
        } catch {
            throw ConformanceError.io("cannot give the tmpfs at \(path) \(size) bytes: \(error)")
        }
    }

    /// Unmounts `path` (lazily, so a file a client left open cannot keep it); errors are ignored, since the
    /// namespace's end removes the mount anyway.
    static func unmountFilesystem(at path: String) {
        _ = umount2(path, Int32(MNT_DETACH))
    }

    /// Whether `path` is a mount point in this process's namespace (`/proc/self/mountinfo`).
    ///
    /// - Parameters:
    ///   - path: an absolute path without a trailing slash.
    ///   - mountinfo: the table to read; the process's own by default.
    /// - Returns: true when a mount sits there.
    public static func isMountPoint(_ path: String, mountinfo: String = "/proc/self/mountinfo") -> Bool {
        guard let text = try? String(contentsOfFile: mountinfo, encoding: .utf8) else { return false }
        // Field 5 is the mount point, with space, tab, newline and backslash written as octal escapes.
        let escaped = path.replacingOccurrences(of: "\\", with: "\\134").replacingOccurrences(of: " ", with: "\\040")
            .replacingOccurrences(of: "\t", with: "\\011").replacingOccurrences(of: "\n", with: "\\012")
        return text.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ", maxSplits: 5, omittingEmptySubsequences: false)
            return fields.count > 4 && fields[4] == escaped
        }
    }

    static func makeTemporaryDirectory(prefix: String) throws -> String {
        let base = FileManager.default.temporaryDirectory.path
        var template = Array("\(base)/\(prefix).XXXXXX".utf8CString)
        let created = template.withUnsafeMutableBufferPointer { buffer in
            mkdtemp(buffer.baseAddress!).map { String(cString: $0) }
        }
        guard let path = created else { throw ConformanceError.io("cannot create a temporary directory in \(base)") }
        return path
    }
}
