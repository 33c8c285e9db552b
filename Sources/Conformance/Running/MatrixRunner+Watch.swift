extension MatrixRunner {
    /// The runner's watch over one started client until it exits: the scenario's steps at their thresholds, the
    /// time limit, cancellation, and the samples of sockets (connections to the server, attempts at a dead IPv6
    /// address). A `disk-full-at` row drives two starts with one watch, so its samples and deadline span both.
    struct Watch {
        /// The steps not yet performed, in order.
        var steps: [ScenarioExpectation.Step]
        /// All bytes of all files, for percentage thresholds.
        let total: UInt64
        /// The directories whose bytes on disk the thresholds count (output and state).
        let watched: [String]
        /// The address and port whose established connections are counted: the server's, where the client was sent.
        let sampledHost: String
        let sampledPort: Int
        /// The connections an earlier pair left open on ``sampledPort`` that outlived the wait for a quiet port: the
        /// samples count above them (they can only close, so this never counts a connection of the client's twice).
        var residue = 0
        /// The port where `[::1]` is dead, for a `dead-ipv6` row; nil otherwise.
        let deadIPv6Port: Int?
        /// When the pair's time is up.
        let deadline: ContinuousClock.Instant

        /// How the last start ended; nil while it runs, or when it was stopped.
        var exit: ClientExit?
        /// The time limit ended the run.
        var timedOut = false
        /// A step could not be performed.
        var stepFailure: String?
        /// The harness is stopping (the task was cancelled).
        var interrupted = false
        /// The most connections to ``sampledPort`` seen at once.
        var peak = 0
        /// The sockets (by inode) seen trying `[::1]` at ``deadIPv6Port``.
        var ipv6Attempts: Set<String> = []
        /// The connection attempts the dead `[::1]` listener dropped during the run (its kernel counter's rise).
        var ipv6DroppedConnects = 0

        /// How many times the client was seen trying the dead `[::1]`: the half-open sockets the samples caught, or
        /// at least once when the listener dropped a connect the samples missed (on a loaded machine the watch can
        /// sleep through a Happy Eyeballs client's few hundred milliseconds on the address).
        var ipv6AttemptCount: Int { max(ipv6Attempts.count, ipv6DroppedConnects > 0 ? 1 : 0) }

        /// Whether the run is over without an exit to judge (timed out, a step failed, interrupted).
        var isLost: Bool { timedOut || stepFailure != nil || interrupted }

        /// Polls `run` every 10 ms until it exits or is lost, performing the steps whose threshold is reached.
        mutating func drive(_ run: any ClientRun) async {
            while exit == nil {
                exit = await run.poll()
                if exit != nil { break }
                if Task.isCancelled {
                    // The harness is stopping (SIGINT, SIGTERM): the client's processes go with it.
                    interrupted = true
                    await run.terminate()
                    break
                }
                if let count = ConnectionSampler.established(toLocal: sampledHost, port: sampledPort) {
                    peak = max(peak, count - residue)
                }
                if let port = deadIPv6Port,
                    let pending = ConnectionSampler.pendingConnects(toIPv6LoopbackPort: port)
                {
                    ipv6Attempts.formUnion(pending)
                }
                if ContinuousClock.now > deadline {
                    timedOut = true
                    await run.terminate()
                    break
                }
                if let step = steps.first,
                    OutputInspector.bytesOnDisk(under: watched) >= MatrixRunner.threshold(of: step).bytes(of: total)
                {
                    steps.removeFirst()
                    do {
                        try await MatrixRunner.perform(step, on: run)
                    } catch {
                        stepFailure = "step failed: \(error)"
                        await run.terminate()
                        break
                    }
                    continue
                }
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
    }
}
