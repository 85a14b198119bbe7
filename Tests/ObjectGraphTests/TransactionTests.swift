import Foundation
import GraphTestSupport
import ObjectGraph
import PropertyList
import Synchronization
import Testing

struct TransactionTests {
    struct Failure: Error {}

    @Test func seqIncreasesOncePerChangingTransaction() throws {
        let store = try employeesStore()
        #expect(store.seq == 1)
        let result = try store.transaction { tx in
            try tx.setValue(400, forKeyPath: "salary", of: id("Employee/ann"))
            try tx.setValue(500, forKeyPath: "salary", of: id("Employee/bob"))
            return "done"
        }
        #expect(result.value == "done")
        #expect(result.seq == 2 && result.record?.seq == 2)
        // Reading only, or setting a value equal to the current one, uses no seq.
        let unchanged = try store.transaction { tx in try tx.setValue(400, forKeyPath: "salary", of: id("Employee/ann"))
        }
        #expect(unchanged.record == nil && unchanged.seq == 2)
        #expect(store.seq == 2)
    }

    /// `-0.0` and `0.0` are equal numbers but not the same value: setting one over the other is a change.
    @Test func negativeZeroAndZeroAreDifferentValues() throws {
        let store = ObjectStore(
            model: try model(#"{"entities": {"Thing": {"attributes": {"r": {"type": "real"}, "a": {"type": "any"}}}}}"#)
        )
        try store.transaction { tx in try tx.insertObjects([["$id": "Thing/t"]]) }
        let changes: [(String, PropertyListValue)] = [
            ("r", -0.0), ("r", 0.0), ("a", ["k": [-0.0]]), ("a", ["k": [0.0]]),
        ]
        for (key, value) in changes {
            let result = try store.transaction { tx in try tx.setValue(value, forKeyPath: key, of: id("Thing/t")) }
            #expect(result.record != nil, "\(key) \(value)")
            let stored = try store.read { try $0.value(forKeyPath: key, of: id("Thing/t")) }.json
            #expect(stored.isIdentical(to: value), "\(key) \(value)")
        }
    }

    /// Text compares by code points, as `isEqual:` does: é as one character and as e and an accent are two values.
    @Test func canonicallyEquivalentTextsAreDifferentValues() throws {
        let store = ObjectStore(
            model: try model(
                #"{"entities": {"Thing": {"attributes": {"s": {"type": "string"}, "a": {"type": "any"}}}}}"#)
        )
        try store.transaction { tx in try tx.insertObjects([["$id": "Thing/t"]]) }
        let changes: [(String, PropertyListValue)] = [
            ("s", "Cafe\u{301}"), ("s", "Caf\u{e9}"), ("a", ["k": ["e\u{301}"]]), ("a", ["k": ["\u{e9}"]]),
            ("a", ["e\u{301}": 1]), ("a", ["\u{e9}": 1]),
        ]
        for (key, value) in changes {
            let result = try store.transaction { tx in try tx.setValue(value, forKeyPath: key, of: id("Thing/t")) }
            #expect(result.record != nil, "\(key) \(value)")
            let stored = try store.read { try $0.value(forKeyPath: key, of: id("Thing/t")) }.json
            #expect(stored.isIdentical(to: value), "\(key) \(value)")
        }
    }

    /// An object's version (its ETag) is the seq of the last commit that changed it or a property of another object
    /// one of its derived keys reads (an employee's `departmentName` reads its department's `name`, a department's
    /// `payroll` its employees' `salary`), and `changesVersion(of:)` tells inside the transaction what its commit
    /// moves.
    @Test func versionsAreTheSeqOfTheLastChangeToTheObjectOrWhatItsDerivedKeysRead() throws {
        let store = try employeesStore()
        let objects = [
            "Employee/ann", "Employee/bob", "Employee/cy", "Employee/dee", "Department/1", "Department/2",
            "Department/3",
        ].map(id)
        func versions(after change: (Transaction) throws -> Void) throws -> [Int64] {
            try Self.versions(of: objects, in: store, after: change)
        }
        // Bob moves: both departments' `employees` change (their headcount and payroll), not Ann's `departmentName`.
        #expect(
            try versions { try $0.setValue(ref("Department/2"), forKeyPath: "department", of: id("Employee/bob")) }
                == [1, 2, 1, 1, 2, 2, 1])
        // No derived key reads a budget.
        #expect(
            try versions { try $0.setValue(5, forKeyPath: "budget", of: id("Department/1")) } == [1, 2, 1, 1, 3, 2, 1])
        #expect(
            try versions { try $0.setValue("Sales & Marketing", forKeyPath: "name", of: id("Department/1")) }
                == [4, 2, 4, 1, 4, 2, 1])
        #expect(
            try versions { try $0.setValue(1, forKeyPath: "salary", of: id("Employee/dee")) } == [4, 2, 4, 5, 4, 5, 1])
        #expect(
            try versions { try $0.setValue("B.", forKeyPath: "firstName", of: id("Employee/bob")) } == [
                4, 6, 4, 5, 4, 5, 1,
            ])
        // A new employee is read by its department's derived keys; a deleted one no longer.
        #expect(
            try versions { tx in
                try tx.insert(
                    "Employee", id: "eve",
                    values: ["firstName": "Eve", "lastName": "E", "department": ref("Department/3")])
            } == [4, 6, 4, 5, 4, 5, 7])
        try store.transaction { tx in
            try tx.delete(id("Employee/dee"))
            #expect(tx.changesVersion(of: id("Department/2")) && !tx.changesVersion(of: id("Department/1")))
        }
        let remaining = ["Employee/ann", "Department/1", "Department/2"].map(id)
        let after = try store.read { view throws(ObjectGraphError) in try remaining.map(view.version(of:)) }
        #expect(after == [4, 4, 8])
    }

    /// A derived key's walk back to its readers goes through several relationships, nested derived keys and
    /// collection operators; a property it does not read moves nothing but its own object.
    @Test func versionsFollowDerivedKeysThroughSeveralRelationships() throws {
        let store = ObjectStore(
            model: try model(
                #"""
                {"entities": {
                  "Shelf": {"attributes": {"label": {"type": "string"}},
                            "relationships": {"boxes": {"destination": "Box", "toMany": true, "inverse": "shelf"}},
                            "derived": {"heaviest": "boxes.@max.weight", "itemNames": "boxes.items.@unionOfArrays.name"}},
                  "Box": {"attributes": {"tag": {"type": "string"}},
                          "relationships": {"shelf": {"destination": "Shelf", "inverse": "boxes"},
                                            "items": {"destination": "Item", "toMany": true, "inverse": "box"}},
                          "derived": {"weight": "items.@sum.grams", "shelfLabel": "shelf.label"}},
                  "Item": {"attributes": {"name": {"type": "string"}, "grams": {"type": "integer"},
                                          "note": {"type": "string"}},
                           "relationships": {"box": {"destination": "Box", "inverse": "items"}},
                           "derived": {"where": "box.shelfLabel", "self_": "self.note"}}
                }}
                """#))
        try store.transaction { tx in
            try tx.insertObjects([
                ["$id": "Shelf/s", "label": "top"], ["$id": "Shelf/t", "label": "low"],
                ["$id": "Box/a", "shelf": ref("Shelf/s")], ["$id": "Box/b", "shelf": ref("Shelf/t")],
                ["$id": "Item/1", "name": "one", "grams": 10, "box": ref("Box/a")],
                ["$id": "Item/2", "name": "two", "grams": 20, "box": ref("Box/a")],
                ["$id": "Item/3", "name": "three", "grams": 30, "box": ref("Box/b")],
            ])
        }
        let objects = ["Shelf/s", "Shelf/t", "Box/a", "Box/b", "Item/1", "Item/2", "Item/3"].map(id)
        func versions(after change: (Transaction) throws -> Void) throws -> [Int64] {
            try Self.versions(of: objects, in: store, after: change)
        }
        // Grams: the box's weight, and the shelf's heaviest through the box's derived weight (two hops back).
        #expect(try versions { try $0.setValue(11, forKeyPath: "grams", of: id("Item/1")) } == [2, 1, 2, 1, 2, 1, 1])
        // A name: the shelf's itemNames (through a collection of collections).
        #expect(try versions { try $0.setValue("3", forKeyPath: "name", of: id("Item/3")) } == [2, 3, 2, 1, 2, 1, 3])
        // A label: the boxes' shelfLabel and, through it, their items' where (a derived key read by a derived key).
        #expect(
            try versions { try $0.setValue("up", forKeyPath: "label", of: id("Shelf/s")) } == [4, 3, 4, 1, 4, 4, 3])
        // A note is read only by its own object's derived key; a tag by none.
        #expect(try versions { try $0.setValue("n", forKeyPath: "note", of: id("Item/2")) } == [4, 3, 4, 1, 4, 5, 3])
        #expect(try versions { try $0.setValue("x", forKeyPath: "tag", of: id("Box/b")) } == [4, 3, 4, 6, 4, 5, 3])
        // A box moving shelves: both shelves (their boxes), the box, and its items (their where reads box.shelf).
        #expect(
            try versions { try $0.setValue(ref("Shelf/s"), forKeyPath: "shelf", of: id("Box/b")) }
                == [7, 7, 4, 7, 4, 5, 7])
    }

    /// `replaceGraph` keeps the version of an object it holds as it was, unless a property its derived keys read
    /// elsewhere changed (Ann's `departmentName` when her department is renamed).
    @Test func aReplacedGraphKeepsVersionsOfWhatItShowsAsItWas() throws {
        let store = try employeesStore()
        try store.transaction { tx in try tx.setValue(1, forKeyPath: "salary", of: id("Employee/dee")) }
        func replaced(_ edit: (inout [String: PropertyListValue]) -> Void, of target: String) throws -> [Int64] {
            let objects = try #require(store.export()["objects"]?.arrayValue).map { object -> PropertyListValue in
                guard var fields = object.dictionaryValue, fields["$id"]?.stringValue == target else { return object }
                edit(&fields)
                return .dictionary(fields)
            }
            try store.transaction { tx in try tx.replaceGraph(with: ["objects": .array(objects)]) }
            let shown = ["Employee/ann", "Employee/bob", "Employee/dee", "Department/1", "Department/2"].map(id)
            return try store.read { view throws(ObjectGraphError) in try shown.map(view.version(of:)) }
        }
        #expect(try replaced({ $0["budget"] = 5 }, of: "Department/1") == [1, 1, 2, 3, 2])
        #expect(try replaced({ $0["name"] = "Sold" }, of: "Department/1") == [4, 4, 2, 4, 2])
        #expect(try replaced({ $0["salary"] = 2 }, of: "Employee/dee") == [4, 4, 5, 4, 5])
    }

    /// Commits `change` and answers the objects' versions after it, checking that `changesVersion(of:)` told inside
    /// the transaction which of them the commit moved.
    static func versions(
        of objects: [ObjectID], in store: ObjectStore, after change: (Transaction) throws -> Void
    ) throws -> [Int64] {
        let result = try store.transaction { tx in
            try change(tx)
            return objects.map { tx.changesVersion(of: $0) }
        }
        let versions = try store.read { view throws(ObjectGraphError) in try objects.map(view.version(of:)) }
        #expect(versions.map { $0 == result.seq } == result.value, "changesVersion told what the commit moved")
        return versions
    }

    @Test func aThrowingBodyChangesNothing() throws {
        let store = try employeesStore()
        let before = store.export()
        #expect(throws: Failure.self) {
            try store.transaction { tx in
                try tx.setValue(1, forKeyPath: "salary", of: id("Employee/ann"))
                try tx.insert("Department", id: "9", values: ["name": "New"])
                try tx.delete(id("Employee/dee"))
                try tx.setValue(ref("Department/9"), forKeyPath: "department", of: id("Employee/bob"))
                try tx.replaceGraph(with: ["objects": []])
                try tx.insert("Department", id: "10", values: ["name": "Newer"])
                throw Failure()
            }
        }
        #expect(store.export() == before)
        #expect(store.seq == 1)
        // The rows and indexes are intact: the old ids resolve, the new ones do not.
        #expect(try store.json("employees.firstName", of: "Department/2") == ["Dee"])
        #expect(store.read { view in view.contains(id("Department/9")) } == false)
    }

    /// An import's invalid values are reported alone (and all of them), not with every relationship that objects
    /// inserted before them did not have yet ("department is required" for each employee before the bad one).
    @Test func anImportsInvalidValuesAreReportedWithoutFalseCardinalities() throws {
        let store = try employeesStore()
        let before = store.export()
        var objects = try #require(before["objects"]?.arrayValue)
        for (index, object) in objects.enumerated() {
            guard var fields = object.dictionaryValue else { continue }
            if fields["$id"] == "Employee/cy" { fields["salary"] = "lots" }
            if fields["$id"] == "Employee/dee" { fields["hireDate"] = "yesterday" }
            if fields["$id"] == "Employee/bob" { fields["salary"] = -1 }  // a constraint: reported with them
            objects[index] = .dictionary(fields)
        }
        let error = expectError("validation-failed", status: 422) {
            try store.transaction { tx in try tx.replaceGraph(with: ["objects": .array(objects)]) }
        }
        let listed = error?.fields["errors"]?.arrayValue?.map { [$0["object"], $0["keyPath"], $0["code"]] }
        #expect(
            listed == [
                ["Employee/cy", "salary", "type-mismatch"], ["Employee/dee", "hireDate", "type-mismatch"],
                ["Employee/bob", "salary", "validation-failed"],
            ])
        #expect(store.export() == before)
    }

    /// A broken attribute constraint is reported before relationships are looked at, also when it is the only invalid
    /// value: a relationship error (a dangling reference, two sides that disagree) would hide it.
    @Test func anImportsBrokenConstraintsAreReportedBeforeRelationshipErrors() throws {
        let store = try employeesStore()
        let before = store.export()
        let objects = try #require(before["objects"]?.arrayValue).map { object -> PropertyListValue in
            guard var fields = object.dictionaryValue else { return object }
            if fields["$id"] == "Employee/bob" { fields["salary"] = -1 }
            if fields["$id"] == "Employee/cy" { fields["manager"] = ref("Employee/nobody") }
            return .dictionary(fields)
        }
        let error = expectError("validation-failed", status: 422) {
            try store.transaction { tx in try tx.replaceGraph(with: ["objects": .array(objects)]) }
        }
        #expect(error?.fields["object"] == "Employee/bob")
        #expect(error?.fields["keyPath"] == "salary")
        #expect(store.export() == before)
    }

    /// Both sides of a relationship given (as an export gives them) must agree: an employee listed by one department
    /// while naming another is refused, not settled by whichever side was set last.
    @Test func anImportWhoseTwoSidesDisagreeIsRefused() throws {
        let store = try employeesStore()
        let before = store.export()
        let objects = try #require(before["objects"]?.arrayValue).map { object -> PropertyListValue in
            guard var fields = object.dictionaryValue, fields["$id"] == "Employee/bob" else { return object }
            fields["department"] = ref("Department/2")  // Department/1's employees still list Bob
            return .dictionary(fields)
        }
        let error = expectError("validation-failed", status: 422) {
            try store.transaction { tx in try tx.replaceGraph(with: ["objects": .array(objects)]) }
        }
        #expect(error?.message.contains("both sides must agree") == true, "\(error?.message ?? "")")
        #expect(store.export() == before)
        // The export itself, both sides given, goes back in unchanged.
        try store.transaction { tx in try tx.replaceGraph(with: before) }
        #expect(store.export()["objects"] == before["objects"])
    }

    @Test func serverAssignedIdsAreUniqueAndNeverReused() throws {
        let store = try employeesStore()
        let first = try store.transaction { tx in try tx.insert("Department", values: ["name": "A"]) }.value
        try store.transaction { tx in try tx.delete(first) }
        // A client taking the next number makes the server skip it.
        try store.transaction { tx in try tx.insert("Department", id: "2x", values: ["name": "B"]) }
        let second = try store.transaction { tx in try tx.insert("Department", values: ["name": "C"]) }.value
        #expect(first.id == "1" ? false : true)
        #expect(first != second)
        #expect(Int(second.id)! > Int(first.id)!)
        // A rolled-back insert does not burn a number either way: ids stay unique.
        _ = try? store.transaction { tx in
            try tx.insert("Department", values: ["name": "D"])
            throw Failure()
        }
        let third = try store.transaction { tx in try tx.insert("Department", values: ["name": "E"]) }.value
        #expect(Int(third.id)! > Int(second.id)!)
    }

    /// A number a client gave as an id is never assigned later, even after its object is deleted: otherwise the
    /// next insert without an id would take the deleted object's id (and its observers and ETags).
    @Test func numbersGivenAsIdsAreNotAssignedLater() throws {
        let store = ObjectStore(
            model: try model(#"{"entities": {"Item": {"attributes": {"n": {"type": "integer"}}}}}"#))
        try store.transaction { tx in
            for number: Int64 in [1, 2, 13] {
                try tx.insert("Item", id: String(number), values: ["n": .integer(number)])
            }
        }
        try store.transaction { tx in try tx.delete(id("Item/13")) }
        let next = try store.transaction { tx in try tx.insert("Item", values: [:]) }.value
        #expect(next == id("Item/14"))
        // Huge numbers and negative ones do not move the counter.
        try store.transaction { tx in try tx.insert("Item", id: "9223372036854775807", values: [:]) }
        try store.transaction { tx in try tx.insert("Item", id: "-50", values: [:]) }
        #expect(try store.transaction { tx in try tx.insert("Item", values: [:]) }.value == id("Item/15"))
    }

    /// A key path that cannot be set is refused by its shape, also when an empty to-many on the way leaves no
    /// object to set it on (which made such a write a silent success).
    @Test func unsettableKeyPathsAreRefusedEvenThroughAnEmptyToMany() throws {
        let store = try employeesStore()
        for department in ["Department/1", "Department/3"] {
            expectError("bad-key-path", status: 400) {
                try store.transaction { tx in try tx.setValue(5, forKeyPath: "employees.@count", of: id(department)) }
            }
            expectError("undefined-key", status: 404) {
                try store.transaction { tx in try tx.setValue(5, forKeyPath: "employees.nope", of: id(department)) }
            }
        }
        // Through an empty to-many a settable path still sets nothing, successfully.
        try store.transaction { tx in try tx.setValue(5, forKeyPath: "employees.salary", of: id("Department/3")) }
        #expect(store.seq == 1)
    }

    /// The seq skip after a crash skips as many ids: an object a client read before the crash lost it (with `batch`)
    /// does not lend its id to a new object; the skip is in the record, so a replay of the journal keeps it.
    @Test func skippingSeqsSkipsAsManyIds() throws {
        let itemModel = try model(#"{"entities": {"Item": {"attributes": {"n": {"type": "integer"}}}}}"#)
        let records = Mutex<[ChangeRecord]>([])
        let store = ObjectStore(
            model: itemModel, hooks: ObjectStoreHooks(capture: { record, _ in records.withLock { $0.append(record) } }))
        #expect(try store.transaction { tx in try tx.insert("Item", values: [:]) }.value == id("Item/1"))
        #expect(try store.advanceSeq(by: 1000) == 1001)
        #expect(try store.transaction { tx in try tx.insert("Item", values: [:]) }.value == id("Item/1002"))
        let replayed = ObjectStore(model: itemModel)
        for record in records.withLock({ $0 }) { try replayed.apply(record) }
        #expect(try replayed.transaction { tx in try tx.insert("Item", values: [:]) }.value == id("Item/1003"))
    }

    @Test func clientIDs() throws {
        let store = try employeesStore()
        expectError("duplicate-id", status: 409) {
            try store.transaction { tx in try tx.insert("Department", id: "1", values: ["name": "X"]) }
        }
        expectError("duplicate-id") {
            try store.transaction { tx in try tx.insert("Department", values: ["$id": "Department/2", "name": "X"]) }
        }
        expectError("bad-id", status: 400) {
            try store.transaction { tx in try tx.insert("Department", id: "a b", values: ["name": "X"]) }
        }
        expectError("validation-failed") {
            try store.transaction { tx in try tx.insert("Department", values: ["$id": "Employee/7", "name": "X"]) }
        }
        expectError("no-such-entity", status: 404) { try store.transaction { tx in try tx.insert("Nope") } }
        let created = try store.transaction { tx in try tx.insert("Department", values: ["$id": "d-9.x", "name": "X"]) }
        #expect(created.value == id("Department/d-9.x"))
        #expect(try store.json("budget", of: "Department/d-9.x") == 0.0)
    }

    @Test func setValuesForKeysIsAtomic() throws {
        let store = try employeesStore()
        expectError("type-mismatch") {
            try store.transaction { tx in
                try tx.setValuesForKeys(["firstName": "Anna", "salary": "lots"], of: id("Employee/ann"))
            }
        }
        #expect(try store.json("firstName", of: "Employee/ann") == "Ann")
        try store.transaction { tx in
            try tx.setValuesForKeys(["$id": "ann", "firstName": "Anna", "salary": 1], of: id("Employee/ann"))
        }
        #expect(try store.json("firstName", of: "Employee/ann") == "Anna")
    }

    @Test func willCommitFailureRollsBack() throws {
        let journal = Mutex<[Int64]>([])
        let failNext = Mutex(false)
        let hooks = ObjectStoreHooks(willCommit: { record in
            if failNext.withLock({ $0 }) { throw Failure() }
            journal.withLock { $0.append(record.seq) }
        })
        let store = try employeesStore(hooks: hooks)
        failNext.withLock { $0 = true }
        #expect(throws: Failure.self) {
            try store.transaction { tx in try tx.setValue(1, forKeyPath: "salary", of: id("Employee/ann")) }
        }
        #expect(try store.json("salary", of: "Employee/ann") == 300)
        failNext.withLock { $0 = false }
        try store.transaction { tx in try tx.setValue(1, forKeyPath: "salary", of: id("Employee/ann")) }
        #expect(journal.withLock { $0 } == [1, 2])
    }

    @Test func didCommitDeliversEveryRecordInOrder() async throws {
        let delivered = Mutex<[Int64]>([])
        let hooks = ObjectStoreHooks(didCommit: { record in delivered.withLock { $0.append(record.seq) } })
        let store = try employeesStore(hooks: hooks)
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<4 {
                group.addTask {
                    for n in 0..<50 {
                        _ = try? store.transaction { tx in
                            try tx.setValue(
                                .integer(Int64(worker * 1000 + n)), forKeyPath: "salary", of: id("Employee/ann"))
                        }
                    }
                }
            }
        }
        #expect(store.seq == 201)
        #expect(delivered.withLock { $0 } == Array(1...201))
    }

    @Test func deferredDeliveryWaitsForDeliverCommitted() throws {
        let delivered = Mutex<[Int64]>([])
        let hooks = ObjectStoreHooks(
            didCommit: { record in delivered.withLock { $0.append(record.seq) } }, defersDelivery: true)
        let store = try employeesStore(hooks: hooks)
        for salary: Int64 in [1, 2] {
            try store.transaction { tx in
                try tx.setValue(.integer(salary), forKeyPath: "salary", of: id("Employee/ann"))
            }
        }
        #expect(delivered.withLock { $0 }.isEmpty)
        store.deliverCommitted()
        #expect(delivered.withLock { $0 } == [1, 2, 3])
        store.deliverCommitted()
        #expect(delivered.withLock { $0 } == [1, 2, 3])
    }

    @Test func readsInsideATransactionSeeItsChanges() throws {
        let store = try employeesStore()
        let headcount = try store.transaction { tx in
            try tx.setValue(ref("Department/3"), forKeyPath: "department", of: id("Employee/dee"))
            return try tx.view.value(forKeyPath: "headcount", of: id("Department/3")).json
        }.value
        #expect(headcount == 1)
    }
}
