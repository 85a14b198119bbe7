import Controllers
import Foundation
import GraphTestSupport
import ObjectGraph
import PropertyList
import Synchronization
import Testing

let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// Sales (Ann, Bob, Cy, Eve), Research (Dee), Legal (nobody); Ann manages Bob and Cy, Bob manages Eve.
let standardObjects: PropertyListValue = [
    ["$id": "Department/1", "name": "Sales"],
    ["$id": "Department/2", "name": "Research"],
    ["$id": "Department/3", "name": "Legal"],
    [
        "$id": "Employee/ann", "firstName": "Ann", "lastName": "Archer", "salary": 300,
        "department": ref("Department/1"),
    ],
    [
        "$id": "Employee/bob", "firstName": "Bob", "lastName": "Baker", "salary": 200,
        "department": ref("Department/1"), "manager": ref("Employee/ann"),
    ],
    [
        "$id": "Employee/cy", "firstName": "Cy", "lastName": "Cole", "salary": 100,
        "department": ref("Department/1"), "manager": ref("Employee/ann"),
    ],
    ["$id": "Employee/dee", "firstName": "Dee", "lastName": "Dunn", "salary": 100, "department": ref("Department/2")],
    [
        "$id": "Employee/eve", "firstName": "Eve", "lastName": "Evans", "salary": 250,
        "department": ref("Department/1"), "manager": ref("Employee/bob"),
    ],
]

/// A store with the employees model, a registry following its commits, and a record of what the registry reports.
final class Harness: Sendable {
    let store: ObjectStore
    let registry: ControllerRegistry
    let changeLog = Log<ControllerChange>()
    let notificationLog = Log<String>()

    /// `beforeTransaction` runs before each transaction the registry makes (with the registry), outside its lock;
    /// `afterTransaction` after it, as the document's wait for the journal's flush does.
    init(
        objects: PropertyListValue = standardObjects,
        clock: @escaping @Sendable () -> Double = ControllerRegistry.uptime, contentLimit: Int = 1_000_000,
        beforeTransaction: @escaping @Sendable (ControllerRegistry) -> Void = { _ in },
        afterTransaction: @escaping @Sendable () -> Void = {}
    ) throws {
        let follower = Mutex<ControllerRegistry?>(nil)
        let model = try ObjectModel.check(
            file: packageRoot.appendingPathComponent("Fixtures/employees/model.json").path)
        let store = ObjectStore(
            model: model,
            hooks: ObjectStoreHooks(capture: { record, _ in follower.withLock { $0 }?.storeDidCommit(record) }))
        try store.transaction { try $0.insertObjects(objects) }
        self.store = store
        registry = ControllerRegistry(store: store, runtimeContentLimit: contentLimit, clock: clock) { body in
            if let registry = follower.withLock({ $0 }) { beforeTransaction(registry) }
            defer { afterTransaction() }
            return try store.transaction(body).record
        }
        follower.withLock { $0 = registry }
        let changeLog = changeLog
        registry.addObserver { change in changeLog.append(change) }
        let notificationLog = notificationLog
        registry.onNotification = { name, _, _ in notificationLog.append(name) }
    }

    /// Creates a controller from JSON text fields: `make(["name": "e", "kind": "array", "content": "Employee"])`.
    @discardableResult
    func make(_ fields: [String: PropertyListValue]) throws -> PropertyListValue {
        var fields = fields
        fields["kind"] = fields["kind"] ?? "array"
        return try registry.create(json: .dictionary(fields))
    }

    /// An array controller over every employee sorted by last name, with `options` applied.
    @discardableResult
    func employees(
        _ name: String = "e", content: String = "Employee", sort: String = "lastName", filter: String? = nil,
        options: [String: Bool] = [:]
    ) throws -> PropertyListValue {
        var fields: [String: PropertyListValue] = ["name": .string(name), "content": .string(content)]
        if !sort.isEmpty {
            fields["sortDescriptors"] = .array(
                try SortDescriptor.descriptors(query: sort).map(\.json))
        }
        if let filter { fields["filterPredicate"] = .string(filter) }
        for (key, value) in options { fields[key] = .boolean(value) }
        return try make(fields)
    }

    func value(_ keyPath: String, of controller: String = "e") throws -> PropertyListValue {
        try registry.value(forKeyPath: keyPath, controller: controller)
    }

    /// The arranged objects' last names.
    func names(_ controller: String = "e") throws -> [String] {
        try value("arrangedObjects.lastName", of: controller).arrayValue?.compactMap(\.stringValue) ?? []
    }

    /// The selected objects' last names.
    func selectedNames(_ controller: String = "e") throws -> [String] {
        try value("selectedObjects.lastName", of: controller).arrayValue?.compactMap(\.stringValue) ?? []
    }

    func selection(_ controller: String = "e") throws -> [Int] {
        try value("selectionIndexes", of: controller).arrayValue?.compactMap { $0.integerValue.map(Int.init) } ?? []
    }

    func select(_ indexes: [Int], _ controller: String = "e") throws {
        try registry.setSelectionIndexes(indexes, controller: controller)
    }

    func set(_ keyPath: String, of object: String, to value: PropertyListValue) throws {
        try store.transaction { try $0.setValue(value, forKeyPath: keyPath, of: id(object)) }
    }

    func json(_ keyPath: String, of object: String) throws -> PropertyListValue {
        try store.read { view throws(ObjectGraphError) in try view.value(forKeyPath: keyPath, of: id(object)).json }
    }

    var changes: [ControllerChange] {
        registry.waitUntilDelivered()
        return changeLog.items
    }

    var notifications: [String] {
        registry.waitUntilDelivered()
        return notificationLog.items
    }

    func reported(_ key: ControllerChange.Key, of controller: String = "e") -> Bool {
        changes.contains { $0.controller == controller && $0.key == key }
    }

    func clearReports() {
        registry.waitUntilDelivered()
        changeLog.clear()
    }
}

func marker(_ name: String) -> PropertyListValue {
    ["$marker": .string(name)]
}

/// A list that several threads append to.
final class Log<Item: Sendable>: Sendable {
    private let storage = Mutex<[Item]>([])

    var items: [Item] { storage.withLock { $0 } }

    func append(_ item: Item) {
        storage.withLock { $0.append(item) }
    }

    func clear() {
        storage.withLock { $0 = [] }
    }
}
