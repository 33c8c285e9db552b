import RangeServer

extension Judge {
    /// Why a run over an HTTP/2 scheme did not test the client over HTTP/2, from the journal; nil when its requests
    /// came over HTTP/2.
    ///
    /// A client that chose `http/1.1` by ALPN on the h2 port is answered 421 (its entries say `h1`); one that spoke
    /// HTTP/1.1 to the h2c listener is read by nobody (no entry at all), since the listener takes only the HTTP/2
    /// preface. Either way the row's HTTP/2 behaviour was never reached: n/a, never a pass or a fail.
    ///
    /// - Parameters:
    ///   - entries: the run's journal entries.
    ///   - scheme: the run's scheme, h2 or h2c.
    /// - Returns: the n/a reason, or nil.
    package static func http2Problem(_ entries: [JournalEntry], scheme: MatrixScheme) -> String? {
        guard scheme.isHTTP2 else { return nil }
        if entries.contains(where: { $0.httpProtocol == "h2" }) { return nil }
        guard let first = entries.first else {
            return scheme == .h2c
                ? "made no request the h2c listener could read (it did not speak HTTP/2 with prior knowledge)" : nil
        }
        let chosen = first.alpn.map { "ALPN chose \($0)" } ?? "no ALPN protocol was chosen"
        return "did not negotiate h2 (\(chosen); its \(entries.count) request(s) came over HTTP/1.1)"
    }
}
