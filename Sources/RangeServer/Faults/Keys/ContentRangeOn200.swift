import HTTPVocabulary

extension FaultKey {
    /// `content-range-on-200=1`: add `Content-Range: bytes 0-LAST/LENGTH` to a 200 with the whole body.
    static let contentRangeOn200 = flag(
        "content-range-on-200", kind: .headers, help: "add Content-Range: bytes 0-LAST/LENGTH to a 200",
        needsBody: true, shapesResponse: true, field: \.contentRangeOn200
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(
            headers: { plan, representation, _ in
                guard plan.status == 200, let representation, representation.length > 0 else { return }
                plan.headers.append(
                    HeaderField(
                        "Content-Range",
                        ContentRange.headerValue(0...representation.length - 1, completeLength: representation.length)))
            }))
    #endif
}
