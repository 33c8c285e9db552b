import Foundation

/// A route an embedder adds to the server: every request whose path starts with ``prefix`` goes to ``handler``.
///
/// This is how a program built on the server serves an API of its own beside the resources and scenarios, on the
/// same ports and under the same TLS (`rangecheck serve` serves its `/_conformance/` API this way). The handler is
/// asynchronous: the connection is suspended while it runs, so a slow handler holds no libmicrohttpd thread.
/// Requests to a custom route are not journaled, as `/_control/` requests are not: the journal shows what download
/// clients did.
///
/// ```swift
/// var configuration = RangeServer.Configuration()
/// configuration.customRoutes = [
///     CustomRoute(prefix: "/_hello/") { request in .text(200, "hello, \(request.peerAddress)") }
/// ]
/// ```
public struct CustomRoute: Sendable {
    /// One request to a custom route, with its body read in full.
    public struct Request: Sendable {
        /// The method token, as sent.
        public var method: String
        /// The path, still percent-encoded, without the query.
        public var path: String
        /// The query after `?`, still percent-encoded; empty when there is none.
        public var query: String
        /// Header fields by lower-cased name; a repeated field keeps its last value.
        public var headers: [String: String]
        /// The request body (empty without one).
        public var body: [UInt8]
        /// The peer's numeric address.
        public var peerAddress: String
        /// Whether the request came in on a TLS port.
        public var isTLS: Bool

        /// Makes a request, for tests of a handler.
        ///
        /// - Parameters:
        ///   - method: the method.
        ///   - path: the path.
        ///   - query: the query, without `?`.
        ///   - headers: header fields by lower-cased name.
        ///   - body: the body.
        ///   - peerAddress: the peer's address.
        ///   - isTLS: whether it came over TLS.
        public init(
            method: String, path: String, query: String = "", headers: [String: String] = [:], body: [UInt8] = [],
            peerAddress: String = "127.0.0.1", isTLS: Bool = false
        ) {
            self.method = method
            self.path = path
            self.query = query
            self.headers = headers
            self.body = body
            self.peerAddress = peerAddress
            self.isTLS = isTLS
        }

        /// The query's `name=value` pairs, percent-decoded, in order.
        public var queryItems: [(name: String, value: String)] {
            query.split(separator: "&").map { pair in
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                func decoded(_ text: Substring) -> String {
                    let spaced = text.replacingOccurrences(of: "+", with: " ")
                    return spaced.removingPercentEncoding ?? spaced
                }
                return (decoded(parts[0]), parts.count > 1 ? decoded(parts[1]) : "")
            }
        }
    }

    /// The answer to one request.
    public struct Response: Sendable {
        /// The status code.
        public var status: Int
        /// Header fields in send order (Content-Length and Date are added by the server).
        public var headers: [(name: String, value: String)]
        /// The body.
        public var body: [UInt8]

        /// Makes a response.
        ///
        /// - Parameters:
        ///   - status: the status code.
        ///   - headers: header fields in send order.
        ///   - body: the body.
        public init(status: Int, headers: [(name: String, value: String)] = [], body: [UInt8] = []) {
            self.status = status
            self.headers = headers
            self.body = body
        }

        /// A `text/plain` response; a newline is added.
        ///
        /// - Parameters:
        ///   - status: the status code.
        ///   - text: the body.
        /// - Returns: the response.
        public static func text(_ status: Int, _ text: String) -> Response {
            Response(
                status: status, headers: [("Content-Type", "text/plain; charset=utf-8")],
                body: Array((text + "\n").utf8))
        }
    }

    /// The path prefix this route answers, e.g. `/_conformance/`; it must start with `/`.
    public var prefix: String
    /// A request body longer than this is not read: the request is answered 413 without calling the handler.
    public var maximumBodySize: Int
    /// Answers one request. Runs as a Swift task while the connection waits suspended.
    public var handler: @Sendable (Request) async -> Response

    /// Makes a route.
    ///
    /// - Parameters:
    ///   - prefix: the path prefix, starting with `/`.
    ///   - maximumBodySize: the largest request body read (1 MiB by default).
    ///   - handler: answers each request.
    public init(
        prefix: String, maximumBodySize: Int = 1 << 20, handler: @escaping @Sendable (Request) async -> Response
    ) {
        self.prefix = prefix
        self.maximumBodySize = maximumBodySize
        self.handler = handler
    }

    /// Whether `path` (percent-encoded, without the query) belongs to this route.
    func matches(_ path: Substring) -> Bool { path.hasPrefix(prefix) }
}
