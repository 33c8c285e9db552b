import Foundation
import HTTPVocabulary
import NIOHTTP1

/// What goes to an HTTP proxy and what its own answers mean: pure functions over plain values, for ``ProxyClient``.
///
/// - `http://` URLs: the request itself goes to the proxy, its target in absolute form (`GET http://host:port/path
///   HTTP/1.1`, RFC 9112 §3.2.2), with `Proxy-Authorization` when there are credentials; the proxy forwards it.
/// - `https://` URLs: `CONNECT host:port` (RFC 9110 §9.3.6) with `Proxy-Authorization`, then TLS to the origin
///   inside the tunnel and the request in origin form, which the proxy never sees.
enum ProxyWire {
    /// Where a URL's requests go, as the proxy and the origin are told.
    struct Origin: Hashable, Sendable {
        /// Whether the URL is `https://`: tunnelled, TLS inside.
        var isTLS: Bool
        /// The host, without IPv6 brackets: the TLS server name, or the address the certificate must name.
        var host: String
        /// The port, the scheme's default when the URL has none.
        var port: Int
        /// `host:port`, an IPv6 address in brackets: what `CONNECT` asks for and what messages name.
        var authority: String
        /// The `Host` field: `host`, with `:port` unless it is the scheme's default.
        var hostField: String
        /// The path and query (`/` when the URL has no path), percent-encoded as in the URL.
        var originForm: String

        /// `scheme://host[:port]/path?query`: the target of a request sent to the proxy itself.
        var absoluteForm: String { (isTLS ? "https://" : "http://") + hostField + originForm }
    }

    /// The origin of `url`.
    ///
    /// - Throws: ``DownloadError/invalidURL(_:)`` for anything but an `http://` or `https://` URL with a host and a
    ///   valid port.
    static func origin(of url: String) throws -> Origin {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", var host = components.host, !host.isEmpty
        else { throw DownloadError.invalidURL(url) }
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let isTLS = scheme == "https"
        let defaultPort = isTLS ? 443 : 80
        let port = components.port ?? defaultPort
        guard (1...65535).contains(port) else { throw DownloadError.invalidURL(url) }
        let name = host.contains(":") ? "[\(host)]" : host
        var originForm = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { originForm += "?" + query }
        return Origin(
            isTLS: isTLS, host: host, port: port, authority: "\(name):\(port)",
            hostField: port == defaultPort ? name : "\(name):\(port)", originForm: originForm)
    }

    /// The `Proxy-Authorization` value for `proxy`: `Basic` with the credentials of its URL (RFC 7617, UTF-8), else
    /// the request's own `Proxy-Authorization` field, else none.
    static func authorization(
        for proxy: DownloadConfiguration.Proxy.Server, request: [(name: String, value: String)]
    ) -> String? {
        if let username = proxy.username {
            let credentials = Data("\(username):\(proxy.password ?? "")".utf8).base64EncodedString()
            return "Basic " + credentials
        }
        return request.last { $0.name.lowercased() == "proxy-authorization" }?.value
    }

    /// The `CONNECT` that opens a tunnel to `origin`.
    static func connectHead(to origin: Origin, authorization: String?) -> HTTPRequestHead {
        var headers = HTTPHeaders([("Host", origin.authority)])
        if let authorization { headers.add(name: "Proxy-Authorization", value: authorization) }
        return HTTPRequestHead(version: .http1_1, method: .CONNECT, uri: origin.authority, headers: headers)
    }

    /// The `GET` for `request`: in absolute form to the proxy itself (`tunnelled` false), with `authorization` as
    /// its `Proxy-Authorization`; or in origin form inside a tunnel, where no proxy field belongs. The request's own
    /// `Proxy-Authorization` is never among its fields: it is for the proxy (``authorization(for:request:)``), and
    /// inside a tunnel it would reach the origin.
    ///
    /// - Throws: ``DownloadError/invalidState(_:)`` for a field that could smuggle in fields or a second request.
    static func requestHead(
        _ request: TransportRequest, to origin: Origin, tunnelled: Bool, authorization: String?
    ) throws -> HTTPRequestHead {
        var headers = HTTPHeaders([("Host", origin.hostField)])
        headers.add(
            contentsOf: try HTTPTransport.fields(
                request.headers.filter { $0.name.lowercased() != "proxy-authorization" }))
        if !tunnelled, let authorization { headers.add(name: "Proxy-Authorization", value: authorization) }
        return HTTPRequestHead(
            version: .http1_1, method: .GET, uri: tunnelled ? origin.originForm : origin.absoluteForm,
            headers: headers)
    }

    /// Whether a response to a request sent to the proxy itself (an `http://` URL) is the proxy's own refusal
    /// rather than the origin's response relayed: a `407`, which only a proxy sends, or an error status carrying
    /// the proxy's mark (a `Proxy-Status` entry with an error, RFC 9209; squid's `X-Squid-Error`). An unmarked
    /// `403` or `503` may be the origin's and goes to the resume rules like any response.
    static func isProxysOwnRefusal(status: Int, headers: [(name: String, value: String)]) -> Bool {
        guard status >= 400 else { return false }
        return status == 407 || mark(headers) != nil
    }

    /// What the proxy says went wrong, when it says: squid's `X-Squid-Error` code (`ERR_ACCESS_DENIED`), or the
    /// `error` of a `Proxy-Status` entry (`http_request_denied`).
    static func mark(_ headers: [(name: String, value: String)]) -> String? {
        func field(_ name: String) -> String? { headers.first { $0.name.lowercased() == name }?.value }
        if let squid = field("x-squid-error")?.split(separator: " ").first, !squid.isEmpty {
            return String(squid.prefix(80))
        }
        return field("proxy-status").flatMap(ProxyStatus.init(parsing:))?.error
    }

    /// The engine's error for a proxy's refusal, one line naming the proxy and its status, never its credentials.
    ///
    /// - Parameters:
    ///   - status: The proxy's status.
    ///   - headers: Its response fields (for its mark, ``mark(_:)``).
    ///   - proxy: The proxy.
    ///   - request: What it refused: `CONNECT host:port`, or `GET URL`.
    ///   - sentCredentials: Whether the refused request carried `Proxy-Authorization`.
    static func refusal(
        status: Int, headers: [(name: String, value: String)], proxy: DownloadConfiguration.Proxy.Server,
        request: String, sentCredentials: Bool
    ) -> DownloadError {
        var detail = "\(request) refused"
        if status == 407 {
            detail +=
                sentCredentials
                ? ": it did not accept the credentials given"
                : ": it wants credentials (http://USER:PASSWORD@HOST:PORT)"
        }
        if let mark = mark(headers) { detail += " (\(mark.filter { !$0.isNewline && $0 != "\0" }))" }
        return DownloadError.proxyRefused(status, proxy: "\(proxy)", detail: detail)
    }
}
