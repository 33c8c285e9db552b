import Foundation
import NIOConcurrencyHelpers

/// SIGINT and SIGTERM, watched instead of obeyed: the first one received is handed to a handler, once, so the
/// command can stop on its own terms (`serve` with status 0, `run` after stopping its clients and writing its
/// reports).
///
/// The signals are ignored as such and watched with dispatch sources, so they arrive here whichever thread the kernel
/// picks. Ignoring them does not reach the clients `rangecheck run` starts: swift-subprocess gives every child the
/// default disposition of every signal and an empty signal mask.
final class StopSignals {
    private let sources = NIOLockedValueBox<[any DispatchSourceSignal]?>([])

    /// Starts watching; `handler` gets the first signal's number.
    init(_ handler: @escaping @Sendable (Int32) -> Void) {
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [sources] in
                // The first signal ends the watch; later ones find no sources and are dropped.
                guard
                    let watched = sources.withLockedValue({ watched in
                        defer { watched = nil }; return watched
                    })
                else { return }
                for source in watched { source.cancel() }
                handler(number)
            }
            sources.withLockedValue { $0?.append(source) }
            source.resume()
        }
    }

    /// Waits for SIGINT or SIGTERM.
    ///
    /// - Returns: the signal's number.
    static func next() async -> Int32 {
        await withCheckedContinuation { continuation in
            _ = StopSignals { number in continuation.resume(returning: number) }
        }
    }

    /// Stops watching (the signals stay ignored: the command is about to end).
    func cancel() {
        let watched = sources.withLockedValue { watched in
            defer { watched = nil }; return watched
        }
        for source in watched ?? [] { source.cancel() }
    }

    /// `SIGINT`, `SIGTERM`, or `signal N`.
    static func name(_ number: Int32) -> String {
        switch number {
        case SIGINT: "SIGINT"
        case SIGTERM: "SIGTERM"
        default: "signal \(number)"
        }
    }
}
