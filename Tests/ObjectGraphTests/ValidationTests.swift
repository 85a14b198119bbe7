import Foundation
import GraphTestSupport
import ObjectGraph
import PropertyList
import Testing

struct ValidationTests {
    static let modelJSON = """
        {"entities": {"Item": {"attributes": {
          "code": {"type": "string", "pattern": "[A-Z]{3}"},
          "title": {"type": "string", "required": true, "minLength": 2, "maxLength": 5},
          "count": {"type": "integer", "min": 0, "max": 10},
          "ratio": {"type": "real"},
          "level": {"type": "string", "enum": ["low", "high"]},
          "when": {"type": "date"},
          "blob": {"type": "data"},
          "extra": {"type": "any"},
          "flag": {"type": "boolean", "default": false}}}}}
        """

    func store() throws -> ObjectStore {
        let store = ObjectStore(model: try model(Self.modelJSON))
        try store.transaction { tx in try tx.insert("Item", id: "1", values: ["title": "ok"]) }
        return store
    }

    func set(_ store: ObjectStore, _ key: String, _ value: PropertyListValue) throws {
        try store.transaction { tx in try tx.setValue(value, forKeyPath: key, of: id("Item/1")) }
    }

    @Test func typeMismatches() throws {
        let store = try store()
        expectError("type-mismatch", status: 422) { try set(store, "count", "3") }
        expectError("type-mismatch") { try set(store, "count", 3.5) }
        expectError("type-mismatch") { try set(store, "title", 3) }
        expectError("type-mismatch") { try set(store, "flag", 1) }
        expectError("type-mismatch") { try set(store, "when", "yesterday") }
        expectError("type-mismatch") { try set(store, "blob", "%%%") }
        expectError("type-mismatch") { try set(store, "title", ref("Item/1")) }
        let error = expectError("type-mismatch") { try set(store, "extra", ["a": ["$ref": "Item/1"]]) }
        #expect(error?.fields["keyPath"] == "extra")
        #expect(store.seq == 1)
    }

    @Test func lenientConversions() throws {
        let store = try store()
        try set(store, "count", 3.0)
        #expect(try store.json("count", of: "Item/1") == .integer(3))
        try set(store, "ratio", 2)
        #expect(try store.json("ratio", of: "Item/1") == .real(2))
        try set(store, "when", "2026-11-21T22:12:20.123Z")
        #expect(try store.json("when", of: "Item/1") == .date(ISO8601.date(from: "2026-11-21T22:12:20.123Z")!))
        try set(store, "blob", "aGVsbG8=")
        #expect(try store.json("blob", of: "Item/1") == .data(Data("hello".utf8)))
        try set(store, "extra", ["nested": [1, "two", nil], "when": .date(Date(timeIntervalSince1970: 0))])
        #expect(try store.json("extra.nested", of: "Item/1") == [1, "two", nil])
    }

    @Test func constraints() throws {
        let store = try store()
        let min = expectError("validation-failed", status: 422) { try set(store, "count", -1) }
        #expect(min?.fields["keyPath"] == "count")
        #expect(min?.fields["object"] == "Item/1")
        expectError("validation-failed") { try set(store, "count", 11) }
        expectError("validation-failed") { try set(store, "title", "x") }
        expectError("validation-failed") { try set(store, "title", "toolong") }
        expectError("validation-failed") { try set(store, "code", "ABCD") }
        expectError("validation-failed") { try set(store, "code", "abc") }
        expectError("validation-failed") { try set(store, "level", "medium") }
        expectError("validation-failed") { try set(store, "title", nil) }
        try set(store, "code", "ABC")
        try set(store, "level", "high")
        try set(store, "title", "élan")
        #expect(try store.json("title", of: "Item/1") == "élan")
    }

    /// An `enum` holds values as `isEqual:` compares them: text code point for code point (é written as e and an accent
    /// is not the é of the list), numbers by value. A real bound holds exactly for integers beyond 2^53.
    @Test func enumByCodePoints_boundsExactBeyondDoublePrecision() throws {
        let store = ObjectStore(
            model: try model(
                """
                {"entities": {"Item": {"attributes": {
                  "accent": {"type": "string", "enum": ["\\u00e9", "b"]},
                  "size": {"type": "real", "enum": [0, 2.5]},
                  "big": {"type": "integer", "max": 1e18, "min": -1e18}}}}}
                """))
        try store.transaction { tx in try tx.insert("Item", id: "1", values: ["accent": "\u{e9}"]) }
        expectError("validation-failed") { try set(store, "accent", "e\u{301}") }
        try set(store, "size", -0.0)
        try set(store, "size", 2.5)
        try set(store, "big", 1_000_000_000_000_000_000)
        expectError("validation-failed") { try set(store, "big", 1_000_000_000_000_000_001) }
        expectError("validation-failed") { try set(store, "big", -1_000_000_000_000_000_001) }
        #expect(try store.json("big", of: "Item/1") == 1_000_000_000_000_000_000)
    }

    /// Lengths count UTF-16 code units, as `NSString.length`: combining marks cannot hide a string's size.
    @Test func lengthsCountUTF16CodeUnits() throws {
        let store = try store()
        expectError("validation-failed") {
            try set(store, "title", .string("E" + String(repeating: "\u{301}", count: 5)))
        }
        expectError("validation-failed") { try set(store, "title", "😀😀😀") }
        try set(store, "title", "😀😀")
        try set(store, "title", "e\u{301}")
        expectError("validation-failed") { try set(store, "title", "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}") }
    }

    @Test func requiredAttributesOnInsert() throws {
        let store = try store()
        let error = expectError("validation-failed") {
            try store.transaction { tx in try tx.insert("Item", id: "2", values: [:]) }
        }
        #expect(error?.message.contains("title is required") == true)
        #expect(try store.read { view throws(ObjectGraphError) in try view.count(of: "Item") } == 1)
    }

    @Test func severalErrorsAreListed() throws {
        let store = try store()
        let error = expectError("validation-failed", status: 422) {
            try store.transaction { tx in
                try tx.setValuesForKeys(["count": 99, "code": "x", "title": "y"], of: id("Item/1"))
            }
        }
        let errors = error?.fields["errors"]?.arrayValue ?? []
        #expect(errors.count == 3)
        #expect(Set(errors.compactMap { $0["keyPath"]?.stringValue }) == ["count", "code", "title"])
        #expect(try store.json("title", of: "Item/1") == "ok")
    }

    @Test func unknownAndReadOnlyKeys() throws {
        let store = try employeesStore()
        let error = expectError("undefined-key", status: 404) {
            try store.transaction { tx in try tx.setValue(1, forKeyPath: "bonus", of: id("Employee/ann")) }
        }
        #expect(error?.fields["keyPath"] == "bonus")
        expectError("read-only-key", status: 422) {
            try store.transaction { tx in try tx.setValue("x", forKeyPath: "departmentName", of: id("Employee/ann")) }
        }
        // A $-key is reserved (API.md §1): reported with the other invalid values (here the missing department).
        let reserved = expectError("validation-failed", status: 422) {
            try store.transaction { tx in
                try tx.insert("Employee", values: ["firstName": "A", "lastName": "B", "$weird": 1])
            }
        }
        let listed = reserved?.fields["errors"]?.arrayValue?.compactMap { $0["keyPath"]?.stringValue } ?? []
        #expect(listed.contains("$weird"))
    }

    @Test func references() throws {
        let store = try employeesStore()
        expectError("validation-failed", status: 422) {
            try store.transaction { tx in
                try tx.setValue(ref("Department/99"), forKeyPath: "department", of: id("Employee/ann"))
            }
        }
        expectError("type-mismatch", status: 422) {
            try store.transaction { tx in
                try tx.setValue(ref("Employee/bob"), forKeyPath: "department", of: id("Employee/ann"))
            }
        }
        expectError("type-mismatch") {
            try store.transaction { tx in
                try tx.setValue("Department/2", forKeyPath: "department", of: id("Employee/ann"))
            }
        }
        expectError("type-mismatch") {
            try store.transaction { tx in
                try tx.setValue(ref("Employee/bob"), forKeyPath: "directReports", of: id("Employee/ann"))
            }
        }
        #expect(try store.json("department", of: "Employee/ann") == ref("Department/1"))
    }

    @Test func settingThroughKeyPaths() throws {
        let store = try employeesStore()
        try store.transaction { tx in
            try tx.setValue("Marketing", forKeyPath: "department.name", of: id("Employee/bob"))
        }
        #expect(try store.json("name", of: "Department/1") == "Marketing")
        // Through a to-many the value is set on every destination (NSArray's setValue:forKey:).
        try store.transaction { tx in try tx.setValue(false, forKeyPath: "employees.active", of: id("Department/1")) }
        #expect(try store.json("employees.active", of: "Department/1") == [false, false, false])
        expectError("validation-failed") {
            try store.transaction { tx in try tx.setValue("X", forKeyPath: "manager.firstName", of: id("Employee/ann"))
            }
        }
        expectError("bad-key-path", status: 400) {
            try store.transaction { tx in try tx.setValue(1, forKeyPath: "employees.@count", of: id("Department/1")) }
        }
    }
}
