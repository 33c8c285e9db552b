import Foundation
import PropertyBased
import Testing

@testable import DownloadEngine

@Suite("Task record as a JSON line")
struct TaskRecordJSONLineTests {
    /// What the task log was written with before: the line must stay byte for byte the same.
    private static let reference: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()

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

    @Test("the hand-written line is what JSONEncoder wrote, and decodes back to the same record")
    func sameAsJSONEncoder() async {
        let characters = Gen.element(of: Array("ab/\\\"\n\r\t\u{0}\u{8}\u{c}\u{1f} é🎉:{}[],"))
        let input = zip(
            characters.array(of: 0...24).map { String($0.compactMap { $0 }) }, Gen.int64(in: 0...(1 << 40)), Gen.bool,
            Gen.int(in: 0...4_000_000_000))
        await propertyCheck(count: 500, input: input) { text, number, full, seconds in
            let record = Self.record(text, number, full, Double(seconds))
            let expected = Array(try Self.reference.encode(record)) + [0x0A]
            #expect(record.jsonLine == expected)
            let decoded = try StateStore.decode(Data(record.jsonLine.dropLast()))
            #expect(decoded.id == record.id && decoded.error == record.error && decoded.redirects == record.redirects)
        }
    }
}
