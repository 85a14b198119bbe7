import PropertyList

/// The JSON form of stored objects (API.md §4) and of the whole graph (the `data.json` format).
extension GraphState {
    func reference(_ handle: ObjectHandle) -> PropertyListValue {
        ["$ref": .string(objectID(of: handle).description)]
    }

    func reference(entity: Int, row: Int32) -> PropertyListValue {
        row < 0 ? .null : reference(ObjectHandle(entity: entity, row: Int(row)))
    }

    /// `{"$id", attributes (null included), to-ones as `{"$ref"}` or null, to-manys as arrays of refs, derived keys}`.
    ///
    /// A derived key whose evaluation fails (possible only below `any` attributes) is written as null.
    func objectJSON(_ handle: ObjectHandle, includingDerived: Bool) -> PropertyListValue {
        let entity = model.entities[handle.entity]
        var dictionary: [String: PropertyListValue] = [:]
        dictionary.reserveCapacity(entity.properties.count + 1)
        dictionary["$id"] = .string(objectID(of: handle).description)
        for attribute in entity.attributes {
            dictionary[attribute.name] = self.attribute(handle, attribute.slot)
        }
        for relationship in entity.relationships {
            dictionary[relationship.name] = relationshipJSON(handle, relationship)
        }
        if includingDerived {
            // The model's own key paths: outside any request's allowance (`KeyPathAllowance`), which bounds what a
            // client's key paths fan out to; each is still bounded per evaluation.
            let outsideAllowance = { [self] in
                for derived in entity.derivedKeys {
                    dictionary[derived.name] = (try? json(evaluate(derived.steps, on: .object(handle)))) ?? .null
                }
            }
            if let allowance = KeyPathAllowance.current {
                KeyPathAllowance.$current.withValue(allowance.forModelKeys, operation: outsideAllowance)
            } else {
                outsideAllowance()
            }
        }
        return .dictionary(dictionary)
    }

    func relationshipJSON(_ handle: ObjectHandle, _ relationship: RelationshipDescription) -> PropertyListValue {
        if relationship.isToMany {
            return .array(
                toManyRows(handle, relationship).map { reference(entity: relationship.destinationIndex, row: $0) })
        }
        return toOne(handle, relationship).map(reference) ?? .null
    }

    /// Every live object, entity by entity (model order), each in insertion order.
    func exportObjects(includingDerived: Bool = false) -> [PropertyListValue] {
        // Derived keys that read another object's (`department.payroll`) are evaluated once per object read.
        if includingDerived && KeyPathAllowance.current == nil {
            return KeyPathAllowance.cachingOutsideAnyAllowance { exportObjects(includingDerived: true) }
        }
        var objects: [PropertyListValue] = []
        for entity in tables.indices {
            for row in tables[entity].liveRows {
                objects.append(objectJSON(ObjectHandle(entity: entity, row: row), includingDerived: includingDerived))
            }
        }
        return objects
    }
}
