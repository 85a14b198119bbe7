import ObjectGraph

/// Undo and redo as transactions like any other: journaled, numbered, and told to commit observers.
extension Document {
    /// Undoes the newest undo group; returns the seq of the transaction that did. 409 `action-disabled` with
    /// nothing to undo, 409 `conflict` when it no longer applies.
    @discardableResult
    public func undo() throws -> Int64 {
        let undoManager = undoManager
        // A large group is decoded before the store's lock is taken (and released after it is given back).
        let prepared = undoManager.prepare(undo: true)
        let result = try transaction { transaction in try undoManager.undo(in: transaction, prepared: prepared) }
        if result.record == nil { undoManager.discardEmpty(undo: true, seq: result.value) }
        return result.seq
    }

    /// Redoes the newest undone group; returns the seq of the transaction that did (errors as for `undo`).
    @discardableResult
    public func redo() throws -> Int64 {
        let undoManager = undoManager
        let prepared = undoManager.prepare(undo: false)
        let result = try transaction { transaction in try undoManager.redo(in: transaction, prepared: prepared) }
        if result.record == nil { undoManager.discardEmpty(undo: false, seq: result.value) }
        return result.seq
    }
}
