extension FaultKey {
    /// `content-type=VALUE`: every answer of the URL carries `Content-Type: VALUE`, replacing its own (a multipart
    /// 206's too, whose boundary is then lost).
    static let contentType = FaultKey(
        "content-type", kind: .headers, valueForm: "header value", placeholder: "VALUE", example: "text/html",
        help: "every answer carries Content-Type: VALUE instead of its own", expected: HeaderText.valueExpected,
        shapesResponse: true, field: \.contentType, parse: { HeaderText.value($0) },
        format: { HeaderText.queryForm($0) })
}
