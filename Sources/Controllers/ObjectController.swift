import ObjectGraph
import PropertyList

/// NSObjectController: one content object, which is also the selection.
///
/// Content: `Employee/42`, a to-one key path from an object (`Employee/42.manager`), or another controller's
/// selection (`@employees.selection`). Bound to a selection of several objects, the content is that selection, as
/// Cocoa's selection proxy is: the selection shows their common value or `MultipleValues`, and setting through it
/// sets every one of them. In entity mode (`Employee`) the controller starts empty and `add` creates an object that
/// becomes its content. Bound to a key path ending in a to-one (`Employee/42.manager`,
/// `@employees.selection.department`), `add` creates an object and sets that to-one to it on the objects holding it,
/// as NSObjectController's `addObject:` changes the relationship of the primary object. `remove` deletes the content
/// object (only when there is exactly one), or, bound to a key path, sets that key path to null.
final class ObjectController: Controller {
    /// The object `add` created (entity mode).
    var addedObject: ObjectID?
    /// Bound to a key path ending in a to-one: the objects holding that to-one (the content's key path less its last
    /// key, from the bound object or from each selected object of the master) and the last key; nil otherwise.
    private(set) var holders: (objects: [ObjectID], key: String)?

    override var selectedObjects: [ObjectID] {
        if case .selection(_, nil) = description.content { return content }
        return content.count == 1 ? content : []
    }

    override var canAdd: Bool {
        options.editable && (isEntityMode || (contentEntity != nil && holders.map { !$0.objects.isEmpty } ?? false))
    }
    /// NSObjectController has no `insert:`.
    override var canInsert: Bool { false }
    /// Bound to a key path, `remove` sets it to null: only through relationships (a derived key is read-only).
    override var canRemove: Bool {
        options.editable && selectedObjects.count == 1 && holders.map { !$0.objects.isEmpty } ?? true
    }

    /// Bound to a master's whole selection (`@employees.selection`): whether the master's selection proxy always
    /// answers `MultipleValues` for several objects; this controller's selection is that proxy.
    private var masterUsesMultipleValuesMarker = false

    override var usesMultipleValuesMarker: Bool {
        options.alwaysUsesMultipleValuesMarker || masterUsesMultipleValuesMarker
    }

    override func resolveContent(in context: ControllerContext) -> (
        objects: [ObjectID], entity: String?, owner: RelationshipOwner?
    ) {
        if case .selection(let master, nil) = description.content {
            masterUsesMultipleValuesMarker = context.controllers[master]?.usesMultipleValuesMarker ?? false
        }
        guard case .entity(let entity) = description.content else {
            holders = Self.holders(of: description.content, in: context)
            return super.resolveContent(in: context)
        }
        if let added = addedObject, !context.view.contains(added) { addedObject = nil }
        return (addedObject.map { [$0] } ?? [], entity, nil)
    }

    /// The objects holding the to-one a content key path ends in, and its key; nil when the content has no key path,
    /// no objects when it does not end in a to-one reached through to-ones (a derived key on the way) or some source
    /// has no holder (a nil to-one on the way, an empty master selection).
    private static func holders(of content: ContentBinding, in context: ControllerContext) -> (
        objects: [ObjectID], key: String
    )? {
        let sources: [ObjectID]
        let keyPath: String
        switch content {
        case .object(let source, let path?):
            (sources, keyPath) = (context.view.contains(source) ? [source] : [], path)
        case .selection(let master, let path?):
            (sources, keyPath) = (context.controllers[master]?.selectedObjects ?? [], path)
        default:
            return nil
        }
        let key = keyPath.split(separator: ".").last.map(String.init) ?? keyPath
        guard let entity = sources.first?.entity,
            let relationship = context.model.relationship(from: entity, keyPath: keyPath), !relationship.isToMany
        else { return (objects: [], key: key) }
        var objects: [ObjectID] = []
        for source in sources {
            // One source without a holder (a nil to-one on the way) refuses them all, as setting the key path
            // through the selection does.
            guard let owner = context.model.lastKeyOwner(source, keyPath: keyPath, in: context.view) else {
                return (objects: [], key: key)
            }
            objects.append(owner.object)
        }
        return (objects: objects, key: key)
    }

    /// `add` bound to a key path ending in a to-one: a new object of `entity` with `values`, set as that to-one of
    /// every holder (one transaction). Nil in entity mode.
    func additionThroughKeyPath(entity: String, values: [String: PropertyListValue]) -> ModelEdit? {
        guard let holders, !holders.objects.isEmpty else { return nil }
        return .createAndSet(entity: entity, values: values, objects: holders.objects, key: holders.key)
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
