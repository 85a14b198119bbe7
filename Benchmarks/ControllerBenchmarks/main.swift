import Controllers
import Foundation
import ObjectGraph
import PropertyList

// An array controller over 100,000 employees with a filter and a two-key sort (issue 5's benchmark):
// - re-arranging after one object's sort key changes with automaticallyRearrangesObjects on (incremental: the object
//   is taken out and put back by binary search) versus a full re-sort (`rearrangeObjects`);
// - reading `selection.<key>` over 10,000 selected objects.
//
// Run: swift run -c release ControllerBenchmarks [employees] [model.json]

let arguments = CommandLine.arguments
let count = arguments.count > 1 ? Int(arguments[1]) ?? 100_000 : 100_000
let modelPath = arguments.count > 2 ? arguments[2] : "Fixtures/employees/model.json"

func milliseconds(_ body: () throws -> Void) rethrows -> Double {
    let start = DispatchTime.now().uptimeNanoseconds
    try body()
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
}

func report(_ name: String, _ samples: [Double]) {
    let sorted = samples.sorted()
    let median = sorted[sorted.count / 2]
    let p99 = sorted[min(sorted.count - 1, sorted.count * 99 / 100)]
    print(
        name.padding(toLength: 64, withPad: " ", startingAt: 0)
            + String(format: "median %8.3f ms   p99 %8.3f ms   (n=%d)", median, p99, samples.count))
}

let syllables = ["an", "ber", "cor", "dal", "el", "fin", "gar", "hol", "ist", "jon", "kel", "lor", "mar", "nor"]
func randomName() -> String {
    let name = (0..<3).map { _ in syllables.randomElement()! }.joined()
    return name.prefix(1).uppercased() + name.dropFirst()
}

let model = try ObjectModel.check(file: modelPath)
let store = ObjectStore(model: model)
var objects: [PropertyListValue] = (0..<100).map { ["$id": .string("Department/\($0)"), "name": .string("D\($0)")] }
for index in 0..<count {
    objects.append([
        "$id": .string("Employee/\(index)"), "firstName": .string(randomName()), "lastName": .string(randomName()),
        "salary": .integer(Int64.random(in: 0...200_000)),
        "department": ["$ref": .string("Department/\(index % 100)")],
    ])
}
let loading = try milliseconds { try store.transaction { try $0.insertObjects(.array(objects)) } }
print("loaded \(count) employees in \(String(format: "%.0f", loading)) ms")

/// A registry over `store` that applies records when asked (`synchronize()`), as the benchmarks time it.
func makeRegistry(over store: ObjectStore) -> ControllerRegistry {
    ControllerRegistry(store: store, appliesRecordsInBackground: false) { body in try store.transaction(body).record }
}

let registry = makeRegistry(over: store)
let creation = try milliseconds {
    try registry.create(
        json: [
            "name": "bench", "kind": "array", "content": "Employee", "filterPredicate": "salary >= 20000",
            "sortDescriptors": [
                ["key": "lastName", "selector": "caseInsensitiveCompare:"],
                ["key": "firstName", "selector": "caseInsensitiveCompare:"],
            ],
            "automaticallyRearrangesObjects": true,
        ])
}
let arranged = try registry.value(forKeyPath: "count", controller: "bench").integerValue ?? 0
print(
    "arranged \(arranged) of \(count) (filter salary >= 20000, sort lastName, firstName) in "
        + String(format: "%.0f", creation) + " ms")

// Incremental: one object's sort key changes, the record is applied (automaticallyRearrangesObjects).
var transactions: [Double] = []
var incremental: [Double] = []
for _ in 0..<200 {
    let target = ObjectID(entity: "Employee", id: String(Int.random(in: 0..<count)))
    var record: ChangeRecord?
    transactions.append(
        try milliseconds {
            record = try store.transaction { try $0.setValue(.string(randomName()), forKey: "lastName", of: target) }
                .record
        })
    guard let record else { continue }
    registry.storeDidCommit(record)
    incremental.append(milliseconds { registry.synchronize() })
}
let sorted = try registry.value(forKeyPath: "arrangedObjects.lastName", controller: "bench").arrayValue ?? []
let names = sorted.compactMap(\.stringValue).map { $0.lowercased() }
precondition(zip(names, names.dropFirst()).allSatisfy { $0 <= $1 }, "arranged objects are not sorted")
report("transaction: set one lastName", transactions)
report("controller: incremental re-arrangement of that object", incremental)

var full: [Double] = []
for _ in 0..<5 {
    full.append(try milliseconds { try registry.perform("rearrangeObjects", controller: "bench") })
}
report("controller: full re-arrangement (rearrangeObjects)", full)

// The content changes: one employee inserted, or one deleted (placed or taken out one by one, not re-sorted).
var insertions: [Double] = []
var deletions: [Double] = []
for index in 0..<100 {
    let record = try store.transaction {
        try $0.insert(
            "Employee", id: "new\(index)",
            values: [
                "firstName": .string(randomName()), "lastName": .string(randomName()), "salary": 50_000,
                "department": ["$ref": "Department/1"],
            ])
    }.record
    guard let record else { continue }
    registry.storeDidCommit(record)
    insertions.append(milliseconds { registry.synchronize() })
}
for index in 0..<100 {
    let record = try store.transaction { try $0.delete(ObjectID(entity: "Employee", id: "new\(index)")) }.record
    guard let record else { continue }
    registry.storeDidCommit(record)
    deletions.append(milliseconds { registry.synchronize() })
}
report("controller: one employee inserted into the content", insertions)
report("controller: one employee deleted from the content", deletions)

// The selection proxy over 10,000 selected objects.
try registry.setSelectionIndexes(Array(0..<10_000), controller: "bench")
var equal: [Double] = []
var different: [Double] = []
var dictionary: [Double] = []
for _ in 0..<20 {
    equal.append(try milliseconds { _ = try registry.value(forKeyPath: "selection.active", controller: "bench") })
    different.append(
        try milliseconds { _ = try registry.value(forKeyPath: "selection.lastName", controller: "bench") })
}
for _ in 0..<5 {
    dictionary.append(try milliseconds { _ = try registry.value(forKeyPath: "selection", controller: "bench") })
}
report("selection.active over 10,000 selected (all equal: full scan)", equal)
report("selection.lastName over 10,000 (MultipleValues, early exit)", different)
report("selection (every key of Employee) over 10,000 selected", dictionary)

// A tree controller over folders, one root with `count` children (sorted by name, automaticallyRearrangesObjects):
// the controller's own `addChild:`, and children inserted, deleted and renamed elsewhere.
let treeModel = try ObjectModel(
    json: [
        "entities": [
            "Folder": [
                "attributes": ["name": ["type": "string"]],
                "relationships": [
                    "children": [
                        "destination": "Folder", "toMany": true, "inverse": "parent", "deleteRule": "cascade",
                    ],
                    "parent": ["destination": "Folder", "inverse": "children", "deleteRule": "nullify"],
                ],
            ]
        ]
    ])
let treeStore = ObjectStore(model: treeModel)
var folders: [PropertyListValue] = (0..<10).map { ["$id": .string("Folder/root\($0)"), "name": .string("Root \($0)")] }
for index in 0..<count {
    folders.append([
        "$id": .string("Folder/\(index)"), "name": .string(randomName()), "parent": ["$ref": "Folder/root0"],
    ])
}
try treeStore.transaction { try $0.insertObjects(.array(folders)) }
let treeRegistry = makeRegistry(over: treeStore)
let treeCreation = try milliseconds {
    try treeRegistry.create(
        json: [
            "name": "tree", "kind": "tree", "content": "Folder", "filterPredicate": "parent == nil",
            "childrenKeyPath": "children", "sortDescriptors": [["key": "name", "selector": "caseInsensitiveCompare:"]],
            "automaticallyRearrangesObjects": true,
        ])
}
let treeNodes = try treeRegistry.value(forKeyPath: "arrangedObjects.@count", controller: "tree").integerValue ?? 0
print("tree of \(treeNodes) nodes (one root with \(count) children) in \(String(format: "%.0f", treeCreation)) ms")

func applied(_ body: (Transaction) throws -> Void) throws -> Double {
    guard let record = try treeStore.transaction(body).record else { return 0 }
    treeRegistry.storeDidCommit(record)
    return milliseconds { treeRegistry.synchronize() }
}
var addChildren: [Double] = []
var treeInsertions: [Double] = []
var treeDeletions: [Double] = []
var renames: [Double] = []
for index in 0..<20 {
    _ = try treeRegistry.setSelectionIndexPaths([[0]], controller: "tree")
    addChildren.append(try milliseconds { _ = try treeRegistry.perform("addChild", controller: "tree") })
    treeInsertions.append(
        try applied {
            try $0.insert(
                "Folder", id: "new\(index)",
                values: ["name": .string(randomName()), "parent": ["$ref": "Folder/root0"]])
        })
    renames.append(
        try applied {
            try $0.setValue(
                .string(randomName()), forKey: "name",
                of: ObjectID(entity: "Folder", id: String(Int.random(in: 0..<count))))
        })
}
for index in 0..<20 {
    treeDeletions.append(try applied { try $0.delete(ObjectID(entity: "Folder", id: "new\(index)")) })
}
report("tree: addChild under the root (the controller's own insertion)", addChildren)
report("tree: one child inserted elsewhere", treeInsertions)
report("tree: one child renamed elsewhere (its sort key)", renames)
report("tree: one child deleted elsewhere", treeDeletions)
