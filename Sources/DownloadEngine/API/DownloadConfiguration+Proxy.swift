import Foundation

extension DownloadConfiguration {
    /// Which HTTP proxy, if any, each request goes through: one for `http://` URLs, one for `https://` URLs, and the
    /// hosts reached directly.
    ///
    /// ```swift
    /// var configuration = DownloadConfiguration()
    /// configuration.proxy = .init(try .init(parsing: "http://proxy.example:3128"), noProxy: ["localhost"])
    /// // Or as curl reads it, when the program wants the environment's proxy:
    /// configuration.proxy = try .fromEnvironment(ProcessInfo.processInfo.environment)
    /// ```
    ///
    /// An `http://` URL's requests go to the proxy itself, in absolute form (`GET http://host/path`), as curl, wget and
    /// aria2c send them, so a proxy whose rules allow `CONNECT` to port 443 only (squid's shipped ones) serves them;
    /// an `https://` URL's go through a `CONNECT` tunnel with TLS to the origin inside, and the proxy sees the host
    /// and port only. A refusal of the proxy's own fails the task with one line naming the proxy and its status
    /// (``DownloadError/proxyRefused(_:proxy:detail:)``).
    public struct Proxy: Sendable, Hashable {
        /// The proxy of `http://` URLs; `nil` connects directly.
        public var http: Server?
        /// The proxy of `https://` URLs; `nil` connects directly.
        public var https: Server?
        /// Hosts reached without a proxy, as curl's `no_proxy` has them: `*` matches every host; a name matches
        /// itself and every subdomain (`example.com` and `.example.com` both match `example.com` and
        /// `www.example.com`, not `notexample.com`); an IP address matches only itself. Case-insensitive; a port
        /// after a name (`example.com:8080`) is ignored, so the entry covers every port.
        public var noProxy: [String]

        /// Creates a setting with a proxy per scheme.
        public init(http: Server? = nil, https: Server? = nil, noProxy: [String] = []) {
            self.http = http
            self.https = https
            self.noProxy = noProxy
        }

        /// Creates a setting with one proxy for both schemes.
        public init(_ server: Server, noProxy: [String] = []) {
            self.init(http: server, https: server, noProxy: noProxy)
        }

        /// No proxy: every request connects directly.
        public static let direct = Proxy()

        /// The proxy setting that curl reads from `environment`.
        ///
        /// - `http_proxy` for `http://` URLs, lower case only: `HTTP_PROXY` is ignored, since a CGI program finds
        ///   a request's `Proxy:` header there ("httpoxy").
        /// - `https_proxy`, else `HTTPS_PROXY`, for `https://` URLs.
        /// - `all_proxy`, else `ALL_PROXY`, for a scheme whose own variable is not set.
        /// - `no_proxy`, else `NO_PROXY`: a comma-separated ``noProxy`` list.
        ///
        /// A variable set to the empty string means no proxy for its scheme. Not read unless called: an engine
        /// uses ``DownloadConfiguration/proxy``, whose default is ``direct``.
        ///
        /// - Parameter environment: The variables, as `ProcessInfo.processInfo.environment` has them.
        /// - Returns: The setting; ``direct`` when no variable names a proxy.
        /// - Throws: ``DownloadError/invalidProxy(_:)`` naming the variable whose value is not a usable proxy URL.
        public static func fromEnvironment(_ environment: [String: String]) throws -> Proxy {
            func server(_ names: [String]) throws -> Server?? {
                guard let name = names.first(where: { environment[$0] != nil }), let value = environment[name] else {
                    return .none
                }
                if value.trimmingCharacters(in: .whitespaces).isEmpty { return .some(nil) }
                do {
                    return .some(try Server(parsing: value))
                } catch let error as DownloadError {
                    throw DownloadError.invalidProxy("\(name): \(error.message)")
                }
            }
            let all = try server(["all_proxy", "ALL_PROXY"]) ?? nil
            let noProxy = (environment["no_proxy"] ?? environment["NO_PROXY"]).map(Self.list) ?? []
            return Proxy(
                http: try server(["http_proxy"]) ?? all, https: try server(["https_proxy", "HTTPS_PROXY"]) ?? all,
                noProxy: noProxy)
        }

        /// A comma-separated list (`no_proxy`, `--noproxy`) as ``noProxy`` entries: trimmed, empty ones left out.
        ///
        /// - Parameter text: The list.
        /// - Returns: The entries.
        public static func list(_ text: String) -> [String] {
            text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }

        /// The proxy a request for `url` goes through, or `nil` to connect directly (no proxy for its scheme, or its
        /// host is in ``noProxy``).
        ///
        /// - Parameter url: An absolute `http://` or `https://` URL.
        /// - Returns: The proxy, or `nil`.
        public func server(for url: String) -> Server? {
            // Asked before every request: without a proxy, no URL parsing (500 small files, 500 requests).
            guard http != nil || https != nil else { return nil }
            guard let components = URLComponents(string: url), let host = components.host else { return nil }
            let server: Server? =
                switch components.scheme?.lowercased() {
                case "http": http
                case "https": https
                default: nil
                }
            guard let server, !Self.bypasses(host: host, noProxy: noProxy) else { return nil }
            return server
        }

        /// Whether `host` is reached directly by ``noProxy``'s rules.
        static func bypasses(host: String, noProxy: [String]) -> Bool {
            let host = normalised(host)
            let hostIsAddress = isIPAddress(host)
            for entry in noProxy {
                var name = entry.trimmingCharacters(in: .whitespaces).lowercased()
                if name == "*" { return true }
                if name.hasPrefix("[") {
                    // A bracketed IPv6 address, perhaps with a port after it.
                    name = String(name.dropFirst().prefix { $0 != "]" })
                } else if name.filter({ $0 == ":" }).count == 1 {
                    name = String(name.prefix { $0 != ":" })
                }
                while name.hasPrefix(".") { name.removeFirst() }
                name = normalised(name)
                guard !name.isEmpty else { continue }
                if hostIsAddress || isIPAddress(name) {
                    if host == name { return true }
                } else if host == name || host.hasSuffix("." + name) {
                    return true
                }
            }
            return false
        }

        /// Lower case, without IPv6 brackets or a trailing dot.
        private static func normalised(_ host: String) -> String {
            var host = host.lowercased()
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            if host.hasSuffix(".") { host.removeLast() }
            return host
        }

        private static func isIPAddress(_ text: String) -> Bool {
            var v4 = in_addr()
            var v6 = in6_addr()
            return inet_pton(AF_INET, text, &v4) == 1 || inet_pton(AF_INET6, text, &v6) == 1
        }
    }
}

extension DownloadConfiguration.Proxy {
    /// An HTTP proxy: where it listens and, optionally, the basic credentials it wants in `Proxy-Authorization`
    /// (sent only to the proxy: with each `http://` request and on each `CONNECT`, never inside a tunnel to the origin;
    /// never logged, and never written to the state directory, which keeps no proxy setting).
    public struct Server: Sendable, Hashable, CustomStringConvertible {
        /// The proxy's host name or IP address.
        public var host: String
        /// The proxy's port.
        public var port: Int
        /// The basic-authentication user, if the proxy wants one.
        public var username: String?
        /// The basic-authentication password.
        public var password: String?

        /// Creates a proxy address.
        public init(host: String, port: Int, username: String? = nil, password: String? = nil) {
            self.host = host
            self.port = port
            self.username = username
            self.password = password
        }

        /// Parses a proxy URL as curl takes it: `[http://][user:password@]host[:port][/]`, port 1080 when none is
        /// given; user and password percent-decoded.
        ///
        /// - Parameter text: The URL.
        /// - Throws: ``DownloadError/invalidProxy(_:)`` for another scheme (`https://` and `socks5://` proxies are
        ///   not supported), no host, a bad port or a path.
        public init(parsing text: String) throws {
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            let shown = Self.redacted(trimmed)
            let withScheme = trimmed.contains("://") ? trimmed : "http://" + trimmed
            guard let components = URLComponents(string: withScheme) else {
                throw DownloadError.invalidProxy("invalid proxy URL '\(shown)'")
            }
            guard components.scheme?.lowercased() == "http" else {
                throw DownloadError.invalidProxy(
                    "unsupported proxy scheme '\(components.scheme ?? "")' in '\(shown)' (only http:// proxies)")
            }
            guard var host = components.host, !host.isEmpty else {
                throw DownloadError.invalidProxy("no host in proxy URL '\(shown)'")
            }
            guard components.path.isEmpty || components.path == "/", components.query == nil else {
                throw DownloadError.invalidProxy("a proxy URL has no path or query: '\(shown)'")
            }
            let port = components.port ?? 1080
            guard (1...65535).contains(port) else {
                throw DownloadError.invalidProxy("invalid port in proxy URL '\(shown)'")
            }
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            self.init(host: host, port: port, username: components.user, password: components.password)
        }

        /// `host:port` (`[v6]:port`), never the credentials.
        public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

        /// `text` without what precedes an `@` in its authority, so an error message never shows a password.
        private static func redacted(_ text: String) -> String {
            guard let at = text.lastIndex(of: "@") else { return text }
            let start = text.range(of: "://")?.upperBound ?? text.startIndex
            guard start <= at else { return text }
            return String(text[..<start]) + "…" + String(text[at...])
        }
    }
}
