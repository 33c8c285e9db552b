import Foundation

/// `Content-Range: bytes START-END/LENGTH` (a 206) or `bytes */LENGTH` (a 416), as far as a resume needs it.
struct ContentRange {
    /// The first byte sent; nil for `*`.
    var start: Int64?
    /// The whole file's length; nil for `*`.
    var length: Int64?

    init?(_ text: String) {
        let parts = text.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bytes" else { return nil }
        let rangeAndLength = parts[1].split(separator: "/", maxSplits: 1)
        guard rangeAndLength.count == 2 else { return nil }
        start = rangeAndLength[0].split(separator: "-").first.flatMap { Int64($0) }
        length = Int64(rangeAndLength[1])
    }
}
