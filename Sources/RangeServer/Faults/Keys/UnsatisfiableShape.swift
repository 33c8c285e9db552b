extension FaultKey {
    /// `416-shape=...`: how an unsatisfiable range is answered instead of a 416 with `Content-Range: bytes */LENGTH`.
    static let unsatisfiableShape = FaultKey(
        "416-shape", kind: .status, help: "a 416 without Content-Range, or with an HTML error page",
        shapesResponse: true, field: \.unsatisfiableShape
    )
    #if !FAULT_SYNTAX_ONLY
    .hooked(
        FaultHooks(
            headers: { plan, _, exchange in
                guard plan.status == 416, let shape = exchange.faults.unsatisfiableShape else { return }
                switch shape {
                case .noContentRange:
                    plan.headers.removeAll { $0.name == "Content-Range" }
                case .htmlBody:
                    if let index = plan.headers.firstIndex(where: { $0.name == "Content-Type" }) {
                        plan.headers[index].value = "text/html; charset=utf-8"
                    }
                    plan.body = .literal(Array(Router.unsatisfiablePage.utf8))
                }
            }))
    #endif
}

#if !FAULT_SYNTAX_ONLY
extension Router {
    /// The error page of `416-shape=html-body`, like a CDN's: a client that appends it to a file corrupts the file.
    static let unsatisfiablePage = """
        <!DOCTYPE html>
        <html><head><title>416 Requested Range Not Satisfiable</title></head>
        <body><h1>416 Requested Range Not Satisfiable</h1><p>The requested range is not available.</p>
        <hr><address>rangeserver (416-shape=html-body)</address></body></html>

        """
}
#endif
