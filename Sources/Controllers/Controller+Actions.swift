import ObjectGraph
import PropertyList

/// The target-action side of a controller: validation, and planning insertions and removals.
extension Controller {
    /// Whether `action` is enabled now; nil when this kind of controller does not handle it.
    func validate(_ action: String) -> Bool? {
        let tree = self as? TreeController
        let arranges = self is ArrayController || tree != nil
        switch action {
        case "add": return canAdd
        case "insert": return self is ObjectController ? nil : canInsert
        case "remove": return canRemove
        case "selectNext": return self is ArrayController ? canSelectNext : nil
        case "selectPrevious": return self is ArrayController ? canSelectPrevious : nil
        case "rearrangeObjects": return arranges ? true : nil
        case "fetch": return true
        // As Cocoa's `commitEditing` (which answers YES): with nothing pending there is nothing to refuse.
        case "commitEditing", "discardEditing": return true
        case "addChild", "insertChild": return tree?.canAddChild
        default: return nil
        }
    }

    /// Whether `object` passes the filter predicate (an object the predicate cannot be evaluated on does not).
    func passesFilter(_ object: ObjectID, view: ReadView) -> Bool {
        guard let predicate = description.filterPredicate else { return true }
        return (try? predicate.evaluate(with: .object(object), resolver: view)) ?? false
    }

    /// Checks that the filter and the sort keys (`ordering`) can be evaluated on the content, for requests that set
    /// them (an array's or a tree's).
    func checkArrangement(ordering: SortOrdering, view: ReadView, checkingContent: Bool = true) throws {
        if let entity = contentEntity {
            try view.model.checkArrangement(
                filter: description.filterPredicate, sortKeys: ordering.descriptors.map(\.key), on: entity)
        }
        guard checkingContent else { return }
        // The filter and sort keys on the first thousand objects; the filter's matches on the rest too (an object
        // it cannot be evaluated on otherwise is left out, as at every arrangement), with one limit for all its
        // `MATCHES` and `LIKE` matches: else a filter that backtracks on objects past the first thousand would hold
        // the store's lock at every arrangement (42 s over 20,000).
        try RegularExpression.withTotalLimit {
            for (index, object) in content.enumerated() {
                do {
                    if let predicate = description.filterPredicate {
                        _ = try predicate.evaluate(with: .object(object), resolver: view)
                    }
                    if index < 1000 { _ = try ordering.keys(of: .object(object), resolver: view) }
                } catch let error as ObjectGraphError where index >= 1000 && !error.isMatchLimit {
                    continue
                }
            }
        }
    }

    /// Applies changed sort descriptors or filter predicate: checks them on the content, then re-arranges.
    func rearrangementDidChange(in context: ControllerContext) throws {
        if let array = self as? ArrayController {
            array.ordering = SortOrdering(description.sortDescriptors)
            array.computeWatchedKeys(model: context.model)
            try array.checkArrangement(ordering: array.ordering, view: context.view)
            array.rearrange(in: context)
        } else if let tree = self as? TreeController {
            tree.ordering = SortOrdering(description.sortDescriptors)
            tree.computeWatchedKeys(model: context.model)
            try tree.checkArrangement(ordering: tree.ordering, view: context.view)
            tree.rearrange(in: context)
        }
    }

    /// Plans `add`, `insert`, `addChild`, `insertChild` or `remove` (the action is known to be enabled).
    func plan(
        _ action: String, values: [String: PropertyListValue], index: Int?, in context: ControllerContext
    ) throws -> InsertionPlan {
        guard options.editable else { throw ObjectGraphError.notEditable(name) }
        if let tree = self as? TreeController {
            return try tree.planTreeAction(action, values: values, index: index, in: context)
        }
        if action == "remove" {
            return InsertionPlan(action: action, edit: try removalEdit(of: selectedObjects, in: context))
        }
        guard let entity = contentEntity else {
            throw ObjectGraphError.actionDisabled(action, of: name, "the content's entity is not known.")
        }
        if let objectController = self as? ObjectController,
            let edit = objectController.additionThroughKeyPath(entity: entity, values: values)
        {
            return InsertionPlan(action: action, edit: edit)
        }
        guard action == "insert", let array = self as? ArrayController else {
            return InsertionPlan(
                action: action, edit: .create(entity: entity, values: values, owner: owner, index: nil))
        }
        let arrangedIndex = min(index ?? array.selectionIndexes.first ?? array.arranged.count, array.arranged.count)
        var position: Int?
        if owner != nil, arrangedIndex < array.arranged.count {
            position = content.firstIndex(of: array.arranged[arrangedIndex])
        }
        var edit = ModelEdit.create(entity: entity, values: values, owner: owner, index: position)
        if let filter = description.filterPredicate, !options.clearsFilterPredicateOnInsertion {
            edit = .matching(filter, controller: name, edit)
        }
        var plan = InsertionPlan(action: action, edit: edit, arrangedIndex: arrangedIndex)
        plan.arrangedNeighbors = (
            arrangedIndex < array.arranged.count ? array.arranged[arrangedIndex] : nil,
            arrangedIndex > 0 ? array.arranged[arrangedIndex - 1] : nil
        )
        return plan
    }

    /// Whether `action` moves the selection, and with it the content of the controllers following this one: `remove`
    /// always, an insertion when it selects the new object (an object controller's `add` makes it the content).
    func changesSelection(by action: String) -> Bool {
        action == "remove" || options.selectsInsertedObjects || self is ObjectController
    }

    /// Entity mode (and object controllers over an object or a selection) delete; relationship mode removes from the
    /// relationship, refused with 422 `cardinality` when the objects cannot live without it (a required to-one
    /// inverse); an object controller over a key path sets it to null (`ObjectController.removalFromKeyPath`).
    func removalEdit(of objects: [ObjectID], in context: ControllerContext) throws -> ModelEdit {
        let model = context.model
        if let objectController = self as? ObjectController {
            return objectController.removalFromKeyPath(of: objects, in: context) ?? .delete(objects)
        }
        if isEntityMode { return .delete(objects) }
        guard let owner else {
            throw ObjectGraphError.actionDisabled("remove", of: name, "the content is not a to-many relationship.")
        }
        try Self.checkRemovable(objects, from: owner, model: model)
        return .removeFromRelationship(owner, objects)
    }

    static func checkRemovable(_ objects: [ObjectID], from owner: RelationshipOwner, model: ObjectModel) throws {
        guard let relationship = model.relationship(from: owner.object.entity, keyPath: owner.keyPath),
            let inverse = model.entity(named: relationship.destination)?.relationship(named: relationship.inverse),
            !inverse.isToMany, inverse.isRequired, let first = objects.first
        else { return }
        throw ObjectGraphError(
            status: 422, code: "cardinality",
            message: "Removing \(first) from \(owner.object).\(owner.keyPath) would leave it without its required "
                + "\(inverse.name); nothing was changed. Delete it, or set its \(inverse.name), instead.",
            fields: ["keyPath": .string(inverse.name), "object": .string(first.description)])
    }

    /// Finishes `add` / `insert` (and the tree's child insertions) once the new object is in the store.
    func didInsert(_ object: ObjectID, plan: InsertionPlan, in context: ControllerContext) {
        if let objectController = self as? ObjectController {
            objectController.adopt(object, in: context)
            return
        }
        var clearedFilter = false
        if self is ArrayController, options.clearsFilterPredicateOnInsertion, description.filterPredicate != nil {
            description.filterPredicate = nil
            context.emit(self, .filterPredicate)
            try? rearrangementDidChange(in: context)
            clearedFilter = true
        }
        if let tree = self as? TreeController {
            tree.didInsert(object, placement: plan.placement, in: context)
        } else if let array = self as? ArrayController {
            if plan.action == "insert", var index = plan.arrangedIndex {
                // The index asked was into the filtered objects: among them all now, the object goes between the
                // same two (before the one that was at the index, else after the one before it).
                if clearedFilter {
                    let others = array.arranged.filter { $0 != object }
                    if let before = plan.arrangedNeighbors.before, let at = others.firstIndex(of: before) {
                        index = at
                    } else if let after = plan.arrangedNeighbors.after, let at = others.firstIndex(of: after) {
                        index = at + 1
                    }
                }
                array.place(object, at: index, in: context)
            } else if let index = array.arranged.firstIndex(of: object), options.selectsInsertedObjects {
                array.setSelection([index], in: context, changed: array.selectionIndexes != [index])
            }
            // An added object the kept filter hides is in the content only, as NSArrayController's `addObject:`
            // adds to the arranged objects "if all filters currently applied are matched".
        }
    }
}
