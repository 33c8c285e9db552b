extension FaultKey {
    /// `reject-header=NAME`: a request that carries the field NAME (any case) is answered 400 with one line, before
    /// any other fault: presigned storage refusing an `Authorization` a client forwarded across a redirect.
    static let rejectHeader = FaultKey(
        "reject-header", kind: .status, valueForm: "header name", placeholder: "NAME", example: "authorization",
        help: "answer 400 with one line when the request carries the header NAME", expected: HeaderText.nameExpected,
        shapesResponse: true, field: \.rejectHeader, parse: { HeaderText.name($0) },
        format: { HeaderText.queryForm($0) })
}
