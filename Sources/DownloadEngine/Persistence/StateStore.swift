import Foundation

/// One task's persistent record, stored as `<id>.json` next to its partial file `<id>.part`.
///
/// Self-describing (`format`, `version`), relative paths only: ``destination`` is relative to the state
/// directory, so moving the directory together with the output keeps every task resumable. The partial file's
/// length on disk, not ``recordedLength``, is the resume offset.
struct TaskRecord: Codable, Hashable, Sendable {
    static let formatName = "rangefetch-task"
    static let currentVersion = 1
    /// The version of a segmented task's record: an engine that knows only version 1 would take the partial file's
    /// length (a sparse file of the full length) for the bytes done, so it must refuse such a record.
    static let segmentedVersion = 2

    var format: String = TaskRecord.formatName
    var version: Int = TaskRecord.currentVersion
    var id: DownloadTaskID
    var url: String
    var resolvedURL: String?
    var redirects: [RedirectHop] = []
    /// Relative to the state directory. For a task named from the response (``outputDirectory``), the file in
    /// that directory: the name chosen from the first response written to the partial file once ``nameChosen``,
    /// the URL's name until then.
    var destination: String
    /// Relative to the state directory: the directory a task named from the response
    /// (``DownloadRequest/namesFromResponse``) saves its file in; `nil` for a task given its file, and in records
    /// written before names came from responses.
    var outputDirectory: String?
    /// Whether ``destination`` holds the name chosen from a response: kept from then on, so a later response (or a
    /// later run) that names the file differently does not rename it.
    var nameChosen: Bool?
    /// Whether this download replaces a destination that an earlier completion of the task put there (a
    /// revalidation got a new representation): its completion may replace that file without
    /// ``DownloadRequest/overwrite``. `nil` otherwise.
    var replacing: Bool?
    /// Relative to the state directory.
    var partial: String
    var expectedSHA256: String?
    var overwrite: Bool = false
    /// The request's own headers (``DownloadRequest/headers``), sent again on a resume after a restart; `nil` in
    /// records written before they were stored. On disk without the credential headers unless
    /// ``storesCredentials``.
    var headers: [HeaderField]?
    /// Whether credential headers are written to disk (``DownloadRequest/storesCredentials``).
    var storesCredentials: Bool?
    /// The credential headers the request had and the disk did not get: a resume after a restart needs them given
    /// again.
    var withheldHeaders: [String]?
    var etag: String?
    var lastModified: String?
    var totalLength: Int64?
    /// The `Content-Type` the partial file's bytes came with; `nil` in records written before it was stored.
    var contentType: String?
    var reprDigestSHA256: String?
    var state: DownloadState
    /// Informational only; never trusted over the partial file's length.
    var recordedLength: Int64 = 0
    var sha256: String?
    /// A segmented task's ranges done when the record was saved, as `[start, end]` pairs (end exclusive); `nil` for
    /// a task fetched over one connection, whose partial file's length is its progress. The segment log
    /// (`<id>.segments`) adds what was written since.
    var completedRanges: [[Int64]]?
    var error: String?
    var errorKind: String?
    var created: Date
    var updated: Date

    /// ``completedRanges`` as ranges; setting them also sets the record's version.
    var segments: [Range<Int64>]? {
        get {
            completedRanges.map { pairs in
                pairs.compactMap { $0.count == 2 && $0[0] >= 0 && $0[0] < $0[1] ? $0[0]..<$0[1] : nil }
            }
        }
        set {
            completedRanges = newValue.map { ranges in ranges.map { [$0.lowerBound, $0.upperBound] } }
            version = newValue == nil ? TaskRecord.currentVersion : TaskRecord.segmentedVersion
        }
    }

    var validators: ResumePlanner.Validators {
        get { .init(etag: etag, lastModified: lastModified, totalLength: totalLength, contentType: contentType) }
        set {
            etag = newValue.etag
            lastModified = newValue.lastModified
            totalLength = newValue.totalLength
            contentType = newValue.contentType
        }
    }
}

/// The state directory: one record and one partial file per task, records replaced atomically, and one task log
/// (`tasks.jsonl`) for the tasks that have no record file yet: small tasks, which may never get one.
struct StateStore: Sendable {
    /// The absolute, normalised state directory.
    let directory: String
    /// Whether record saves are flushed to disk (``DownloadConfiguration/Durability/powerLoss``).
    let syncsToDisk: Bool
    /// The task log, kept open between appends.
    private let taskLog: TaskLog
    /// Where transfers create their partial files and move them into place.
    let lane = FileSystemLane()

    init(directory: String, syncsToDisk: Bool = false) throws {
        self.directory = LexicalPath.absolute(directory)
        self.syncsToDisk = syncsToDisk
        self.taskLog = TaskLog(path: self.directory + "/" + Self.taskLogName, syncsToDisk: syncsToDisk)
        try FileIO.makeDirectories(self.directory)
        guard access(self.directory, W_OK) == 0 else {
            throw DownloadError.fileSystem("state directory '\(self.directory)' is not writable")
        }
    }

    func recordPath(_ id: DownloadTaskID) -> String { directory + "/" + id.rawValue + ".json" }
    /// Records of tasks that have no record file, one JSON object per line, appended.
    var taskLogPath: String { taskLog.path }
    static let taskLogName = "tasks.jsonl"
    func partialPath(_ record: TaskRecord) -> String { LexicalPath.absolute(record.partial, relativeTo: directory) }
    /// A segmented task's segment log (see ``SegmentLog``).
    func segmentLogPath(_ record: TaskRecord) -> String { directory + "/" + record.id.rawValue + ".segments" }
    func destinationPath(_ record: TaskRecord) -> String {
        LexicalPath.absolute(record.destination, relativeTo: directory)
    }
    func relative(_ absolutePath: String) -> String { LexicalPath.relative(from: directory, to: absolutePath) }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()

    private static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()

    /// Atomically replaces the record: temporary file, rename; with ``syncsToDisk`` also an fsync of the file
    /// before the rename and of the directory after.
    func save(_ record: TaskRecord) throws {
        var record = record.forDisk
        record.updated = Date()
        let data: Data
        do {
            data = try Self.encoder.encode(record)
        } catch {
            throw DownloadError.fileSystem("cannot encode record \(record.id): \(error)")
        }
        try FileIO.atomicWrite(Array(data) + [0x0A], to: recordPath(record.id), sync: syncsToDisk)
    }

    /// Appends a record to the task log: one `write` with `O_APPEND` to a file that already exists after the first,
    /// so a task without a record file costs no inode, yet a later run finds it: a small task's validators before
    /// its first byte is written (its partial file is resumed after a `kill -9`), its completed record before the
    /// rename (a rerun of the same command fetches nothing). With ``syncsToDisk`` the log and its directory entry
    /// are flushed too.
    func appendToLog(_ record: TaskRecord) throws {
        var record = record.forDisk
        record.updated = Date()
        let line: [UInt8]
        do {
            line = try record.jsonLine()
        } catch {
            throw DownloadError.fileSystem("cannot encode record \(record.id): \(error)")
        }
        try taskLog.append(line)
    }

    /// Drops a task from the task log (rewritten atomically), if it is there.
    func removeFromLog(_ id: DownloadTaskID) {
        guard let lines = try? taskLogLines() else { return }
        let kept = lines.filter { (try? Self.decode(Data($0)))?.id != id }
        guard kept.count != lines.count else { return }
        try? taskLog.rewrite(kept)
    }

    private func taskLogLines() throws -> [[UInt8]] { try taskLog.lines() }

    private typealias LoadedLog = (records: [TaskRecord], problems: [DownloadError])

    /// The records in the task log: the last line per URL and destination (a later line of a task supersedes its
    /// earlier ones), leaving out tasks that have a record file (it is newer) and unfinished tasks whose partial
    /// file is gone (nothing to resume). The log is rewritten without what was left out, so it holds at most one
    /// line per download. A line that does not decode (a write cut short by a power loss) is left out and reported.
    ///
    /// - Parameter names: The state directory's file names, for the partial files.
    private func loadTaskLog(besides records: [TaskRecord], names: Set<String>) -> LoadedLog {
        let lines: [[UInt8]]
        do {
            lines = try taskLogLines()
        } catch {
            return ([], [.fileSystem("cannot read '\(taskLogPath)': \(error)")])
        }
        var problems: [DownloadError] = []
        let filed = Set(records.map(\.id))
        let targets = Set(records.map { $0.url + "\u{0}" + $0.destination })
        var latest: [String: (index: Int, record: TaskRecord, line: [UInt8])] = [:]
        for (index, line) in lines.enumerated() {
            guard let record = try? Self.decode(Data(line)) else {
                problems.append(.fileSystem("ignored unreadable line \(index + 1) of '\(taskLogPath)'"))
                continue
            }
            let target = record.url + "\u{0}" + record.destination
            guard !filed.contains(record.id), !targets.contains(target) else { continue }
            latest[target] = (index, record, line)
        }
        let kept = latest.values.filter { $0.record.state == .completed || names.contains($0.record.partial) }
            .sorted { $0.index < $1.index }
        if kept.count != lines.count {
            try? taskLog.rewrite(kept.map(\.line))
        }
        return (kept.map(\.record), problems)
    }

    /// Decodes one record file, checking format, version and that its paths are relative.
    static func decode(_ bytes: Data) throws -> TaskRecord {
        let record = try decoder.decode(TaskRecord.self, from: bytes)
        guard record.format == formatName,
            record.version == TaskRecord.currentVersion
                || (record.version == TaskRecord.segmentedVersion && record.completedRanges != nil)
        else {
            throw DownloadError.unexpectedResponse("unknown record format \(record.format) v\(record.version)")
        }
        guard !record.partial.hasPrefix("/"), !record.destination.hasPrefix("/"), !record.partial.contains("/"),
            record.outputDirectory?.hasPrefix("/") != true
        else {
            throw DownloadError.unexpectedResponse("record paths must be relative")
        }
        return record
    }

    private static var formatName: String { TaskRecord.formatName }

    /// Loads every record, and the task log's records as `logged`; corrupt record files are renamed to
    /// `<name>.corrupt-<unix time>` and reported, not deleted.
    func loadAll() -> (records: [TaskRecord], logged: [TaskRecord], problems: [DownloadError]) {
        var records: [TaskRecord] = []
        var problems: [DownloadError] = []
        let names: [String]
        do {
            names = try FileIO.listDirectory(directory)
        } catch {
            return ([], [], [error as? DownloadError ?? .fileSystem("\(error)")])
        }
        // A `<id>.json.tmp` is a save that never reached its rename (the process died mid-write). For an existing
        // task the next save replaces it; for a task whose first save was cut short nothing ever would.
        for name in names where name.hasSuffix(".json.tmp") {
            FileIO.unlink(directory + "/" + name)
        }
        for name in names where name.hasSuffix(".json") {
            let path = directory + "/" + name
            do {
                let data = try Data(contentsOf: URL(fileURLWithPath: path))
                let record = try Self.decode(data)
                guard record.id.rawValue + ".json" == name else {
                    throw DownloadError.unexpectedResponse("record id does not match its file name")
                }
                records.append(record)
            } catch {
                let aside = path + ".corrupt-\(Int(Date().timeIntervalSince1970))"
                if (try? FileIO.rename(path, aside)) != nil {
                    problems.append(.corruptRecord(path, movedTo: aside))
                } else {
                    problems.append(.fileSystem("cannot set aside corrupt record '\(path)'"))
                }
            }
        }
        let present = Set(names)
        let log = loadTaskLog(besides: records, names: present)
        let claimed = Set(log.records.filter { $0.state != .completed }.map(\.partial))
        removeOrphanPartials(names, present: present, claimed: claimed)
        return (records, log.records, problems + log.problems)
    }

    /// Deletes `<id>.part` files that no record and no unfinished task in the log claims: a task is written down
    /// only once its response head is known, so a run killed before that leaves a partial file that no later run
    /// would ever claim. A partial file beside a record set aside as corrupt is kept with it. A segment log
    /// (`<id>.segments`) is kept exactly when its partial file is: it only exists beside a record.
    private func removeOrphanPartials(_ names: [String], present: Set<String>, claimed: Set<String>) {
        for name in names where name.hasSuffix(".part") || name.hasSuffix(".segments") {
            let stem = String(name.prefix { $0 != "." })
            guard UUID(uuidString: stem) != nil, !present.contains(stem + ".json"),
                !claimed.contains(stem + ".part")
            else {
                continue
            }
            if names.contains(where: { $0.hasPrefix(stem + ".json.corrupt-") }) { continue }
            FileIO.unlink(directory + "/" + name)
        }
    }

    /// Deletes a task's record, partial file and segment log.
    func delete(_ record: TaskRecord) {
        FileIO.unlink(partialPath(record))
        FileIO.unlink(segmentLogPath(record))
        FileIO.unlink(recordPath(record.id))
        if syncsToDisk { try? FileIO.fsyncDirectory(directory) }
    }
}
