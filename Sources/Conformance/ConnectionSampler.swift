import Foundation

/// Counts established TCP connections to a local port by reading `/proc/net/tcp` and `/proc/net/tcp6`
/// (Linux); elsewhere it reports nothing and the judge relies on the journal alone.
enum ConnectionSampler {
    static func established(toLocalPort port: Int) -> Int? {
        var count = 0
        var readAny = false
        let suffix = ":" + String(format: "%04X", port)
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let data = FileManager.default.contents(atPath: table) else { continue }
            readAny = true
            for line in String(decoding: data, as: UTF8.self).split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                if fields.count > 3, fields[1].hasSuffix(suffix), fields[3] == "01" { count += 1 }
            }
        }
        return readAny ? count : nil
    }
}
