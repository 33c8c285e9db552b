extension ResponseBody {
    /// Fills `target` with the body's bytes at `position`, every front end's one way to produce them.
    ///
    /// - Returns: `false` when the source could not be read in full (a file that shrank or failed).
    func fill(_ target: UnsafeMutableRawBufferPointer, position: UInt64) -> Bool {
        switch self {
        case .empty:
            return target.isEmpty
        case .literal(let bytes):
            let start = Int(position)
            bytes.withUnsafeBytes { source in
                target.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[start..<start + target.count]))
            }
            return true
        case .content(let source, let offset, _):
            return source.read(offset: offset + position, into: target)
        case .multipart(let multipart, let source):
            var written = 0
            var segmentStart: UInt64 = 0
            for segment in multipart.segments {
                let segmentLength = segment.byteCount
                let segmentEnd = segmentStart + segmentLength
                let cursor = position + UInt64(written)
                if cursor < segmentEnd && written < target.count {
                    let inner = cursor - segmentStart
                    let count = Int(min(UInt64(target.count - written), segmentEnd - cursor))
                    let slice = UnsafeMutableRawBufferPointer(rebasing: target[written..<written + count])
                    switch segment {
                    case .literal(let bytes):
                        bytes.withUnsafeBytes { source in
                            slice.copyMemory(
                                from: UnsafeRawBufferPointer(rebasing: source[Int(inner)..<Int(inner) + count]))
                        }
                    case .payload(let range):
                        guard source.read(offset: range.lowerBound + inner, into: slice) else { return false }
                    }
                    written += count
                }
                segmentStart = segmentEnd
                if written == target.count { break }
            }
            return written == target.count
        }
    }
}

extension MultipartByteranges.Segment {
    /// How many body bytes this segment contributes.
    var byteCount: UInt64 {
        switch self {
        case .literal(let bytes): UInt64(bytes.count)
        case .payload(let range): range.upperBound - range.lowerBound + 1
        }
    }
}
