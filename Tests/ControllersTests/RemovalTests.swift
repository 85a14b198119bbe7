import Controllers
import GraphTestSupport
import ObjectGraph
import PropertyList
import Testing

/// Arranged: Archer, Baker, Cole, Dunn, Evans.
struct RemovalTests {
    @Test func removeSelected_entityMode_deletesTheObject() throws {
        let h = try Harness()
        try h.employees()
        try h.select([3])
        try h.registry.perform("remove", controller: "e")
        #expect(try h.names() == ["Archer", "Baker", "Cole", "Evans"])
        #expect(h.store.read { $0.contains(id("Employee/dee")) } == false)
    }

    @Test func removeSelected_avoidsEmptySelection_selectsNeighbour() throws {
        let h = try Harness()
        try h.employees()
        try h.select([1])
        try h.registry.perform("remove", controller: "e")
        #expect(try h.selection() == [1])
        #expect(try h.selectedNames() == ["Cole"])
    }

    @Test func removeSelectedLast_avoidsEmptySelection_selectsNewLast() throws {
        let h = try Harness()
        try h.employees()
        try h.select([4])
        try h.registry.perform("remove", controller: "e")
        #expect(try h.selectedNames() == ["Dunn"])
    }

    @Test func removeSelected_withoutAvoidsEmptySelection_leavesNothingSelected() throws {
        let h = try Harness()
        try h.employees(options: ["avoidsEmptySelection": false])
        try h.select([1])
        try h.registry.perform("remove", controller: "e")
        #expect(try h.selection() == [])
    }

    @Test func removeSelected_withoutPreservesSelection_avoidsEmptySelection_selectsNeighbour() throws {
        let h = try Harness()
        try h.employees(options: ["preservesSelection": false])
        try h.select([1])
        try h.registry.perform("remove", controller: "e")
        #expect(try h.selectedNames() == ["Cole"])
    }

    @Test func removeSelectedMany_avoidsEmptySelection_selectsObjectAfterFirstRemoved() throws {
        let h = try Harness()
        try h.employees()
        try h.select([1, 3])
        try h.registry.perform("remove", controller: "e")
        #expect(try h.names() == ["Archer", "Cole", "Evans"])
        #expect(try h.selectedNames() == ["Cole"])
    }

    @Test func removeNothingSelected_isDisabled() throws {
        let h = try Harness()
        try h.employees()
        try h.select([])
        #expect(h.registry.validate("remove", controller: "e") == false)
        expectError("action-disabled", status: 409) { try h.registry.perform("remove", controller: "e") }
    }

    @Test func removeUnselectedElsewhere_preservesSelection_multipleSelectionShifts() throws {
        let h = try Harness()
        try h.employees()
        try h.select([2, 4])
        try h.store.transaction { try $0.delete(id("Employee/bob")) }
        #expect(try h.selection() == [1, 3])
        #expect(try h.selectedNames() == ["Cole", "Evans"])
    }

    @Test func removeUnselectedElsewhere_withoutPreservesSelection_multipleSelectionShifts() throws {
        let h = try Harness()
        try h.employees(options: ["preservesSelection": false])
        try h.select([2, 4])
        try h.store.transaction { try $0.delete(id("Employee/dee")) }
        #expect(try h.selection() == [2, 3])
        #expect(try h.selectedNames() == ["Cole", "Evans"])
    }

    @Test func removeSelected_relationshipModeRequiredInverse_refused422_nothingChanged() throws {
        let h = try Harness()
        try h.employees(content: "Department/1.employees")
        try h.select([0])
        let seq = h.store.seq
        let error = expectError("cardinality", status: 422) { try h.registry.perform("remove", controller: "e") }
        #expect(error?.fields["keyPath"] == "department")
        #expect(h.store.seq == seq)
        #expect(try h.names() == ["Archer", "Baker", "Cole", "Evans"])
    }

    @Test func removeSelected_relationshipModeOptionalInverse_removesFromRelationshipOnly() throws {
        let h = try Harness()
        try h.employees(content: "Employee/ann.directReports")
        #expect(try h.names() == ["Baker", "Cole"])
        try h.registry.perform("remove", controller: "e")
        #expect(try h.names() == ["Cole"])
        #expect(try h.json("manager", of: "Employee/bob") == .null)
        #expect(h.store.read { $0.contains(id("Employee/bob")) })
        #expect(try h.selectedNames() == ["Cole"])
    }

    @Test func removeSelected_deleteDenied_changesNothing() throws {
        let h = try Harness()
        try h.employees("d", content: "Department", sort: "name")
        try h.registry.setSelectedObjects([id("Department/1")], controller: "d")
        expectError("delete-denied", status: 409) { try h.registry.perform("remove", controller: "d") }
        #expect(try h.value("arrangedObjects.name", of: "d") == ["Legal", "Research", "Sales"])
    }
}

struct FilterTests {
    @Test func filter_selectedObjectPasses_preservesSelection() throws {
        let h = try Harness()
        try h.employees()
        try h.select([2])
        try h.registry.setFilterPredicate(try Predicate(format: "salary <= 200"), controller: "e")
        #expect(try h.names() == ["Baker", "Cole", "Dunn"])
        #expect(try h.selectedNames() == ["Cole"])
        #expect(h.reported(.filterPredicate))
        #expect(try h.value("filterPredicate") == "salary <= 200")
    }

    @Test func filter_selectedObjectHidden_avoidsEmptySelection_selectsNeighbour() throws {
        let h = try Harness()
        try h.employees()
        try h.select([4])
        try h.registry.setFilterPredicate(try Predicate(format: "salary <= 200"), controller: "e")
        #expect(try h.selectedNames() == ["Dunn"])
    }

    @Test func filter_cleared_restoresEveryObject_keepsSelection() throws {
        let h = try Harness()
        try h.employees(filter: "salary <= 200")
        try h.select([1])
        try h.registry.setFilterPredicate(nil, controller: "e")
        #expect(try h.names().count == 5)
        #expect(try h.selectedNames() == ["Cole"])
    }

    @Test func filter_undefinedKey_refused_keepsOldFilter() throws {
        let h = try Harness()
        try h.employees(filter: "salary <= 200")
        expectError("undefined-key") {
            try h.registry.setFilterPredicate(try Predicate(format: "nope == 1"), controller: "e")
        }
        #expect(try h.names() == ["Baker", "Cole", "Dunn"])
    }
}

struct InsertionTests {
    @Test func insert_atSelectionIndex_ignoresSortUntilRearranged() throws {
        let h = try Harness()
        try h.employees()
        try h.select([1])
        try h.registry.perform(
            "insert", controller: "e",
            body: ["object": ["firstName": "Zed", "lastName": "Zulu", "department": ref("Department/2")]])
        #expect(try h.names() == ["Archer", "Zulu", "Baker", "Cole", "Dunn", "Evans"])
        #expect(try h.selectedNames() == ["Zulu"])
        try h.registry.perform("rearrangeObjects", controller: "e")
        #expect(try h.names() == ["Archer", "Baker", "Cole", "Dunn", "Evans", "Zulu"])
        #expect(try h.selectedNames() == ["Zulu"])
    }

    @Test func add_sortsTheNewObjectIn_andSelectsIt() throws {
        let h = try Harness()
        try h.employees()
        try h.registry.perform(
            "add", controller: "e",
            body: ["object": ["firstName": "Cat", "lastName": "Carr", "department": ref("Department/2")]])
        #expect(try h.names() == ["Archer", "Baker", "Carr", "Cole", "Dunn", "Evans"])
        #expect(try h.selectedNames() == ["Carr"])
    }

    @Test func add_invalidObject_422_nothingChanged() throws {
        let h = try Harness()
        try h.employees()
        let seq = h.store.seq
        expectError("cardinality", status: 422) {
            try h.registry.perform("add", controller: "e", body: ["object": ["firstName": "X", "lastName": "Y"]])
        }
        #expect(h.store.seq == seq)
        #expect(try h.names().count == 5)
    }

    @Test func add_clearsFilterPredicateOnInsertion_newObjectVisible() throws {
        let h = try Harness()
        try h.employees(filter: "salary > 1000")
        #expect(try h.names().isEmpty)
        try h.registry.perform(
            "add", controller: "e",
            body: ["object": ["firstName": "Cat", "lastName": "Carr", "department": ref("Department/2")]])
        #expect(try h.value("filterPredicate") == .null)
        #expect(try h.names().count == 6)
        #expect(try h.selectedNames() == ["Carr"])
        #expect(h.reported(.filterPredicate))
    }

    /// The index asked is into the filtered objects the client sees: once the insertion has cleared the filter, the
    /// object goes between the same two of them, not at that index among them all (beside objects it never saw).
    @Test func insert_clearingTheFilter_goesBetweenTheObjectsItWasAskedBetween() throws {
        let all = try {
            let h = try Harness()
            try h.employees(sort: "")
            return try h.names()
        }()
        try #require(all.count >= 5)
        let h = try Harness()
        let format = "lastName IN {'\(all[1])', '\(all[3])'}"
        // At 1, between the two shown: before the second. At 2, after both: after the second (the filter set again
        // re-arranged the content, which put the first one back in content order, at the end).
        let first: [String] = Array(all[..<3]) + ["New"] + Array(all[3...])
        let second: [String] = Array(all[..<4]) + ["Newer"] + Array(all[4...]) + ["New"]
        for (index, name, expected) in [(1, "New", first), (2, "Newer", second)] {
            if index == 1 {
                try h.employees(sort: "", filter: format)
            } else {
                _ = try h.registry.setFilterPredicate(try ObjectGraph.Predicate(format: format), controller: "e")
            }
            #expect(try h.names() == [all[1], all[3]])
            try h.registry.perform(
                "insert", controller: "e",
                body: [
                    "object": ["firstName": "N", "lastName": .string(name), "department": ref("Department/1")],
                    "index": .integer(Int64(index)),
                ])
            #expect(try h.value("filterPredicate") == .null)
            #expect(try h.names() == expected)
            #expect(try h.selectedNames() == [name])
        }
    }

    /// The id of the employee with `lastName`, if there is one.
    private func employee(named lastName: String, in h: Harness) throws -> String? {
        try h.store.read { view in
            try view.objects(of: "Employee").first {
                try view.value(forKey: "lastName", of: $0) == .value(.string(lastName))
            }?.description
        }
    }

    /// NSArrayController's `addObject:` adds to the arranged objects "if all filters currently applied are matched":
    /// an object the kept filter hides is created, in the content only, and the selection stays.
    @Test func add_withoutClearsFilterPredicateOnInsertion_keepsFilter_createsItHidden() throws {
        let h = try Harness()
        try h.employees(filter: "salary > 150", options: ["clearsFilterPredicateOnInsertion": false])
        try h.select([1])
        let selected = try h.selectedNames()
        try h.registry.perform(
            "add", controller: "e",
            body: ["object": ["firstName": "Cat", "lastName": "Carr", "department": ref("Department/2")]])
        #expect(try h.value("filterPredicate") == "salary > 150")
        #expect(try !h.names().contains("Carr"))
        #expect(try h.selectedNames() == selected)
        let carr = try #require(try employee(named: "Carr", in: h))
        try h.set("salary", of: carr, to: 500)
        try h.registry.perform("rearrangeObjects", controller: "e")
        #expect(try h.names().contains("Carr"))
    }

    /// NSArrayController's `insertObject:atArrangedObjectIndex:` "will raise an exception if the object does not match
    /// all filters currently applied": 422 and nothing created; one that matches goes where it was asked.
    @Test func insert_withoutClearsFilterPredicateOnInsertion_refusesWhatTheFilterHides() throws {
        let h = try Harness()
        try h.employees(filter: "salary > 150", options: ["clearsFilterPredicateOnInsertion": false])
        try h.select([1])
        let seq = h.store.seq
        let refused = expectError("validation-failed", status: 422) {
            try h.registry.perform(
                "insert", controller: "e",
                body: [
                    "object": ["firstName": "Lo", "lastName": "Low", "salary": 10, "department": ref("Department/1")]
                ])
        }
        #expect(refused?.fields["controller"] == "e")
        #expect(refused?.fields["filterPredicate"] == "salary > 150")
        #expect(h.store.seq == seq)
        #expect(try employee(named: "Low", in: h) == nil)
        try h.registry.perform(
            "insert", controller: "e",
            body: ["object": ["firstName": "Hi", "lastName": "High", "salary": 900, "department": ref("Department/1")]])
        #expect(try h.names()[1] == "High")
        #expect(try h.selectedNames() == ["High"])
    }

    @Test func insert_withoutSelectsInsertedObjects_keepsSelectedObject() throws {
        let h = try Harness()
        try h.employees(options: ["selectsInsertedObjects": false])
        try h.select([1])
        try h.registry.perform(
            "insert", controller: "e",
            body: ["object": ["firstName": "Zed", "lastName": "Zulu", "department": ref("Department/2")]])
        #expect(try h.names()[1] == "Zulu")
        #expect(try h.selectedNames() == ["Baker"])
        #expect(try h.selection() == [2])
    }

    @Test func add_relationshipMode_insertsIntoTheRelationship() throws {
        let h = try Harness()
        try h.employees(content: "Department/2.employees")
        try h.registry.perform("add", controller: "e", body: ["object": ["firstName": "Fay", "lastName": "Fox"]])
        #expect(try h.names() == ["Dunn", "Fox"])
        #expect(try h.value("selection.department") == ref("Department/2"))
    }
}

/// NSObjectController's `remove:`: over an object, it deletes it; over a key path from objects, it removes the
/// content from that key path (API.md §5: "`remove` removes from it"), and the object stays.
struct ObjectControllerRemovalTests {
    @Test func remove_contentBoundToAToOneKeyPath_setsItToNull_objectStays() throws {
        let h = try Harness()
        try h.make(["name": "boss", "kind": "object", "content": "Employee/eve.manager"])
        #expect(try h.value("selection.lastName", of: "boss") == "Baker")
        try h.registry.perform("remove", controller: "boss")
        #expect(try h.json("manager", of: "Employee/eve") == .null)
        #expect(try h.json("lastName", of: "Employee/bob") == "Baker")
        #expect(try h.value("selection.lastName", of: "boss") == ["$marker": "NoSelection"])
    }

    @Test func remove_contentBoundToAMastersSelection_requiredToOne_refused422_nothingChanged() throws {
        let h = try Harness()
        try h.employees(sort: "lastName")
        try h.select([1])
        try h.make(["name": "dept", "kind": "object", "content": "@e.selection.department"])
        let seq = h.store.seq
        let error = expectError("cardinality", status: 422) { try h.registry.perform("remove", controller: "dept") }
        #expect(error?.fields["keyPath"] == "department")
        #expect(h.store.seq == seq)
        #expect(try h.json("name", of: "Department/1") == "Sales")
    }

    @Test func remove_contentIsAnObject_deletesIt() throws {
        let h = try Harness()
        try h.make(["name": "o", "kind": "object", "content": "Employee/dee"])
        try h.registry.perform("remove", controller: "o")
        #expect(h.store.read { $0.contains(ObjectID(entity: "Employee", id: "dee")) } == false)
    }

    /// An object controller's content is one object (or a selection's objects): a binding that cannot be one is
    /// refused, as is content naming an entity the model does not have (any kind).
    @Test func create_contentThatCannotBeAnObject_refused() throws {
        let h = try Harness()
        try h.employees()
        for content in [
            "Department/1.employees", "@e.selection.directReports", "Employee/ann.lastName",
            // Derived keys, followed through their own key paths: an attribute, a to-many's count.
            "Employee/ann.departmentName", "Department/1.headcount", "@e.selection.departmentName",
        ] {
            let error = expectError("bad-binding", status: 400) {
                try h.make(["name": "o", "kind": "object", "content": .string(content)])
            }
            #expect(error?.fields["content"] == .string(content))
        }
        for kind in ["object", "array"] {
            expectError("no-such-entity", status: 404) {
                try h.make(["name": "n", "kind": .string(kind), "content": "Nope/1.employees"])
            }
        }
        expectError("no-such-entity", status: 404) { try h.make(["name": "n", "kind": "object", "content": "Nope/1"]) }
    }

    /// Its selection is its content: `selectedObjects` refuses a change as `selectionIndexes` does, and takes the
    /// selection it has.
    @Test func setSelectedObjects_objectController_otherObjects_refused422() throws {
        let h = try Harness()
        try h.make(["name": "o", "kind": "object", "content": "Employee/cy"])
        for objects in [[], [ObjectID(entity: "Employee", id: "ann")]] {
            let error = expectError("validation-failed", status: 422) {
                try h.registry.setSelectedObjects(objects, controller: "o")
            }
            #expect(error?.fields["keyPath"] == "selectedObjects")
        }
        try h.registry.setSelectedObjects([ObjectID(entity: "Employee", id: "cy")], controller: "o")
        #expect(try h.value("selection.lastName", of: "o") == "Cole")
        // Bound to a selection of two, it holds both: selecting one of them is a change too.
        try h.employees()
        try h.select([0, 1])
        try h.make(["name": "both", "kind": "object", "content": "@e.selection"])
        let error = expectError("validation-failed", status: 422) {
            try h.registry.setSelectionIndexes([0], controller: "both")
        }
        #expect(error?.fields["keyPath"] == "selectionIndexes")
        try h.registry.setSelectionIndexes([1, 0], controller: "both")
        #expect(try h.value("selection.lastName", of: "both") == ["$marker": "MultipleValues"])
    }
}
