import Foundation

/// The resumable download engine: tasks, a FIFO queue with a concurrency limit, persistence and events.
///
/// ```swift
/// let engine = try DownloadEngine(stateDirectory: "downloads/.rangefetch")
/// let id = try await engine.add(DownloadRequest(url: "http://127.0.0.1:8080/bytes/10M", destination: "downloads/a.bin"))
/// let result = await engine.result(of: id)
/// await engine.shutdown()
/// ```
///
/// Call ``shutdown()`` before dropping the engine: it pauses running transfers, persists their records and closes
/// the HTTP client.
///
/// One engine at a time uses a state directory: it holds the directory's lock from its creation until
/// ``shutdown()`` (or until it is deinitialised), and a second engine on the directory, in this process or another,
/// fails to be created with ``DownloadError/stateDirectoryLocked(_:by:)``.
public actor DownloadEngine {
    struct Entry {
        var record: TaskRecord
        var state: DownloadState
        var progress: DownloadProgress
        var error: DownloadError?
        var worker: Task<Void, Never>?
        var stopIntent: DownloadState?
        var waiters: [CheckedContinuation<DownloadResult, Never>] = []
        var group: DownloadGroupID?
        var result: DownloadResult?
        /// Whether the task's record is on disk; a new task's is saved only once there is something to resume.
        var onDisk = true
        /// The download's own bandwidth limit (``DownloadRequest/maximumBytesPerSecond``); not in the record.
        var bytesPerSecond: Int64?
        /// Whether the next transfer revalidates the completed file (``DownloadRequest/revalidates``); until it
        /// gets a new representation, the completed record on disk stays as it is.
        var revalidating = false
        /// Whether the last transfer's revalidation got a 304.
        var notModified = false
    }

    struct GroupEntry {
        var members: [DownloadTaskID]
        var waiters: [CheckedContinuation<[DownloadTaskID: DownloadResult], Never>] = []
        var finished = false
    }

    /// The configuration the engine was created with.
    public nonisolated let configuration: DownloadConfiguration
    /// The absolute state directory.
    public nonisolated let stateDirectory: String
    /// Problems found while loading the state directory (corrupt records set aside).
    public nonisolated let loadProblems: [DownloadError]

    let store: StateStore
    /// Held from `init` to ``shutdown()``; dropped with the engine otherwise.
    let lock: StateDirectoryLock
    let transport: any Transport
    /// The engine-wide bandwidth limit (``DownloadConfiguration/maximumBytesPerSecond``), shared by every transfer.
    let bandwidth: BandwidthLimiter?
    let hub = EventHub()
    var tasks: [DownloadTaskID: Entry] = [:]
    var order: [DownloadTaskID] = []
    /// Tasks by URL and absolute destination: `add` of a long list must not scan every task for every URL.
    var byTarget: [TaskTarget: DownloadTaskID] = [:]
    var queue: [DownloadTaskID] = []
    var running: Set<DownloadTaskID> = []
    var groups: [DownloadGroupID: GroupEntry] = [:]
    var isShutDown = false
    /// Output directories already created and found writable: adding 500 files to one directory checks it once.
    var usableDirectories: Set<String> = []

    /// Opens (or creates) a state directory and loads its task records; unfinished tasks come back `paused`.
    ///
    /// - Parameters:
    ///   - stateDirectory: Where records and partial files live.
    ///   - configuration: Engine settings.
    /// - Throws: ``DownloadError/stateDirectoryLocked(_:by:)`` when another engine, in this process or another, uses
    ///   the directory; ``DownloadError/fileSystem(_:)`` when the directory cannot be created or written.
    public init(stateDirectory: String, configuration: DownloadConfiguration = .init()) throws {
        try self.init(stateDirectory: stateDirectory, configuration: configuration) {
            try HTTPTransport(configuration: configuration.transport)
        }
    }

    init(
        stateDirectory: String, configuration: DownloadConfiguration,
        transport makeTransport: () throws -> any Transport
    ) throws {
        if let rate = configuration.maximumBytesPerSecond, rate <= 0 {
            throw DownloadError.invalidState("maximumBytesPerSecond must be above 0, got \(rate)")
        }
        if let limit = configuration.lowSpeed, let problem = limit.problem {
            throw DownloadError.invalidState("lowSpeed: \(problem)")
        }
        let store = try StateStore(directory: stateDirectory, syncsToDisk: configuration.durability.syncsToDisk)
        // Before anything in the directory is read or written (loadAll deletes stray files and rewrites the task
        // log): an engine that does not get the lock must leave the holder's files as they are.
        self.lock = try StateDirectoryLock(directory: store.directory)
        self.store = store
        self.stateDirectory = store.directory
        self.configuration = configuration
        self.transport = try makeTransport()
        self.bandwidth = configuration.maximumBytesPerSecond.map(BandwidthLimiter.init(bytesPerSecond:))
        let (records, logged, problems) = store.loadAll()
        self.loadProblems = problems
        let loggedIDs = Set(logged.map(\.id))
        for var record in records + logged {
            if !record.state.isTerminal { record.state = .paused }
            // A segmented task's partial file has the full length from the start: its ranges tell what is done.
            let partialLength =
                record.segments.map { $0.reduce(0) { $0 + Int64($1.count) } }
                ?? FileIO.fileSize(store.partialPath(record)) ?? 0
            var entry = Entry(
                record: record, state: record.state,
                progress: .init(
                    bytes: record.state == .completed ? record.recordedLength : partialLength,
                    total: record.totalLength, bytesPerSecond: 0, eta: nil))
            if record.state == .failed {
                entry.error = .invalidState(record.error ?? "failed")
            }
            // A logged task has no record file: its transfer appends to the log until its partial file passes
            // 256 KiB, as a new task's does.
            entry.onDisk = !loggedIDs.contains(record.id)
            tasks[record.id] = entry
            order.append(record.id)
            byTarget[TaskTarget(record, store: store)] = record.id
        }
    }

    // MARK: Events

    /// A new subscription to every event from now on. Subscribe before adding tasks to see all of their events.
    ///
    /// - Returns: An unbounded stream; it finishes at ``shutdown()``.
    public nonisolated func events() -> AsyncStream<DownloadEvent> { hub.subscribe() }

    // MARK: Tasks

    /// Adds a task, or returns the existing one for the same URL and destination (so a rerun resumes it).
    ///
    /// A failed or cancelled existing task is reset to `idle`, keeping any partial bytes.
    ///
    /// - Parameters:
    ///   - request: What to download and where.
    ///   - start: Whether to queue it at once. Default `true`.
    /// - Returns: The task's identifier.
    /// - Throws: ``DownloadError/invalidURL(_:)``, ``DownloadError/unsupportedScheme(_:)``,
    ///   ``DownloadError/fileSystem(_:)`` when the destination directory is unusable,
    ///   ``DownloadError/invalidHeader(_:)`` for a header that cannot be sent (of the request or the configuration),
    ///   ``DownloadError/credentialsRequired(_:)`` when a task resumed from the state directory needs credential
    ///   headers that were not stored and are not given again.
    @discardableResult
    public func add(_ request: DownloadRequest, start: Bool = true) throws -> DownloadTaskID {
        try add(request, start: start, group: nil)
    }

    func add(_ request: DownloadRequest, start: Bool, group: DownloadGroupID?) throws -> DownloadTaskID {
        guard !isShutDown else { throw DownloadError.invalidState("the engine is shut down") }
        try Self.validate(url: request.url)
        try RequestHeaders.validate(configuration.headerList + request.headerList)
        if let rate = request.maximumBytesPerSecond, rate <= 0 {
            throw DownloadError.invalidState("maximumBytesPerSecond must be above 0, got \(rate)")
        }
        if let sha = request.sha256 {
            guard sha.count == 64, sha.allSatisfy(\.isHexDigit) else {
                throw DownloadError.invalidState("--sha256 must be 64 hex digits, got '\(sha)'")
            }
            guard configuration.verification.computesSHA256 else {
                throw DownloadError.invalidState("an expected SHA-256 cannot be checked with verification .lengthOnly")
            }
        }
        let destination = LexicalPath.absolute(request.destination)
        let directory = request.namesFromResponse ? destination : LexicalPath.parent(destination)
        if !usableDirectories.contains(directory) {
            try FileIO.makeDirectories(directory)
            guard access(directory, W_OK) == 0 else {
                throw DownloadError.fileSystem("output directory '\(directory)' is not writable")
            }
            usableDirectories.insert(directory)
        }
        if !request.namesFromResponse, FileIO.isDirectory(destination) {
            throw DownloadError.fileSystem("destination '\(destination)' is a directory")
        }
        let target = TaskTarget(request, absoluteDestination: destination)
        if let existing = byTarget[target], var entry = tasks[existing] {
            entry.record.expectedSHA256 = request.sha256?.lowercased() ?? entry.record.expectedSHA256
            entry.record.overwrite = request.overwrite
            // The headers given now replace the stored ones of their names; the others (from the record) are sent
            // again, so a rerun of a command without its -H options still sends them.
            entry.record.requestHeaders = RequestHeaders.replacing(
                entry.record.requestHeaders, with: request.headerList)
            entry.record.storesCredentials = request.storesCredentials ? true : nil
            entry.bytesPerSecond = request.maximumBytesPerSecond
            if entry.state == .completed, !FileIO.exists(store.destinationPath(entry.record)) { entry.state = .idle }
            if request.revalidates, entry.state == .completed {
                entry.state = .idle
                entry.revalidating = true
                entry.notModified = false
                entry.record.replacing = true
            }
            if entry.state == .failed || entry.state == .cancelled { entry.state = .idle }
            entry.error = nil
            entry.result = nil
            entry.group = group ?? entry.group
            entry.record.state = entry.state
            tasks[existing] = entry
            // Not saved: the record on disk stays valid for its partial file, and the transfer saves this one
            // before it writes a byte.
            hub.publish(.added(existing, url: request.url))
            if start, !entry.state.isActive, entry.state != .completed { try self.start(existing) }
            return existing
        }
        let id = DownloadTaskID.random()
        let now = Date()
        var record = TaskRecord(
            id: id, url: request.url, destination: store.relative(destination), partial: id.rawValue + ".part",
            expectedSHA256: request.sha256?.lowercased(), overwrite: request.overwrite, state: .idle, created: now,
            updated: now)
        if request.namesFromResponse {
            // The URL's name until a response names the file (see `TaskRecord.chooseName`).
            record.outputDirectory = store.relative(destination)
            record.destination = store.relative(destination + "/" + (OutputName.fromURL(request.url) ?? "download"))
        }
        record.requestHeaders = request.headerList
        record.storesCredentials = request.storesCredentials ? true : nil
        // Not saved yet: the transfer saves the record once the response head is known, before the first byte is
        // written. Killed before that, the task had nothing worth keeping.
        tasks[id] = Entry(
            record: record, state: .idle, progress: .init(bytes: 0, total: nil, bytesPerSecond: 0, eta: nil),
            group: group, onDisk: false, bytesPerSecond: request.maximumBytesPerSecond)
        order.append(id)
        byTarget[target] = id
        hub.publish(.added(id, url: request.url))
        if start { try self.start(id) }
        return id
    }

    static func validate(url: String) throws {
        guard let parsed = URL(string: url), let scheme = parsed.scheme else { throw DownloadError.invalidURL(url) }
        guard scheme.lowercased() == "http" || scheme.lowercased() == "https" else {
            throw DownloadError.unsupportedScheme(url)
        }
        guard let host = parsed.host, !host.isEmpty else { throw DownloadError.invalidURL(url) }
    }

    /// Queues an idle, paused or failed task (FIFO); it runs when a transfer slot is free.
    ///
    /// - Parameter id: The task.
    /// - Throws: ``DownloadError/unknownTask(_:)``, ``DownloadError/invalidState(_:)`` for a completed task,
    ///   ``DownloadError/credentialsRequired(_:)`` for a task loaded from the state directory whose credential
    ///   headers were not stored (add it again with them).
    public func start(_ id: DownloadTaskID) throws {
        guard var entry = tasks[id] else { throw DownloadError.unknownTask(id.rawValue) }
        guard !isShutDown else { throw DownloadError.invalidState("the engine is shut down") }
        switch entry.state {
        case .waiting, .running, .retrying: return
        case .completed, .cancelled: throw DownloadError.invalidState("task \(id) is \(entry.state.rawValue)")
        case .idle, .paused, .failed:
            // Without them the server would refuse the resume or, worse, serve another representation to an
            // anonymous client; better to say what is missing.
            let missing = RequestHeaders.missing(entry.record.withheldHeaders ?? [], in: entry.record.requestHeaders)
            if !missing.isEmpty { throw DownloadError.credentialsRequired(missing) }
            entry.error = nil
            entry.result = nil
            tasks[id] = entry
            setState(id, .waiting)
            queue.append(id)
            pump()
        }
    }

    /// Resumes a paused task (same as ``start(_:)``).
    ///
    /// - Parameter id: The task.
    public func resume(_ id: DownloadTaskID) throws { try start(id) }

    /// Pauses a task: a running transfer stops, its record is persisted and the partial file kept.
    ///
    /// - Parameter id: The task.
    /// - Returns: Once the task is paused.
    public func pause(_ id: DownloadTaskID) async throws {
        guard let entry = tasks[id] else { throw DownloadError.unknownTask(id.rawValue) }
        // A shut-down engine no longer holds the lock: it must not write to the directory.
        guard !isShutDown else { throw DownloadError.invalidState("the engine is shut down") }
        switch entry.state {
        case .waiting, .idle:
            queue.removeAll { $0 == id }
            setState(id, .paused)
            settle(id, .paused)
        case .running, .retrying:
            await stopWorker(id, intent: .paused)
        default:
            return
        }
    }

    /// Cancels a task: the transfer stops and the partial file is deleted; the record stays as `cancelled`.
    ///
    /// - Parameter id: The task.
    public func cancel(_ id: DownloadTaskID) async throws {
        guard let entry = tasks[id] else { throw DownloadError.unknownTask(id.rawValue) }
        guard !isShutDown else { throw DownloadError.invalidState("the engine is shut down") }
        if entry.state == .running || entry.state == .retrying {
            await stopWorker(id, intent: .cancelled)
            return
        }
        guard entry.state != .completed, entry.state != .cancelled else { return }
        queue.removeAll { $0 == id }
        finishCancelled(id)
    }

    /// Removes a task from the engine and deletes its record and partial file (cancelling it first if needed).
    /// A completed destination file is left alone.
    ///
    /// - Parameter id: The task.
    public func remove(_ id: DownloadTaskID) async throws {
        guard tasks[id] != nil else { throw DownloadError.unknownTask(id.rawValue) }
        guard !isShutDown else { throw DownloadError.invalidState("the engine is shut down") }
        try await cancel(id)
        if let entry = tasks[id] {
            store.delete(entry.record)
            // Also with a record file: a task's first lines went to the log before its record file existed.
            store.removeFromLog(id)
            byTarget[TaskTarget(entry.record, store: store)] = nil
        }
        tasks[id] = nil
        order.removeAll { $0 == id }
    }

    /// A snapshot of one task.
    ///
    /// - Parameter id: The task.
    /// - Returns: The snapshot, or `nil` for an unknown identifier.
    public func snapshot(_ id: DownloadTaskID) -> DownloadTaskSnapshot? {
        guard let entry = tasks[id] else { return nil }
        return DownloadTaskSnapshot(
            id: id, url: entry.record.url, resolvedURL: entry.record.resolvedURL, redirects: entry.record.redirects,
            destination: store.destinationPath(entry.record), state: entry.state, progress: entry.progress,
            error: entry.error, group: entry.group, notModified: entry.notModified)
    }

    /// Snapshots of every task, in the order they were added (loaded tasks first).
    public var allTasks: [DownloadTaskSnapshot] { order.compactMap { snapshot($0) } }

    /// Waits until the task completes, fails, is cancelled or is paused.
    ///
    /// - Parameter id: The task.
    /// - Returns: How it ended; `.failed(.unknownTask)` for an unknown identifier.
    public func result(of id: DownloadTaskID) async -> DownloadResult {
        guard let entry = tasks[id] else { return .failed(.unknownTask(id.rawValue)) }
        if let result = currentResult(entry) { return result }
        return await withCheckedContinuation { continuation in
            tasks[id]?.waiters.append(continuation)
        }
    }

    func currentResult(_ entry: Entry) -> DownloadResult? {
        if let result = entry.result { return result }
        switch entry.state {
        case .completed:
            return .completed(
                path: store.destinationPath(entry.record), sha256: entry.record.sha256,
                bytes: entry.record.recordedLength)
        case .failed: return .failed(entry.error ?? .invalidState("failed"))
        case .cancelled: return .cancelled
        case .paused: return .paused
        default: return nil
        }
    }

    // MARK: Shutdown

    /// Pauses every running transfer (persisting its record), waits for them to stop, closes the HTTP client and
    /// releases the state directory's lock. Event streams finish. The engine cannot be used afterwards.
    public func shutdown() async {
        guard !isShutDown else { return }
        isShutDown = true
        for id in queue {
            setState(id, .paused)
            settle(id, .paused)
        }
        queue.removeAll()
        for id in running { await stopWorker(id, intent: .paused) }
        await transport.shutdown()
        // Last: every record is saved, so the next engine on the directory finds them all.
        lock.release()
        hub.finish()
    }
}
