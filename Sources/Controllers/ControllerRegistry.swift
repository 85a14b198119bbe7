import Dispatch
import Glibc
import ObjectGraph
import PropertyList
import Synchronization

/// Every controller of the service, behind one lock: the core of `/controllers` (API.md §5).
///
/// Thread rules: HTTP handlers call in from many threads. The registry's lock is taken only through `withLock`, and
/// inside it the store's read lock (lock order: registry, then store; nothing takes them the other way round).
/// A transaction never runs with the registry's lock held: a mutating request plans under the lock, releases it,
/// runs one transaction through `transact` (the document's `transaction`, so journal, undo and feeds see it), and then
/// finishes under the lock again. Change reports and notifications are queued under the lock and delivered in that
/// order on the registry's own serial queue, so no request thread is kept delivering other requests' reports.
///
/// Controllers follow their content: every committed record and every selection change of a master re-reads the
/// content bindings, masters before details. `storeDidCommit` only queues the record (it runs on the committing
/// thread, under the store's lock, right after the commit: the document's commit capture); the records are applied in
/// seq order by the next session (every read and write through the registry starts by applying them under the store's
/// lock, so answers always reflect the model the session reads), or by the registry's queue soon after.
public final class ControllerRegistry: Sendable {
    /// Runs `body` as one transaction of the document and answers its change record (nil when nothing changed).
    public typealias TransactionRunner = @Sendable (_ body: (Transaction) throws -> Void) throws -> ChangeRecord?

    public let store: ObjectStore
    let transactionRunner: TransactionRunner
    private let appliesRecordsInBackground: Bool
    /// Controllers created at run time (`POST /controllers`) that may exist at once; declared ones do not count.
    /// Every controller follows every commit, so the limit bounds both memory and the work per commit.
    public let runtimeControllerLimit: Int
    /// The objects the run-time controllers may hold together when one is created (at least twice the store's
    /// objects): each follows every commit, so this bounds their memory and work per commit by size, as the count
    /// limit does by number (400 controllers over 10,000 employees held other writes 10–13 s at each re-sort).
    public let runtimeContentLimit: Int
    private let state = Mutex(RegistryState())
    /// Held from planning a commit of pending edits (`commitEditing`, an action that commits them) to its end: two
    /// clients committing at once would both plan the same edits and apply them twice.
    let committing = Mutex(())
    /// Committed records not yet applied to the controllers, in seq order.
    private let inbox = Mutex<[ChangeRecord]>([])
    /// Whether the registry holds any controller (kept by every session, read by `storeDidCommit`).
    private let hasControllers = Atomic<Bool>(false)
    /// How many controllers the registry holds, and the most objects one of them arranges (kept by every session):
    /// read without waiting for the lock.
    private let controllerCount = Atomic<Int>(0)
    private let largestSize = Atomic<Int>(0)
    /// Records queued without a background pass while there is no controller, at most.
    private static let idleInboxLimit = 1024
    /// Applies queued records and delivers reports, in order, off the request threads.
    private let queue = DispatchQueue(label: "bindery.controllers")
    private let hooks = Mutex(Hooks())
    /// Seconds on a clock that only goes forward: when controllers were last named (`idleTimeout`).
    private let clock: @Sendable () -> Double
    /// Removes idle controllers every second (`removeIdleControllers`). Set once in `init`; a dispatch source is
    /// safe to use from any thread.
    nonisolated(unsafe) private let idleTimer: any DispatchSourceTimer

    struct RegistryState {
        var controllers: [String: Controller] = [:]
        /// Controller names, masters before their details.
        var order: [String] = []
        /// The highest record seq processed.
        var lastProcessedSeq: Int64 = 0
        /// How many requests are using each controller across sessions (`keepingAlive`): not dropped as idle.
        var requestsInFlight: [String: Int] = [:]
        /// Controllers a removal waits to drop (`remove(named:force:)`): new requests on them are 404 meanwhile.
        var removing: Set<String> = []
    }

    private enum Outgoing: Sendable {
        case change(ControllerChange)
        case notification(ControllerNotification)
    }

    private struct Hooks {
        var nextToken = 0
        var observers: [(token: Int, observer: @Sendable (ControllerChange) -> Void)] = []
        var onNotification: (@Sendable (String, String?, PropertyListValue) -> Void)?
    }

    /// A registry over `store`; `transact` runs a transaction (pass the document's: `{ try document.transaction($0)
    /// .record }`), and the document must call `storeDidCommit(_:)` under the store's lock right after each commit (its
    /// commit capture; a commit observer, told later, would let a session read objects whose change is not queued).
    ///
    /// With `appliesRecordsInBackground` false, queued records are applied only by the next session or
    /// `synchronize()` (benchmarks use it to time the controllers' work alone).
    ///
    /// `clock` tells the seconds `idleTimeout` counts (tests pass their own).
    public init(
        store: ObjectStore, appliesRecordsInBackground: Bool = true, runtimeControllerLimit: Int = 1_000,
        runtimeContentLimit: Int = 1_000_000,
        clock: @escaping @Sendable () -> Double = ControllerRegistry.uptime, transact: @escaping TransactionRunner
    ) {
        self.store = store
        self.appliesRecordsInBackground = appliesRecordsInBackground
        self.runtimeControllerLimit = runtimeControllerLimit
        self.runtimeContentLimit = runtimeContentLimit
        self.transactionRunner = transact
        self.clock = clock
        idleTimer = DispatchSource.makeTimerSource(queue: queue)
        state.withLock { $0.lastProcessedSeq = store.seq }
        idleTimer.schedule(deadline: .now() + 1, repeating: 1, leeway: .milliseconds(200))
        idleTimer.setEventHandler { [weak self] in self?.removeIdleControllers() }
        idleTimer.resume()
    }

    deinit {
        idleTimer.cancel()
    }

    /// Seconds since boot (`CLOCK_MONOTONIC`, through Dispatch): never goes back.
    @Sendable public static func uptime() -> Double {
        Double(DispatchTime.now().uptimeNanoseconds) / 1e9
    }

    // MARK: Observing

    /// Calls `observer` with every change of a controller's state; answers a token for `removeObserver`.
    @discardableResult
    public func addObserver(_ observer: @escaping @Sendable (ControllerChange) -> Void) -> Int {
        hooks.withLock { hooks in
            hooks.nextToken += 1
            hooks.observers.append((hooks.nextToken, observer))
            return hooks.nextToken
        }
    }

    public func removeObserver(_ token: Int) {
        hooks.withLock { $0.observers.removeAll { $0.token == token } }
    }

    /// Receives the notifications controllers post (`ControllerDidCommitEditing`): name, object, userInfo.
    public var onNotification: (@Sendable (String, String?, PropertyListValue) -> Void)? {
        get { hooks.withLock { $0.onNotification } }
        set { hooks.withLock { $0.onNotification = newValue } }
    }

    /// Queues a committed record for the controllers (cheap; see the type's comment).
    public func storeDidCommit(_ record: ChangeRecord) {
        // One background pass per batch: a pass is scheduled when the inbox stops being empty, and it (or any
        // session before it) takes everything queued by then. Without controllers there is nothing to bring up to
        // date, so no pass is scheduled until `idleInboxLimit` records wait (a stream of commits then wakes nobody);
        // the session that adds the first controller schedules one for what is left.
        let schedules = inbox.withLock { inbox in
            inbox.append(record)
            return hasControllers.load(ordering: .relaxed) ? inbox.count == 1 : inbox.count == Self.idleInboxLimit
        }
        if appliesRecordsInBackground && schedules { queue.async { self.synchronize() } }
    }

    /// Applies the queued committed records to the controllers now.
    public func synchronize() {
        let done = state.withLock { registry in
            // No controller: nothing to re-read, so the store's lock is left alone.
            guard registry.controllers.isEmpty else { return false }
            if let last = takeInbox().last { registry.lastProcessedSeq = max(registry.lastProcessedSeq, last.seq) }
            return true
        }
        if !done { _ = try? session { _, _ in } }
    }

    /// Re-reads every controller's content from the store as it is now, dropping the queued records: for a store that
    /// went back to an earlier state without change records (the rollback of a journal flush that failed), so that
    /// no controller keeps objects or values the store no longer has.
    public func storeWasRestored() {
        _ = takeInbox()
        _ = try? session { registry, context in
            registry.lastProcessedSeq = context.view.seq
            for name in registry.order { registry.controllers[name]?.update(.full, in: context) }
            Self.followMasters(registry, context: context)
        }
    }

    private func takeInbox() -> [ChangeRecord] {
        inbox.withLock { $0.takeAll() }
    }

    // MARK: Sessions

    /// Runs `body` under the registry's lock with a read view of the store, then delivers what it reported.
    func session<T: Sendable>(
        seq: Int64? = nil, _ body: (inout RegistryState, ControllerContext) throws -> T
    ) throws -> T {
        var needsPass = false
        defer {
            if needsPass && appliesRecordsInBackground { queue.async { self.synchronize() } }
        }
        return try state.withLock { (registry: inout RegistryState) throws -> T in
            defer {
                controllerCount.store(registry.controllers.count, ordering: .relaxed)
                largestSize.store(registry.controllers.values.reduce(0) { max($0, $1.size) }, ordering: .relaxed)
                // The first controller: records queued while there was none get a pass (see `storeDidCommit`).
                let has = !registry.controllers.isEmpty
                if has != hasControllers.exchange(has, ordering: .relaxed), has {
                    needsPass = inbox.withLock { !$0.isEmpty }
                }
            }
            return try store.read { view throws -> T in
                let context = ControllerContext(view: view, controllers: registry.controllers, seq: seq)
                context.now = clock()
                defer { enqueue(context) }
                let records = takeInbox()
                // The registry's own work, whatever key-path allowance the caller's read runs within; derived keys
                // read by many objects (a sort by `department.payroll`) evaluated once per object under this read.
                _ = KeyPathAllowance.caching {
                    for (index, record) in records.enumerated() {
                        context.seq = record.seq
                        context.recordIsLatest = index == records.count - 1
                        Self.process(record, registry: &registry, context: context)
                    }
                }
                context.seq = seq
                context.recordIsLatest = true
                return try KeyPathAllowance.cachingOutsideAnyAllowance { try body(&registry, context) }
            }
        }
    }

    /// Runs one transaction through the document, without the registry's lock; answers the created object.
    func transact(_ edit: ModelEdit) throws -> (created: ObjectID?, record: ChangeRecord?) {
        var created: ObjectID?
        let record = try transactionRunner { transaction in created = try edit.apply(in: transaction) }
        return (created, record)
    }

    /// Brings every controller up to date with `record` (masters first), once per record.
    static func process(_ record: ChangeRecord, registry: inout RegistryState, context: ControllerContext) {
        registry.lastProcessedSeq = max(registry.lastProcessedSeq, record.seq)
        for name in registry.order { registry.controllers[name]?.update(.record(record), in: context) }
        for name in registry.order { registry.controllers[name]?.dropEditsOfAnotherSelection(in: context) }
    }

    /// Lets details follow their masters' selections (after any selection change).
    static func followMasters(_ registry: RegistryState, context: ControllerContext) {
        for name in registry.order { registry.controllers[name]?.update(.masters, in: context) }
        for name in registry.order { registry.controllers[name]?.dropEditsOfAnotherSelection(in: context) }
    }

    /// Queues the context's reports for delivery on the registry's queue (called under the lock, so in order).
    private func enqueue(_ context: ControllerContext) {
        guard !context.changes.isEmpty || !context.notifications.isEmpty else { return }
        let batch = context.changes.map(Outgoing.change) + context.notifications.map(Outgoing.notification)
        queue.async { self.deliver(batch) }
    }

    private func deliver(_ batch: [Outgoing]) {
        let (observers, onNotification) = hooks.withLock { ($0.observers.map(\.observer), $0.onNotification) }
        for item in batch {
            switch item {
            case .change(let change): for observer in observers { observer(change) }
            case .notification(let note): onNotification?(note.name, note.object, note.userInfo)
            }
        }
    }

    /// Waits until every report queued so far was delivered (before a poll of an observer, for tests and orderly
    /// shutdown). Must not be called on the registry's queue, nor by an observer of its reports.
    public func waitUntilDelivered() {
        queue.sync {}
        queue.sync {}
    }

    // MARK: Creating and removing

    /// Creates a controller (`POST /controllers`); answers its state.
    ///
    /// Errors: 409 `conflict` for a name in use, 404 `no-such-entity` for entity mode over an unknown entity,
    /// 404 `no-such-controller` for a binding to an unknown controller, 400 `bad-controller` for a children key path
    /// that is not a to-many of the content, the errors of evaluating the filter or sort keys on the content, and 503
    /// `too-many-controllers` (with `limit`) when `runtimeControllerLimit` run-time controllers exist already.
    @discardableResult
    public func create(_ description: ControllerDescription, declared: Bool = false) throws -> PropertyListValue {
        if declared, description.idleTimeout != nil {
            throw ControllerDescription.bad(
                "\"idleTimeout\" is for controllers created at run time (POST /controllers).", field: "idleTimeout")
        }
        return try session { registry, context in
            guard registry.controllers[description.name] == nil else {
                throw ObjectGraphError(
                    status: 409, code: "conflict", message: "A controller \"\(description.name)\" exists already.",
                    fields: ["controller": .string(description.name)])
            }
            if !declared && registry.controllers.values.count(where: { !$0.isDeclared }) >= runtimeControllerLimit {
                throw ObjectGraphError(
                    status: 503, code: "too-many-controllers",
                    message: "\(runtimeControllerLimit) controllers created at run time exist already; "
                        + "delete one (DELETE /controllers/{name}) first.",
                    fields: ["limit": .integer(Int64(runtimeControllerLimit))])
            }
            if case .entity(let entity) = description.content, context.model.entity(named: entity) == nil {
                throw ObjectGraphError.noSuchEntity(entity)
            }
            if let master = description.content.master, registry.controllers[master] == nil {
                throw ObjectGraphError.noSuchController(master)
            }
            try Self.checkContentKeyPath(
                description.content, of: description.kind, controllers: registry.controllers, model: context.model)
            // A run-time binding to an object that does not exist is most likely a mistyped id: 404, as for an
            // unknown entity. A declared one stays (its object may have been deleted since the fixture was written).
            if !declared, case .object(let object, _) = description.content, !context.view.contains(object) {
                throw ObjectGraphError.noSuchObject(object)
            }
            let controller: Controller
            switch description.kind {
            case .object: controller = ObjectController(description: description, isDeclared: declared)
            case .array: controller = ArrayController(description: description, isDeclared: declared)
            case .tree: controller = TreeController(description: description, isDeclared: declared)
            }
            let scoped = ControllerContext(
                view: context.view, controllers: registry.controllers.merging([(description.name, controller)]) { $1 },
                seq: nil)
            // A declared controller is checked against the model, not against what the store holds, which may have
            // changed since the fixture was written: a start is never refused for it. It is then as one whose
            // content changed so: a filter that fails on an object leaves it out, a tree past the node limit shows
            // no children where they would pass it. One created at run time is first arranged under a limit for all
            // the `MATCHES` and `LIKE` matches of its filter (without, a filter that backtracks on every object held
            // the store for 42 s over 20,000 before the check refused it), then checked as one whose filter is set is
            // (under a limit of its own), and arranged again when the first limit cut the arrangement short.
            var cut = false
            if declared {
                controller.update(.full, in: scoped)
            } else {
                RegularExpression.withTotalLimit {
                    controller.update(.full, in: scoped)
                    cut = RegularExpression.isTotalLimitReached
                }
            }
            if let array = controller as? ArrayController {
                try array.checkArrangement(ordering: array.ordering, view: context.view, checkingContent: !declared)
                if cut { array.rearrange(in: scoped) }
            }
            if let tree = controller as? TreeController {
                try tree.checkDeclaration(model: context.model)
                try tree.checkArrangement(ordering: tree.ordering, view: context.view, checkingContent: !declared)
                if cut { tree.rearrange(in: scoped) }
                if tree.isTruncated && !declared { throw tree.tooManyNodes }
            }
            if !declared {
                let limit = max(runtimeContentLimit, 2 * context.view.objectCount)
                let held = registry.controllers.values.reduce(0) { $0 + ($1.isDeclared ? 0 : $1.content.count) }
                if held + controller.content.count > limit {
                    throw ObjectGraphError(
                        status: 503, code: "too-many-controllers",
                        message: "The controllers created at run time hold \(held) objects, and this one would hold "
                            + "\(controller.content.count): more than \(limit) together; delete one first.",
                        fields: [
                            "limit": .integer(Int64(runtimeControllerLimit)), "objectLimit": .integer(Int64(limit)),
                        ])
                }
            }
            controller.lastUsed = context.now
            registry.controllers[description.name] = controller
            registry.order.append(description.name)
            context.emit(controller, .controller)
            return controller.state(in: scoped)
        }
    }

    /// 404 `no-such-entity` for content naming an object of an entity the model does not have, 404 `undefined-key`
    /// for a content key path that names a key its objects do not have (a key path bound in Cocoa raises
    /// `valueForUndefinedKey:`), for an object controller 400 `bad-binding` when the key path reaches a to-many
    /// relationship or an attribute (its content is one object, or a selection's objects), and for an array or tree
    /// controller 400 `bad-binding` when the model tells that it gives no objects (values, or a collection per
    /// object), which would leave it silently empty. For an object controller the key path is followed through
    /// relationships and derived keys; what comes after an attribute or a collection operator is left to the key
    /// path's evaluation.
    static func checkContentKeyPath(
        _ content: ContentBinding, of kind: ControllerDescription.Kind, controllers: [String: Controller],
        model: ObjectModel
    ) throws(ObjectGraphError) {
        func notOneObject(_ reason: String) -> ObjectGraphError {
            ObjectGraphError(
                status: 400, code: "bad-binding",
                message: "An object controller's content is one object: \"\(content)\" \(reason); bind an array "
                    + "controller to it instead.",
                fields: ["content": .string(content.description)])
        }
        var entity: String?
        let keyPath: String
        switch content {
        case .object(let object, let path):
            guard model.entity(named: object.entity) != nil else { throw .noSuchEntity(object.entity) }
            guard let path else { return }
            (entity, keyPath) = (object.entity, path)
        case .selection(let master, let path?):
            (entity, keyPath) = (controllers[master]?.contentEntity, path)
        default:
            return
        }
        let keys = keyPath.split(separator: ".").map(String.init)
        if let last = keys.last, last.hasPrefix("@"), last != "@count" {
            throw ObjectGraphError.operatorWithoutKeyPath(last, in: keyPath)
        }
        if kind != .object {
            guard let entity else { return }
            func notObjects(_ reason: String) -> ObjectGraphError {
                ObjectGraphError(
                    status: 400, code: "bad-binding",
                    message: "An array or tree controller arranges objects: \"\(content)\" \(reason).",
                    fields: ["content": .string(content.description)])
            }
            switch try model.yield(of: keyPath, from: entity) {
            case .values:
                throw notObjects("gives values, not objects")
            case .collections:
                throw notObjects(
                    "gives a collection of objects per object; flatten them with @distinctUnionOfArrays or "
                        + "@unionOfArrays (employees.@distinctUnionOfArrays.directReports)")
            case .objects:
                return
            }
        }
        // An object controller's: a derived key is followed through its own key path (`departmentName` is
        // `department.name`, an attribute); the model has no cycles of derived keys, and the steps are bounded anyway.
        var pending = keys[...]
        var steps = 0
        while let key = pending.popFirst(), steps < 1_000 {
            steps += 1
            guard let name = entity, let description = model.entity(named: name), !key.hasPrefix("@") else { return }
            if let relationship = description.relationship(named: key) {
                if relationship.isToMany { throw notOneObject("reaches the to-many \(key)") }
                entity = relationship.destination
            } else if let derived = description.derivedKeys.first(where: { $0.name == key }) {
                pending = derived.keyPath.split(separator: ".").map(String.init) + pending
            } else if description.hasKey(key) {
                throw notOneObject("reaches the attribute \(key)")
            } else {
                throw ObjectGraphError.undefinedKey(key, entity: name)
            }
        }
    }

    /// Creates a controller from its JSON declaration.
    @discardableResult
    public func create(json: PropertyListValue, declared: Bool = false) throws -> PropertyListValue {
        try create(try ControllerDescription(json: json), declared: declared)
    }

    /// Creates the controllers of a `controllers.json` document `{"controllers": [...]}`, masters before details
    /// whatever their order in the file; all of them or none (the created ones are removed on error).
    ///
    /// An error names the entry at fault (`controllers[2] "employees": ...`); two entries with one name are
    /// 400 `bad-controller`.
    public func loadDeclarations(json: PropertyListValue) throws {
        guard case .array(let entries)? = json["controllers"] else {
            throw ControllerDescription.bad("controllers.json is {\"controllers\": [...]}.", field: "controllers")
        }
        var pending: [(entry: String, description: ControllerDescription)] = []
        var entriesByName: [String: String] = [:]
        for (index, json) in entries.enumerated() {
            var entry = "controllers[\(index)]"
            if case .string(let name)? = json["name"] { entry += " \"\(name)\"" }
            let description = try Self.naming(entry) { try ControllerDescription(json: json) }
            if let first = entriesByName[description.name] {
                throw ControllerDescription.bad(
                    "\(entry): the name \"\(description.name)\" is declared already by \(first).", field: "name")
            }
            entriesByName[description.name] = entry
            pending.append((entry, description))
        }
        var created: [String] = []
        do {
            while !pending.isEmpty {
                let known = Set(names)
                let ready = pending.filter { $0.description.content.master.map(known.contains) ?? true }
                let next = ready.first ?? pending[0]
                try Self.naming(next.entry) { try create(next.description, declared: true) }
                created.append(next.description.name)
                pending.removeAll { $0.description.name == next.description.name }
            }
        } catch {
            for name in created.reversed() { try? remove(named: name, force: true) }
            throw error
        }
    }

    /// Runs `body`, putting `entry` before the message of the `ObjectGraphError` it throws.
    @discardableResult
    private static func naming<T>(_ entry: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as ObjectGraphError {
            var failure = error
            failure.message = "\(entry): \(error.message)"
            throw failure
        }
    }

    /// Removes a controller created at run time (`DELETE /controllers/{name}`).
    ///
    /// A declared controller (from `controllers.json`) is refused with 409 `conflict`, as is a controller that
    /// others follow.
    ///
    /// A request under way on the controller (between the sessions around its commit, `keepingAlive`) ends first:
    /// removed under it, it would answer 404 for a change it made. Requests that come meanwhile are 404
    /// `no-such-controller`, as after the removal (a stream of them kept a removal waiting for up to 27 s), and
    /// one still under way after `removalWait` seconds does not hold it longer.
    public func remove(named name: String, force: Bool = false) throws {
        let deadline = DispatchTime.now() + Self.removalWait
        do {
            while try !removeUnlessInUse(name, force: force, mayWait: DispatchTime.now() < deadline) {
                usleep(1_000)
            }
        } catch {
            _ = try? session { registry, _ in registry.removing.remove(name) }
            throw error
        }
    }

    static let removalWait = 10.0

    /// One try of `remove(named:force:)`: false when the controller is in use and may still be waited for.
    private func removeUnlessInUse(_ name: String, force: Bool, mayWait: Bool) throws -> Bool {
        try session { registry, context in
            let controller = try context.controller(name)
            if controller.isDeclared && !force {
                throw ObjectGraphError(
                    status: 409, code: "conflict",
                    message: "\"\(name)\" is declared in controllers.json and cannot be removed.",
                    fields: ["controller": .string(name)])
            }
            if let detail = Self.follower(of: name, in: registry) {
                throw ObjectGraphError(
                    status: 409, code: "conflict", message: "\"\(detail)\" follows \"\(name)\"; remove it first.",
                    fields: ["controller": .string(name)])
            }
            if registry.requestsInFlight[name] != nil, mayWait {
                registry.removing.insert(name)
                return false
            }
            registry.removing.remove(name)
            Self.drop(controller, from: &registry, context: context)
            return true
        }
    }

    /// Removes the controllers created with an `idleTimeout` that no request has named for that long, details before
    /// their masters (a master that a controller still here follows stays); answers their names. Runs every second.
    @discardableResult
    public func removeIdleControllers() -> [String] {
        guard state.withLock({ $0.controllers.values.contains { $0.description.idleTimeout != nil } }) else {
            return []
        }
        return
            (try? session { registry, context in
                var removed: [String] = []
                for name in registry.order.reversed() {
                    guard let controller = registry.controllers[name], let timeout = controller.description.idleTimeout,
                        context.now - controller.lastUsed >= timeout, registry.requestsInFlight[name] == nil,
                        Self.follower(of: name, in: registry) == nil
                    else { continue }
                    Self.drop(controller, from: &registry, context: context)
                    removed.append(name)
                }
                return removed
            }) ?? []
    }

    /// Runs `body` — a request's sessions and the commit between them — with the controller `name` kept from being
    /// dropped as idle (a request that committed must find its controller again to answer); it counts as used when
    /// `body` ends. 404 `no-such-controller` when there is none.
    func keepingAlive<T>(_ name: String, _ body: () throws -> T) throws -> T {
        try session { registry, context in
            _ = try context.controller(name)
            guard !registry.removing.contains(name) else { throw ObjectGraphError.noSuchController(name) }
            registry.requestsInFlight[name, default: 0] += 1
        }
        defer {
            _ = try? session { registry, context in
                let count = (registry.requestsInFlight[name] ?? 1) - 1
                registry.requestsInFlight[name] = count > 0 ? count : nil
                registry.controllers[name]?.lastUsed = context.now
            }
        }
        return try body()
    }

    /// The first controller that follows `name` (its content binds to `@name`), if any.
    private static func follower(of name: String, in registry: RegistryState) -> String? {
        registry.order.first { registry.controllers[$0]?.description.content.master == name }
    }

    private static func drop(_ controller: Controller, from registry: inout RegistryState, context: ControllerContext) {
        registry.controllers[controller.name] = nil
        registry.order.removeAll { $0 == controller.name }
        context.emit(controller, .controller)
    }

    // MARK: Reading

    /// The controllers' names, masters before details.
    public var names: [String] {
        state.withLock { $0.order }
    }

    /// How many controllers there are, as the last session left them, without waiting for one in progress (for
    /// `/metrics`, which a long re-arrangement must not hold).
    public var count: Int {
        controllerCount.load(ordering: .relaxed)
    }

    /// Whether there is no controller, as the last session left them (without waiting for one in progress).
    public var isEmpty: Bool {
        count == 0
    }

    /// The most objects one controller arranges (a tree: its nodes), as the last session left them, without waiting
    /// for one in progress: whether requests may hold the lock long.
    public var largestControllerSize: Int {
        largestSize.load(ordering: .relaxed)
    }

    /// Whether the controller exists.
    public func contains(_ name: String) -> Bool {
        state.withLock { $0.controllers[name] != nil }
    }

    /// How many objects the controller's selection holds: whether to answer it off the request threads.
    public func selectionCount(controller name: String) throws -> Int {
        try session { _, context in try context.controller(name).selectionCount }
    }

    /// `GET /controllers/{name}`, with the store seq the answer reflects.
    public func state(of name: String) throws -> (value: PropertyListValue, seq: Int64) {
        try session { _, context in Self.answeringState(try context.controller(name), context) }
    }

    /// `GET /controllers`: every controller's state, masters first.
    public func states() -> (value: [PropertyListValue], seq: Int64) {
        (try? session { registry, context in
            (registry.order.compactMap { registry.controllers[$0]?.state(in: context) }, context.view.seq)
        }) ?? ([], store.seq)
    }

    /// KVC on a controller: `arrangedObjects[.keyPath]` (references, or KVC over them), `selectedObjects[.keyPath]`,
    /// `selection[.keyPath]` (a value or a `{"$marker"}`; without a key path, a dictionary of every key),
    /// `selectionIndexes`, `selectionIndexPaths`, `count`, `content`, `contentObject`, `isEditing`, `edits`, `canAdd`,
    /// `canInsert`, `canRemove`, `canSelectNext`, `canSelectPrevious`, `sortDescriptors`, `filterPredicate`, and the
    /// options. 404 `no-such-controller`, 404 `undefined-key` for another key.
    public func value(forKeyPath keyPath: String, controller name: String) throws -> PropertyListValue {
        try valueAndSeq(forKeyPath: keyPath, controller: name).value
    }

    /// `value(forKeyPath:controller:)` with the store seq the answer reflects.
    public func valueAndSeq(forKeyPath keyPath: String, controller name: String) throws -> (
        value: PropertyListValue, seq: Int64
    ) {
        try session { _, context in
            let controller = try context.controller(name)
            return (try controller.value(forKeyPath: keyPath, in: context), context.view.seq)
        }
    }

    /// The arranged objects in their JSON form (API.md §4), `offset` and `limit` applied, with the total count;
    /// for a tree, the nested nodes `{"object", "indexPath", "children"}` of the roots `offset` and `limit` give,
    /// with the number of roots.
    public func arrangedObjects(controller name: String, offset: Int = 0, limit: Int? = nil) throws -> (
        value: PropertyListValue, count: Int, seq: Int64
    ) {
        try session { _, context in
            let controller = try context.controller(name)
            func page(_ count: Int) -> Range<Int> {
                let start = min(max(offset, 0), count)
                // `limit` may be as large as Int allows: never add it to anything.
                return start..<(limit.map { start + min(max($0, 0), count - start) } ?? count)
            }
            if let tree = controller as? TreeController {
                let json = try tree.arrangedJSON(view: context.view, objects: true, roots: page(tree.roots.count))
                return (json, tree.roots.count, context.view.seq)
            }
            let objects = controller.arrangedIDs
            let json = try objects[page(objects.count)].map { try context.view.json(of: $0) }
            return (.array(json), objects.count, context.view.seq)
        }
    }

    /// How many objects (a tree: nodes) `arrangedObjects(controller:offset:limit:)` would answer, without building
    /// them: whether to make the answer off the request threads.
    public func arrangedPageSize(controller name: String, offset: Int = 0, limit: Int? = nil) throws -> Int {
        try session { _, context in
            let controller = try context.controller(name)
            if let tree = controller as? TreeController {
                return limit == 0 ? 0 : tree.nodeCount
            }
            let count = controller.arrangedIDs.count
            let start = min(max(offset, 0), count)
            return limit.map { min(max($0, 0), count - start) } ?? (count - start)
        }
    }

    /// The selected objects in their JSON form.
    public func selectedObjects(controller name: String) throws -> (value: PropertyListValue, seq: Int64) {
        try session { _, context in try Self.answering("selectedObjects")(try context.controller(name), context) }
    }

    /// The pending edits: `{"keyPath": value, ...}`.
    public func edits(controller name: String) throws -> PropertyListValue {
        try session { _, context in try context.controller(name).editsJSON }
    }
}
