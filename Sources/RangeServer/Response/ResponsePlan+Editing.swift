extension ResponsePlan {
    /// Replaces the value of a single-range 206's `Content-Range` with `value(first, last)` of the range its body
    /// carries; a multipart 206 (no such field) or any other answer is left alone.
    ///
    /// - Parameters:
    ///   - value: the new value, from the first and last byte positions served.
    mutating func replaceSingleRangeContentRange(_ value: (_ first: UInt64, _ last: UInt64) -> String) {
        guard status == 206, case .content(_, let offset, let length) = body, length > 0,
            let index = headers.firstIndex(where: { $0.name == "Content-Range" })
        else { return }
        headers[index].value = value(offset, offset + length - 1)
    }
}
