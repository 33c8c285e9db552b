// Release-mode microbenchmarks for the server's hot pure functions. Not a test: it asserts nothing and
// only prints timings. Run through `scripts/bench micro` (or `swift run -c release RangeBench`).
//
// Each benchmark runs a warm-up round, then `rounds` timed rounds of `iterations` operations; the
// reported figure is the median round's nanoseconds per operation. Results that the optimizer could
// discard are folded into a checksum that is printed, so the work cannot be elided.
//
// Output: one JSON object per line, {"name":..., "nsPerOp":..., "opsPerRound":..., "rounds":..., ...}.

import Foundation
import RangeServer

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Folds values the optimizer must not discard.
nonisolated(unsafe) var checksum: UInt64 = 0

@inline(never)
func consume(_ value: UInt64) { checksum &+= value }

struct Result {
    var name: String
    var nsPerOp: Double
    var iterations: Int
    var rounds: Int
    var extra: [(String, Double)] = []

    var json: String {
        var fields = [
            "\"name\":\"\(name)\"", "\"nsPerOp\":\(format(nsPerOp))", "\"opsPerRound\":\(iterations)",
            "\"rounds\":\(rounds)",
        ]
        for (key, value) in extra { fields.append("\"\(key)\":\(format(value))") }
        return "{" + fields.joined(separator: ",") + "}"
    }
}

func printError(_ text: String) {
    var bytes = Array((text + "\n").utf8)
    _ = bytes.withUnsafeMutableBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
}

func format(_ value: Double) -> String {
    let scaled = (value * 1000).rounded() / 1000
    return "\(scaled)"
}

/// Times `body(iterations)` over several rounds and returns the median nanoseconds per operation.
func measure(_ name: String, iterations: Int, rounds: Int, _ body: (Int) -> Void) -> Result {
    body(max(1, iterations / 10))  // warm-up: caches, lazy initialisation, page faults
    var samples: [Double] = []
    for _ in 0..<rounds {
        let start = ContinuousClock.now
        body(iterations)
        let elapsed = ContinuousClock.now - start
        let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
        samples.append(nanoseconds / Double(iterations))
    }
    samples.sort()
    return Result(name: name, nsPerOp: samples[samples.count / 2], iterations: iterations, rounds: rounds)
}

// MARK: - Arguments

var scale = 1.0
var rounds = 7
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--quick": scale = 0.1; rounds = 3
    case "--rounds": rounds = Int(arguments.popFirst() ?? "") ?? rounds
    case "-h", "--help":
        print("usage: RangeBench [--quick] [--rounds N]\n  prints one JSON line per microbenchmark (median ns/op)")
        exit(0)
    default:
        printError("RangeBench: unknown argument \(argument)")
        exit(64)
    }
}
@MainActor func scaled(_ count: Int) -> Int { max(1, Int(Double(count) * scale)) }

var results: [Result] = []

// MARK: - Range parser

let simpleHeader = "bytes=1048576-1052671"
results.append(
    measure("range-parse-single", iterations: scaled(2_000_000), rounds: rounds) { count in
        for index in 0..<count {
            // A different string each time would time string building instead; the parse itself reads
            // every byte, so one value is representative.
            if let header = RangeHeader.parse(simpleHeader) { consume(UInt64(header.specs.count &+ index)) }
        }
    })

var lcg: UInt64 = 0x1234_5678
@MainActor func nextRandom() -> UInt64 {
    lcg = lcg &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
    return lcg >> 11
}
let fileLength: UInt64 = 1 << 30
let sixtyFourSpecs: [ByteRangeSpec] = (0..<64).map { _ in
    let first = nextRandom() % (fileLength - 4096)
    return .closed(first: first, last: first + 4095)
}
let sixtyFourHeader =
    "bytes="
    + sixtyFourSpecs.map { spec -> String in
        if case .closed(let first, let last) = spec { return "\(first)-\(last)" }
        return ""
    }.joined(separator: ", ")
results.append(
    measure("range-parse-64", iterations: scaled(100_000), rounds: rounds) { count in
        for _ in 0..<count {
            if let header = RangeHeader.parse(sixtyFourHeader) { consume(UInt64(header.specs.count)) }
        }
    })

// MARK: - Range evaluator

let sixtyFour = RangeHeader(specs: sixtyFourSpecs)
results.append(
    measure("range-evaluate-64", iterations: scaled(100_000), rounds: rounds) { count in
        for _ in 0..<count {
            if case .satisfiable(let ranges) = sixtyFour.evaluate(length: fileLength, maxRanges: 64) {
                consume(ranges[0].lowerBound &+ UInt64(ranges.count))
            }
        }
    })
let single = RangeHeader(specs: [.closed(first: 1_048_576, last: 1_052_671)])
results.append(
    measure("range-evaluate-1", iterations: scaled(2_000_000), rounds: rounds) { count in
        for _ in 0..<count {
            if case .satisfiable(let ranges) = single.evaluate(length: fileLength, maxRanges: 64) {
                consume(ranges[0].lowerBound)
            }
        }
    })

// MARK: - Content generator

let generator = ContentGenerator(seed: 1, version: 1)
let chunkSize = 64 * 1024  // the daemon's content-reader block size
let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 64)
defer { chunk.deallocate() }
let chunksPerRound = scaled(16_384)  // 1 GiB per round at full scale
var generatorResult = measure("generator-fill-64KiB", iterations: chunksPerRound, rounds: rounds) { count in
    var offset: UInt64 = 0
    for _ in 0..<count {
        generator.fill(chunk, offset: offset)
        consume(chunk.load(fromByteOffset: chunkSize - 8, as: UInt64.self))
        offset &+= UInt64(chunkSize)
    }
}
generatorResult.extra.append(("gigabytesPerSecond", Double(chunkSize) / generatorResult.nsPerOp))
results.append(generatorResult)
// An odd offset takes the unaligned head and tail paths every call.
var unalignedResult = measure("generator-fill-4KiB-unaligned", iterations: scaled(200_000), rounds: rounds) { count in
    let small = UnsafeMutableRawBufferPointer(rebasing: chunk[0..<4093])
    var offset: UInt64 = 3
    for _ in 0..<count {
        generator.fill(small, offset: offset)
        consume(UInt64(small[17]))
        offset &+= 4093
    }
}
unalignedResult.extra.append(("gigabytesPerSecond", 4093 / unalignedResult.nsPerOp))
results.append(unalignedResult)

// MARK: - Journal

func sampleEntry() -> JournalEntry {
    JournalEntry(
        time: JournalEntry.timestamp(), method: "GET", target: "/files/big.bin",
        requestHeaders: ["host": "127.0.0.1:8080", "range": "bytes=1048576-1052671", "user-agent": "wrk"],
        status: 206,
        responseHeaders: [
            "content-range": "bytes 1048576-1052671/1073741824", "accept-ranges": "bytes", "etag": "\"abc-123\"",
            "content-type": "application/octet-stream",
        ],
        bodyBytesPlanned: 4096, bodyBytesSent: 4096, outcome: .complete, connection: 7, peer: "127.0.0.1")
}
let entry = sampleEntry()
let memoryJournal = try Journal(limit: 100_000)
results.append(
    measure("journal-append-memory", iterations: scaled(500_000), rounds: rounds) { count in
        for _ in 0..<count { consume(UInt64(memoryJournal.append(entry).seq)) }
    })
// What the daemon's completion path does per request: build the entry (timestamp, header dictionaries) and append.
results.append(
    measure("journal-build-and-append", iterations: scaled(200_000), rounds: rounds) { count in
        for _ in 0..<count { consume(UInt64(memoryJournal.append(sampleEntry()).seq)) }
    })
let journalPath = "/tmp/rangebench-journal-\(getpid()).jsonl"
let fileJournal = try Journal(limit: 100_000, filePath: journalPath)
results.append(
    measure("journal-append-file", iterations: scaled(100_000), rounds: rounds) { count in
        for _ in 0..<count { consume(UInt64(fileJournal.append(entry).seq)) }
    })
unlink(journalPath)
results.append(
    measure("journal-entry-json", iterations: scaled(200_000), rounds: rounds) { count in
        for _ in 0..<count { consume(UInt64(entry.jsonBytes.count)) }
    })

// The same entry through Foundation's JSONEncoder (JournalEntry's Codable conformance, the form the control API
// decodes), measured beside the hand-written writer the journal uses (docs/benchmarks.md, "Journal JSON").
let encoder = JSONEncoder()
results.append(
    measure("journal-entry-jsonencoder", iterations: scaled(50_000), rounds: rounds) { count in
        for _ in 0..<count { consume(UInt64((try? encoder.encode(entry))?.count ?? 0)) }
    })

for result in results { print(result.json) }
printError("checksum \(checksum)")
