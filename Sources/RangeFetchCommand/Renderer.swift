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
        var object: [(String, JSONValue)] = []
        switch event {
        case .added(let id, let url):
            object = [("event", "added"), ("id", .string(id.rawValue)), ("url", .string(url))]
            if names[id] == nil { names[id] = LexicalPath.lastComponent(urlPath(url)) }
        case .stateChanged(let id, let state):
            object = [("event", "state"), ("id", .string(id.rawValue)), ("state", .string(state.rawValue))]
        case .progress(let id, let p):
            object = [
                ("event", "progress"), ("id", .string(id.rawValue)), ("bytes", .int(p.bytes)),
                ("speed", .int(Int64(p.bytesPerSecond))),
            ]
            if let total = p.total { object.append(("total", .int(total))) }
            if let eta = p.eta, eta.isFinite { object.append(("eta", .double((eta * 10).rounded() / 10))) }
        case .redirected(let id, let hop):
            object = [
                ("event", "redirect"), ("id", .string(id.rawValue)), ("from", .string(hop.from)),
                ("to", .string(hop.to)), ("status", .int(Int64(hop.status))),
            ]
        case .retrying(let id, let attempt, let delay, let error):
            let (s, atto) = delay.components
            object = [
                ("event", "retry"), ("id", .string(id.rawValue)), ("attempt", .int(Int64(attempt))),
                ("delay", .double(Double(s) + Double(atto) / 1e18)), ("error", .string(error.message)),
                ("kind", .string(error.kind)),
            ]
        case .completed(let id, let path, let sha256, let bytes):
            // `sha256` is null when no digest was computed (--no-digest): only the length was checked.
            object = [
                ("event", "completed"), ("id", .string(id.rawValue)), ("path", .string(path)),
                ("sha256", sha256.map(JSONValue.string) ?? .null), ("bytes", .int(bytes)),
            ]
        case .failed(let id, let error):
            object = [
                ("event", "failed"), ("id", .string(id.rawValue)), ("error", .string(error.message)),
                ("kind", .string(error.kind)),
            ]
            if let status = error.status { object.append(("status", .int(Int64(status)))) }
        case .groupFinished(let id, _):
            object = [("event", "group-finished"), ("id", .string(id.rawValue))]
        }
        return JSONValue.line(object)
    }

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

/// The values of a `--json` event line.
///
/// Written by hand rather than with `JSONSerialization`, which cost about 85 µs per event (half of rangefetch's
/// user time for 500 small files in `--json` mode): keys sorted, no spaces, one object per line.
enum JSONValue: ExpressibleByStringLiteral {
    case string(String)
    case int(Int64)
    case double(Double)
    case null

    init(stringLiteral value: String) { self = .string(value) }

    /// One compact JSON object with its keys in sorted order.
    static func line(_ members: [(String, JSONValue)]) -> String {
        var out = "{"
        for (index, member) in members.sorted(by: { $0.0 < $1.0 }).enumerated() {
            if index > 0 { out += "," }
            out += quoted(member.0) + ":"
            switch member.1 {
            case .string(let text): out += quoted(text)
            case .int(let number): out += String(number)
            case .double(let number): out += number.isFinite ? "\(number)" : "null"
            case .null: out += "null"
            }
        }
        return out + "}"
    }

    /// A JSON string literal: quotes, backslashes and control characters escaped (the engine's task-log encoder).
    static func quoted(_ text: String) -> String {
        var out: [UInt8] = []
        appendJSONString(text, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}
