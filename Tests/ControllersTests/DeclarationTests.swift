import Controllers
import GraphTestSupport
import ObjectGraph
import PropertyList
import Testing

/// The controllers declared in a `controllers.json` document (`ControllerRegistry.loadDeclarations`).
struct DeclarationTests {
    @Test func loadDeclarations_duplicateName_refusedNamingIt_nothingCreated() throws {
        let h = try Harness()
        let error = expectError("bad-controller", status: 400) {
            try h.registry.loadDeclarations(json: [
                "controllers": [
                    ["name": "departments", "kind": "array", "content": "Department"],
                    ["name": "employees", "kind": "array", "content": "Employee"],
                    [
                        "name": "departments", "kind": "array", "content": "Department",
                        "filterPredicate": "name == 'x'",
                    ],
                ]
            ])
        }
        #expect(error?.message.contains("controllers[2] \"departments\"") == true, "\(error?.message ?? "")")
        #expect(error?.message.contains("controllers[0]") == true, "\(error?.message ?? "")")
        #expect(h.registry.names.isEmpty)
    }

    @Test func loadDeclarations_badEntry_errorNamesTheEntryByIndexAndName() throws {
        let h = try Harness()
        let unknownKey = expectError("undefined-key") {
            try h.registry.loadDeclarations(json: [
                "controllers": [
                    ["name": "departments", "kind": "array", "content": "Department"],
                    ["name": "broken", "kind": "array", "content": "Department", "sortDescriptors": [["key": "nope"]]],
                ]
            ])
        }
        #expect(unknownKey?.message.hasPrefix("controllers[1] \"broken\": ") == true, "\(unknownKey?.message ?? "")")
        #expect(h.registry.names.isEmpty)
        let unnamed = expectError("bad-controller") {
            try h.registry.loadDeclarations(json: ["controllers": [["kind": "array", "content": "Department"]]])
        }
        #expect(unnamed?.message.hasPrefix("controllers[0]: ") == true, "\(unnamed?.message ?? "")")
    }
}
