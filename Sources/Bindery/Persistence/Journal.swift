import Dispatch
import Foundation
import ObjectGraph
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The append side of the journal: one frame per committed change record, in seq order, in the current segment.
///
/// `append` runs in the store's `willCommit`, under the store's lock (the one place where Bindery does I/O under a
/// lock, by design: a change is acknowledged only once journaled, and the lock keeps records in seq order). With
/// `always` it also flushes there; with `batch` the committing request calls `waitUntilDurable` after the store's
/// lock is released, and a flusher thread runs one `fdatasync` for every commit written meanwhile (group commit).
/// A failed write is cut back off the file and fails the transaction; a failed flush puts the journal in the
/// `failed` state, in which every later commit is refused (the disk can no longer be trusted).
final class Journal: Sendable {
    let policy: FsyncPolicy
    let directory: DataDirectory
    /// Records, or bytes, since the last snapshot after which a snapshot is due.
    let snapshotRecords: Int
    let snapshotBytes: Int
    private let state: Mutex<State>
    private let flusherWake = DispatchSemaphore(value: 0)

    private enum Lifecycle {
        case open(OwnedFileDescriptor, firstSeq: Int64)
        case failed(ObjectGraphError)
        case closed
    }

    private struct Waiter {
        var seq: Int64
        /// Called once, outside the lock: nil when durable, else why not.
        var done: @Sendable (ObjectGraphError?) -> Void
    }

    private struct State {
        var lifecycle: Lifecycle
        /// Bytes in the current segment.
        var size: Int
        var writtenSeq: Int64
        var durableSeq: Int64
        var recordsSinceSnapshot = 0
        var bytesSinceSnapshot = 0
        var waiters: [Waiter] = []
    }

    /// Continues the segment `file` (`size` bytes long, first seq `firstSeq`), whose records end at `seq`.
    init(
        directory: DataDirectory, policy: FsyncPolicy, file: OwnedFileDescriptor, firstSeq: Int64, size: Int,
        seq: Int64, recordsSinceSnapshot: Int, snapshotRecords: Int, snapshotBytes: Int
    ) {
        self.directory = directory
        self.policy = policy
        self.snapshotRecords = snapshotRecords
        self.snapshotBytes = snapshotBytes
        var initial = State(lifecycle: .open(file, firstSeq: firstSeq), size: size, writtenSeq: seq, durableSeq: seq)
        initial.recordsSinceSnapshot = recordsSinceSnapshot
        initial.bytesSinceSnapshot = size
        state = Mutex(initial)
        if policy == .batch {
            let thread = Thread { [self] in runFlusher() }
            thread.name = "bindery.journal-flusher"
            thread.start()
        }
    }

    /// Opens (creating if needed) the segment whose first record will be `firstSeq`, for appending.
    static func openSegment(_ directory: DataDirectory, firstSeq: Int64) throws(ObjectGraphError)
        -> OwnedFileDescriptor
    {
        let path = directory.file(DataDirectory.segmentName(firstSeq))
        let file = try FileIO.open(path, O_WRONLY | O_CREAT | O_APPEND)
        try FileIO.syncDirectory(directory.path)
        return file
    }

    // MARK: Appending (under the store's lock)

    /// Writes `record`'s frame (and flushes it with `always`); on error nothing of it stays in the file.
    func append(_ record: ChangeRecord) throws(ObjectGraphError) {
        let frame = JournalFrame.frame(record.json.jsonBytes())
        try state.withLock { (state: inout State) throws(ObjectGraphError) in
            let file: OwnedFileDescriptor
            switch state.lifecycle {
            case .open(let current, _): file = current
            case .failed(let error): throw Self.refusal(error)
            case .closed: throw Self.closedError()
            }
            var failure = frame.withUnsafeBytes { FileIO.writeAll(file.fd, $0) }.map {
                FileIO.error("write", file.path, errno: $0)
            }
            if failure == nil, policy == .always, let code = FileIO.sync(file.fd) {
                failure = FileIO.error("fdatasync", file.path, errno: code)
                state.lifecycle = .failed(failure!)
            }
            if let failure {
                if ftruncate(file.fd, off_t(state.size)) != 0 {
                    state.lifecycle = .failed(FileIO.error("ftruncate", file.path))
                }
                throw failure
            }
            state.size += frame.count
            state.writtenSeq = record.seq
            if policy != .batch { state.durableSeq = record.seq }
            state.recordsSinceSnapshot += 1
            state.bytesSinceSnapshot += frame.count
        }
    }

    /// Whether enough has been journaled since the last snapshot that one is due.
    var wantsSnapshot: Bool {
        state.withLock { $0.recordsSinceSnapshot >= snapshotRecords || $0.bytesSinceSnapshot >= snapshotBytes }
    }

    /// Starts a new segment whose first record will be `nextSeq`, after flushing the current one; called under the
    /// store's lock by the snapshot writer (so no record is appended meanwhile). Nothing happens when the current
    /// segment already starts at `nextSeq`.
    func rotate(nextSeq: Int64) throws(ObjectGraphError) {
        let current = try state.withLock { (state: inout State) throws(ObjectGraphError) -> OwnedFileDescriptor? in
            switch state.lifecycle {
            case .open(let file, let firstSeq): return firstSeq == nextSeq ? nil : file
            case .failed(let error): throw Self.refusal(error)
            case .closed: throw Self.closedError()
            }
        }
        guard let current else { return }
        if policy != .never, let code = FileIO.sync(current.fd) {
            let error = FileIO.error("fdatasync", current.path, errno: code)
            fail(error)
            throw error
        }
        let file = try Self.openSegment(directory, firstSeq: nextSeq)
        let woken = state.withLock { state in
            state.lifecycle = .open(file, firstSeq: nextSeq)
            state.size = 0
            state.durableSeq = state.writtenSeq
            state.recordsSinceSnapshot = 0
            state.bytesSinceSnapshot = 0
            return Self.takeReadyWaiters(&state)
        }
        for (done, error) in woken { done(error) }
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

    /// Calls `done` once a flush covering `seq` has completed (at once with the other policies), with nil, or with
    /// the error when the flush failed or the journal closed. `done` runs on the flusher's thread or the caller's:
    /// it must not block.
    func whenDurable(_ seq: Int64, _ done: @escaping @Sendable (ObjectGraphError?) -> Void) {
        guard policy == .batch else { return done(nil) }
        let immediate = state.withLock { (state: inout State) -> ObjectGraphError?? in
            if state.durableSeq >= seq { return .some(nil) }
            switch state.lifecycle {
            case .open: break
            case .failed(let error): return .some(Self.refusal(error))
            case .closed: return .some(Self.closedError())
            }
            state.waiters.append(Waiter(seq: seq, done: done))
            return nil
        }
        if let immediate { return done(immediate) }
        flusherWake.signal()
    }

    private func runFlusher() {
        while true {
            flusherWake.wait()
            enum Job {
                case sync(OwnedFileDescriptor, Int64)
                case idle
                case stop
            }
            let job: Job = state.withLock { state in
                switch state.lifecycle {
                case .open(let file, _): state.durableSeq < state.writtenSeq ? .sync(file, state.writtenSeq) : .idle
                case .failed: .idle
                case .closed: .stop
                }
            }
            var failure: ObjectGraphError?
            switch job {
            case .stop: return
            case .idle: break
            case .sync(let file, _):
                if let code = FileIO.sync(file.fd) { failure = FileIO.error("fdatasync", file.path, errno: code) }
            }
            let woken = state.withLock { state in
                if let failure {
                    state.lifecycle = .failed(failure)
                } else if case .sync(_, let target) = job {
                    state.durableSeq = max(state.durableSeq, target)
                }
                return Self.takeReadyWaiters(&state)
            }
            for (done, error) in woken { done(error) }
        }
    }

    /// Removes and returns the waiters a flush has served, with their outcome (all of them once the journal failed
    /// or closed).
    private static func takeReadyWaiters(
        _ state: inout State
    ) -> [(@Sendable (ObjectGraphError?) -> Void, ObjectGraphError?)] {
        let failure: ObjectGraphError?
        switch state.lifecycle {
        case .open: failure = nil
        case .failed(let error): failure = refusal(error)
        case .closed: failure = closedError()
        }
        var ready: [(@Sendable (ObjectGraphError?) -> Void, ObjectGraphError?)] = []
        state.waiters.removeAll { waiter in
            if waiter.seq <= state.durableSeq {
                ready.append((waiter.done, nil))
                return true
            }
            guard let failure else { return false }
            ready.append((waiter.done, failure))
            return true
        }
        return ready
    }

    private func fail(_ error: ObjectGraphError) {
        let woken = state.withLock { state in
            state.lifecycle = .failed(error)
            return Self.takeReadyWaiters(&state)
        }
        for (done, error) in woken { done(error) }
    }

    // MARK: Closing

    /// Flushes and closes the journal; later commits are refused. Waiting requests are answered first.
    func close() {
        let current: OwnedFileDescriptor? = state.withLock { state in
            if case .open(let file, _) = state.lifecycle { return file }
            return nil
        }
        if let current, policy != .never, let code = FileIO.sync(current.fd) {
            fail(FileIO.error("fdatasync", current.path, errno: code))
        }
        let woken = state.withLock { state in
            if case .open = state.lifecycle { state.durableSeq = state.writtenSeq }
            state.lifecycle = .closed
            return Self.takeReadyWaiters(&state)
        }
        for (done, error) in woken { done(error) }
        flusherWake.signal()
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
