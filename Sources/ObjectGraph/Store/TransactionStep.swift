import PropertyList

/// One primitive change as a transaction makes it: enough to undo it (rollback) and to describe it (`Change`).
///
/// Rows stay valid for the whole transaction: tombstones are only compacted after commit.
enum TransactionStep {
    case created(ObjectHandle, attributes: [PropertyListValue])
    case deleted(ObjectHandle, attributes: [PropertyListValue], json: PropertyListValue)
    case attribute(ObjectHandle, slot: Int, old: PropertyListValue, new: PropertyListValue)
    case toOne(ObjectHandle, relationship: Int, old: Int32, new: Int32)
    case toManySet(ObjectHandle, relationship: Int, old: [Int32], new: [Int32])
    case toManyInsert(ObjectHandle, relationship: Int, index: Int, row: Int32)
    case toManyRemove(ObjectHandle, relationship: Int, index: Int, row: Int32)
    case toManyReplace(ObjectHandle, relationship: Int, index: Int, old: Int32, new: Int32)
    case reset(oldTables: [EntityTable], old: PropertyListValue, new: PropertyListValue)

    var target: ObjectHandle? {
        switch self {
        case .created(let handle, _), .deleted(let handle, _, _), .attribute(let handle, _, _, _),
            .toOne(let handle, _, _, _), .toManySet(let handle, _, _, _), .toManyInsert(let handle, _, _, _),
            .toManyRemove(let handle, _, _, _), .toManyReplace(let handle, _, _, _, _):
            handle
        case .reset: nil
        }
    }
}
