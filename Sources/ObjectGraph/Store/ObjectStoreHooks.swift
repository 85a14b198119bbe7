/// Code that later layers run around each commit: the journal (`willCommit`) and KVO delivery (`didCommit`).
///
/// `willCommit` runs under the store's lock once the transaction has validated, with its change record, in seq
/// order; if it throws, the transaction is rolled back and the error is rethrown to the caller as it is (the
/// journal append goes here: a change is acknowledged only once it is journaled). It must not touch the store.
/// `didCommit` runs after the lock is released, exactly once per committed record, in seq order, never concurrently
/// with itself; it runs on the committing thread until that transaction's own record is out, then on the store's
/// delivery queue (so a `transaction` call can return before its own record was delivered when another thread was
/// delivering). With `defersDelivery`, committing threads deliver nothing: records wait until someone calls
/// `ObjectStore.deliverCommitted()` (the document's journal does, after each group commit, so that the requests that
/// flush made durable are answered after their changes reached the observers, and one thread delivers a whole group).
/// Neither runs for transactions that changed nothing, nor for `ObjectStore.apply(_:)` (journal replay).
///
/// `awaitsDelivery` (with `defersDelivery`) runs after the lock is released with the seq of each committed record,
/// which now waits in the store's queue: a deliverer that ran between the record's `willCommit` and its queueing
/// (the journal's flusher can flush a record that early) missed it, and must be told to pass again.
///
/// `capture` runs under the store's lock right after a record committed, with a read view of the state just after it
/// (its seq is the record's): for readers that must see every committed state exactly, such as the KVO receptionist
/// capturing the values of observed key paths. It may only read the view, briefly, and must not call out.
public struct ObjectStoreHooks: Sendable {
    public var willCommit: (@Sendable (ChangeRecord) throws -> Void)?
    public var didCommit: (@Sendable (ChangeRecord) -> Void)?
    public var capture: (@Sendable (ChangeRecord, ReadView) -> Void)?
    public var defersDelivery: Bool
    public var awaitsDelivery: (@Sendable (Int64) -> Void)?

    public init(
        willCommit: (@Sendable (ChangeRecord) throws -> Void)? = nil,
        didCommit: (@Sendable (ChangeRecord) -> Void)? = nil,
        capture: (@Sendable (ChangeRecord, ReadView) -> Void)? = nil,
        defersDelivery: Bool = false, awaitsDelivery: (@Sendable (Int64) -> Void)? = nil
    ) {
        self.willCommit = willCommit
        self.didCommit = didCommit
        self.capture = capture
        self.defersDelivery = defersDelivery
        self.awaitsDelivery = awaitsDelivery
    }
}
