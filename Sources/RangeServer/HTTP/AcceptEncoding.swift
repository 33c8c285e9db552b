/// Content negotiation on `Accept-Encoding` (RFC 9110, section 12.5.3), reduced to the one question the
/// `encoding` fault asks: may the response be gzip?
enum AcceptEncoding {
    /// Whether a request with this `Accept-Encoding` field accepts gzip.
    ///
    /// `gzip` (or its alias `x-gzip`) with a weight above 0 accepts it; `gzip;q=0` refuses it whatever else is
    /// listed; otherwise `*` with a weight above 0 accepts it. No field, an empty one, or a list without either
    /// asks for identity. Codings compare case-insensitively; a weight that does not parse counts as 1, as the
    /// field's grammar gives a server no better reading of it.
    static func allowsGzip(_ field: String?) -> Bool {
        guard let field else { return false }
        var gzipWeight: Double?
        var anyWeight: Double?
        for member in field.split(separator: ",") {
            let parameters = member.split(separator: ";")
            guard let first = parameters.first else { continue }
            let coding = first.trimmingASCIISpaces().lowercased()
            var weight = 1.0
            for parameter in parameters.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1)
                guard pair.count == 2, pair[0].trimmingASCIISpaces().lowercased() == "q" else { continue }
                weight = Double(pair[1].trimmingASCIISpaces()) ?? 1
            }
            switch coding {
            case "gzip", "x-gzip": gzipWeight = max(gzipWeight ?? 0, weight)
            case "*": anyWeight = weight
            default: continue
            }
        }
        if let gzipWeight { return gzipWeight > 0 }
        return (anyWeight ?? 0) > 0
    }
}

extension Substring {
    /// The text without leading and trailing spaces and tabs (the optional whitespace of HTTP lists).
    fileprivate func trimmingASCIISpaces() -> Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return text
    }
}
