extension ResponsePlan {
    /// The `content-length` an answer declares where the server writes the field itself (the HTTP/2 listener): the
    /// body's length, off by `length-delta` when it lies (never below 0); none for a status that carries no content
    /// (1xx, 204, 304) or with `no-content-length`.
    ///
    /// A pure reading of the plan, beside the plan, so the front end only writes what it says.
    var declaredContentLength: UInt64? {
        if let delta = delivery.lengthDelta { return UInt64(max(0, Int64(clamping: body.length) + delta)) }
        if (100..<200).contains(status) || status == 204 || status == 304 { return nil }
        return delivery.http2.omitsContentLength ? nil : body.length
    }
}
