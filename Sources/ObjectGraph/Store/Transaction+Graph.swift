import PropertyList

/// Loading many objects at once: fixtures (`data.json`), `PUT /store`, imports.
extension Transaction {
    /// Replaces the whole graph with `graph` (`{"objects": [...]}`, as `exportGraph` writes it, or a bare array).
    ///
    /// Objects are in their JSON form with a full `"$id": "Entity/id"` (required: an entity is told by it); references
    /// may point forward; derived keys are ignored (so an export loads back); when both sides of a relationship are
    /// given, they must agree (422 otherwise). The change record holds one `reset` change with the old and
    /// new graphs instead of one change per object. The versions (ETags) of the objects it changed or added become
    /// the transaction's seq; an object it holds as it was (the same export) keeps its version, so that restoring an
    /// export moves only the ETags of what it changed.
    ///
    /// With `unlessIdentical` (an import), a graph that exports as the current one (the same objects with the same
    /// values, in any order) changes nothing: no change is recorded and the versions stay, as a `PUT` of an
    /// attribute's own value does nothing. The listing order is left as it is then: it is insertion order, not part
    /// of the graph (an undone delete's object comes back at the end of its entity's listing, and restoring an export
    /// taken before the delete is no change). An object's `$version` is an undefined key but in a snapshot
    /// (`keepingVersions`, for `restore(snapshot:)`). Without `checkingConstraints` (journal replay: the graph was
    /// valid when committed) the attributes' constraints are not checked again.
    public func replaceGraph(
        with graph: PropertyListValue, unlessIdentical: Bool = false, keepingVersions: Bool = false,
        checkingConstraints: Bool = true
    ) throws(ObjectGraphError) {
        let objects = try Self.objectList(graph)
        let old: PropertyListValue = ["objects": .array(state.exportObjects())]
        let oldLastAssignedID = state.lastAssignedID
        steps.append(.reset(oldTables: state.tables, old: old, new: .null))
        let resetStep = steps.count - 1
        resetIndex = resetStep
        state.tables = state.emptyTables()
        recording = false
        defer { recording = true }
        try load(objects, keepingVersions: keepingVersions, checkingConstraints: checkingConstraints)
        let new: PropertyListValue = ["objects": .array(state.exportObjects())]
        let oldTables = Self.oldTables(of: steps[resetStep])
        let (unchanged, changedProperties) = compare(old: old, new: new, oldTables: oldTables)
        // The same objects with the same values, in whatever order: every new object is an old one as it was.
        let sameObjects =
            unchanged.count == old["objects"]?.arrayValue?.count && unchanged.count == new["objects"]?.arrayValue?.count
        if unlessIdentical, resetStep == 0, sameObjects {
            state.tables = oldTables
            state.lastAssignedID = oldLastAssignedID
            steps.removeLast()
            resetIndex = nil
            return
        }
        steps[resetStep] = .reset(oldTables: oldTables, old: old, new: new)
        // Objects are compared with the graph the transaction started from: after earlier changes in the same
        // transaction (made on rows the reset renumbered), none is held as it was.
        keptVersions = resetStep == 0 ? unchanged : [:]
        replacedProperties = resetStep == 0 ? changedProperties : []
    }

    /// The objects of `new` that are in `old` as they were (the same export, found by `$id`), with their versions
    /// in `oldTables`, and the properties of those in both with other values (when derived keys read them).
    private func compare(
        old: PropertyListValue, new: PropertyListValue, oldTables: [EntityTable]
    ) -> (kept: [ObjectHandle: Int64], changed: [ChangedProperty]) {
        guard case .array(let oldObjects)? = old["objects"], case .array(let newObjects)? = new["objects"],
            !oldObjects.isEmpty
        else { return ([:], []) }
        var byID: [String: PropertyListValue] = [:]
        byID.reserveCapacity(oldObjects.count)
        for object in oldObjects { byID[object["$id"]?.stringValue ?? ""] = object }
        var kept: [ObjectHandle: Int64] = [:]
        var changed: [ChangedProperty] = []
        for object in newObjects {
            guard let text = object["$id"]?.stringValue, let oldObject = byID[text],
                let id = ObjectID(reference: text), let handle = state.existingHandle(of: id),
                let row = oldTables[handle.entity].row(of: id.id)
            else { continue }
            if oldObject.isIdentical(to: object) {
                kept[handle] = oldTables[handle.entity].versions[row]
            } else if state.model.hasDerivedKeyReaders, case .dictionary(let oldFields) = oldObject,
                case .dictionary(let newFields) = object
            {
                let properties = state.model.entities[handle.entity].properties
                for key in Set(oldFields.keys).union(newFields.keys) {
                    guard let property = properties[key] else { continue }
                    let same =
                        switch (oldFields[key], newFields[key]) {
                        case (nil, nil): true
                        case (let old?, let new?): old.isIdentical(to: new)
                        default: false
                        }
                    if !same { changed.append(ChangedProperty(object: handle, property: property)) }
                }
            }
        }
        return (kept, changed)
    }

    /// Replaces the graph with a snapshot written by `ReadView.snapshot()`, restoring each object's `$version`;
    /// returns the snapshot's `seq` and `lastAssignedID`.
    func restore(snapshot: PropertyListValue) throws(ObjectGraphError) -> (seq: Int64, lastAssignedID: Int64) {
        guard case .integer(let seq) = snapshot["seq"], seq >= 0 else {
            throw ChangeRecord.bad("a snapshot needs a non-negative \"seq\".")
        }
        try replaceGraph(with: snapshot, keepingVersions: true)
        for object in try Self.objectList(snapshot) {
            guard let text = object["$id"]?.stringValue, let id = ObjectID(reference: text),
                case .integer(let version) = object["$version"]
            else { continue }
            let handle = try state.handle(of: id)
            state.tables[handle.entity].versions[handle.row] = min(version, seq)
        }
        return (seq, snapshot["lastAssignedID"]?.integerValue ?? 0)
    }

    /// Inserts several objects given in JSON form (as in `data.json`), adding to the graph; references may point
    /// forward among them and to existing objects.
    @discardableResult
    public func insertObjects(_ graph: PropertyListValue) throws(ObjectGraphError) -> [ObjectID] {
        try load(try Self.objectList(graph))
    }

    /// Makes every object with its attributes, then sets the relationships (references may point forward). Values
    /// that cannot be set are gathered over all objects, with the attributes' broken constraints (at most 100), and
    /// thrown before any relationship is set: a relationship error would hide them, and cardinalities checked
    /// before would report every one as missing.
    @discardableResult
    private func load(
        _ objects: [PropertyListValue], keepingVersions: Bool = false, checkingConstraints: Bool = true
    ) throws(ObjectGraphError) -> [ObjectID] {
        var created: [(ObjectHandle, [String: PropertyListValue])] = []
        var invalid: [ObjectGraphError] = []
        created.reserveCapacity(objects.count)
        for (position, object) in objects.enumerated() {
            guard case .dictionary(let values) = object else {
                throw .typeMismatch("objects", of: nil, "objects[\(position)] must be a JSON object.")
            }
            let id: ObjectID?
            switch values["$id"] {
            case .string(let text):
                guard let reference = ObjectID(reference: text) else {
                    throw .validationFailed("$id", of: nil, "objects[\(position)]: \"\(text)\" is not Entity/id.")
                }
                id = reference
            case nil, .null?:
                id = nil
            case let other?:
                throw .typeMismatch(
                    "$id", of: nil, "objects[\(position)]: $id must be a string, not \(other.typeName).")
            }
            guard let id else {
                throw .validationFailed("$id", of: nil, "objects[\(position)] needs an \"$id\": \"Entity/id\".")
            }
            let entity = state.model.entities[try state.model.entityIndex(id.entity)]
            var attributes: [String: PropertyListValue] = [:]
            var relationships: [String: PropertyListValue] = [:]
            for (key, value) in values where key != "$id" && (key != "$version" || !keepingVersions) {
                switch entity.properties[key] {
                case .attribute: attributes[key] = value
                case .relationship: relationships[key] = value
                case .derived: continue
                case nil: throw .undefinedKey(key, entity: entity.name)
                }
            }
            let (objectID, refused) = try insertGathering(entity.name, id: id.id, values: attributes)
            invalid += refused
            if invalid.count >= 100 { break }
            created.append((try state.handle(of: objectID), relationships))
        }
        // The attributes' broken constraints too, before any relationship could fail the load on its own.
        let reported = Set(invalid.map { [$0.fields["object"], $0.fields["keyPath"]] })
        for (handle, _) in created where checkingConstraints && invalid.count < 100 {
            var broken: [ObjectGraphError] = []
            validateAttributes(handle, into: &broken)
            invalid += broken.filter { !reported.contains([$0.fields["object"], $0.fields["keyPath"]]) }
        }
        if !invalid.isEmpty { throw .combining(Array(invalid.prefix(100))) }
        for (handle, relationships) in created {
            let entity = state.model.entities[handle.entity]
            for (key, value) in relationships.sorted(by: { $0.key < $1.key }) {
                guard case .relationship(let index) = entity.properties[key] else { continue }
                try setRelationship(index, of: handle, to: value)
            }
        }
        try checkBothSidesAgree(created)
        return created.map { state.objectID(of: $0.0) }
    }

    /// Both sides of a relationship may be given (an export gives both): each given side must be what the graph
    /// holds once all are set, or the side set last would win without a word (an employee listed by one department
    /// and naming another). At most 100 are reported.
    private func checkBothSidesAgree(
        _ created: [(ObjectHandle, [String: PropertyListValue])]
    ) throws(ObjectGraphError) {
        var disagreements: [ObjectGraphError] = []
        func names(_ handles: [ObjectHandle]) -> String {
            handles.isEmpty
                ? "nothing"
                : handles.prefix(5).map { state.objectID(of: $0).description }
                    .joined(separator: ", ") + (handles.count > 5 ? " (and \(handles.count - 5) more)" : "")
        }
        for (handle, relationships) in created where disagreements.count < 100 {
            let entity = state.model.entities[handle.entity]
            for (key, value) in relationships.sorted(by: { $0.key < $1.key }) {
                guard case .relationship(let index) = entity.properties[key] else { continue }
                let relationship = state.relationship(handle, index)
                var given: [ObjectHandle] = []
                for element in relationship.isToMany ? value.arrayValue ?? [] : (value.isNull ? [] : [value]) {
                    given.append(try destinationHandle(element, for: relationship, of: handle))
                }
                let held = state.destinations(handle, relationship)
                guard given != held else { continue }
                disagreements.append(
                    .validationFailed(
                        key, of: state.objectID(of: handle),
                        "\(key) is given as \(names(given)), but the other side (\(relationship.inverse)) of the objects "
                            + "given makes it \(names(held)): both sides must agree."))
            }
        }
        if !disagreements.isEmpty { throw .combining(disagreements) }
    }

    static func objectList(_ graph: PropertyListValue) throws(ObjectGraphError) -> [PropertyListValue] {
        switch graph {
        case .array(let objects): return objects
        case .dictionary(let dictionary):
            guard case .array(let objects) = dictionary["objects"] else {
                throw .typeMismatch("objects", of: nil, "the graph needs an \"objects\" array.")
            }
            return objects
        default:
            throw .typeMismatch("objects", of: nil, "the graph must be {\"objects\": [...]}, not \(graph.typeName).")
        }
    }

    private static func oldTables(of step: TransactionStep) -> [EntityTable] {
        if case .reset(let tables, _, _) = step { return tables }
        return []
    }
}
