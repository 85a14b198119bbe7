import PropertyList

/// Replaying a recorded change exactly as it was made (journal recovery): no inverse maintenance, since the record
/// holds both sides of every relationship change, no defaults, and no check of the model's constraints (the change
/// was valid when committed; see `ObjectStore.apply`).
extension Transaction {
    func replay(_ change: Change) throws(ObjectGraphError) {
        if change.kind == .reset {
            try replaceGraph(with: change.new ?? ["objects": []], checkingConstraints: false)
            return
        }
        guard let target = change.target else {
            throw ChangeRecord.bad("a \(change.kind.rawValue) change needs a target.")
        }
        switch change.kind {
        case .creation:
            let entityIndex = try state.model.entityIndex(target.entity)
            let entity = state.model.entities[entityIndex]
            guard state.tables[entityIndex].row(of: target.id) == nil else { throw .duplicateID(target) }
            var attributes = [PropertyListValue](repeating: .null, count: entity.attributes.count)
            for (key, value) in change.new?.dictionaryValue ?? [:] {
                guard let attribute = entity.attribute(named: key) else {
                    throw .undefinedKey(key, entity: entity.name)
                }
                attributes[attribute.slot] = try attribute.coerce(value, of: target)
            }
            _ = createRow(entity: entityIndex, id: target.id, attributes: attributes)
        case .deletion:
            let handle = try state.handle(of: target)
            for relationship in state.model.entities[handle.entity].relationships
            where !state.destinations(handle, relationship).isEmpty {
                throw ChangeRecord.bad("\(target) is deleted while its \(relationship.name) is not empty.")
            }
            tombstone(handle, json: change.old ?? .null)
        case .setting:
            let handle = try state.handle(of: target)
            let (entity, key) = (state.model.entities[handle.entity], change.key ?? "")
            switch entity.properties[key] {
            case .attribute(let slot):
                setAttribute(handle, slot, try entity.attributes[slot].coerce(change.new ?? .null, of: target))
            case .relationship(let index):
                let relationship = entity.relationships[index]
                if relationship.isToMany {
                    setToMany(handle, index, try rows(change.new ?? [], relationship, handle))
                } else {
                    let new = change.new ?? .null
                    setToOne(
                        handle, index, new.isNull ? nil : try destinationHandle(new, for: relationship, of: handle))
                }
            default:
                throw .undefinedKey(key, entity: entity.name)
            }
        case .insertion, .removal, .replacement:
            let handle = try state.handle(of: target)
            let entity = state.model.entities[handle.entity]
            guard case .relationship(let index) = entity.properties[change.key ?? ""],
                entity.relationships[index].isToMany
            else { throw ChangeRecord.bad("\(change.kind.rawValue) of \(target) needs a to-many key.") }
            let relationship = entity.relationships[index]
            let positions = change.indexes ?? []
            let count = state.toManyRows(handle, relationship).count
            switch change.kind {
            case .insertion:
                let rows = try rows(change.new ?? [], relationship, handle)
                guard rows.count == positions.count else {
                    throw ChangeRecord.bad("indexes and values differ in number.")
                }
                var size = count
                for (row, position) in zip(rows, positions) {
                    guard (0...size).contains(position) else {
                        throw ChangeRecord.bad("index \(position) out of range.")
                    }
                    insertToMany(handle, index, row, at: position)
                    size += 1
                }
            case .removal:
                for position in positions.sorted(by: >) {
                    guard position >= 0, position < state.toManyRows(handle, relationship).count else {
                        throw ChangeRecord.bad("index \(position) out of range.")
                    }
                    removeToMany(handle, index, at: position)
                }
            default:
                let rows = try rows(change.new ?? [], relationship, handle)
                guard rows.count == positions.count else {
                    throw ChangeRecord.bad("indexes and values differ in number.")
                }
                for (row, position) in zip(rows, positions) {
                    guard position >= 0, position < count else {
                        throw ChangeRecord.bad("index \(position) out of range.")
                    }
                    replaceToMany(handle, index, row, at: position)
                }
            }
        case .reset:
            break
        }
    }

    private func rows(
        _ value: PropertyListValue, _ relationship: RelationshipDescription, _ handle: ObjectHandle
    ) throws(ObjectGraphError) -> [Int32] {
        guard case .array(let elements) = value else {
            throw ChangeRecord.bad("\(relationship.name) values must be arrays of references.")
        }
        var rows: [Int32] = []
        for element in elements {
            rows.append(Int32(try destinationHandle(element, for: relationship, of: handle).row))
        }
        return rows
    }
}
