import GraphTestSupport
import ObjectGraph
import PropertyList
import Testing

struct KeyValueCodingTests {
    @Test func valueForKey() throws {
        let store = try employeesStore()
        try store.read { view throws(ObjectGraphError) in
            #expect(try view.value(forKey: "firstName", of: id("Employee/ann")) == .value("Ann"))
            #expect(try view.value(forKey: "department", of: id("Employee/ann")) == .object(id("Department/1")))
            #expect(try view.value(forKey: "manager", of: id("Employee/ann")) == .null)
            #expect(
                try view.value(forKey: "directReports", of: id("Employee/ann"))
                    == .collection([.object(id("Employee/bob")), .object(id("Employee/cy"))]))
        }
    }

    @Test func keyPathsThroughToOneAndToMany() throws {
        let store = try employeesStore()
        #expect(try store.json("department.name", of: "Employee/bob") == "Sales")
        #expect(try store.json("manager.firstName", of: "Employee/bob") == "Ann")
        #expect(try store.json("manager.firstName", of: "Employee/ann") == nil)
        #expect(try store.json("manager.department.name", of: "Employee/ann") == nil)
        #expect(try store.json("employees.lastName", of: "Department/1") == ["Archer", "Baker", "Cole"])
        #expect(try store.json("employees.manager.firstName", of: "Department/1") == [nil, "Ann", "Ann"])
        #expect(try store.json("employees.directReports.firstName", of: "Department/1") == [["Bob", "Cy"], [], []])
        #expect(try store.json("self.department.self.name", of: "Employee/bob") == "Sales")
    }

    @Test func derivedKeys() throws {
        let store = try employeesStore()
        #expect(try store.json("headcount", of: "Department/1") == 3)
        #expect(try store.json("payroll", of: "Department/1") == 600)
        #expect(try store.json("payroll", of: "Department/3") == 0)
        #expect(try store.json("departmentName", of: "Employee/dee") == "Research")
        #expect(try store.json("employees.departmentName", of: "Department/2") == ["Research"])
    }

    @Test func undefinedKeysNameTheKey() throws {
        let store = try employeesStore()
        let error = expectError("undefined-key", status: 404) { _ = try store.value("salry", of: "Employee/ann") }
        #expect(error?.fields["keyPath"] == "salry")
        #expect(error?.message.contains("salry") == true)
        // Found from the model even where the to-one on the way is nil.
        expectError("undefined-key") { _ = try store.value("manager.nickname", of: "Employee/ann") }
        expectError("undefined-key") { _ = try store.value("firstName.length", of: "Employee/ann") }
        expectError("bad-key-path", status: 400) { _ = try store.value("department..name", of: "Employee/ann") }
        expectError("no-such-object", status: 404) { _ = try store.value("firstName", of: "Employee/zed") }
        expectError("no-such-entity", status: 404) { _ = try store.value("firstName", of: "Manager/1") }
    }

    @Test func jsonFormOfAnObject() throws {
        let store = try employeesStore()
        let json = try store.read { view throws(ObjectGraphError) in try view.json(of: id("Employee/ann")) }
        #expect(json["$id"] == "Employee/ann")
        #expect(json["firstName"] == "Ann")
        #expect(json["active"] == true)
        #expect(json["manager"] == .null)
        #expect(json["department"] == ref("Department/1"))
        #expect(json["directReports"] == [ref("Employee/bob"), ref("Employee/cy")])
        #expect(json["departmentName"] == "Sales")
        #expect(json["hireDate"] == .date(ISO8601.date(from: "2020-01-02T03:04:05.678Z")!))
        let department = try store.read { view throws(ObjectGraphError) in try view.json(of: id("Department/1")) }
        #expect(department["headcount"] == 3)
        #expect(department["budget"] == 1000.0)
    }

    @Test func projection() throws {
        let store = try employeesStore()
        let json = try store.read { view throws(ObjectGraphError) in
            try view.json(of: id("Employee/bob"), keys: ["lastName", "department.name", "manager"])
        }
        #expect(
            json == [
                "$id": "Employee/bob", "lastName": "Baker", "department.name": "Sales", "manager": ref("Employee/ann"),
            ])
    }

    @Test func listingsFollowInsertionOrder() throws {
        let store = try employeesStore()
        try store.transaction { tx in
            try tx.insert(
                "Employee", id: "aaa", values: ["firstName": "A", "lastName": "A", "department": ref("Department/3")])
        }
        let ids = try store.read { view throws(ObjectGraphError) in try view.objects(of: "Employee").map(\.id) }
        #expect(ids == ["ann", "bob", "cy", "dee", "aaa"])
        #expect(try store.read { view throws(ObjectGraphError) in try view.count(of: "Employee") } == 5)
    }

    @Test func keyPathResolvingOnPlainValuesAndCollections() throws {
        let store = try employeesStore()
        try store.read { view throws in
            #expect(try view.value(forKeyPath: "a.b", of: .value(["a": ["b": 7]])) == .value(7))
            #expect(try view.value(forKeyPath: "a.missing", of: .value(["a": ["b": 7]])) == .null)
            let people: KeyValue = .collection([.object(id("Employee/ann")), .object(id("Employee/dee"))])
            #expect(try view.value(forKeyPath: "firstName", of: people) == .collection([.value("Ann"), .value("Dee")]))
            #expect(try view.value(forKeyPath: "@count", of: people) == .value(2))
            #expect(
                try view.value(forKeyPath: "department.name", of: .object(id("Employee/dee"))) == .value("Research"))
        }
    }

    @Test func compiledKeyPathsOnHandles() throws {
        let store = try employeesStore()
        let names = try store.read { view throws(ObjectGraphError) in
            let path = try view.compile("department.name", for: "Employee")
            return try view.handles(of: "Employee").map { handle throws(ObjectGraphError) in
                try view.plainValue(of: handle, at: path)
            }
        }
        #expect(names == ["Sales", "Sales", "Sales", "Research"])
        expectError("undefined-key") {
            _ = try store.read { view throws(ObjectGraphError) in try view.compile("nope", for: "Employee") }
        }
    }
}
