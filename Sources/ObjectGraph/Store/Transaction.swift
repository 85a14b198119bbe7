import PropertyList

/// The changes of one `ObjectStore.transaction`: all of them are committed, or none.
///
/// Each operation checks types, keys and references at once and throws (the transaction is then rolled back); the
/// model's constraints and cardinalities are checked once, when the closure returns, over every object the
/// transaction touched (so intermediate states may be invalid, as in a Core Data save). Inverse relationships are
/// kept in step on both sides. Valid only inside the closure it was given to; reading through `view` sees the
/// transaction's own changes.
public final class Transaction {
    let state: GraphState
    var steps: [TransactionStep] = []
    /// Index in `steps` of the last `reset`; steps before it are not part of the change record.
    var resetIndex: Int?
    /// False while `replaceGraph` loads objects: the reset step alone describes (and undoes) them.
    var recording = true
    /// The versions the objects a `replaceGraph` left as they were keep at commit (every other object's becomes the
    /// commit's seq).
    var keptVersions: [ObjectHandle: Int64] = [:]
    /// The properties a `replaceGraph` changed on objects in both graphs (for the versions of their readers).
    var replacedProperties: [ChangedProperty] = []
    /// Set by `ObjectStore.advanceSeq()`: the transaction commits (with a record of no changes) although it changes
    /// nothing.
    var takesSeq = false
    /// How far the commit moves the store's seq: 1, or more for `ObjectStore.advanceSeq(by:)` (seqs skipped).
    var seqStep: Int64 = 1
    /// False while journal records are replayed on versions of an earlier format, which are the objects' own
    /// (`ObjectStore.apply(_:versions:)`): the commit moves the changed objects' versions, not their readers'.
    var movesReadersVersions = true
    /// False while journal records are replayed as the earliest format's writer moved versions: a `replaceGraph`
    /// moves every object's, also those it left as they were (`keptVersions`).
    var keepsUnchangedVersions = true
    let startLastAssignedID: Int64

    init(state: GraphState) {
        self.state = state
        self.startLastAssignedID = state.lastAssignedID
    }

    /// Reading inside the transaction (it sees the changes made so far).
    public var view: ReadView { ReadView(state: state) }

    /// Whether the transaction has changed anything so far.
    public var hasChanges: Bool { !steps.isEmpty }

    // MARK: Recorded primitive changes (one side of a relationship each)

    func setAttribute(_ handle: ObjectHandle, _ slot: Int, _ value: PropertyListValue) {
        let old = state.attribute(handle, slot)
        guard !old.isIdentical(to: value) else { return }
        state.setAttribute(handle, slot, value)
        record(.attribute(handle, slot: slot, old: old, new: value))
    }

    func setToOne(_ handle: ObjectHandle, _ index: Int, _ destination: ObjectHandle?) {
        let relationship = state.relationship(handle, index)
        let old = state.toOne(handle, relationship).map { Int32($0.row) } ?? -1
        let new = destination.map { Int32($0.row) } ?? -1
        guard old != new else { return }
        state.setToOne(handle, relationship, new)
        record(.toOne(handle, relationship: index, old: old, new: new))
    }

    func setToMany(_ handle: ObjectHandle, _ index: Int, _ rows: [Int32]) {
        let relationship = state.relationship(handle, index)
        let old = state.toManyRows(handle, relationship)
        guard old != rows else { return }
        state.setToMany(handle, relationship, rows)
        record(.toManySet(handle, relationship: index, old: old, new: rows))
    }

    func insertToMany(_ handle: ObjectHandle, _ index: Int, _ row: Int32, at position: Int) {
        state.insertToMany(handle, state.relationship(handle, index), row, at: position)
        record(.toManyInsert(handle, relationship: index, index: position, row: row))
    }

    func removeToMany(_ handle: ObjectHandle, _ index: Int, at position: Int) {
        let relationship = state.relationship(handle, index)
        let row = state.toManyRows(handle, relationship)[position]
        state.removeToMany(handle, relationship, at: position)
        record(.toManyRemove(handle, relationship: index, index: position, row: row))
    }

    func replaceToMany(_ handle: ObjectHandle, _ index: Int, _ row: Int32, at position: Int) {
        let relationship = state.relationship(handle, index)
        let old = state.toManyRows(handle, relationship)[position]
        guard old != row else { return }
        state.replaceToMany(handle, relationship, row, at: position)
        record(.toManyReplace(handle, relationship: index, index: position, old: old, new: row))
    }

    func createRow(entity: Int, id: String, attributes: [PropertyListValue]) -> ObjectHandle {
        let row = state.tables[entity].appendRow(id: id, attributes: attributes, version: state.seq + 1)
        let handle = ObjectHandle(entity: entity, row: row)
        record(.created(handle, attributes: attributes))
        return handle
    }

    /// Tombstones an object whose relationships are already empty; `json` is its stored form before deletion began.
    func tombstone(_ handle: ObjectHandle, json: PropertyListValue) {
        let attributes = state.tables[handle.entity].attributeValues(of: handle.row)
        state.tables[handle.entity].tombstone(handle.row)
        record(.deleted(handle, attributes: attributes, json: json))
    }

    private func record(_ step: TransactionStep) {
        if recording { steps.append(step) }
    }

    // MARK: Rollback

    /// Undoes every step, newest first, and restores the id counter: the graph is as it was before.
    func rollback() {
        for step in steps.reversed() {
            switch step {
            case .created(let handle, _):
                state.tables[handle.entity].popRow()
            case .deleted(let handle, let attributes, _):
                state.tables[handle.entity].revive(handle.row, attributes: attributes)
            case .attribute(let handle, let slot, let old, _):
                state.setAttribute(handle, slot, old)
            case .toOne(let handle, let index, let old, _):
                state.setToOne(handle, state.relationship(handle, index), old)
            case .toManySet(let handle, let index, let old, _):
                state.setToMany(handle, state.relationship(handle, index), old)
            case .toManyInsert(let handle, let index, let position, _):
                state.removeToMany(handle, state.relationship(handle, index), at: position)
            case .toManyRemove(let handle, let index, let position, let row):
                state.insertToMany(handle, state.relationship(handle, index), row, at: position)
            case .toManyReplace(let handle, let index, let position, let old, _):
                state.replaceToMany(handle, state.relationship(handle, index), old, at: position)
            case .reset(let oldTables, _, _):
                state.tables = oldTables
            }
        }
        steps = []
        resetIndex = nil
        state.lastAssignedID = startLastAssignedID
    }

    // MARK: Validation

    /// Checks constraints and cardinalities of every live object the transaction touched (all objects after a
    /// reset); throws one error, or 422 `validation-failed` with `errors` for several (at most 100 are listed).
    func validate() throws(ObjectGraphError) {
        let errors = validationErrors()
        if !errors.isEmpty { throw .combining(errors) }
    }

    /// What `validate()` would report, one error per broken constraint (at most 100), without throwing: for a
    /// caller that lists them together with errors of its own.
    public func validationErrors() -> [ObjectGraphError] {
        var errors: [ObjectGraphError] = []
        if resetIndex != nil {
            for entity in state.tables.indices {
                for row in state.tables[entity].liveRows {
                    validate(ObjectHandle(entity: entity, row: row), into: &errors)
                    if errors.count >= 100 { break }
                }
            }
        } else if let first = steps.first?.target, steps.allSatisfy({ $0.target == first }) {
            // One object changed (a single PUT or PATCH): no set to build.
            if state.isAlive(first) { validate(first, into: &errors) }
        } else {
            var seen: Set<ObjectHandle> = []
            for step in steps {
                guard let handle = step.target, seen.insert(handle).inserted, state.isAlive(handle) else { continue }
                validate(handle, into: &errors)
                if errors.count >= 100 { break }
            }
        }
        return errors
    }

    /// The constraints the object's attributes break.
    func validateAttributes(_ handle: ObjectHandle, into errors: inout [ObjectGraphError]) {
        // The descriptions are read in place (by index): copying an entity or attribute description retains every
        // field, on every commit. The object's id is only made for an error.
        let attributes = state.model.entities[handle.entity].attributes
        for index in attributes.indices {
            let value = state.attribute(handle, attributes[index].slot)
            if value.isNull && !attributes[index].isRequired { continue }
            if attributes[index].violation(of: value, in: nil) != nil,
                let error = attributes[index].violation(of: value, in: state.objectID(of: handle))
            {
                errors.append(error)
            }
        }
    }

    private func validate(_ handle: ObjectHandle, into errors: inout [ObjectGraphError]) {
        validateAttributes(handle, into: &errors)
        let relationships = state.model.entities[handle.entity].relationships
        for index in relationships.indices {
            let message: String
            if relationships[index].isToMany {
                let count = state.toManyRows(handle, relationships[index]).count
                let minimum = relationships[index].effectiveMinCount
                if count < minimum {
                    message = "needs at least \(minimum) object\(minimum == 1 ? "" : "s"), not \(count)."
                } else if let maximum = relationships[index].maxCount, count > maximum {
                    message = "may hold at most \(maximum), not \(count)."
                } else {
                    continue
                }
            } else if relationships[index].isRequired && state.toOne(handle, relationships[index]) == nil {
                message = "is required."
            } else {
                continue
            }
            let name = relationships[index].name
            errors.append(.cardinality(name, of: state.objectID(of: handle), "\(name) \(message)"))
        }
    }

    // MARK: Commit

    /// Forgets the steps without committing them (the caller has set seq and versions itself).
    func discardUndoLog() {
        steps = []
        resetIndex = nil
        keptVersions = [:]
        replacedProperties = []
    }

    /// The change record of the transaction as committed with `seq`; only for one that changed something or takes a
    /// seq (`hasChanges || takesSeq`).
    func changeRecord(seq: Int64) -> ChangeRecord {
        let start = resetIndex ?? 0
        var changes: [Change] = []
        changes.reserveCapacity(steps.count - start)
        var inserted: [ObjectID] = []
        var deleted: [ObjectID] = []
        var updated: [ObjectID] = []
        var created: Set<ObjectHandle> = []
        var touched: Set<ObjectHandle> = []
        var touchedOrder: [ObjectHandle] = []
        for step in steps[start...] {
            changes.append(change(for: step))
            switch step {
            case .created(let handle, _): created.insert(handle)
            case .deleted(let handle, _, _):
                if !created.contains(handle) { deleted.append(state.objectID(of: handle)) }
            default: break
            }
            if let handle = step.target, touched.insert(handle).inserted { touchedOrder.append(handle) }
        }
        for handle in touchedOrder where state.isAlive(handle) {
            if created.contains(handle) {
                inserted.append(state.objectID(of: handle))
            } else {
                updated.append(state.objectID(of: handle))
            }
        }
        return ChangeRecord(
            seq: seq, changes: changes, inserted: inserted, updated: updated, deleted: deleted,
            lastAssignedID: state.lastAssignedID, firstSeq: state.seq + 1)
    }

    /// Makes the transaction's changes current: the seq, and the versions (`moveVersions(to:)`).
    func commit(seq: Int64) {
        state.seq = seq
        if !steps.isEmpty { state.contentSeq = seq }
        moveVersions(to: seq)
        steps = []
        resetIndex = nil
        keptVersions = [:]
        replacedProperties = []
        state.compactIfNeeded()
    }

    private func change(for step: TransactionStep) -> Change {
        func id(_ handle: ObjectHandle) -> ObjectID { state.objectID(of: handle) }
        func name(_ handle: ObjectHandle, _ index: Int) -> String { state.relationship(handle, index).name }
        func ref(_ handle: ObjectHandle, _ index: Int, _ row: Int32) -> PropertyListValue {
            state.reference(entity: state.relationship(handle, index).destinationIndex, row: row)
        }
        func refs(_ handle: ObjectHandle, _ index: Int, _ rows: [Int32]) -> PropertyListValue {
            .array(rows.map { ref(handle, index, $0) })
        }
        switch step {
        case .created(let handle, let attributes):
            var values: [String: PropertyListValue] = [:]
            for attribute in state.model.entities[handle.entity].attributes where !attributes[attribute.slot].isNull {
                values[attribute.name] = attributes[attribute.slot]
            }
            return Change(kind: .creation, target: id(handle), new: .dictionary(values))
        case .deleted(let handle, _, let json):
            return Change(kind: .deletion, target: id(handle), old: json)
        case .attribute(let handle, let slot, let old, let new):
            let key = state.model.entities[handle.entity].attributes[slot].name
            return Change(kind: .setting, target: id(handle), key: key, old: old, new: new)
        case .toOne(let handle, let index, let old, let new):
            return Change(
                kind: .setting, target: id(handle), key: name(handle, index), old: ref(handle, index, old),
                new: ref(handle, index, new))
        case .toManySet(let handle, let index, let old, let new):
            return Change(
                kind: .setting, target: id(handle), key: name(handle, index), old: refs(handle, index, old),
                new: refs(handle, index, new))
        case .toManyInsert(let handle, let index, let position, let row):
            return Change(
                kind: .insertion, target: id(handle), key: name(handle, index), new: refs(handle, index, [row]),
                indexes: [position])
        case .toManyRemove(let handle, let index, let position, let row):
            return Change(
                kind: .removal, target: id(handle), key: name(handle, index), old: refs(handle, index, [row]),
                indexes: [position])
        case .toManyReplace(let handle, let index, let position, let old, let new):
            return Change(
                kind: .replacement, target: id(handle), key: name(handle, index), old: refs(handle, index, [old]),
                new: refs(handle, index, [new]), indexes: [position])
        case .reset(_, let old, let new):
            return Change(kind: .reset, target: nil, old: old, new: new)
        }
    }
}

@available(*, unavailable)
extension Transaction: Sendable {}
