import Dispatch
import PropertyList
import Synchronization

/// The object graph of one model: objects, key-value coding, and all-or-nothing transactions (DESIGN.md).
///
/// One `Mutex` guards the graph; `read` and `transaction` run their closure under it, so keep closures short and
/// never call out or nest them (the lock is not recursive). Sequence numbers: the store starts at seq 0; every
/// transaction that changes something commits with the next seq (strictly increasing, no gaps); a transaction that
/// changes nothing (including setting values equal to the current ones) uses no seq and makes no record.
/// Each object's version is the seq of the last transaction that changed it (also as the inverse side of a
/// relationship change): its ETag.
public final class ObjectStore: Sendable {
    public let model: ObjectModel
    private let state: Mutex<GraphState>
    /// The graph behind `state`, for what it publishes to be read without the lock only (`publishedSeq`,
    /// `publishedCounts`).
    private let graph: GraphState
    private let hooks: ObjectStoreHooks
    private let delivery = Mutex(DeliveryQueue())
    private let deliveryQueue = DispatchQueue(label: "bindery.store.delivery")

    private struct DeliveryQueue: ~Copyable {
        var pending: [ChangeRecord] = []
        var isDelivering = false
    }

    public init(model: ObjectModel, hooks: ObjectStoreHooks = ObjectStoreHooks()) {
        self.model = model
        self.graph = GraphState(model: model)
        self.state = Mutex(graph)
        self.hooks = hooks
    }

    /// The seq of the last committed transaction (without taking the store's lock).
    public var seq: Int64 {
        graph.publishedSeq.load(ordering: .acquiring)
    }

    /// How many objects the store holds, as the last commit left them (without taking the store's lock).
    public var objectCount: Int {
        graph.publishedCounts.withLock { $0.reduce(0, +) }
    }

    /// How many objects each entity has (by name, in the model's order), as the last commit left them (without
    /// taking the store's lock).
    public var objectCountsByEntity: [(entity: String, count: Int)] {
        let counts = graph.publishedCounts.withLock { $0 }
        return zip(model.entities, counts).map { ($0.name, $1) }
    }

    /// Runs `body` with a consistent read view of the store.
    public func read<T: Sendable, E: Error>(_ body: (ReadView) throws(E) -> T) throws(E) -> T {
        try state.withLock { (state: inout GraphState) throws(E) -> T in
            try body(ReadView(state: state))
        }
    }

    /// Runs `body` as one transaction: if it throws, or the changes break the model's constraints (422), or
    /// `willCommit` throws, nothing changes and the error is rethrown; else the changes commit with the next seq.
    @discardableResult
    public func transaction<T: Sendable>(_ body: (Transaction) throws -> T) throws -> TransactionResult<T> {
        let result = try state.withLock { (state: inout GraphState) throws -> TransactionResult<T> in
            let transaction = Transaction(state: state)
            do {
                let value = try body(transaction)
                return try commit(transaction, in: state, value: value)
            } catch {
                transaction.rollback()
                throw error
            }
        }
        if !hooks.defersDelivery {
            deliverPending(through: result.record?.seq)
        } else if let seq = result.record?.seq {
            hooks.awaitsDelivery?(seq)
        }
        return result
    }

    /// Commits a record of no changes: the next seq, for a change outside the object graph that observers see in seq
    /// order with the graph's (a controller's selection). It goes through the hooks like any commit (journaled, so
    /// seqs never go back after a restart) but changes no object, no version and not `contentSeq`. Returns the seq.
    @discardableResult
    public func advanceSeq() throws -> Int64 {
        try transaction { $0.takesSeq = true }.seq
    }

    /// Commits a record of no changes that moves the seq `step` ahead, skipping `step - 1` seqs (a record that says
    /// so, for the journal's replay), and the id counter as far: after a crash that may have lost commits whose seqs,
    /// or objects with server-assigned ids, were already seen (read before they were durable), no seq a client saw is
    /// ever given to another change, nor such an id to another object. Returns the new seq.
    @discardableResult
    public func advanceSeq(by step: Int64) throws -> Int64 {
        try transaction { transaction in
            transaction.takesSeq = true
            transaction.seqStep = max(1, step)
            let (ids, overflow) = transaction.state.lastAssignedID.addingReportingOverflow(max(0, step))
            if !overflow { transaction.state.lastAssignedID = ids }
        }.seq
    }

    /// `advanceSeq()`, reading the store in the same critical section: `body` sees every change before the seq
    /// and none after it (an observer's `initial` value, stamped with that seq).
    public func advanceSeq<T: Sendable>(reading body: (ReadView) throws -> T) throws -> (seq: Int64, value: T) {
        let result = try transaction { transaction in
            transaction.takesSeq = true
            return try body(transaction.view)
        }
        return (result.seq, result.value)
    }

    /// Replays a change record from the journal: the state after it is the state the record was made from
    /// (objects, ids, order, versions, seq, id counter).
    ///
    /// The record's seq must be the store's seq + 1 (409 `conflict` otherwise). Hooks are not run. The record is
    /// checked while it is applied (400 `bad-change-record`, 404, 422 for a value of the wrong type), but not against
    /// the model's constraints: it was valid when committed, and a model tightened since (a `maxLength` added) must
    /// not make a data directory unloadable after a crash when the same data in a snapshot loads (Core Data loads
    /// such objects too, and validates them when they are saved). On error nothing changes.
    ///
    /// `versions`: those of the snapshot the record follows (`restore(binarySnapshot:convertingEarlierVersions:)`),
    /// which the record moves as the version that wrote it did.
    public func apply(_ record: ChangeRecord, versions: SnapshotVersions = .answered) throws(ObjectGraphError) {
        try state.withLock { (state: inout GraphState) throws(ObjectGraphError) in
            guard record.firstSeq == state.seq + 1 else {
                throw ObjectGraphError(
                    status: 409, code: "conflict",
                    message: "Change record \(record.seq) does not follow the store's seq \(state.seq).")
            }
            let transaction = Transaction(state: state)
            transaction.movesReadersVersions = versions == .answered
            transaction.keepsUnchangedVersions = versions != .ownBeforeKeptVersions
            do throws(ObjectGraphError) {
                for change in record.changes { try transaction.replay(change) }
                state.lastAssignedID = max(state.lastAssignedID, record.lastAssignedID)
                transaction.commit(seq: record.seq)
            } catch {
                transaction.rollback()
                throw error
            }
        }
    }

    /// Replaces the whole state with a snapshot from `ReadView.snapshot()`: objects, versions, seq and id counter.
    ///
    /// For recovery (snapshot, then `apply` of the journal records after it): no hooks run and no record is made.
    /// The snapshot is validated like a transaction; on error nothing changes.
    public func restore(snapshot: PropertyListValue) throws(ObjectGraphError) {
        try state.withLock { (state: inout GraphState) throws(ObjectGraphError) in
            let transaction = Transaction(state: state)
            do throws(ObjectGraphError) {
                let (seq, lastAssignedID) = try transaction.restore(snapshot: snapshot)
                try transaction.validate()
                transaction.discardUndoLog()
                state.seq = seq
                state.contentSeq = seq
                state.lastAssignedID = lastAssignedID
            } catch {
                transaction.rollback()
                throw error
            }
        }
    }

    /// Loads a fixture's `data.json` bytes (`{"objects": [...]}`) as one transaction replacing the graph.
    ///
    /// Malformed JSON is 400 `malformed-json` with `line` and `column`.
    @discardableResult
    public func loadFixture(jsonBytes: some Collection<UInt8>) throws -> ChangeRecord? {
        let json: PropertyListValue
        do {
            json = try PropertyListValue(jsonBytes: jsonBytes, maximumDepth: PropertyListValue.documentDepthLimit)
        } catch {
            var fields: [String: PropertyListValue] = [:]
            fields["line"] = error.line.map { .integer(Int64($0)) }
            fields["column"] = error.column.map { .integer(Int64($0)) }
            throw ObjectGraphError(status: 400, code: "malformed-json", message: error.description, fields: fields)
        }
        return try transaction { transaction in try transaction.replaceGraph(with: json) }.record
    }

    // MARK: Commit and delivery

    private func commit<T: Sendable>(
        _ transaction: Transaction, in state: GraphState, value: T
    ) throws -> TransactionResult<T> {
        guard transaction.hasChanges || transaction.takesSeq else {
            transaction.rollback()
            return TransactionResult(value: value, record: nil, seq: state.seq)
        }
        try transaction.validate()
        let seq = state.seq + transaction.seqStep
        let record = transaction.changeRecord(seq: seq)
        try hooks.willCommit?(record)
        transaction.commit(seq: seq)
        hooks.capture?(record, ReadView(state: state))
        if hooks.didCommit != nil {
            delivery.withLock { $0.pending.append(record) }
        }
        return TransactionResult(value: value, record: record, seq: seq)
    }

    /// Delivers pending records to `didCommit` in seq order, outside the store's lock, one deliverer at a time.
    ///
    /// The committing thread delivers until its own record (`seq`) is out, so a request's own change has reached the
    /// observers when it returns (unless another thread was delivering); what arrived meanwhile is handed to the
    /// store's delivery queue, so that a steady stream of other commits cannot keep one request delivering forever.
    private func deliverPending(through seq: Int64?) {
        guard let didCommit = hooks.didCommit, claimDelivery() else { return }
        if let seq {
            drain(didCommit, through: seq)
        } else {
            deliveryQueue.async { [self] in drain(didCommit, through: nil) }
        }
    }

    /// Forgets the committed records after `seq` that were not delivered yet: after a rollback (`restore`) of
    /// changes that could not be made durable, nobody must hear of them.
    public func discardUndelivered(after seq: Int64) {
        delivery.withLock { $0.pending.removeAll { $0.seq > seq } }
    }

    /// Delivers the records committed so far, up to seq `limit`, to `didCommit` on the calling thread (with
    /// `defersDelivery`, the only way records are delivered; the journal delivers what is durable). When another
    /// thread is delivering, it returns at once: that thread takes them.
    public func deliverCommitted(through limit: Int64 = .max) {
        guard let didCommit = hooks.didCommit, claimDelivery() else { return }
        drain(didCommit, through: nil, upTo: limit)
    }

    /// Makes the caller the deliverer, unless another thread is delivering or nothing waits.
    private func claimDelivery() -> Bool {
        delivery.withLock { queue in
            if queue.isDelivering || queue.pending.isEmpty { return false }
            queue.isDelivering = true
            return true
        }
    }

    /// Delivers pending records in batches until none is left, or until the record of `seq` is out; never one after
    /// `limit` (they stay pending for a later pass).
    private func drain(
        _ didCommit: @escaping @Sendable (ChangeRecord) -> Void, through seq: Int64?, upTo limit: Int64 = .max
    ) {
        while true {
            let batch = delivery.withLock { queue in
                var batch: [ChangeRecord]
                if let last = queue.pending.last, last.seq > limit {
                    let count = queue.pending.prefix { $0.seq <= limit }.count
                    batch = Array(queue.pending.prefix(count))
                    queue.pending.removeFirst(count)
                } else {
                    batch = queue.pending.takeAll()
                }
                if batch.isEmpty { queue.isDelivering = false }
                return batch
            }
            guard let last = batch.last else { return }
            for record in batch { didCommit(record) }
            if let seq, last.seq >= seq {
                // This transaction's record is out: stop here, and let the queue deliver what arrived meanwhile.
                let more = delivery.withLock { queue in
                    if queue.pending.isEmpty { queue.isDelivering = false }
                    return !queue.pending.isEmpty
                }
                if more { deliveryQueue.async { [self] in drain(didCommit, through: nil) } }
                return
            }
        }
    }
}
