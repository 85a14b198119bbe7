import ObjectGraph
import PropertyList

/// A change a controller asks of the model, planned under the registry's lock and applied afterwards in one
/// transaction (through the document), so that no transaction ever runs with the registry's lock held.
enum ModelEdit: Sendable {
    /// Insert an object of `entity` with `values`; with `owner`, also into `owner.keyPath` at `index` (nil: the end).
    case create(entity: String, values: [String: PropertyListValue], owner: RelationshipOwner?, index: Int?)
    /// Insert an object of `entity` with `values` and set it as the to-one `key` of each of `objects`.
    case createAndSet(entity: String, values: [String: PropertyListValue], objects: [ObjectID], key: String)
    /// Delete objects, applying delete rules.
    case delete([ObjectID])
    /// Remove objects from a to-many relationship (they stay in the store).
    case removeFromRelationship(RelationshipOwner, [ObjectID])
    /// Set each key path to its value on every object (setting through the selection, committing edits).
    case setValues(objects: [ObjectID], edits: [PendingEdit])
    /// Several edits in turn.
    case sequence([ModelEdit])
    /// `edit`, refused (422 `validation-failed`, nothing applied) when the object it creates does not match the
    /// filter that `controller` keeps on insertion: NSArrayController's `insertObject:atArrangedObjectIndex:` "will
    /// raise an exception if the object does not match all filters currently applied".
    indirect case matching(Predicate, controller: String, ModelEdit)

    /// Applies the edit; answers the created object for `create` and `createAndSet`.
    ///
    /// `setValues` gathers the errors of every edit (422 `validation-failed` with `errors`) instead of stopping at
    /// the first, with the constraint errors of the edits that applied; when every value fits its type, constraint
    /// errors come from the store when the transaction commits. An error other than a 422 (an undefined key) is the
    /// request's own and is thrown as it is.
    func apply(in transaction: Transaction) throws -> ObjectID? {
        switch self {
        case .create(let entity, var values, let owner, let index):
            if let owner {
                // A to-one inverse of the relationship is the insert's to set: a value for it (the owner named again,
                // say) would put the object in the relationship first, and the insert would find it there. (A to-many
                // inverse keeps the other members named.)
                let (ownerID, key) = try transaction.toManyOwner(owner.keyPath, of: owner.object)
                let model = transaction.view.model
                if let inverse = model.entity(named: ownerID.entity)?.relationship(named: key)?.inverse,
                    model.entity(named: entity)?.relationship(named: inverse)?.isToMany == false
                {
                    values.removeValue(forKey: inverse)
                }
            }
            let object = try transaction.insert(entity, values: values)
            if let owner {
                try transaction.insert(object, at: index, intoKeyPath: owner.keyPath, of: owner.object)
            }
            return object
        case .createAndSet(let entity, let values, let holders, let key):
            let object = try transaction.insert(entity, values: values)
            for holder in holders {
                try transaction.setValue(["$ref": .string(object.description)], forKeyPath: key, of: holder)
            }
            return object
        case .delete(let objects):
            for object in objects where transaction.view.contains(object) { try transaction.delete(object) }
            return nil
        case .removeFromRelationship(let owner, let objects):
            for object in objects {
                let members = try transaction.view.value(forKeyPath: owner.keyPath, of: owner.object)
                guard case .collection(let elements) = members,
                    let index = elements.firstIndex(of: .object(object))
                else { continue }
                try transaction.remove(at: index, fromKeyPath: owner.keyPath, of: owner.object)
            }
            return nil
        case .setValues(let objects, let edits):
            var errors: [ObjectGraphError] = []
            for edit in edits {
                for object in objects {
                    do {
                        try transaction.setValue(edit.value, forKeyPath: edit.keyPath, of: object)
                    } catch {
                        // An undefined key or a malformed key path is the request's error, whatever is selected.
                        guard error.status == 422 else { throw error }
                        var failure = error
                        if failure.fields["keyPath"] == nil { failure.fields["keyPath"] = .string(edit.keyPath) }
                        errors.append(failure)
                    }
                }
            }
            // With the constraints broken by the edits that did apply, so that every invalid edit is listed at once.
            if !errors.isEmpty { throw ObjectGraphError.gathering(errors + transaction.validationErrors()) }
            return nil
        case .sequence(let edits):
            var created: ObjectID?
            for edit in edits { created = try edit.apply(in: transaction) ?? created }
            return created
        case .matching(let filter, let controller, let edit):
            let created = try edit.apply(in: transaction)
            if let created, (try? filter.evaluate(with: .object(created), resolver: transaction.view)) != true {
                throw ObjectGraphError(
                    status: 422, code: "validation-failed",
                    message: "The new object does not match the filter predicate of \(controller) (\(filter)), which "
                        + "it keeps on insertion (clearsFilterPredicateOnInsertion is false), so it cannot be placed "
                        + "among the arranged objects; nothing was inserted. Use add (which creates it hidden), or "
                        + "clear the filter first.",
                    fields: ["controller": .string(controller), "filterPredicate": .string(filter.description)])
            }
            return created
        }
    }
}

/// An object and the key of one of its relationships: where a relationship-mode controller adds and removes (a
/// to-many), or what an object controller's `add` sets (a to-one).
public struct RelationshipOwner: Sendable, Hashable {
    public var object: ObjectID
    public var keyPath: String

    public init(object: ObjectID, keyPath: String) {
        self.object = object
        self.keyPath = keyPath
    }
}

/// An editor's uncommitted value for a key path of the selection (`PUT /controllers/{name}/edits/{keyPath}`).
public struct PendingEdit: Sendable, Hashable {
    public var keyPath: String
    public var value: PropertyListValue

    public init(keyPath: String, value: PropertyListValue) {
        self.keyPath = keyPath
        self.value = value
    }
}
