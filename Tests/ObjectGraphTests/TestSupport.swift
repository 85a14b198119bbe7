import Foundation
import GraphTestSupport
import ObjectGraph
import PropertyList
import Testing

/// The package root, found from this file's path.
let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// The API.md §3 model, from `Fixtures/employees/model.json`.
func employeesModel() throws -> ObjectModel {
    try ObjectModel.check(file: packageRoot.appendingPathComponent("Fixtures/employees/model.json").path)
}

/// A model from JSON text.
func model(_ json: String) throws -> ObjectModel {
    try ObjectModel(jsonBytes: Array(json.utf8))
}

/// Two departments (Sales with Ann, Bob, Cy; Research with Dee) and an empty one (Legal); Ann manages Bob and Cy.
func employeesStore(hooks: ObjectStoreHooks = ObjectStoreHooks()) throws -> ObjectStore {
    let store = ObjectStore(model: try employeesModel(), hooks: hooks)
    try store.transaction { tx in
        try tx.insertObjects([
            ["$id": "Department/1", "name": "Sales", "budget": 1000],
            ["$id": "Department/2", "name": "Research"],
            ["$id": "Department/3", "name": "Legal"],
            [
                "$id": "Employee/ann", "firstName": "Ann", "lastName": "Archer", "salary": 300,
                "department": ref("Department/1"), "hireDate": "2020-01-02T03:04:05.678Z",
            ],
            [
                "$id": "Employee/bob", "firstName": "Bob", "lastName": "Baker", "salary": 200,
                "department": ref("Department/1"), "manager": ref("Employee/ann"),
            ],
            [
                "$id": "Employee/cy", "firstName": "Cy", "lastName": "Cole", "salary": 100,
                "department": ref("Department/1"), "manager": ref("Employee/ann"),
            ],
            ["$id": "Employee/dee", "firstName": "Dee", "lastName": "Dunn", "department": ref("Department/2")],
        ])
    }
    return store
}

extension ObjectStore {
    func value(_ keyPath: String, of object: String) throws -> KeyValue {
        try read { view throws(ObjectGraphError) in try view.value(forKeyPath: keyPath, of: id(object)) }
    }

    func json(_ keyPath: String, of object: String) throws -> PropertyListValue {
        try value(keyPath, of: object).json
    }

    func export() -> PropertyListValue {
        read { $0.exportGraph() }
    }
}
