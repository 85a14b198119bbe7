import ObjectGraph
import PropertyList

/// NSObjectController: one content object, which is also the selection.
///
/// Content: `Employee/42`, a to-one key path from an object (`Employee/42.manager`), or another controller's
/// selection (`@employees.selection`). Bound to a selection of several objects, the content is that selection, as
/// Cocoa's selection proxy is: the selection shows their common value or `MultipleValues`, and setting through it
/// sets every one of them. In entity mode (`Employee`) the controller starts empty and `add` creates an object that
/// becomes its content. `remove` deletes the content object (only when there is exactly one), or, bound to a key path,
/// sets that key path to null.
final class ObjectController: Controller {
    /// The object `add` created (entity mode).
    var addedObject: ObjectID?

    override var selectedObjects: [ObjectID] {
        if case .selection(_, nil) = description.content { return content }
        return content.count == 1 ? content : []
    }

    override var canAdd: Bool { options.editable && isEntityMode }
    /// NSObjectController has no `insert:`.
    override var canInsert: Bool { false }
    override var canRemove: Bool { options.editable && selectedObjects.count == 1 }

    override func resolveContent(in context: ControllerContext) -> (
        objects: [ObjectID], entity: String?, owner: RelationshipOwner?
    ) {
        guard case .entity(let entity) = description.content else { return super.resolveContent(in: context) }
        if let added = addedObject, !context.view.contains(added) { addedObject = nil }
        return (addedObject.map { [$0] } ?? [], entity, nil)
    }

    override func contentMayHaveChanged(_ cause: UpdateCause) -> Bool {
        if isEntityMode, case .record(let record) = cause {
            return (addedObject.map { record.deleted.contains($0) } ?? false) || cause.replacesGraph
        }
        return super.contentMayHaveChanged(cause)
    }

    override func update(_ cause: UpdateCause, in context: ControllerContext) {
        if refreshContent(cause, in: context) {
            context.emit(self, .arrangedObjects)
            context.emit(self, .selectionIndexes)
            context.emit(self, .selection)
            return
        }
        if case .record = cause, !content.isEmpty { context.emit(self, .selection) }
    }

    /// `remove` with content bound to a key path (`Employee/9.manager`, `@employees.selection.manager`): the key path
    /// is set to null on the objects it leads from to `objects` (one transaction), which stay in the store, as
    /// NSObjectController's `remove:` pushes nil through its content binding; a required relationship refuses it
    /// (422). Nil when the content has no key path.
    func removalFromKeyPath(of objects: [ObjectID], in context: ControllerContext) -> ModelEdit? {
        let sources: [ObjectID]
        let keyPath: String
        switch description.content {
        case .object(let source, let path?): (sources, keyPath) = ([source], path)
        case .selection(let master, let path?):
            (sources, keyPath) = (context.controllers[master]?.selectedObjects ?? [], path)
        default: return nil
        }
        let holding = sources.filter { source in
            guard case .object(let value)? = try? context.view.value(forKeyPath: keyPath, of: source) else {
                return false
            }
            return objects.contains(value)
        }
        return .setValues(objects: holding, edits: [PendingEdit(keyPath: keyPath, value: .null)])
    }

    /// Makes a newly created object the content (entity mode `add`).
    func adopt(_ object: ObjectID, in context: ControllerContext) {
        guard isEntityMode else { return }
        addedObject = object
        update(.full, in: context)
    }

    override func stateFields(in context: ControllerContext) -> [String: PropertyListValue] {
        [
            "selectionIndexes": .array(selectedObjects.indices.map { .integer(Int64($0)) }),
            "count": .integer(Int64(content.count)),
            "contentObject": content.count == 1 ? .dictionary(["$ref": .string(content[0].description)]) : .null,
        ]
    }
}
