extension Router {
    /// The statuses `/redirect-to` answers with.
    static let redirectToCodes: Set<Int> = [301, 302, 303, 307, 308]

    /// `/redirect-to?url=ABSOLUTE&status_code=30x` (go-httpbin's names): a redirect to any URL, so a client can be
    /// sent to another origin (`localhost` and `127.0.0.1` are two origins on one server).
    ///
    /// `url` is required and must be an absolute `http` or `https` URL with a host; `status_code` is 301, 302
    /// (the default), 303, 307 or 308. Anything else is a 400 naming the parameter.
    func redirectTo(_ request: IncomingRequest) -> ResponsePlan {
        var url: String?
        var code = 302
        for (key, value) in QueryString.parse(String(request.rawQuery)) {
            switch key {
            case "url":
                guard url == nil else { return .text(400, "bad request: repeated query parameter url") }
                url = value
            case "status_code":
                guard let parsed = FaultPlan.decimalInt(value), Self.redirectToCodes.contains(parsed) else {
                    return .text(
                        400,
                        "bad request: \(FaultPlan.quoted("status_code", value)): expected 301, 302, 303, "
                            + "307 or 308")
                }
                code = parsed
            default:
                return .text(
                    400,
                    "bad request: unknown query parameter \(FaultPlan.quoted(key, value)) for /redirect-to "
                        + "(expected url and status_code)")
            }
        }
        guard let url else {
            return .text(400, "bad request: /redirect-to requires url, an absolute http or https URL")
        }
        guard Self.isAbsoluteHTTPURL(url) else {
            return .text(
                400,
                "bad request: \(FaultPlan.quoted("url", url)): expected an absolute http or https URL "
                    + "such as http://localhost:8080/bytes/1M")
        }
        return .text(code, "redirecting to \(url)", headers: [HeaderField("Location", url)])
    }

    /// Whether `text` is `http://` or `https://` (any case) followed by a non-empty authority, with no space or
    /// control character anywhere (it becomes a header field value).
    static func isAbsoluteHTTPURL(_ text: String) -> Bool {
        guard text.utf8.allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else { return false }
        let lowered = text.lowercased()
        let rest: Substring
        if lowered.hasPrefix("http://") {
            rest = text.dropFirst(7)
        } else if lowered.hasPrefix("https://") {
            rest = text.dropFirst(8)
        } else {
            return false
        }
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        return !authority.isEmpty && !authority.hasPrefix(":") && !authority.hasPrefix("@")
    }
}
