import ObjectGraph
import PropertyList

/// Why controllers are asked to update.
enum UpdateCause {
    /// A committed change of the model.
    case record(ChangeRecord)
    /// A controller's selection changed: controllers bound to a master re-read their content.
    case masters
    /// Everything is re-read (creation, `fetch`).
    case full

    /// Whether the cause replaced the whole graph (`PUT /store`, `revertToSaved`): every object is new, whatever its id.
    var replacesGraph: Bool {
        guard case .record(let record) = self else { return false }
        return record.changes.contains { $0.kind == .reset }
    }
}

/// The base of the mediating controllers (NSController): content binding, editing, and the selection proxy.
///
/// Controllers are classes owned by a `ControllerRegistry` and touched only under its lock, with a
/// `ControllerContext` that gives them a read view of the store; they never run a transaction themselves: they plan a
/// `ModelEdit`, the registry applies it after releasing its lock, and then lets them finish.
///
/// Editing (NSEditorRegistration): pending edits are the editors' uncommitted values for key paths of the selection.
/// `commitEditing` applies all of them to every selected object as one transaction; if any is invalid the answer is
/// 422 with every error and the edits are kept. `discardEditing` drops them.
class Controller {
    let name: String
    var description: ControllerDescription
    /// Declared in the fixture's `controllers.json` (such controllers cannot be removed).
    let isDeclared: Bool
    var pendingEdits: [PendingEdit] = []
    /// The selected objects when the pending edits were recorded: the objects they are for.
    var editedObjects: [ObjectID] = []
    /// The resolved content, in content order (the relationship's order, or the entity's insertion order).
    var content: [ObjectID] = [] {
        didSet { contentPositions = nil }
    }
    var contentSet: Set<ObjectID> = []
    /// What the latest content change (`refreshContent`) brought in and took out, when it was small and the objects
    /// that stayed kept their order (see `smallDifference`); nil after any other.
    var contentDifference: (added: [ObjectID], removed: Set<ObjectID>)?
    /// A client asked for an empty selection; `avoidsEmptySelection` leaves it empty until a client selects again or
    /// the content is replaced by other objects.
    var explicitlyEmpty = false
    /// Each content object's index in `content`, made when first asked for after the content changed.
    private var contentPositions: [ObjectID: Int]?
    /// The entity of the content objects, when the model tells it.
    var contentEntity: String?
    /// Where `add` and `remove` go in relationship mode (a key path from one object to a to-many).
    var owner: RelationshipOwner?
    /// When a request last named the controller (the registry's clock): for `idleTimeout`.
    var lastUsed = 0.0
    /// Insertions of its own that place their object (an array's `insert`, a tree's four) between their plan and
    /// their placement: the content changes they make are not changes made elsewhere, so they do not re-arrange.
    var ownInsertions = 0

    /// How many objects the controller arranges (a tree: its nodes): what its re-arrangement costs grows with.
    var size: Int { content.count }

    init(description: ControllerDescription, isDeclared: Bool) {
        self.name = description.name
        self.description = description
        self.isDeclared = isDeclared
    }

    var options: ControllerOptions { description.options }
    var isEditing: Bool { !pendingEdits.isEmpty }
    var isEntityMode: Bool {
        if case .entity = description.content { return true }
        return false
    }

    // MARK: To override

    /// The selected objects, in selection order.
    var selectedObjects: [ObjectID] { [] }
    /// `selectedObjects.count`, where a controller can tell it without finding them.
    var selectionCount: Int { selectedObjects.count }

    /// Brings the controller up to date with its content and the model; reports what changed to `context`.
    func update(_ cause: UpdateCause, in context: ControllerContext) {}

    /// Selects `objects` (those that are arranged); for requests from clients.
    func setSelectedObjects(_ objects: [ObjectID], in context: ControllerContext) throws(ObjectGraphError) {}

    /// The controller-specific members of its state (`selectionIndexes`, `count`, ...).
    func stateFields(in context: ControllerContext) -> [String: PropertyListValue] { [:] }

    var canAdd: Bool { options.editable && contentEntity != nil && (isEntityMode || owner != nil) }
    var canInsert: Bool { canAdd }
    var canRemove: Bool {
        options.editable && !selectedObjects.isEmpty && (isEntityMode || owner != nil)
    }
    var canSelectNext: Bool { false }
    var canSelectPrevious: Bool { false }
    /// Whether the selection proxy answers `MultipleValues` for any several selected objects.
    var usesMultipleValuesMarker: Bool { options.alwaysUsesMultipleValuesMarker }

    // MARK: Content

    /// Re-reads the content binding; answers whether the content changed (and then stores it). A replaced graph
    /// always changes it: its objects may keep their ids, not their values.
    func refreshContent(_ cause: UpdateCause, in context: ControllerContext) -> Bool {
        guard contentMayHaveChanged(cause) else { return false }
        let resolved = resolveContent(in: context)
        contentEntity = resolved.entity
        owner = resolved.owner
        guard resolved.objects != content || cause.replacesGraph else { return false }
        contentDifference = Self.smallDifference(from: content, to: resolved.objects, oldSet: contentSet)
        content = resolved.objects
        let replaced: Bool
        if let contentDifference {
            // Changed in place (a copy of the set would cost what rebuilding it does).
            replaced = contentDifference.removed.count == contentSet.count
            contentSet.subtract(contentDifference.removed)
            contentSet.formUnion(contentDifference.added)
        } else {
            let oldSet = contentSet
            contentSet = Set(content)
            replaced = contentSet.isDisjoint(with: oldSet)
        }
        if !content.isEmpty && replaced { explicitlyEmpty = false }
        context.emit(self, .content)
        return true
    }

    /// Objects one commit may bring into or take out of the content, or move by their sort or filter keys, beyond
    /// which an arrangement is made whole rather than one object at a time (nor is `contentDifference` worked out).
    static let incrementalLimit = 64

    /// What `new` adds to and takes from `old` (whose objects are `oldSet`, each once), when that is at most
    /// `incrementalLimit` objects, `new` holds each once too, and the objects in both are in the same order;
    /// nil otherwise. One pass comparing the two in step: only where they differ is `oldSet` looked up (an object of
    /// `new` that is not in it came in; else the one of `old` left, and if it is in `new` after all, the order
    /// changed, which the pass finds when the objects of `old` run out or the limit is passed).
    static func smallDifference(from old: [ObjectID], to new: [ObjectID], oldSet: Set<ObjectID>) -> (
        added: [ObjectID], removed: Set<ObjectID>
    )? {
        guard old.count == oldSet.count, abs(new.count - old.count) <= incrementalLimit else { return nil }
        var added: [ObjectID] = []
        var removed: Set<ObjectID> = []
        var (i, j) = (0, 0)
        while j < new.count || i < old.count {
            if i < old.count, j < new.count, old[i] == new[j] {
                i += 1
                j += 1
            } else if j < new.count, !oldSet.contains(new[j]) {
                if added.contains(new[j]) { return nil }
                added.append(new[j])
                j += 1
            } else if i < old.count {
                removed.insert(old[i])
                i += 1
            } else {
                return nil
            }
            if added.count + removed.count > incrementalLimit { return nil }
        }
        return (added, removed)
    }

    /// The index of `object` in the content (in O(1) after one O(n) pass per content change); nil when it is not in.
    func contentPosition(of object: ObjectID) -> Int? {
        if contentPositions == nil {
            contentPositions = Dictionary(
                content.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        }
        return contentPositions?[object]
    }

    func contentMayHaveChanged(_ cause: UpdateCause) -> Bool {
        switch cause {
        case .full: return true
        case .masters: return description.content.master != nil
        case .record(let record):
            guard case .entity(let entity) = description.content else { return true }
            return record.inserted.contains { $0.entity == entity } || record.deleted.contains { $0.entity == entity }
                || cause.replacesGraph
        }
    }

    func resolveContent(in context: ControllerContext) -> (
        objects: [ObjectID], entity: String?, owner: RelationshipOwner?
    ) {
        let view = context.view
        let model = context.model
        switch description.content {
        case .entity(let entity):
            return ((try? view.objects(of: entity)) ?? [], entity, nil)
        case .object(let object, nil):
            return (view.contains(object) ? [object] : [], object.entity, nil)
        case .object(let object, let keyPath?):
            let entity = model.contentEntity(from: object.entity, keyPath: keyPath)
            guard view.contains(object), let value = try? view.value(forKeyPath: keyPath, of: object) else {
                return ([], entity, nil)
            }
            return (value.objectIDs, entity, model.toManyOwner(object, keyPath: keyPath, in: view))
        case .selection(let master, let keyPath):
            guard let master = context.controllers[master] else { return ([], nil, nil) }
            let selected = master.selectedObjects
            guard let keyPath else { return (selected, master.contentEntity ?? selected.first?.entity, nil) }
            var entity = (master.contentEntity ?? selected.first?.entity).flatMap {
                model.contentEntity(from: $0, keyPath: keyPath)
            }
            guard case .value(let value)? = try? master.selectionValue(keyPath, in: view) else {
                return ([], entity, nil)
            }
            let objects = value.objectIDs
            if entity == nil { entity = objects.first?.entity }
            let owner = selected.count == 1 ? model.toManyOwner(selected[0], keyPath: keyPath, in: view) : nil
            return (objects, entity, owner)
        }
    }

    // MARK: Selection proxy

    /// The selection proxy's answer for `keyPath`: the selected objects' common value, or a marker.
    ///
    /// No selection: `NoSelection`; a key the objects do not have: `NotApplicable`; several objects with different
    /// values (or any several with `alwaysUsesMultipleValuesMarker`): `MultipleValues`. Other errors (a malformed
    /// key path) are thrown. Cost: one compiled key-path evaluation per selected object, stopping at the first
    /// difference.
    func selectionValue(_ keyPath: String, in view: ReadView) throws(ObjectGraphError) -> SelectionValue {
        try Self.selectionValue(
            keyPath, in: view, of: selectedObjects, alwaysUsesMultipleValuesMarker: usesMultipleValuesMarker)
    }

    /// `selectionValue(_:in:)` of `selected`, without a controller: for a transaction's view, where the registry's
    /// lock is not held.
    static func selectionValue(
        _ keyPath: String, in view: ReadView, of selected: [ObjectID], alwaysUsesMultipleValuesMarker: Bool
    ) throws(ObjectGraphError) -> SelectionValue {
        guard !selected.isEmpty else { return .marker(.noSelection) }
        if selected.count > 1 && alwaysUsesMultipleValuesMarker { return .marker(.multipleValues) }
        var compiled: CompiledKeyPath?
        var first: KeyValue?
        do throws(ObjectGraphError) {
            for object in selected {
                if compiled?.entity != object.entity { compiled = try view.compile(keyPath, for: object.entity) }
                let value = try view.value(of: try view.handle(of: object), at: compiled!)
                if let first {
                    if !first.isEqualByValue(to: value) { return .marker(.multipleValues) }
                } else {
                    first = value
                }
            }
        } catch {
            if error.code == "undefined-key" { return .marker(.notApplicable) }
            throw error
        }
        return .value(first ?? .null)
    }

    /// The selection proxy without a key path: every key of the selected objects' entities (of the content's entity
    /// when nothing is selected) with its value or marker, as `selection/{key}` reads it (a tree of departments and
    /// their employees may select either, or both).
    func selectionDictionary(in view: ReadView) throws(ObjectGraphError) -> PropertyListValue {
        // Found once, not once per key (a tree finds each selected node from its root: 97,000 of them took 1.1-1.65 s
        // a read when each of nine keys found them again).
        let selected = selectedObjects
        var entityNames: [String] = []
        for object in selected where entityNames.last != object.entity && !entityNames.contains(object.entity) {
            entityNames.append(object.entity)
        }
        if entityNames.isEmpty, let contentEntity { entityNames = [contentEntity] }
        var keys: [String] = []
        for entity in entityNames.compactMap(view.model.entity(named:)) {
            keys += entity.attributes.map(\.name) + entity.relationships.map(\.name) + entity.derivedKeys.map(\.name)
        }
        var result: [String: PropertyListValue] = [:]
        for key in keys where result[key] == nil {
            result[key] = try Self.selectionValue(
                key, in: view, of: selected, alwaysUsesMultipleValuesMarker: usesMultipleValuesMarker
            ).json
        }
        return .dictionary(result)
    }

    // MARK: Editing

    /// Records an editor's uncommitted value; answers whether the edits changed (reported as `isEditing`, which
    /// stands for the edits too).
    func setPendingEdit(_ value: PropertyListValue, forKeyPath keyPath: String) -> Bool {
        if !isEditing { editedObjects = selectedObjects }
        if let index = pendingEdits.firstIndex(where: { $0.keyPath == keyPath }) {
            guard !pendingEdits[index].value.isIdentical(to: value) else { return false }
            pendingEdits[index].value = value
        } else {
            pendingEdits.append(PendingEdit(keyPath: keyPath, value: value))
        }
        return true
    }

    /// Drops the pending edits when the selection is no longer the objects they were made for (the content changed
    /// under them: an object deleted or moved elsewhere), so they never go to other objects; reports `isEditing`.
    func dropEditsOfAnotherSelection(in context: ControllerContext) {
        // Runs for every controller after every commit: nothing to compute unless there are edits.
        guard isEditing else { return }
        let selected = selectedObjects
        // The same objects in another order (a re-sort) are still the objects the edits are for.
        guard selected != editedObjects, Set(selected) != Set(editedObjects) else { return }
        pendingEdits = []
        context.emit(self, .isEditing)
    }

    /// Drops the pending edits that were committed (unless a newer value arrived meanwhile).
    func forgetCommittedEdits(_ committed: [PendingEdit]) {
        pendingEdits.removeAll { committed.contains($0) }
    }

    var editsJSON: PropertyListValue {
        .dictionary(Dictionary(pendingEdits.map { ($0.keyPath, $0.value) }, uniquingKeysWith: { _, last in last }))
    }

    // MARK: State

    /// `GET /controllers/{name}`: the declaration, the state and the enabled actions.
    func state(in context: ControllerContext) -> PropertyListValue {
        guard case .dictionary(var fields) = description.json else { return .null }
        fields["isEditing"] = .boolean(isEditing)
        fields["canAdd"] = .boolean(canAdd)
        fields["canInsert"] = .boolean(canInsert)
        fields["canRemove"] = .boolean(canRemove)
        fields["canSelectNext"] = .boolean(canSelectNext)
        fields["canSelectPrevious"] = .boolean(canSelectPrevious)
        fields["declared"] = .boolean(isDeclared)
        fields["entity"] = contentEntity.map { .string($0) } ?? .null
        fields.merge(stateFields(in: context)) { _, new in new }
        return .dictionary(fields)
    }
}

extension KeyValue {
    /// The objects a content value holds: the object, or the objects of a collection; none for anything else.
    var objectIDs: [ObjectID] {
        switch self {
        case .object(let object): [object]
        case .collection(let elements):
            elements.compactMap {
                if case .object(let object) = $0 { return object }
                return nil
            }
        case .value: []
        }
    }
}

extension ObjectModel {
    /// The entity reached from `entity` through the relationships of `keyPath`; nil through anything else.
    func destinationEntity(from entity: String, keyPath: String) -> String? {
        var current = entity
        for key in keyPath.split(separator: ".") {
            guard let relationship = self.entity(named: current)?.relationship(named: String(key)) else { return nil }
            current = relationship.destination
        }
        return current
    }

    /// The entity of the objects `keyPath` from `entity` gives: through relationships, or through collection
    /// operators that gather objects (`employees.@distinctUnionOfArrays.directReports`); nil for anything else.
    func contentEntity(from entity: String, keyPath: String) -> String? {
        if let destination = destinationEntity(from: entity, keyPath: keyPath) { return destination }
        guard case .objects(let destination)? = try? yield(of: keyPath, from: entity) else { return nil }
        return destination
    }

    /// The relationship at the end of `keyPath` from `entity` (through to-ones), if every step is one.
    func relationship(from entity: String, keyPath: String) -> RelationshipDescription? {
        var current = entity
        var result: RelationshipDescription?
        for key in keyPath.split(separator: ".") {
            guard result.map({ !$0.isToMany }) ?? true,
                let relationship = self.entity(named: current)?.relationship(named: String(key))
            else { return nil }
            result = relationship
            current = relationship.destination
        }
        return result
    }

    /// `object.keyPath` as a place to add to and remove from, when it ends in a to-many: the object the to-ones on the
    /// way lead to and the last key; nil when one of them is nil (nothing could be added then: `canAdd` is false).
    func toManyOwner(_ object: ObjectID, keyPath: String, in view: ReadView) -> RelationshipOwner? {
        guard relationship(from: object.entity, keyPath: keyPath)?.isToMany == true else { return nil }
        return lastKeyOwner(object, keyPath: keyPath, in: view)
    }

    /// The object that `keyPath`'s last key belongs to, reached from `object` through the keys before it, and that
    /// key; nil when the way there is nil.
    func lastKeyOwner(_ object: ObjectID, keyPath: String, in view: ReadView) -> RelationshipOwner? {
        guard let dot = keyPath.lastIndex(of: ".") else { return RelationshipOwner(object: object, keyPath: keyPath) }
        guard case .object(let owner)? = try? view.value(forKeyPath: String(keyPath[..<dot]), of: object) else {
            return nil
        }
        return RelationshipOwner(object: owner, keyPath: String(keyPath[keyPath.index(after: dot)...]))
    }
}
