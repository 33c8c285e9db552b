import ArgumentParser
import DownloadEngine
import Foundation

/// The rate options: `--limit-rate` (the bandwidth limit) and `--speed-limit`, `--speed-time`, `--slow-retries` (the
/// low-speed abort), read into the engine's configuration.
struct RateOptions: ParsableArguments {
    @Option(
        name: .customLong("limit-rate"),
        help: ArgumentHelp(
            "Read at most this many bytes per second, all downloads and segments together (e.g. 500K, 2M).",
            valueName: "rate"))
    var limitRate: String?

    @Option(
        name: .customLong("speed-limit"),
        help: ArgumentHelp(
            """
            Abort an attempt slower than this many bytes per second over --speed-time and resume it where it \
            stood (e.g. 100K).
            """, valueName: "rate"))
    var speedLimit: String?

    @Option(
        name: .customLong("speed-time"),
        help: ArgumentHelp("How long an attempt may stay below --speed-limit (default 30s).", valueName: "duration"))
    var speedTime: String?

    @Option(
        name: .customLong("slow-retries"),
        help: "Slow attempts aborted and resumed before a download fails, apart from --retries.")
    var slowRetries: Int = 5

    /// Checks the values; a bad one is one line on stderr and exit 64, without the usage text (the value is the
    /// whole story).
    func validate() throws {
        if let limitRate, parseRate(limitRate) == nil {
            printError("--limit-rate: invalid rate '\(limitRate)' (bytes per second above 0, e.g. 500K, 2M)")
            throw ExitCode(ExitStatus.usage.rawValue)
        }
        do {
            _ = try lowSpeedLimit()
        } catch let error as ValidationError {
            printError(error.message)
            throw ExitCode(ExitStatus.usage.rawValue)
        }
    }

    /// The low-speed abort of `--speed-limit`, `--speed-time` and `--slow-retries`, as curl's: either option alone
    /// turns it on, `--speed-time` defaulting to 30 s and `--speed-limit` to 1 byte per second.
    ///
    /// - Throws: `ValidationError` naming the option with a bad value.
    func lowSpeedLimit() throws -> DownloadConfiguration.LowSpeedLimit? {
        guard speedLimit != nil || speedTime != nil else { return nil }
        let rate = try speedLimit.map {
            guard let rate = parseRate($0) else {
                throw ValidationError("--speed-limit: invalid rate '\($0)' (bytes per second above 0, e.g. 100K)")
            }
            return rate
        }
        let time = try speedTime.map {
            guard let time = parseDuration($0), time > .zero else {
                throw ValidationError("--speed-time: invalid duration '\($0)' (above 0, e.g. 30s)")
            }
            return time
        }
        guard slowRetries >= 0 else { throw ValidationError("--slow-retries must not be negative") }
        return .init(bytesPerSecond: rate ?? 1, duration: time ?? .seconds(30), maximumAborts: slowRetries)
    }
}

/// Parses a rate in bytes per second: a number with an optional `K`, `M` or `G` (powers of 1024, either case, as
/// curl's `--limit-rate`) and an optional `/s`; `nil` for anything else, 0, or more than 2^62.
func parseRate(_ text: String) -> Int64? {
    var number = Substring(text)
    if number.hasSuffix("/s") { number = number.dropLast(2) }
    var scale = 1.0
    if let last = number.last, let power = ["k": 1, "m": 2, "g": 3][last.lowercased()] {
        scale = pow(1024, Double(power))
        number = number.dropLast()
    }
    guard !number.isEmpty, number.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
        let value = Double(number), value.isFinite
    else { return nil }
    let bytes = (value * scale).rounded()
    guard bytes >= 1, bytes <= 0x1p62 else { return nil }
    return Int64(bytes)
}
