/// Fuzzes the HTTP/2 listener's reading of a request: a decoded HEADERS field list (`HTTP2RequestHead`), then the
/// `IncomingRequest` the router gets from it (its path and query, the fields the conditional decision reads).
///
/// The input is split on NUL into names and values, alternately (an odd last piece is a name with an empty value).
///
/// Invariants: the target and the method are never empty; no pseudo-header field reaches the fields; `host` is the
/// first field exactly when `:authority` came and no `host` field did, and then holds the first `:authority`; the
/// regular fields keep their order; the path and query the router reads put the target back together.
@_cdecl("LLVMFuzzerTestOneInput")
public func http2RequestFuzzTarget(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let pieces = fuzzText(start, count).split(separator: "\u{0}", omittingEmptySubsequences: false).map(String.init)
    var list: [(name: String, value: String)] = []
    var index = 0
    while index < pieces.count {
        list.append((name: pieces[index], value: index + 1 < pieces.count ? pieces[index + 1] : ""))
        index += 2
    }
    let head = HTTP2RequestHead(list)
    fuzzCheck(!head.method.isEmpty && !head.target.isEmpty, "a method and a target")
    fuzzCheck(head.fields.allSatisfy { $0.name.utf8.first != UInt8(ascii: ":") }, "no pseudo-header field")
    let regular = list.filter { $0.name.utf8.first != UInt8(ascii: ":") }
    let authority = list.first { $0.name == ":authority" }?.value
    let hasHost = regular.contains { $0.name.lowercased() == "host" }
    let addsHost = authority != nil && !hasHost
    fuzzCheck(
        head.fields.count == regular.count + (addsHost ? 1 : 0), "every regular field, and host at most once more")
    if addsHost { fuzzCheck(head.fields[0] == HeaderField("host", authority!), "host from :authority, first") }
    let kept = addsHost ? Array(head.fields.dropFirst()) : head.fields
    fuzzCheck(kept.map(\.name) == regular.map(\.name) && kept.map(\.value) == regular.map(\.value), "in order")

    let request = IncomingRequest(
        method: head.method, target: head.target, httpVersion: "HTTP/2", headers: head.fields,
        peerAddress: "127.0.0.1", connectionID: 1, stream: 1)
    let (path, query) = request.pathAndQuery
    fuzzCheck(path == request.rawPath && query == request.rawQuery, "one reading of the target")
    if head.target.utf8.first == UInt8(ascii: "/") {
        // As bytes: a combining mark after `?` makes one Character of both, which a Character search passes over.
        let hasQuery = head.target.utf8.contains(UInt8(ascii: "?"))
        let rebuilt = Array(path.utf8) + (hasQuery ? [UInt8(ascii: "?")] + Array(query.utf8) : [])
        fuzzCheck(rebuilt == Array(head.target.utf8), "path and query make the target: \(head.target)")
    }
    let (conditional, _) = request.conditionalFields
    fuzzCheck(conditional.range == request.header("range"), "Range as header(_:) reads it")
    fuzzCheck(conditional.ifRange == request.header("if-range"), "If-Range as header(_:) reads it")
    return 0
}
