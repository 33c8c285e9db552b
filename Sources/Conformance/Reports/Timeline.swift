import RangeServer

/// Draws a run as an SVG timeline: one row per request in arrival order, then what each output holds.
///
/// Each row shows, on the resource's length, the byte range the request asked for (a dashed box) and the bytes the
/// server actually sent (a bar in the colour of the representation), hatched where the server had already sent
/// those bytes, crossed at the end when the response was cut short; a redirect shows where it sent the client.
/// Beside it, on the run's clock, when the request arrived and when its response ended. Under the rows, each output
/// is drawn on the same scale in the colours of the versions its blocks match, with splices in red.
///
/// The SVG is self-contained (no scripts, no fonts, no external references), uses only presentation attributes (no
/// `<style>`, which inline in an HTML page would apply to the whole page), and carries a `<title>` on every row as
/// its tooltip and accessible text.
package enum Timeline {
    /// The timeline of one run.
    ///
    /// - Parameters:
    ///   - trace: the run.
    /// - Returns: an `<svg>` element, well-formed XML.
    public static func svg(_ trace: RunTrace) -> String { svg(trace, idPrefix: "tl\(fingerprint(trace))") }

    /// The timeline with its element ids (patterns, title) prefixed by `idPrefix`.
    ///
    /// A page holding several timelines needs a prefix per timeline: with shared ids every `url(#…)` resolves to
    /// the first, which browsers do not draw when it sits in a hidden section.
    static func svg(_ trace: RunTrace, idPrefix: String) -> String {
        var drawing = Drawing(trace: trace, idPrefix: idPrefix)
        drawing.draw()
        return drawing.finished()
    }

    /// A stable short hash of a trace's identity, for default element ids (FNV-1a over its name, arrivals and span).
    static func fingerprint(_ trace: RunTrace) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        let key = "\(trace.scenario)|\(trace.requests.map(\.arrival))|\(trace.spanMilliseconds)"
        for byte in key.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return String(hash, radix: 36)
    }

    /// An approximate size for people: `512 B`, `1.5 KiB`, `4 MiB`, `5 GiB`.
    static func approximateSize(_ bytes: UInt64) -> String {
        let units: [(String, UInt64)] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)]
        for (name, size) in units where bytes >= size {
            let tenths = (bytes * 10 + size / 2) / size
            return (tenths % 10 == 0 ? "\(tenths / 10)" : "\(tenths / 10).\(tenths % 10)") + " " + name
        }
        return "\(bytes) B"
    }

    /// Milliseconds as seconds with three decimals: `1.234 s`.
    static func seconds(_ milliseconds: Int64) -> String {
        let sign = milliseconds < 0 ? "-" : ""
        let value = abs(milliseconds)
        let fraction = String(value % 1000)
        return "\(sign)\(value / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction) s"
    }

    /// One line describing a request, for its row and its tooltip.
    static func summary(_ request: RunTrace.Request) -> String {
        var parts: [String] = []
        if let location = request.location { parts.append("→ \(location)") }
        if let range = request.rangeHeader { parts.append("Range \(range)") }
        if request.ifRange != nil { parts.append("If-Range") }
        if let sent = request.sent {
            parts.append("sent \(sent) (\(approximateSize(sent.count)))")
        } else if request.location == nil {
            parts.append(request.bodyBytesSent > 0 ? "\(request.bodyBytesSent) body bytes" : "no body")
        }
        let twice = request.sentTwice.reduce(0) { $0 + $1.count }
        if twice > 0 { parts.append("\(approximateSize(twice)) sent twice") }
        if request.outcome != .complete { parts.append(request.outcome.rawValue) }
        if let encoding = request.contentEncoding { parts.append(encoding) }
        parts += request.faults
        return parts.joined(separator: " · ")
    }

    /// Every fact of a request, one per line, for its tooltip.
    static func details(_ request: RunTrace.Request) -> String {
        var lines = [
            "#\(request.order) \(request.method) \(request.target) → \(request.status) (\(request.outcome.rawValue))"
        ]
        if let route = request.route {
            lines.append(
                "route \(route.isEmpty ? "(main)" : route)" + (request.attempt.map { ", attempt \($0)" } ?? ""))
        }
        if let range = request.rangeHeader {
            lines.append(
                "Range: \(range)"
                    + (request.requested.isEmpty
                        ? "" : " = \(request.requested.map(\.description).joined(separator: ", "))"))
        }
        if let ifRange = request.ifRange { lines.append("If-Range: \(ifRange)") }
        if let sent = request.sent {
            lines.append("sent \(sent): \(request.bodyBytesSent) of \(request.bodyBytesPlanned) planned body bytes")
        } else {
            lines.append("\(request.bodyBytesSent) of \(request.bodyBytesPlanned) planned body bytes sent")
        }
        if !request.sentTwice.isEmpty {
            lines.append("sent twice: " + request.sentTwice.map(\.description).joined(separator: ", "))
        }
        if let validator = request.validator { lines.append("validator \(validator)") }
        if let version = request.version { lines.append("version \(version)") }
        if let encoding = request.contentEncoding { lines.append("Content-Encoding: \(encoding)") }
        if let location = request.location { lines.append("Location: \(location)") }
        if !request.faults.isEmpty { lines.append("faults: " + request.faults.joined(separator: ", ")) }
        if request.launch != nil { lines.append("launch \(request.launchLabel)") }
        lines.append(
            "arrived +\(seconds(request.startMilliseconds)), ended +\(seconds(request.endMilliseconds)), "
                + "connection \(request.connection)")
        return lines.joined(separator: "\n")
    }
}

/// The drawing of one timeline: geometry and the SVG text being written.
private struct Drawing {
    let trace: RunTrace
    let idPrefix: String
    let palette: TimelinePalette
    /// The length the byte axis spans: the resource's, or more when a response or output ran past it.
    let scale: UInt64
    var text = ""
    var y = 0.0

    static let width = 960.0
    static let labelX = 8.0
    static let bytesX = 200.0
    static let bytesWidth = 520.0
    static let timeX = 750.0
    static let timeWidth = 190.0
    static let rowHeight = 40.0
    static let barHeight = 14.0
    static let outputHeight = 46.0

    init(trace: RunTrace, idPrefix: String) {
        self.trace = trace
        self.idPrefix = idPrefix
        palette = TimelinePalette(trace)
        var longest = trace.resourceLength
        for request in trace.requests {
            longest = max(longest, request.sent?.end ?? 0, request.requested.map(\.end).max() ?? 0)
        }
        for output in trace.outputs { longest = max(longest, output.size) }
        scale = max(longest, 1)
    }

    /// The x coordinate of a byte offset.
    func x(_ offset: UInt64) -> Double { Self.bytesX + Double(offset) / Double(scale) * Self.bytesWidth }

    /// The x coordinate of a time on the run's clock.
    func time(_ milliseconds: Int64) -> Double {
        Self.timeX + Double(max(0, milliseconds)) / Double(max(trace.spanMilliseconds, 1)) * Self.timeWidth
    }

    /// A coordinate with at most one decimal, in the C locale whatever the process's.
    static func number(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        let sign = tenths < 0 ? "-" : ""
        let magnitude = abs(tenths)
        return magnitude % 10 == 0 ? "\(sign)\(magnitude / 10)" : "\(sign)\(magnitude / 10).\(magnitude % 10)"
    }

    static func escaped(_ text: String) -> String { TextEscaping.markup(text) }

    /// Cuts a label to `count` characters with an ellipsis; the tooltip keeps the whole.
    static func clipped(_ text: String, _ count: Int) -> String {
        text.count <= count ? text : String(text.prefix(count - 1)) + "…"
    }

    mutating func rect(
        _ x: Double, _ y: Double, _ width: Double, _ height: Double, fill: String, extra: String = ""
    ) {
        text +=
            "<rect x=\"\(Self.number(x))\" y=\"\(Self.number(y))\" width=\"\(Self.number(max(width, 1)))\""
            + " height=\"\(Self.number(height))\" fill=\"\(fill)\"\(extra)/>"
    }

    mutating func line(_ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double, stroke: String, extra: String = "") {
        text +=
            "<line x1=\"\(Self.number(x1))\" y1=\"\(Self.number(y1))\" x2=\"\(Self.number(x2))\""
            + " y2=\"\(Self.number(y2))\" stroke=\"\(stroke)\"\(extra)/>"
    }

    mutating func label(_ x: Double, _ y: Double, _ content: String, extra: String = "") {
        text += "<text x=\"\(Self.number(x))\" y=\"\(Self.number(y))\"\(extra)>\(Self.escaped(content))</text>"
    }

    var twiceFill: String { "url(#\(idPrefix)-twice)" }
    var noMatchFill: String { "url(#\(idPrefix)-nomatch)" }

    mutating func draw() {
        drawDefinitions()
        y = 22
        let requests = trace.requests.count
        label(
            Self.labelX, y,
            "\(trace.scenario): \(requests) request\(requests == 1 ? "" : "s") over "
                + Timeline.seconds(trace.spanMilliseconds)
                + ", resource \(Timeline.approximateSize(trace.resourceLength))",
            extra: " font-size=\"14\" font-weight=\"bold\"")
        drawLegend()
        drawAxes()
        if trace.requests.isEmpty {
            y += 22
            label(Self.bytesX, y, "no request reached the server", extra: " fill=\"#555\"")
            y += 12
        }
        for request in trace.requests { drawRow(request) }
        drawOutputs()
    }

    mutating func drawDefinitions() {
        // Diagonal stripes over the bar's own colour: bytes the server sent twice.
        text += "<defs><pattern id=\"\(idPrefix)-twice\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\""
        text +=
            " patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#ffffff\" fill-opacity=\"0.25\"/>"
        text += "<rect width=\"2.5\" height=\"6\" fill=\"#000000\" fill-opacity=\"0.6\"/></pattern>"
        // A red cross-hatch: output bytes matching no version.
        text += "<pattern id=\"\(idPrefix)-nomatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\">"
        text += "<rect width=\"6\" height=\"6\" fill=\"#fbe3e3\"/>"
        text += "<path d=\"M0 0L6 6M6 0L0 6\" stroke=\"\(TimelinePalette.alarm)\" stroke-width=\"1\"/></pattern></defs>"
    }

    /// What a legend entry shows.
    enum Swatch {
        case fill(String)
        case requested
        case twice
        case cut
        case noMatch
        case splice
    }

    /// A legend entry's sample, 18 wide, its text's baseline at `y`.
    mutating func swatch(_ kind: Swatch, _ x: Double, _ y: Double) {
        switch kind {
        case .fill(let colour): rect(x, y - 9, 18, 10, fill: colour)
        case .requested: rect(x, y - 11, 18, 13, fill: "none", extra: " stroke=\"#444\" stroke-dasharray=\"3 2\"")
        case .twice:
            rect(x, y - 9, 18, 10, fill: TimelinePalette.unknown)
            rect(x, y - 9, 18, 10, fill: twiceFill)
        case .cut: cut(x + 9, y - 4)
        case .noMatch: rect(x, y - 9, 18, 10, fill: noMatchFill)
        case .splice: line(x + 9, y - 12, x + 9, y + 3, stroke: TimelinePalette.alarm, extra: " stroke-width=\"3\"")
        }
    }

    mutating func drawLegend() {
        y += 22
        var items: [(Swatch, String)] = palette.entries.map { entry in
            switch entry.key {
            case .version(let version):
                (.fill(entry.colour), "version \(version)" + (version == trace.expectedVersion ? " (expected)" : ""))
            case .validator(let validator): (.fill(entry.colour), "validator \(Drawing.clipped(validator, 24))")
            }
        }
        items += [
            (.requested, "range asked for"), (.twice, "sent twice"), (.cut, "cut short"),
            (.noMatch, "matches no version"), (.splice, "splice"),
        ]
        var x = Self.labelX
        text += "<g>"
        for (kind, name) in items {
            // Labels are measured roughly (about 6 units a character at this size); a line wraps before the edge.
            let advance = 24 + Double(name.count) * 6.2 + 14
            if x + advance > Self.width {
                x = Self.labelX
                y += 18
            }
            swatch(kind, x, y)
            label(x + 24, y, name)
            x += advance
        }
        text += "</g>"
    }

    /// A small X where a response was cut short.
    mutating func cut(_ x: Double, _ y: Double) {
        let extra = " stroke-width=\"2\""
        line(x - 4, y - 5, x + 4, y + 5, stroke: "#000000", extra: extra)
        line(x - 4, y + 5, x + 4, y - 5, stroke: "#000000", extra: extra)
    }

    mutating func drawAxes() {
        y += 30
        label(Self.labelX, y, "request", extra: " font-weight=\"bold\"")
        label(Self.bytesX, y - 14, "bytes of the resource", extra: " font-weight=\"bold\"")
        label(Self.timeX, y - 14, "time", extra: " font-weight=\"bold\"")
        text += "<g fill=\"#555\" font-size=\"10\">"
        for quarter in 0...4 {
            let offset = scale / 4 * UInt64(quarter) + (quarter == 4 ? scale % 4 : 0)
            let anchor = quarter == 0 ? "start" : quarter == 4 ? "end" : "middle"
            label(x(offset), y, Timeline.approximateSize(offset), extra: " text-anchor=\"\(anchor)\"")
        }
        label(Self.timeX, y, "0 s")
        label(Self.timeX + Self.timeWidth, y, Timeline.seconds(trace.spanMilliseconds), extra: " text-anchor=\"end\"")
        text += "</g>"
        y += 6
        let rowsHeight = Double(max(trace.requests.count, 1)) * Self.rowHeight
        // Light grid lines through the rows at the quarters of the resource, and its end.
        text += "<g stroke=\"#dddddd\">"
        for quarter in 0...4 {
            let offset = scale / 4 * UInt64(quarter) + (quarter == 4 ? scale % 4 : 0)
            line(x(offset), y, x(offset), y + rowsHeight, stroke: "#dddddd")
        }
        line(Self.timeX, y, Self.timeX, y + rowsHeight, stroke: "#dddddd")
        line(Self.timeX + Self.timeWidth, y, Self.timeX + Self.timeWidth, y + rowsHeight, stroke: "#dddddd")
        if scale > trace.resourceLength {
            // The resource's real end, when something ran past it.
            line(
                x(trace.resourceLength), y, x(trace.resourceLength), y + rowsHeight, stroke: "#555555",
                extra: " stroke-dasharray=\"2 2\"")
        }
        text += "</g>"
    }

    mutating func drawRow(_ request: RunTrace.Request) {
        let top = y
        let barTop = top + 5
        let colour = palette.colour(of: TimelinePalette.key(of: request))
        text += "<g class=\"request\"><title>\(Self.escaped(Timeline.details(request)))</title>"
        if request.order % 2 == 0 { rect(0, top, Self.width, Self.rowHeight, fill: "#f6f6f6") }
        label(
            Self.labelX, top + 16, "#\(request.order) \(request.method) \(request.status)",
            extra: " font-weight=\"bold\"")
        var place = request.route.map { $0.isEmpty ? "main" : $0 } ?? Drawing.clipped(request.target, 24)
        if let attempt = request.attempt { place += " · attempt \(attempt)" }
        label(Self.labelX, top + 31, "\(place) · conn \(request.connection)", extra: " fill=\"#555\" font-size=\"10\"")
        for span in request.requested {
            rect(
                x(span.start), barTop - 3, x(span.end) - x(span.start), Self.barHeight + 6, fill: "none",
                extra: " stroke=\"#444\" stroke-dasharray=\"3 2\"")
        }
        if let sent = request.sent {
            rect(x(sent.start), barTop, x(sent.end) - x(sent.start), Self.barHeight, fill: colour)
            for twice in request.sentTwice {
                rect(x(twice.start), barTop, x(twice.end) - x(twice.start), Self.barHeight, fill: twiceFill)
            }
            if request.outcome != .complete { cut(x(sent.end), barTop + Self.barHeight / 2) }
        } else if request.outcome != .complete {
            cut(x(0) + 5, barTop + Self.barHeight / 2)
        }
        if request.location != nil {
            label(Self.bytesX, barTop + 11, "↪ redirect \(request.status)", extra: " fill=\"#333\"")
        }
        label(Self.bytesX, top + 33, Drawing.clipped(Timeline.summary(request), 88), extra: " font-size=\"10\"")
        let start = time(request.startMilliseconds)
        rect(
            start, barTop, time(request.endMilliseconds) - start, Self.barHeight, fill: colour,
            extra: " fill-opacity=\"0.7\"")
        label(
            Self.timeX, top + 33,
            "+\(Timeline.seconds(request.startMilliseconds)) → +\(Timeline.seconds(request.endMilliseconds))",
            extra: " font-size=\"10\"")
        text += "</g>"
        y += Self.rowHeight
    }

    mutating func drawOutputs() {
        y += 28
        label(Self.labelX, y, "output content", extra: " font-weight=\"bold\"")
        label(Self.bytesX, y, "which version each block of the output holds", extra: " fill=\"#555\"")
        y += 8
        if trace.outputs.isEmpty {
            y += 18
            label(Self.bytesX, y, "no output was inspected", extra: " fill=\"#555\"")
        }
        for output in trace.outputs {
            let top = y + 6
            let splices = output.splices
            var description = "\(output.name): "
            if !output.exists {
                description += "missing"
            } else {
                description += "\(output.size) bytes; "
                description += output.segments.map { segment in
                    "\(RunTrace.ByteSpan(segment.range)) "
                        + (segment.version.map { "version \($0)" } ?? "matches no version")
                }.joined(separator: ", ")
                if !splices.isEmpty {
                    description += "; spliced at " + splices.map(String.init).joined(separator: ", ")
                }
            }
            text += "<g class=\"output\"><title>\(Self.escaped(description))</title>"
            label(Self.labelX, top + 13, Drawing.clipped(output.name, 28), extra: " font-weight=\"bold\"")
            label(
                Self.labelX, top + 28, output.exists ? Timeline.approximateSize(output.size) : "missing",
                extra: " fill=\"#555\" font-size=\"10\"")
            // The resource's extent, so a short output shows what it lacks.
            rect(
                x(0), top, x(trace.resourceLength) - x(0), 18, fill: "#ffffff",
                extra: " stroke=\"#999999\" stroke-dasharray=\"3 2\"")
            for segment in output.segments {
                let fill = segment.version.map { palette.colour(of: .version($0)) } ?? noMatchFill
                rect(
                    x(segment.range.lowerBound), top, x(segment.range.upperBound) - x(segment.range.lowerBound), 18,
                    fill: fill)
            }
            for splice in splices {
                line(
                    x(splice), top - 5, x(splice), top + 23, stroke: TimelinePalette.alarm, extra: " stroke-width=\"3\""
                )
            }
            var caption = output.segments.map { segment in
                (segment.version.map { "v\($0)" } ?? "no version") + " \(RunTrace.ByteSpan(segment.range))"
            }.joined(separator: " · ")
            if !splices.isEmpty { caption = "spliced: " + caption }
            if !output.exists { caption = "no file" } else if output.segments.isEmpty { caption = "empty" }
            label(
                Self.bytesX, top + 33, Drawing.clipped(caption, 100),
                extra: splices.isEmpty ? " font-size=\"10\"" : " font-size=\"10\" fill=\"\(TimelinePalette.alarm)\"")
            text += "</g>"
            y += Self.outputHeight
        }
        y += 8
    }

    func finished() -> String {
        let height = Self.number(y)
        let title =
            "Timeline of \(trace.scenario): \(trace.requests.count) requests, \(trace.outputs.count) outputs"
        return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Self.number(Self.width))\" height=\"\(height)\""
            + " viewBox=\"0 0 \(Self.number(Self.width)) \(height)\" role=\"img\" aria-labelledby=\"\(idPrefix)-title\""
            + " font-family=\"sans-serif\" font-size=\"11\" fill=\"#222222\">"
            + "<title id=\"\(idPrefix)-title\">\(Self.escaped(title))</title>"
            + text + "</svg>"
    }
}
