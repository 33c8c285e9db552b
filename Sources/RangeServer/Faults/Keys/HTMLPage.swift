extension FaultKey {
    /// `html-page=1`: every GET is answered 200 with a short HTML page (`Content-Type: text/html`) instead of the
    /// representation, whatever its Range and conditionals: a login or error page where the file should be, which a
    /// client must not save as the file.
    static let htmlPage = flag(
        "html-page", kind: .status, help: "answer 200 with a short HTML page (text/html) instead of the file",
        shapesResponse: true, field: \.htmlPage)

    /// The keys that shape the representation's own answer, which the page replaces: with `html-page` they would do
    /// nothing, so the two are refused together (`FaultPlan.checkCombination`).
    static let htmlPageReplaces: [FaultKey] = [
        .status, .unsatisfiableShape, .ignoreRange, .ignoreIfRange, .ifRange, .misalignRange, .noETag, .weakETag,
        .etagSalt, .noLastModified, .noAcceptRanges, .contentRangeOn200, .contentRangeTotal, .rangeCap, .encoding,
        .contentRange, .multipart, .unsolicited206,
    ]
}
