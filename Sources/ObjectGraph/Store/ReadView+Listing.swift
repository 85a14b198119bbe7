/// Filtering and sorting the objects of an entity by handle: the listing of `GET /objects/{Entity}`.
extension ReadView {
    /// The objects of `entity` that satisfy `predicate`, sorted stably by `ordering` (insertion order without one).
    ///
    /// The same semantics and errors as `Predicate.filter` and `SortOrdering.sorted` over `.object` subjects and
    /// this view, but each object is read through its handle with key paths compiled for its entity: no id is
    /// hashed and no `ObjectID` is made unless a key path's value is an object or the predicate uses `SELF`.
    /// O(n·k) key-path reads for k key paths in the predicate and the ordering, then O(m log m) comparisons.
    public func handles(
        of entity: String, matching predicate: Predicate?, sortedBy ordering: SortOrdering?
    ) throws -> [ObjectHandle] {
        var handles = try handles(of: entity)
        guard predicate != nil || ordering != nil else { return handles }
        let sortKeys = ordering?.descriptors.map(\.key) ?? []
        let paths = (predicate?.keyPaths ?? []) + sortKeys
        try state.model.checkArrangement(filter: predicate, sortKeys: sortKeys, on: entity)
        let keyPaths = ListingKeyPaths(paths, entity: try state.model.entityIndex(entity), model: state.model)
        if let predicate {
            // Under the store's lock: many `MATCHES` each just under their own limit must not add up to minutes.
            handles = try RegularExpression.withTotalLimit {
                try handles.filter {
                    try predicate.evaluate(with: StoredSubject(state: state, handle: $0, keyPaths: keyPaths))
                }
            }
        }
        if let ordering {
            handles = try ordering.sorted(handles) { StoredSubject(state: state, handle: $0, keyPaths: keyPaths) }
        }
        return handles
    }

    /// Whether the object `handle` addresses satisfies `predicate` (as `evaluate(with: .object(id), resolver:)`).
    public func evaluate(_ predicate: Predicate, on handle: ObjectHandle) throws -> Bool {
        try predicate.evaluate(with: StoredSubject(state: state, handle: handle, keyPaths: nil))
    }
}

/// The key paths of a listing compiled once for its entity, so that reading one is a comparison of strings that
/// share storage rather than a cache lookup per object.
///
/// A key path that does not compile keeps its error, thrown when an object first reads it, where
/// `GraphState.compiled` would have thrown it: compiling depends on the model only.
final class ListingKeyPaths {
    private let keyPaths: [String]
    private let steps: [Result<[KeyStep], ObjectGraphError>]
    /// Per key path, when it is only to-ones then an attribute (`salary`, `team.name`): the same read without steps.
    private let attributePaths: [AttributePath?]

    /// Attributes through to-ones, resolved for one entity: each hop a to-one's slot and the entity it leads to.
    struct AttributePath {
        let hopSlots: [Int]
        let hopDestinations: [Int]
        let slot: Int
    }

    init(_ keyPaths: [String], entity: Int, model: ObjectModel) {
        var unique: [String] = []
        for keyPath in keyPaths where !unique.contains(keyPath) { unique.append(keyPath) }
        self.keyPaths = unique
        steps = unique.map { keyPath in
            Result { () throws(ObjectGraphError) in
                try model.compile(keyPath, for: model.entities[entity].name).steps
            }
        }
        attributePaths = steps.map { steps in
            guard case .success(let steps) = steps else { return nil }
            return ListingKeyPaths.attributePath(steps, entity: entity, model: model)
        }
    }

    /// The attribute path `steps` amount to from `entity`, or nil when they take anything but to-ones and one
    /// final attribute (to-manys, derived keys, operators): those are evaluated as compiled.
    private static func attributePath(_ steps: [KeyStep], entity: Int, model: ObjectModel) -> AttributePath? {
        var entity = entity
        var hopSlots: [Int] = []
        var hopDestinations: [Int] = []
        var attribute: Int?
        for step in steps {
            guard attribute == nil else { return nil }
            switch step {
            case .this:
                continue
            case .collectionOperator:
                return nil
            case .key(let lookup):
                switch lookup.properties[entity] {
                case .attribute(let slot):
                    attribute = slot
                case .relationship(let index):
                    let relationship = model.entities[entity].relationships[index]
                    guard !relationship.isToMany else { return nil }
                    hopSlots.append(relationship.slot)
                    hopDestinations.append(relationship.destinationIndex)
                    entity = relationship.destinationIndex
                case .derived, nil:
                    return nil
                }
            }
        }
        guard let attribute else { return nil }
        return AttributePath(hopSlots: hopSlots, hopDestinations: hopDestinations, slot: attribute)
    }

    /// The index of `keyPath` among these, or nil when it is not one of them.
    func index(of keyPath: String) -> Int? {
        keyPaths.indices.first { keyPaths[$0] == keyPath }
    }

    /// The compiled steps of the key path at `index` (its compile error thrown).
    func steps(at index: Int) throws(ObjectGraphError) -> [KeyStep] {
        try steps[index].get()
    }

    /// The value of the key path at `index` on `handle` when it is an attribute path, as evaluating its steps gives
    /// it: the attribute's value, or null when a to-one on the way is nil.
    func attributeValue(at index: Int, of handle: ObjectHandle, in state: GraphState) -> KeyValue? {
        guard let path = attributePaths[index] else { return nil }
        var current = handle
        for hop in path.hopSlots.indices {
            guard let next = state.toOne(current, slot: path.hopSlots[hop], destination: path.hopDestinations[hop])
            else { return .null }
            current = next
        }
        return .value(state.attribute(current, path.slot))
    }
}

/// A stored object as a predicate subject: key paths compiled (and cached) for its entity, evaluated on its handle.
///
/// Reads exactly what `ReadView.value(forKeyPath:of:)` reads for the object's id, without looking the id up.
struct StoredSubject: PredicateSubject {
    let state: GraphState
    let handle: ObjectHandle
    /// Compiled for the handle's entity; other key paths go through the store's cache.
    let keyPaths: ListingKeyPaths?

    var evaluatedObject: KeyValue { .object(state.objectID(of: handle)) }

    func value(forKeyPath keyPath: String) throws -> KeyValue {
        guard let keyPaths, let index = keyPaths.index(of: keyPath) else {
            let steps = try state.compiled(keyPath, entity: handle.entity).steps
            return state.keyValue(try state.evaluate(steps, on: .object(handle)))
        }
        if let value = keyPaths.attributeValue(at: index, of: handle, in: state) { return value }
        return state.keyValue(try state.evaluate(try keyPaths.steps(at: index), on: .object(handle)))
    }
}
