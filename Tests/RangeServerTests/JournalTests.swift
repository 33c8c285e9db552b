import Foundation
import NIOConcurrencyHelpers
import Testing

@testable import RangeServer

private func entry(
    run: String? = nil, scenario: String? = nil, target: String = "/bytes/1M", outcome: JournalOutcome = .complete
) -> JournalEntry {
    JournalEntry(
        time: "2026-11-21T20:05:31.123Z", method: "GET", target: target, scenario: scenario, run: run,
        route: scenario == nil ? nil : "", attempt: scenario == nil ? nil : 1,
        requestHeaders: ["range": "bytes=0-", "host": "127.0.0.1"], status: 206,
        responseHeaders: ["content-range": "bytes 0-1048575/1048576"], bodyBytesPlanned: 1_048_576,
        bodyBytesSent: 2_457_600, outcome: outcome, faults: ["drop-after=2400K"], connection: 3, peer: "127.0.0.1:5000"
    )
}

private func temporaryPath() -> String {
    NSTemporaryDirectory() + "journal-tests-" + UUID().uuidString + ".jsonl"
}

@Suite("Journal")
struct JournalTests {
    @Test("append assigns sequence numbers from 1")
    func sequenceNumbers() throws {
        let journal = try Journal(limit: 10)
        let first = journal.append(entry())
        let second = journal.append(entry())
        #expect(first.seq == 1)
        #expect(second.seq == 2)
        #expect(journal.entries().map(\.seq) == [1, 2])
        #expect(journal.entries()[0].target == "/bytes/1M")
    }

    @Test("the ring keeps the newest `limit` entries and counts the dropped ones")
    func ringBound() throws {
        let journal = try Journal(limit: 3)
        for index in 1...8 { journal.append(entry(target: "/t/\(index)")) }
        #expect(journal.count == 3)
        #expect(journal.droppedCount == 5)
        #expect(journal.entries().map(\.seq) == [6, 7, 8])
        #expect(journal.entries().map(\.target) == ["/t/6", "/t/7", "/t/8"])
    }

    @Test("a limit below 1 is rejected")
    func badLimit() {
        #expect(throws: RangeServerError.self) { _ = try Journal(limit: 0) }
    }

    @Test("filters by run, scenario and since combine")
    func filters() throws {
        let journal = try Journal()
        journal.append(entry())
        journal.append(entry(run: "r1", scenario: "a"))
        journal.append(entry(run: "r2", scenario: "a"))
        journal.append(entry(run: "r1", scenario: "b"))
        journal.append(entry(run: "r1", scenario: "a"))
        #expect(journal.entries().count == 5)
        #expect(journal.entries(run: "r1").map(\.seq) == [2, 4, 5])
        #expect(journal.entries(scenario: "a").map(\.seq) == [2, 3, 5])
        #expect(journal.entries(run: "r1", scenario: "a").map(\.seq) == [2, 5])
        #expect(journal.entries(since: 3).map(\.seq) == [4, 5])
        #expect(journal.entries(since: 0).count == 5)
        #expect(journal.entries(since: 5).isEmpty)
        #expect(journal.entries(run: "r1", scenario: "a", since: 2).map(\.seq) == [5])
        #expect(journal.entries(run: "nope").isEmpty)
    }

    @Test("clear empties entries and the dropped count, but sequence numbers keep increasing")
    func clear() throws {
        let journal = try Journal(limit: 2)
        for _ in 1...4 { journal.append(entry()) }
        #expect(journal.droppedCount == 2)
        journal.clear()
        #expect(journal.entries().isEmpty)
        #expect(journal.count == 0)
        #expect(journal.droppedCount == 0)
        #expect(journal.append(entry()).seq == 5)
        #expect(journal.entries(since: 4).map(\.seq) == [5])
        journal.append(entry())
        journal.append(entry())
        #expect(journal.entries().map(\.seq) == [6, 7])
    }

    @Test("JSON uses exactly the documented keys, with null scenario fields")
    func jsonKeys() throws {
        let bytes = entry().jsonBytes
        let object = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        #expect(
            Set(object.keys) == [
                "seq", "time", "method", "target", "scenario", "run", "route", "attempt", "requestHeaders", "status",
                "responseHeaders", "bodyBytesPlanned", "bodyBytesSent", "outcome", "faults", "connection", "peer",
                "arrival", "arrivalTime", "faultsApplied", "tls", "abandoned", "requestHeaderList",
                "responseHeaderList", "protocol", "stream", "alpn", "alpnOffered",
            ]
        )
        #expect(object["arrivalTime"] as? String == object["time"] as? String, "not given: the same as time")
        #expect(object["faultsApplied"] is NSNull)
        #expect(object["route"] is NSNull)
        #expect(object["attempt"] is NSNull)
        #expect(object["outcome"] as? String == "complete")
        #expect((object["requestHeaders"] as? [String: String])?["range"] == "bytes=0-")
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.hasPrefix(#"{"seq":0,"time":"2026-11-21T20:05:31.123Z","method":"GET""#))
        #expect(text.contains(#""requestHeaders":{"host":"127.0.0.1","range":"bytes=0-"}"#), "sorted header names")
        #expect(!text.contains("\n"))
    }

    @Test("hand-written JSON decodes back to an equal entry, escapes included")
    func jsonRoundTrip() throws {
        var tricky = entry(run: "r\"1", scenario: "s\\x", outcome: .clientClosed)
        tricky.target = "/bytes/1M?q=\u{1}\n\t\u{7F}é😀"
        tricky.requestHeaders = ["user-agent": "a \"b\" \\c"]
        tricky.faults = []
        let decoded = try JSONDecoder().decode(JournalEntry.self, from: Data(tricky.jsonBytes))
        #expect(decoded == tricky)
        #expect(String(decoding: tricky.jsonBytes, as: UTF8.self).contains(#""outcome":"client-closed""#))
        // The Codable encoding agrees with the hand-written one.
        let viaEncoder = try JSONDecoder().decode(JournalEntry.self, from: JSONEncoder().encode(tricky))
        #expect(viaEncoder == tricky)
        let encoded = try #require(
            try JSONSerialization.jsonObject(with: JSONEncoder().encode(entry())) as? [String: Any]
        )
        #expect(encoded["route"] is NSNull, "Codable encoding writes null rather than omitting the key")
    }

    @Test("encodedJSON wraps entries and the dropped count")
    func encodedDocument() throws {
        let journal = try Journal(limit: 1)
        journal.append(entry())
        journal.append(entry(run: "r", scenario: "s"))
        let document = journal.encodedJSON(entries: journal.entries())
        let object = try #require(try JSONSerialization.jsonObject(with: Data(document)) as? [String: Any])
        #expect(object["dropped"] as? Int == 1)
        let entries = try #require(object["entries"] as? [[String: Any]])
        #expect(entries.count == 1)
        #expect(entries.first?["seq"] as? Int == 2)
        #expect(entries.first?["run"] as? String == "r")
        let empty = String(decoding: journal.encodedJSON(entries: []), as: UTF8.self)
        #expect(empty == #"{"entries":[],"dropped":1}"#)
    }

    @Test("the JSON Lines file gets one object per line, appended across journals")
    func jsonLinesFile() throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            let journal = try Journal(limit: 2, filePath: path)
            #expect(journal.filePath == path)
            for index in 1...3 { journal.append(entry(target: "/t/\(index)")) }
            // Written per entry: readable before the journal goes away.
            let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
            #expect(lines.count == 3)
            #expect(journal.fileWriteFailures.count == 0)
        }
        let second = try Journal(filePath: path)
        second.append(entry(target: "/t/4"))
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.hasSuffix("\n"))
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(lines.count == 4, "the file is appended to, not truncated, and keeps what the ring dropped")
        let decoded = try lines.map { try JSONDecoder().decode(JournalEntry.self, from: Data($0.utf8)) }
        #expect(decoded.map(\.target) == ["/t/1", "/t/2", "/t/3", "/t/4"])
        #expect(decoded.map(\.seq) == [1, 2, 3, 1])
    }

    @Test("an unopenable journal file is a journalFile error naming the path")
    func unopenableFile() {
        let path = "/nonexistent-dir/journal.jsonl"
        #expect {
            _ = try Journal(filePath: path)
        } throws: { error in
            guard let error = error as? RangeServerError, error ~= RangeServerError.journalFile("") else {
                return false
            }
            return error.message.hasPrefix("cannot open journal file \(path): ")
                && error.message.count > "cannot open journal file \(path): ".count
        }
    }

    @Test("concurrent appends from many threads get unique, gapless sequence numbers, in file order too")
    func concurrentAppends() throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let journal = try Journal(limit: 100_000, filePath: path)
        let threads = 8
        let perThread = 250
        let seen = NIOLockedValueBox<[Int]>([])
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            var mine: [Int] = []
            for _ in 0..<perThread { mine.append(journal.append(entry(run: "t\(thread)")).seq) }
            seen.withLockedValue { $0.append(contentsOf: mine) }
        }
        let total = threads * perThread
        let seqs = seen.withLockedValue { $0 }
        #expect(seqs.count == total)
        #expect(Set(seqs) == Set(1...total))
        #expect(journal.entries().map(\.seq) == Array(1...total))
        for thread in 0..<threads { #expect(journal.entries(run: "t\(thread)").count == perThread) }
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        let fileSeqs = try lines.map { try JSONDecoder().decode(JournalEntry.self, from: Data($0.utf8)).seq }
        #expect(fileSeqs == Array(1...total))
    }

    /// A finished exchange for `Journal.append(_:endedAt:)`, ending at `seconds` + `nanoseconds`.
    private func exchange(target: String, arrival: Int, sent: UInt64 = 10) -> CompletedExchange {
        let request = IncomingRequest(
            method: "GET", target: target, httpVersion: "HTTP/1.1", headers: [HeaderField("range", "bytes=0-9")],
            peerAddress: "127.0.0.1", peerPort: 4000, connectionID: arrival, arrival: arrival)
        let plan = ResponsePlan(
            status: 206, headers: [HeaderField("Content-Range", "bytes 0-9/100")],
            body: .literal(Array(repeating: 1, count: 10)))
        return CompletedExchange(request: request, plan: plan, bodyBytesSent: sent, outcome: .complete, startedAt: .now)
    }

    @Test("a full staging shard stages nothing more: the slot after its last is never written")
    func fullShardStagesNothing() {
        // Two threads share a shard once there are more threads than shards: one fills it and waits for the
        // journal's lock to store it, and the other must not stage past its end meanwhile.
        let shards = StagingShards(count: 1, slotCapacity: 2)
        let slot = JournalSlot(
            seq: 0, seconds: 0, nanoseconds: 0, status: 206, outcome: .complete, peerPort: 4000, bodyBytesPlanned: 10,
            bodyBytesSent: 10, connection: 1, arrival: 1, textStart: 0, textLength: 0, hasExtras: false)
        let results = (1...3).map { arrival in
            shards.withShardLocked(0) {
                $0.pointee.stage(slot, of: exchange(target: "/a", arrival: arrival), extras: nil)
            }
        }
        #expect(results == [false, true, nil])
        #expect(shards.withShardLocked(0) { $0.pointee.count } == 2)
        // Once stored (taken), the shard stages again.
        var taken = 0
        shards.withStagedExchangesTaken { taken = $0.reduce(0) { $0 + $1.count } }
        #expect(taken == 2)
        #expect(
            shards.withShardLocked(0) { $0.pointee.stage(slot, of: exchange(target: "/b", arrival: 4), extras: nil) }
                == false)
    }

    @Test("appends from more threads than shards all come out, numbered without gaps")
    func sharedShardsAppend() throws {
        let journal = try Journal(limit: 100_000)
        let threads = Journal.shardCount * 4
        let perThread = Journal.stagingLimit * 3 + 7
        let group = DispatchGroup()
        for thread in 0..<threads {
            group.enter()
            // Threads of their own (the shard is the thread's), many more than there are shards.
            Thread {
                for index in 0..<perThread {
                    journal.append(
                        exchange(target: "/t\(thread)", arrival: thread * perThread + index + 1),
                        endedAt: timespec(tv_sec: 1_795_291_531, tv_nsec: index))
                }
                group.leave()
            }.start()
        }
        group.wait()
        let entries = journal.entries()
        #expect(entries.count == threads * perThread)
        #expect(entries.map(\.seq) == Array(1...(threads * perThread)))
        #expect(Set(entries.map(\.arrival)).count == threads * perThread)
    }

    @Test("exchanges staged on many threads come out once each, numbered without gaps, in the order they ended")
    func stagedExchangesMerge() throws {
        let journal = try Journal(limit: 100_000)
        let threads = 8
        // More than the staging limit per thread, so shards move into the ring on their own as well as on reads.
        let perThread = Journal.stagingLimit * 3 + 17
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<perThread {
                // End times interleave across threads: thread t's exchange i ends at i * threads + t (ns).
                let ended = index * threads + thread
                journal.append(
                    exchange(target: "/t/\(thread)/\(index)", arrival: ended + 1),
                    endedAt: timespec(tv_sec: 1_795_291_531, tv_nsec: ended))
            }
        }
        let entries = journal.entries()
        #expect(entries.count == threads * perThread)
        #expect(entries.map(\.seq) == Array(1...(threads * perThread)))
        #expect(Set(entries.map(\.target)).count == threads * perThread)
        // Within what moved into the ring together the order is the end order; across moves it still is for
        // each thread's own exchanges.
        for thread in 0..<threads {
            let mine = entries.filter { $0.target.hasPrefix("/t/\(thread)/") }
            #expect(mine.map(\.target) == (0..<perThread).map { "/t/\(thread)/\($0)" })
        }
        #expect(journal.droppedCount == 0)
        #expect(journal.count == threads * perThread)
    }

    @Test("staged exchanges are visible to every reader at once and merge by end time, then by arrival")
    func stagedExchangesOrder() throws {
        let journal = try Journal(limit: 5)
        // Appended from two threads, ending in the order c, a, d, b; each is staged, not yet in the ring.
        let ends: [(target: String, nanoseconds: Int)] = [("/a", 200), ("/b", 400), ("/c", 100), ("/d", 300)]
        let group = DispatchGroup()
        for (offset, pair) in [(0, 1), (2, 3)].enumerated() {
            DispatchQueue.global().async(group: group) {
                for index in [pair.0, pair.1] {
                    journal.append(
                        exchange(target: ends[index].target, arrival: offset * 2 + index + 1),
                        endedAt: timespec(tv_sec: 1_795_291_531, tv_nsec: ends[index].nanoseconds))
                }
            }
        }
        group.wait()
        #expect(journal.count == 4)
        #expect(journal.entries().map(\.target) == ["/c", "/a", "/d", "/b"])
        #expect(journal.entries().map(\.seq) == [1, 2, 3, 4])
        // A value appended afterwards follows everything staged before it.
        #expect(journal.append(entry(target: "/e")).seq == 5)
        // Two more staged exchanges overflow the limit of 5: the two oldest drop.
        journal.append(exchange(target: "/f", arrival: 9), endedAt: timespec(tv_sec: 1_795_291_532, tv_nsec: 0))
        journal.append(exchange(target: "/g", arrival: 10), endedAt: timespec(tv_sec: 1_795_291_532, tv_nsec: 1))
        #expect(journal.droppedCount == 2)
        #expect(journal.entries().map(\.target) == ["/d", "/b", "/e", "/f", "/g"])
        #expect(journal.entries(since: 6).map(\.seq) == [7])
        // A staged exchange is cleared with the rest, as if it had been stored when it ended: it took number 8.
        journal.append(exchange(target: "/h", arrival: 11), endedAt: timespec(tv_sec: 1_795_291_533, tv_nsec: 0))
        journal.clear()
        #expect(journal.entries().isEmpty && journal.count == 0 && journal.droppedCount == 0)
        journal.append(exchange(target: "/i", arrival: 12), endedAt: timespec(tv_sec: 1_795_291_534, tv_nsec: 0))
        #expect(journal.entries().map(\.seq) == [9])
        let document = try JSONSerialization.jsonObject(with: Data(journal.encodedJSON(entries: journal.entries())))
        #expect((document as? [String: Any])?["dropped"] as? Int == 0)
    }

    @Test("with a journal file, exchanges from many threads are written at once, in seq order, one line each")
    func fileExchangesAreNotStaged() throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let journal = try Journal(limit: 50, filePath: path)
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for index in 0..<30 {
                journal.append(
                    exchange(target: "/t/\(thread)/\(index)", arrival: thread * 100 + index),
                    endedAt: timespec(tv_sec: 1_795_291_531, tv_nsec: index))
                // Each line is in the file before append returns.
                let lines = (try? String(contentsOfFile: path, encoding: .utf8))?.split(separator: "\n") ?? []
                #expect(lines.contains { $0.contains("\"target\":\"/t/\(thread)/\(index)\"") })
            }
        }
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        let seqs = try lines.map { try JSONDecoder().decode(JournalEntry.self, from: Data($0.utf8)).seq }
        #expect(seqs == Array(1...120))
        #expect(journal.entries().map(\.seq) == Array(71...120))
        #expect(journal.droppedCount == 70)
    }

    @Test(
        "timestamps are RFC 3339 UTC with milliseconds",
        arguments: [
            (0, 0, "1970-01-01T00:00:00.000Z"), (1_795_291_531, 123, "2026-11-21T20:05:31.123Z"),
            (951_782_400, 5, "2000-02-29T00:00:00.005Z"), (4_107_542_399, 999, "2100-02-28T23:59:59.999Z"),
            (-1, 0, "1969-12-31T23:59:59.000Z"), (253_402_300_799, 0, "9999-12-31T23:59:59.000Z"),
            (1_709_164_800, 42, "2024-02-29T00:00:00.042Z"),
        ] as [(Int64, Int, String)]
    )
    func timestamps(seconds: Int64, milliseconds: Int, expected: String) {
        #expect(JournalEntry.timestamp(secondsSince1970: seconds, milliseconds: milliseconds) == expected)
    }

    @Test("the current timestamp matches the format and Foundation's clock")
    func currentTimestamp() throws {
        let stamp = JournalEntry.timestamp()
        #expect(stamp.count == 24)
        #expect(stamp.wholeMatch(of: /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/) != nil)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let parsed = try #require(formatter.date(from: stamp))
        #expect(abs(parsed.timeIntervalSinceNow) < 5)
    }

    @Test("headerDictionary lower-cases names and joins repeats in order")
    func headerDictionary() {
        let headers = JournalEntry.headerDictionary([
            (name: "Accept", value: "a"), (name: "X-Thing", value: "1"), (name: "accept", value: "b"),
            (name: "ACCEPT", value: "c"),
        ])
        #expect(headers == ["accept": "a, b, c", "x-thing": "1"])
    }

    @Test("exchanges keep their text through ring wrap-around and growth, mixed with appended entries")
    func exchangeSlotsWrapAndGrow() throws {
        let journal = try Journal(limit: 7)
        var expected: [Int: (target: String, range: String, sent: UInt64)] = [:]
        for index in 1...400 {
            if index % 50 == 0 {
                let stored = journal.append(entry(target: "/entry/\(index)"))
                expected[stored.seq] = ("/entry/\(index)", "bytes=0-", 2_457_600)
                continue
            }
            // Sizes from a few bytes to 70 KB, so the text ring both wraps and has to grow.
            let range = "bytes=" + String(repeating: "1-2,", count: index % 13 == 0 ? 17_500 : index % 5) + "0-9"
            var plan = ResponsePlan(
                status: 206,
                headers: [HeaderField("Content-Range", "bytes 0-9/\(index)"), HeaderField("ETag", "\"e\(index)\"")],
                body: .literal(Array(repeating: 1, count: 10)))
            if index % 3 == 0 { plan.faults = ["rate=\(index)"] }
            let request = IncomingRequest(
                method: "GET", target: "/t/\(index)?q=\u{e9}", httpVersion: "HTTP/1.1",
                headers: [HeaderField("range", range), HeaderField("x-dup", "a"), HeaderField("x-dup", "b")],
                peerAddress: "::1", peerPort: index,
                connectionID: index, arrival: index)
            journal.append(
                CompletedExchange(
                    request: request, plan: plan, bodyBytesSent: UInt64(index), outcome: .complete,
                    startedAt: .now),
                endedAt: timespec(tv_sec: 1_795_291_531, tv_nsec: 123_000_000))
            expected[index] = ("/t/\(index)?q=\u{e9}", range, UInt64(index))
        }
        let entries = journal.entries()
        #expect(entries.map(\.seq) == Array(394...400))
        #expect(journal.droppedCount == 393)
        for entry in entries {
            let want = try #require(expected[entry.seq])
            #expect(entry.target == want.target)
            #expect(entry.requestHeaders["range"] == want.range)
            #expect(entry.bodyBytesSent == want.sent)
            if entry.target.hasPrefix("/t/") {
                #expect(entry.requestHeaders["x-dup"] == "a, b")
                #expect(
                    entry.responseHeaders == ["content-range": "bytes 0-9/\(entry.seq)", "etag": "\"e\(entry.seq)\""])
                #expect(entry.peer == "[::1]:\(entry.seq)")
                #expect(entry.faults == (entry.seq % 3 == 0 ? ["rate=\(entry.seq)"] : []))
                #expect(entry.time == "2026-11-21T20:05:31.123Z")
                #expect(entry.bodyBytesPlanned == 10)
            }
        }
        journal.clear()
        #expect(journal.entries().isEmpty)
    }

    /// A varied exchange for the byte-identity tests: `index` picks non-ASCII and canonically equivalent text, empty
    /// and repeated fields, faults and a scenario.
    private func variedExchange(_ index: Int) -> CompletedExchange {
        // "é" precomposed and decomposed: equal as Strings, different bytes; the journal keeps the bytes.
        let accent = index % 2 == 0 ? "\u{e9}" : "e\u{301}"
        let request = IncomingRequest(
            method: index % 5 == 0 ? "HEAD" : "GET",
            target: "/t/\(index)?q=\(accent)&long=" + String(repeating: "x", count: index % 40),
            httpVersion: "HTTP/1.1",
            headers: [
                HeaderField("host", "127.0.0.1:8080"), HeaderField("range", "bytes=\(index)-\(index + 9)"),
                HeaderField("x-dup", "a"),
                HeaderField("x-dup", index % 3 == 0 ? "" : "b\u{1}\"\\"), HeaderField("user-agent", accent),
            ], peerAddress: index % 4 == 0 ? "::1" : "127.0.0.1", peerPort: 40_000 + index, connectionID: index / 3,
            arrival: index)
        var plan = ResponsePlan(
            status: 206,
            headers: [
                HeaderField("Accept-Ranges", "bytes"), HeaderField("ETag", "\"e\(index % 2)\""),
                HeaderField("Content-Type", "text/plain; charset=\(accent)"),
                HeaderField("Content-Range", "bytes \(index)-\(index + 9)/100"),
            ],
            body: .literal(Array(repeating: 1, count: 10)))
        if index % 3 == 0 { plan.faults = ["rate=\(index)", "drop-after=5"] }
        if index % 7 == 0 {
            plan.scenario = ScenarioContext(scenario: "s\(index % 2)", run: "r", route: "", attempt: index)
        }
        return CompletedExchange(
            request: request, plan: plan, bodyBytesSent: UInt64(index % 11),
            outcome: index % 6 == 0 ? .dropped : .complete,
            startedAt: .now)
    }

    @Test("staged exchanges read back byte for byte as the journal file wrote them, through wrap-around and clear")
    func stagedMatchesFile() throws {
        let path = temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let file = try Journal(limit: 1_000, filePath: path)
        // A ring smaller than a shard's staging, so that staged text and extras go through the ring and drop.
        let memory = try Journal(limit: 50)
        var read: [[UInt8]] = []
        var lastSeq = 0
        func readNew() {
            let entries = memory.entries(since: lastSeq)
            read.append(contentsOf: entries.map(\.jsonBytes))
            lastSeq = entries.last?.seq ?? lastSeq
        }
        for round in 0..<2 {
            for index in (round * 600)..<(round * 600 + 600) {
                let time = timespec(tv_sec: 1_795_291_531 + index / 1_000, tv_nsec: (index % 1_000) * 1_000_000 + 7)
                file.append(variedExchange(index), endedAt: time)
                memory.append(variedExchange(index), endedAt: time)
                // Read every 40 (fewer than the limit, so nothing drops unread) in the first round; in the second,
                // only at the end, so that shards fill and move into the ring on their own, dropping most.
                if round == 0 && index % 40 == 39 { readNew() }
            }
            #expect(memory.count == 50)
            let inMemory = memory.entries()
            #expect(memory.extrasCount == inMemory.filter { !$0.faults.isEmpty || $0.scenario != nil }.count)
            // Every entry still in memory is byte for byte the line the file journal wrote for it.
            let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
            #expect(lines.count == 600 * (round + 1))
            #expect(inMemory.map { String(decoding: $0.jsonBytes, as: UTF8.self) } == lines.suffix(50).map(String.init))
            if round == 0 {
                #expect(read.map { String(decoding: $0, as: UTF8.self) } == lines.map(String.init))
                memory.clear()
                #expect(memory.count == 0 && memory.extrasCount == 0)
            }
        }
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        let decomposed = try JSONDecoder().decode(JournalEntry.self, from: Data(lines[1].utf8))
        #expect(Array(decomposed.requestHeaders["user-agent"]!.utf8) == Array("e\u{301}".utf8))
        #expect(decomposed.requestHeaders["x-dup"] == "a, b\u{1}\"\\")
    }

    @Test("readers merging while threads stage see every exchange once, numbered without gaps, none lost")
    func readersDuringStaging() throws {
        let journal = try Journal(limit: 100_000)
        let threads = 6
        let perThread = Journal.stagingLimit * 4 + 5
        let readerSeen = NIOLockedValueBox<[Int]>([])
        let done = NIOLockedValueBox(false)
        let group = DispatchGroup()
        // A reader polling with `since`, as a client of /_control/journal does, while shards fill and are merged.
        DispatchQueue.global().async(group: group) {
            var last = 0
            var seen: [Int] = []
            while true {
                let finished = done.withLockedValue { $0 }
                let entries = journal.entries(since: last)
                seen.append(contentsOf: entries.map(\.seq))
                last = entries.last?.seq ?? last
                if finished { break }
            }
            readerSeen.withLockedValue { $0 = seen }
        }
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<perThread {
                let ended = index * threads + thread
                journal.append(
                    exchange(target: "/r/\(thread)/\(index)", arrival: ended + 1),
                    endedAt: timespec(tv_sec: 1_795_291_531, tv_nsec: ended))
            }
        }
        done.withLockedValue { $0 = true }
        group.wait()
        let total = threads * perThread
        #expect(readerSeen.withLockedValue { $0 } == Array(1...total))
        let entries = journal.entries()
        #expect(Set(entries.map(\.target)).count == total)
        for thread in 0..<threads {
            let mine = entries.filter { $0.target.hasPrefix("/r/\(thread)/") }
            #expect(mine.map(\.target) == (0..<perThread).map { "/r/\(thread)/\($0)" })
        }
    }
}
