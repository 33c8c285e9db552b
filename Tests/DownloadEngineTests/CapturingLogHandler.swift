import Foundation
import Logging
import NIOConcurrencyHelpers

/// A log handler that keeps every line, with its metadata, for a test to look at or to print when it fails.
struct CapturingLogHandler: LogHandler {
    let lines: NIOLockedValueBox<[String]>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    init(_ lines: NIOLockedValueBox<[String]>) { self.lines = lines }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        // Seconds on the monotonic clock, so a failure shows how long passed between two lines.
        let now = Double(DispatchTime.now().uptimeNanoseconds) / 1e9
        let stamp = String(format: "%.3f", now)
        lines.withLockedValue { $0.append("\(stamp) \(event.level) \(event.message) \(merged)") }
    }
}
