/// The objects whose stored properties one key-path evaluation read (through derived keys too), and the object it
/// started from: a commit that changed none of them left its value as it was.
///
/// Every relationship has an inverse and a commit records both sides of each relationship change, so an object
/// that joins or leaves what the path reaches does so through a change of an object the path read (a department's
/// `employees` when an employee moves in). Objects are kept by row, which stays valid until the store compacts a
/// table (`GraphState.layoutGeneration`); after that every evaluation counts as touched once. Made by
/// `ReadView.value(forKeyPath:of:noting:)`.
public struct ObjectReads: Sendable {
    let start: ObjectID
    /// `ObjectHandle.key`s, sorted, without repeats: noting a read is an append, and a commit's few changed objects
    /// are looked up by binary search.
    let objects: [UInt64]
    let layoutGeneration: Int

    init(start: ObjectID, reading keys: [UInt64], layoutGeneration: Int) {
        self.start = start
        var sorted = keys
        sorted.sort()
        var unique = 0
        for key in sorted where unique == 0 || sorted[unique - 1] != key {
            sorted[unique] = key
            unique += 1
        }
        sorted.removeLast(sorted.count - unique)
        objects = sorted
        self.layoutGeneration = layoutGeneration
    }

    /// Whether a commit that changed `changed` may have changed the value.
    public func mayChange(with changed: ChangedObjects) -> Bool {
        if changed.replacesGraph || changed.layoutGeneration != layoutGeneration || changed.targets.contains(start) {
            return true
        }
        guard changed.objects.count <= objects.count else { return objects.contains { changed.objects.contains($0) } }
        return changed.objects.contains { key in
            var (low, high) = (0, objects.count)
            while low < high {
                let middle = (low + high) / 2
                if objects[middle] < key { low = middle + 1 } else { high = middle }
            }
            return low < objects.count && objects[low] == key
        }
    }
}

/// The objects one committed record changed (set, inserted into, removed from, created or deleted), or that it
/// replaced the whole graph: what `ObjectReads.mayChange(with:)` is asked about. Made by
/// `ReadView.changedObjects(in:)` in the state right after the commit.
public struct ChangedObjects: Sendable {
    let targets: Set<ObjectID>
    /// `ObjectHandle.key`s.
    let objects: Set<UInt64>
    let replacesGraph: Bool
    let layoutGeneration: Int
}

extension ReadView {
    /// The objects `record` changed, `record` being the commit this view is right after.
    public func changedObjects(in record: ChangeRecord) -> ChangedObjects {
        // A whole-graph replacement (a change without a target) may change anything: no sets to build, under the
        // store's lock, for an import of many objects.
        guard record.changes.allSatisfy({ $0.target != nil }) else {
            return ChangedObjects(
                targets: [], objects: [], replacesGraph: true, layoutGeneration: state.layoutGeneration)
        }
        let targets = Set(record.changes.compactMap(\.target))
        return ChangedObjects(
            targets: targets, objects: Set(targets.compactMap { state.existingHandle(of: $0)?.key }),
            replacesGraph: false, layoutGeneration: state.layoutGeneration)
    }

    /// `value(forKeyPath:of:)`, noting what it read: `reads` is nil when the evaluation failed (anything may change
    /// its outcome).
    public func value(
        forKeyPath keyPath: String, of object: ObjectID, noting reads: inout ObjectReads?
    ) throws(ObjectGraphError) -> KeyValue {
        reads = nil
        let handle = try state.handle(of: object)
        let compiled = try state.compiled(keyPath, entity: handle.entity)
        var evaluation = KeyPathEvaluation()
        evaluation.reads = []
        let value = state.keyValue(try state.evaluate(compiled.steps, on: .object(handle), evaluation: &evaluation))
        reads = ObjectReads(start: object, reading: evaluation.reads ?? [], layoutGeneration: state.layoutGeneration)
        return value
    }
}
