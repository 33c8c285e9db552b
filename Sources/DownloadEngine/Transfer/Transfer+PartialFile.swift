import Crypto
import Foundation

extension Transfer {
    /// A revalidation that ended before a new representation's head leaves no partial file: the destination is
    /// the download.
    func closeUnusedPartial() {
        guard revalidating, fd >= 0 else { return }
        FileIO.close(fd)
        fd = -1
        FileIO.unlink(partialPath)
    }

    func save() throws {
        try store.save(record)
        recordOnDisk = true
    }

    /// The most bytes a partial file holds before the first record of its task is saved.
    ///
    /// A record costs a new inode, a JSON encoding and a rename: for many small files that was the larger part of
    /// the whole cost. Until then the task's validators are a line of the task log, appended before the first
    /// byte is written, so a `kill -9` costs such a task no more than one with a record file.
    static let unrecordedLimit: Int64 = 256 << 10

    /// Saves the record before the bytes of a body are written, so that bytes in the partial file are never on
    /// disk without the validators they belong to; `changed` tells whether the record differs from the one on disk.
    ///
    /// A task with no record file yet (a new task) is the exception: its record goes to the task log instead (one
    /// appended line, no inode), and its first record file is saved only when its partial file is about to hold
    /// more than ``unrecordedLimit`` bytes (by the writer, on the transport's thread). A small file is written, verified
    /// and moved into place with no record file at all. Retries, pauses and failures save the record as usual.
    ///
    /// - Returns: The save the writer must make before crossing ``unrecordedLimit``, if one is still owed.
    func saveBeforeWriting(changed: Bool) throws -> (@Sendable () throws -> Void)? {
        if recordOnDisk {
            if changed { try save() }
            return nil
        }
        if changed { try store.appendToLog(record) }
        return { [store, record] in try store.save(record) }
    }

    /// Opens the partial file, keeping its bytes when a record names their validators: a record file, or a line of
    /// the task log (the task was killed before its first record file). A new task's partial file starts empty
    /// without a `fstat` or a re-hash.
    func openPartial() throws {
        let keeps = recordOnDisk || record.validators != .init()
        let flags = O_RDWR | O_CREAT | (keeps ? 0 : O_TRUNC)
        do {
            fd = try FileIO.open(partialPath, flags)
        } catch {
            // The state directory was created with the engine; only someone deleting it since makes this needed.
            try FileIO.makeDirectories(LexicalPath.parent(partialPath))
            fd = try FileIO.open(partialPath, flags)
        }
        length = 0
        if keeps, let segments = record.segments {
            // What the record saved plus what the segment log adds, clipped to the file (a partial file emptied or
            // replaced by hand holds none of it). The digest is computed from byte 0 as the segments complete.
            let size = try FileIO.size(fd, partialPath)
            let logged = SegmentLog.ranges(at: store.segmentLogPath(record))
            let done = SegmentPlan.complement(
                of: SegmentPlan.complement(of: segments + logged, in: 0..<size), in: 0..<size)
            record.segments = done
            length = done.reduce(0) { $0 + Int64($1.count) }
            preallocated = size > 0
        } else if keeps {
            length = try FileIO.size(fd, partialPath)
            if configuration.verification.computesSHA256, length > 0 {
                hasher = SHA256()
                unhashedPrefix = length
            }
        }
        meter.restart(at: length)
    }

    /// Hashes the kept prefix of the partial file here and now, when no body will (see ``unhashedPrefix``).
    func rehashPrefix() throws {
        var hasher = SHA256()
        try FileIO.hashPrefix(fd, partialPath, length: unhashedPrefix, into: &hasher)
        self.hasher = hasher
        unhashedPrefix = 0
    }

    func truncate() throws {
        // Not when already empty: besides the system call, truncating a file makes ext4 flush it on close
        // (`auto_da_alloc`).
        if length > 0 || preallocated { try FileIO.truncate(fd, partialPath, to: 0) }
        preallocated = false
        length = 0
        unhashedPrefix = 0
        hasher = configuration.verification.computesSHA256 ? SHA256() : nil
        meter.restart(at: 0)
    }

    /// Moves the verified partial file into place (see `ResumePlanner.verify`); on the lane, after the partial file was
    /// flushed when the durability asks for it.
    func finish(digest: String?) throws -> TransferOutcome {
        let destination = store.destinationPath(record)
        if !record.overwrite, record.replacing != true, FileIO.exists(destination) {
            throw DownloadError.destinationExists(destination)
        }
        // With a record on disk, the completed record is saved before the rename: killed in between, the next run
        // finds a completed record without its destination, restarts the task (see `DownloadEngine.add`) and moves
        // the verified partial into place after a 416. Saved after the rename, a kill in between left the file in
        // place and a record that was not completed: the next run fetched everything again and failed with
        // destination-exists.
        //
        // Without a record on disk (a task that never passed 256 KiB) no record file is written: the completed
        // record is appended to the state directory's task log instead, so a rerun still finds the task done,
        // while a record file and its rename would have cost a new inode per file, the larger part of the cost of
        // many small files. Killed between the append and the rename, the next run finds the task completed
        // without its destination and fetches that small body again (its partial file, claimed by no unfinished
        // task, is deleted as an orphan).
        var completed = record
        completed.state = .completed
        completed.sha256 = digest
        completed.recordedLength = length
        completed.error = nil
        completed.errorKind = nil
        completed.replacing = nil
        let segmented = completed.segments != nil
        completed.segments = nil
        if recordOnDisk { try store.save(completed) } else { try store.appendToLog(completed) }
        try FileIO.moveIntoPlace(partialPath, destination, sync: configuration.durability.syncsToDisk)
        if segmented { FileIO.unlink(store.segmentLogPath(record)) }
        record = completed
        FileIO.close(fd)
        fd = -1
        return .completed(record, sha256: digest, bytes: length, onDisk: recordOnDisk)
    }

    /// A revalidation's 304: the destination is current and stays; the record on disk is still the completed one.
    /// An expected SHA-256 given with this run must match the one recorded for the file.
    func notModified() throws -> TransferOutcome {
        if let expected = record.expectedSHA256, let recorded = record.sha256, expected != recorded {
            throw DownloadError.verificationFailed(
                "the server says the file is not modified, and its SHA-256 is \(recorded), not \(expected)")
        }
        closeUnusedPartial()
        revalidating = false
        record.state = .completed
        record.replacing = nil
        record.error = nil
        record.errorKind = nil
        return .completed(
            record, sha256: record.sha256, bytes: record.recordedLength, onDisk: recordOnDisk, notModified: true)
    }

    /// A revalidation's 2xx: a new representation, downloaded from zero as any download from here on (its
    /// validators are saved before its first byte), which replaces the destination once complete and verified.
    func startNewRepresentation(reprDigest: String?) {
        revalidating = false
        record.validators = .init()
        record.sha256 = nil
        record.replacing = true
        self.reprDigest = reprDigest
        record.reprDigestSHA256 = nil
    }

    func discardPartial() {
        try? truncate()
        if record.segments != nil { FileIO.unlink(store.segmentLogPath(record)) }
        record.segments = nil
        record.validators = .init()
        record.reprDigestSHA256 = nil
    }
}
