import PropertyList

/// Undo and redo of a committed transaction as a new transaction (the document's undo manager).
///
/// Both replay recorded changes exactly (no inverse maintenance: a record holds both sides of every relationship
/// change), so they are only right when the graph is as the record left it (undo) or found it (redo): the undo
/// manager guarantees that by undoing the newest group first and clearing redo on any new change.
extension Transaction {
    /// Makes the changes of `record` again, in order (redo).
    public func redo(_ record: ChangeRecord) throws(ObjectGraphError) {
        for change in record.changes { try replay(change) }
    }

    /// Undoes `record`: the inverse of each of its changes, newest first.
    ///
    /// An object the record created is deleted again (its relationships are emptied by the inverted relationship
    /// changes first); an object it deleted is created again with its attributes, and the inverted relationship
    /// changes that follow restore both sides of its relationships. A re-created object comes last in its entity's
    /// insertion order.
    public func undo(_ record: ChangeRecord) throws(ObjectGraphError) {
        var forms: [ObjectID: PropertyListValue] = [:]
        for change in record.changes where change.kind == .creation {
            if let target = change.target, let handle = state.existingHandle(of: target) {
                forms[target] = state.objectJSON(handle, includingDerived: false)
            }
        }
        for change in record.changes.reversed() {
            try replay(inverse(of: change, form: change.target.flatMap { forms[$0] }))
        }
    }

    private func inverse(of change: Change, form: PropertyListValue?) throws(ObjectGraphError) -> Change {
        var inverse = change
        switch change.kind {
        case .setting, .replacement, .reset:
            inverse.old = change.new
            inverse.new = change.old
        case .insertion:
            inverse.kind = .removal
            inverse.old = change.new
            inverse.new = nil
        case .removal:
            inverse.kind = .insertion
            inverse.new = change.old
            inverse.old = nil
        case .creation:
            inverse.kind = .deletion
            inverse.old = form ?? change.new
            inverse.new = nil
        case .deletion:
            guard let target = change.target, case .dictionary(let stored)? = change.old else {
                throw ChangeRecord.bad("a deletion to undo needs the object's stored form.")
            }
            let entity = state.model.entities[try state.model.entityIndex(target.entity)]
            var attributes: [String: PropertyListValue] = [:]
            for (key, value) in stored where !value.isNull && entity.attribute(named: key) != nil {
                attributes[key] = value
            }
            inverse.kind = .creation
            inverse.new = .dictionary(attributes)
            inverse.old = nil
        }
        return inverse
    }
}
