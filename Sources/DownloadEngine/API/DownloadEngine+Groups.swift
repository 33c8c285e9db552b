import Foundation

extension DownloadEngine {
    // MARK: Groups

    /// Adds a batch of tasks as one group and starts them.
    ///
    /// - Parameter requests: The members.
    /// - Returns: The group. Members that could not be added are not in it; ``add(_:start:)`` explains why.
    /// - Throws: The first member's error when no member could be added.
    public func addGroup(_ requests: [DownloadRequest]) throws -> DownloadGroup {
        let id = DownloadGroupID(rawValue: UUID().uuidString.lowercased())
        var members: [DownloadTaskID] = []
        var firstError: (any Error)?
        groups[id] = GroupEntry(members: [])
        for request in requests {
            do {
                members.append(try add(request, start: false, group: id))
            } catch {
                firstError = firstError ?? error
            }
        }
        if members.isEmpty, let firstError { throw firstError }
        groups[id]?.members = members
        for member in members where tasks[member]?.state != .completed { try? start(member) }
        checkGroup(id)
        return DownloadGroup(id: id, members: members)
    }

    /// Waits until every member of a group has a result.
    ///
    /// - Parameter group: The group.
    /// - Returns: Each member's result.
    public func results(of group: DownloadGroup) async -> [DownloadTaskID: DownloadResult] {
        guard let entry = groups[group.id] else { return [:] }
        if entry.finished { return groupResults(entry.members) }
        return await withCheckedContinuation { continuation in
            groups[group.id]?.waiters.append(continuation)
        }
    }

    /// The group's aggregate progress (sums of bytes, totals and speeds; total `nil` while any member's is unknown).
    ///
    /// - Parameter group: The group.
    /// - Returns: The aggregate.
    public func progress(of group: DownloadGroup) -> DownloadProgress {
        var bytes: Int64 = 0
        var total: Int64? = 0
        var speed = 0.0
        for member in group.members {
            guard let entry = tasks[member] else { continue }
            bytes += entry.progress.bytes
            speed += entry.progress.bytesPerSecond
            if let t = entry.progress.total, let sum = total { total = sum + t } else { total = nil }
        }
        let eta = total.flatMap { speed > 0 ? Double(max(0, $0 - bytes)) / speed : nil }
        return DownloadProgress(bytes: bytes, total: total, bytesPerSecond: speed, eta: eta)
    }

    func groupResults(_ members: [DownloadTaskID]) -> [DownloadTaskID: DownloadResult] {
        var results: [DownloadTaskID: DownloadResult] = [:]
        for member in members {
            if let entry = tasks[member], let result = currentResult(entry) { results[member] = result }
        }
        return results
    }

    func checkGroup(_ id: DownloadGroupID?) {
        guard let id, let entry = groups[id], !entry.finished else { return }
        let results = groupResults(entry.members)
        guard results.count == entry.members.count else { return }
        groups[id]?.finished = true
        hub.publish(.groupFinished(id, results: results))
        for waiter in entry.waiters { waiter.resume(returning: results) }
        groups[id]?.waiters = []
    }
}
