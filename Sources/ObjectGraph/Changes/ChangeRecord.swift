import PropertyList

/// Everything one committed transaction did, in order: the unit of the change feed, KVO, undo and the journal.
///
/// `changes` lists every primitive change in the order it was made, both sides of every relationship change
/// included, so applying them in order (`ObjectStore.apply(_:)`) recreates the state exactly and applying their
/// inverses in reverse order undoes the transaction. `inserted`, `updated` and `deleted` summarize the objects
/// touched (an object inserted and deleted in the same transaction is in none). `lastAssignedID` is the store's
/// server-assigned id counter after the transaction. `firstSeq` is `seq` except for a record that skips seqs
/// (`ObjectStore.advanceSeq(by:)`): it follows the store's seq `firstSeq - 1` and leaves it at `seq`.
public struct ChangeRecord: Sendable, Hashable {
    public var seq: Int64
    public var firstSeq: Int64
    public var changes: [Change]
    public var inserted: [ObjectID]
    public var updated: [ObjectID]
    public var deleted: [ObjectID]
    public var lastAssignedID: Int64

    public init(
        seq: Int64, changes: [Change], inserted: [ObjectID] = [], updated: [ObjectID] = [], deleted: [ObjectID] = [],
        lastAssignedID: Int64 = 0, firstSeq: Int64? = nil
    ) {
        self.seq = seq
        self.firstSeq = firstSeq ?? seq
        self.changes = changes
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
        self.lastAssignedID = lastAssignedID
    }
}
