extension FaultKey {
    /// `html-page=1`: every GET is answered 200 with a short HTML page (`Content-Type: text/html`) instead of the
    /// representation, whatever its Range and conditionals: a login or error page where the file should be, which a
    /// client must not save as the file.
    static let htmlPage = flag(
        "html-page", kind: .status, help: "answer 200 with a short HTML page (text/html) instead of the file",
        shapesResponse: true, field: \.htmlPage
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(
            rank: 4,
            answer: { exchange in
                // A short sign-in page instead of the representation, with none of its validators; the body faults
                // apply to the page as to any body.
                var plan = ResponsePlan(
                    status: 200, headers: [HeaderField("Content-Type", "text/html; charset=utf-8")],
                    body: .literal(Router.signInPageBytes))
                let faults = exchange.faults
                plan.delivery = Delivery(
                    delay: faults.delay, chunked: faults.chunked, chunkedWithLength: faults.chunkedWithLength,
                    faults: faults.bodyFaults)
                plan.faults = exchange.names
                return plan
            }))
    #endif

    /// The keys that shape the representation's own answer, which the page replaces: with `html-page` they would do
    /// nothing, so the two are refused together (`FaultPlan.checkCombination`).
    static let htmlPageReplaces: [FaultKey] = [
        .status, .unsatisfiableShape, .ignoreRange, .ignoreIfRange, .ifRange, .misalignRange, .noETag, .weakETag,
        .etagSalt, .noLastModified, .noAcceptRanges, .contentRangeOn200, .contentRangeTotal, .rangeCap, .encoding,
        .contentRange, .multipart, .unsolicited206,
    ]
}

#if !FAULT_SYNTAX_ONLY
extension Router {
    /// The page of `html-page=1`: what a portal, a proxy or an expired session serves where a file was expected.
    static let signInPage = """
        <!DOCTYPE html>
        <html><head><title>Sign in</title></head>
        <body><h1>Sign in</h1><p>Your session has expired. Sign in again to continue to your download.</p>
        <form method="post" action="/login"><input name="user"> <input name="password" type="password">
        <button>Sign in</button></form>
        <hr><address>rangeserver (html-page=1)</address></body></html>

        """

    /// `signInPage` as bytes, made once.
    static let signInPageBytes = Array(signInPage.utf8)
}
#endif
