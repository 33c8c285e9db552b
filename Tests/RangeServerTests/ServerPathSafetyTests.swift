import Foundation
import RangeServer
import Testing

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A temporary tree for containment tests:
///
/// ```
/// base/secret.txt                      outside the root
/// base/rootsibling/secret.txt          outside, in a directory whose name extends the root's
/// base/root/inside.txt
/// base/root/sub/nested.txt
/// base/root/escape        -> /etc/passwd
/// base/root/escape-file   -> base/secret.txt
/// base/root/escape-dir    -> base
/// base/root/escape-rel    -> ../secret.txt
/// base/root/escape-sibling -> ../rootsibling/secret.txt
/// base/root/inner         -> inside.txt
/// base/root/inner-dir     -> sub
/// base/root/sub/up        -> ../inside.txt
/// ```
private struct PathTree {
    static let secret = "TOP-SECRET-OUTSIDE-THE-ROOT"
    static let inside = "inside the root"
    static let nested = "nested inside the root"

    private let tree: ContainmentTree
    var base: String { tree.base }
    var root: String { tree.root }

    init() throws {
        tree = try ContainmentTree(
            prefix: "server-paths-", secretName: "secret.txt", secret: Self.secret, sibling: "rootsibling",
            files: [("inside.txt", Self.inside), ("sub/nested.txt", Self.nested)],
            links: [
                ("escape", "/etc/passwd"), ("escape-file", "{base}/secret.txt"), ("escape-dir", "{base}"),
                ("escape-rel", "../secret.txt"), ("escape-sibling", "../rootsibling/secret.txt"),
                ("inner", "inside.txt"), ("inner-dir", "sub"), ("sub/up", "../inside.txt"),
            ]
        )
    }

    func remove() { tree.remove() }
}

@Suite("Server over the wire: /files path containment")
struct ServerPathSafetyTests {
    /// Asserts 404 and that nothing from outside the root leaked into the body.
    private func expectRefused(_ target: String, port: Int, sourceLocation: SourceLocation = #_sourceLocation) throws {
        for method in ["GET", "HEAD"] {
            let response = try WireCheck.exchange(
                port: port, "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                isHead: method == "HEAD"
            )
            #expect(response.status == 404, "\(method) \(target)", sourceLocation: sourceLocation)
            let body = String(decoding: response.body, as: UTF8.self)
            #expect(!body.contains(PathTree.secret), "\(target) leaked the secret", sourceLocation: sourceLocation)
            #expect(!body.contains("root:"), "\(target) leaked /etc/passwd", sourceLocation: sourceLocation)
            #expect(response.header("etag") == nil, "\(target) has a validator", sourceLocation: sourceLocation)
        }
    }

    @Test("dot-dot in every spelling is refused with 404")
    func dotDot() async throws {
        let tree = try PathTree()
        defer { tree.remove() }
        try await withRangeServer(Fixtures.configuration { $0.root = tree.root }) { server in
            let targets = [
                "/files/../secret.txt", "/files/sub/../../secret.txt", "/files/%2e%2e/secret.txt",
                "/files/%2E%2E/secret.txt", "/files/%2e%2e%2fsecret.txt", "/files/..%2fsecret.txt",
                "/files/..%2Fsecret.txt",
                "/files/sub/%2e%2e/%2e%2e/secret.txt", "/files/.%2e/secret.txt", "/files/%2e./secret.txt",
                "/files/sub/..", "/files/..", "/files/.", "/files/./inside.txt", "/files/../root/inside.txt",
                "/files/../../../../../../etc/passwd", "/files/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
            ]
            for target in targets { try expectRefused(target, port: server.port) }
        }
    }

    @Test("encoded slashes, absolute paths, NUL and backslashes are refused with 404")
    func encodedSeparators() async throws {
        let tree = try PathTree()
        defer { tree.remove() }
        try await withRangeServer(Fixtures.configuration { $0.root = tree.root }) { server in
            let targets = [
                "/files/%2fetc%2fpasswd", "/files/%2Fetc%2Fpasswd", "/files//etc/passwd", "//etc/passwd",
                "/files/sub%2fnested.txt", "/files/inside.txt%00", "/files/inside.txt%00.png", "/files/%00",
                "/files/..\\secret.txt", "/files/..%5csecret.txt", "/files/..%5Csecret.txt", "/files/sub\\nested.txt",
                "/files/%", "/files/%2", "/files/%zz", "/files/%ff", "/files/%c0%ae%c0%ae/secret.txt",
            ]
            for target in targets { try expectRefused(target, port: server.port) }
            // The control: the same files by their honest names work.
            let nested = try rawRequest(port: server.port, "GET", "/files/sub/nested.txt")
            #expect(nested.status == 200)
            #expect(String(decoding: nested.body, as: UTF8.self) == PathTree.nested)
            // Ordinary escapes still decode.
            let escaped = try rawRequest(port: server.port, "GET", "/files/sub/nested%2Etxt")
            #expect(escaped.status == 200)
            #expect(String(decoding: escaped.body, as: UTF8.self) == PathTree.nested)
        }
    }

    @Test("symlinks that leave the root are refused with 404")
    func escapingSymlinks() async throws {
        let tree = try PathTree()
        defer { tree.remove() }
        try await withRangeServer(Fixtures.configuration { $0.root = tree.root }) { server in
            let targets = [
                "/files/escape", "/files/escape-file", "/files/escape-rel", "/files/escape-sibling",
                "/files/escape-dir/secret.txt", "/files/escape-dir/rootsibling/secret.txt",
            ]
            for target in targets { try expectRefused(target, port: server.port) }
        }
    }

    @Test("symlinks that stay inside the root are served")
    func innerSymlinks() async throws {
        let tree = try PathTree()
        defer { tree.remove() }
        try await withRangeServer(Fixtures.configuration { $0.root = tree.root }) { server in
            let cases = [
                ("/files/inner", PathTree.inside), ("/files/inner-dir/nested.txt", PathTree.nested),
                ("/files/sub/up", PathTree.inside), ("/files/inside.txt", PathTree.inside),
            ]
            for (target, expected) in cases {
                let response = try rawRequest(port: server.port, "GET", target)
                #expect(response.status == 200, "\(target)")
                #expect(String(decoding: response.body, as: UTF8.self) == expected, "\(target)")
                #expect(response.header("etag") != nil)
                let partial = try rawRequest(port: server.port, "GET", target, headers: ["Range": "bytes=0-5"])
                #expect(partial.status == 206)
                #expect(partial.body == Array(expected.utf8.prefix(6)))
            }
        }
    }

    @Test("directories, including symlinked ones and the root itself, answer 404")
    func directories() async throws {
        let tree = try PathTree()
        defer { tree.remove() }
        try await withRangeServer(Fixtures.configuration { $0.root = tree.root }) { server in
            for target in ["/files/sub", "/files/sub/", "/files/inner-dir", "/files/escape-dir", "/files/", "/files"] {
                try expectRefused(target, port: server.port)
            }
        }
    }

    @Test("the fixture root refuses /etc/passwd in every spelling")
    func fixtureRoot() async throws {
        try await withRangeServer(Fixtures.configuration()) { server in
            let targets = [
                "/files/../../../../../../../../etc/passwd",
                "/files/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
                "/files/%2fetc%2fpasswd", "/files//etc/passwd", "/files/docs", "/files/docs/../hello.txt",
            ]
            for target in targets { try expectRefused(target, port: server.port) }
            let nested = try rawRequest(port: server.port, "GET", "/files/docs/info.json")
            #expect(nested.status == 200)
        }
    }
}
