/// What `ObjectStore.transaction` returns: the closure's value and the committed change record.
public struct TransactionResult<Value: Sendable>: Sendable {
    public var value: Value
    /// The record of the committed changes; nil when the transaction changed nothing (no seq was used).
    public var record: ChangeRecord?
    /// The store's seq after the transaction (the record's seq, or the unchanged seq).
    public var seq: Int64
}
