import ObjectGraph
import PropertyList

/// Changing controllers: selection, arrangement, editing, and the target-action methods (API.md §5).
///
/// A selection change asked by a client first commits pending edits — the controller's own and those of every
/// controller following it — as NSArrayController asks its editors to commit before it changes the selection: if a
/// commit fails (422 with every error), the edits are kept and the selection stays as it was. So do the actions that
/// move the selection: `add`, `insert`, `addChild` and `insertChild` when they select the new object, and `remove`
/// (see `insertOrRemove`).
extension ControllerRegistry {
    /// The actions `POST /controllers/{name}/{action}` knows.
    public static let actions = [
        "add", "insert", "remove", "selectNext", "selectPrevious", "rearrangeObjects", "fetch", "commitEditing",
        "discardEditing", "addChild", "insertChild",
    ]

    /// The keys the body of `action` may have on the controller route: `object` (the new object's values) and, for
    /// the insertions, `index`.
    public static func bodyKeys(of action: String) -> Set<String> {
        switch action {
        case "add", "addChild": ["object"]
        case "insert", "insertChild": ["object", "index"]
        default: []
        }
    }

    // MARK: Selection

    /// `PUT /controllers/{name}/selectionIndexes` (array and object controllers): out-of-range indexes are dropped, an
    /// empty selection is kept. Answers the new `selectionIndexes` and the store seq they reflect. `key` is the one
    /// the client set, named by a refusal (`selectionIndex` sets one index through here).
    @discardableResult
    public func setSelectionIndexes(
        _ indexes: [Int], controller name: String, key: String = "selectionIndexes"
    ) throws -> (value: PropertyListValue, seq: Int64) {
        let check = { (controller: Controller, _: ReadView) throws(ObjectGraphError) in
            if controller is TreeController {
                throw ObjectGraphError.undefinedKey(key, entity: "Controller \(name)")
            }
            if controller is ObjectController,
                Set(indexes.filter { $0 < controller.content.count }) != Set(controller.selectedObjects.indices)
            {
                throw Self.fixedSelection(key)
            }
        }
        return try changingSelection(name, checking: check, answering: Self.answering("selectionIndexes")) {
            controller, context in
            (controller as? ArrayController)?.selectIndexes(indexes, in: context)
        }
    }

    /// 422 for a change of an object controller's selection, which is its content (setting it to what it is is
    /// not a change).
    private static func fixedSelection(_ key: String) -> ObjectGraphError {
        ObjectGraphError(
            status: 422, code: "validation-failed",
            message: "An object controller's selection is its content; it cannot be changed.",
            fields: ["keyPath": .string(key)])
    }

    /// `PUT /controllers/{name}/selectionIndexPaths` (tree controllers); answers as `setSelectionIndexes`.
    @discardableResult
    public func setSelectionIndexPaths(_ paths: [[Int]], controller name: String) throws -> (
        value: PropertyListValue, seq: Int64
    ) {
        let check = { (controller: Controller, _: ReadView) throws(ObjectGraphError) in
            guard controller is TreeController else {
                throw ObjectGraphError.undefinedKey("selectionIndexPaths", entity: "Controller \(name)")
            }
        }
        return try changingSelection(name, checking: check, answering: Self.answering("selectionIndexPaths")) {
            controller, context in
            (controller as? TreeController)?.selectIndexPaths(paths, in: context)
        }
    }

    /// `PUT /controllers/{name}/selectedObjects`: selects those of `objects` that are arranged (as Cocoa's
    /// `setSelectedObjects:`, others are left out); an object that does not exist is 404 `no-such-object`, and
    /// nothing changes. Answers the selected objects in their JSON form, as `selectedObjects(controller:)`.
    @discardableResult
    public func setSelectedObjects(_ objects: [ObjectID], controller name: String) throws -> (
        value: PropertyListValue, seq: Int64
    ) {
        let check = { (controller: Controller, view: ReadView) throws(ObjectGraphError) in
            if let missing = objects.first(where: { !view.contains($0) }) { throw .noSuchObject(missing) }
            if controller is ObjectController,
                Set(objects.filter(controller.content.contains)) != Set(controller.selectedObjects)
            {
                throw Self.fixedSelection("selectedObjects")
            }
        }
        return try changingSelection(name, checking: check, answering: Self.answering("selectedObjects")) {
            controller, context throws(ObjectGraphError) in
            try controller.setSelectedObjects(objects, in: context)
        }
    }

    /// Commits pending edits, then changes the selection and lets details follow; answers what `answer` reads of the
    /// controller as that change left it (a later read could show another client's change).
    /// `check` refuses the request before anything is committed (and again with the lock taken for the change).
    private func changingSelection<Answer: Sendable>(
        _ name: String, checking check: (Controller, ReadView) throws(ObjectGraphError) -> Void = { _, _ in },
        answering answer: (Controller, ControllerContext) throws -> Answer,
        _ change: (Controller, ControllerContext) throws(ObjectGraphError) -> Void
    ) throws -> Answer {
        try keepingAlive(name) {
            try session { _, context in try check(try context.controller(name), context.view) }
            return try afterCommittingEdits(of: name) { registry, context in
                let controller = try context.controller(name)
                try check(controller, context.view)
                try change(controller, context)
                Self.followMasters(registry, context: context)
                return try answer(controller, context)
            }
        }
    }

    /// A controller's state in a session's context, with the store seq it reflects.
    static func answeringState(_ controller: Controller, _ context: ControllerContext) -> (
        value: PropertyListValue, seq: Int64
    ) {
        (controller.state(in: context), context.view.seq)
    }

    /// Reads `key` of a controller in a session's context as the routes answer it (`selectedObjects`: the objects'
    /// JSON form, not KVC's references), with the store seq it reflects.
    static func answering(_ key: String) -> (Controller, ControllerContext) throws -> (
        value: PropertyListValue, seq: Int64
    ) {
        { controller, context in
            let view = context.view
            guard key == "selectedObjects" else {
                return (try controller.value(forKeyPath: key, in: context), view.seq)
            }
            return (.array(try controller.selectedObjects.map { try view.json(of: $0) }), view.seq)
        }
    }

    /// Commits the pending edits of `name` and its followers, then runs `change` in a session, unless edits came in
    /// meanwhile (another client's, after the commit was planned): they are committed first too, as many times as
    /// it takes (a few), rather than dropped by the change as edits of a selection that has gone.
    private func afterCommittingEdits<Answer: Sendable>(
        of name: String, _ change: (inout RegistryState, ControllerContext) throws -> Answer
    ) throws -> Answer {
        for attempt in 1...Self.commitAttempts {
            try commitEditsBeforeSelectionChange(name)
            let answer = try session { registry, context -> Answer? in
                let editing = ([name] + Self.followers(of: name, in: registry)).contains {
                    registry.controllers[$0]?.isEditing == true
                }
                if editing && attempt < Self.commitAttempts { return nil }
                return try change(&registry, context)
            }
            if let answer { return answer }
        }
        preconditionFailure("the last attempt answers")
    }

    private static let commitAttempts = 4

    /// Commits the pending edits of the controller's own editors, then those of every controller that follows it: a
    /// master's new selection gives its details new content, and their edits must not move to other objects.
    private func commitEditsBeforeSelectionChange(_ name: String) throws {
        try commitPendingEdits(
            of: { registry in [name] + Self.followers(of: name, in: registry) }, beforeSelectionChange: true)
    }

    /// The controllers whose content follows `name`, directly or through other controllers, masters first.
    private static func followers(of name: String, in registry: RegistryState) -> [String] {
        var following: Set<String> = [name]
        var result: [String] = []
        for candidate in registry.order {
            guard let master = registry.controllers[candidate]?.description.content.master, following.contains(master)
            else { continue }
            following.insert(candidate)
            result.append(candidate)
        }
        return result
    }

    // MARK: Arrangement

    /// `PUT /controllers/{name}/sortDescriptors`: re-arranges; keys that cannot be read on the content are refused.
    /// Answers the new `sortDescriptors` and the store seq the arrangement reflects.
    @discardableResult
    public func setSortDescriptors(_ descriptors: [SortDescriptor], controller name: String) throws -> (
        value: PropertyListValue, seq: Int64
    ) {
        try rearranging(name, key: .sortDescriptors) { description in description.sortDescriptors = descriptors }
    }

    /// `PUT /controllers/{name}/filterPredicate` (nil clears it): re-arranges; answers as `setSortDescriptors`.
    @discardableResult
    public func setFilterPredicate(_ predicate: ObjectGraph.Predicate?, controller name: String) throws -> (
        value: PropertyListValue, seq: Int64
    ) {
        try rearranging(name, key: .filterPredicate) { description in description.filterPredicate = predicate }
    }

    /// A new sort or filter may select other objects, so pending edits are committed first, as for a selection change.
    /// An object controller neither sorts nor filters: setting its `[]` or null again changes nothing (answered as
    /// read), another value is 422.
    private func rearranging(
        _ name: String, key: ControllerChange.Key, _ change: (inout ControllerDescription) -> Void
    ) throws -> (value: PropertyListValue, seq: Int64) {
        let check = { (controller: Controller) throws(ObjectGraphError) in
            guard controller is ArrayController || controller is TreeController else {
                throw ObjectGraphError(
                    status: 422, code: "validation-failed",
                    message: "An object controller neither sorts nor filters its content.",
                    fields: ["keyPath": .string(key.rawValue)])
            }
        }
        return try keepingAlive(name) {
            let unchanged = try session { _, context -> (value: PropertyListValue, seq: Int64)? in
                let controller = try context.controller(name)
                guard controller is ObjectController else { return nil }
                var description = controller.description
                change(&description)
                guard description != controller.description else {
                    return try Self.answering(key.rawValue)(controller, context)
                }
                try check(controller)
                return nil
            }
            if let unchanged { return unchanged }
            return try afterCommittingEdits(of: name) { registry, context in
                let controller = try context.controller(name)
                try check(controller)
                let old = controller.description
                // A tree that a new filter or sort would take past its node limit is refused, as at creation (one
                // that grew past it through model changes stays as it is).
                let wasTruncated = (controller as? TreeController)?.isTruncated ?? false
                change(&controller.description)
                do {
                    try controller.rearrangementDidChange(in: context)
                    if let tree = controller as? TreeController, tree.isTruncated, !wasTruncated {
                        throw tree.tooManyNodes
                    }
                } catch {
                    controller.description = old
                    try? controller.rearrangementDidChange(in: context)
                    throw error
                }
                context.emit(controller, key)
                Self.followMasters(registry, context: context)
                return try Self.answering(key.rawValue)(controller, context)
            }
        }
    }

    // MARK: Setting through the selection and editing

    /// `PUT /controllers/{name}/selection/{keyPath}`: sets the value on every selected object in one transaction;
    /// answers the key path's new value on the objects it was set on (also when the change moved them out of the
    /// selection), as that transaction left it, and the seq of its change (nil when it changed nothing).
    @discardableResult
    public func setSelectionValue(_ value: PropertyListValue, forKeyPath keyPath: String, controller name: String)
        throws -> (value: PropertyListValue, seq: Int64?)
    {
        try keepingAlive(name) {
            let (objects, usesMarker) = try session { _, context -> ([ObjectID], Bool) in
                let controller = try context.controller(name)
                guard controller.options.editable else { throw ObjectGraphError.notEditable(name) }
                let objects = controller.selectedObjects
                guard !objects.isEmpty else {
                    throw ObjectGraphError.actionDisabled("setValue", of: name, "nothing is selected.")
                }
                return (objects, controller.usesMultipleValuesMarker)
            }
            // Read in the transaction: a later read would show what other requests have written since.
            var answer = PropertyListValue.null
            let record = try transactionRunner { transaction in
                _ = try ModelEdit.setValues(objects: objects, edits: [PendingEdit(keyPath: keyPath, value: value)])
                    .apply(in: transaction)
                let view = transaction.view
                answer = try Controller.selectionValue(
                    keyPath, in: view, of: objects.filter { view.contains($0) },
                    alwaysUsesMultipleValuesMarker: usesMarker
                ).json
            }
            return (answer, record?.seq)
        }
    }

    /// `PUT /controllers/{name}/edits/{keyPath}`: records an editor's uncommitted value; the model is unchanged.
    @discardableResult
    public func setPendingEdit(_ value: PropertyListValue, forKeyPath keyPath: String, controller name: String)
        throws -> PropertyListValue
    {
        try session { _, context in
            let controller = try context.controller(name)
            guard controller.options.editable else { throw ObjectGraphError.notEditable(name) }
            // As for setting through the selection: an edit needs objects to go to, and a key path they have.
            guard let first = controller.selectedObjects.first else {
                throw ObjectGraphError.actionDisabled("edit", of: name, "nothing is selected.")
            }
            // An edit that no commit could apply (a derived key, a collection operator, a dictionary with a key of
            // API.md §1's tags, such as a marker) would block every later selection change of this controller and
            // its masters, as would a reference for an attribute. A value of another type is kept, as an editor
            // holds text its formatter has not accepted.
            let setsRelationship = try context.view.model.checkSettable(keyPath, on: first.entity)
            _ = try context.view.value(forKeyPath: keyPath, of: first)
            let references: ((String) -> Bool)? = setsRelationship ? { ObjectID.isReference($0) } : nil
            if let reserved = value.reservedKey(allowingReferences: references) {
                throw ObjectGraphError.typeMismatch(
                    keyPath, of: nil, "\(keyPath) may not hold a dictionary key \"\(reserved)\" starting with $.")
            }
            if controller.setPendingEdit(value, forKeyPath: keyPath) { context.emit(controller, .isEditing) }
            return controller.editsJSON
        }
    }

    /// `commitEditing`: validates and applies every pending edit of the controllers `names` to their selected objects
    /// in one transaction, then posts `ControllerDidCommitEditing` for each controller that had edits. On error (422
    /// with `errors`) nothing changes and every controller keeps its edits.
    ///
    /// Before a selection change, edits whose selection has gone (the content changed under them) are dropped, as
    /// an editor bound to an empty selection has nothing to commit: they must not keep the selection from changing.
    func commitPendingEdits(of names: [String]) throws {
        try commitPendingEdits(of: { _ in names }, beforeSelectionChange: false)
    }

    /// Commits the pending edits of every controller in one transaction (the document's `save` asks it first); on
    /// error (422 with `errors`) nothing changes. Edits whose selection has gone are dropped (nothing shows them).
    public func commitEditingOfAll() throws {
        try commitPendingEdits(of: { $0.controllers.keys.sorted() }, beforeSelectionChange: true)
    }

    /// Whether any controller has pending edits (the document's `revertToSaved` is enabled then).
    public var hasPendingEdits: Bool {
        (try? session { registry, _ in registry.controllers.values.contains { $0.isEditing } }) ?? false
    }

    /// Drops the pending edits of every controller (the document's `revertToSaved` asks it first).
    public func discardEditingOfAll() {
        try? session { registry, context in
            for controller in registry.controllers.values where controller.isEditing {
                controller.pendingEdits = []
                context.emit(controller, .isEditing)
            }
        }
    }

    private func commitPendingEdits(
        of names: (RegistryState) -> [String], beforeSelectionChange: Bool
    ) throws {
        try committing.withLock { _ throws in
            try commitPendingEditsNow(of: names, beforeSelectionChange: beforeSelectionChange)
        }
    }

    private func commitPendingEditsNow(
        of names: (RegistryState) -> [String], beforeSelectionChange: Bool
    ) throws {
        let plans = try session { registry, context in
            try Self.editPlans(of: names(registry), beforeSelectionChange: beforeSelectionChange, in: context)
        }
        guard !plans.isEmpty else { return }
        let record = try transact(plans).record
        try session(seq: record?.seq) { registry, context in
            if let record, record.seq > registry.lastProcessedSeq {
                Self.process(record, registry: &registry, context: context)
            }
            Self.didCommit(plans, record: record, registry: registry, context: context)
        }
    }

    /// What committing the pending edits of the controllers `names` changes (see `commitPendingEdits`). Edits whose
    /// selected objects are all in `removed` (about to be removed) are neither committed nor dropped here.
    private static func editPlans(
        of names: [String], beforeSelectionChange: Bool, sparing removed: Set<ObjectID> = [],
        in context: ControllerContext
    ) throws -> [EditPlan] {
        var plans: [EditPlan] = []
        for name in names {
            let controller = try context.controller(name)
            guard controller.isEditing else { continue }
            guard controller.options.editable else { throw ObjectGraphError.notEditable(name) }
            let objects = controller.selectedObjects
            guard !objects.isEmpty else {
                guard beforeSelectionChange else {
                    throw ObjectGraphError.actionDisabled(
                        "commitEditing", of: name, "nothing is selected to commit to.")
                }
                controller.pendingEdits = []
                context.emit(controller, .isEditing)
                continue
            }
            if !removed.isEmpty, objects.allSatisfy(removed.contains) { continue }
            let edits = controller.pendingEdits
            plans.append(
                EditPlan(name: name, edit: .setValues(objects: objects, edits: edits), objects: objects, edits: edits))
        }
        return plans
    }

    /// Applies the pending edits of `plans`, then `action`, in one transaction. An error with edits involved lists
    /// itself in `errors`, as a failed `commitEditing` does, each entry naming the `controller` whose pending edit
    /// it is (a master's selection change also commits its details' edits, and the client is told whose failed).
    private func transact(_ plans: [EditPlan], then action: ModelEdit? = nil) throws -> (
        created: ObjectID?, record: ChangeRecord?
    ) {
        do {
            return try transact(.sequence(plans.map(\.edit) + (action.map { [$0] } ?? [])))
        } catch let error as ObjectGraphError where !plans.isEmpty {
            var error = error.listingItself
            if case .array(let entries)? = error.fields["errors"] {
                error.fields["errors"] = .array(entries.map { Self.naming(plans, in: $0) })
            }
            throw error
        }
    }

    /// `entry` of a failed commit's `errors` with the `controller` whose pending edit of its object and key path it
    /// is, when one is: the last such plan, whose value the transaction applied over earlier ones (two controllers
    /// with edits of one object's key: the later one's value is the one checked).
    private static func naming(_ plans: [EditPlan], in entry: PropertyListValue) -> PropertyListValue {
        guard case .dictionary(var fields) = entry, let keyPath = fields["keyPath"]?.stringValue,
            let object = fields["object"]?.stringValue,
            let plan = plans.last(where: { plan in
                plan.edits.contains { $0.keyPath == keyPath } && plan.objects.contains { $0.description == object }
            })
        else { return entry }
        fields["controller"] = .string(plan.name)
        return .dictionary(fields)
    }

    /// After the commit of `plans`: each controller forgets the edits it committed and posts
    /// `ControllerDidCommitEditing`.
    private static func didCommit(
        _ plans: [EditPlan], record: ChangeRecord?, registry: RegistryState, context: ControllerContext
    ) {
        for plan in plans {
            guard let controller = registry.controllers[plan.name] else { continue }
            let wasEditing = controller.isEditing
            controller.forgetCommittedEdits(plan.edits)
            if wasEditing != controller.isEditing { context.emit(controller, .isEditing) }
            var userInfo: [String: PropertyListValue] = [
                "keyPaths": .array(plan.edits.map { .string($0.keyPath) }),
                "objects": .array(plan.objects.map { ["$ref": .string($0.description)] }),
            ]
            userInfo["seq"] = record.map { .integer($0.seq) }
            context.post(
                ControllerNotification(
                    name: "ControllerDidCommitEditing", object: "controllers/\(plan.name)",
                    userInfo: .dictionary(userInfo)))
        }
    }

    /// One controller's pending edits, as one commit applies them.
    private struct EditPlan {
        var name: String
        var edit: ModelEdit
        var objects: [ObjectID]
        var edits: [PendingEdit]
    }

    // MARK: Target-action

    /// Whether `action` is enabled now (NSUserInterfaceValidations); nil when the controller does not handle it.
    public func validate(_ action: String, controller name: String) -> Bool? {
        try? session { _, context -> Bool? in
            guard let controller = context.controllers[name] else { return nil }
            return controller.validate(action)
        }
    }

    /// `POST /controllers/{name}/{action}`: performs a target-action method; answers the controller's state.
    ///
    /// `add`, `insert`, `addChild`, `insertChild` take an optional body `{"object": {...values}}` (and `"index"` for
    /// `insert` and `insertChild`). A disabled action is 409 `action-disabled`; one this controller does not have 404
    /// `not-found`.
    @discardableResult
    public func perform(_ action: String, controller name: String, body: PropertyListValue? = nil) throws
        -> PropertyListValue
    {
        try performAction(action, controller: name, body: body).value
    }

    /// `perform(_:controller:body:)`, with the store seq the answered state reflects (the session that made it: a
    /// later read could show other clients' changes).
    public func performAction(_ action: String, controller name: String, body: PropertyListValue? = nil) throws
        -> (value: PropertyListValue, seq: Int64)
    {
        let (enabled, handled) = try session { _, context -> (Bool?, [String]) in
            let controller = try context.controller(name)
            return (controller.validate(action), Self.actions.filter { controller.validate($0) != nil })
        }
        guard let enabled else {
            throw ObjectGraphError(
                status: 404, code: "not-found",
                message:
                    "The controller \"\(name)\" has no action \"\(action)\"; it has \(handled.joined(separator: ", ")).",
                fields: ["allowed": .array(handled.map { .string($0) })])
        }
        switch action {
        case "commitEditing":
            return try keepingAlive(name) {
                try commitPendingEdits(of: [name])
                return try state(of: name)
            }
        case "discardEditing":
            return try session { _, context in
                let controller = try context.controller(name)
                if controller.isEditing {
                    controller.pendingEdits = []
                    context.emit(controller, .isEditing)
                }
                return Self.answeringState(controller, context)
            }
        case "selectNext", "selectPrevious":
            guard enabled else {
                throw ObjectGraphError.actionDisabled(
                    action, of: name, "there is no \(action == "selectNext" ? "next" : "previous") object.")
            }
            // The row next to the first selected one as the client sees them now (NSArrayController's index + 1),
            // found again after the pending edits are committed: an edited sort key may move objects. The object
            // there is followed when it is not selected itself (it is what the edits leave in place); else the index.
            let step = action == "selectNext" ? 1 : -1
            let target = try session { _, context -> (index: Int, object: ObjectID?)? in
                guard let array = try context.controller(name) as? ArrayController,
                    let first = array.selectionIndexes.first, array.arranged.indices.contains(first + step)
                else { return nil }
                let neighbour = array.arranged[first + step]
                return (first + step, array.selectedObjects.contains(neighbour) ? nil : neighbour)
            }
            return try changingSelection(name, answering: Self.answeringState) {
                controller, context throws(ObjectGraphError) in
                guard let array = controller as? ArrayController, let first = array.selectionIndexes.first else {
                    return
                }
                let index =
                    target?.object.flatMap { array.arranged.firstIndex(of: $0) } ?? target?.index ?? first + step
                array.selectIndexes([index], in: context)
            }
        case "rearrangeObjects", "fetch":
            return try session { registry, context in
                let controller = try context.controller(name)
                if action == "fetch" {
                    controller.update(.full, in: context)
                }
                try controller.rearrangementDidChange(in: context)
                Self.followMasters(registry, context: context)
                return Self.answeringState(controller, context)
            }
        default:
            guard enabled else {
                throw ObjectGraphError.actionDisabled(action, of: name, "the controller cannot \(action) now.")
            }
            return try keepingAlive(name) {
                try committing.withLock { _ throws in try insertOrRemove(action, controller: name, body: body) }
            }
        }
    }

    /// `add`, `insert`, `addChild`, `insertChild`, `remove`: plan, transact, finish.
    ///
    /// An action that moves the selection (`Controller.changesSelection(by:)`) commits the pending edits of the
    /// controller and of the controllers following it (whose content moves with it) in the same transaction, before
    /// it, as a selection change commits them first: if the edits or the action fail (422 with every error, or the
    /// action's own error) nothing changes, and the edits and the selection are kept.
    /// `remove` commits only the edits of objects that survive it: those whose objects are all removed are dropped
    /// with them, as Cocoa discards the editors bound to removed objects (so they never keep an object from being
    /// removed); edits of a controller that follows the one removing, for other objects, are committed.
    private func insertOrRemove(_ action: String, controller name: String, body: PropertyListValue?) throws
        -> (value: PropertyListValue, seq: Int64)
    {
        let values: [String: PropertyListValue]
        switch body?["object"] ?? .null {
        case .null: values = [:]
        case .dictionary(let dictionary): values = dictionary
        default:
            throw ObjectGraphError(
                status: 422, code: "type-mismatch", message: "\"object\" is a JSON object of the new object's keys.",
                fields: ["keyPath": "object"])
        }
        var requestedIndex: Int?
        if let index = body?["index"] {
            guard let value = index.integerValue, value >= 0 else {
                throw ObjectGraphError(
                    status: 422, code: "type-mismatch", message: "\"index\" is a non-negative integer.",
                    fields: ["keyPath": "index"])
            }
            requestedIndex = Int(value)
        }
        let (edits, plan) = try session { registry, context -> ([EditPlan], InsertionPlan) in
            let controller = try context.controller(name)
            let plan = try controller.plan(action, values: values, index: requestedIndex, in: context)
            var edits: [EditPlan] = []
            if controller.changesSelection(by: action) {
                edits = try Self.editPlans(
                    of: [name] + Self.followers(of: name, in: registry), beforeSelectionChange: true,
                    sparing: action == "remove" ? Set(controller.selectedObjects) : [], in: context)
            }
            if plan.places { controller.ownInsertions += 1 }
            return (edits, plan)
        }
        defer {
            if plan.places {
                _ = try? session { _, context in
                    if let controller = context.controllers[name] {
                        controller.ownInsertions = max(0, controller.ownInsertions - 1)
                    }
                }
            }
        }
        let (created, record) = try transact(edits, then: plan.edit)
        return try session(seq: record?.seq) { registry, context in
            if let record, record.seq > registry.lastProcessedSeq {
                Self.process(record, registry: &registry, context: context)
            }
            Self.didCommit(edits, record: record, registry: registry, context: context)
            let controller = try context.controller(name)
            if let created { controller.didInsert(created, plan: plan, in: context) }
            Self.followMasters(registry, context: context)
            return Self.answeringState(controller, context)
        }
    }
}

/// What an insertion or removal action will do, planned under the lock.
struct InsertionPlan: Sendable {
    var action: String
    var edit: ModelEdit
    /// Where `insert` puts the new object among the arranged objects.
    var arrangedIndex: Int?
    /// The arranged objects on either side of `arrangedIndex`: where the object goes once the insertion has cleared
    /// the filter (`clearsFilterPredicateOnInsertion`) and objects the client did not see came in between.
    var arrangedNeighbors: (before: ObjectID?, after: ObjectID?) = (nil, nil)
    /// Tree controllers: where the new node goes among its siblings.
    var placement: TreeController.Placement?

    /// The action places its object itself (an array's `insert`, a tree's insertions), unsorted.
    var places: Bool { placement != nil || arrangedIndex != nil }
}

extension ModelEdit {
    /// The objects a `setValues` edit changes.
    var objects: [ObjectID] {
        if case .setValues(let objects, _) = self { return objects }
        return []
    }
}
