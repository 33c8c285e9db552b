extension FaultKey {
    /// `reject-header=NAME`: a request that carries the field NAME (any case) is answered 400 with one line, before
    /// any other fault: presigned storage refusing an `Authorization` a client forwarded across a redirect.
    static let rejectHeader = FaultKey(
        "reject-header", kind: .status, valueForm: "header name", placeholder: "NAME", example: "authorization",
        help: "answer 400 with one line when the request carries the header NAME", expected: HeaderText.nameExpected,
        shapesResponse: true, field: \.rejectHeader, parse: { HeaderText.name($0) },
        format: { HeaderText.queryForm($0) }
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(
            rank: 1,
            answer: { exchange in
                // One line naming the field, as presigned storage refuses a request that carries an Authorization
                // it did not ask for.
                guard let name = exchange.faults.rejectHeader, exchange.request.header(name) != nil else { return nil }
                var plan = ResponsePlan.text(
                    400,
                    "400 Bad Request (injected: reject-header=\(HeaderText.queryForm(name)); the request carries \(name))"
                )
                plan.faults = exchange.names
                plan.delivery.delay = exchange.faults.delay
                return plan
            }))
    #endif
}
