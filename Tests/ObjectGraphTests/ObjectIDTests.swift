import ObjectGraph
import Testing

struct ObjectIDTests {
    @Test func parsesReferences() {
        #expect(ObjectID(reference: "Employee/42") == ObjectID(entity: "Employee", id: "42"))
        #expect(ObjectID(reference: "Employee/E-2.x_y")?.id == "E-2.x_y")
        #expect(ObjectID(reference: "Employee") == nil)
        #expect(ObjectID(reference: "/42") == nil)
        #expect(ObjectID(reference: "Employee/") == nil)
        #expect(ObjectID(reference: "Employee/a b") == nil)
        #expect(ObjectID(reference: "Employee/" + String(repeating: "a", count: 65)) == nil)
        // Dot-segments, which URL clients remove: such an object could not be addressed.
        #expect(ObjectID(reference: "Employee/.") == nil)
        #expect(ObjectID(reference: "Employee/..") == nil)
        #expect(ObjectID(reference: "Employee/...")?.id == "...")
    }

    @Test func keyValueJSONWritesReferences() {
        let value = KeyValue.collection([.object(ObjectID(entity: "E", id: "1")), .null])
        #expect(value.json == [["$ref": "E/1"], nil])
    }
}
