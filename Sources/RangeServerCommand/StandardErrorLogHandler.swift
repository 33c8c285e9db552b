import Logging

/// Writes each message to stderr as one line, the message alone: `rangeserver`'s access-log lines and diagnostics
/// keep the format scripts and docs/faults.md read (`PEER "METHOD TARGET VERSION" STATUS BYTES OUTCOME MSms`).
///
/// The metadata is not printed: the server puts every field of an access-log line in its message as well.
struct StandardErrorLogHandler: LogHandler {
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    init(logLevel: Logger.Level) {
        self.logLevel = logLevel
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        printError(event.message.description)
    }
}
