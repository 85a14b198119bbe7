import Foundation
import ObjectGraph
import PropertyList
import Synchronization

/// The document: the model, its object store, and what runs around every commit (API.md §0, §9).
///
/// Every mutating request goes through `transaction(_:)`, the one place where later layers hook in: the journal
/// (durability before the answer), undo groups, and the commit observers that feed KVO and the change feeds.
/// The store lives in a data directory (`DocumentStorage`): loaded from its snapshot and journal at start, or seeded
/// from the fixture's `data.json` when the directory is empty. Call `close()` before exiting (a last snapshot, the
/// journal flushed); the directory's lock is held until the document is released.
public final class Document: Sendable {
    /// How the document keeps its store.
    public struct Options: Sendable {
        public var fsync: FsyncPolicy
        /// Undo groups kept (`--undo-depth`); 0 turns undo off.
        public var undoDepth: Int
        /// A snapshot is written once the journal holds this many records, or bytes, since the last one.
        public var snapshotRecords: Int
        public var snapshotBytes: Int
        /// Where recovery problems and background failures are told (one line each); standard error by default.
        public var report: @Sendable (String) -> Void

        public init(
            fsync: FsyncPolicy = .batch, undoDepth: Int = 100, snapshotRecords: Int = 50_000,
            snapshotBytes: Int = 64 << 20,
            report: @escaping @Sendable (String) -> Void = {
                FileHandle.standardError.write(Data("bindery: \($0)\n".utf8))
            }
        ) {
            self.fsync = fsync
            self.undoDepth = undoDepth
            self.snapshotRecords = snapshotRecords
            self.snapshotBytes = snapshotBytes
            self.report = report
        }
    }

    public let store: ObjectStore
    public let fixtureDirectory: String
    public let dataDirectory: String
    public let options: Options
    /// The undo groups of this run (see `DocumentUndoManager`).
    public let undoManager: DocumentUndoManager
    /// Controllers register here to take part in the responder chain (`X-First-Responder`, `controllers/NAME`).
    public let responders = ResponderRegistry()
    private let commitHooks: CommitHooks
    let storage: DocumentStorage
    /// Problems the opening recovered from (a torn journal tail cut off, an unreadable older snapshot), each told to
    /// `options.report`; `/metrics` shows the count, as a log may not be looked at.
    public let problemsRecoveredAtOpen: Int
    /// Set for the convenience initializer's temporary directory, removed when the document goes.
    private let temporaryDirectory: String?
    let notificationHandler = Mutex<NotificationHook?>(nil)
    /// The document's editors (`setEditors`).
    let editors = Mutex<Editors?>(nil)

    /// What NSDocument asks of its editors (the controllers' pending edits): commit before a save, discard before a
    /// revert.
    struct Editors: Sendable {
        var commit: @Sendable () throws -> Void
        var discard: @Sendable () -> Void
        var hasPendingEdits: @Sendable () -> Bool
    }

    /// Loads `model.json` (required), then the store from `dataDirectory` (created if missing): its snapshot and
    /// journal, or, when it holds neither, the fixture's `data.json` (optional), saved as the first snapshot.
    ///
    /// Errors name the file: a bad model names file, entity and key; a bad `data.json` names the file and the
    /// object or key at fault, and one that exists but cannot be read (a directory, no permission, a dangling link)
    /// is 500 `storage-error` naming it, never an empty seed; 409 `data-directory-locked` when another server uses
    /// the directory; 500 when the data directory cannot be recovered without losing acknowledged changes.
    public convenience init(
        fixtureDirectory: String, dataDirectory: String, options: Options = Options()
    ) throws(ObjectGraphError) {
        try self.init(
            fixtureDirectory: fixtureDirectory, dataDirectory: dataDirectory, options: options, isTemporary: false)
    }

    /// A document in a fresh temporary data directory (removed when the document is released), journal not
    /// flushed: for tests and tools.
    public convenience init(fixtureDirectory: String, options: Options = Options(fsync: .never))
        throws(ObjectGraphError)
    {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "bindery-\(UUID().uuidString)"
        ).path
        try self.init(fixtureDirectory: fixtureDirectory, dataDirectory: directory, options: options, isTemporary: true)
    }

    private init(
        fixtureDirectory: String, dataDirectory: String, options: Options, isTemporary: Bool
    ) throws(ObjectGraphError) {
        self.fixtureDirectory = fixtureDirectory
        self.dataDirectory = dataDirectory
        self.options = options
        self.temporaryDirectory = isTemporary ? dataDirectory : nil
        let model = try ObjectModel.check(file: fixtureDirectory + "/model.json")
        let hooks = CommitHooks()
        commitHooks = hooks
        let store = ObjectStore(
            model: model,
            hooks: ObjectStoreHooks(
                willCommit: { record in try hooks.willCommit(record) },
                didCommit: { record in hooks.didCommit(record) },
                capture: { record, view in hooks.capture(record, view) },
                // With group commit, the journal's flusher delivers each group before answering its requests.
                defersDelivery: options.fsync == .batch,
                awaitsDelivery: { seq in hooks.awaitsDelivery(seq) }))
        self.store = store
        let dataPath = fixtureDirectory + "/data.json"
        let recovered = Mutex(0)
        do {
            storage = try DocumentStorage(
                path: dataDirectory,
                options: DocumentStorage.Options(
                    fsync: options.fsync, snapshotRecords: options.snapshotRecords, snapshotBytes: options.snapshotBytes
                ),
                store: store,
                seed: {
                    guard let data = try FileIO.readIfPresent(dataPath) else { return }
                    do {
                        try store.loadFixture(jsonBytes: data)
                    } catch let error as ObjectGraphError {
                        var failure = error
                        failure.message = "\(dataPath): \(error.message)"
                        throw failure
                    }
                },
                report: { [report = options.report] line in
                    recovered.withLock { $0 += 1 }
                    report(line)
                })
        } catch let error as ObjectGraphError {
            if isTemporary { try? FileManager.default.removeItem(atPath: dataDirectory) }
            throw error
        } catch {
            throw ObjectGraphError(status: 500, code: "internal-error", message: "\(dataDirectory): \(error)")
        }
        problemsRecoveredAtOpen = recovered.withLock { $0 }
        let undoManager = DocumentUndoManager(
            levelsOfUndo: options.undoDepth, openedAt: store.seq,
            editedBeforeOpening: storage.uneditedContentSeq.map { store.read { $0.contentSeq } != $0 } ?? false)
        self.undoManager = undoManager
        let journal = storage.journal
        let append = CommitHook { record in
            // A large record is kept encoded for undo: encoded once here, for the journal too.
            let encoded = DocumentUndoManager.keepsEncoded(record) ? record.jsonBytes() : nil
            try journal.append(record, encoded: encoded)
            undoManager.didCommit(record, encoded: encoded)
        }
        hooks.journal.withLock { $0 = append }
        hooks.delivery.withLock { $0 = DeliveryHook { seq in journal.deliveryAwaited(seq) } }
        // The undo groups of changes rolled back after a failed flush are gone with them.
        addRollBackObserver { undoManager.removeAllActions() }
        if storage.recoveredFromCrash {
            // Commits the crash lost may have been seen (with `batch`, read before their flush, with their seqs as
            // ETags): seqs go on past any of them, so that none is given to another change.
            let recoveredSeq = store.seq
            do {
                try storage.journal.waitUntilDurable(try store.advanceSeq(by: Self.seqsSkippedAfterACrash))
                // Told, not counted among the problems recovered: nothing was damaged.
                options.report(
                    "\(dataDirectory) was not closed cleanly (the last run crashed or was killed): replayed "
                        + "\(storage.replayedAtOpen) journal record\(storage.replayedAtOpen == 1 ? "" : "s") up to seq "
                        + "\(recoveredSeq); seqs go on from \(store.seq + 1)")
            } catch {
                close()
                throw (error as? ObjectGraphError)
                    ?? ObjectGraphError(status: 500, code: "storage-error", message: "\(dataDirectory): \(error)")
            }
        }
    }

    /// How far the seq jumps at the first start after a crash: far more than the commits that can wait for one
    /// group flush (with `batch`, the only ones a crash can lose after they were seen).
    public static let seqsSkippedAfterACrash: Int64 = 1_000_000

    deinit {
        close()
        if let temporaryDirectory { try? FileManager.default.removeItem(atPath: temporaryDirectory) }
    }

    /// Runs one mutating request (or commit) as one transaction: all or nothing.
    ///
    /// The answer waits until the change is journaled (with `--fsync batch`, until a flush covering it completed);
    /// one that changed nothing, until the changes it reflects (up to `result.seq`) are, as a read would not: it is
    /// answered as an acknowledgement.
    @discardableResult
    public func transaction<T: Sendable>(_ body: (Transaction) throws -> T) throws -> TransactionResult<T> {
        let result = try transactionBeforeDurable(body)
        if result.record != nil || acknowledgedSeq(result.seq) < result.seq {
            try storage.journal.waitUntilDurable(result.seq)
        }
        return result
    }

    /// Like `transaction(_:)`, but returns as soon as the change is committed and written, before it is durable:
    /// the caller acknowledges it only from `whenDurable(result.seq)`, so no thread waits for the flush (with
    /// `--fsync batch`, many requests then share one fsync).
    public func transactionBeforeDurable<T: Sendable>(
        _ body: (Transaction) throws -> T
    ) throws -> TransactionResult<T> {
        let undoManager = undoManager
        let result = try store.transaction { transaction in
            undoManager.beginTransaction()
            return try body(transaction)
        }
        if result.record != nil { storage.snapshotIfDue(store, report: options.report) }
        return result
    }

    /// Calls `done` once the change of `seq` is durable under the fsync policy (at once unless it is `batch`), with
    /// nil, or with the error that makes it not durable (503 for a failed flush). `done` must not block.
    public func whenDurable(_ seq: Int64, _ done: @escaping @Sendable (ObjectGraphError?) -> Void) {
        storage.journal.whenDurable(seq, done)
    }

    /// `whenDurable`, waiting: returns once the change of `seq` is durable, or throws what makes it not durable.
    /// Blocks the calling thread (a group commit at most): for work off the request threads (exports, long listings).
    public func waitUntilDurable(_ seq: Int64) throws(ObjectGraphError) {
        try storage.journal.waitUntilDurable(seq)
    }

    /// Adds code run after every commit, outside the store's lock, once per record, in seq order, never
    /// concurrently with itself (see `ObjectStoreHooks.didCommit`).
    public func addCommitObserver(_ observer: @escaping @Sendable (ChangeRecord) -> Void) {
        commitHooks.observers.withLock { $0.append(observer) }
    }

    /// Adds code run after the store went back to what the data directory holds because a flush failed (`batch`):
    /// the changes committed after the last durable record are gone, and no change record says so. Runs on the
    /// journal's flusher, with no lock held, before the requests of those changes are answered.
    public func addRollBackObserver(_ observer: @escaping @Sendable () -> Void) {
        storage.rolledBack.observers.withLock { $0.append(observer) }
    }

    /// Adds code run under the store's lock right after each commit, with a view of the state just after it (see
    /// `ObjectStoreHooks.capture`): it may only read, briefly.
    public func addCommitCapture(_ capture: @escaping @Sendable (ChangeRecord, ReadView) -> Void) {
        commitHooks.captures.withLock { $0.append(capture) }
    }
}

/// The store's hooks, fanned out to what the document registers after the store exists.
private final class CommitHooks: Sendable {
    let observers = Mutex<[@Sendable (ChangeRecord) -> Void]>([])
    let journal = Mutex<CommitHook?>(nil)

    func willCommit(_ record: ChangeRecord) throws {
        try journal.withLock { $0 }?.body(record)
    }

    func didCommit(_ record: ChangeRecord) {
        for observer in observers.withLock({ $0 }) { observer(record) }
    }

    let delivery = Mutex<DeliveryHook?>(nil)

    func awaitsDelivery(_ seq: Int64) {
        delivery.withLock { $0 }?.body(seq)
    }

    let captures = Mutex<[@Sendable (ChangeRecord, ReadView) -> Void]>([])

    func capture(_ record: ChangeRecord, _ view: ReadView) {
        for capture in captures.withLock({ $0 }) { capture(record, view) }
    }
}

/// A closure in a box: a closure stored in a `Mutex` directly is re-abstracted (wrapped in one more thunk) by every
/// `withLock` that hands it out, so each call gets slower and the thunk chain eventually overflows the stack.
final class CommitHook: Sendable {
    let body: @Sendable (ChangeRecord) throws -> Void

    init(_ body: @escaping @Sendable (ChangeRecord) throws -> Void) {
        self.body = body
    }
}

/// The journal's `deliveryAwaited`, boxed like `CommitHook`.
final class DeliveryHook: Sendable {
    let body: @Sendable (Int64) -> Void

    init(_ body: @escaping @Sendable (Int64) -> Void) {
        self.body = body
    }
}

/// The document's notification handler, boxed like `CommitHook`.
final class NotificationHook: Sendable {
    let body: @Sendable (DocumentNotification) -> Void

    init(_ body: @escaping @Sendable (DocumentNotification) -> Void) {
        self.body = body
    }
}
