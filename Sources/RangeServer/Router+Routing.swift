/// The routes of the server, each named by the first segment of the path.
enum Route {
    /// `GET /`: the index page.
    case index
    /// `GET /healthz`.
    case healthz
    /// `/bytes/{size}`: generated content.
    case bytes
    /// `/files/{path}`: files below the root.
    case files
    /// `/redirect/{n}/{target}`.
    case redirect
    /// `/redirect-loop`.
    case redirectLoop
    /// `/redirect-to?url=ABSOLUTE&status_code=30x`: a redirect to any origin.
    case redirectTo
    /// `/scenario/{name}/{run}[/{route}][/~/{file}]`.
    case scenario
    /// `/_control/...`, with any method and any number of segments.
    case control
    /// `/_hub/{target}/{org}/{repo}/resolve/{revision}/{file}`: the Hugging Face Hub's resolve URL, standing in.
    case hub

    /// The route serving `path` (which starts with `/`), or nil when no route has its first segment and number
    /// of segments.
    ///
    /// One loop over the bytes: the generic walks of the UTF-8 view, and comparing a `Substring` with each route's
    /// `String` literal in turn (the generic `StringProtocol` `==`), cost several times more. Comparing bytes is
    /// the same test here: no string canonically equivalent to one of these ASCII names is spelled differently.
    init?(path: Substring) {
        let found: Route?
        if let contiguous = path.utf8.withContiguousStorageIfAvailable(Self.route(bytes:)) {
            found = contiguous
        } else {
            var copy = String(path)
            found = copy.withUTF8(Self.route(bytes:))
        }
        guard let found else { return nil }
        self = found
    }

    /// The route for the bytes of a path that starts with `/`.
    private static func route(bytes path: UnsafeBufferPointer<UInt8>) -> Route? {
        var firstEnd = path.count
        var segments = 1
        for index in 1..<path.count where path[index] == UInt8(ascii: "/") {
            if segments == 1 { firstEnd = index }
            segments += 1
        }
        let first = UnsafeBufferPointer(rebasing: path[1..<firstEnd])
        // An index loop: the generic `elementsEqual` cost more than the rest of the routing.
        func named(_ name: StaticString) -> Bool {
            guard first.count == name.utf8CodeUnitCount else { return false }
            for index in 0..<first.count where first[index] != name.utf8Start[index] { return false }
            return true
        }
        // The resource routes first: they are nearly all the traffic.
        if named("files") { return segments >= 2 ? .files : nil }
        if named("bytes") { return segments == 2 ? .bytes : nil }
        if first.isEmpty { return segments == 1 ? .index : nil }
        if named("healthz") { return segments == 1 ? .healthz : nil }
        if named("redirect") { return segments >= 3 ? .redirect : nil }
        if named("redirect-loop") { return segments == 1 ? .redirectLoop : nil }
        if named("redirect-to") { return segments == 1 ? .redirectTo : nil }
        // `/scenario/{name}/{run}[/{route}]`, and the same with `/~/{file}` after it (`ScenarioPath`).
        if named("scenario") { return segments >= 3 ? .scenario : nil }
        if named("_control") { return .control }
        if named("_hub") { return segments >= 7 ? .hub : nil }
        return nil
    }
}

/// A `/bytes/` or `/files/` resource path, split once into its kind and what follows the prefix.
struct ResourcePath: Sendable {
    /// Generated content or a file below the root.
    enum Kind: Sendable {
        /// `/bytes/{size}`.
        case bytes
        /// `/files/{path}`, or a scenario resource elsewhere.
        case files
    }

    /// The whole path, still encoded, for messages.
    let path: Substring
    /// What the path names.
    let kind: Kind
    /// The size text of `/bytes/{size}`, or the still-encoded file path of `/files/{path}`.
    let rest: Substring

    /// The parts as given.
    private init(path: Substring, kind: Kind, rest: Substring) {
        self.path = path
        self.kind = kind
        self.rest = rest
    }

    /// A path the router has already matched to `kind`, so it starts with `/bytes/` or `/files/`.
    init(_ path: Substring, kind: Kind) {
        switch kind {
        case .bytes:
            self.init(path: path, kind: kind, rest: path.dropFirst("/bytes/".count))
        case .files:
            // Dropped as bytes (dropping Characters walks grapheme boundaries).
            let start = path.utf8.index(path.utf8.startIndex, offsetBy: "/files/".utf8.count)
            self.init(path: path, kind: kind, rest: path[start...])
        }
    }

    /// A scenario's resource path: `/bytes/...` is generated content, and anything else is read as a file
    /// path below the root.
    init(_ path: Substring) {
        if path.hasUTF8Prefix("/bytes/") {
            self.init(path, kind: .bytes)
        } else if path.hasUTF8Prefix("/files/") {
            self.init(path, kind: .files)
        } else {
            // A scenario resource elsewhere keeps the old reading.
            self.init(path: path, kind: .files, rest: path.dropFirst("/files/".count))
        }
    }
}
