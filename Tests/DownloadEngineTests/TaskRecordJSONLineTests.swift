import Foundation
import PropertyBased
import Testing

@testable import DownloadEngine

@Suite("Task record as a JSON line")
struct TaskRecordJSONLineTests {
    private static func record(_ text: String, _ number: Int64, _ full: Bool, _ seconds: Double) -> TaskRecord {
        var record = TaskRecord(
            id: DownloadTaskID.random(), url: "http://127.0.0.1:8080/files/\(text)", destination: "../out/\(text)",
            partial: "x.part", state: full ? .completed : .paused, created: Date(timeIntervalSince1970: seconds),
            updated: Date(timeIntervalSince1970: seconds + 0.75))
        guard full else { return record }
        record.resolvedURL = "http://h/\(text)?a=b&c=\"d\""
        record.redirects = [
            RedirectHop(from: "http://a/\(text)", to: "http://b/", status: 302),
            RedirectHop(from: "http://b/", to: "http://c/\\", status: 308),
        ]
        record.expectedSHA256 = String(repeating: "ab", count: 32)
        record.overwrite = true
        record.etag = "W/\"\(text)\""
        record.lastModified = "Sat, 02 Jan 2021 00:00:00 GMT"
        record.totalLength = number
        record.reprDigestSHA256 = "r"
        record.recordedLength = -number
        record.sha256 = text
        record.error = "line\nbreak\t\u{1}\u{7f} é 🎉"
        record.errorKind = "network"
        return record
    }

    @Test("a line is one compact JSON object that decodes back to the same record")
    func roundTrip() async {
        let characters = Gen.element(of: Array("ab/\\\"\n\r\t\u{0}\u{8}\u{c}\u{1f} é🎉:{}[],"))
        let input = zip(
            characters.array(of: 0...24).map { String($0.compactMap { $0 }) }, Gen.int64(in: 0...(1 << 40)), Gen.bool,
            Gen.int(in: 0...4_000_000_000))
        await propertyCheck(count: 500, input: input) { text, number, full, seconds in
            var record = Self.record(text, number, full, Double(seconds))
            let line = try record.jsonLine()
            #expect(line.last == 0x0A && line.dropLast().allSatisfy { $0 != 0x0A })
            let decoded = try StateStore.decode(Data(line.dropLast()))
            // Dates are written in whole seconds.
            record.updated = Date(timeIntervalSince1970: Double(seconds))
            #expect(decoded == record)
        }
    }

    @Test("the line's bytes: sorted keys, no spaces, slashes unescaped, nil fields left out")
    func pinnedBytes() throws {
        var record = Self.record("a/b", 7, false, 0)
        record.id = DownloadTaskID("00000000-0000-0000-0000-000000000001")
        let expected = [
            #"{"created":"1970-01-01T00:00:00Z","destination":"../out/a/b","format":"rangefetch-task","#,
            #""id":"00000000-0000-0000-0000-000000000001","overwrite":false,"partial":"x.part","#,
            #""recordedLength":0,"redirects":[],"state":"paused","updated":"1970-01-01T00:00:00Z","#,
            #""url":"http://127.0.0.1:8080/files/a/b","version":1}"#, "\n",
        ].joined()
        #expect(String(decoding: try record.jsonLine(), as: UTF8.self) == expected)
    }
}
