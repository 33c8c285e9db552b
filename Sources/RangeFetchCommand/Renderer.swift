import DownloadEngine
import Foundation
import SystemCalls

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Turns engine events into JSON lines, plain lines, or live progress bars.
actor Renderer {
    enum Mode { case json, plain, terminal }

    private let mode: Mode
    private var names: [DownloadTaskID: String] = [:]
    private var lines: [DownloadTaskID: String] = [:]
    private var lineOrder: [DownloadTaskID] = []
    private var drawnLines = 0
    private var lastDraw = ContinuousClock.now - .seconds(1)
    private var lastPlain: [DownloadTaskID: ContinuousClock.Instant] = [:]

    init(mode: Mode) { self.mode = mode }

    func name(_ id: DownloadTaskID, _ name: String) { names[id] = name }

    /// Says that a revalidated download was not modified (a 304) and its file kept: a `not-modified` event with
    /// `--json`, else a line.
    func notModified(_ id: DownloadTaskID, path: String) {
        guard mode != .json else {
            var line = EventLine("not-modified", id.rawValue)
            line.path = path
            let data = (try? eventEncoder.encode(line)) ?? Data(#"{"event":"unencodable"}"#.utf8)
            return emit(String(decoding: data, as: UTF8.self))
        }
        emit("\(display(id)): not modified, kept \(path)")
    }

    func consume(_ events: AsyncStream<DownloadEvent>) async {
        for await event in events { render(event) }
        if mode == .terminal { draw(force: true) }
    }

    private func display(_ id: DownloadTaskID) -> String { names[id] ?? String(id.rawValue.prefix(8)) }

    private func render(_ event: DownloadEvent) {
        switch mode {
        case .json: emit(json(event))
        case .plain: plain(event)
        case .terminal: terminal(event)
        }
    }

    private func emit(_ line: String) {
        writeStandardOutput(line + "\n")
    }

    // MARK: JSON

    private func json(_ event: DownloadEvent) -> String {
        var line: EventLine
        switch event {
        case .added(let id, let url):
            line = EventLine("added", id.rawValue)
            line.url = url
            if names[id] == nil { names[id] = LexicalPath.lastComponent(urlPath(url)) }
        case .stateChanged(let id, let state):
            line = EventLine("state", id.rawValue)
            line.state = state.rawValue
        case .progress(let id, let p):
            line = EventLine("progress", id.rawValue)
            line.bytes = p.bytes
            line.speed = Int64(p.bytesPerSecond)
            line.total = p.total
            if let eta = p.eta, eta.isFinite { line.eta = (eta * 10).rounded() / 10 }
        case .redirected(let id, let hop):
            line = EventLine("redirect", id.rawValue)
            line.from = hop.from
            line.to = hop.to
            line.status = hop.status
        case .retrying(let id, let attempt, let delay, let error):
            let (s, atto) = delay.components
            line = EventLine("retry", id.rawValue)
            line.attempt = attempt
            line.delay = Double(s) + Double(atto) / 1e18
            line.error = error.message
            line.kind = error.kind
        case .completed(let id, let path, let sha256, let bytes):
            line = EventLine("completed", id.rawValue)
            line.path = path
            line.sha256 = .some(sha256)
            line.bytes = bytes
        case .failed(let id, let error):
            line = EventLine("failed", id.rawValue)
            line.error = error.message
            line.kind = error.kind
            line.status = error.status
        case .groupFinished(let id, _):
            line = EventLine("group-finished", id.rawValue)
        }
        // Every member is a string, an integer or a finite number, which always encode.
        let data = (try? eventEncoder.encode(line)) ?? Data(#"{"event":"unencodable"}"#.utf8)
        return String(decoding: data, as: UTF8.self)
    }

    private let eventEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    // MARK: Plain lines

    private func plain(_ event: DownloadEvent) {
        switch event {
        case .added(let id, let url):
            if names[id] == nil { names[id] = LexicalPath.lastComponent(urlPath(url)) }
        case .stateChanged(let id, let state):
            if state == .running || state == .paused || state == .cancelled {
                emit("\(display(id)): \(state.rawValue)")
            }
            // The first progress line comes 5 s after the start: a download that ends sooner says only
            // "running" and "completed" (with 500 small files, progress lines were a third of the output).
            if state == .running, lastPlain[id] == nil { lastPlain[id] = .now }
        case .progress(let id, let p):
            let now = ContinuousClock.now
            if let last = lastPlain[id], now - last < .seconds(5) { return }
            lastPlain[id] = now
            emit("\(display(id)): \(describe(p))")
        case .redirected(let id, let hop):
            emit("\(display(id)): redirect \(hop.status) -> \(hop.to)")
        case .retrying(let id, let attempt, let delay, let error):
            emit("\(display(id)): retry \(attempt) in \(format(delay)): \(error)")
        case .completed(let id, let path, let sha256, let bytes):
            emit(
                "\(display(id)): completed \(bytes) bytes -> \(path) "
                    + (sha256.map { "sha256=\($0)" } ?? "(no digest)"))
        case .failed(let id, let error):
            emit("\(display(id)): failed: \(error)")
        case .groupFinished:
            break
        }
    }

    // MARK: Terminal progress bars

    private func terminal(_ event: DownloadEvent) {
        switch event {
        case .added(let id, let url):
            if names[id] == nil { names[id] = LexicalPath.lastComponent(urlPath(url)) }
            if lines[id] == nil { lineOrder.append(id) }
            lines[id] = "\(display(id)): added"
        case .stateChanged(let id, let state):
            if state != .running, state != .completed { lines[id] = "\(display(id)): \(state.rawValue)" }
        case .progress(let id, let p):
            lines[id] = "\(display(id)) " + bar(p) + " " + describe(p)
        case .redirected:
            break
        case .retrying(let id, let attempt, let delay, let error):
            lines[id] = "\(display(id)): retry \(attempt) in \(format(delay)): \(error)"
        case .completed(let id, _, let sha256, let bytes):
            lines[id] =
                "\(display(id)): done \(formatBytes(bytes)) "
                + (sha256.map { "sha256=\($0.prefix(16))…" } ?? "(no digest)")
            draw(force: true)
            return
        case .failed(let id, let error):
            lines[id] = "\(display(id)): failed: \(error)"
            draw(force: true)
            return
        case .groupFinished:
            return
        }
        draw(force: false)
    }

    private func draw(force: Bool) {
        let now = ContinuousClock.now
        guard force || now - lastDraw >= .milliseconds(100) else { return }
        lastDraw = now
        var out = drawnLines > 0 ? "\u{1B}[\(drawnLines)A" : ""
        for id in lineOrder { out += "\r\u{1B}[2K" + (lines[id] ?? "") + "\n" }
        drawnLines = lineOrder.count
        writeStandardOutput(out)
    }

    private func bar(_ p: DownloadProgress) -> String {
        let width = 24
        guard let fraction = p.fraction else { return "[" + String(repeating: "?", count: width) + "]" }
        let filled = Int(fraction * Double(width))
        return "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled) + "]"
    }

    private func describe(_ p: DownloadProgress) -> String {
        var text = formatBytes(p.bytes)
        if let total = p.total { text += " / " + formatBytes(total) }
        text += "  " + formatBytes(Int64(p.bytesPerSecond)) + "/s"
        if let eta = p.eta, eta.isFinite { text += "  ETA \(Int(eta.rounded()))s" }
        return text
    }

    private func format(_ d: Duration) -> String {
        let (s, atto) = d.components
        return String(format: "%.1fs", Double(s) + Double(atto) / 1e18)
    }
}

func formatBytes(_ n: Int64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"]
    var value = Double(n)
    var unit = 0
    while value >= 1024, unit < units.count - 1 {
        value /= 1024
        unit += 1
    }
    guard unit > 0 else { return "\(n) B" }
    // One decimal without `String(format:)`, which goes through Foundation's locale-aware formatting.
    let tenths = Int64((value * 10).rounded())
    return "\(tenths / 10).\(tenths % 10) \(units[unit])"
}

/// Writes straight to file descriptor 1, so lines are not held in a buffer when the process is killed.
func writeStandardOutput(_ text: String) {
    var text = text
    // A closed or full stdout loses the line; there is nowhere left to report that.
    _ = text.withUTF8 { bytes in try? writeAll(STDOUT_FILENO, UnsafeRawBufferPointer(bytes)) }
}

/// One `--json` event line: `event` and `id`, then the members of that event; keys sorted, no spaces.
///
/// Members that an event does not have are left out, except `sha256` of `completed`, which is `null` when no
/// digest was computed (`--no-digest`: only the length was checked).
struct EventLine: Encodable {
    var event: String
    var id: String
    var url: String?
    var state: String?
    var bytes: Int64?
    var speed: Int64?
    var total: Int64?
    var eta: Double?
    var from: String?
    var to: String?
    var status: Int?
    var attempt: Int?
    var delay: Double?
    var error: String?
    var kind: String?
    var path: String?
    /// `.some(nil)` writes `"sha256":null`.
    var sha256: String??

    init(_ event: String, _ id: String) {
        self.event = event
        self.id = id
    }

    private enum CodingKeys: String, CodingKey {
        case event, id, url, state, bytes, speed, total, eta, from, to, status, attempt, delay, error, kind, path
        case sha256
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(event, forKey: .event)
        try container.encode(id, forKey: .id)
        try container.encodeIfPresent(url, forKey: .url)
        try container.encodeIfPresent(state, forKey: .state)
        try container.encodeIfPresent(bytes, forKey: .bytes)
        try container.encodeIfPresent(speed, forKey: .speed)
        try container.encodeIfPresent(total, forKey: .total)
        try container.encodeIfPresent(eta, forKey: .eta)
        try container.encodeIfPresent(from, forKey: .from)
        try container.encodeIfPresent(to, forKey: .to)
        try container.encodeIfPresent(status, forKey: .status)
        try container.encodeIfPresent(attempt, forKey: .attempt)
        try container.encodeIfPresent(delay, forKey: .delay)
        try container.encodeIfPresent(error, forKey: .error)
        try container.encodeIfPresent(kind, forKey: .kind)
        try container.encodeIfPresent(path, forKey: .path)
        if let sha256 { try container.encode(sha256, forKey: .sha256) }
    }
}
