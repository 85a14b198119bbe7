import ObjectGraph
import PropertyList
import Synchronization

/// The document's undo manager (NSUndoManager): one undo group per committed transaction, undone and redone as new
/// transactions.
///
/// Every commit of the store is seen in `willCommit` (under the store's lock, in seq order, after the journal has
/// taken the record), so the undo stack is exactly the commit order and the group on top is always the newest
/// change. A commit that is an undo or a redo is marked by the transaction that makes it (`undo(in:)`,
/// `redo(in:)`, which run under the same lock); any other commit pushes a new group and clears the redo stack.
/// At most `levelsOfUndo` groups are kept (the oldest are dropped). The stacks live in memory: they are empty after
/// a restart.
public final class DocumentUndoManager: Sendable {
    /// How many undo groups are kept.
    public let levelsOfUndo: Int
    private let state = Mutex(State())

    private enum Pending {
        case change
        case undo(seq: Int64)
        case redo(seq: Int64)
    }

    /// An undo group: its record, or, for a large one, the record's JSON encoding (the journal's), decoded when it
    /// is undone or redone. A `PUT /store` record holds the old and the new graph, which as property-list values
    /// take about twenty times their JSON size: a hundred such groups would hold gigabytes.
    fileprivate enum Group {
        case record(ChangeRecord)
        case encoded(seq: Int64, bytes: [UInt8])

        /// Records with more changes than this (or a whole-graph replacement) are kept encoded.
        static let largeRecordChanges = 64

        /// `encoded` is the record's `jsonBytes()` when the caller made it (see `DocumentUndoManager.keepsEncoded`).
        init(_ record: ChangeRecord, encoded: [UInt8]?) {
            if DocumentUndoManager.keepsEncoded(record) {
                self = .encoded(seq: record.seq, bytes: encoded ?? record.jsonBytes())
            } else {
                self = .record(record)
            }
        }

        var seq: Int64 {
            switch self {
            case .record(let record): record.seq
            case .encoded(let seq, _): seq
            }
        }

        func record() throws(ObjectGraphError) -> ChangeRecord {
            switch self {
            case .record(let record):
                return record
            case .encoded(_, let bytes):
                do {
                    return try ChangeRecord(
                        json: try PropertyListValue(jsonBytes: bytes, maximumDepth: PropertyListValue.fileDepthLimit))
                } catch let error as ObjectGraphError {
                    throw error
                } catch {
                    throw ObjectGraphError(
                        status: 500, code: "internal-error", message: "An undo group could not be read back: \(error)")
                }
            }
        }
    }

    /// Whether the undo group of `record` is kept as its JSON encoding: the committer then encodes it once, for the
    /// journal and for this manager (`didCommit(_:encoded:)`).
    static func keepsEncoded(_ record: ChangeRecord) -> Bool {
        record.changes.count > Group.largeRecordChanges || record.changes.contains(where: { $0.kind == .reset })
    }

    /// What a commit did to NSDocument's change count: a new change, an undo, a redo.
    private enum Edit {
        case done, undone, redone
    }

    private struct State {
        /// Every content commit of this run by seq, for `isEdited(sinceAnyOf:)` (the oldest dropped past `maxEdits`).
        var edits: [(seq: Int64, edit: Edit)] = []
        /// The newest seq dropped from `edits`.
        var editsDroppedThrough: Int64?
        /// A slice, so that dropping the oldest group past `levelsOfUndo` (on every commit once the stack is full)
        /// moves its start instead of shifting every record; a later reallocation lets the dropped ones go.
        var undoStack: ArraySlice<Group> = []
        var redoStack: [Group] = []
        var pending = Pending.change
    }

    /// The store's seq when the document was opened, and whether objects had changed since the saved state by then.
    private let openedAt: Int64
    private let editedBeforeOpening: Bool
    private static let maxEdits = 100_000

    public init(levelsOfUndo: Int = 100, openedAt: Int64 = 0, editedBeforeOpening: Bool = false) {
        self.levelsOfUndo = max(0, levelsOfUndo)
        self.openedAt = openedAt
        self.editedBeforeOpening = editedBeforeOpening
    }

    public var canUndo: Bool { state.withLock { !$0.undoStack.isEmpty } }
    public var canRedo: Bool { state.withLock { !$0.redoStack.isEmpty } }

    /// The seq of the group `undo` would undo next.
    public var undoSeq: Int64? { state.withLock { $0.undoStack.last?.seq } }

    /// The seq of the group `redo` would redo next.
    public var redoSeq: Int64? { state.withLock { $0.redoStack.last?.seq } }

    /// Forgets every group.
    public func removeAllActions() {
        state.withLock { state in
            state.undoStack.removeAll()
            state.redoStack.removeAll()
        }
    }

    // MARK: Inside transactions (under the store's lock)

    /// Marks the transaction about to run as an ordinary change; the document calls it first in every transaction.
    func beginTransaction() {
        state.withLock { $0.pending = .change }
    }

    /// Undoes the newest group in `transaction`; 409 `action-disabled` when there is none, 409 `conflict` (and the
    /// stacks are cleared) when it no longer applies. Returns the group's seq, taken under the store's lock as the
    /// group itself is, for `discardEmpty`.
    func undo(in transaction: Transaction, prepared: PreparedGroup? = nil) throws(ObjectGraphError) -> Int64 {
        guard let group = state.withLock({ $0.undoStack.last }) else { throw Self.nothingTo("undo") }
        let record: ChangeRecord
        if let ready = prepared?.record(for: group) { record = ready } else { record = try readBack(group) }
        do throws(ObjectGraphError) {
            try transaction.undo(record)
        } catch {
            removeAllActions()
            throw Self.conflict("undo", error)
        }
        state.withLock { $0.pending = .undo(seq: record.seq) }
        return group.seq
    }

    /// Redoes the newest undone group in `transaction` (errors as for `undo(in:)`).
    func redo(in transaction: Transaction, prepared: PreparedGroup? = nil) throws(ObjectGraphError) -> Int64 {
        guard let group = state.withLock({ $0.redoStack.last }) else { throw Self.nothingTo("redo") }
        let record: ChangeRecord
        if let ready = prepared?.record(for: group) { record = ready } else { record = try readBack(group) }
        do throws(ObjectGraphError) {
            try transaction.redo(record)
        } catch {
            removeAllActions()
            throw Self.conflict("redo", error)
        }
        state.withLock { $0.pending = .redo(seq: record.seq) }
        return group.seq
    }

    /// The record of the group on top of the undo (or redo) stack, decoded before the transaction, outside the
    /// store's lock: a large group is kept as JSON (a `PUT /store`'s holds the old and the new graph), and decoding
    /// it under the lock kept every other request waiting as long. Nil when the top group is not kept encoded, or
    /// when there is none or it cannot be read (the transaction then reads it as before, with the same errors).
    struct PreparedGroup {
        let seq: Int64
        /// The group's bytes, held so that their storage (which names the group) stays the group's while prepared.
        fileprivate let bytes: [UInt8]
        let record: ChangeRecord

        /// The prepared record if `group` is still the one it was decoded from: the same seq and the same stored
        /// bytes (another undo or redo in between, or a roll-back that gave the seq to another change, puts another
        /// group on top, which is then decoded under the lock as before).
        fileprivate func record(for group: Group) -> ChangeRecord? {
            guard case .encoded(let groupSeq, let groupBytes) = group, groupSeq == seq,
                Self.sameStorage(groupBytes, bytes)
            else { return nil }
            return record
        }

        private static func sameStorage(_ a: [UInt8], _ b: [UInt8]) -> Bool {
            a.withUnsafeBufferPointer { a in b.withUnsafeBufferPointer { b in a.baseAddress == b.baseAddress } }
                && a.count == b.count
        }
    }

    /// Decodes the top group of the undo (`undo: true`) or redo stack, outside the store's lock (see `PreparedGroup`).
    func prepare(undo: Bool) -> PreparedGroup? {
        guard let group = state.withLock({ undo ? $0.undoStack.last : $0.redoStack.last }),
            case .encoded(let seq, let bytes) = group, let record = try? group.record()
        else { return nil }
        return PreparedGroup(seq: seq, bytes: bytes, record: record)
    }

    /// A group's record. One that cannot be read back (500) clears the stacks, as a conflict does, so that undo is
    /// not left enabled to fail every time.
    private func readBack(_ group: Group) throws(ObjectGraphError) -> ChangeRecord {
        do throws(ObjectGraphError) {
            return try group.record()
        } catch {
            removeAllActions()
            throw error
        }
    }

    /// Records a commit (the store's `willCommit`, after the journal): a new group, or the completion of an undo or
    /// redo. `encoded` is the record's `jsonBytes()` when the committer made it.
    func didCommit(_ record: ChangeRecord, encoded: [UInt8]? = nil) {
        state.withLock { state in
            // A commit that only took a seq (`ObjectStore.advanceSeq()`) changed nothing to undo.
            guard !record.changes.isEmpty else { return }
            let edit: Edit =
                switch state.pending {
                case .change: .done
                case .undo: .undone
                case .redo: .redone
                }
            state.edits.append((record.seq, edit))
            if state.edits.count > Self.maxEdits {
                let dropped = state.edits.count / 2
                state.editsDroppedThrough = state.edits[dropped - 1].seq
                state.edits.removeFirst(dropped)
            }
            switch state.pending {
            case .change:
                guard levelsOfUndo > 0 else { return }
                state.undoStack.append(Group(record, encoded: encoded))
                if state.undoStack.count > levelsOfUndo { state.undoStack.removeFirst() }
                state.redoStack.removeAll()
            case .undo(let seq):
                if let index = state.undoStack.lastIndex(where: { $0.seq == seq }) {
                    state.redoStack.append(state.undoStack.remove(at: index))
                }
            case .redo(let seq):
                if let index = state.redoStack.lastIndex(where: { $0.seq == seq }) {
                    state.redoStack.remove(at: index)
                }
                state.undoStack.append(Group(record, encoded: encoded))
                if state.undoStack.count > levelsOfUndo { state.undoStack.removeFirst() }
            }
            state.pending = .change
        }
    }

    /// NSDocument's `isDocumentEdited` against the saved state, which the store was at after each seq of `savedSeqs`
    /// (the save's, and each `revertToSaved`'s since, which undo and redo can come back to alike): edited unless,
    /// for one of them, the change count since is zero and no new change was made after undoing past it (the state
    /// cannot come back by undo and redo then), and objects had not changed before this run began with nothing
    /// saved since.
    public func isEdited(sinceAnyOf savedSeqs: [Int64]) -> Bool {
        guard let oldest = savedSeqs.min() else { return true }
        return state.withLock { state in
            state.edits.removeAll { $0.seq <= oldest }
            return savedSeqs.allSatisfy { isEdited(state, since: $0) }
        }
    }

    private func isEdited(_ state: State, since savedSeq: Int64) -> Bool {
        if savedSeq < openedAt && editedBeforeOpening { return true }
        if let dropped = state.editsDroppedThrough, savedSeq < dropped { return true }
        var count = 0
        for (seq, edit) in state.edits where seq > savedSeq {
            switch edit {
            case .done:
                if count < 0 { return true }
                count += 1
            case .undone: count -= 1
            case .redone: count += 1
            }
        }
        return count != 0
    }

    /// Drops the group an undo or redo made no change for (so it cannot block the stack). Called after the
    /// transaction, outside the store's lock, so it leaves `pending` alone: another undo may have begun meanwhile,
    /// and every transaction marks itself (`beginTransaction`).
    func discardEmpty(undo: Bool, seq: Int64) {
        state.withLock { state in
            if undo {
                state.undoStack.removeAll { $0.seq == seq }
            } else {
                state.redoStack.removeAll { $0.seq == seq }
            }
        }
    }

    static func nothingTo(_ action: String) -> ObjectGraphError {
        ObjectGraphError(status: 409, code: "action-disabled", message: "There is nothing to \(action).")
    }

    private static func conflict(_ action: String, _ error: ObjectGraphError) -> ObjectGraphError {
        ObjectGraphError(
            status: 409, code: "conflict",
            message: "The change can no longer be \(action == "undo" ? "undone" : "redone") (\(error.message)); "
                + "the undo history was cleared.")
    }
}
