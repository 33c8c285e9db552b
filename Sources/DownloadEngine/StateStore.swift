import Foundation

/// One task's persistent record, stored as `<id>.json` next to its partial file `<id>.part`.
///
/// Self-describing (`format`, `version`), relative paths only: ``destination`` is relative to the state
/// directory, so moving the directory together with the output keeps every task resumable. The partial file's
/// length on disk, not ``recordedLength``, is the resume offset.
struct TaskRecord: Codable, Hashable, Sendable {
    static let formatName = "rangefetch-task"
    static let currentVersion = 1

    var format: String = TaskRecord.formatName
    var version: Int = TaskRecord.currentVersion
    var id: DownloadTaskID
    var url: String
    var resolvedURL: String?
    var redirects: [RedirectHop] = []
    /// Relative to the state directory.
    var destination: String
    /// Relative to the state directory.
    var partial: String
    var expectedSHA256: String?
    var overwrite: Bool = false
    var etag: String?
    var lastModified: String?
    var totalLength: Int64?
    var reprDigestSHA256: String?
    var state: DownloadState
    /// Informational only; never trusted over the partial file's length.
    var recordedLength: Int64 = 0
    var sha256: String?
    var error: String?
    var errorKind: String?
    var created: Date
    var updated: Date

    var validators: ResumePlanner.Validators {
        get { .init(etag: etag, lastModified: lastModified, totalLength: totalLength) }
        set {
            etag = newValue.etag
            lastModified = newValue.lastModified
            totalLength = newValue.totalLength
        }
    }
}

/// The state directory: one record and one partial file per task, records replaced atomically.
struct StateStore: Sendable {
    /// The absolute, normalised state directory.
    let directory: String
    /// Whether record saves are flushed to disk (``DownloadConfiguration/Durability/powerLoss``).
    let syncsToDisk: Bool

    init(directory: String, syncsToDisk: Bool = false) throws {
        self.directory = LexicalPath.absolute(directory)
        self.syncsToDisk = syncsToDisk
        try FileIO.makeDirectories(self.directory)
        guard access(self.directory, W_OK) == 0 else {
            throw DownloadError.fileSystem("state directory '\(self.directory)' is not writable")
        }
    }

    func recordPath(_ id: DownloadTaskID) -> String { directory + "/" + id.rawValue + ".json" }
    func partialPath(_ record: TaskRecord) -> String { LexicalPath.absolute(record.partial, relativeTo: directory) }
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
        var record = record
        record.updated = Date()
        let data: Data
        do {
            data = try Self.encoder.encode(record)
        } catch {
            throw DownloadError.fileSystem("cannot encode record \(record.id): \(error)")
        }
        try FileIO.atomicWrite(Array(data) + [0x0A], to: recordPath(record.id), sync: syncsToDisk)
    }

    /// Decodes one record file, checking format, version and that its paths are relative.
    static func decode(_ bytes: Data) throws -> TaskRecord {
        let record = try decoder.decode(TaskRecord.self, from: bytes)
        guard record.format == formatName, record.version == TaskRecord.currentVersion else {
            throw DownloadError.unexpectedResponse("unknown record format \(record.format) v\(record.version)")
        }
        guard !record.partial.hasPrefix("/"), !record.destination.hasPrefix("/"), !record.partial.contains("/") else {
            throw DownloadError.unexpectedResponse("record paths must be relative")
        }
        return record
    }

    private static var formatName: String { TaskRecord.formatName }

    /// Loads every record; corrupt ones are renamed to `<name>.corrupt-<unix time>` and reported, not deleted.
    func loadAll() -> (records: [TaskRecord], problems: [DownloadError]) {
        var records: [TaskRecord] = []
        var problems: [DownloadError] = []
        let names: [String]
        do {
            names = try FileIO.listDirectory(directory)
        } catch {
            return ([], [error as? DownloadError ?? .fileSystem("\(error)")])
        }
        // A `<id>.json.tmp` is a save that never reached its rename (the process died mid-write). For an existing
        // task the next save replaces it; for a task whose first save was cut short nothing ever would.
        for name in names where name.hasSuffix(".json.tmp") {
            FileIO.unlink(directory + "/" + name)
        }
        removeOrphanPartials(names)
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
        return (records, problems)
    }

    /// Deletes `<id>.part` files that have no record: a task's first record is saved only once the response head
    /// is known, so a run killed before that leaves an empty partial file that no later run would ever claim. A
    /// partial file beside a record set aside as corrupt is kept with it.
    private func removeOrphanPartials(_ names: [String]) {
        let present = Set(names)
        for name in names where name.hasSuffix(".part") {
            let stem = String(name.dropLast(".part".count))
            guard UUID(uuidString: stem) != nil, !present.contains(stem + ".json") else { continue }
            if names.contains(where: { $0.hasPrefix(stem + ".json.corrupt-") }) { continue }
            FileIO.unlink(directory + "/" + name)
        }
    }

    /// Deletes a task's record and partial file.
    func delete(_ record: TaskRecord) {
        FileIO.unlink(partialPath(record))
        FileIO.unlink(recordPath(record.id))
        if syncsToDisk { try? FileIO.fsyncDirectory(directory) }
    }
}
