/// A stored object as the store addresses it internally: its entity's index and its row.
///
/// Handles are only meaningful inside the `read` or `transaction` closure that produced them (rows move when the
/// store compacts after a commit); outside it, use `ObjectID`. They exist so that filtering and sorting many objects
/// need no hashing of ids: `handles(of:)`, then `value(of:at:)` with a `CompiledKeyPath`.
public struct ObjectHandle: Hashable, Sendable {
    let entity: Int
    let row: Int

    init(entity: Int, row: Int) {
        self.entity = entity
        self.row = row
    }

    /// The handle as one number (entity and row each fit in 32 bits), cheaper to keep and compare in bulk.
    var key: UInt64 { UInt64(entity) << 32 | UInt64(row) }
}
