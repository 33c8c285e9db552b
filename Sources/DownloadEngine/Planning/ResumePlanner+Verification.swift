import Foundation

extension ResumePlanner {
    /// What the checks of a partial file that holds every byte say.
    enum Verdict: Hashable, Sendable {
        /// Length and digests agree: move the file into place.
        case verified
        /// The bytes are not the ones the server says it sent: fetch them again from zero.
        case restart(RestartReason)
        /// The file cannot become what was asked for: give up on the task.
        case fail(DownloadError)
    }

    /// Checks a finished partial file against the complete length, the user's checksum and the server's digest.
    ///
    /// A server digest that disagrees with the bytes comes first: the bytes were damaged on their way (a body longer
    /// than its `Content-Length`, bytes replaced by a proxy), so a fresh fetch can still succeed, and the user's
    /// checksum, which the damaged bytes fail too, is not the reason. A user's checksum that fails bytes the server
    /// vouches for is final.
    ///
    /// - Parameters:
    ///   - length: The partial file's length.
    ///   - totalLength: The complete length the responses declared, when known.
    ///   - sha256: The partial file's SHA-256, lower-case hex, when it was computed.
    ///   - expected: The user's SHA-256 for the file, when given.
    ///   - announced: The SHA-256 from the server's `Repr-Digest`, when it sent one.
    /// - Returns: the verdict.
    static func verify(
        length: Int64, totalLength: Int64?, sha256: String?, expected: String?, announced: String?
    ) -> Verdict {
        if let totalLength, totalLength != length {
            return .fail(.verificationFailed("length \(length), expected \(totalLength)"))
        }
        guard let sha256 else { return .verified }
        if let announced, announced != sha256 { return .restart(.digestMismatch) }
        if let expected = expected?.lowercased(), expected != sha256 {
            return .fail(.verificationFailed("SHA-256 \(sha256), expected \(expected)"))
        }
        return .verified
    }
}
