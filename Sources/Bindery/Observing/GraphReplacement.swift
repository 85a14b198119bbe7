import ObjectGraph
import PropertyList

/// What replacing the whole graph (`PUT /store`, `revertToSaved`: a record's `reset` change, which holds the old and
/// the new graph) did to each object, for the change feed and `ObjectsDidChange`.
///
/// Objects are matched by `$id`. A key absent from an object's JSON counts as null, and so does an empty to-many
/// (but not an `any` attribute's `[]`); `$`-keys (`$id`, `$version`) are not values.
struct GraphReplacement {
    /// One `setting` per stored key whose value differs, in the new graph's order (removed objects last, in the old
    /// graph's order); keys sorted within an object.
    private(set) var settings: [(target: String, key: String, old: PropertyListValue, new: PropertyListValue)] = []
    private(set) var inserted: [ObjectID] = []
    private(set) var updated: [ObjectID] = []
    private(set) var deleted: [ObjectID] = []

    init(old: PropertyListValue?, new: PropertyListValue?, model: ObjectModel) {
        let oldObjects = Self.objects(of: old)
        var oldByID: [String: [String: PropertyListValue]] = [:]
        for (id, values) in oldObjects { oldByID[id] = values }
        var kept: Set<String> = []
        for (id, values) in Self.objects(of: new) {
            let previous = oldByID[id]
            if previous != nil { kept.insert(id) }
            let changed = compare(id, previous ?? [:], values, model: model)
            guard let objectID = ObjectID(reference: id) else { continue }
            if previous == nil {
                inserted.append(objectID)
            } else if changed {
                updated.append(objectID)
            }
        }
        for (id, values) in oldObjects where !kept.contains(id) {
            compare(id, values, [:], model: model)
            if let objectID = ObjectID(reference: id) { deleted.append(objectID) }
        }
    }

    /// Adds the settings of one object; returns whether any value differs.
    @discardableResult
    private mutating func compare(
        _ id: String, _ old: [String: PropertyListValue], _ new: [String: PropertyListValue], model: ObjectModel
    ) -> Bool {
        let keys = Set(old.keys).union(new.keys).filter { !$0.hasPrefix("$") }.sorted()
        let entity = ObjectID(reference: id).flatMap { model.entity(named: $0.entity) }
        var changed = false
        for key in keys {
            // An empty to-many of an object added or removed is no change, as for created and deleted objects; a
            // to-many an object added or removed had is told from or to `[]` (its value in KVC), never null.
            let toMany = entity?.relationship(named: key)?.isToMany == true
            let missing: PropertyListValue = toMany ? [] : .null
            let before = old[key] ?? missing
            let after = new[key] ?? missing
            // Identical, not equal: `-0.0` over `0.0` and é over e and an accent are changes (the store keeps the new
            // bytes and tells its observers), as they are when set one at a time.
            guard toMany ? Self.normalized(before) != Self.normalized(after) : !before.isIdentical(to: after) else {
                continue
            }
            changed = true
            settings.append((id, key, before, after))
        }
        return changed
    }

    private static func normalized(_ value: PropertyListValue) -> PropertyListValue {
        value == .array([]) ? .null : value
    }

    /// The `$id` and values of every object of a graph (`{"objects": [...]}`).
    private static func objects(of graph: PropertyListValue?) -> [(id: String, values: [String: PropertyListValue])] {
        (graph?["objects"]?.arrayValue ?? []).compactMap { object in
            guard let values = object.dictionaryValue, let id = values["$id"]?.stringValue else { return nil }
            return (id, values)
        }
    }
}
