import PropertyList

/// A consistent view of the store inside `ObjectStore.read` (or a transaction): key-value coding and listings.
///
/// Valid only inside the closure it was given to (it is not `Sendable`); the store's lock is held meanwhile, so
/// keep the work short and never call out. Listings follow insertion order (an object inserted later comes later;
/// `replaceGraph` and fixtures insert in the order of their `objects` array).
public struct ReadView: KeyPathResolving {
    let state: GraphState

    init(state: GraphState) {
        self.state = state
    }

    public var model: ObjectModel { state.model }

    /// The seq of the last committed transaction this view reflects (`X-Store-Seq`).
    public var seq: Int64 { state.seq }

    /// The seq of the last commit that changed objects (≤ `seq`: later commits may only have taken a seq).
    public var contentSeq: Int64 { state.contentSeq }

    public func contains(_ object: ObjectID) -> Bool {
        state.existingHandle(of: object) != nil
    }

    /// The object's version (its ETag): the seq of the last transaction that changed it or a property of another
    /// object one of its derived keys reads (renaming a department changes its employees' `departmentName`, so their
    /// versions move too; a change of its budget does not). Moved at commit (`Transaction.moveVersions(to:)`).
    public func version(of object: ObjectID) throws(ObjectGraphError) -> Int64 {
        let handle = try state.handle(of: object)
        return state.tables[handle.entity].versions[handle.row]
    }

    /// The ids of every object of `entity`, in insertion order (404 `no-such-entity`).
    public func objects(of entity: String) throws(ObjectGraphError) -> [ObjectID] {
        let index = try state.model.entityIndex(entity)
        let table = state.tables[index]
        return table.liveRows.map { ObjectID(entity: entity, id: table.ids[$0]) }
    }

    /// How many objects the store has, of every entity.
    public var objectCount: Int { state.tables.reduce(0) { $0 + $1.liveCount } }

    /// How many objects `entity` has.
    public func count(of entity: String) throws(ObjectGraphError) -> Int {
        state.tables[try state.model.entityIndex(entity)].liveCount
    }

    // MARK: Key-value coding

    /// KVC's `value(forKey:)`: an attribute, relationship or derived key of the object.
    public func value(forKey key: String, of object: ObjectID) throws(ObjectGraphError) -> KeyValue {
        let handle = try state.handle(of: object)
        guard let property = state.model.entities[handle.entity].properties[key] else {
            throw .undefinedKey(key, entity: object.entity)
        }
        return state.keyValue(try state.value(of: property, on: handle))
    }

    /// KVC's `value(forKeyPath:)` from an object (API.md §4).
    public func value(forKeyPath keyPath: String, of object: ObjectID) throws(ObjectGraphError) -> KeyValue {
        let handle = try state.handle(of: object)
        let compiled = try state.compiled(keyPath, entity: handle.entity)
        return state.keyValue(try state.evaluate(compiled.steps, on: .object(handle)))
    }

    /// `KeyPathResolving`: KVC from an object, a plain value or a collection (each element must exist).
    public func value(forKeyPath keyPath: String, of subject: KeyValue) throws -> KeyValue {
        switch subject {
        case .object(let object):
            return try value(forKeyPath: keyPath, of: object)
        case .value, .collection:
            let compiled = try state.compiled(keyPath, entity: -1)
            return state.keyValue(try state.evaluate(compiled.steps, on: try state.node(subject)))
        }
    }

    // MARK: JSON

    /// The object's JSON form (API.md §4), derived keys included; with `keys`, only `$id` and those key paths.
    public func json(of object: ObjectID, keys: [String]? = nil) throws(ObjectGraphError) -> PropertyListValue {
        let handle = try state.handle(of: object)
        return try json(of: handle, keys: keys)
    }

    /// Checks `keys` (a listing's `keys=`) against the model as `json(of:keys:)` reads them on any object of
    /// `entity`, so that an unknown key or a malformed key path is an error whatever the objects (none included).
    public func checkKeys(_ keys: [String], of entity: String) throws(ObjectGraphError) {
        let index = try state.model.entityIndex(entity)
        for key in keys where key != "$id" {
            try state.model.checkReadable(key, on: entity)
            _ = try state.compiled(key, entity: index)
        }
    }

    /// The whole graph as `{"seq": N, "objects": [...]}`: the `data.json` format, loadable by `replaceGraph`.
    ///
    /// Objects come entity by entity (sorted by name), each entity in insertion order; derived keys only
    /// `includingDerived` (the objects' full JSON form, API.md §4, as `GET /store` gives them; a load ignores them).
    public func exportGraph(includingDerived: Bool = false) -> PropertyListValue {
        ["seq": .integer(state.seq), "objects": .array(state.exportObjects(includingDerived: includingDerived))]
    }

    /// The graph with what a restart needs: `{"seq", "lastAssignedID", "objects": [...]}`, each object with its
    /// `"$version"` (for journal snapshots; `ObjectStore.restore(snapshot:)` reads it back).
    public func snapshot() -> PropertyListValue {
        var objects: [PropertyListValue] = []
        for entity in state.tables.indices {
            let table = state.tables[entity]
            for row in table.liveRows {
                guard
                    case .dictionary(var object) = state.objectJSON(
                        ObjectHandle(entity: entity, row: row), includingDerived: false)
                else { continue }
                object["$version"] = .integer(table.versions[row])
                objects.append(.dictionary(object))
            }
        }
        return [
            "seq": .integer(state.seq), "lastAssignedID": .integer(state.lastAssignedID), "objects": .array(objects),
        ]
    }

    // MARK: Fast path

    /// Handles of every object of `entity`, in insertion order; valid inside this closure only.
    public func handles(of entity: String) throws(ObjectGraphError) -> [ObjectHandle] {
        let index = try state.model.entityIndex(entity)
        return state.tables[index].liveRows.map { ObjectHandle(entity: index, row: $0) }
    }

    public func handle(of object: ObjectID) throws(ObjectGraphError) -> ObjectHandle {
        try state.handle(of: object)
    }

    public func objectID(of handle: ObjectHandle) -> ObjectID {
        state.objectID(of: handle)
    }

    /// Compiles a key path for objects of `entity` (nil: plain values); cached, so cheap to call again.
    public func compile(_ keyPath: String, for entity: String?) throws(ObjectGraphError) -> CompiledKeyPath {
        try state.compiled(
            keyPath, entity: try entity.map { e throws(ObjectGraphError) in try model.entityIndex(e) } ?? -1)
    }

    /// Evaluates a compiled key path on an object: no parsing and no hashing of ids or keys.
    ///
    /// The path must have been compiled for the handle's entity (or for plain values, then keys resolve per object).
    public func value(of handle: ObjectHandle, at keyPath: CompiledKeyPath) throws(ObjectGraphError) -> KeyValue {
        state.keyValue(try state.evaluate(keyPath.steps, on: .object(handle)))
    }

    /// The value of an attribute-only path as a plain value (objects come back as `{"$ref"}`), for sorting.
    public func plainValue(of handle: ObjectHandle, at keyPath: CompiledKeyPath) throws(ObjectGraphError)
        -> PropertyListValue
    {
        state.json(try state.evaluate(keyPath.steps, on: .object(handle)))
    }

    public func json(of handle: ObjectHandle, keys: [String]? = nil) throws(ObjectGraphError) -> PropertyListValue {
        guard let keys else { return state.objectJSON(handle, includingDerived: true) }
        var dictionary: [String: PropertyListValue] = ["$id": .string(state.objectID(of: handle).description)]
        for key in keys where key != "$id" {
            let compiled = try state.compiled(key, entity: handle.entity)
            dictionary[key] = state.json(try state.evaluate(compiled.steps, on: .object(handle)))
        }
        return .dictionary(dictionary)
    }
}

@available(*, unavailable)
extension ReadView: Sendable {}
