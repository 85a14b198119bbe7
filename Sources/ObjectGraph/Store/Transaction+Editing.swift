import PropertyList

/// Key-value coding's mutating side: insert, `setValue(_:forKeyPath:)`, `setValuesForKeys`, to-many edits, delete.
extension Transaction {
    /// Inserts an object of `entity` with `values` in JSON form (API.md §4); returns its id.
    ///
    /// The id is `id`, else the `"$id"` of `values` (bare `"42"` or full `"Employee/42"`), else (no `"$id"`, or null)
    /// assigned by the store (a decimal number, unique, never reused). Missing attributes get the model's defaults.
    /// Relationships take `{"$ref"}` values (arrays of them for to-many), and their inverses follow. Errors: 404
    /// `no-such-entity`, 400 `bad-id`, 409 `duplicate-id`, 404 `undefined-key`, 422 `read-only-key`, `type-mismatch`,
    /// `validation-failed` (a reference to a missing object, an `$id` of another entity), and at commit
    /// `validation-failed` / `cardinality`.
    @discardableResult
    public func insert(
        _ entityName: String, id: String? = nil, values: [String: PropertyListValue] = [:]
    ) throws(ObjectGraphError) -> ObjectID {
        let (objectID, invalid) = try insertGathering(entityName, id: id, values: values)
        try throwAllInvalid(invalid)
        return objectID
    }

    /// `insert`, answering the values it could not set (422 each; the object is made without them) instead of
    /// throwing them: for a caller that gathers them over several objects.
    func insertGathering(
        _ entityName: String, id: String?, values: [String: PropertyListValue]
    ) throws(ObjectGraphError) -> (ObjectID, [ObjectGraphError]) {
        let entityIndex = try state.model.entityIndex(entityName)
        let entity = state.model.entities[entityIndex]
        let table = state.tables[entityIndex]
        var chosen = id
        if chosen == nil, let given = values["$id"], !given.isNull {
            chosen = try Self.bareID(given, entity: entityName)
        }
        let objectID: ObjectID
        if let chosen {
            guard ObjectID.isValidID(chosen) else { throw .badID(chosen) }
            objectID = ObjectID(entity: entityName, id: chosen)
            guard table.row(of: chosen) == nil else { throw .duplicateID(objectID) }
            // A number given as an id is never assigned later, even once its object is deleted: an assigned id is
            // always new, as Core Data's object IDs are (observers and ETags of a deleted object never follow
            // another one). Up to 18 digits, so that the counter cannot be pushed to overflow.
            if chosen.utf8.count <= 18, let number = Int64(chosen), number > state.lastAssignedID {
                state.lastAssignedID = number
            }
        } else {
            var candidate: String
            repeat {
                state.lastAssignedID += 1
                candidate = String(state.lastAssignedID)
            } while table.row(of: candidate) != nil
            objectID = ObjectID(entity: entityName, id: candidate)
        }
        var attributes = entity.attributes.map(\.defaultValue)
        var relationships: [(Int, PropertyListValue)] = []
        var invalid: [ObjectGraphError] = []
        for (key, value) in values.sorted(by: { $0.key < $1.key }) where key != "$id" {
            switch entity.properties[key] {
            case .attribute(let slot):
                do {
                    attributes[slot] = try entity.attributes[slot].coerce(value, of: objectID)
                } catch  where error.status == 422 {
                    invalid.append(error)
                }
            case .relationship(let index):
                relationships.append((index, value))
            case .derived:
                throw .readOnlyKey(key, of: objectID)
            case nil:
                guard !key.hasPrefix("$") else {
                    invalid.append(Self.reservedKey(key, of: objectID))
                    continue
                }
                throw .undefinedKey(key, entity: entityName)
            }
        }
        let handle = createRow(entity: entityIndex, id: objectID.id, attributes: attributes)
        for (index, value) in relationships {
            do { try setRelationship(index, of: handle, to: value) } catch  where error.status == 422 {
                invalid.append(error)
            }
        }
        return (objectID, invalid)
    }

    /// Throws the values that could not be set (422 each) together with the constraints the rest of the transaction
    /// breaks, as one error (`errors` for several, API.md §2), so that a client fixes them all at once; returns when
    /// `invalid` is empty. A key already reported is not reported again by its constraints.
    private func throwAllInvalid(_ invalid: [ObjectGraphError]) throws(ObjectGraphError) {
        guard !invalid.isEmpty else { return }
        let reported = Set(invalid.compactMap { $0.fields["keyPath"] })
        let broken = validationErrors().filter { error in
            guard let keyPath = error.fields["keyPath"] else { return true }
            return !reported.contains(keyPath)
        }
        throw .combining(invalid + broken)
    }

    /// KVC's `setValue(_:forKeyPath:)`: the keys before the last go through relationships (through a to-many, the
    /// value is set on every destination, as NSArray does); the last is an attribute or relationship.
    ///
    /// A nil to-one on the way is 422 `validation-failed` (there is nothing to set the value on).
    public func setValue(
        _ value: PropertyListValue, forKeyPath keyPath: String, of object: ObjectID
    ) throws(ObjectGraphError) {
        if KeyPathCompiler.isSingleKey(keyPath) {
            return try setValue(value, forKey: keyPath, of: try state.handle(of: object))
        }
        let keys = try KeyPathCompiler.keys(of: keyPath)
        var targets = [try state.handle(of: object)]
        // By the model first: a path that cannot be set is refused also when a to-many on the way is empty.
        try state.model.checkSettable(keyPath, on: object.entity)
        for key in keys.dropLast() {
            var next: [ObjectHandle] = []
            for handle in targets {
                let relationship = try relationshipOnTheWay(key, of: handle, keyPath: keyPath)
                let destinations = state.destinations(handle, relationship)
                if !relationship.isToMany && destinations.isEmpty {
                    throw .validationFailed(
                        keyPath, of: state.objectID(of: handle), "\(key) is nil, so \(keyPath) cannot be set.")
                }
                next.append(contentsOf: destinations)
            }
            targets = next
        }
        for handle in targets {
            try setValue(value, forKey: keys[keys.count - 1], of: handle)
        }
    }

    /// KVC's `setValue(_:forKey:)`.
    public func setValue(_ value: PropertyListValue, forKey key: String, of object: ObjectID) throws(ObjectGraphError) {
        try setValue(value, forKey: key, of: try state.handle(of: object))
    }

    /// KVC's `setValuesForKeys(_:)`, all or nothing with the rest of the transaction.
    ///
    /// A `"$id"` key naming the object itself is ignored; naming another is 422 `validation-failed`. Values that
    /// cannot be set (422) are reported together, with the constraints the others break.
    public func setValuesForKeys(_ values: [String: PropertyListValue], of object: ObjectID) throws(ObjectGraphError) {
        let handle = try state.handle(of: object)
        var invalid: [ObjectGraphError] = []
        for (key, value) in values.sorted(by: { $0.key < $1.key }) {
            if key == "$id" {
                guard try Self.bareID(value, entity: object.entity) == object.id else {
                    throw .validationFailed("$id", of: object, "$id cannot be changed.")
                }
                continue
            }
            guard !key.hasPrefix("$") else {
                invalid.append(Self.reservedKey(key, of: object))
                continue
            }
            do { try setValue(value, forKey: key, of: handle) } catch  where error.status == 422 {
                invalid.append(error)
            }
        }
        try throwAllInvalid(invalid)
    }

    /// 422 for a key of an object's JSON form that starts with `$` and is not `$id` (API.md §1 reserves them).
    private static func reservedKey(_ key: String, of object: ObjectID) -> ObjectGraphError {
        .typeMismatch(key, of: object, "\(key) is not a key: keys starting with $ are reserved ($id names the object).")
    }

    /// Inserts `element` into the to-many at `keyPath` (through to-ones) at `index` (nil: at the end).
    ///
    /// The element leaves its previous owner when the inverse is a to-one. Errors: 400 `bad-key-path` when the
    /// path does not end in a to-many; 422 `validation-failed` for an index out of range, an element already in the
    /// relationship or a missing element; 422 `type-mismatch` for an element of the wrong entity.
    public func insert(
        _ element: ObjectID, at index: Int? = nil, intoKeyPath keyPath: String, of object: ObjectID
    ) throws(ObjectGraphError) {
        let (handle, relationshipIndex) = try toManyTarget(keyPath, of: object)
        let relationship = state.relationship(handle, relationshipIndex)
        let destination = try destinationHandle(element, for: relationship, key: keyPath, of: handle)
        try insert(destination, into: handle, relationshipIndex, at: index)
    }

    /// Removes the element at `index` of the to-many at `keyPath`; returns it.
    ///
    /// With a required inverse to-one, the element is left without an owner and the commit fails (422
    /// `cardinality`), so nothing changes.
    @discardableResult
    public func remove(at index: Int, fromKeyPath keyPath: String, of object: ObjectID) throws(ObjectGraphError)
        -> ObjectID
    {
        let (handle, relationshipIndex) = try toManyTarget(keyPath, of: object)
        let relationship = state.relationship(handle, relationshipIndex)
        let rows = state.toManyRows(handle, relationship)
        guard rows.indices.contains(index) else {
            throw .validationFailed(
                keyPath, of: object, "index \(index) is out of range (\(relationship.name) has \(rows.count)).")
        }
        let element = ObjectHandle(entity: relationship.destinationIndex, row: Int(rows[index]))
        try remove(at: index, from: handle, relationshipIndex)
        return state.objectID(of: element)
    }

    /// Replaces the element at `index` of the to-many at `keyPath` with `element`.
    public func replace(
        at index: Int, with element: ObjectID, inKeyPath keyPath: String, of object: ObjectID
    ) throws(ObjectGraphError) {
        let (handle, relationshipIndex) = try toManyTarget(keyPath, of: object)
        let relationship = state.relationship(handle, relationshipIndex)
        let destination = try destinationHandle(element, for: relationship, key: keyPath, of: handle)
        let rows = state.toManyRows(handle, relationship)
        guard rows.indices.contains(index) else {
            throw .validationFailed(
                keyPath, of: object, "index \(index) is out of range (\(relationship.name) has \(rows.count)).")
        }
        try replace(at: index, of: handle, relationshipIndex, with: destination)
    }

    /// Deletes an object, applying delete rules: `cascade` deletes destinations too (recursively, cycles safe),
    /// `nullify` removes the object from its destinations' inverses, `deny` refuses with 409 `delete-denied` while a
    /// destination that is not itself being deleted remains. 404 `no-such-object` when it does not exist.
    public func delete(_ object: ObjectID) throws(ObjectGraphError) {
        let root = try state.handle(of: object)
        var doomed = [root]
        var members: Set<ObjectHandle> = [root]
        var next = 0
        while next < doomed.count {
            let handle = doomed[next]
            next += 1
            for relationship in state.model.entities[handle.entity].relationships
            where relationship.deleteRule == .cascade {
                for destination in state.destinations(handle, relationship) where members.insert(destination).inserted {
                    doomed.append(destination)
                }
            }
        }
        for handle in doomed {
            for relationship in state.model.entities[handle.entity].relationships where relationship.deleteRule == .deny
            {
                if let kept = state.destinations(handle, relationship).first(where: { !members.contains($0) }) {
                    throw .deleteDenied(
                        state.objectID(of: handle), key: relationship.name, destination: state.objectID(of: kept))
                }
            }
        }
        let forms = doomed.map { state.objectJSON($0, includingDerived: false) }
        for handle in doomed {
            for (index, relationship) in state.model.entities[handle.entity].relationships.enumerated() {
                if relationship.isToMany {
                    try setToManyMaintainingInverse(handle, index, [])
                } else {
                    try setToOneMaintainingInverse(handle, index, nil)
                }
            }
        }
        for (handle, form) in zip(doomed, forms) {
            tombstone(handle, json: form)
        }
    }

    // MARK: Helpers

    func setValue(_ value: PropertyListValue, forKey key: String, of handle: ObjectHandle) throws(ObjectGraphError) {
        let entity = state.model.entities[handle.entity]
        switch entity.properties[key] {
        case .attribute(let slot):
            setAttribute(handle, slot, try entity.attributes[slot].coerce(value, of: state.objectID(of: handle)))
        case .relationship(let index):
            try setRelationship(index, of: handle, to: value)
        case .derived:
            throw .readOnlyKey(key, of: state.objectID(of: handle))
        case nil:
            if key.hasPrefix("@") { throw .badKeyPath(key, "a collection operator cannot be set.") }
            throw .undefinedKey(key, entity: entity.name)
        }
    }

    /// Sets a relationship from its JSON form: null or `{"$ref"}` for a to-one, an array of refs (or null for
    /// empty) for a to-many.
    func setRelationship(_ index: Int, of handle: ObjectHandle, to value: PropertyListValue) throws(ObjectGraphError) {
        let relationship = state.relationship(handle, index)
        if relationship.isToMany {
            let elements: [PropertyListValue]
            switch value {
            case .null: elements = []
            case .array(let array): elements = array
            default:
                throw .typeMismatch(
                    relationship.name, of: state.objectID(of: handle),
                    "\(relationship.name) must be an array of {\"$ref\": ...} references, not \(value.typeName).")
            }
            var rows: [Int32] = []
            rows.reserveCapacity(elements.count)
            var seen: Set<Int32> = []
            for element in elements {
                let destination = try destinationHandle(element, for: relationship, of: handle)
                guard seen.insert(Int32(destination.row)).inserted else {
                    throw .validationFailed(
                        relationship.name, of: state.objectID(of: handle),
                        "\(relationship.name) lists \(state.objectID(of: destination)) twice.")
                }
                rows.append(Int32(destination.row))
            }
            try setToManyMaintainingInverse(handle, index, rows)
        } else {
            let destination = value.isNull ? nil : try destinationHandle(value, for: relationship, of: handle)
            try setToOneMaintainingInverse(handle, index, destination)
        }
    }

    /// The live object a `{"$ref": "Entity/id"}` value names, checked against the relationship's destination.
    func destinationHandle(
        _ value: PropertyListValue, for relationship: RelationshipDescription, of handle: ObjectHandle
    ) throws(ObjectGraphError) -> ObjectHandle {
        let owner = state.objectID(of: handle)
        guard case .dictionary(let dictionary) = value, dictionary.count == 1,
            case .string(let text) = dictionary["$ref"],
            let id = ObjectID(reference: text)
        else {
            throw .typeMismatch(
                relationship.name, of: owner,
                "\(relationship.name) takes {\"$ref\": \"\(relationship.destination)/id\"} references, not \(value.jsonString())."
            )
        }
        return try destinationHandle(id, for: relationship, key: relationship.name, of: handle)
    }

    func destinationHandle(
        _ id: ObjectID, for relationship: RelationshipDescription, key: String, of handle: ObjectHandle
    ) throws(ObjectGraphError) -> ObjectHandle {
        guard id.entity == relationship.destination else {
            throw .typeMismatch(
                key, of: state.objectID(of: handle),
                "\(relationship.name) must reference a \(relationship.destination), not \(id).")
        }
        guard let row = state.tables[relationship.destinationIndex].row(of: id.id) else {
            throw .validationFailed(key, of: state.objectID(of: handle), "\(id) does not exist.")
        }
        return ObjectHandle(entity: relationship.destinationIndex, row: row)
    }

    private func relationshipOnTheWay(
        _ key: String, of handle: ObjectHandle, keyPath: String
    ) throws(ObjectGraphError) -> RelationshipDescription {
        let entity = state.model.entities[handle.entity]
        switch entity.properties[key] {
        case .relationship(let index):
            return entity.relationships[index]
        case .attribute:
            throw .badKeyPath(keyPath, "\(key) is an attribute; only relationships can be gone through to set a value.")
        case .derived:
            throw .readOnlyKey(keyPath, of: state.objectID(of: handle))
        case nil:
            if key.hasPrefix("@") { throw .badKeyPath(keyPath, "a collection operator cannot be set.") }
            throw .undefinedKey(key, entity: entity.name)
        }
    }

    /// The object that owns the to-many a key path (through to-ones) ends in, and the to-many's key: what a change
    /// through the path changes, whatever it does to the path's to-ones (removing an object from
    /// `department.employees` leaves `department` nil).
    public func toManyOwner(_ keyPath: String, of object: ObjectID) throws(ObjectGraphError) -> (
        owner: ObjectID, key: String
    ) {
        let (handle, index) = try toManyTarget(keyPath, of: object)
        return (state.objectID(of: handle), state.relationship(handle, index).name)
    }

    /// The object and the to-many relationship a to-many key path (through to-ones) ends in.
    private func toManyTarget(
        _ keyPath: String, of object: ObjectID
    ) throws(ObjectGraphError) -> (ObjectHandle, Int) {
        let keys = try KeyPathCompiler.keys(of: keyPath)
        var handle = try state.handle(of: object)
        for key in keys.dropLast() {
            let relationship = try relationshipOnTheWay(key, of: handle, keyPath: keyPath)
            guard !relationship.isToMany else {
                throw .badKeyPath(keyPath, "\(key) is a to-many relationship; it can only end the key path.")
            }
            guard let destination = state.toOne(handle, relationship) else {
                throw .validationFailed(keyPath, of: state.objectID(of: handle), "\(key) is nil.")
            }
            handle = destination
        }
        let last = keys[keys.count - 1]
        let entity = state.model.entities[handle.entity]
        guard case .relationship(let index) = entity.properties[last], entity.relationships[index].isToMany else {
            if entity.properties[last] == nil { throw .undefinedKey(last, entity: entity.name) }
            throw .badKeyPath(keyPath, "\(last) is not a to-many relationship.")
        }
        return (handle, index)
    }

    static func bareID(_ value: PropertyListValue, entity: String) throws(ObjectGraphError) -> String {
        guard case .string(let text) = value else {
            throw .typeMismatch("$id", of: nil, "$id must be a string, not \(value.typeName).")
        }
        guard let slash = text.firstIndex(of: "/") else { return text }
        guard let reference = ObjectID(reference: text) else { throw .badID(text) }
        guard reference.entity == entity else {
            throw .validationFailed("$id", of: nil, "$id \(text) names another entity than \(entity).")
        }
        _ = slash
        return reference.id
    }
}
