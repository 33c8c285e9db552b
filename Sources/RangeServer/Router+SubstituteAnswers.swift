extension Router {
    /// The 400 of `reject-header`: one line naming the field, as presigned storage refuses a request that carries an
    /// `Authorization` it did not ask for.
    ///
    /// - Parameters:
    ///   - name: the field the request carries, lower case.
    ///   - faults: the plan, for its `delay`.
    ///   - names: the plan's applied names, journaled with the 400.
    func rejection(of name: String, faults: FaultPlan, named names: [String]) -> ResponsePlan {
        var plan = ResponsePlan.text(
            400, "400 Bad Request (injected: reject-header=\(HeaderText.queryForm(name)); the request carries \(name))")
        plan.faults = names
        plan.delivery.delay = faults.delay
        return plan
    }

    /// The 200 of `html-page`: a short sign-in page instead of the representation, with none of its validators. The
    /// body faults (`drop-after`, `rate`, `chunked` ...) apply to the page as to any body.
    ///
    /// - Parameters:
    ///   - faults: the plan, for its delivery faults.
    ///   - names: the plan's applied names.
    func htmlPage(faults: FaultPlan, named names: [String]) -> ResponsePlan {
        var plan = ResponsePlan(
            status: 200, headers: [HeaderField("Content-Type", "text/html; charset=utf-8")],
            body: .literal(Self.signInPageBytes))
        plan.delivery = Delivery(
            delay: faults.delay, chunked: faults.chunked, chunkedWithLength: faults.chunkedWithLength,
            faults: faults.bodyFaults)
        plan.faults = names
        return plan
    }

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

extension ResponsePlan {
    /// Sets the fields of `content-type` and `content-disposition` on this answer, whatever its status: a
    /// Content-Type replaces the answer's own where it has one.
    ///
    /// - Parameters:
    ///   - faults: the plan whose `contentType` and `contentDisposition` to set; nothing happens when neither is.
    mutating func setFields(of faults: FaultPlan) {
        if let contentType = faults.contentType {
            // In place: a pending Repr-Digest is inserted later at an index into this list.
            if let index = headers.firstIndex(where: { $0.name.lowercased() == "content-type" }) {
                headers[index].value = contentType
            } else {
                headers.append(HeaderField("Content-Type", contentType))
            }
        }
        if let contentDisposition = faults.contentDisposition {
            headers.append(HeaderField("Content-Disposition", contentDisposition))
        }
    }
}
