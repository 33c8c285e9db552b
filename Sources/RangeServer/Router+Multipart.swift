extension Router {
    /// A `multipart/byteranges` 206 of `ranges` (several asked for, or one under `multipart=always`), with `headers`
    /// before its Content-Type.
    func multipartPlan(
        _ request: IncomingRequest, _ ranges: [ClosedRange<UInt64>], of representation: Representation,
        headers: [HeaderField]
    ) -> ResponsePlan {
        let multipart = MultipartByteranges(
            ranges: ranges, completeLength: representation.length, contentType: representation.contentType,
            boundary: MultipartByteranges.makeBoundary(
                seed: UInt64(truncatingIfNeeded: request.connectionID) &* 0x9E37_79B9 &+ UInt64(ranges.count))
        )
        return ResponsePlan(
            status: 206, headers: headers + [HeaderField("Content-Type", multipart.contentTypeHeader)],
            body: .multipart(multipart, representation.source))
    }
}
