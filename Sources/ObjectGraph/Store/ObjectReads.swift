/// The objects whose stored properties one key-path evaluation read (through derived keys too), and the object it
/// started from: a commit that changed none of them left its value as it was.
///
/// Every relationship has an inverse and a commit records both sides of each relationship change, so an object
/// that joins or leaves what the path reaches does so through a change of an object the path read (a department's
/// `employees` when an employee moves in). `ReadView.value(forKeyPath:of:noting:)` makes it.
public struct ObjectReads: Sendable {
    var objects: Set<ObjectID>

    /// Whether a commit that changed `changed` may have changed the value.
    public func mayChange(with changed: ChangedObjects) -> Bool {
        if changed.replacesGraph { return true }
        return objects.count <= changed.objects.count
            ? objects.contains { changed.objects.contains($0) } : changed.objects.contains { objects.contains($0) }
    }
}

/// The objects one committed record changed (set, inserted into, removed from, created or deleted), or that it
/// replaced the whole graph: what `ObjectReads.mayChange(with:)` is asked about.
public struct ChangedObjects: Sendable {
    var objects: Set<ObjectID> = []
    var replacesGraph = false

    public init(_ record: ChangeRecord) {
        objects.reserveCapacity(record.changes.count)
        for change in record.changes {
            if let target = change.target {
                objects.insert(target)
            } else {
                replacesGraph = true
            }
        }
    }
}
