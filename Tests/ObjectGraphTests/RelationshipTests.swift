import GraphTestSupport
import ObjectGraph
import PropertyList
import Testing

struct RelationshipTests {
    @Test func settingAToOneMovesBetweenInverseLists() throws {
        let store = try employeesStore()
        try store.transaction { tx in
            try tx.setValue(ref("Department/2"), forKeyPath: "department", of: id("Employee/bob"))
        }
        #expect(try store.json("employees", of: "Department/1") == [ref("Employee/ann"), ref("Employee/cy")])
        #expect(try store.json("employees", of: "Department/2") == [ref("Employee/dee"), ref("Employee/bob")])
        #expect(try store.json("departmentName", of: "Employee/bob") == "Research")
    }

    @Test func insertingIntoAToManySetsTheInverseAndLeavesTheOldOwner() throws {
        let store = try employeesStore()
        try store.transaction { tx in
            try tx.insert(id("Employee/dee"), at: 1, intoKeyPath: "employees", of: id("Department/1"))
        }
        #expect(
            try store.json("employees", of: "Department/1")
                == [ref("Employee/ann"), ref("Employee/dee"), ref("Employee/bob"), ref("Employee/cy")])
        #expect(try store.json("department", of: "Employee/dee") == ref("Department/1"))
        #expect(try store.json("employees", of: "Department/2") == [])
        // At the end by default, and through a to-one on the way.
        try store.transaction { tx in
            try tx.setValue(ref("Department/2"), forKeyPath: "department", of: id("Employee/cy"))
        }
        try store.transaction { tx in
            try tx.insert(id("Employee/cy"), intoKeyPath: "department.employees", of: id("Employee/ann"))
        }
        #expect(try store.json("employees.lastName", of: "Department/1") == ["Archer", "Dunn", "Baker", "Cole"])
    }

    @Test func insertErrors() throws {
        let store = try employeesStore()
        expectError("validation-failed") {
            try store.transaction { tx in
                try tx.insert(id("Employee/bob"), intoKeyPath: "employees", of: id("Department/1"))
            }
        }
        expectError("validation-failed") {
            try store.transaction { tx in
                try tx.insert(id("Employee/dee"), at: 9, intoKeyPath: "employees", of: id("Department/1"))
            }
        }
        expectError("type-mismatch") {
            try store.transaction { tx in
                try tx.insert(id("Department/2"), intoKeyPath: "employees", of: id("Department/1"))
            }
        }
        expectError("bad-key-path", status: 400) {
            try store.transaction { tx in
                try tx.insert(id("Department/2"), intoKeyPath: "department", of: id("Employee/bob"))
            }
        }
    }

    @Test func removingFromAToManyWhoseInverseIsRequiredIsRefused() throws {
        let store = try employeesStore()
        let before = store.export()
        let error = expectError("cardinality", status: 422) {
            try store.transaction { tx in try tx.remove(at: 0, fromKeyPath: "employees", of: id("Department/1")) }
        }
        #expect(error?.fields["keyPath"] == "department")
        #expect(error?.fields["object"] == "Employee/ann")
        #expect(store.export() == before)
    }

    @Test func removingFromAnOptionalInverse() throws {
        let store = try employeesStore()
        let removed = try store.transaction { tx in
            try tx.remove(at: 0, fromKeyPath: "directReports", of: id("Employee/ann"))
        }.value
        #expect(removed == id("Employee/bob"))
        #expect(try store.json("manager", of: "Employee/bob") == nil)
        #expect(try store.json("directReports", of: "Employee/ann") == [ref("Employee/cy")])
        expectError("validation-failed") {
            try store.transaction { tx in try tx.remove(at: 5, fromKeyPath: "directReports", of: id("Employee/ann")) }
        }
    }

    @Test func replacingAToManyElement() throws {
        let store = try employeesStore()
        try store.transaction { tx in
            try tx.replace(at: 0, with: id("Employee/dee"), inKeyPath: "directReports", of: id("Employee/ann"))
        }
        #expect(try store.json("directReports", of: "Employee/ann") == [ref("Employee/dee"), ref("Employee/cy")])
        #expect(try store.json("manager", of: "Employee/bob") == nil)
        #expect(try store.json("manager", of: "Employee/dee") == ref("Employee/ann"))
    }

    @Test func settingAWholeToMany() throws {
        let store = try employeesStore()
        try store.transaction { tx in
            try tx.setValue(
                [ref("Employee/dee"), ref("Employee/bob")], forKeyPath: "directReports", of: id("Employee/cy"))
        }
        #expect(try store.json("directReports", of: "Employee/cy") == [ref("Employee/dee"), ref("Employee/bob")])
        #expect(try store.json("directReports", of: "Employee/ann") == [ref("Employee/cy")])
        #expect(try store.json("manager", of: "Employee/bob") == ref("Employee/cy"))
        expectError("validation-failed") {
            try store.transaction { tx in
                try tx.setValue(
                    [ref("Employee/dee"), ref("Employee/dee")], forKeyPath: "directReports", of: id("Employee/cy"))
            }
        }
    }

    @Test func maximumCardinality() throws {
        let store = try employeesStore()
        let error = expectError("cardinality") {
            try store.transaction { tx in
                for n in 0..<16 {
                    try tx.insert(
                        "Employee", id: "x\(n)",
                        values: [
                            "firstName": "X", "lastName": "Y", "department": ref("Department/3"),
                            "manager": ref("Employee/dee"),
                        ])
                }
            }
        }
        #expect(error?.fields["keyPath"] == "directReports")
        #expect(try store.json("employees.@count", of: "Department/3") == 0)
    }

    static let peopleJSON = """
        {"entities": {"Person": {"attributes": {"name": {"type": "string"}}, "relationships": {
          "friends": {"destination": "Person", "toMany": true, "inverse": "friends"},
          "spouse": {"destination": "Person", "inverse": "spouse"},
          "clubs": {"destination": "Club", "toMany": true, "inverse": "members"}}},
         "Club": {"relationships": {"members": {"destination": "Person", "toMany": true, "inverse": "clubs"}}}}}
        """

    func people() throws -> ObjectStore {
        let store = ObjectStore(model: try model(Self.peopleJSON))
        try store.transaction { tx in
            for name in ["a", "b", "c"] { try tx.insert("Person", id: name, values: ["name": .string(name)]) }
            try tx.insert("Club", id: "chess")
            try tx.insert("Club", id: "go")
        }
        return store
    }

    /// Whatever a run of changes to many-to-many, self-inverse and one-to-one relationships leaves, its export goes
    /// back in as it is (both sides given, in their order): the check that both sides agree never refuses a graph
    /// the store made, which a journal's `PUT /store` record or an undo replays.
    @Test(arguments: [1, 2, 3] as [UInt64])
    func anyGraphTheStoreMakesReimportsUnchanged(seed: UInt64) throws {
        let store = ObjectStore(model: try model(Self.peopleJSON))
        var random = SeededGenerator(state: seed)
        let people = (0..<8).map { "Person/p\($0)" }
        let clubs = (0..<4).map { "Club/c\($0)" }
        try store.transaction { tx in
            for person in people { try tx.insertObjects([["$id": .string(person), "name": .string(person)]]) }
            for club in clubs { try tx.insertObjects([["$id": .string(club)]]) }
        }
        var changed = 0
        for step in 0..<200 {
            let person = people.randomElement(using: &random)!
            let other = people.randomElement(using: &random)!
            let club = clubs.randomElement(using: &random)!
            let result = try? store.transaction { tx in
                switch Int.random(in: 0..<6, using: &random) {
                case 0: try tx.insert(id(club), intoKeyPath: "clubs", of: id(person))
                case 1: try tx.insert(id(person), at: 0, intoKeyPath: "members", of: id(club))
                case 2: try tx.insert(id(other), intoKeyPath: "friends", of: id(person))
                case 3: try tx.setValue(ref(other), forKeyPath: "spouse", of: id(person))
                case 4:
                    let shuffled = people.shuffled(using: &random).prefix(3).map { ref($0) }
                    try tx.setValue(.array(Array(shuffled)), forKeyPath: "members", of: id(club))
                default: try tx.remove(at: 0, fromKeyPath: "friends", of: id(person))
                }
            }
            if result?.record != nil { changed += 1 }
            let export = store.export()
            try store.transaction { tx in try tx.replaceGraph(with: export) }
            #expect(store.export()["objects"] == export["objects"], "seed \(seed), step \(step)")
        }
        #expect(changed > 100)  // most of the changes applied (some change nothing, some have nothing to remove)
    }

    @Test func manyToMany() throws {
        let store = try people()
        try store.transaction { tx in
            try tx.setValue([ref("Person/a"), ref("Person/b")], forKeyPath: "members", of: id("Club/chess"))
            try tx.insert(id("Club/go"), intoKeyPath: "clubs", of: id("Person/a"))
        }
        #expect(try store.json("clubs", of: "Person/a") == [ref("Club/chess"), ref("Club/go")])
        #expect(try store.json("clubs", of: "Person/b") == [ref("Club/chess")])
        #expect(try store.json("members", of: "Club/go") == [ref("Person/a")])
        try store.transaction { tx in try tx.remove(at: 0, fromKeyPath: "members", of: id("Club/chess")) }
        #expect(try store.json("clubs", of: "Person/a") == [ref("Club/go")])
    }

    @Test func reflexiveRelationships() throws {
        let store = try people()
        try store.transaction { tx in
            try tx.setValue(ref("Person/b"), forKeyPath: "spouse", of: id("Person/a"))
            try tx.insert(id("Person/c"), intoKeyPath: "friends", of: id("Person/a"))
        }
        #expect(try store.json("spouse", of: "Person/b") == ref("Person/a"))
        #expect(try store.json("friends", of: "Person/c") == [ref("Person/a")])
        // One-to-one: marrying c takes b's spouse away.
        try store.transaction { tx in try tx.setValue(ref("Person/a"), forKeyPath: "spouse", of: id("Person/c")) }
        #expect(try store.json("spouse", of: "Person/b") == nil)
        #expect(try store.json("spouse", of: "Person/a") == ref("Person/c"))
        // Being one's own friend appears once.
        try store.transaction { tx in try tx.insert(id("Person/b"), intoKeyPath: "friends", of: id("Person/b")) }
        #expect(try store.json("friends", of: "Person/b") == [ref("Person/b")])
        try store.transaction { tx in try tx.remove(at: 0, fromKeyPath: "friends", of: id("Person/b")) }
        #expect(try store.json("friends", of: "Person/b") == [])
    }
}
