/// One observable change of a controller's state, for `/observers` with `"target": "controllers/NAME"`.
///
/// Delivered after the registry's lock is released, in the order the changes were made, never concurrently with
/// itself. A change says which key may have changed; read the new value with `ControllerRegistry.value(forKeyPath:
/// controller:)` and compare, since a report can be a no-op (for example `selection` is reported for every
/// committed record while something is selected, as any of them may change a selected object's key path).
public struct ControllerChange: Sendable, Hashable {
    /// The controller keys that are reported.
    public enum Key: String, Sendable, Hashable, CaseIterable {
        case arrangedObjects
        case selectionIndexes
        case selection
        /// `isEditing` and the pending edits (`edits`).
        case isEditing
        case filterPredicate
        case sortDescriptors
        case content
        /// The controller was created or removed.
        case controller
    }

    public var controller: String
    public var key: Key
    /// The store seq of the commit that caused the change, when a commit did.
    public var seq: Int64?

    public init(controller: String, key: Key, seq: Int64? = nil) {
        self.controller = controller
        self.key = key
        self.seq = seq
    }
}
