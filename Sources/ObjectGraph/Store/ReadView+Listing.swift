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
        let index = try state.model.entityIndex(entity)
        let keyPaths = ListingKeyPaths(
            (predicate?.keyPaths ?? []) + (ordering?.descriptors.map(\.key) ?? []), entity: index, model: state.model)
        if let predicate {
            handles = try handles.filter {
                try predicate.evaluate(with: StoredSubject(state: state, handle: $0, keyPaths: keyPaths))
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

    init(_ keyPaths: [String], entity: Int, model: ObjectModel) {
        var unique: [String] = []
        for keyPath in keyPaths where !unique.contains(keyPath) { unique.append(keyPath) }
        self.keyPaths = unique
        steps = unique.map { keyPath in
            Result { () throws(ObjectGraphError) in
                try model.compile(keyPath, for: model.entities[entity].name).steps
            }
        }
    }

    /// The compiled steps of `keyPath` (its compile error thrown), or nil when it is not one of these key paths.
    func steps(of keyPath: String) throws(ObjectGraphError) -> [KeyStep]? {
        for index in keyPaths.indices where keyPaths[index] == keyPath { return try steps[index].get() }
        return nil
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
        let steps = try keyPaths?.steps(of: keyPath) ?? state.compiled(keyPath, entity: handle.entity).steps
        return state.keyValue(try state.evaluate(steps, on: .object(handle)))
    }
}
