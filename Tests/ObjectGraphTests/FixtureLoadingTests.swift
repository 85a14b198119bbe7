import Foundation
import GraphTestSupport
import ObjectGraph
import PropertyList
import Testing

struct FixtureLoadingTests {
    static let data = """
        {"objects": [
          {"$id": "Employee/2", "firstName": "Bo", "lastName": "B", "department": {"$ref": "Department/1"},
           "manager": {"$ref": "Employee/1"}},
          {"$id": "Employee/1", "firstName": "Al", "lastName": "A", "department": {"$ref": "Department/1"},
           "hireDate": "2019-03-04"},
          {"$id": "Department/1", "name": "Sales"},
          {"$id": "Department/2", "name": "Empty", "headcount": 99}
        ]}
        """

    @Test func forwardReferencesAndInverses() throws {
        let store = ObjectStore(model: try employeesModel())
        let record = try #require(try store.loadFixture(jsonBytes: Array(Self.data.utf8)))
        #expect(record.seq == 1)
        #expect(record.changes.count == 1 && record.changes[0].kind == .reset)
        #expect(try store.json("employees", of: "Department/1") == [ref("Employee/2"), ref("Employee/1")])
        #expect(try store.json("directReports", of: "Employee/1") == [ref("Employee/2")])
        #expect(try store.json("active", of: "Employee/1") == true)
        #expect(try store.json("headcount", of: "Department/2") == 0)
        #expect(try store.read { view in try view.version(of: id("Employee/1")) } == 1)
    }

    @Test func anInvalidFixtureChangesNothing() throws {
        let store = try employeesStore()
        let before = store.export()
        let bad = """
            {"objects": [{"$id": "Department/1", "name": "Sales"}, {"$id": "Employee/1", "firstName": "A", "lastName": "B"}]}
            """
        let error = expectError("cardinality", status: 422) { try store.loadFixture(jsonBytes: Array(bad.utf8)) }
        #expect(error?.fields["object"] == "Employee/1")
        #expect(store.export() == before)
        expectError("malformed-json", status: 400) { try store.loadFixture(jsonBytes: Array("{\"objects\": [".utf8)) }
        expectError("undefined-key") {
            try store.loadFixture(jsonBytes: Array(#"{"objects": [{"$id": "Department/1", "nam": "x"}]}"#.utf8))
        }
        #expect(store.export() == before)
    }

    @Test func anExportLoadsBackAsAFixture() throws {
        let store = try employeesStore()
        let export = store.export()
        let copy = ObjectStore(model: try employeesModel())
        try copy.loadFixture(jsonBytes: export.jsonBytes())
        #expect(copy.export()["objects"] == export["objects"])
    }

    @Test func replayingAResetRecord() throws {
        let store = ObjectStore(model: try employeesModel())
        let record = try #require(try store.loadFixture(jsonBytes: Array(Self.data.utf8)))
        let replica = ObjectStore(model: try employeesModel())
        try replica.apply(try ChangeRecord(json: try PropertyListValue(jsonString: record.json.jsonString())))
        #expect(replica.export() == store.export())
    }

    @Test func theBundledFixtureLoadsWhenPresent() throws {
        let path = packageRoot.appendingPathComponent("Fixtures/employees/data.json").path
        guard let bytes = FileManager.default.contents(atPath: path) else { return }
        let store = ObjectStore(model: try employeesModel())
        try store.loadFixture(jsonBytes: bytes)
        #expect(try store.read { view in try view.count(of: "Employee") } > 0)
    }
}
