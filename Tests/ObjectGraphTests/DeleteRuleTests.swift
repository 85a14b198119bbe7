import GraphTestSupport
import ObjectGraph
import PropertyList
import Testing

struct DeleteRuleTests {
    @Test func denyRefusesAndChangesNothing() throws {
        let store = try employeesStore()
        let before = store.export()
        let error = expectError("delete-denied", status: 409) {
            try store.transaction { tx in try tx.delete(id("Department/1")) }
        }
        #expect(error?.fields["keyPath"] == "employees")
        #expect(
            error?.message.hasPrefix("Department/1 cannot be deleted: its employees key still holds Employee/") == true)
        #expect(store.export() == before)
        #expect(store.seq == 1)
    }

    @Test func denyAllowsAnEmptyRelationship() throws {
        let store = try employeesStore()
        try store.transaction { tx in try tx.delete(id("Department/3")) }
        #expect(store.read { view in view.contains(id("Department/3")) } == false)
    }

    /// `deny` refuses only for a destination that stays: one deleted by the same delete (a cascade) does not count.
    @Test func denyTowardsAnObjectTheCascadeDeletesAllowsTheDelete() throws {
        let store = ObjectStore(
            model: try model(
                """
                {"entities": {"Folder": {"relationships": {
                   "items": {"destination": "Item", "toMany": true, "inverse": "folder", "deleteRule": "cascade"}}},
                 "Item": {"relationships": {
                   "folder": {"destination": "Folder", "inverse": "items", "deleteRule": "deny"}}}}}
                """))
        try store.transaction { tx in
            try tx.insert("Folder", id: "f")
            try tx.insert("Item", id: "i", values: ["folder": ref("Folder/f")])
        }
        expectError("delete-denied") { try store.transaction { tx in try tx.delete(id("Item/i")) } }
        try store.transaction { tx in try tx.delete(id("Folder/f")) }
        #expect(store.read { view in view.contains(id("Item/i")) } == false)
    }

    @Test func nullifyRemovesFromInverses() throws {
        let store = try employeesStore()
        try store.transaction { tx in try tx.delete(id("Employee/ann")) }
        #expect(try store.json("manager", of: "Employee/bob") == nil)
        #expect(try store.json("employees", of: "Department/1") == [ref("Employee/bob"), ref("Employee/cy")])
        expectError("no-such-object", status: 404) { _ = try store.value("firstName", of: "Employee/ann") }
        expectError("no-such-object") { try store.transaction { tx in try tx.delete(id("Employee/ann")) } }
    }

    static let treeJSON = """
        {"entities": {"Node": {"attributes": {"name": {"type": "string"}}, "relationships": {
          "children": {"destination": "Node", "toMany": true, "inverse": "parent", "deleteRule": "cascade"},
          "parent": {"destination": "Node", "inverse": "children"},
          "links": {"destination": "Node", "toMany": true, "inverse": "links", "deleteRule": "cascade"},
          "tag": {"destination": "Tag", "inverse": "nodes"}}},
         "Tag": {"relationships": {"nodes": {"destination": "Node", "toMany": true, "inverse": "tag", "deleteRule": "deny"}}}}}
        """

    func tree() throws -> ObjectStore {
        let store = ObjectStore(model: try model(Self.treeJSON))
        try store.transaction { tx in
            try tx.insertObjects([
                ["$id": "Node/root", "children": [ref("Node/a"), ref("Node/b")]],
                ["$id": "Node/a", "children": [ref("Node/a1")]],
                ["$id": "Node/b"],
                ["$id": "Node/a1"],
                ["$id": "Node/x", "links": [ref("Node/y")]],
                ["$id": "Node/y", "links": [ref("Node/x"), ref("Node/z")]],
                ["$id": "Node/z", "links": [ref("Node/y")]],
                ["$id": "Node/keep"],
            ])
        }
        return store
    }

    @Test func cascadeIsRecursive() throws {
        let store = try tree()
        try store.transaction { tx in try tx.delete(id("Node/root")) }
        #expect(try store.read { view in try view.objects(of: "Node").map(\.id) } == ["x", "y", "z", "keep"])
    }

    @Test func cascadeThroughACycleTerminates() throws {
        let store = try tree()
        let record = try store.transaction { tx in try tx.delete(id("Node/y")) }.record
        #expect(try store.read { view in try view.objects(of: "Node").map(\.id) } == ["root", "a", "b", "a1", "keep"])
        #expect(Set(record?.deleted ?? []) == [id("Node/x"), id("Node/y"), id("Node/z")])
    }

    @Test func denyInsideACascadeRefusesTheWholeDelete() throws {
        let store = try tree()
        try store.transaction { tx in
            try tx.insert("Tag", id: "t")
            try tx.setValue(ref("Tag/t"), forKeyPath: "tag", of: id("Node/a1"))
        }
        let before = store.export()
        // Deleting the tag is denied while a node has it; deleting the node (cascade from root) nullifies the tag.
        expectError("delete-denied") { try store.transaction { tx in try tx.delete(id("Tag/t")) } }
        #expect(store.export() == before)
        try store.transaction { tx in try tx.delete(id("Node/root")) }
        #expect(try store.json("nodes", of: "Tag/t") == [])
    }

    @Test func deletingARequiredDestinationFailsValidation() throws {
        let model = try model(
            """
            {"entities": {"Owner": {"relationships": {"pets": {"destination": "Pet", "toMany": true, "inverse": "owner"}}},
             "Pet": {"relationships": {"owner": {"destination": "Owner", "inverse": "pets", "required": true}}}}}
            """)
        let store = ObjectStore(model: model)
        try store.transaction { tx in
            try tx.insert("Owner", id: "o")
            try tx.insert("Pet", id: "p", values: ["owner": ref("Owner/o")])
        }
        expectError("cardinality") { try store.transaction { tx in try tx.delete(id("Owner/o")) } }
        // Deleting both at once is fine.
        try store.transaction { tx in
            try tx.delete(id("Owner/o"))
            try tx.delete(id("Pet/p"))
        }
        #expect(store.seq == 2)
    }
}
