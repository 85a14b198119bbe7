import Controllers
import GraphTestSupport
import ObjectGraph
import PropertyList
import Testing

/// departments (Legal, Research, Sales) → employees of the selected department → the selected employee.
struct MasterDetailTests {
    func harness() throws -> Harness {
        let h = try Harness()
        try h.employees("departments", content: "Department", sort: "name")
        try h.employees("staff", content: "@departments.selection.employees")
        try h.make(["name": "person", "kind": "object", "content": "@staff.selection"])
        return h
    }

    @Test func detail_followsMasterSelection() throws {
        let h = try harness()
        #expect(try h.names("staff").isEmpty)
        try h.select([2], "departments")
        #expect(try h.names("staff") == ["Archer", "Baker", "Cole", "Evans"])
        #expect(try h.selectedNames("staff") == ["Archer"])
        #expect(try h.value("selection.firstName", of: "person") == "Ann")
        try h.select([1], "departments")
        #expect(try h.names("staff") == ["Dunn"])
        #expect(try h.value("selection.firstName", of: "person") == "Dee")
        #expect(h.reported(.content, of: "staff"))
        #expect(h.reported(.selection, of: "person"))
    }

    /// An empty selection asked by a client is for that content: new content from the master selects again.
    @Test func detail_emptiedByClient_masterChange_avoidsEmptySelectionAgain() throws {
        let h = try harness()
        try h.select([2], "departments")
        try h.select([], "staff")
        #expect(try h.value("selection.lastName", of: "person") == marker("NoSelection"))
        try h.select([1], "departments")
        #expect(try h.selectedNames("staff") == ["Dunn"])
        #expect(try h.value("selection.firstName", of: "person") == "Dee")
    }

    /// The object controller's selection is its master's selection proxy: the master's
    /// `alwaysUsesMultipleValuesMarker` holds there too (NSObjectController has no such option of its own).
    @Test func objectController_boundToAMultipleSelection_takesTheMastersMultipleValuesMarker() throws {
        let h = try Harness()
        try h.employees("departments", content: "Department", sort: "name")
        try h.employees(
            "staff", content: "@departments.selection.employees", options: ["alwaysUsesMultipleValuesMarker": true])
        try h.make(["name": "person", "kind": "object", "content": "@staff.selection"])
        try h.select([2], "departments")
        try h.select([0, 1], "staff")
        #expect(try h.value("selection.department.name", of: "staff") == marker("MultipleValues"))
        #expect(try h.value("selection.department.name", of: "person") == marker("MultipleValues"))
        try h.select([0], "staff")
        #expect(try h.value("selection.department.name", of: "person") == "Sales")
    }

    @Test func detail_masterMultipleSelection_hasNoContent() throws {
        let h = try harness()
        try h.select([1, 2], "departments")
        #expect(try h.names("staff").isEmpty)
        #expect(try h.value("selection.lastName", of: "person") == marker("NoSelection"))
    }

    /// Bound to a selection of several objects, an object controller's selection is theirs (Cocoa's selection
    /// proxy): their common value or `MultipleValues`, and setting through it sets each; `remove` is disabled.
    @Test func objectController_boundToAMultipleSelection_showsItsValuesOrMultipleValues() throws {
        let h = try harness()
        try h.select([2], "departments")
        try h.select([0, 1], "staff")
        #expect(try h.value("selection.lastName", of: "person") == marker("MultipleValues"))
        #expect(try h.value("selection.department.name", of: "person") == "Sales")
        _ = try h.registry.setSelectionValue("Same", forKeyPath: "lastName", controller: "person")
        #expect(try h.value("selection.lastName", of: "person") == "Same")
        #expect(try h.value("selectedObjects.lastName", of: "staff") == ["Same", "Same"])
        let state = try h.registry.state(of: "person").value
        #expect(state["canRemove"] == false)
        #expect(state["selectionIndexes"] == [0, 1])
        #expect(state["contentObject"] == .null)
        try h.select([0], "staff")
        let one = try h.registry.state(of: "person").value
        #expect(one["contentObject"]?["$ref"]?.stringValue?.hasPrefix("Employee/") == true)
        try h.select([], "staff")
        #expect(try h.value("selection.lastName", of: "person") == marker("NoSelection"))
    }

    @Test func detail_followsModelChanges() throws {
        let h = try harness()
        try h.select([1], "departments")
        try h.set("department", of: "Employee/eve", to: ref("Department/2"))
        #expect(try h.names("staff") == ["Dunn", "Evans"])
        try h.set("lastName", of: "Employee/dee", to: "Zane")
        #expect(try h.value("selection.lastName", of: "person") == "Zane")
        try h.store.transaction { try $0.delete(id("Employee/dee")) }
        #expect(try h.names("staff") == ["Evans"])
        #expect(try h.value("selection.lastName", of: "person") == "Evans")
    }

    @Test func detail_masterObjectDeleted_followsNewSelection() throws {
        let h = try harness()
        try h.select([0], "departments")
        try h.store.transaction { try $0.delete(id("Department/3")) }
        #expect(try h.value("arrangedObjects.name", of: "departments") == ["Research", "Sales"])
        #expect(try h.names("staff") == ["Dunn"])
    }

    /// A master's `add` selects the new object, which gives its details other content: their edits (and those of
    /// the controllers following them) are committed first, or the `add` is refused with nothing created.
    @Test func masterAdd_withPendingEditsOfTheDetails_commitsThemFirst_invalidEdits422() throws {
        let h = try harness()
        try h.select([2], "departments")
        try h.registry.setPendingEdit(-1, forKeyPath: "salary", controller: "staff")
        try h.registry.setPendingEdit("Annie", forKeyPath: "firstName", controller: "person")
        expectError("validation-failed", status: 422) {
            try h.registry.perform("add", controller: "departments", body: ["object": ["name": "Ops"]])
        }
        #expect(try h.value("arrangedObjects.name", of: "departments") == ["Legal", "Research", "Sales"])
        #expect(try h.selection("departments") == [2])
        #expect(try h.registry.edits(controller: "staff") == ["salary": -1])
        #expect(try h.registry.edits(controller: "person") == ["firstName": "Annie"])
        try h.registry.setPendingEdit(5, forKeyPath: "salary", controller: "staff")
        try h.registry.perform("add", controller: "departments", body: ["object": ["name": "Ops"]])
        #expect(try h.json("salary", of: "Employee/ann") == 5)
        #expect(try h.json("firstName", of: "Employee/ann") == "Annie")
        #expect(try h.value("selection.name", of: "departments") == "Ops")
        #expect(try h.names("staff").isEmpty)
        #expect(try h.value("isEditing", of: "staff") == false)
        #expect(try h.value("isEditing", of: "person") == false)
    }

    @Test func objectController_addRemove_entityAndBoundModes() throws {
        let h = try harness()
        try h.select([1], "departments")
        #expect(try h.value("canAdd", of: "person") == false)
        #expect(try h.value("canRemove", of: "person") == true)
        try h.registry.perform("remove", controller: "person")
        #expect(try h.names("staff").isEmpty)
        try h.make(["name": "fresh", "kind": "object", "content": "Department"])
        #expect(try h.value("canRemove", of: "fresh") == false)
        try h.registry.perform("add", controller: "fresh", body: ["object": ["name": "Ops"]])
        #expect(try h.value("selection.name", of: "fresh") == "Ops")
        #expect(try h.value("arrangedObjects.name", of: "departments") == ["Legal", "Ops", "Research", "Sales"])
    }

    /// Bound to a key path ending in a to-one, `add` creates an object and sets that to-one to it on the objects
    /// holding it (NSObjectController's `addObject:` changes the primary object's relationship), in one transaction;
    /// with nobody holding it (a nil to-one on the way) it is disabled.
    @Test func objectController_addThroughAToOneKeyPath_setsTheRelationship() throws {
        let h = try harness()
        try h.make(["name": "boss", "kind": "object", "content": "Employee/dee.manager"])
        #expect(try h.value("canAdd", of: "boss") == true)
        try h.registry.perform(
            "add", controller: "boss",
            body: ["object": ["firstName": "Max", "lastName": "Moss", "department": ref("Department/2")]])
        #expect(try h.value("selection.lastName", of: "boss") == "Moss")
        #expect(try h.json("manager.lastName", of: "Employee/dee") == "Moss")
        // Through a master's selection: the selected employee's department.
        try h.select([2], "departments")
        try h.select([0], "staff")
        try h.make(["name": "dept", "kind": "object", "content": "@staff.selection.department"])
        try h.registry.perform("add", controller: "dept", body: ["object": ["name": "Ops"]])
        #expect(try h.json("department.name", of: "Employee/ann") == "Ops")
        #expect(try h.names("staff") == ["Baker", "Cole", "Evans"])
        // An invalid new object changes nothing.
        #expect(throws: ObjectGraphError.self) {
            try h.registry.perform("add", controller: "boss", body: ["object": ["firstName": "No"]])
        }
        #expect(try h.json("manager.lastName", of: "Employee/dee") == "Moss")
        // Nobody holds the last to-one: Ann has no manager.
        try h.make(["name": "far", "kind": "object", "content": "Employee/ann.manager.department"])
        #expect(try h.value("canAdd", of: "far") == false)
        // One selected object without a holder disables it for all, as setting through the selection refuses them.
        // (Eve's manager's manager is Ann; Bob's manager Ann has none.)
        try h.make(["name": "grand", "kind": "object", "content": "@staff.selection.manager.manager.manager"])
        try h.registry.setSelectedObjects([ObjectID(reference: "Employee/eve")!], controller: "staff")
        #expect(try h.value("canAdd", of: "grand") == true)
        try h.registry.setSelectedObjects(
            [ObjectID(reference: "Employee/eve")!, ObjectID(reference: "Employee/bob")!], controller: "staff")
        #expect(try h.value("canAdd", of: "grand") == false)
    }
}

struct AutomaticRearrangingTests {
    @Test func sortKeyChange_automaticallyRearrangesOff_keepsOrder() throws {
        let h = try Harness()
        try h.employees()
        try h.set("lastName", of: "Employee/ann", to: "Zorn")
        #expect(try h.names() == ["Zorn", "Baker", "Cole", "Dunn", "Evans"])
        #expect(try h.value("isSorted") == false)
        try h.registry.perform("rearrangeObjects", controller: "e")
        #expect(try h.names() == ["Baker", "Cole", "Dunn", "Evans", "Zorn"])
        #expect(try h.value("isSorted") == true)
        #expect(try h.selectedNames() == ["Zorn"])
        // A key the sort does not read leaves the order sorted.
        try h.set("salary", of: "Employee/ann", to: 1)
        #expect(try h.value("isSorted") == true)
    }

    @Test func sortKeyChange_automaticallyRearrangesOn_movesObject_keepsSelection() throws {
        let h = try Harness()
        try h.employees(options: ["automaticallyRearrangesObjects": true])
        try h.select([0, 2])
        try h.set("lastName", of: "Employee/ann", to: "Zorn")
        #expect(try h.names() == ["Baker", "Cole", "Dunn", "Evans", "Zorn"])
        #expect(try h.selectedNames() == ["Cole", "Zorn"])
        #expect(try h.value("isSorted") == true)
    }

    @Test func filterKeyChange_automaticallyRearrangesOn_objectLeavesAndEnters() throws {
        let h = try Harness()
        try h.employees(filter: "salary < 250", options: ["automaticallyRearrangesObjects": true])
        #expect(try h.names() == ["Baker", "Cole", "Dunn"])
        try h.set("salary", of: "Employee/cy", to: 900)
        #expect(try h.names() == ["Baker", "Dunn"])
        try h.set("salary", of: "Employee/ann", to: 1)
        #expect(try h.names() == ["Archer", "Baker", "Dunn"])
    }

    @Test func relatedObjectChange_automaticallyRearrangesOn_resortsByKeyPath() throws {
        let h = try Harness()
        try h.employees(sort: "department.name,lastName", options: ["automaticallyRearrangesObjects": true])
        #expect(try h.names() == ["Dunn", "Archer", "Baker", "Cole", "Evans"])
        try h.set("name", of: "Department/2", to: "Zoology")
        #expect(try h.names() == ["Archer", "Baker", "Cole", "Evans", "Dunn"])
    }

    /// `lastName` is both a direct key (the object's own) and an indirect one (its reports' `manager.lastName`).
    @Test func keyBothDirectAndIndirect_automaticallyRearrangesOn_movesTheOtherObjectsToo() throws {
        let h = try Harness()
        try h.employees(sort: "manager.lastName,lastName", options: ["automaticallyRearrangesObjects": true])
        #expect(try h.names() == ["Archer", "Dunn", "Baker", "Cole", "Evans"])
        try h.set("lastName", of: "Employee/ann", to: "Zorn")
        #expect(try h.names() == ["Dunn", "Zorn", "Evans", "Baker", "Cole"])
    }

    /// KVC through a to-many then a to-one gives the same object once per element (Cocoa's `valueForKeyPath:`).
    @Test func contentWithDuplicates_sortKeyChange_rearrangesWhole() throws {
        let h = try Harness()
        try h.employees(
            content: "Department/1.employees.department", sort: "name",
            options: ["automaticallyRearrangesObjects": true])
        #expect(try h.value("arrangedObjects.@count") == 4)
        try h.set("name", of: "Department/1", to: "Zed")
        #expect(try h.value("arrangedObjects.name") == ["Zed", "Zed", "Zed", "Zed"])
    }

    @Test func contentChangeElsewhere_alwaysRearranges() throws {
        let h = try Harness()
        try h.employees()
        try h.store.transaction {
            try $0.insert(
                "Employee", id: "abe",
                values: ["firstName": "Abe", "lastName": "Abbot", "department": ref("Department/3")])
        }
        #expect(try h.names() == ["Abbot", "Archer", "Baker", "Cole", "Dunn", "Evans"])
        #expect(try h.selectedNames() == ["Archer"])
        #expect(h.reported(.arrangedObjects))
    }
}
