import Dispatch
import Foundation
import ObjectGraph
import PropertyList
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The document's data directory at run time: recovery at start, the journal, and snapshots (`DataDirectory`).
///
/// Snapshots run on one serial queue: periodically in the background once the journal holds `snapshotRecords`
/// records or `snapshotBytes` bytes since the last one, on `save`, and on `close`. A snapshot encodes the store
/// under its lock (a read, in O(objects)) and starts a new journal segment in the same critical section, then writes
/// and syncs the file outside the lock, and only then removes what it makes obsolete.
final class DocumentStorage: Sendable {
    /// Tuning knobs; the defaults keep start-up replay of a full journal interval well under a second.
    struct Options: Sendable {
        var fsync: FsyncPolicy = .batch
        var snapshotRecords = 50_000
        var snapshotBytes = 64 << 20
    }

    let directory: DataDirectory
    let journal: Journal
    /// Whether the last run on this directory stopped without a clean close (a crash, kill -9, power loss).
    let recoveredFromCrash: Bool
    /// Journal records replayed at the start (on the newest snapshot).
    let replayedAtOpen: Int
    /// The store's seq right after this run seeded it from the fixture (nil: it was loaded from the directory).
    let seededSeq: Int64?
    /// The directory's locks (`DataDirectory.lock()`), held while the storage lives.
    private let locks: [OwnedFileDescriptor]
    private let snapshots = DispatchQueue(label: "bindery.snapshots")
    /// Looks at the journal's segment and the newest snapshot every second (`checkFiles`), so that one removed while
    /// no change comes is recovered within a second, not at the next change. `nonisolated(unsafe)`: a dispatch
    /// source may be used from any thread.
    nonisolated(unsafe) private let segmentWatch: any DispatchSourceTimer
    private let progress: Mutex<Progress>

    private struct Progress {
        /// The seq of the newest durable snapshot.
        var snapshotSeq: Int64
        /// The seq of the snapshot `saved.bin` holds (nil: none).
        var savedSnapshotSeq: Int64?
        /// The seqs of this run's `revertToSaved`s since that save: the store was the saved state after each.
        var revertSeqs: [Int64] = []
        /// The newest content seq at which the store equalled `saved.bin`, as the directory records it: `saved.bin`'s
        /// own, or `saved-state`'s (nil: nothing saved).
        var uneditedContentSeq: Int64?
        var isSnapshotScheduled = false
        var isClosed = false
        /// Periodic snapshots that failed in a row, and when (`DispatchTime` nanoseconds) the next may be tried: one
        /// that failed is due again at once (the journal still counts its records), so it waits 1, 2, 4... up to 60
        /// seconds rather than being tried at every commit while the disk is full.
        var snapshotFailures = 0
        var snapshotRetryAt: UInt64 = 0
    }

    /// Takes the directory's lock, then loads the store from it (newest valid snapshot, then the journal), or,
    /// when it holds neither, runs `seed` on the empty store and saves the result as the first snapshot. A directory
    /// that holds neither but a file a run leaves (`DataDirectory.stateNames`) lost its store files: refused.
    ///
    /// `report` receives one line per problem recovered from (a torn journal tail, an unreadable older snapshot).
    /// Throws (and leaves the directory as it was, lock released) when the data cannot be recovered without
    /// losing acknowledged changes: a damaged record followed by more records, a gap in the seqs, a record that does
    /// not apply.
    init(
        path: String, options: Options, store: ObjectStore, seed: () throws -> Void,
        report: @escaping @Sendable (String) -> Void
    ) throws {
        // The seed's record is delivered now, to nobody: observers come later and must not see it as a change.
        defer { store.deliverCommitted() }
        try FileIO.makeDirectories(path)
        var locking = DataDirectory(path: path)
        locks = try locking.lock()
        let directory = locking
        self.directory = directory
        try directory.removeTemporaryFiles()
        let marker = directory.file(DataDirectory.closedCleanlyName)
        let closedCleanly = FileManager.default.fileExists(atPath: marker)
        let (snapshots, segments) = try directory.contents()
        if snapshots.isEmpty && segments.isEmpty {
            // Seeding is for a directory never used: state files without a snapshot and journal mean they were lost.
            let used = try FileIO.list(path).filter { DataDirectory.stateNames.contains($0) }.sorted()
            guard used.isEmpty else {
                throw ObjectGraphError(
                    status: 500, code: "bad-snapshot",
                    message: "\(path) has been used (it holds \(used.joined(separator: ", "))), but its store files "
                        + "(snapshots and journal) are missing; refusing to start over.")
            }
        }
        recoveredFromCrash = !closedCleanly && !(snapshots.isEmpty && segments.isEmpty)
        var snapshotSeq: Int64 = 0
        var savedSeq: Int64?
        var uneditedContentSeq: Int64?
        let file: OwnedFileDescriptor
        var firstSeq: Int64
        var size = 0
        var replayed = 0
        var versions = SnapshotVersions.answered
        var segmentHeaders = true
        if snapshots.isEmpty && segments.isEmpty {
            try seed()
            let seq = store.seq
            seededSeq = seq
            try Self.writeSnapshot(store.read { $0.binarySnapshot() }, seq: seq, in: directory)
            try Self.markSaved(seq, in: directory)
            snapshotSeq = seq
            savedSeq = seq
            uneditedContentSeq = store.read { $0.contentSeq }
            firstSeq = seq + 1
            (file, size) = try Journal.openSegment(directory, firstSeq: firstSeq)
        } else {
            seededSeq = nil
            (snapshotSeq, versions, segmentHeaders) = try Self.loadNewestSnapshot(
                snapshots, in: directory, into: store, report: report)
            if recoveredFromCrash && (segments.last ?? 0) <= snapshotSeq {
                // A run always has a segment after its newest snapshot (it is opened before the old ones go): none
                // after a crash means it was removed, and what it held (if anything) is lost. Said, not refused: a
                // crash between seeding's snapshot and its first segment leaves the same, with nothing lost.
                report(
                    "no journal segment after the snapshot of seq \(snapshotSeq) in \(path) after a crash: changes "
                        + "after it, if there were any, are lost")
            }
            (savedSeq, uneditedContentSeq) = Self.savedState(in: directory)
            replayed = try Self.replay(
                segments, in: directory, into: store, headersExpected: segmentHeaders, versions: versions,
                report: report)
            let seq = store.seq
            if let last = segments.last, last <= seq + 1 {
                firstSeq = last
                file = try FileIO.open(directory.file(DataDirectory.segmentName(last)), O_WRONLY | O_APPEND)
                size = try Journal.writeHeaderIfEmpty(file)
            } else {
                firstSeq = seq + 1
                (file, size) = try Journal.openSegment(directory, firstSeq: firstSeq)
            }
        }
        replayedAtOpen = replayed
        if closedCleanly {
            // Once the store is loaded (a start refused before leaves the marker, so the next start still knows the
            // last run closed cleanly), and before anything is journaled: from now on a crash must be noticed at the
            // next start. A marker that cannot go refuses the start.
            guard unlink(marker) == 0 else { throw FileIO.error("unlink", marker) }
            try FileIO.syncDirectory(path)
        }
        journal = Journal(
            directory: directory, policy: options.fsync, file: file, firstSeq: firstSeq, size: size, seq: store.seq,
            snapshotSeq: snapshotSeq,
            // A snapshot of an earlier format is replaced at the first commit: its versions are converted at each
            // start, and until one says the segments have headers an emptied segment goes unnoticed.
            recordsSinceSnapshot: versions != .answered || !segmentHeaders
                ? max(replayed, options.snapshotRecords) : replayed,
            snapshotRecords: options.snapshotRecords,
            snapshotBytes: options.snapshotBytes, deliver: { store.deliverCommitted(through: $0) },
            rollBack: { [rolledBack] in
                Self.reload(store, from: directory, report: report)
                for observer in rolledBack.observers.withLock({ $0 }) { observer() }
            }, report: report)
        progress = Mutex(
            Progress(
                snapshotSeq: snapshotSeq, savedSnapshotSeq: savedSeq,
                uneditedContentSeq: uneditedContentSeq))
        segmentWatch = DispatchSource.makeTimerSource(queue: self.snapshots)
        journal.setRecovery { [weak self] wait in
            guard let self else { return nil }
            if wait {
                do throws(ObjectGraphError) {
                    try onSnapshotQueue { () throws(ObjectGraphError) in try recoverLostSegment(store, report: report) }
                    return nil
                } catch {
                    return error
                }
            }
            self.snapshots.async { [self] in
                do throws(ObjectGraphError) {
                    try recoverLostSegment(store, report: report)
                } catch {
                    report(
                        "a journal segment, or the snapshot it follows, was removed while in use, and no snapshot "
                            + "could replace it: \(error.message)"
                    )
                    journal.recoveryFailed(error)
                }
            }
            return nil
        }
        segmentWatch.schedule(deadline: .now() + 1, repeating: 1, leeway: .milliseconds(200))
        segmentWatch.setEventHandler { [weak self] in self?.checkFiles(store, report: report) }
        segmentWatch.resume()
    }

    /// Every second, on the snapshot queue: the journal's segment (`Journal.checkSegment`), and the newest snapshot,
    /// which the journal after it needs: one removed while in use (by hand, by a clean-up script) is written again at
    /// once, since a crash would otherwise leave a journal that no start can read.
    private func checkFiles(_ store: ObjectStore, report: (String) -> Void) {
        journal.checkSegment()
        let (seq, isClosed) = progress.withLock { ($0.snapshotSeq, $0.isClosed) }
        let name = DataDirectory.snapshotName(seq)
        guard !isClosed, journal.failure == nil, !journal.isSegmentLost, (try? directory.checkInPlace()) != nil,
            access(directory.file(name), F_OK) != 0, errno == ENOENT
        else { return }
        do throws(ObjectGraphError) {
            let written = try writeSnapshotNow(store, markSaved: false, recovering: true)
            report("the snapshot \(name) was removed while in use; \(DataDirectory.snapshotName(written)) replaces it")
        } catch {
            // As for a removed segment: a crash could no longer recover what was acknowledged, so changes stop.
            report("the snapshot \(name) was removed while in use, and no snapshot could replace it: \(error.message)")
            journal.recoveryFailed(error)
        }
    }

    // MARK: Recovery

    /// Called after the store went back to what the files hold (the document forgets its undo groups, controllers
    /// re-read their content).
    final class RollBackHook: Sendable {
        let observers = Mutex<[@Sendable () -> Void]>([])
    }

    let rolledBack = RollBackHook()

    /// Puts the store back in the state the data directory holds (its newest snapshot and the journal), dropping
    /// what was committed in memory after the last record written, and what of it was not delivered yet.
    ///
    /// Not from a directory that is no longer the one locked (removed or replaced, `DataDirectory.checkInPlace`):
    /// what is at its path now is another store, or nothing. The store then stays as it is (changes are refused until
    /// restart, and `/healthz` says so).
    private static func reload(_ store: ObjectStore, from directory: DataDirectory, report: (String) -> Void) {
        do throws(ObjectGraphError) {
            try directory.checkInPlace()
            let durable = ObjectStore(model: store.model)
            let (snapshots, segments) = try directory.contents()
            let versions = try loadNewestSnapshot(snapshots, in: directory, into: durable, report: report).versions
            try replay(
                segments, in: directory, into: durable, headersExpected: false, versions: versions, report: report)
            let before = store.seq
            try store.restore(binarySnapshot: durable.read { $0.binarySnapshot() })
            store.discardUndelivered(after: durable.seq)
            report(
                "the journal could not be written: the changes after seq \(durable.seq) (up to \(before)) are undone; "
                    + "changes are refused until restart")
        } catch {
            report("the journal could not be written, and the store could not be reloaded: \(error.message)")
        }
    }

    /// Restores the newest snapshot that reads back intact (reporting the others); returns its seq, or 0 when there
    /// is none, and what its versions are (`ObjectStore.restore(binarySnapshot:convertingEarlierVersions:)`): an
    /// earlier format's are still the objects' own (`replay` converts them). Throws when snapshots exist but none is
    /// intact.
    private static func loadNewestSnapshot(
        _ snapshots: [Int64], in directory: DataDirectory, into store: ObjectStore, report: (String) -> Void
    ) throws(ObjectGraphError) -> (seq: Int64, versions: SnapshotVersions, segmentHeaders: Bool) {
        var failures: [String] = []
        for seq in snapshots.reversed() {
            let path = directory.file(DataDirectory.snapshotName(seq))
            do throws(ObjectGraphError) {
                let bytes = try FileIO.read(path)
                let payload = try SnapshotFile.payload(of: bytes, path: path)
                let versions = try store.restore(binarySnapshot: payload, convertingEarlierVersions: false)
                for failure in failures { report(failure + "; loaded \(path) instead") }
                return (store.seq, versions, SnapshotFile.isFollowedBySegmentHeaders(bytes))
            } catch {
                failures.append(error.message)
            }
        }
        guard failures.isEmpty else {
            throw ObjectGraphError(
                status: 500, code: "bad-snapshot",
                message: "No snapshot in \(directory.path) can be read: " + failures.joined(separator: "; "))
        }
        return (0, .answered, false)
    }

    /// Applies every journal record after the store's seq, segment by segment; returns how many were applied.
    ///
    /// A torn or corrupt frame at the end of the last segment is cut off (with everything after it), then reported;
    /// anywhere else it is an error, as are an intact frame that is not a change record, gaps, seqs that do not
    /// increase within a segment, and records that do not apply. A segment begins with `JournalFrame.segmentHeader`
    /// (one an earlier version wrote may not); with `headersExpected` (the snapshot says every segment after it was
    /// opened with one), a last segment without it lost its bytes: reported, as a torn tail is.
    ///
    /// `versions`: those of the snapshot loaded; an earlier format's are the objects' own, which the records move as
    /// that version did, and they are then made what it answered
    /// (`ObjectStore.restore(binarySnapshot:convertingEarlierVersions:)`).
    @discardableResult
    private static func replay(
        _ segments: [Int64], in directory: DataDirectory, into store: ObjectStore, headersExpected: Bool,
        versions: SnapshotVersions, report: (String) -> Void
    ) throws(ObjectGraphError) -> Int {
        var applied = 0
        for (position, firstSeq) in segments.enumerated() {
            let isLast = position == segments.count - 1
            if !isLast && segments[position + 1] <= store.seq + 1 { continue }
            let path = directory.file(DataDirectory.segmentName(firstSeq))
            // A segment begins where the snapshot or the previous segment ends; a later start means records (or
            // the snapshot that held them) are missing, even when the segment itself is empty.
            guard firstSeq <= store.seq + 1 else {
                throw ObjectGraphError(
                    status: 500, code: "journal-gap",
                    message: "\(path) starts at seq \(firstSeq), but the snapshot and the journal before it reach "
                        + "only seq \(store.seq); records or a snapshot are missing.")
            }
            let bytes = try FileIO.read(path)
            let header = JournalFrame.segmentHeader
            let hasHeader = bytes.starts(with: header)
            if !hasHeader, bytes.count >= header.count, bytes.starts(with: header.dropLast()) {
                throw ObjectGraphError(
                    status: 500, code: "journal-corrupt",
                    message: "\(path) begins with a segment header this version does not read (\""
                        + String(decoding: bytes.prefix(header.count), as: UTF8.self)
                        + "\": damaged, or written by another version); refusing to start rather than drop it.")
            }
            let (payloads, end) = JournalFrame.scan(bytes, from: hasHeader ? header.count : 0)
            var damage: (offset: Int, reason: String)?
            if case .damaged(let offset, let reason) = end { damage = (offset, reason) }
            if !hasHeader, bytes.count < header.count, header.starts(with: bytes) {
                // Empty, or a header cut short: no record was ever in it, or its bytes are gone.
                if !bytes.isEmpty {
                    damage = (0, "a torn segment header")
                } else if isLast && headersExpected {
                    report(
                        "\(path) is empty, without the header it was opened with: the changes after seq \(store.seq), "
                            + "if there were any, are lost")
                }
            }
            var previousSeq: Int64?
            for payload in payloads {
                let record: ChangeRecord
                do {
                    record = try ChangeRecord(
                        json: try PropertyListValue(
                            jsonBytes: bytes[payload], maximumDepth: PropertyListValue.fileDepthLimit))
                } catch {
                    let reason = (error as? ObjectGraphError)?.message ?? "\(error)"
                    // Its checksum matches: not a torn write but intact data of another kind (another version's
                    // record, say), which cutting off would destroy.
                    throw ObjectGraphError(
                        status: 500, code: "journal-corrupt",
                        message: "\(path): the record at byte \(payload.lowerBound - JournalFrame.headerSize) is "
                            + "intact but not a change record this version reads (\(reason)); refusing to start rather "
                            + "than drop it.")
                }
                // Seqs only increase within a segment: one that does not was written by another server on the
                // same directory (or is damage), and skipping it as already replayed would drop it silently.
                if let previousSeq, record.seq <= previousSeq {
                    throw ObjectGraphError(
                        status: 500, code: "journal-corrupt",
                        message: "\(path): record \(record.seq) follows record \(previousSeq) in the same segment; "
                            + "refusing to drop acknowledged changes.")
                }
                previousSeq = record.seq
                if record.seq <= store.seq { continue }
                guard record.firstSeq == store.seq + 1 else {
                    throw ObjectGraphError(
                        status: 500, code: "journal-gap",
                        message: "\(path): record \(record.seq) follows \(store.seq); records are missing.")
                }
                do throws(ObjectGraphError) {
                    try store.apply(record, versions: versions)
                } catch {
                    throw ObjectGraphError(
                        status: 500, code: "journal-replay-failed",
                        message: "\(path): record \(record.seq) does not apply: \(error.message)")
                }
                applied += 1
            }
            guard let damage else { continue }
            let dropped = bytes.count - damage.offset
            guard isLast else {
                throw ObjectGraphError(
                    status: 500, code: "journal-corrupt",
                    message: "\(path): \(damage.reason) at byte \(damage.offset), and later segments follow; "
                        + "refusing to drop acknowledged changes.")
            }
            // A crash tears only the end: intact records after the damage mean it is in the middle.
            guard !JournalFrame.hasIntactFrame(in: bytes, after: damage.offset) else {
                throw ObjectGraphError(
                    status: 500, code: "journal-corrupt",
                    message: "\(path): \(damage.reason) at byte \(damage.offset), and intact records follow it; "
                        + "refusing to drop acknowledged changes.")
            }
            let file = try FileIO.open(path, O_WRONLY)
            if let code = FileIO.truncate(file.fd, to: damage.offset) {
                throw FileIO.error("ftruncate", path, errno: code)
            }
            if let code = FileIO.sync(file.fd) { throw FileIO.error("fdatasync", path, errno: code) }
            report(
                "\(path): \(damage.reason) at byte \(damage.offset); cut off \(dropped) byte\(dropped == 1 ? "" : "s") "
                    + "(the store recovers up to seq \(store.seq))")
        }
        if versions != .answered { store.addDerivedReadsToVersions() }
        return applied
    }

    // MARK: Snapshots

    /// Writes a snapshot now, unless the newest already holds the store's seq; with `markSaved`, it also becomes
    /// what `revertToSaved` returns to. Returns the seq it holds. Blocks until durable.
    @discardableResult
    func snapshot(_ store: ObjectStore, markSaved: Bool) throws(ObjectGraphError) -> Int64 {
        try onSnapshotQueue { () throws(ObjectGraphError) in try writeSnapshotNow(store, markSaved: markSaved) }
    }

    /// Runs `body` on the snapshot queue and waits for it: the queue orders every write of `saved.bin` and
    /// `saved-state`.
    private func onSnapshotQueue<T>(_ body: () throws(ObjectGraphError) -> T) throws(ObjectGraphError) -> T {
        let result: Result<T, ObjectGraphError> = snapshots.sync {
            do throws(ObjectGraphError) {
                return .success(try body())
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Schedules a background snapshot when the journal has grown enough since the last one (and, after failures,
    /// once their wait is over).
    func snapshotIfDue(_ store: ObjectStore, report: @escaping @Sendable (String) -> Void) {
        guard journal.wantsSnapshot else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        let schedules = progress.withLock { progress in
            if progress.isSnapshotScheduled || progress.isClosed || now < progress.snapshotRetryAt { return false }
            progress.isSnapshotScheduled = true
            return true
        }
        guard schedules else { return }
        snapshots.async { [self] in
            var failed = false
            do throws(ObjectGraphError) {
                _ = try writeSnapshotNow(store, markSaved: false)
            } catch {
                failed = true
                report("snapshot failed: \(error.message)")
            }
            progress.withLock { progress in
                progress.isSnapshotScheduled = false
                progress.snapshotFailures = failed ? progress.snapshotFailures + 1 : 0
                let wait = failed ? min(60, 1 << min(progress.snapshotFailures - 1, 6)) : 0
                progress.snapshotRetryAt = DispatchTime.now().uptimeNanoseconds + UInt64(wait) * 1_000_000_000
            }
        }
    }

    /// Every seq at which the store was the saved state: `saved.bin`'s, and this run's `revertToSaved`s since.
    var savedStateSeqs: [Int64] {
        progress.withLock { progress in (progress.savedSnapshotSeq.map { [$0] } ?? []) + progress.revertSeqs }
    }

    /// The newest content seq (`ReadView.contentSeq`) at which the store equalled the saved state, as the directory
    /// records it (nil: nothing saved). At start, a store whose content seq differs was edited before this run.
    var uneditedContentSeq: Int64? {
        progress.withLock { $0.uneditedContentSeq }
    }

    /// The saved state's snapshot bytes (`saved.bin`), for `revertToSaved`. Read on the snapshot queue, as `save`
    /// writes it: a save whose directory sync fails puts the previous `saved.bin` back there (`markSaved`), and the
    /// new one, which it refuses, is never read in between.
    func savedSnapshot() throws(ObjectGraphError) -> [UInt8] {
        let path = directory.file(DataDirectory.savedName)
        return try onSnapshotQueue { () throws(ObjectGraphError) in
            try SnapshotFile.payload(of: try FileIO.read(path), path: path)
        }
    }

    /// Marks the `revertToSaved` committed at `seq` as the saved state: the store equals the snapshot of
    /// `savedSnapshot` again, with its content at `contentSeq`. Recorded in `saved-state` too, so that the next start
    /// (also after a crash) finds the document unedited. Nothing changes when a `save` replaced that snapshot
    /// meanwhile (the state saved since is the one that counts). A failed write is reported, not thrown: the revert
    /// is committed, only the next start would count the document edited.
    func noteRevertedToSaved(
        at seq: Int64, contentSeq: Int64, savedSnapshot: Int64, report: (String) -> Void
    ) {
        do throws(ObjectGraphError) {
            try onSnapshotQueue { () throws(ObjectGraphError) in
                let current = progress.withLock { progress in
                    guard progress.savedSnapshotSeq == savedSnapshot else { return false }
                    progress.revertSeqs.append(seq)
                    return true
                }
                if current { try recordUneditedNow(contentSeq: contentSeq) }
            }
        } catch {
            report(
                "recording the reverted state failed (the next start will count the document edited): "
                    + error.message)
        }
    }

    /// Writes `saved-state` when `contentSeq` is newer than the unedited content seq recorded. Runs on the snapshot
    /// queue.
    private func recordUneditedNow(contentSeq: Int64) throws(ObjectGraphError) {
        let (saved, recorded) = progress.withLock { ($0.savedSnapshotSeq, $0.uneditedContentSeq) }
        guard let saved, contentSeq > recorded ?? .min else { return }
        try directory.writeDurably([Array("\(saved) \(contentSeq)\n".utf8)], to: DataDirectory.savedStateName)
        progress.withLock { $0.uneditedContentSeq = contentSeq }
    }

    /// Runs on the snapshot queue: replaces a removed journal segment with a snapshot, unless another recovery (the
    /// periodic look, a commit's) did already.
    private func recoverLostSegment(_ store: ObjectStore, report: (String) -> Void) throws(ObjectGraphError) {
        guard journal.isSegmentLost else { return }
        _ = try writeSnapshotNow(store, markSaved: false, recovering: true)
        report(
            "a journal segment, or the snapshot it follows, was removed while in use; a snapshot now holds what it held"
        )
    }

    /// Runs on the snapshot queue. `recovering` (a journal segment was removed) writes one even at the newest
    /// snapshot's seq, which also replaces the segment.
    private func writeSnapshotNow(
        _ store: ObjectStore, markSaved: Bool, recovering: Bool = false
    ) throws(ObjectGraphError) -> Int64 {
        var seq = progress.withLock { $0.snapshotSeq }
        // A segment, or the newest snapshot, removed by hand (before the look every second found it) is recovered:
        // the snapshot is written before a new segment starts (`save` links `saved.bin` to it, and the journal needs
        // it).
        let recovering =
            recovering || journal.findsSegmentLost()
            || (access(directory.file(DataDirectory.snapshotName(seq)), F_OK) != 0 && errno == ENOENT)
        if store.seq != seq || recovering {
            let journal = journal
            let directory = directory
            let (bytes, taken) = try store.read { (view: ReadView) throws(ObjectGraphError) -> ([UInt8]?, Int64) in
                if recovering {
                    // What the removed segment held is nowhere else: the snapshot is on disk before a segment starts
                    // after it (a crash in between would leave a gap no start can cross), so it is written under the
                    // lock, commits waiting meanwhile. Rare: only after a segment was removed.
                    try Self.writeSnapshot(view.binarySnapshot(), seq: view.seq, in: directory)
                    try journal.rotate(nextSeq: view.seq + 1, covered: true)
                    return (nil, view.seq)
                }
                // A snapshot that cannot fit is refused before the rotation, so that no new segment is begun for it.
                let bytes = view.binarySnapshot()
                try Self.checkFits(bytes, in: directory)
                try journal.rotate(nextSeq: view.seq + 1)
                return (bytes, view.seq)
            }
            if let bytes { try Self.writeSnapshot(bytes, seq: taken, in: directory) }
            journal.snapshotWritten(through: taken)
            seq = taken
            progress.withLock { $0.snapshotSeq = taken }
            removeObsoleteFiles(before: taken)
        }
        if markSaved {
            try Self.markSaved(seq, in: directory)
            let contentSeq = Self.savedState(in: directory).uneditedContentSeq
            progress.withLock { progress in
                progress.savedSnapshotSeq = seq
                progress.revertSeqs = []
                progress.uneditedContentSeq = contentSeq
            }
        }
        return seq
    }

    /// A snapshot that cannot fit is not begun: written until the disk is full, it would take the space the
    /// journal's next writes need (with `batch` they wait for it to come back) for nothing.
    private static func writeSnapshot(_ payload: [UInt8], seq: Int64, in directory: DataDirectory)
        throws(ObjectGraphError)
    {
        try checkFits(payload, in: directory)
        try directory.writeDurably([SnapshotFile.header(for: payload), payload], to: DataDirectory.snapshotName(seq))
    }

    /// Throws 503 `storage-error` when a snapshot of `payload` would not fit in the free space.
    private static func checkFits(_ payload: [UInt8], in directory: DataDirectory) throws(ObjectGraphError) {
        let needed = UInt64(SnapshotFile.headerSize + payload.count)
        if let available = FileIO.availableSpace(directory.path), available < needed {
            throw ObjectGraphError(
                status: 503, code: "storage-error",
                message: "A snapshot of \(needed) bytes does not fit in \(directory.path) (\(available) bytes free).")
        }
    }

    /// Makes `saved.bin` a hard link to the snapshot of `seq` (atomically replacing the previous one).
    ///
    /// All or nothing: when the directory cannot be synced after the rename, the saved snapshot before is put back (a
    /// save answered as failed must not change what `revertToSaved` goes back to, now or after a restart). `sync` is
    /// the directory's sync (a parameter for the tests).
    static func markSaved(
        _ seq: Int64, in directory: DataDirectory,
        sync: (String) throws(ObjectGraphError) -> Void = FileIO.syncDirectory
    ) throws(ObjectGraphError) {
        try directory.checkInPlace()
        let target = directory.file(DataDirectory.savedName)
        let temporary = target + ".tmp"
        let previous = target + ".previous.tmp"  // a `.tmp`: removed at start if a crash leaves it
        unlink(temporary)
        unlink(previous)
        guard link(directory.file(DataDirectory.snapshotName(seq)), temporary) == 0 else {
            throw FileIO.error("link", temporary)
        }
        let kept = link(target, previous) == 0
        let wasNone = !kept && errno == ENOENT
        // What could not be kept could not be put back: the save is refused before anything changes.
        guard kept || wasNone else {
            let failure = FileIO.error("link", previous)
            unlink(temporary)
            throw failure
        }
        guard rename(temporary, target) == 0 else {
            let failure = FileIO.error("rename", temporary)
            unlink(previous)
            throw failure
        }
        // When both names already led to that snapshot (a save with no change since the last), `rename` succeeds
        // and leaves both: the temporary one would hold the snapshot's space after it is removed.
        unlink(temporary)
        do throws(ObjectGraphError) {
            try sync(directory.path)
        } catch {
            if kept {
                rename(previous, target)
                unlink(previous)  // left by `rename` when both named one file (a save with no change since the last)
            } else {
                unlink(target)
            }
            try? sync(directory.path)
            throw error
        }
        unlink(previous)
    }

    /// The seq `saved.bin` holds, and the newest content seq at which the store equalled it: the snapshot's own,
    /// or the one `saved-state` records for it. Read from the headers; nils when `saved.bin` is missing or
    /// unreadable, and `saved-state` is skipped when unreadable or written for another `saved.bin`.
    private static func savedState(
        in directory: DataDirectory
    ) -> (seq: Int64?, uneditedContentSeq: Int64?) {
        guard let file = try? FileIO.open(directory.file(DataDirectory.savedName), O_RDONLY) else { return (nil, nil) }
        var header = [UInt8](repeating: 0, count: SnapshotFile.headerSize + 24)
        let count = header.withUnsafeMutableBytes { pread(file.fd, $0.baseAddress, $0.count, 0) }
        guard count > SnapshotFile.headerSize,
            let saved = ObjectStore.binarySnapshotSeqs(Array(header[SnapshotFile.headerSize..<count]))
        else { return (nil, nil) }
        guard let bytes = try? FileIO.readIfPresent(directory.file(DataDirectory.savedStateName)) else {
            return (saved.seq, saved.contentSeq)
        }
        let fields = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isWhitespace).map { Int64($0) }
        guard fields.count == 2, let snapshot = fields[0], let contentSeq = fields[1], snapshot == saved.seq else {
            return (saved.seq, saved.contentSeq)
        }
        return (saved.seq, max(saved.contentSeq, contentSeq))
    }

    /// Removes snapshots older than `seq` and journal segments whose records it holds (every segment started before
    /// the one the snapshot began). Best effort: a leftover is skipped at the next start.
    private func removeObsoleteFiles(before seq: Int64) {
        guard (try? directory.checkInPlace()) != nil, let (snapshots, segments) = try? directory.contents() else {
            return
        }
        for old in snapshots where old < seq { unlink(directory.file(DataDirectory.snapshotName(old))) }
        for first in segments where first <= seq { unlink(directory.file(DataDirectory.segmentName(first))) }
    }

    // MARK: Closing

    /// Marks the storage closed and stops watching the segment; false when it was closed already.
    private func beginClosing() -> Bool {
        let closes = progress.withLock { progress in
            defer { progress.isClosed = true }
            return !progress.isClosed
        }
        if closes { segmentWatch.cancel() }
        return closes
    }

    /// Closes the storage of a run that served nothing, its start refused after the storage opened (a controllers
    /// file it cannot use, a port in use). When this run seeded the directory and nothing was committed since, the
    /// files the run wrote there are removed (under the lock), so the directory is as it was and the next start
    /// seeds it again, from a fixture fixed meanwhile; otherwise as `close`.
    ///
    /// Only the names this run wrote go (seeding found none of the state files, no snapshot and no segment): the
    /// state files first, then the segment, then the snapshot, each step made durable, so that a crash between
    /// steps leaves a directory that starts (a seeded store without its saved state, or without its empty segment).
    func closeUnserved(_ store: ObjectStore, report: (String) -> Void) -> Bool {
        guard let seededSeq, store.seq == seededSeq else {
            return close(store, uneditedContentSeq: nil, report: report)
        }
        guard beginClosing() else { return true }
        _ = journal.close()
        let steps = [
            DataDirectory.stateNames.sorted(), [DataDirectory.segmentName(seededSeq + 1)],
            [DataDirectory.snapshotName(seededSeq)],
        ]
        do throws(ObjectGraphError) {
            for names in steps {
                try directory.checkInPlace()
                for name in names { unlink(directory.file(name)) }
                try FileIO.syncDirectory(directory.path)
            }
            return true
        } catch {
            report("removing the store seeded by a start that was refused failed: \(error.message)")
            return false
        }
    }

    /// Writes a last snapshot when the journal holds anything since the newest, then flushes and closes the journal.
    /// With `uneditedContentSeq` (the document is not edited: its content at that seq equals the saved state), and
    /// the journal not failed, records it in `saved-state` first. Idempotent; the directory's lock is released when
    /// the storage is released. Answers false when the snapshot or the journal failed (reported), true otherwise and
    /// when already closed.
    func close(_ store: ObjectStore, uneditedContentSeq: Int64?, report: (String) -> Void) -> Bool {
        guard beginClosing() else { return true }
        if let uneditedContentSeq, journal.failure == nil {
            do throws(ObjectGraphError) {
                try onSnapshotQueue { () throws(ObjectGraphError) in
                    try recordUneditedNow(contentSeq: uneditedContentSeq)
                }
            } catch {
                report(
                    "recording the unedited state failed (the next start will count the document edited): "
                        + error.message)
            }
        }
        var clean = true
        do throws(ObjectGraphError) {
            try snapshot(store, markSaved: false)
        } catch {
            report("snapshot at shutdown failed: \(error.message)")
            clean = false
        }
        if !journal.close() {
            report("the journal was not fully written at shutdown")
            clean = false
        }
        if clean {
            do throws(ObjectGraphError) {
                try directory.writeDurably([], to: DataDirectory.closedCleanlyName)
            } catch {
                report(
                    "marking the clean close failed (the next start will skip seqs as after a crash): \(error.message)")
            }
        }
        return clean
    }
}
