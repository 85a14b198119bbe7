import Dispatch
import Foundation
import ObjectGraph
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The append side of the journal: one frame per committed change record, in seq order, in the current segment.
///
/// `append` runs in the store's `willCommit`, under the store's lock, which keeps records in seq order. With `always`
/// and `never` it writes the frame there (and `always` flushes it), so a failed write fails the transaction. With
/// `batch` it only queues the record: a flusher thread writes everything queued meanwhile in one `write`, runs one
/// `fdatasync` for it (group commit), then runs `deliver` (the store's deferred delivery of committed records to their
/// observers, so one thread delivers the whole group) and then answers the requests waiting in `whenDurable` /
/// `waitUntilDurable`; encoding, I/O and delivery stay off the store's lock and off the request threads. A change is
/// acknowledged only once durable, and (with `batch`) after it was delivered. A failed write is cut back off the
/// file; with `batch` (the change is already committed in memory), and for any failed flush, the journal goes to the
/// `failed` state, in which the waiting requests get 503 and every later commit is refused (the disk can no longer be
/// trusted). With `batch`, a write that fails for want of space is first tried again for `fullDiskPatience` seconds
/// (the records stay queued, their requests waiting): space often comes back at once, when a snapshot that did not fit
/// removes its temporary file. With `always` and `never`, a failed write refuses its change only, and `writeFailure`
/// says why until a write succeeds.
///
/// A segment removed from the directory while open (found after each write and flush: no link is left) is not
/// failed but recovered: the storage's recovery (`setRecovery`) writes a snapshot of the store, which starts a new
/// segment, and what the removed segment held is durable again once that snapshot is. With `batch` the flusher waits
/// for it before answering the group; with `always` and `never` the commit that finds it is refused (503, nothing
/// applied) and the snapshot is scheduled, as a commit holds the store's lock; commits are refused until it is
/// written.
final class Journal: Sendable {
    let policy: FsyncPolicy
    let directory: DataDirectory
    /// Records, or bytes, since the last snapshot after which a snapshot is due.
    let snapshotRecords: Int
    let snapshotBytes: Int
    /// Run by the flusher after each flush, before the requests it made durable are answered (`batch`).
    private let deliver: @Sendable (_ durableSeq: Int64) -> Void
    /// Brings the store back to what the files hold, after a failed flush (`batch`).
    private let rollBack: @Sendable () -> Void
    /// `fdatasync` (`FileIO.sync`) and `write` (`FileIO.writeAll`); tests make them fail.
    private let syncFile: @Sendable (Int32) -> Int32?
    private let writeFile: @Sendable (Int32, UnsafeRawBufferPointer) -> Int32?
    /// How long (seconds) the flusher tries again a write that fails for want of space before the journal fails.
    private let fullDiskPatience: Double
    /// Receives a line when the journal fails, and when writes start and stop failing (`always`, `never`).
    private let report: @Sendable (String) -> Void
    /// Writes a snapshot of the store and answers its error, or schedules it when `wait` is false (set by the
    /// storage once it exists).
    private let recovery = Mutex<(@Sendable (_ wait: Bool) -> ObjectGraphError?)?>(nil)
    /// Whether the file system reports link counts (the first segment has one): on one that reports 0 for every
    /// file, a removed segment cannot be told apart, and none is taken for removed.
    private let countsLinks: Bool
    private let state: Mutex<State>
    /// `State.durableSeq`, readable without the lock (for every response's `X-Store-Seq`).
    private let publishedDurableSeq: Atomic<Int64>
    /// Set (for good) when the lifecycle becomes `failed`: `failure` is read on every `/healthz` without the lock.
    private let hasFailed = Atomic<Bool>(false)
    /// With `always` and `never`: why the latest write failed, until one succeeds (set and cleared under the store's
    /// lock, which every such write holds); `isWriteFailing` says whether it is set, without the lock.
    private let latestWriteFailure = Mutex<ObjectGraphError?>(nil)
    private let isWriteFailing = Atomic<Bool>(false)
    /// When a failure of writes was last told, whether the last line told was one, and the changes of state not told
    /// since (see `noteWrite`).
    private let stateReports = Mutex((failureToldAt: UInt64?.none, failureToldLast: false, untold: 0))
    /// Seconds between two lines telling that writes fail.
    static let stateReportInterval = 60.0
    /// When `recheckWriteFailure` last tried a write (`DispatchTime` nanoseconds; 0: never), and how long it waits
    /// between tries.
    private let lastProbe = Atomic<UInt64>(0)
    private let probeInterval: Double
    /// Held while queued records are written to the current segment (and while the segment changes or closes), so
    /// that batches reach the file in seq order. Lock order: the store's lock, then `io`, then `state`.
    private let io = Mutex(())
    private let flusherWake = DispatchSemaphore(value: 0)
    /// Held by a delivery pass, so that the flusher and `close` never deliver at the same time.
    private let delivering = Mutex(())

    private enum Lifecycle {
        case open(OwnedFileDescriptor, firstSeq: Int64)
        case failed(ObjectGraphError)
        case closed
    }

    private struct Waiter {
        var seq: Int64
        /// `State.passes` when it came: the passes after it deliver its change (it committed before it waited).
        var pass: Int
        /// Called once, outside the lock: nil when durable, else why not.
        var done: @Sendable (ObjectGraphError?) -> Void
    }

    private struct State {
        var lifecycle: Lifecycle
        /// Bytes in the current segment.
        var size: Int
        /// Committed records not written yet, in seq order, with their JSON encoding when the committer made it.
        var queued: [(record: ChangeRecord, encoded: [UInt8]?)] = []
        /// Whether the flusher has been woken and has not taken the queue since.
        var flusherWoken = false
        var writtenSeq: Int64
        var durableSeq: Int64
        /// Delivery passes started (`answerWaiters`).
        var passes = 0
        var recordsSinceSnapshot = 0
        var bytesSinceSnapshot = 0
        /// The two counts when the segment last rotated for a snapshot, taken off them once that snapshot is written
        /// (`snapshotWritten`): a snapshot that fails leaves them growing, so it is due again.
        var recordsAtRotation = 0
        var bytesAtRotation = 0
        var waiters: [Waiter] = []
        /// Set while the store is rolled back after a failed flush: requests that wait then are answered after it,
        /// so that nobody reads the refused change after hearing it was refused.
        var rollingBack = false
        /// Whether the store was rolled back since the journal failed (once is enough: every later commit is refused).
        var rolledBack = false
        /// Whether the current segment, or the snapshot the segments follow, was removed from the directory: what was
        /// written since the last snapshot is durable again only once a snapshot is (`rotate` leaves the segment,
        /// `snapshotWritten` counts it durable).
        var segmentLost = false
        /// The newest durable snapshot, which the segments follow: without it no start can read them (nil: none
        /// to watch).
        var snapshotPath: String?
    }

    /// Continues the segment `file` (`size` bytes long, first seq `firstSeq`), whose records end at `seq` and follow
    /// the snapshot of `snapshotSeq` (nil: none to watch).
    init(
        directory: DataDirectory, policy: FsyncPolicy, file: OwnedFileDescriptor, firstSeq: Int64, size: Int,
        seq: Int64, snapshotSeq: Int64?, recordsSinceSnapshot: Int, snapshotRecords: Int, snapshotBytes: Int,
        deliver: @escaping @Sendable (_ durableSeq: Int64) -> Void, rollBack: @escaping @Sendable () -> Void,
        report: @escaping @Sendable (String) -> Void = { _ in }, fullDiskPatience: Double = 2,
        probeInterval: Double = 1, syncFile: @escaping @Sendable (Int32) -> Int32? = FileIO.sync,
        writeFile: @escaping @Sendable (Int32, UnsafeRawBufferPointer) -> Int32? = FileIO.writeAll
    ) {
        self.directory = directory
        self.syncFile = syncFile
        self.writeFile = writeFile
        self.fullDiskPatience = fullDiskPatience
        self.probeInterval = probeInterval
        self.report = report
        countsLinks = Self.linkCount(of: file) != 0
        self.policy = policy
        self.snapshotRecords = snapshotRecords
        self.snapshotBytes = snapshotBytes
        self.deliver = deliver
        self.rollBack = rollBack
        var initial = State(
            lifecycle: .open(file, firstSeq: firstSeq), size: size, writtenSeq: seq, durableSeq: seq,
            snapshotPath: snapshotSeq.map { directory.file(DataDirectory.snapshotName($0)) })
        initial.recordsSinceSnapshot = recordsSinceSnapshot
        initial.bytesSinceSnapshot = size
        state = Mutex(initial)
        publishedDurableSeq = Atomic(seq)
        if policy == .batch {
            let thread = Thread { [self] in runFlusher() }
            thread.name = "bindery.journal-flusher"
            thread.start()
        }
    }

    /// Opens (creating if needed) the segment whose first record will be `firstSeq`, for appending, with its header
    /// (`JournalFrame.segmentHeader`); answers its size. A new segment gets its header under a temporary name and is
    /// renamed once it is durable, so that a segment found by its name always has one: a crash or a full disk before
    /// leaves only the `.tmp` (removed at the next start), never an empty segment that would read as emptied.
    static func openSegment(_ directory: DataDirectory, firstSeq: Int64) throws(ObjectGraphError)
        -> (file: OwnedFileDescriptor, size: Int)
    {
        try directory.checkInPlace()
        let path = directory.file(DataDirectory.segmentName(firstSeq))
        if access(path, F_OK) != 0 {
            let temporary = path + ".tmp"
            do throws(ObjectGraphError) {
                _ = try writeHeaderIfEmpty(try FileIO.open(temporary, O_WRONLY | O_CREAT | O_TRUNC))
                guard rename(temporary, path) == 0 else { throw FileIO.error("rename", temporary) }
            } catch {
                unlink(temporary)
                throw error
            }
            try FileIO.syncDirectory(directory.path)
        }
        let file = try FileIO.open(path, O_WRONLY | O_APPEND)
        return (file, try writeHeaderIfEmpty(file))
    }

    /// Writes and flushes the segment header into `file` when it is empty (a new segment, or one an earlier version
    /// opened and wrote nothing to); answers the file's size. From then on an empty segment is one that lost its
    /// bytes, which a start reports (`DocumentStorage.replay`).
    static func writeHeaderIfEmpty(_ file: OwnedFileDescriptor) throws(ObjectGraphError) -> Int {
        let end = lseek(file.fd, 0, SEEK_END)
        guard end >= 0 else { throw FileIO.error("lseek", file.path) }
        guard end == 0 else { return Int(end) }
        if let code = JournalFrame.segmentHeader.withUnsafeBytes({ FileIO.writeAll(file.fd, $0) }) {
            throw FileIO.error("write", file.path, errno: code)
        }
        if let code = FileIO.sync(file.fd) { throw FileIO.error("fdatasync", file.path, errno: code) }
        return JournalFrame.segmentHeader.count
    }

    /// Sets what recovers a removed segment (`recoverLostSegment`): a snapshot, waited for or (`wait` false)
    /// scheduled.
    func setRecovery(_ recover: @escaping @Sendable (_ wait: Bool) -> ObjectGraphError?) {
        recovery.withLock { $0 = recover }
    }

    // MARK: Appending (under the store's lock)

    /// Queues `record` (`batch`) or writes its frame now (and flushes it with `always`); throws when the journal
    /// failed or closed, or when the write fails (nothing of it then stays in the file). `encoded` is the record's
    /// `jsonBytes()` when the caller made it already (a large record the undo manager keeps encoded), so that it is
    /// not encoded twice.
    func append(_ record: ChangeRecord, encoded: [UInt8]? = nil) throws(ObjectGraphError) {
        let wakesFlusher = try state.withLock { (state: inout State) throws(ObjectGraphError) -> Bool in
            _ = try Self.openFile(state)
            state.queued.append((record, encoded))
            guard policy == .batch, !state.flusherWoken else { return false }
            state.flusherWoken = true
            return true
        }
        if policy != .batch {
            do throws(ObjectGraphError) {
                _ = try io.withLock { _ throws(ObjectGraphError) in try writeQueued(sync: policy == .always) }
                if isWriteFailing.load(ordering: .relaxed) { noteWrite(failure: nil) }
            } catch  where error.code == Self.segmentLostCode {
                // Under the store's lock: the snapshot that recovers the segment can only be scheduled.
                _ = recovery.withLock { $0 }?(false)
                throw error
            } catch {
                // `close` takes what is queued and flushes it: a record it made durable is journaled, not refused.
                // (Not so after a failed write or flush: the record is cut back off the file.)
                let closedDurable = state.withLock { state in
                    if case .closed = state.lifecycle { return state.durableSeq >= record.seq }
                    return false
                }
                if closedDurable { return }
                if error.code == Self.writeFailedCode { noteWrite(failure: error) }
                throw error
            }
        } else if wakesFlusher {
            flusherWake.signal()
        }
    }

    /// Under `io`: writes the queued records' frames to the current segment in one `write`, then (`sync`) flushes
    /// the segment if anything in it is not durable yet. A failed write or flush is cut back off the file and thrown
    /// (so that a restart does not replay a change that was refused); a failed cut or flush also puts the journal in
    /// the `failed` state.
    ///
    /// `rollsBack` (the flusher): a failed flush puts the journal in the `failed` state and holds waiting requests
    /// (`rollingBack`) in the same step, until the flusher has rolled the store back: a request answered in between
    /// would read the change it was told was refused.
    ///
    /// `keepsWhenFull` (`batch`, where the records are committed already): a write that fails for want of space puts
    /// the records back at the front of the queue, and its error is returned rather than thrown, for the caller to try
    /// again or give up.
    @discardableResult
    private func writeQueued(
        sync: Bool, rollsBack: Bool = false, keepsWhenFull: Bool = false
    ) throws(ObjectGraphError) -> ObjectGraphError? {
        let (records, file, size, snapshotPath) = try state.withLock {
            (state: inout State) throws(ObjectGraphError) -> (
                [(record: ChangeRecord, encoded: [UInt8]?)], OwnedFileDescriptor, Int, String?
            ) in
            state.flusherWoken = false
            let file = try Self.openFile(state)
            return (state.queued.takeAll(), file, state.size, state.snapshotPath)
        }
        var frames: [UInt8] = []
        if !records.isEmpty {
            frames.reserveCapacity(records.count * 256)
            for (record, encoded) in records { JournalFrame.append(encoded ?? record.jsonBytes(), to: &frames) }
            if let code = frames.withUnsafeBytes({ writeFile(file.fd, $0) }) {
                // 503, as for a failed flush: the server cannot take changes now (a full disk), no fault of the
                // request's; unlike a failed flush, the next change is tried again.
                var failure = FileIO.error("write", file.path, errno: code)
                failure.status = 503
                if let code = FileIO.truncate(file.fd, to: size) {
                    state.withLock { state in
                        state.lifecycle = .failed(FileIO.error("ftruncate", file.path, errno: code))
                        if rollsBack, !state.rolledBack { state.rollingBack = true }
                    }
                    markFailed()
                } else if keepsWhenFull, code == ENOSPC || code == EDQUOT {
                    state.withLock { $0.queued.insert(contentsOf: records, at: 0) }
                    return failure
                }
                throw failure
            }
        }
        let lastSeq = records.last?.record.seq
        let needsSync = sync && (lastSeq != nil || state.withLock { $0.durableSeq < $0.writtenSeq })
        let failure = needsSync ? syncFile(file.fd).map { FileIO.error("fdatasync", file.path, errno: $0) } : nil
        if failure != nil, !frames.isEmpty {
            // Best effort: the journal fails either way, and what a failed flush left on the disk is unknown.
            _ = FileIO.truncate(file.fd, to: size)
        }
        // Before anything is acknowledged: the segment still linked, and the snapshot it follows still there (one
        // `access` per flush; a removed one is written again, as a removed segment is recovered).
        var removed: String?
        if failure == nil, needsSync || !frames.isEmpty {
            if countsLinks, Self.linkCount(of: file) == 0 {
                removed = file.path
            } else {
                removed = missingSnapshot(snapshotPath)
            }
        }
        let discarded = state.withLock { state -> Bool in
            if let failure {
                state.lifecycle = .failed(failure)
                if rollsBack, !state.rolledBack { state.rollingBack = true }
                return false
            }
            if removed != nil || state.segmentLost {
                // What is in the removed file is nowhere: it becomes durable with the snapshot that recovers it.
                state.segmentLost = true
                return true
            }
            state.size += frames.count
            state.recordsSinceSnapshot += records.count
            state.bytesSinceSnapshot += frames.count
            if let lastSeq { state.writtenSeq = lastSeq }
            if sync || policy == .never {
                state.durableSeq = state.writtenSeq
                publishedDurableSeq.store(state.durableSeq, ordering: .releasing)
            }
            return false
        }
        // The frames are cut back off: when only the snapshot went, the segment is still read at a start, and must
        // hold no change that was refused (`always`, `never`) or that the recovering snapshot makes durable instead.
        if discarded, !frames.isEmpty, let code = FileIO.truncate(file.fd, to: size) {
            fail(FileIO.error("ftruncate", file.path, errno: code))
        }
        if let failure {
            markFailed()
            throw Self.refusal(failure)
        }
        if let removed { throw Self.segmentLost(removed) }
        return nil
    }

    /// The snapshot the segments follow when it is not in the directory. `path` is the one noted when the flush
    /// began: a snapshot written meanwhile replaces it, and the old one is removed only once the new one is noted,
    /// so a missing `path` is taken for removed only while it is still the one noted.
    private func missingSnapshot(_ path: String?) -> String? {
        var path = path
        while let current = path, access(current, F_OK) != 0, errno == ENOENT {
            let noted = state.withLock { $0.snapshotPath }
            if noted == current { return current }
            path = noted
        }
        return nil
    }

    private static let segmentLostCode = "journal-segment-removed"
    /// A write that failed and was cut back off the file (`FileIO.error`'s code): the journal is still sound.
    private static let writeFailedCode = "storage-error"

    private static func segmentLost(_ path: String) -> ObjectGraphError {
        ObjectGraphError(
            status: 503, code: segmentLostCode,
            message: "\(path), which the journal needs, was removed while in use; a snapshot is being written to "
                + "recover what it held, and changes are refused until it is.")
    }

    /// Looks whether the data directory is still in place (else the journal fails) and whether the current segment
    /// was removed (no link left) since the last write, and if so starts its
    /// recovery (scheduled): without it, a segment removed while no change comes would be found only at the next
    /// change, and a crash before that would lose what it held.
    func checkSegment() {
        let file: OwnedFileDescriptor? = state.withLock { state in
            guard case .open(let file, _) = state.lifecycle, !state.segmentLost else { return nil }
            return file
        }
        // A data directory moved away keeps the segment's link: the journal would go on in the moved directory, while
        // everything else written by name fails. It fails now, and `/healthz` says so.
        if file != nil {
            do throws(ObjectGraphError) {
                try directory.checkInPlace()
            } catch {
                return fail(error)
            }
        }
        guard countsLinks, let file, Self.linkCount(of: file) == 0 else { return }
        state.withLock { $0.segmentLost = true }
        _ = recovery.withLock { $0 }?(false)
    }

    /// The file's link count (0: removed from every directory), or nil when `fstat` fails.
    private static func linkCount(of file: OwnedFileDescriptor) -> Int? {
        var status = stat()
        return fstat(file.fd, &status) == 0 ? Int(status.st_nlink) : nil
    }

    /// Whether the current segment was found removed and no snapshot has replaced it yet.
    var isSegmentLost: Bool {
        state.withLock { $0.segmentLost }
    }

    /// `isSegmentLost`, after a look at the segment's link count (one found unlinked is marked lost): for a snapshot
    /// about to start a new segment, which recovers such a segment instead (its snapshot written first).
    func findsSegmentLost() -> Bool {
        state.withLock { state in
            if state.segmentLost { return true }
            guard countsLinks, case .open(let file, _) = state.lifecycle, Self.linkCount(of: file) == 0 else {
                return false
            }
            state.segmentLost = true
            return true
        }
    }

    /// A removed segment could not be recovered: the journal fails (503 `journal-failed` until restart).
    func recoveryFailed(_ error: ObjectGraphError) {
        fail(error)
    }

    /// The snapshot of `seq` is durable: so is every record through `seq` (those of a removed segment too), and the
    /// segments follow it.
    func snapshotWritten(through seq: Int64) {
        state.withLock { state in
            state.snapshotPath = directory.file(DataDirectory.snapshotName(seq))
            state.recordsSinceSnapshot -= state.recordsAtRotation
            state.bytesSinceSnapshot -= state.bytesAtRotation
            (state.recordsAtRotation, state.bytesAtRotation) = (0, 0)
            guard case .open = state.lifecycle, state.durableSeq < seq else { return }
            state.writtenSeq = max(state.writtenSeq, seq)
            state.durableSeq = seq
            publishedDurableSeq.store(seq, ordering: .releasing)
        }
    }

    /// The seq through which every record is durable (`always`, `batch`) or written (`never`).
    var durableSeq: Int64 { publishedDurableSeq.load(ordering: .acquiring) }

    /// The current segment, or the error that refuses changes.
    private static func openFile(_ state: State) throws(ObjectGraphError) -> OwnedFileDescriptor {
        switch state.lifecycle {
        case .open(let file, _): return file
        case .failed(let error): throw refusal(error)
        case .closed: throw closedError()
        }
    }

    /// Whether enough has been journaled since the last snapshot that one is due.
    var wantsSnapshot: Bool {
        state.withLock { $0.recordsSinceSnapshot >= snapshotRecords || $0.bytesSinceSnapshot >= snapshotBytes }
    }

    /// Starts a new segment whose first record will be `nextSeq`, after writing what is queued to the current one and
    /// flushing it (with `never` too: a machine crash must not leave a torn segment before the last, which no start
    /// reads past); called under the store's lock by the snapshot writer (so no record is appended meanwhile).
    /// Nothing happens when the current segment already starts at `nextSeq`. The requests this flush made durable are
    /// answered by the flusher, which delivers their changes first (not under the store's lock).
    ///
    /// `covered`: the snapshot of `nextSeq - 1` is durable already (a removed segment's recovery writes it first).
    /// Otherwise the snapshot is written after the rotation, and a segment found removed (no link left, or known
    /// lost) throws 503 `journal-segment-removed` with its recovery scheduled: were that snapshot to fail, what the
    /// removed segment held would be on disk nowhere, a gap before the new segment that no start can cross.
    func rotate(nextSeq: Int64, covered: Bool = false) throws(ObjectGraphError) {
        defer { if policy == .batch { flusherWake.signal() } }
        try io.withLock { _ throws(ObjectGraphError) in
            let current = try state.withLock { (state: inout State) throws(ObjectGraphError) -> OwnedFileDescriptor? in
                let file = try Self.openFile(state)
                // A removed segment is replaced even when it starts at `nextSeq` (it may hold nothing yet).
                if case .open(_, let firstSeq) = state.lifecycle, firstSeq != nextSeq || state.segmentLost {
                    return file
                }
                return nil
            }
            guard let current else { return }
            if !covered {
                // A directory replaced meanwhile says so (nothing is recovered into it).
                try directory.checkInPlace()
                if isSegmentLost || (countsLinks && Self.linkCount(of: current) == 0) {
                    state.withLock { $0.segmentLost = true }
                    _ = recovery.withLock { $0 }?(false)
                    throw Self.segmentLost(current.path)
                }
            }
            var full: ObjectGraphError?
            do throws(ObjectGraphError) {
                full = try writeQueued(sync: policy != .never, keepsWhenFull: policy == .batch)
                if policy == .never, let code = syncFile(current.fd) {
                    throw FileIO.error("fdatasync", current.path, errno: code)
                }
            } catch  where error.code == Self.segmentLostCode {
                // Found by the write: left for the new segment when the snapshot covers it, else recovered first.
                guard covered else {
                    _ = recovery.withLock { $0 }?(false)
                    throw error
                }
            } catch {
                fail(error)
                throw error
            }
            // With `batch`, records that did not fit stay queued for the flusher, which tries them again; the segment
            // stays, and the snapshot that wanted the rotation fails instead.
            if let full { throw full }
            let (file, size) = try Self.openSegment(directory, firstSeq: nextSeq)
            state.withLock { state in
                state.lifecycle = .open(file, firstSeq: nextSeq)
                state.size = size
                if !state.segmentLost {
                    state.durableSeq = state.writtenSeq
                    publishedDurableSeq.store(state.durableSeq, ordering: .releasing)
                }
                state.segmentLost = false
                (state.recordsAtRotation, state.bytesAtRotation) = (
                    state.recordsSinceSnapshot, state.bytesSinceSnapshot
                )
            }
        }
    }

    // MARK: Group commit

    /// With `batch`, returns once a flush covering `seq` has completed (at once with the other policies); throws
    /// when the flush failed.
    func waitUntilDurable(_ seq: Int64) throws(ObjectGraphError) {
        guard policy == .batch else { return }
        let semaphore = DispatchSemaphore(value: 0)
        let outcome = Mutex<ObjectGraphError?>(nil)
        whenDurable(seq) { error in
            outcome.withLock { $0 = error }
            semaphore.signal()
        }
        semaphore.wait()
        if let error = outcome.withLock({ $0 }) { throw error }
    }

    /// Calls `done` once a flush covering `seq` has completed and the change was delivered (at once with the other
    /// policies), with nil, or with the error when the flush failed or the journal closed. Call it once the
    /// transaction of `seq` has returned. `done` runs on the flusher's thread or the caller's: it must not block.
    func whenDurable(_ seq: Int64, _ done: @escaping @Sendable (ObjectGraphError?) -> Void) {
        guard policy == .batch else { return done(nil) }
        let (immediate, wakesFlusher) = state.withLock { (state: inout State) -> (ObjectGraphError??, Bool) in
            switch state.lifecycle {
            case .open: break
            case .failed(let error) where state.durableSeq < seq && !state.rollingBack:
                return (.some(Self.refusal(error)), false)
            case .failed: break
            case .closed: return (.some(state.durableSeq >= seq ? nil : Self.closedError()), false)
            }
            state.waiters.append(Waiter(seq: seq, pass: state.passes, done: done))
            // Already durable (a flush ended since the commit): a pass that starts now delivers it and answers.
            return (nil, state.durableSeq >= seq)
        }
        if let immediate { return done(immediate) }
        if wakesFlusher { flusherWake.signal() }
    }

    /// A committed record now waits for delivery (`ObjectStoreHooks.awaitsDelivery`): when a flush already covered
    /// it, the flusher's delivery pass may have run before the store queued it, so the flusher passes again (a write's
    /// own waiter would also bring that about, but a commit nobody waits for, a controller's seq, would wait for the
    /// next unrelated write).
    func deliveryAwaited(_ seq: Int64) {
        guard policy == .batch, state.withLock({ $0.durableSeq >= seq }) else { return }
        flusherWake.signal()
    }

    /// The flusher thread (`batch`): woken by the first record queued after it last took the queue (or by a rotation),
    /// it writes and flushes everything queued by then, delivers the committed records, then answers the waiters that
    /// flush covers.
    private func runFlusher() {
        while true {
            flusherWake.wait()
            if isClosed { return }
            do throws(ObjectGraphError) {
                do throws(ObjectGraphError) {
                    try writeGroup()
                } catch  where error.code == Self.segmentLostCode {
                    // Recovered before the group is answered: its changes are in the snapshot.
                    guard let recover = recovery.withLock({ $0 }) else { throw error }
                    if let failure = recover(true) { throw failure }
                }
            } catch {
                // The group's changes are committed in memory but not in the file: their requests are answered
                // 503 and later commits refused; the store goes back to what the files hold, so that no client
                // reads a change that a restart would not have (every mutating request is all or nothing). Later
                // wakes (a refused rotation or save, a late waiter) find nothing more to undo. A journal closed
                // meanwhile (`close` wrote what was queued, or failed and says so) has nothing to roll back.
                if !isClosed, startRollBack(error) {
                    rollBack()
                    state.withLock { $0.rollingBack = false }
                }
            }
            answerWaiters()
        }
    }

    /// The flusher's write and flush of what is queued. A write that fails for want of space is tried again (its
    /// records kept queued, their requests waiting) for up to `fullDiskPatience` seconds before its error is thrown.
    private func writeGroup() throws(ObjectGraphError) {
        var delay: useconds_t = 5_000
        var waited: Double = 0
        while let full = try io.withLock({ _ throws(ObjectGraphError) in
            try writeQueued(sync: true, rollsBack: true, keepsWhenFull: true)
        }) {
            guard waited < fullDiskPatience, !isClosed else { throw full }
            usleep(delay)
            waited += Double(delay) / 1e6
            delay = min(delay * 2, 200_000)
        }
    }

    /// One delivery pass: delivers every committed record, then answers the waiters that came before it (so their
    /// changes are among those delivered) and whose changes are durable; once the journal failed or closed, all of
    /// those.
    private func answerWaiters() {
        let woken = delivering.withLock { _ in
            let (pass, durable) = state.withLock { state in
                state.passes += 1
                return (state.passes, state.durableSeq)
            }
            // Only what is durable: observers must never hear of a change that a crash could still take back.
            deliver(durable)
            return state.withLock { Self.takeReadyWaiters(&$0, before: pass, deliveredThrough: durable) }
        }
        for (done, error) in woken { done(error) }
    }

    private typealias ReadyWaiter = (@Sendable (ObjectGraphError?) -> Void, ObjectGraphError?)

    /// Removes and returns the waiters that came before delivery pass `pass` and that are served, with their outcome:
    /// those whose change was delivered (it is durable), and once the journal failed or closed, all of them.
    ///
    /// Once closed, a change the close made durable succeeds, delivered or not: a pass that read the durable seq
    /// before `close` wrote the last records must not refuse them (503 `document-closed` for a change the next start
    /// has).
    private static func takeReadyWaiters(_ state: inout State, before pass: Int, deliveredThrough delivered: Int64)
        -> [ReadyWaiter]
    {
        let failure: ObjectGraphError?
        var succeeded = delivered
        switch state.lifecycle {
        case .open: failure = nil
        case .failed(let error): failure = refusal(error)
        case .closed:
            failure = closedError()
            succeeded = max(delivered, state.durableSeq)
        }
        var ready: [ReadyWaiter] = []
        state.waiters.removeAll { waiter in
            guard waiter.pass < pass else { return false }
            if waiter.seq <= succeeded {
                ready.append((waiter.done, nil))
                return true
            }
            guard let failure else { return false }
            ready.append((waiter.done, failure))
            return true
        }
        return ready
    }

    /// Whether `close` ran.
    private var isClosed: Bool {
        state.withLock { state in
            if case .closed = state.lifecycle { return true }
            return false
        }
    }

    /// Puts an open journal in the `failed` state (its waiters are then answered with the refusal).
    private func fail(_ error: ObjectGraphError) {
        state.withLock { state in
            if case .open = state.lifecycle { state.lifecycle = .failed(error) }
        }
        markFailed()
    }

    /// Publishes the `failed` state set under the lock (for `failure`), and reports it the first time.
    private func markFailed() {
        guard !hasFailed.exchange(true, ordering: .acquiringAndReleasing), let failure else { return }
        report(failure.message)
    }

    /// Notes the outcome of a write (`always`, `never`; under the store's lock, or `io`'s for a probe), reporting
    /// when writes start and stop failing.
    private func noteWrite(failure: ObjectGraphError?, recovered: String = "changes are journaled again") {
        latestWriteFailure.withLock { $0 = failure }
        guard isWriteFailing.exchange(failure != nil, ordering: .acquiringAndReleasing) != (failure != nil) else {
            return
        }
        // At most one failure line every `stateReportInterval`, and a recovery line only after a failure line that
        // was told: a client alternating a change too large for a full disk with one that fits flips the state at
        // each pair, and would otherwise write two lines per pair to the disk the log may share.
        let now = DispatchTime.now().uptimeNanoseconds
        let line: String? = stateReports.withLock { told in
            guard let failure else {
                guard told.failureToldLast else {
                    told.untold += 1
                    return nil
                }
                told.failureToldLast = false
                return recovered
            }
            if let last = told.failureToldAt, Double(now &- last) < Self.stateReportInterval * 1e9 {
                told.untold += 1
                return nil
            }
            let untold = told.untold
            told = (now, true, 0)
            return "a change could not be journaled (\(failure.message)): it is refused (503 storage-error), as is "
                + "every change that cannot be written"
                + (untold > 0 ? " (\(untold) changes between failing and succeeding writes were not logged)" : "")
        }
        if let line { report(line) }
    }

    /// With `always` and `never`: why the latest write failed (a full disk, 503 `storage-error`), while no write
    /// has succeeded since; nil otherwise. What `/healthz` reports besides `failure`.
    var writeFailure: ObjectGraphError? {
        guard isWriteFailing.load(ordering: .acquiring) else { return nil }
        return latestWriteFailure.withLock { $0 }
    }

    /// `writeFailure`, after trying a write at most once every `probeInterval` seconds while it is set, and clearing
    /// it when that write succeeds (the disk was freed): else a failure would be told until a change came to be
    /// tried, and a load balancer that stops sending requests to an unhealthy server would never send one. Costs
    /// nothing while writes succeed.
    func recheckWriteFailure() -> ObjectGraphError? {
        guard isWriteFailing.load(ordering: .acquiring) else { return nil }
        let now = DispatchTime.now().uptimeNanoseconds
        let last = lastProbe.load(ordering: .relaxed)
        guard last == 0 || Double(now &- last) >= probeInterval * 1e9,
            lastProbe.compareExchange(expected: last, desired: now, ordering: .relaxed).exchanged
        else { return writeFailure }
        io.withLock { _ in
            guard isWriteFailing.load(ordering: .acquiring), probeWrite() else { return }
            noteWrite(failure: nil, recovered: "a test write to the journal succeeded: changes are taken again")
        }
        return writeFailure
    }

    /// Under `io`: whether a page can be written to the current segment now (the same file, file system, quota and
    /// size limit as the next record), cut back off at once. A crash before the cut leaves a tail that is no frame
    /// (its length field passes the file's end), which a start reports and truncates as a torn tail.
    private func probeWrite() -> Bool {
        guard
            let (file, size) = try? state.withLock({ state throws(ObjectGraphError) in
                (try Self.openFile(state), state.size)
            })
        else { return false }
        let page = [UInt8](repeating: 0xFF, count: 4096)
        guard page.withUnsafeBytes({ writeFile(file.fd, $0) }) == nil else { return false }
        if let code = FileIO.truncate(file.fd, to: size) {
            fail(FileIO.error("ftruncate", file.path, errno: code))
            return false
        }
        return true
    }

    /// Like `fail`, and answers whether the store is to be rolled back now: the first time after the failure only.
    /// Then, in the same step, requests that start waiting are held until `rollingBack` is cleared.
    private func startRollBack(_ error: ObjectGraphError) -> Bool {
        defer { markFailed() }
        return state.withLock { state in
            if case .open = state.lifecycle { state.lifecycle = .failed(error) }
            guard !state.rolledBack else { return false }
            state.rolledBack = true
            state.rollingBack = true
            return true
        }
    }

    /// Why the journal refuses changes (503 `journal-failed`: a write, cut or flush failed; until restart), or nil.
    var failure: ObjectGraphError? {
        guard hasFailed.load(ordering: .acquiring) else { return nil }
        return state.withLock { state in
            guard case .failed(let error) = state.lifecycle else { return nil }
            return Self.refusal(error)
        }
    }

    // MARK: Closing

    /// Writes what is queued, flushes and closes the journal; later commits are refused. Waiting requests are
    /// answered first. Answers whether every commit was written (false when the journal had failed or fails now).
    @discardableResult
    func close() -> Bool {
        let written = io.withLock { _ in
            do throws(ObjectGraphError) {
                try writeQueued(sync: policy != .never)
            } catch {
                fail(error)
            }
            return state.withLock { state in
                defer { state.lifecycle = .closed }
                guard case .open = state.lifecycle else { return false }
                state.durableSeq = state.writtenSeq
                publishedDurableSeq.store(state.durableSeq, ordering: .releasing)
                return true
            }
        }
        answerWaiters()
        flusherWake.signal()
        return written
    }

    private static func refusal(_ error: ObjectGraphError) -> ObjectGraphError {
        ObjectGraphError(
            status: 503, code: "journal-failed",
            message: "The journal can no longer be written (\(error.message)); changes are refused until restart.")
    }

    private static func closedError() -> ObjectGraphError {
        ObjectGraphError(status: 503, code: "document-closed", message: "The document is closed; changes are refused.")
    }
}
