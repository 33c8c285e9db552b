import Foundation

extension DownloadEngine {
    // MARK: Scheduling

    func pump() {
        while running.count < max(1, configuration.concurrency), !queue.isEmpty {
            let id = queue.removeFirst()
            guard let entry = tasks[id], entry.state == .waiting else { continue }
            running.insert(id)
            // Announced here, in the order the queue starts tasks: the workers begin on the concurrency pool in the
            // order it picks them, and their first step (creating the partial file on the file-system lane) may
            // wait for the lane, so reports of their own could arrive in another order. The transfer does not
            // report `running` on its first attempt for that reason.
            setState(id, .running, persist: false)
            let transfer = Transfer(
                record: entry.record, recordOnDisk: entry.onDisk, revalidating: entry.revalidating, store: store,
                transport: transport, configuration: configuration,
                pacing: ReadPacing(
                    shared: bandwidth, own: entry.bytesPerSecond.map(BandwidthLimiter.init(bytesPerSecond:)))
            ) { [weak self] report in
                await self?.handle(report, for: id)
            }
            tasks[id]?.worker = Task { [weak self] in
                let outcome = await transfer.run()
                await self?.finished(id, outcome)
            }
        }
    }

    func stopWorker(_ id: DownloadTaskID, intent: DownloadState) async {
        guard let worker = tasks[id]?.worker else { return }
        tasks[id]?.stopIntent = intent
        worker.cancel()
        await worker.value
    }

    func handle(_ report: TransferReport, for id: DownloadTaskID) {
        guard tasks[id] != nil, tasks[id]?.stopIntent == nil else { return }
        switch report {
        case .running:
            if tasks[id]?.state != .running { setState(id, .running) }
        case .progress(let progress):
            tasks[id]?.progress = progress
            hub.publish(.progress(id, progress))
        case .redirected(let hop, let record):
            tasks[id]?.record = record
            hub.publish(.redirected(id, hop))
        case .named(let record):
            tasks[id]?.record = record
        case .retrying(let attempt, let delay, let error):
            hub.publish(.retrying(id, attempt: attempt, delay: delay, error: error))
            setState(id, .retrying)
        }
    }

    func finished(_ id: DownloadTaskID, _ outcome: TransferOutcome) {
        running.remove(id)
        guard var entry = tasks[id] else { return pump() }
        let intent = entry.stopIntent
        // Every outcome but a completion without a record was saved by the transfer.
        entry.onDisk = true
        entry.worker = nil
        entry.stopIntent = nil
        entry.revalidating = false
        switch outcome {
        case .completed(let record, let sha256, let bytes, let onDisk, let notModified):
            entry.onDisk = onDisk
            entry.notModified = notModified
            entry.record = record
            entry.progress = .init(bytes: bytes, total: bytes, bytesPerSecond: entry.progress.bytesPerSecond, eta: 0)
            tasks[id] = entry
            hub.publish(.progress(id, entry.progress))
            let path = store.destinationPath(record)
            hub.publish(.completed(id, path: path, sha256: sha256, bytes: bytes))
            setState(id, .completed, persist: false)
            settle(id, .completed(path: path, sha256: sha256, bytes: bytes))
        case .failed(let record, let error):
            entry.record = record
            entry.error = error
            tasks[id] = entry
            hub.publish(.failed(id, error))
            setState(id, .failed, persist: false)
            settle(id, .failed(error))
        case .stopped(let record, let revalidating):
            entry.record = record
            entry.revalidating = revalidating
            tasks[id] = entry
            if intent == .cancelled {
                finishCancelled(id)
            } else {
                setState(id, .paused, persist: false)
                settle(id, .paused)
            }
        }
        pump()
    }

    func finishCancelled(_ id: DownloadTaskID) {
        guard var entry = tasks[id] else { return }
        FileIO.unlink(store.partialPath(entry.record))
        FileIO.unlink(store.segmentLogPath(entry.record))
        entry.record.validators = .init()
        entry.record.segments = nil
        entry.progress = .init(bytes: 0, total: entry.progress.total, bytesPerSecond: 0, eta: nil)
        tasks[id] = entry
        setState(id, .cancelled)
        settle(id, .cancelled)
    }

    /// Changes a task's state. Only the states a later run must see are saved: paused, cancelled, and failed or
    /// completed when the transfer has not saved them already (`persist: false`); `idle`, `waiting`, `running` and
    /// `retrying` are never saved by the engine, since a loaded unfinished task is paused whatever it was.
    func setState(_ id: DownloadTaskID, _ state: DownloadState, persist: Bool = true) {
        guard var entry = tasks[id] else { return }
        entry.state = state
        entry.record.state = state
        tasks[id] = entry
        // A revalidation that has not started keeps the completed record on disk: the next run finds the task done.
        let keepsCompleted = entry.revalidating && state == .paused
        if persist, !keepsCompleted, [.paused, .cancelled, .failed, .completed].contains(state),
            (try? store.save(entry.record)) != nil
        {
            tasks[id]?.onDisk = true
        }
        hub.publish(.stateChanged(id, state))
    }

    func settle(_ id: DownloadTaskID, _ result: DownloadResult) {
        guard var entry = tasks[id] else { return }
        entry.result = result
        let waiters = entry.waiters
        entry.waiters = []
        tasks[id] = entry
        for waiter in waiters { waiter.resume(returning: result) }
        checkGroup(entry.group)
    }
}
