import Foundation
import HTTPVocabulary

/// How long a response's `Retry-After` asks a client to wait, as the judge reads it (RFC 9110 §10.2.3): delay-seconds,
/// or an HTTP-date taken relative to when the response was made.
enum RetryAfterRule {
    /// The wait a `Retry-After` value asks for, in milliseconds.
    ///
    /// A date is measured from the response's `Date` field when it has one, else from `responseTime` (the journal's
    /// time of the response); a date at or before that gives zero, as it asks for no wait.
    ///
    /// - Parameters:
    ///   - value: the field value, e.g. `120` or `Sun, 06 Nov 1994 08:49:37 GMT` (any of RFC 9110's three date forms).
    ///   - responseDate: the response's `Date` field, if known.
    ///   - responseTime: when the response was made, in milliseconds since 1970, if known.
    /// - Returns: the wait; nil when the value is neither form, or a date has nothing to be measured from.
    static func wait(_ value: String, responseDate: String? = nil, responseTime: Int64?) -> Int64? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if !text.isEmpty, text.utf8.count <= 12, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let seconds = Int64(text)
        {
            return seconds * 1000
        }
        guard let date = HTTPDate(parsing: text) else { return nil }
        let reference =
            responseDate.flatMap { HTTPDate(parsing: $0) }.map { $0.secondsSince1970 * 1000 } ?? responseTime
        guard let reference else { return nil }
        let wait = date.secondsSince1970.multipliedReportingOverflow(by: 1000)
        guard !wait.overflow else { return nil }
        return max(0, wait.partialValue - reference)
    }
}
